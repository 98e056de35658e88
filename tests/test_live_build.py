"""The live binaries' build script (tools/live/build.py), with a stand-in ``go``: no real build runs here."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tools.live import build

FAKE_GO = """#!/bin/sh
# a stand-in for go: `mod download` succeeds; `build -o OUT` writes OUT unless FAKE_GO_FAIL is set
if [ "$1" = "mod" ]; then exit 0; fi
out=""
while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; fi; shift; done
printf 'partial' > "$out"
if [ -n "$FAKE_GO_FAIL" ]; then echo "compile: something broke" >&2; exit 1; fi
printf 'binary' > "$out"
"""


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    go = bin_dir / "go"
    go.write_text(FAKE_GO)
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HPI_LIVE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FAKE_GO_FAIL", raising=False)
    return tmp_path / "cache"


def test_the_cache_lives_outside_the_clone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HPI_LIVE_CACHE", raising=False)
    root = build.cache_root()
    assert root == Path.home() / ".cache" / "hyperpod-inference" / "live"
    assert not root.is_relative_to(Path(build.__file__).resolve().parents[2])
    monkeypatch.setenv("HPI_LIVE_CACHE", "/tmp/x")
    etcd = build.COMPONENTS["etcd"]
    assert build.binary_path(etcd) == Path("/tmp/x/etcd-v3.6.5/bin/etcd")
    assert build.log_path(etcd) == Path("/tmp/x/etcd-v3.6.5/build.log")


def test_every_component_has_a_wrapper_module_pinning_its_version() -> None:
    for component in build.COMPONENTS.values():
        go_mod = (component.module_dir / "go.mod").read_text()
        assert (component.module_dir / "go.sum").is_file(), component.name
        module = component.package.split("/cmd/")[0]
        assert f"{module} {component.version}" in go_mod, (component.name, module)
        assert component.package in (component.module_dir / "tools.go").read_text()


def test_kube_apiserver_staging_modules_are_their_published_versions() -> None:
    go_mod = (build.COMPONENTS["kube-apiserver"].module_dir / "go.mod").read_text()
    replaces = [line.split() for line in go_mod.splitlines() if "=>" in line]
    assert len(replaces) >= 30
    for old, _, new, version in (r[-4:] for r in replaces):
        assert old == new and old.startswith("k8s.io/") and version == "v0.35.4", (old, new, version)


def test_a_build_is_cached_and_reused(fake_go: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert build.main(["etcd"]) == 0
    etcd = build.COMPONENTS["etcd"]
    assert build.binary_path(etcd).read_text() == "binary"
    assert build.status(("etcd",)) == ({"etcd": build.binary_path(etcd)}, [])
    out = capsys.readouterr().out
    assert "[live] etcd: compile ok in" in out and "built in" in out
    assert build.main(["etcd"]) == 0
    assert "cached at" in capsys.readouterr().out
    assert "# compile: exit 0" in build.log_path(etcd).read_text()


def test_a_failed_build_leaves_no_binary_and_names_its_log(
    fake_go: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_GO_FAIL", "1")
    assert build.main(["apiserver"]) == 1
    for name in build.APISERVER:
        component = build.COMPONENTS[name]
        assert not build.binary_path(component).exists()
        assert list(build.binary_path(component).parent.iterdir()) == []  # no partial file left behind
        assert "compile: something broke" in build.log_path(component).read_text()
    found, missing = build.status(build.APISERVER)
    assert found == {}
    assert missing[0] == f"etcd v3.6.5 did not build: see {build.log_path(build.COMPONENTS['etcd'])}"


def test_a_changed_pin_rebuilds(fake_go: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert build.main(["etcd"]) == 0
    etcd = build.COMPONENTS["etcd"]
    assert build.cached(etcd)
    monkeypatch.setattr(build, "module_digest", lambda c: "another pin")
    assert not build.cached(etcd)


def test_never_built_names_the_command_and_the_log(fake_go: Path) -> None:
    _, missing = build.status(("pulumi",))
    log = build.log_path(build.COMPONENTS["pulumi"])
    assert missing == [f"pulumi v3.274.0 is not built (run `python -m tools.live.build pulumi`; log: {log})"]


def test_an_unknown_component_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build.main(["etdc"])
    assert exit_info.value.code == 2
    assert "unknown component 'etdc'; allowed: etcd, kube-apiserver" in capsys.readouterr().err
