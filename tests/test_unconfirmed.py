"""The checklist of docs/first-deploy.md and the UNCONFIRMED markers of the code and docs stay in step
(``tools/generate/unconfirmed.py``), and the docs cite only files of the repository and public sources.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from policies import crd_overlays
from tests.cli_runner import run_module
from tools.generate import unconfirmed as u

ROOT = Path(__file__).resolve().parents[1]


def test_every_marker_has_a_checklist_row_and_every_row_a_marker() -> None:
    markers, ids, problems = u.check(ROOT)
    assert len(ids) >= 40 and len(markers) >= len(ids)
    assert problems == [], "\n" + "\n".join(problems)


def test_the_markers_are_where_the_facts_are() -> None:
    """A few literal places (the conversion of the markers that were there before the checklist)."""
    markers, _, _ = u.check(ROOT)
    where = {(m.path, m.id) for m in markers}
    for expected in [
        ("docs/multi-region.md", "global-gateway-execution-role"),
        ("components/global_inference.py", "global-gateway-execution-role"),
        ("docs/capacity.md", "hyperpod-max-pods"),
        ("docs/edge-and-observability.md", "obs-addon-schema"),
        ("components/config/observability.py", "obs-addon-schema"),
        ("policies/readiness.yaml", "system-pod-requests"),
        ("tools/rehearse/create.py", "hyperpod-create-completion"),
        ("policies/resource_types/aws-native/sagemaker.yaml", "deployer-policy-complete"),
        ("docs/operator.md", "router-service-port"),
    ]:
        assert expected in where, expected


# --- the scanner, case by case -------------------------------------------------------------------------------


def test_only_the_tagged_spelling_counts() -> None:
    text = (
        "a UNCONFIRMED [promql-labels] fact\n"
        "b is unconfirmed\n"
        "c is not confirmed offline\n"
        "d is not\n   confirmed by anyone\n"
        "e UNCONFIRMED (promql-labels)\n"
        "f UNCONFIRMED\n  [split-id] across lines\n"
        "g unconfirmed [lower-case]\n"
        "h DescribeMemberClustersUnconfirmed is a Sid; confirmed alone is no marker\n"
    )
    found = [(m.line, m.id) for m in u.scan_text("x.md", text)]
    assert found == [(1, "promql-labels"), (2, None), (3, None), (4, None), (6, None), (7, "split-id"), (9, None)]


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "--quiet"], cwd=tmp_path, check=True)
    return tmp_path


CHECKLIST = f"""# First deploy

| id | what | how |
|---|---|---|
| `not-here` | outside the section | - |

{u.CHECKLIST_HEADING}

| id | what to verify | how |
|---|---|---|
| `promql-labels` | the labels | a query |
| `old-fact` | a fact nothing marks any more | - |

## Next section

| `after-the-table` | not a row of the checklist | - |
"""


def test_a_marker_added_without_a_row_fails_naming_the_place_and_the_fix(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            "docs/first-deploy.md": CHECKLIST,
            "docs/a.md": "The labels are UNCONFIRMED [promql-labels].\nThe port is UNCONFIRMED [router-port].\n",
            "components/b.py": "# whether it waits is unconfirmed\n",
            "vendor/ignored.md": "unconfirmed\n",
            ".gitignore": "vendor/\n",
        },
    )
    markers, ids, problems = u.check(root)
    assert ids == ["promql-labels", "old-fact"]
    assert [(m.path, m.line, m.id) for m in markers] == [
        ("components/b.py", 1, None),
        ("docs/a.md", 1, "promql-labels"),
        ("docs/a.md", 2, "router-port"),
    ]
    assert problems == [
        f"components/b.py:1: '# whether it waits is unconfirmed' states something unverified without an id: {u.HOW_TO}",
        "docs/a.md:2: UNCONFIRMED [router-port] has no checklist entry: add a row "
        f"`| `router-port` | what to verify | how |` under '{u.CHECKLIST_HEADING}' in docs/first-deploy.md",
        "docs/first-deploy.md: checklist entry `old-fact` is marked nowhere: delete its row, or mark the fact "
        "UNCONFIRMED [old-fact] where the code or a doc states it",
    ]
    assert "mark it `UNCONFIRMED [<id>]`" in u.HOW_TO and "docs/first-deploy.md" in u.HOW_TO


def test_outside_a_git_checkout_every_source_file_is_scanned(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("UNCONFIRMED [x]\n", encoding="utf-8")
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "lib.py").write_text("# unconfirmed\n", encoding="utf-8")
    assert u.repository_files(tmp_path) == ["docs/a.md"]


def test_a_row_twice_is_a_problem() -> None:
    assert (
        u.problems([], ["a", "a"])[0]
        == "docs/first-deploy.md: the checklist has `a` more than once; keep one row per id"
    )


def test_cli_lists_markers_by_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert u.main([]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^promql-labels: components/dashboards\.py:\d+, docs/edge-and-observability\.md:\d+", out, re.M)
    assert re.search(r"^\d+ markers, \d+ ids, \d+ checklist rows, \d+ settled by verify$", out, re.M)


# --- docs cite the repository and public sources, in the third person ------------------------------------------

DOCS = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md", ROOT / "BENCHMARKS.md"])
# What the docs must not lean on: the project's private notes and design document (by name or by their section
# labels), folders outside the repository other than the CRD data the tests read, and first-person prose.
PRIVATE = re.compile(
    r"deploy-readiness|operator-facts|anchors\.md|pulumi-practice|\bseed\b|§|\bD[1-9]\b|\bOPF\b"
    r"|\.\./shared(?!/crds)|(?<![\w-])I(?![\w-])|(?<![\w-])(?:[Ww]e|[Oo]ur|[Uu]s)(?![\w-])"
)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_docs_cite_only_the_repository_and_public_sources(path: Path) -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{n}: {m.group(0)!r} in {line.strip()[:100]!r}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        for m in PRIVATE.finditer(line)
    ]
    assert bad == [], "\n".join(bad)


def test_the_private_references_are_caught() -> None:
    for line in [
        "(deploy-readiness.md trap 5)",
        "operator-facts §14",
        "D4 says",
        "the seed section",
        "OPF 11",
        "see ../shared/docs/x.md",
        "I proved it",
        "we checked",
    ]:
        assert PRIVATE.search(line), line
    for line in ["us-east-1", "../shared/crds beside the clone", "the ID of the VPC", "a D-class", "IAM"]:
        assert not PRIVATE.search(line), line


def test_every_unsourced_overlay_path_is_a_checklist_row_marked_in_its_file() -> None:
    """policies/crd_overlays: a field whose path no source states names its checklist id (``checklistId``)."""
    root = u.ROOT
    rows = set(u.checklist_ids((root / "docs" / "first-deploy.md").read_text(encoding="utf-8")))
    seen = list(crd_overlays.checklist_ids())
    assert {i for _, i in seen} == {
        "operator-34-sidecar-resources-path",
        "operator-35-weights-cache-affinity-path",
        "operator-37-spec-paths",
    }
    for file, ident in seen:
        assert ident in rows, ident
        assert f"UNCONFIRMED [{ident}]" in (root / file).read_text(encoding="utf-8"), (file, ident)


def test_the_listing_shows_which_ids_verify_settled_for_which_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verified/<stack>.json`` (written by ``python -m tools.verify``) names the ids a run settled."""
    folder = tmp_path / "verified"
    folder.mkdir()
    doc = {
        "schema": "hyperpod-inference/verified/v1",
        "stack": "staging",
        "observedOn": "2026-12-04",
        "settled": ["router-service-port"],
    }
    (folder / "staging.json").write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.setenv("HPI_VERIFIED_DIR", str(folder))
    done = run_module("tools.generate.unconfirmed")
    lines = done.stdout.splitlines()
    assert next(x for x in lines if x.startswith("router-service-port:")).endswith(
        "; settled for staging (observed 2026-12-04 by verify)"
    )
    assert "settled" not in next(x for x in lines if x.startswith("hyperpod-nvme-mount:"))
    assert lines[-1].endswith(", 1 settled by verify")


def test_the_tools_own_module_name_is_not_a_claim() -> None:
    from tools.generate.unconfirmed import WORD

    assert WORD.search("python -m tools.generate.unconfirmed") is None
    assert WORD.search("see tools/generate/unconfirmed.py") is None
    assert WORD.search("the port is unconfirmed") is not None
    assert WORD.search("UNCONFIRMED [router-port]") is not None
    assert WORD.search("not\n   confirmed by AWS") is not None
