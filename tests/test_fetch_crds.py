"""``python -m tools.fetch.crds`` against local bare repositories, its pins against ../shared/crds, and how the
tests find the CRD folder.

GitHub is not reachable here, so the tests build bare repositories (``uploadpack.allowReachableSHA1InWant`` and
``uploadpack.allowFilter``, what lets GitHub serve a shallow, blob-less fetch by commit id) with a file that changes
between two commits, and pins made from their content.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CRDS_MISSING, SHARED_CRDS, find_crds
from tools.fetch import crds as fetch_crds
from tools.fetch.crds import PINS, FetchError, PinnedFile, fetch, git_blob_id, is_current

OLD = b"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: old}\n"
NEW = b"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: new}\n"
TGB = b"kind: CustomResourceDefinition\nmetadata: {name: targetgroupbindings.elbv2.k8s.aws}\n"


def _git(*args: str, cwd: Path) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.strip()


def _bare(tmp_path: Path, name: str, commits: list[dict[str, bytes]]) -> tuple[str, list[str]]:
    """A bare repository whose commits hold ``commits[i]`` (path -> content) in turn; (URL, commit ids)."""
    work = tmp_path / f"{name}-work"
    work.mkdir()
    _git("init", "--quiet", "--initial-branch", "main", cwd=work)
    ids = []
    for files in commits:
        for path, content in files.items():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_bytes(content)
        _git("add", "-A", cwd=work)
        _git("commit", "--quiet", "-m", "c", cwd=work)
        ids.append(_git("rev-parse", "HEAD", cwd=work))
    bare = tmp_path / f"{name}.git"
    _git("clone", "--quiet", "--bare", str(work), str(bare), cwd=tmp_path)
    _git("config", "uploadpack.allowReachableSHA1InWant", "true", cwd=bare)
    _git("config", "uploadpack.allowFilter", "true", cwd=bare)
    return f"file://{bare}", ids


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two repositories: the operator's (a CRD changing between two commits) and the LB controller's (read-only,
    shared by the module's tests)."""
    tmp_path = tmp_path_factory.mktemp("upstream")
    crd = "charts/inference-operator/config/crd/iec.yaml"
    op_url, (first, second) = _bare(tmp_path, "hpcli", [{crd: OLD}, {crd: NEW}])
    lbc_url, (tag,) = _bare(tmp_path, "lbc", [{"config/crd/bases/tgb.yaml": TGB}])
    pins = (
        PinnedFile("iec.yaml", "aws/sagemaker-hyperpod-cli", second, crd, git_blob_id(NEW)),
        PinnedFile("history/iec_first.yaml", "aws/sagemaker-hyperpod-cli", first, crd, git_blob_id(OLD)),
        PinnedFile("third-party/tgb.yaml", fetch_crds.LBC, tag, "config/crd/bases/tgb.yaml", git_blob_id(TGB)),
    )
    urls = {"aws/sagemaker-hyperpod-cli": op_url, fetch_crds.LBC: lbc_url}
    return {"pins": pins, "urls": urls, "first": first, "second": second}


def test_git_blob_id_is_gits() -> None:
    assert git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's empty blob
    assert git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_fetches_each_file_at_its_commit_into_the_shared_layout(upstream: dict[str, Any], tmp_path: Path) -> None:
    dest = tmp_path / "vendor" / "crds"
    fetched = fetch(dest, pins=upstream["pins"], urls=upstream["urls"])
    assert [p.dest for p in fetched] == ["iec.yaml", "history/iec_first.yaml", "third-party/tgb.yaml"]
    assert (dest / "iec.yaml").read_bytes() == NEW
    assert (dest / "history" / "iec_first.yaml").read_bytes() == OLD  # the older commit, same path
    assert (dest / "third-party" / "tgb.yaml").read_bytes() == TGB
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        ".pins",
        "history/iec_first.yaml",
        "iec.yaml",
        "third-party/tgb.yaml",
    ]
    assert is_current(dest, upstream["pins"])
    assert not is_current(dest)  # not the real pin set
    assert list(tmp_path.joinpath("vendor").iterdir()) == [dest]  # the staging folder is gone


def test_a_current_folder_is_kept_without_fetching(upstream: dict[str, Any], tmp_path: Path) -> None:
    dest = tmp_path / "crds"
    fetch(dest, pins=upstream["pins"], urls=upstream["urls"])
    unreachable = dict.fromkeys(upstream["urls"], "file:///nonexistent/repo.git")
    assert fetch(dest, pins=upstream["pins"], urls=unreachable) == []
    assert (dest / "iec.yaml").read_bytes() == NEW


def test_a_folder_of_another_pin_set_or_incomplete_is_fetched_again(upstream: dict[str, Any], tmp_path: Path) -> None:
    dest = tmp_path / "crds"
    fetch(dest, pins=upstream["pins"], urls=upstream["urls"])
    (dest / "history" / "iec_first.yaml").unlink()
    assert not is_current(dest, upstream["pins"])
    assert len(fetch(dest, pins=upstream["pins"], urls=upstream["urls"])) == 3
    assert (dest / "history" / "iec_first.yaml").read_bytes() == OLD
    fewer = upstream["pins"][:1]
    fetch(dest, pins=fewer, urls=upstream["urls"])
    assert not (dest / "history").exists()  # replaced as a whole


@pytest.mark.parametrize("case", ["wrong blob", "missing commit", "missing path", "branch name"])
def test_failures_write_nothing(upstream: dict[str, Any], tmp_path: Path, case: str) -> None:
    good, *rest = upstream["pins"]
    bad = {
        "wrong blob": PinnedFile(good.dest, good.repo, good.commit, good.path, git_blob_id(OLD)),
        "missing commit": PinnedFile(good.dest, good.repo, "0" * 40, good.path, good.blob),
        "missing path": PinnedFile(good.dest, good.repo, good.commit, "no/such.yaml", good.blob),
        "branch name": PinnedFile(good.dest, good.repo, "main", good.path, good.blob),
    }[case]
    message = {
        "wrong blob": f"iec.yaml: .*@{good.commit}:{good.path} is blob {good.blob}, not the pinned {git_blob_id(OLD)}",
        "missing commit": "git fetch .* failed",
        "missing path": "git cat-file blob .*no/such.yaml failed",
        "branch name": "'main' is not a full commit id",
    }[case]
    dest = tmp_path / "crds"
    with pytest.raises(FetchError, match=message):
        fetch(dest, pins=(bad, *rest), urls=upstream["urls"])
    assert not dest.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".fetch-crds-")]  # no staging folder left


def test_a_failed_refetch_keeps_the_old_folder(upstream: dict[str, Any], tmp_path: Path) -> None:
    dest = tmp_path / "crds"
    fetch(dest, pins=upstream["pins"][:1], urls=upstream["urls"])
    with pytest.raises(FetchError):
        fetch(dest, pins=upstream["pins"], urls={**upstream["urls"], fetch_crds.LBC: "file:///nonexistent.git"})
    assert (dest / "iec.yaml").read_bytes() == NEW and is_current(dest, upstream["pins"][:1])


def test_cli(upstream: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setattr(fetch_crds, "PINS", upstream["pins"])
    args = ["--dest", str(tmp_path / "crds")]
    for repo, url in upstream["urls"].items():
        args += ["--url", f"{repo}={url}"]
    assert fetch_crds.main(args) == 0
    out = capsys.readouterr().out
    assert f"iec.yaml  aws/sagemaker-hyperpod-cli@{upstream['second'][:8]}:" in out
    assert "3 files verified into" in out
    assert fetch_crds.main(args) == 0
    assert "already holds the 3 pinned files" in capsys.readouterr().out
    assert fetch_crds.main(["--dest", str(tmp_path / "x"), "--url", "nonsense"]) == 1
    assert "--url 'nonsense': expected OWNER/NAME=URL" in capsys.readouterr().err


# --- the real pins ------------------------------------------------------------------------------------------


def test_pins_are_full_commits_of_the_two_repositories() -> None:
    assert {p.repo for p in PINS} == {"aws/sagemaker-hyperpod-cli", "kubernetes-sigs/aws-load-balancer-controller"}
    assert len({p.dest for p in PINS}) == len(PINS) == 25
    for p in PINS:
        assert len(p.commit) == 40 and len(p.blob) == 40, p
    v32 = [p for p in PINS if "/" not in p.dest]
    assert [p.commit for p in v32] == [fetch_crds.V32] * 3


def test_pins_match_the_files_in_shared_crds() -> None:
    """Every pinned blob is the file of ../shared/crds at the same place, and the pins cover every YAML there
    except the AWS documentation transcriptions (no git source)."""
    if not SHARED_CRDS.is_dir():
        pytest.skip(f"../shared/crds not found at {SHARED_CRDS}: nothing to compare the pins with")
    for p in PINS:
        assert git_blob_id((SHARED_CRDS / p.dest).read_bytes()) == p.blob, p.dest
    on_disk = {
        f.relative_to(SHARED_CRDS).as_posix()
        for f in SHARED_CRDS.rglob("*")
        if f.suffix == ".yaml" and "aws-docs" not in f.parts
    }
    assert on_disk | {"v3.3/Chart.yaml"} == {p.dest for p in PINS}


# --- how the tests find the folder ----------------------------------------------------------------------------


def test_find_crds_prefers_shared_then_a_complete_fetch(upstream: dict[str, Any], tmp_path: Path, monkeypatch) -> None:
    shared, vendored = tmp_path / "shared" / "crds", tmp_path / "vendor" / "crds"
    monkeypatch.setattr(fetch_crds, "PINS", upstream["pins"])
    original = fetch_crds.is_current
    monkeypatch.setattr(fetch_crds, "is_current", lambda folder, pins=None: original(folder, upstream["pins"]))
    assert find_crds(shared, vendored) is None
    fetch(vendored, pins=upstream["pins"], urls=upstream["urls"])
    assert find_crds(shared, vendored) == vendored
    (vendored / "iec.yaml").unlink()
    assert find_crds(shared, vendored) is None  # incomplete: not used
    shared.mkdir(parents=True)
    assert find_crds(shared, vendored) == shared
    assert "run `python -m tools.fetch.crds`" in CRDS_MISSING and "../shared/crds" in CRDS_MISSING
