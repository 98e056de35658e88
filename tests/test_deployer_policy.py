"""The deploy policy of each stack (``tools.cli.deployer_policy``, written by ``tools.cli.preview --out``) and its table.

For every reference stack: each AWS type it registers (remote components expanded) has a row in
the resource-type records (``deploy:``) with create and delete actions, every one of them is granted by the written
document, and parliament reports nothing above LOW. The table's actions exist in the Service Authorization
Reference (or, newer than parliament's copy, in botocore's model of the service), the aws-native rows equal the
CloudFormation handlers cfn-lint ships, and the scoping rules are tested branch by branch on small graphs.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import botocore.session
import pytest

from policies.deploy_actions import DYNAMIC, DeployActions, load_deploy_actions
from tests.conftest import ALL_STACKS, REGIONAL_STACKS, cached_scope
from tests.iam_lint import assert_policy_clean
from tools.cli import deployer_policy as dp
from tools.plan.harness import StackRun
from tools.plan.mocks import ACCOUNT_ID, Registration
from tools.plan.render import cfn_type, resource_schema
from tools.rehearse.model import expand

TABLE = load_deploy_actions()


@pytest.fixture(scope=cached_scope("module"))
def runs(every_stack_run: dict[str, StackRun]) -> dict[str, StackRun]:
    """Every reference stack's run (the session's, tests/conftest.py)."""
    return every_stack_run


def policy_for(run: StackRun) -> dp.DeployerPolicy:
    from components.config.stackfile import load_stack_file, stack_path

    region = str(load_stack_file(stack_path(run.stack)).get("aws:region"))
    return dp.deployer_policy(run.registrations, run.mocks.calls, stack=run.stack, region=region)


def _aws_types(run: StackRun) -> dict[str, Registration]:
    """Table key -> one registration, for every custom resource that is an AWS (or dynamic) resource."""
    out: dict[str, Registration] = {}
    for reg in expand(run.registrations):
        if reg.custom and (reg.type.startswith(("aws:", "aws-native:")) or reg.type == DYNAMIC):
            out.setdefault(DeployActions.key_of(reg.type, reg.inputs), reg)
    return out


def _granted(document: dict[str, Any]) -> set[str]:
    return {a for s in document["Statement"] for a in s["Action"]}


# --- every reference stack -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_registered_aws_type_has_create_and_delete_actions_granted(stack: str, runs) -> None:
    run = runs[stack]
    policy = policy_for(run)
    assert policy.complete, (
        f"no deploy row in policies/resource_types for {policy.unknown_types + policy.unknown_invokes}"
    )
    types = _aws_types(run)
    assert types, "the stack registered no AWS resource"
    granted = _granted(policy.document)
    for key in types:
        row = TABLE.types.get(key)
        assert row is not None, f"{stack}: {key} has no deploy row in policies/resource_types"
        assert row.create, f"{key}: no create actions"
        assert row.delete or row.delete_note, f"{key}: no delete actions and no delete_note"
        missing = row.all_actions() - granted
        if key == dp.POLICY_TYPE and stack == "global":  # the invoke policy outside callers attach: no versions
            missing -= dp.POLICY_VERSION_WRITES
        assert not missing, f"{stack}: {key} needs {sorted(missing)}, not in the written policy"
    for call in run.mocks.calls:
        assert set(TABLE.invokes[call.token].actions) <= granted, call.token


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_parliament_reports_nothing_above_low(stack: str, runs) -> None:
    policy = policy_for(runs[stack])
    assert_policy_clean(policy.document, f"deployer-{stack}.json")
    parts = policy.parts()
    for n, part in enumerate(parts, start=1):
        assert dp.policy_chars(part) <= dp.MANAGED_POLICY_MAX_CHARS
        assert_policy_clean(part, f"deployer-{stack}.part{n}.json")
    assert [s for p in parts for s in p["Statement"]] == policy.document["Statement"]


def _statement(document: dict[str, Any], action: str) -> dict[str, Any]:
    (found,) = [s for s in document["Statement"] if action in s["Action"] and s["Effect"] == "Allow"]
    return found


def test_prod_scopes_literal_values(runs) -> None:
    doc = policy_for(runs["prod"]).document
    prod_roles = [
        "arn:aws:iam::*:role/SageMakerHyperPodInference-prod",
        "arn:aws:iam::*:role/hpi-prod-aws-load-balancer-controller",
        "arn:aws:iam::*:role/hpi-prod-eks-cluster-role",
        "arn:aws:iam::*:role/hpi-prod-eks-vpc-flow-logs",
        "arn:aws:iam::*:role/hpi-prod-hp-observability",
        "arn:aws:iam::*:role/hpi-prod-hyperpod-execution",
        "arn:aws:iam::*:role/hpi-prod-inference-gateway",
        "arn:aws:iam::*:role/hpi-prod-jumpstart-gated-models",
        "arn:aws:iam::*:role/hpi-prod-keda-operator",
        "arn:aws:iam::*:role/hpi-prod-s3-csi-driver",
    ]
    assert _statement(doc, "iam:PassRole")["Resource"] == prod_roles
    # IAM is global: no region condition; only to the services the stack's resources pass roles to
    assert _statement(doc, "iam:PassRole")["Condition"] == {
        "StringEquals": {
            "iam:PassedToService": [
                "eks.amazonaws.com",
                "pods.eks.amazonaws.com",
                "sagemaker.amazonaws.com",
                "vpc-flow-logs.amazonaws.com",
            ]
        }
    }
    create_role = _statement(doc, "iam:CreateRole")
    assert create_role["Resource"] == prod_roles
    assert create_role["Condition"] == {
        "StringLike": {"iam:PermissionsBoundary": "arn:aws:iam::*:policy/hpi-prod-role-boundary"}
    }
    assert "iam:UpdateRoleDescription" in _statement(doc, "iam:DeleteRole")["Action"]
    # bucketPrefix, not the logical name (issue 31)
    assert _statement(doc, "s3:PutBucketPolicy")["Resource"] == [
        "arn:aws:s3:::hpi-prod-alb-logs-*",
        "arn:aws:s3:::hpi-prod-s3-access-logs-*",
        "arn:aws:s3:::hyperpod-tls-prod-*",
        "arn:aws:s3:::sagemaker-hpi-prod-lifecycle-*",
    ]
    assert _statement(doc, "s3:PutObject")["Resource"] == [
        "arn:aws:s3:::hpi-prod-alb-logs-*/*",
        "arn:aws:s3:::hpi-prod-s3-access-logs-*/*",
        "arn:aws:s3:::hyperpod-tls-prod-*/*",
        "arn:aws:s3:::sagemaker-hpi-prod-lifecycle-*/*",
    ]
    key_admin = _statement(doc, "kms:ScheduleKeyDeletion")
    assert key_admin["Resource"] == ["arn:aws:kms:us-east-1:*:key/*"]
    assert key_admin["Condition"] == {"StringEquals": {"aws:ResourceTag/hyperpod-inference:stack": "prod"}}
    assert _statement(doc, "kms:CreateKey")["Condition"] == {
        "StringEquals": {"aws:RequestTag/hyperpod-inference:stack": "prod", "aws:RequestedRegion": "us-east-1"}
    }
    assert _statement(doc, "iam:CreateServiceLinkedRole")["Condition"] == {
        "StringEquals": {
            "iam:AWSServiceName": [
                "eks.amazonaws.com",
                "elasticache.amazonaws.com",
                "elasticloadbalancing.amazonaws.com",
                "hyperpod.sagemaker.amazonaws.com",
                "transitgateway.amazonaws.com",
            ]
        }
    }
    vpc = _statement(doc, "ec2:CreateVpc")
    assert vpc["Resource"] == "*"
    assert vpc["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-east-1"}}
    assert _statement(doc, "eks:DeleteCluster")["Resource"] == ["arn:aws:eks:us-east-1:*:cluster/hpi-prod-eks"]
    assert _statement(doc, "elasticache:DeleteCacheSubnetGroup")["Resource"] == [
        "arn:aws:elasticache:us-east-1:*:subnetgroup:hpi-prod-kv-subnets"
    ]
    assert _statement(doc, "iam:CreateServiceLinkedRole")["Resource"] == ["arn:aws:iam::*:role/aws-service-role/*"]
    delete_cluster = _statement(doc, "sagemaker:DeleteCluster")
    assert delete_cluster["Resource"] == ["arn:aws:sagemaker:us-east-1:*:cluster/*"]
    assert delete_cluster["Condition"] == {"StringEquals": {"aws:ResourceTag/hyperpod-inference:stack": "prod"}}
    denies = {st["Sid"]: st for st in doc["Statement"] if st["Effect"] == "Deny"}
    assert sorted(denies) == ["DenyTagChangesOnOtherStacksResources", "DenyUntaggedOrOtherStacksResources"]
    untagged = denies["DenyUntaggedOrOtherStacksResources"]
    assert untagged["Resource"] == ["arn:aws:kms:us-east-1:*:key/*", "arn:aws:sagemaker:us-east-1:*:cluster/*"]
    assert untagged["Condition"] == {"StringNotEquals": {"aws:ResourceTag/hyperpod-inference:stack": "prod"}}
    assert {"kms:PutKeyPolicy", "kms:TagResource", "sagemaker:UpdateCluster"} <= set(untagged["Action"])
    assert not {"kms:CreateKey", "sagemaker:CreateCluster", "sagemaker:AddTags"} & set(untagged["Action"])
    deny = denies["DenyTagChangesOnOtherStacksResources"]
    assert deny["Action"] == ["kms:TagResource", "kms:UntagResource", "sagemaker:AddTags", "sagemaker:DeleteTags"]
    assert deny["Condition"] == {
        "StringNotEquals": {"aws:ResourceTag/hyperpod-inference:stack": "prod"},
        "Null": {"aws:ResourceTag/hyperpod-inference:stack": "false"},
    }
    assert _statement(doc, "cloudformation:CreateResource")["Resource"] == "*"  # Cloud Control: no resource scope
    assert _statement(doc, "route53:ChangeResourceRecordSets")["Resource"] == [
        "arn:aws:route53:::hostedzone/Z0EXAMPLE1HPIPROD"
    ]
    assert _statement(doc, "logs:DeleteLogGroup")["Resource"] == [
        "arn:aws:logs:us-east-1:*:log-group:/hyperpod-inference/network/vpc-flow-logs-*",
        "arn:aws:logs:us-east-1:*:log-group:aws-waf-logs-hpi-prod",
    ]


def test_attach_reads_the_adopted_clusters_by_name(runs) -> None:
    policy = policy_for(runs["attach"])
    assert "aws:eks/cluster:Cluster" not in policy.by_type  # nothing of the cluster layer is created
    assert policy.by_type["invoke aws:eks/getCluster:getCluster"] == ["eks:DescribeCluster"]
    assert _statement(policy.document, "eks:DescribeCluster")["Resource"] == [
        "arn:aws:eks:us-west-2:*:cluster/ml-platform"
    ]


def test_global_stack_grants_the_gateway_api_and_passes_only_its_role(runs) -> None:
    global_stack = next(s for s in ALL_STACKS if s not in REGIONAL_STACKS)
    doc = policy_for(runs[global_stack]).document
    create = _statement(doc, "sagemaker:CreateGlobalInferenceGateway")
    assert create["Resource"] == "*"  # not in parliament's SAR copy: no scope known
    assert create["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-east-1"}}
    assert _statement(doc, "iam:PassRole")["Resource"] == ["arn:aws:iam::*:role/hpi-global-global-gateway"]


def test_out_writes_the_deployer_policy_and_its_notes(tmp_path: Path, runs) -> None:
    run = runs["dev"]
    written = dp.write_deployer_policy(run.registrations, run.mocks.calls, tmp_path, stack="dev", region="us-west-2")
    names = [p.relative_to(tmp_path).as_posix() for p in written]
    policy = policy_for(run)
    n = len(policy.parts())
    assert n >= 3  # the dev policy is larger than one managed policy may be
    previews = len(dp.preview_policy(run.registrations, run.mocks.calls, stack="dev", region="us-west-2").parts())
    assert names == [
        "iam/deployer-dev.json",
        *[f"iam/deployer-dev.part{i}.json" for i in range(1, n + 1)],
        "iam/boundary-dev.json",
        *[f"iam/preview-dev.part{i}.json" for i in range(1, previews + 1)],  # the pull requests' role (issue 46.2)
        "iam/trust-deployer-dev.json",
        "iam/trust-preview-dev.json",
        "deployer-dev.notes.json",
    ]
    assert json.loads(written[0].read_text()) == policy.document
    parts = [json.loads(p.read_text()) for p in written[1 : n + 1]]
    assert parts == policy.parts()
    boundary = json.loads(written[n + 1].read_text())
    assert boundary["Statement"][1]["Effect"] == "Deny"
    assert {"iam:CreateRole", "iam:PutRolePolicy", "iam:DeleteRolePermissionsBoundary"} <= set(
        boundary["Statement"][1]["Action"]
    )
    notes = json.loads(written[-1].read_text())
    assert notes["complete"] is True and notes["table"] == "policies/resource_types (deploy)"
    assert notes["parts"] == names[1 : n + 1] and notes["boundaryFile"] == "iam/boundary-dev.json"
    assert notes["permissionsBoundary"] == "arn:aws:iam::*:policy/hpi-dev-role-boundary"
    assert any("S3 backend" in n for n in notes["notes"]) and any("access entry" in n for n in notes["notes"])
    star = next(s for s in notes["statements"] if s["sid"] == "Ec2AnyResource")
    assert "acts on ec2:subnet, ec2:vpc, which this stack's names give no ARN for (IDs AWS assigns)" in star["why"]


# --- the table -----------------------------------------------------------------------------------------------

BOTOCORE_SERVICE = {"sagemaker": "sagemaker"}


@cache
def _operations(service: str) -> set[str]:
    model = botocore.session.get_session().get_service_model(service)
    return set(model.operation_names)


def test_every_action_of_the_table_exists() -> None:
    """In the SAR (parliament's copy), or — for operations newer than it — in botocore's model of the service
    (IAM names those actions after the operation)."""
    actions = {a for row in TABLE.types.values() for a in row.all_actions()}
    actions |= {a for inv in TABLE.invokes.values() for a in inv.actions}
    unknown = []
    for action in sorted(actions):
        if dp.sar_action(action) is not None:
            continue
        service, _, name = action.partition(":")
        if service in BOTOCORE_SERVICE and name in _operations(BOTOCORE_SERVICE[service]):
            continue
        unknown.append(action)
    assert unknown == []


def _arn_parts(arn: str) -> tuple[str, bool, bool, str]:
    """(service, has a region, has an account, the resource part's literal start) of an ARN or an ARN format."""
    _, _, service, region, account, resource = arn.split(":", 5)
    literal = re.split(r"\$\{|\{|\*", resource, maxsplit=1)[0]
    return service, bool(region), bool(account), literal


def test_every_arn_template_is_the_sar_resource_type_it_names() -> None:
    """Same service, the same region and account fields, and the resource part starts like the SAR's format."""
    resources = dp.sar_resources()
    checked = 0
    for key, row in [*TABLE.types.items(), *TABLE.invokes.items()]:
        for pattern in row.arns:
            sar_format = resources.get(pattern.service, {}).get(pattern.resource_type)
            assert sar_format, f"{key}: {pattern.sar} is not a resource type of the SAR"
            ours, theirs = _arn_parts(pattern.arn), _arn_parts(sar_format)
            assert ours[:3] == theirs[:3], f"{key}: {pattern.arn} is not of the form {sar_format}"
            assert ours[3].startswith(theirs[3]), f"{key}: {pattern.arn} is not of the form {sar_format}"
            checked += 1
    assert TABLE.action_resources["iam:CreateServiceLinkedRole"].arns == [
        "arn:{partition}:iam::{account}:role/aws-service-role/*"
    ]
    assert checked >= 30


def test_aws_native_rows_are_the_cloudformation_handlers() -> None:
    """aws-native rows are the handlers' permissions verbatim plus the Cloud Control calls."""
    for key, row in TABLE.types.items():
        if not key.startswith("aws-native:"):
            continue
        schema = resource_schema(cfn_type(key), "us-east-1")
        assert schema is not None, key
        for phase in ("create", "read", "update", "delete"):
            ours = {a for a in getattr(row, phase) if not a.startswith("cloudformation:")}
            assert ours == set(schema["handlers"][phase]["permissions"]), f"{key} {phase}"


def test_every_row_names_a_source_label() -> None:
    for key, row in [*TABLE.types.items(), *TABLE.invokes.items()]:
        label = row.source.split()[0]
        assert label in TABLE.sources, f"{key}: source {row.source!r} starts with no label of `sources:`"


def test_rows_for_the_types_other_branches_add() -> None:
    for key in ("aws:ec2/route:Route", "aws:elasticache/user:User", "aws:elasticache/userGroup:UserGroup"):
        assert TABLE.types[key].create and TABLE.types[key].delete


# --- the scoping rules, branch by branch ---------------------------------------------------------------------


def _reg(typ: str, name: str, inputs: dict[str, Any] | None = None) -> Registration:
    return Registration(
        type=typ, name=name, urn=f"urn:pulumi:t::p::{typ}::{name}", custom=True, parent=None, inputs=inputs or {}
    )


def _policy(*regs: Registration, calls: tuple[Any, ...] = (), table: DeployActions = TABLE) -> dp.DeployerPolicy:
    return dp.deployer_policy(list(regs), calls, stack="t", region="eu-west-1", table=table)


def test_scoped_only_when_the_stack_has_every_resource_type() -> None:
    # iam:PutRolePolicy acts on `role` only: scoped. eks:CreateAddon needs cluster and podidentityassociation.
    role = _reg("aws:iam/role:Role", "r", {"name": "hpi-t-role"})
    policy = _policy(role)
    assert _statement(policy.document, "iam:PutRolePolicy")["Resource"] == ["arn:aws:iam::*:role/hpi-t-role"]
    addon = _reg("aws:eks/addon:Addon", "a", {"clusterName": "c1", "addonName": "coredns"})
    no_cluster = _policy(addon)
    assert _statement(no_cluster.document, "eks:CreateAddon")["Resource"] == "*"
    why = next(s.why for s in no_cluster.statements if "eks:CreateAddon" in s.actions)
    assert "requires cluster (SAR), which this stack gives no ARN for" in why
    cluster = _reg("aws:eks/cluster:Cluster", "k", {"name": "c1"})
    with_cluster = _policy(addon, cluster)
    assert _statement(with_cluster.document, "eks:CreateAddon")["Resource"] == [
        "arn:aws:eks:eu-west-1:*:cluster/c1",
        "arn:aws:eks:eu-west-1:*:podidentityassociation/c1/*",
    ]


def test_actions_without_resource_scope_get_the_region_condition_except_global_services() -> None:
    policy = _policy(_reg("aws:ec2/vpc:Vpc", "v"), _reg("aws:route53/record:Record", "rec", {"zoneId": "Z1"}))
    assert _statement(policy.document, "ec2:DescribeVpcs")["Condition"] == {
        "StringEquals": {"aws:RequestedRegion": "eu-west-1"}
    }
    # route53:GetChange is scoped (change/*); a route53 action on `*` would carry no condition
    assert _statement(policy.document, "route53:GetChange")["Resource"] == ["arn:aws:route53:::change/*"]
    why = next(s.why for s in policy.statements if "ec2:DescribeVpcs" in s.actions)
    assert "supports no resource-level permissions" in why


def test_names_the_mocks_made_up_become_wildcards_and_the_account_is_replaced() -> None:
    bucket = _reg("aws:s3/bucket:Bucket", "logs")  # auto-named: logs-<7 hex> in AWS
    policy_ = _reg("aws:s3/bucketPolicy:BucketPolicy", "logs-policy", {"bucket": "logs-0a1b2c3"})
    named = _reg("aws:s3/bucket:Bucket", "tls", {"bucket": f"tls-t-{ACCOUNT_ID}"})
    policy = _policy(bucket, policy_, named)
    assert _statement(policy.document, "s3:PutBucketPolicy")["Resource"] == [
        "arn:aws:s3:::logs-*",
        "arn:aws:s3:::tls-t-*",
    ]
    pinned = dp.deployer_policy([named], (), stack="t", region="eu-west-1", account="111122223333")
    assert _statement(pinned.document, "s3:CreateBucket")["Resource"] == ["arn:aws:s3:::tls-t-111122223333"]
    log = _reg("aws:cloudwatch/logGroup:LogGroup", "lg", {"namePrefix": "/x/flow-"})
    assert _statement(_policy(log).document, "logs:DeleteLogGroup")["Resource"] == [
        "arn:aws:logs:eu-west-1:*:log-group:/x/flow-*"
    ]


def test_unknown_types_and_invokes_are_reported_not_guessed() -> None:
    gadget = _reg("aws:ec2/gadget:Gadget", "g")
    dynamic = _reg(DYNAMIC, "d", {"resourceKind": "hyperpod:Unknown"})
    kube = _reg("kubernetes:core/v1:Secret", "s")
    call = SimpleNamespace(token="aws:ec2/getGadget:getGadget", args={})
    policy = _policy(gadget, dynamic, kube, calls=(call,))
    assert policy.unknown_types == ["aws:ec2/gadget:Gadget", f"{DYNAMIC}#hyperpod:Unknown"]
    assert policy.unknown_invokes == ["aws:ec2/getGadget:getGadget"]
    assert not policy.complete and policy.notes()["complete"] is False
    assert policy.document["Statement"] == []


def test_actions_missing_from_the_sar_get_no_scope(monkeypatch) -> None:
    monkeypatch.setattr(dp, "sar_action", lambda action: None)
    policy = _policy(_reg("aws:iam/role:Role", "r", {"name": "x"}))
    st = _statement(policy.document, "iam:CreateRole")
    assert st["Resource"] == "*"
    assert st["Condition"] == {"StringLike": {"iam:PermissionsBoundary": "arn:aws:iam::*:policy/hpi-t-role-boundary"}}
    assert "Condition" not in _statement(policy.document, "iam:GetRole")  # IAM is global: no region condition
    assert "not in the Service Authorization Reference data" in policy.statements[0].why


def test_parts_pack_statements_within_the_limit(runs) -> None:
    policy = policy_for(runs["prod"])
    parts = policy.parts(limit=3000)
    assert len(parts) > 3
    assert all(dp.policy_chars(p) <= 3000 for p in parts)
    assert [s for p in parts for s in p["Statement"]] == policy.document["Statement"]
    with pytest.raises(ValueError, match="alone exceeds 100 characters"):
        policy.parts(limit=100)


def test_cli_prints_the_document_and_refuses_a_bad_account(capsys) -> None:
    assert dp.main(["--stack", "dev", "--account", "123"]) == 2
    assert "expected a 12-digit AWS account ID" in capsys.readouterr().err
    assert dp.main(["--stack", "nope"]) == 2
    assert "no stack 'nope'" in capsys.readouterr().err


def test_a_role_without_the_stacks_boundary_makes_the_policy_incomplete() -> None:
    bounded = _reg(
        "aws:iam/role:Role",
        "ok",
        {"name": "hpi-t-ok", "permissionsBoundary": f"arn:aws:iam::{ACCOUNT_ID}:policy/hpi-t-role-boundary"},
    )
    assert _policy(bounded).complete and _policy(bounded).unbounded_roles == []
    bare = _reg("aws:iam/role:Role", "bare", {"name": "hpi-t-bare"})
    other = _reg(
        "aws:iam/role:Role", "other", {"name": "hpi-t-other", "permissionsBoundary": "arn:aws:iam::1:policy/x"}
    )
    policy = _policy(bounded, bare, other)
    assert not policy.complete
    assert policy.unbounded_roles == ["bare (no permissionsBoundary)", "other (arn:aws:iam::1:policy/x)"]
    assert policy.notes()["unboundedRoles"] == policy.unbounded_roles


def test_cli_prints_the_parts_to_attach_and_the_boundary(capsys) -> None:
    assert dp.main(["--stack", "dev"]) == 0
    printed = json.loads(capsys.readouterr().out)
    names = list(printed)
    n = names.index("iam/boundary-dev.json")
    assert names[:n] == [f"iam/deployer-dev.part{i}.json" for i in range(1, n + 1)]
    assert names[-2:] == ["iam/trust-deployer-dev.json", "iam/trust-preview-dev.json"]
    assert all(name.startswith("iam/preview-dev.part") for name in names[n + 1 : -2])
    assert all(dp.policy_chars(doc) <= dp.MANAGED_POLICY_MAX_CHARS for doc in printed.values())
