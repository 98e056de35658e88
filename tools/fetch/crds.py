"""Fetch the CRDs the schema tests validate against, at pinned commits: ``python -m tools.fetch.crds``.

The tests read the operator's CRDs from ``../shared/crds`` when that folder is beside the clone, else from
``vendor/crds`` (gitignored), which this command fills with the same layout (``tests/conftest.py``):

- ``inference.sagemaker.aws.amazon.com_*.yaml``: operator v3.2 (chart 2.2.2), aws/sagemaker-hyperpod-cli
  ``a00b22d1`` (on ``main``);
- ``v3.3/``: operator v3.3 (chart 2.3.0), the four CRDs and the chart's ``Chart.yaml`` at ``0986f2cc``;
- ``history/iec_<commit>.yaml``: the InferenceEndpointConfig CRD at each earlier release commit (all on ``main``);
- ``samples/``: the operator's published samples (``config/samples`` at ``main`` ``011ca927``);
- ``third-party/elbv2.k8s.aws_targetgroupbindings.yaml``: kubernetes-sigs/aws-load-balancer-controller tag
  ``v2.13.0`` (``73980cf1``).

``samples/aws-docs/`` of ``../shared/crds`` are transcriptions of AWS documentation pages with no git source, so
they are not fetched; the tests that read them skip saying so.

Each repository is fetched once, shallow and without blobs (``--filter=blob:none``), for exactly the pinned commits
(never a branch); each file is then read at its commit and its git blob id checked against ``PINS`` before
anything is written. ``vendor/crds`` is replaced only when every file verified, and ``vendor/crds/.pins`` records
the pin set, so a folder from an older pin set is fetched again and a current one is kept without network access.
``--url OWNER/NAME=URL`` points a repository at a mirror (the tests use local bare repositories).

``--find-newer GIT_DIR`` reads a local snapshot of aws/sagemaker-hyperpod-cli (a clone, or the git directory the
``fetch`` tool brings) for operator releases newer than the newest ``crdReleases`` row of
``policies/compatibility.yaml`` (the chart's ``Chart.yaml`` ``appVersion`` at each commit that changed it) and
prints, for each, the :data:`PINS` entries and the ``crdReleases`` row that take its real CRDs. Once they are
added, ``python -m tools.generate.crd_models`` generates from that CRD, the release's overlay (``policies/crd_overlays``) is
superseded, and ``tests/test_crd_overlays.py`` checks that the two agree on every field they share. No snapshot
found so far has one (the newest stops before PR #448: ../shared/docs/operator-3.4-3.7.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.report import cli

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEST = PROJECT_ROOT / "vendor" / "crds"
MARKER = ".pins"

HPCLI = "aws/sagemaker-hyperpod-cli"
LBC = "kubernetes-sigs/aws-load-balancer-controller"
# The inference operator's chart inside aws/sagemaker-hyperpod-cli.
_OPERATOR = "helm_chart/HyperPodHelmChart/charts/inference-operator"
_CRD = f"{_OPERATOR}/config/crd"
_IEC = "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"
_JSM = "inference.sagemaker.aws.amazon.com_jumpstartmodels.yaml"
_SER = "inference.sagemaker.aws.amazon.com_sagemakerendpointregistrations.yaml"
_MIC = "inference.sagemaker.aws.amazon.com_modelimagecaches.yaml"
_MWC = "inference.sagemaker.aws.amazon.com_modelweightscacheconfigs.yaml"

# Commits. Every one but V33 was checked to be an ancestor of aws/sagemaker-hyperpod-cli main (011ca927,
# 2026-06-22) with `git merge-base --is-ancestor` in a fetched snapshot; LBC_V2_13_0 is the tag v2.13.0.
V32 = "a00b22d17ea928a6e39a43bd2efdafe01b1005ea"  # chart 2.2.2, operator 3.2 (#430, 2026-06-19)
# Chart 2.3.0 / appVersion 3.3. Not in the fetched snapshot (newer than it): whether it is on main, and its blob
# ids (taken from the copies in ../shared/crds/v3.3, which match the search index's stored text), are confirmed
# only by the first real fetch, which refuses any other content: UNCONFIRMED [crd-v33-pin].
V33 = "0986f2cc4eb14070d3aeb159c2c9b09d1b5f287b"
SAMPLES_AT = "011ca927123e02b35a399935bbb3ab1905fe33c7"  # main HEAD of the snapshot
LBC_V2_13_0 = "73980cf11d1c79c310f4f14a089554f58b165d7d"

GITHUB = "https://github.com/{repo}.git"


class FetchError(RuntimeError):
    """A repository could not be fetched, or a file is not the pinned blob."""


@dataclass(frozen=True)
class PinnedFile:
    """One file of the CRD folder: where it goes, where it comes from, and its git blob id."""

    dest: str  # path under the CRD folder (the layout of ../shared/crds)
    repo: str  # GitHub owner/name
    commit: str  # full commit id
    path: str  # path in the repository at that commit
    blob: str  # git blob id (`git hash-object`), checked before anything is written


def _history(short: str, commit: str, blob: str) -> PinnedFile:
    return PinnedFile(f"history/iec_{short}.yaml", HPCLI, commit, f"{_CRD}/{_IEC}", blob)


def _sample(dest: str, name: str, blob: str) -> PinnedFile:
    return PinnedFile(dest, HPCLI, SAMPLES_AT, f"{_OPERATOR}/config/samples/{name}", blob)


# Blob ids read with `git ls-tree <commit> <path>` in a fetched snapshot of each repository and equal to
# `git hash-object` of the files in ../shared/crds (except V33, see above).
PINS: tuple[PinnedFile, ...] = (
    PinnedFile(_IEC, HPCLI, V32, f"{_CRD}/{_IEC}", "a490317424576e25bbcfd4b682707a1c78eda3d2"),
    PinnedFile(_JSM, HPCLI, V32, f"{_CRD}/{_JSM}", "a5e37ffd2b4bf8cd0f58fb876e2ee3d8eb140d29"),
    PinnedFile(_SER, HPCLI, V32, f"{_CRD}/{_SER}", "aaab9e297b9924efd2e12c2d3e1c8755873e30ad"),
    PinnedFile(f"v3.3/{_IEC}", HPCLI, V33, f"{_CRD}/{_IEC}", "c25a22b15d0f03d7914d28305a19687a26c0c0f8"),
    PinnedFile(f"v3.3/{_JSM}", HPCLI, V33, f"{_CRD}/{_JSM}", "90a9b6a72acceb5144de9c588532ac1f8837160c"),
    PinnedFile(f"v3.3/{_MIC}", HPCLI, V33, f"{_CRD}/{_MIC}", "e9ccc635520693d25628591547d11b5a63d1b1b9"),
    PinnedFile(f"v3.3/{_MWC}", HPCLI, V33, f"{_CRD}/{_MWC}", "7f4a6202f21c815453ece9e3c18810896efde56c"),
    PinnedFile("v3.3/Chart.yaml", HPCLI, V33, f"{_OPERATOR}/Chart.yaml", "e6160f00358afd8b2a0e1d0bc9e934725db9f3c2"),
    _history("95096e8", "95096e8ba5cfee9762f3ddb4494ae6999dfd79c7", "8dfaccfa1ded18aa0377f557b9f811d6271e0b2f"),
    _history("944eaaf", "944eaafcc8690da5f57d2eae3b019f7114bd914d", "de3f762e1ed9b9fc646739f708165f43167468e9"),
    _history("3d2049b", "3d2049bd20a940aeb8fdfbbfb507410cbeddb0fe", "7f43c89aa53a6b340335cb8b6311d734ceee225b"),
    _history("b0af388", "b0af388b07faa05b08bd940d6c4a4789150c4952", "7616f134434ec9523fe900ba039d62dac275a194"),
    _history("170bf15", "170bf1598143946f2d0023bb13d0f1f6195d26ed", "908fb9f873a12a8d9566c1503573406b93303106"),
    _history("f4fc838", "f4fc83841240d6602e93328121525ea1985c8e19", "0fa281b7c185903b8c6e9865c67122b6b7b13a26"),
    _history("51b8dd2", "51b8dd24f274eff62b17f716e3798667555ffe18", "f1c4c6ff86f9854f1fc36cf2c402a8bc28212c8e"),
    _history("d5e7256", "d5e7256093ab173bf3fa6efe3d0bbf2f7e564645", "a99280a39eb97f85d5befb46d9a7f7b83cafe877"),
    _history("4b76719", "4b7671922b7b918bb7b131ac5b8ea1ab195166da", "c5c6bd38e4191cf088ec2a40284ceb95b2006b0e"),
    _history("959b62b", "959b62b449ec1f800e9eb994ac68c3cbcf2058af", "8b86aeb27e343f7616ffabacfe824ead9367435f"),
    _sample("samples/v1_s3_deepseek15b.yaml", "v1_s3_deepseek15b.yaml", "e6e9c16c2bb1334c81c8f4e30e8e4b0c2d70fe25"),
    _sample(
        "samples/v1_s3_modeldeployment.yaml", "v1_s3_modeldeployment.yaml", "deb7cbb44f8017e09caddef135cd3b1dcadefaa2"
    ),
    _sample(
        "samples/placeholder-values/v1_llama31_8b_intelligent_routing.yaml",
        "v1_llama31_8b_intelligent_routing.yaml",
        "eb423d229b373d281e7b16223359e5cd01cc6f7d",
    ),
    _sample(
        "samples/placeholder-values/v1_llama31_8b_kv_cache_l1_l2.yaml",
        "v1_llama31_8b_kv_cache_l1_l2.yaml",
        "0d7e7c06604875b5458224a42a11214284d29c9f",
    ),
    _sample(
        "samples/stale/v1_modeldeployment.yaml", "v1_modeldeployment.yaml", "8937613991468e4f1dfad838f6788f3122190d2f"
    ),
    _sample(
        "samples/stale/v1_deepseek_model15b.yaml",
        "v1_deepseek_model15b.yaml",
        "5a065ed714e6a3430bf9246f607374f8f9aac1ea",
    ),
    PinnedFile(
        "third-party/elbv2.k8s.aws_targetgroupbindings.yaml",
        LBC,
        LBC_V2_13_0,
        "config/crd/bases/elbv2.k8s.aws_targetgroupbindings.yaml",
        "f5385c977d4cfbe882c92090ad1e227bf3c849bd",
    ),
)


SHARED_CRDS = PROJECT_ROOT.parent / "shared" / "crds"


def find_crds(shared: Path = SHARED_CRDS, vendored: Path = DEST) -> Path | None:
    """Where the operator's CRDs are: ``../shared/crds`` first, else a complete fetch of this command in
    ``vendor/crds`` (same layout, pinned commits, verified); None when neither exists."""
    if shared.is_dir():
        return shared
    if is_current(vendored):
        return vendored
    return None


def git_blob_id(data: bytes) -> str:
    """The id git gives ``data`` as a blob (``git hash-object``): SHA-1 of ``blob <size>\\0<data>``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _marker(pins: Iterable[PinnedFile]) -> str:
    return json.dumps({p.dest: p.blob for p in pins}, indent=1, sort_keys=True) + "\n"


def is_current(folder: Path, pins: Iterable[PinnedFile] = PINS) -> bool:
    """Whether ``folder`` is a complete fetch of exactly ``pins`` (its ``.pins`` record and every file present)."""
    pins = tuple(pins)
    marker = folder / MARKER
    if not marker.is_file() or marker.read_text(encoding="utf-8") != _marker(pins):
        return False
    return all((folder / p.dest).is_file() for p in pins)


def _git(*args: str, cwd: Path | None = None) -> bytes:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        message = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        raise FetchError(f"git {' '.join(args)} failed: {message}")
    return done.stdout


def _check_pins(pins: tuple[PinnedFile, ...]) -> None:
    for p in pins:
        if len(p.commit) != 40 or any(c not in "0123456789abcdef" for c in p.commit):
            raise FetchError(
                f"{p.dest}: {p.commit!r} is not a full commit id; pin a 40-hex-digit commit, never a branch"
            )
        if Path(p.dest).is_absolute() or ".." in Path(p.dest).parts:
            raise FetchError(f"{p.dest}: not a path inside the CRD folder")


def _fetch_repo(url: str, pins: list[PinnedFile], gitdir: Path, staging: Path) -> None:
    _git("init", "--quiet", "--bare", str(gitdir))
    _git("remote", "add", "origin", url, cwd=gitdir)
    commits = sorted({p.commit for p in pins})
    _git("fetch", "--quiet", "--depth", "1", "--no-tags", "--filter=blob:none", "origin", *commits, cwd=gitdir)
    for p in pins:
        data = _git("cat-file", "blob", f"{p.commit}:{p.path}", cwd=gitdir)
        got = git_blob_id(data)
        if got != p.blob:
            raise FetchError(f"{p.dest}: {url}@{p.commit}:{p.path} is blob {got}, not the pinned {p.blob}")
        target = staging / p.dest
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def fetch(
    dest: Path = DEST, *, pins: Iterable[PinnedFile] = PINS, urls: Mapping[str, str] | None = None
) -> list[PinnedFile]:
    """Fill ``dest`` with every pinned file, verified; return the files fetched (``[]`` when already current).

    Nothing is written unless every file verified; a ``dest`` from another pin set is replaced as a whole.
    ``urls`` maps ``owner/name`` to a git URL (default: GitHub).
    """
    pins = tuple(pins)
    _check_pins(pins)
    if is_current(dest, pins):
        return []
    urls = dict(urls or {})
    by_repo: dict[str, list[PinnedFile]] = {}
    for p in pins:
        by_repo.setdefault(p.repo, []).append(p)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-crds-", dir=dest.parent) as tmp:
        staging = Path(tmp) / "crds"
        staging.mkdir()
        for repo, files in sorted(by_repo.items()):
            url = urls.get(repo) or GITHUB.format(repo=repo)
            _fetch_repo(url, files, Path(tmp) / repo.replace("/", "+"), staging)
        (staging / MARKER).write_text(_marker(pins), encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    return list(pins)


@dataclass(frozen=True)
class NewerRelease:
    """An operator release of a snapshot newer than every ``crdReleases`` row, with its CRD blobs."""

    commit: str
    chart: str
    operator: str
    blobs: dict[str, str]  # kind code (IEC, JSM) -> blob id of its CRD at the commit

    def pins(self) -> list[PinnedFile]:
        names = {"IEC": _IEC, "JSM": _JSM}
        return [
            PinnedFile(f"v{self.operator}/{names[k]}", HPCLI, self.commit, f"{_CRD}/{names[k]}", b)
            for k, b in sorted(self.blobs.items())
        ]

    def crd_release_row(self) -> str:
        files = ", ".join(f"{k}: v{self.operator}/{n}" for k, n in (("IEC", _IEC), ("JSM", _JSM)) if k in self.blobs)
        return (
            f'  - {{operator: "{self.operator}", chart: {self.chart}, commit: {self.commit}, files: {{{files}}}, '
            "source: <add its tree URL to sources>}"
        )


def _chart_field(text: str, key: str) -> str | None:
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == key and not line.startswith((" ", "\t")):
            return value.strip().strip("\"'")
    return None


def find_newer(git_dir: Path, newest: str) -> list[NewerRelease]:
    """The operator releases in a local snapshot whose chart ``appVersion`` is newer than ``newest`` (oldest first,
    one per version: the first commit that sets it)."""
    from policies.compatibility import operator_tuple

    chart = f"{_OPERATOR}/Chart.yaml"
    log = _git("--git-dir", str(git_dir), "log", "--reverse", "--format=%H", "--all", "--", chart).decode()
    found: dict[str, NewerRelease] = {}
    for commit in log.split():
        text = _git("--git-dir", str(git_dir), "show", f"{commit}:{chart}").decode("utf-8", "replace")
        app, version = _chart_field(text, "appVersion"), _chart_field(text, "version")
        if not app or not version or app in found:
            continue
        try:
            if operator_tuple(app) <= operator_tuple(newest):
                continue
        except ValueError:
            continue
        blobs = {}
        for code, name in (("IEC", _IEC), ("JSM", _JSM)):
            try:
                blobs[code] = git_blob_id(_git("--git-dir", str(git_dir), "show", f"{commit}:{_CRD}/{name}"))
            except FetchError:
                continue
        if blobs:
            found[app] = NewerRelease(commit, version, app, blobs)
    return sorted(found.values(), key=lambda r: operator_tuple(r.operator))


def _parse_urls(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        repo, sep, url = value.partition("=")
        if not sep or repo.count("/") != 1 or not url:
            raise FetchError(f"--url {value!r}: expected OWNER/NAME=URL, e.g. {HPCLI}=file:///mirrors/hpcli.git")
        out[repo] = url
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fetch.crds", description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=DEST, help="the CRD folder to fill (default: vendor/crds)")
    parser.add_argument(
        "--url", action="append", default=[], metavar="OWNER/NAME=URL", help="fetch a repository from a mirror"
    )
    parser.add_argument(
        "--find-newer",
        type=Path,
        default=None,
        metavar="GIT_DIR",
        help="list the operator releases of a local aws/sagemaker-hyperpod-cli snapshot newer than crdReleases",
    )
    ns = parser.parse_args(argv)
    if ns.find_newer is not None:
        return _report_newer(ns.find_newer)
    try:
        fetched = fetch(ns.dest, pins=PINS, urls=_parse_urls(ns.url))
    except FetchError as err:
        print(f"fetch_crds: {err}", file=sys.stderr)
        return 1
    if not fetched:
        print(f"{ns.dest} already holds the {len(PINS)} pinned files")
        return 0
    for p in fetched:
        print(f"{p.dest}  {p.repo}@{p.commit[:8]}:{p.path}  blob {p.blob[:8]} ok")
    print(f"{len(fetched)} files verified into {ns.dest}")
    return 0


def _report_newer(git_dir: Path) -> int:
    from policies.compatibility import load_compatibility

    newest = load_compatibility().crd_releases[-1].operator_version
    try:
        releases = find_newer(git_dir, newest)
    except FetchError as err:
        print(f"fetch_crds: {err}", file=sys.stderr)
        return 1
    if not releases:
        print(f"{git_dir}: no operator release newer than {newest} (the newest crdReleases row); the overlays stay")
        return 0
    for r in releases:
        print(f"operator {r.operator} (chart {r.chart}) at {r.commit}:")
        for p in r.pins():
            print(f"    PinnedFile({p.dest!r}, HPCLI, {p.commit!r}, {p.path!r}, {p.blob!r}),")
        print("  crdReleases row:\n" + r.crd_release_row())
    return 0


if __name__ == "__main__":
    cli.run(main)
