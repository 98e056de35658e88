"""The deploy role has no escalation path (issue 46 item 1), proven by a consumer: PMapper's escalation analysis
(tests/iam_escalation.py) of each stack's deploy role, its roles and the stack's boundary finds nothing, and it
does find the paths of the policy issue 46 reported (the analysis can fail). Next to it: the statements each
generated document must hold, and escalation probes evaluated as IAM would (tests/iam_eval.py), each refused.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from components.config.stackfile import load_stack_file, stack_path
from tests.conftest import ALL_STACKS, REGIONAL_STACKS, cached_scope, registered
from tests.iam_escalation import analyse
from tests.iam_eval import allowed
from tools.cli import deployer_policy as dp
from tools.plan.harness import StackRun, run_stack
from tools.plan.mocks import ACCOUNT_ID
from tools.rehearse.model import expand

ANALYSED = ["prod", "staging", "attach", "global", "dev"]
TAG = "hyperpod-inference:stack"


@pytest.fixture(scope=cached_scope("module"))
def stack_runs(stack_runs: dict[str, StackRun]) -> dict[str, StackRun]:  # type: ignore[no-redef]
    """The regional runs of the session cache and the global stack, run here."""
    out = dict(stack_runs)
    for stack in ALL_STACKS:
        if stack not in REGIONAL_STACKS:
            out[stack] = registered(run_stack(stack))
    return out


def _policy(run: StackRun) -> dp.DeployerPolicy:
    region = str(load_stack_file(stack_path(run.stack)).get("aws:region"))
    policy = dp.deployer_policy(run.registrations, run.mocks.calls, stack=run.stack, region=region, account=ACCOUNT_ID)
    assert policy.complete
    return policy


def _analysis(run: StackRun, parts: list[dict[str, Any]] | None = None, boundary: dict[str, Any] | None = None):
    policy = _policy(run)
    return analyse(
        parts if parts is not None else policy.parts(),
        boundary if boundary is not None else policy.boundary_document,
        expand(run.registrations),
        stack=run.stack,
        account=ACCOUNT_ID,
    )


@pytest.mark.parametrize("stack", ANALYSED)
def test_pmapper_finds_no_escalation_path(stack: str, stack_runs: dict[str, StackRun]) -> None:
    analysis = _analysis(stack_runs[stack])
    assert len(analysis.inside) >= 2  # the deploy role and at least one role of the stack
    assert analysis.findings() == []


def _with(doc: dict[str, Any], *statements: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**copy.deepcopy(doc), "Statement": [*doc["Statement"], *statements]}]


def test_pmapper_finds_the_paths_issue_46_reported(stack_runs: dict[str, StackRun]) -> None:
    """The analysis can fail: each weakening issue 46 found in the old policy is an escalation path again."""
    run = stack_runs["prod"]
    policy = _policy(run)
    doc = policy.document
    role = f"arn:aws:iam::{ACCOUNT_ID}:role/hpi-prod-*"
    weakenings = {
        "trust rewrite": {"Effect": "Allow", "Action": "iam:UpdateAssumeRolePolicy", "Resource": "*"},
        "attach without iam:PolicyARN": {"Effect": "Allow", "Action": "iam:AttachRolePolicy", "Resource": "*"},
        "assume any role": {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"},
        "pass any role to ec2": {"Effect": "Allow", "Action": ["iam:PassRole", "ec2:RunInstances"], "Resource": "*"},
        "lambda": {"Effect": "Allow", "Action": ["iam:PassRole", "lambda:*"], "Resource": "*"},
    }
    # a trust rewrite of the stack's own roles stays inside the graph PMapper sees (the role is bounded): the
    # required-statements test and the probes below refuse it as the lasting back door it is
    assert not _analysis(
        run, parts=_with(doc, {"Effect": "Allow", "Action": "iam:UpdateAssumeRolePolicy", "Resource": role})
    ).findings()
    for what, statement in weakenings.items():
        assert _analysis(run, parts=_with(doc, statement)).findings(), what
    # the boundary is what stops a stack role: without its denials, the roles the plan gives `Allow *` policies
    # (AWS managed ones, unknown offline) reach the account's administrators
    loose = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    assert _analysis(run, boundary=loose).findings()


# --- what each document must hold ------------------------------------------------------------------------------


def _statements(doc: dict[str, Any], action: str, effect: str = "Allow") -> list[dict[str, Any]]:
    def actions(st: dict[str, Any]) -> list[str]:
        a = st["Action"]
        return [a] if isinstance(a, str) else a

    return [st for st in doc["Statement"] if st["Effect"] == effect and action in actions(st)]


BOUNDARY_MUST_DENY = [
    "iam:PassRole",  # beyond the stack's roles (NotResource)
    "sts:AssumeRole",
    "lambda:CreateFunction",
    "lambda:UpdateFunctionCode",
    "ec2:RunInstances",
    "iam:CreatePolicyVersion",
    "iam:SetDefaultPolicyVersion",
    "iam:UpdateAssumeRolePolicy",
    "iam:AttachRolePolicy",
    "iam:PutRolePolicy",
    "iam:CreateAccessKey",
    "iam:DeleteRolePermissionsBoundary",
    "ssm:SendCommand",
    "cloudformation:CreateStack",
    "codebuild:StartBuild",
    "sagemaker:CreateNotebookInstance",
    "ec2:ModifySnapshotAttribute",
    "autoscaling:CreateLaunchConfiguration",
]


@pytest.mark.parametrize("stack", ANALYSED)
def test_the_boundary_denies_every_escalation_action(stack: str, stack_runs: dict[str, StackRun]) -> None:
    policy = _policy(stack_runs[stack])
    boundary = [policy.boundary_document]
    outside = f"arn:aws:iam::{ACCOUNT_ID}:role/Administrator"
    for action in BOUNDARY_MUST_DENY:
        assert not allowed(boundary, action, outside), action
    assert policy.stack_roles
    for role in policy.stack_roles:  # PassRole stays for the stack's own roles (the operator passes its role)
        assert allowed(boundary, "iam:PassRole", role.replace("*", "x")), role
        assert not allowed(boundary, "iam:UpdateAssumeRolePolicy", role.replace("*", "x")), role
    assert allowed(boundary, "s3:GetObject", "arn:aws:s3:::hyperpod-tls-x/a")  # otherwise what the role's own grants


@pytest.mark.parametrize("stack", ANALYSED)
def test_required_statements_of_each_deploy_policy(stack: str, stack_runs: dict[str, StackRun]) -> None:
    doc = _policy(stack_runs[stack]).document
    assert _statements(doc, "iam:UpdateAssumeRolePolicy") == []
    for st in _statements(doc, "iam:AttachRolePolicy") + _statements(doc, "iam:DetachRolePolicy"):
        arns = st["Condition"]["ArnEquals"]["iam:PolicyARN"]
        assert "arn:aws:iam::aws:policy/AdministratorAccess" not in arns
        assert not any("*" in a or a.endswith("-role-boundary") for a in arns), arns
        assert "iam:PermissionsBoundary" in st["Condition"]["StringEquals"]
    for action in ("iam:PassRole", "iam:CreateServiceLinkedRole"):
        for st in _statements(doc, action):
            assert st["Condition"], action
    for action in ("sts:AssumeRole", "lambda:CreateFunction", "ec2:RunInstances", "iam:CreateAccessKey"):
        assert not any(allowed([doc], action, "*", {}) for _ in [0]), action
    for st in doc["Statement"]:  # no statement grants tag writes on a request tag alone
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        if st["Effect"] == "Allow" and {"kms:TagResource", "sagemaker:AddTags"} & set(actions):
            cond = st.get("Condition", {}).get("StringEquals", {})
            assert f"aws:ResourceTag/{TAG}" in cond or "sagemaker:TaggingAction" in cond, st


# --- escalation probes, each refused ---------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["prod", "staging", "dev"])
def test_escalation_probes_fail(stack: str, stack_runs: dict[str, StackRun]) -> None:
    docs = _policy(stack_runs[stack]).parts()
    region = str(load_stack_file(stack_path(stack)).get("aws:region"))
    acct = ACCOUNT_ID
    own_role = f"arn:aws:iam::{acct}:role/hpi-{stack}-hyperpod-execution"
    boundary = f"arn:aws:iam::{acct}:policy/hpi-{stack}-role-boundary"
    region_ctx = {"aws:RequestedRegion": region}
    probes: dict[str, tuple[str, str, dict[str, Any]]] = {
        "rewrite a stack role's trust": ("iam:UpdateAssumeRolePolicy", own_role, {}),
        "attach AdministratorAccess to a stack role": (
            "iam:AttachRolePolicy",
            own_role,
            {"iam:PermissionsBoundary": boundary, "iam:PolicyARN": "arn:aws:iam::aws:policy/AdministratorAccess"},
        ),
        "attach the boundary itself as a permissions policy": (
            "iam:AttachRolePolicy",
            own_role,
            {"iam:PermissionsBoundary": boundary, "iam:PolicyARN": boundary},
        ),
        "new version of the boundary": ("iam:CreatePolicyVersion", boundary, {}),
        "pass an outside role": (
            "iam:PassRole",
            f"arn:aws:iam::{acct}:role/Administrator",
            {"iam:PassedToService": "sagemaker.amazonaws.com"},
        ),
        "assume a role": ("sts:AssumeRole", f"arn:aws:iam::{acct}:role/Administrator", {}),
        "run an instance": ("ec2:RunInstances", f"arn:aws:ec2:{region}:{acct}:instance/*", region_ctx),
        "claim an untagged key": (
            "kms:TagResource",
            f"arn:aws:kms:{region}:{acct}:key/1234",
            {**region_ctx, f"aws:RequestTag/{TAG}": stack},
        ),
        "change an untagged key's policy": ("kms:PutKeyPolicy", f"arn:aws:kms:{region}:{acct}:key/1234", region_ctx),
        "alias an untagged key": ("kms:CreateAlias", f"arn:aws:kms:{region}:{acct}:key/1234", region_ctx),
        "claim an untagged cluster": (
            "sagemaker:AddTags",
            f"arn:aws:sagemaker:{region}:{acct}:cluster/abc",
            {**region_ctx, f"aws:RequestTag/{TAG}": stack},
        ),
        "update an untagged cluster": (
            "sagemaker:UpdateCluster",
            f"arn:aws:sagemaker:{region}:{acct}:cluster/abc",
            region_ctx,
        ),
        "a service-linked role of another service": (
            "iam:CreateServiceLinkedRole",
            f"arn:aws:iam::{acct}:role/aws-service-role/x",
            {"iam:AWSServiceName": "sagemaker.amazonaws.com"},
        ),
        "change another web ACL": (
            "wafv2:UpdateWebACL",
            f"arn:aws:wafv2:{region}:{acct}:regional/webacl/other/1",
            region_ctx,
        ),
    }
    allowed_probes = [what for what, (action, arn, ctx) in probes.items() if allowed(docs, action, arn, ctx)]
    assert allowed_probes == []
    # and what the stack needs still holds: tag-on-create of its cluster, its own key
    create_tags = {**region_ctx, f"aws:RequestTag/{TAG}": stack, "sagemaker:TaggingAction": "CreateCluster"}
    assert allowed(docs, "sagemaker:AddTags", f"arn:aws:sagemaker:{region}:{acct}:cluster/abc", create_tags)
    own_key = {**region_ctx, f"aws:ResourceTag/{TAG}": stack}
    assert allowed(docs, "kms:PutKeyPolicy", f"arn:aws:kms:{region}:{acct}:key/1234", own_key)


def test_the_global_invoke_policy_gets_no_new_version(stack_runs: dict[str, StackRun]) -> None:
    """Outside callers attach it, no boundary holds them: a version write would widen what they hold."""
    docs = _policy(stack_runs["global"]).parts()
    invoke = f"arn:aws:iam::{ACCOUNT_ID}:policy/hpi-global-invoke-global-gateway"
    assert allowed(docs, "iam:CreatePolicy", invoke)
    for action in sorted(dp.POLICY_VERSION_WRITES):
        assert not allowed(docs, action, invoke), action
    prod_docs = _policy(stack_runs["prod"]).parts()  # a policy only the stack's bounded roles hold: versioned
    keda = f"arn:aws:iam::{ACCOUNT_ID}:policy/hpi-prod-keda-operator"
    assert allowed(prod_docs, "iam:CreatePolicyVersion", keda)


# --- the preview role pull requests get (issue 46 item 2) ------------------------------------------------------

READ_VERB = re.compile(r"^(Get|Describe|List|BatchGet|Head)[A-Za-z]*$")


@pytest.mark.parametrize("stack", ANALYSED)
def test_the_preview_policy_only_reads(stack: str, stack_runs: dict[str, StackRun]) -> None:
    run = stack_runs[stack]
    region = str(load_stack_file(stack_path(stack)).get("aws:region"))
    preview = dp.preview_policy(run.registrations, run.mocks.calls, stack=stack, region=region, account=ACCOUNT_ID)
    assert preview.complete
    granted = {a for st in preview.statements if st.effect == "Allow" for a in st.actions}
    writes = sorted(a for a in granted if not READ_VERB.match(a.split(":", 1)[1]))
    assert writes == []
    table = dp.load_deploy_actions()
    reads = {
        a for r in expand(run.registrations) if r.custom and (row := table.row_for(r.type, r.inputs)) for a in row.read
    }
    assert reads and reads <= granted  # every read of the refresh
    deploy = {a for st in _policy(run).statements for a in st.actions}
    assert granted <= deploy
    docs = preview.parts()
    assert not allowed(
        docs,
        "iam:PassRole",
        f"arn:aws:iam::{ACCOUNT_ID}:role/hpi-{stack}-x",
        {"iam:PassedToService": "eks.amazonaws.com"},
    )


def test_deployer_policy_writes_both_roles_and_their_trusts(stack_runs: dict[str, StackRun], tmp_path) -> None:
    run = stack_runs["dev"]
    written = dp.write_deployer_policy(
        run.registrations, run.mocks.calls, tmp_path, stack="dev", region="us-west-2", repo="acme/hpi"
    )
    names = sorted(p.name for p in written)
    assert "trust-deployer-dev.json" in names and "trust-preview-dev.json" in names
    assert any(n.startswith("preview-dev.part") for n in names) and any(
        n.startswith("deployer-dev.part") for n in names
    )
    trust = json.loads((tmp_path / "iam" / "trust-preview-dev.json").read_text())
    assert trust["Statement"][0]["Condition"]["StringEquals"]["token.actions.githubusercontent.com:sub"] == (
        "repo:acme/hpi:pull_request"
    )
    trust = json.loads((tmp_path / "iam" / "trust-deployer-dev.json").read_text())
    assert trust["Statement"][0]["Condition"]["StringEquals"]["token.actions.githubusercontent.com:sub"] == (
        "repo:acme/hpi:environment:dev"
    )
