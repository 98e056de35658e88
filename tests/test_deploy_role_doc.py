"""The deploy role's set-up in docs/first-deploy.md against what the generator writes (issue 31).

The doc is the consumer of the generator's file names: every ``out/prod/...`` path its commands read must be a
file ``tools.cli.deployer_policy`` writes, and every managed-policy file the generator writes (the parts and the
boundary) must be one the commands create. The boundary document goes through parliament like the deploy policy.
"""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

from parliament import analyze_policy_string, enhance_finding

from tests.conftest import StackRun, registered
from tests.iam_lint import assert_policy_clean
from tools.cli import deployer_policy as dp

DOC = Path(__file__).resolve().parents[1] / "docs" / "first-deploy.md"


def _generated(tmp_path: Path, run: StackRun) -> set[str]:
    written = dp.write_deployer_policy(run.registrations, run.mocks.calls, tmp_path, stack="prod", region="us-east-1")
    return {p.relative_to(tmp_path).as_posix() for p in written}


def _doc_paths() -> set[str]:
    """Every ``out/prod/<path>`` the doc names (a glob where it says ``*``), as a path under ``--out``."""
    return {m.group(1) for m in re.finditer(r"out/prod/([\w./*<>-]+\.json)", DOC.read_text(encoding="utf-8"))}


def test_doc_reads_only_files_the_generator_writes(tmp_path: Path, stack_runs: dict[str, StackRun]) -> None:
    generated = _generated(tmp_path, registered(stack_runs["prod"]))
    named = _doc_paths()
    assert "iam/boundary-prod.json" in named and "iam/deployer-prod.part*.json" in named
    for path in named:
        assert fnmatch.filter(generated, path), f"docs/first-deploy.md names out/prod/{path}; written: {generated}"


def test_doc_creates_every_part_and_the_boundary(tmp_path: Path, stack_runs: dict[str, StackRun]) -> None:
    generated = _generated(tmp_path, registered(stack_runs["prod"]))
    text = DOC.read_text(encoding="utf-8")
    parts = sorted(p for p in generated if re.fullmatch(r"iam/deployer-prod\.part\d+\.json", p))
    assert parts, generated
    # the attach loop globs the parts; the whole policy is never attached
    assert "for part in out/prod/iam/deployer-prod.part*.json; do" in text
    assert "attach-role-policy --role-name hpi-prod-deployer" in text
    assert "deployer-prod.json)" not in text
    # the boundary is created, under the name the roles' boundary ARN carries, before the role is
    boundary_cmd = (
        "aws iam create-policy --policy-name hpi-prod-role-boundary "
        "--policy-document file://out/prod/iam/boundary-prod.json"
    )
    assert boundary_cmd in text
    assert text.index(boundary_cmd) < text.index("aws iam create-role --role-name hpi-prod-deployer")
    assert dp.boundary_arn("prod").endswith(":policy/hpi-prod-role-boundary")


def test_deployer_policy_complete_row_names_the_verify_check() -> None:
    from tools.verify.report import deploy_role_denials  # noqa: F401  (the check the row names exists)

    (row,) = [
        ln for ln in DOC.read_text(encoding="utf-8").splitlines() if ln.startswith("| `deployer-policy-complete`")
    ]
    assert "hpi verify --stack <s> --deploy-session <session>" in row
    assert "`deploy-role-denials`" in row


def _all_findings(doc: dict) -> list[str]:
    """Every parliament finding, LOW included: in a boundary a misspelt Deny action (LOW ``UNKNOWN_ACTION``)
    silently denies nothing, so the boundary is held to no finding at all."""
    policy = analyze_policy_string(json.dumps(doc), include_community_auditors=False)
    return [f"{enhance_finding(f).severity} {f.issue}: {f.detail}" for f in policy.findings]


def test_parliament_reports_nothing_on_the_boundary() -> None:
    assert_policy_clean(dp.boundary_document(), "boundary.json")
    assert _all_findings(dp.boundary_document()) == []


def test_a_misspelt_deny_in_the_boundary_is_a_finding() -> None:
    doc = dp.boundary_document()
    deny = next(s for s in doc["Statement"] if s["Effect"] == "Deny")
    deny["Action"] = [*deny["Action"], "iam:CreateRolez"]
    assert any("UNKNOWN_ACTION" in f and "iam:CreateRolez" in f for f in _all_findings(doc))
