"""CI never lends the deploy role to a pull request (issue 46 item 2), read from the workflows themselves:
pull-request jobs can only assume the read-only preview role and run on GitHub-hosted runners; the deploy job runs
on the protected branch behind the stack's GitHub environment, with the pack of that branch; every action is pinned
by a 40-hex commit SHA; the roles' trusts (``hpi deployer-policy --out``) carry the matching ``sub`` claims.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tools.cli import deployer_policy as dp

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
# The released tag each pinned commit is (the comment beside it), looked up in each action's repository.
RELEASES = {
    "actions/checkout": ("11bd71901bbe5b1630ceea73d27597364c9af683", "v4.2.2"),
    "actions/setup-python": ("a26af69be951a213d495a4c3e4e4022e16d87065", "v5.6.0"),
    "actions/upload-artifact": ("ea165f8d65b6e75b540449e92b4886f43607fa02", "v4.6.2"),
    "actions/github-script": ("60a0d83039c74a4aee543508d2ffcb1c3799cdea", "v7.0.1"),
    "aws-actions/configure-aws-credentials": ("b47578312673ae6fa5b5096b330d9fbac3d116df", "v4.2.1"),
    "pulumi/actions": ("8e5e406f4007fca908480587cb9893c07090f58d", "v7.0.0"),
}


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((WORKFLOWS / name).read_text("utf-8"))
    return data


def _triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True
    return on if isinstance(on, dict) else {k: None for k in ([on] if isinstance(on, str) else on)}


def _steps(workflow: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(name, step) for name, job in workflow["jobs"].items() for step in job.get("steps", [])]


def _roles(job: dict[str, Any]) -> list[str]:
    return [
        str(s["with"]["role-to-assume"])
        for s in job.get("steps", [])
        if str(s.get("uses", "")).startswith("aws-actions/configure-aws-credentials@")
    ]


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_every_action_is_pinned_by_a_released_commit(name: str) -> None:
    text = (WORKFLOWS / name).read_text("utf-8")
    uses = _steps(_load(name))
    assert uses
    for _, step in uses:
        if "uses" not in step:
            continue
        ref = step["uses"]
        assert PINNED.match(ref), f"{name}: {ref} is not pinned by a 40-hex commit"
        action, _, sha = ref.partition("@")
        assert RELEASES[action][0] == sha, ref
        assert f"{ref} # {RELEASES[action][1]}" in text, f"{name}: the tag of {ref} is not beside it"


def test_a_tag_pin_is_refused() -> None:
    assert not PINNED.match("actions/checkout@v4.2.2")
    assert not PINNED.match("actions/checkout@11bd719")
    assert PINNED.match("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683")


def test_pull_request_jobs_only_assume_the_preview_role_on_hosted_runners() -> None:
    wf = _load("pull-request.yml")
    assert "pull_request" in _triggers(wf) and "pull_request_target" not in _triggers(wf)
    text = (WORKFLOWS / "pull-request.yml").read_text("utf-8")
    assert "DEPLOY_ROLE" not in text and "AWS_ROLE_ARN }}" not in text
    roles = []
    for name, job in wf["jobs"].items():
        assert "environment" not in job, f"{name}: a pull-request job names an environment (the deploy trust)"
        assert job["runs-on"] == "ubuntu-24.04", f"{name}: {job['runs-on']} (self-hosted is the deploy job's)"
        roles += _roles(job)
    assert roles == ["${{ vars.HPI_PREVIEW_ROLE_ARN }}"]
    preview = wf["jobs"]["pulumi-preview"]
    assert "matrix.environment != 'prod'" in preview["env"]["HAS_CLOUD_CREDENTIALS"]
    action = next(s for s in preview["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert action["with"]["command"] == "preview"


def test_the_deploy_job_runs_on_the_protected_branch_behind_the_environment() -> None:
    wf = _load("deploy.yml")
    assert set(_triggers(wf)) == {"push", "workflow_dispatch"}
    assert _triggers(wf)["push"] == {"branches": ["main"]}
    deploy = wf["jobs"]["deploy"]
    assert deploy["environment"] == "${{ matrix.stack }}"
    assert deploy["if"] == "github.ref == 'refs/heads/main'"
    assert _roles(deploy) == ["${{ secrets.HPI_DEPLOY_ROLE_ARN }}"]
    assert "vars.HPI_PROD_RUNNER" in deploy["runs-on"]
    others = [name for name, job in wf["jobs"].items() if name != "deploy"]
    for name in others:
        assert "HPI_PROD_RUNNER" not in json.dumps(wf["jobs"][name]) and not _roles(wf["jobs"][name]), name
    up = next(s for s in deploy["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert up["with"]["command"] == "up"
    assert up["with"]["policyPacks"] == "policies"  # the pack of the checked-out protected branch
    assert up["with"]["policyPackConfigs"] == "policies/config.${{ matrix.environment }}.json"
    checkout = deploy["steps"][0]
    assert checkout["uses"].startswith("actions/checkout@") and "with" not in checkout  # no other ref


def test_the_deploy_job_verifies_right_after_up() -> None:
    """`up` means serving: the step after `pulumi up` is `hpi verify` of the same stack, with the tools installed."""
    steps = _load("deploy.yml")["jobs"]["deploy"]["steps"]
    up = next(i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert steps[up + 1]["run"] == "venv/bin/python -m hpi verify --stack ${{ matrix.stack }} --wait 30"
    install = next(s["run"] for s in steps if "pip install" in str(s.get("run", "")))
    assert "-r requirements-tools.txt" in install  # verify's kubernetes client is a tool dependency


def test_the_trusts_name_one_subject_each() -> None:
    deploy = dp.github_trust("acme/hpi", "environment:prod", account="111122223333")
    preview = dp.github_trust("acme/hpi", "pull_request", account="111122223333")
    (d,), (p,) = deploy["Statement"], preview["Statement"]
    assert d["Condition"]["StringEquals"]["token.actions.githubusercontent.com:sub"] == "repo:acme/hpi:environment:prod"
    assert p["Condition"]["StringEquals"]["token.actions.githubusercontent.com:sub"] == "repo:acme/hpi:pull_request"
    for st in (d, p):
        assert st["Condition"]["StringEquals"]["token.actions.githubusercontent.com:aud"] == "sts.amazonaws.com"
        assert "StringLike" not in st["Condition"]  # no wildcard subject
        assert st["Principal"]["Federated"].endswith(":oidc-provider/token.actions.githubusercontent.com")
