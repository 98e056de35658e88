"""The deploy policy, evaluated as IAM would (tests/iam_eval.py: PMapper's engine, not this project's code), on the
concrete ARNs the mocks give each resource (their names from the records' physical_name rules: name, namePrefix,
bucketPrefix or auto-name).

For every AWS resource of dev, staging, prod and attach: every action its create, update and delete call (the
pulumi-aws rows of the resource-type records (deploy); aws-native types: the CloudFormation handlers in cfn-lint's
schemas) is allowed on each ARN of the request, with the request context the resource gives (its tags, its
boundary); and actions on another stack's names, keys and clusters are denied.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from components.config.stackfile import load_stack_file, stack_path
from policies.deploy_actions import DeployActions, load_deploy_actions
from policies.physical_names import physical_name
from tests.conftest import REGIONAL_STACKS, cached_scope
from tests.iam_eval import allowed
from tools.cli import deployer_policy as dp
from tools.plan.harness import StackRun
from tools.plan.mocks import ACCOUNT_ID, Registration
from tools.plan.render import cfn_type, resource_schema
from tools.rehearse.model import expand

TABLE = load_deploy_actions()
STACK_TAG = "hyperpod-inference:stack"
# iam:PassRole is evaluated per role (test below); the rest of each row per resource.
PER_ROLE = {"iam:PassRole"}
# The services whose service-linked role each type's create may make (each service's user guide, "Using
# service-linked roles"): the test's own list, not the table's.
SERVICE_LINKED = {
    "aws:eks/cluster:Cluster": "eks.amazonaws.com",
    "aws:lb/loadBalancer:LoadBalancer": "elasticloadbalancing.amazonaws.com",
    "aws:elasticache/replicationGroup:ReplicationGroup": "elasticache.amazonaws.com",
    "aws-native:sagemaker:Cluster": "hyperpod.sagemaker.amazonaws.com",
    "aws:ec2transitgateway/vpcAttachment:VpcAttachment": "transitgateway.amazonaws.com",
}
# The service each type passes a role to (EKS API reference CreateCluster roleArn and CreateAddon
# serviceAccountRoleArn / EKS Pod Identity; VPC user guide, flow logs to CloudWatch Logs; SageMaker CreateCluster
# ExecutionRole; botocore sagemaker CreateGlobalInferenceGateway ExecutionRoleArn): the test's own list.
PASSES = {
    "aws:eks/cluster:Cluster": {"eks.amazonaws.com"},
    "aws:eks/addon:Addon": {"eks.amazonaws.com", "pods.eks.amazonaws.com"},
    "aws:ec2/flowLog:FlowLog": {"vpc-flow-logs.amazonaws.com"},
    "aws-native:sagemaker:Cluster": {"sagemaker.amazonaws.com"},
}


@pytest.fixture(scope=cached_scope("module"))
def runs(stack_runs: dict[str, StackRun]) -> dict[str, StackRun]:
    return stack_runs


def _region(stack: str) -> str:
    return str(load_stack_file(stack_path(stack)).get("aws:region"))


def _documents(run: StackRun) -> list[dict[str, Any]]:
    """The parts `--out` writes, attached side by side (what docs/first-deploy.md says to attach)."""
    policy = dp.deployer_policy(run.registrations, run.mocks.calls, stack=run.stack, region=_region(run.stack))
    assert policy.complete, (policy.unknown_types, policy.unknown_invokes, policy.unbounded_roles)
    return policy.parts()


def _sar_regex(fmt: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\$\\\{[^}]*\\\}", ".+", re.escape(fmt)) + "$")


def _phases(reg: Registration) -> dict[str, list[str]]:
    row = TABLE.row_for(reg.type, reg.inputs)
    assert row is not None, reg.type
    if reg.type.startswith("aws-native:"):  # the CloudFormation handlers, not the table's copy of them
        schema = resource_schema(cfn_type(reg.type), "us-east-1")
        assert schema is not None
        cc = {
            p: [a for a in getattr(row, p) if a.startswith("cloudformation:")] for p in ("create", "update", "delete")
        }
        return {p: cc[p] + list(schema["handlers"][p]["permissions"]) for p in ("create", "update", "delete")}
    return {p: list(getattr(row, p)) for p in ("create", "update", "delete")}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _candidates(reg: Registration, region: str) -> list[str]:
    """The concrete ARNs a request of this resource can name: its own (the mocks' outputs, or its row's templates
    with its physical name), the ARNs in its inputs, and the S3 bucket and EKS cluster its inputs name."""
    row = TABLE.row_for(reg.type, reg.inputs)
    # a resource with an ARN of its own (a row with ARN patterns); the mocks' `arn` of a sub-resource (a topic
    # policy, an attachment) is made up and names nothing AWS checks
    out = [a for a in _strings(reg.outputs.get("arn")) if a.startswith("arn:")] if row and row.arns else []
    name = physical_name(reg.type, reg.name, reg.inputs) or "sample"
    if row is not None:
        for p in row.arns:
            arn = dp.render_arn(
                p.arn.replace("{name}", name.removeprefix(row.name_strip)),
                inputs=reg.inputs,
                name=name,
                partition="aws",
                region=region,
                names=dp._Names([], ACCOUNT_ID),
            )
            out.append(arn.replace("*", "sample0"))
    out += [s for s in _strings(reg.inputs) if s.startswith("arn:aws:")]
    bucket = reg.inputs.get("bucket") or (name if reg.type == "aws:s3/bucket:Bucket" else None)
    if isinstance(bucket, str):
        out += [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/on-create.sh"]
    key_id = reg.inputs.get("targetKeyId")
    if isinstance(key_id, str) and key_id:
        out.append(f"arn:aws:kms:{region}:{ACCOUNT_ID}:key/{key_id}")
    for key in ("clusterName", "name"):
        cluster = reg.inputs.get(key)
        if isinstance(cluster, str) and reg.type.startswith("aws:eks/"):
            out.append(f"arn:aws:eks:{region}:{ACCOUNT_ID}:cluster/{cluster}")
    return list(dict.fromkeys(out))


def _requests(reg: Registration, action: str, region: str) -> list[str]:
    """The ARNs of the request: for each SAR resource type of the action, the candidates of that type."""
    if action == "iam:CreateServiceLinkedRole":
        service = SERVICE_LINKED[reg.type]
        return [f"arn:aws:iam::{ACCOUNT_ID}:role/aws-service-role/{service}/AWSServiceRoleForX"]
    sar = dp.sar_action(action)
    if sar is None or not sar.resource_types:
        return ["*"]
    service = action.split(":", 1)[0]
    formats = dp.sar_resources().get(service, {})
    arns = []
    for rtype in sar.resource_types:
        fmt = formats.get(rtype)
        if fmt is None:
            continue
        rx = _sar_regex(fmt.replace("${Partition}", "aws"))
        matched = [a for a in _candidates(reg, region) if rx.match(a)]
        real = [a for a in matched if "sample0" not in a]  # a real ARN from the inputs beats a rendered template
        arns += real or matched
    # none of the action's types among the candidates: the call is about a resource this one does not name (an
    # add-on's GetRole of a service-account role it has not): the provider does not make it
    return list(dict.fromkeys(arns))


def _tags(reg: Registration) -> dict[str, str] | None:
    tags = reg.inputs.get("tags")
    if isinstance(tags, list):  # aws-native: [{key, value}]
        return {t["key"]: t["value"] for t in tags}
    return tags if isinstance(tags, dict) else None


# The call that creates a resource whose ARN has no name (terraform-provider-aws kms/key.go; the CloudFormation
# handler of AWS::SageMaker::Cluster): the resource has no tags yet, only the request has.
CREATING = {"aws:kms/key:Key": "kms:CreateKey", "aws-native:sagemaker:Cluster": "sagemaker:CreateCluster"}


def _context(
    reg: Registration, by_arn: dict[str, Registration], arn: str, region: str, phase: str, action: str
) -> dict[str, Any]:
    ctx: dict[str, Any] = {"aws:RequestedRegion": region}
    tags = _tags(reg) or {}
    target = by_arn.get(arn)
    target_tags = _tags(target) if target is not None else None
    if isinstance(target_tags, dict):
        ctx.update({f"aws:ResourceTag/{k}": v for k, v in target_tags.items()})
    elif CREATING.get(reg.type) != action:  # after the creating call the resource exists with its tags
        ctx.update({f"aws:ResourceTag/{k}": v for k, v in tags.items()})
    if phase == "create":
        ctx.update({f"aws:RequestTag/{k}": v for k, v in tags.items()})
        ctx["aws:TagKeys"] = sorted(tags)
    role = target if target is not None and target.type == "aws:iam/role:Role" else None
    if role is None and reg.type == "aws:iam/role:Role":
        role = reg
    if role is not None and role.inputs.get("permissionsBoundary"):
        ctx["iam:PermissionsBoundary"] = role.inputs["permissionsBoundary"]
    if reg.type in SERVICE_LINKED:
        ctx["iam:AWSServiceName"] = SERVICE_LINKED[reg.type]
    return ctx


def _attached(reg: Registration, action: str) -> list[dict[str, Any]]:
    """The iam:PolicyARN of each attachment the call makes (the role's managedPolicyArns, the attachment's
    policyArn); a role with none makes no attach call."""
    if action not in dp.ATTACH_ACTIONS:
        return [{}]
    if reg.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
        return [{"iam:PolicyARN": reg.inputs["policyArn"]}]
    return [{"iam:PolicyARN": arn} for arn in reg.inputs.get("managedPolicyArns") or []]


def _aws(run: StackRun) -> list[Registration]:
    return [
        r
        for r in expand(run.registrations)
        if r.custom and TABLE.row_for(r.type, r.inputs) is not None and not r.type.startswith("pulumi:")
    ]


@pytest.mark.parametrize("stack", REGIONAL_STACKS)
def test_every_create_update_delete_action_is_allowed_on_the_arns_it_will_have(stack: str, runs) -> None:
    run = runs[stack]
    region = _region(stack)
    docs = _documents(run)
    regs = _aws(run)
    by_arn = {
        a: r
        for r in regs
        if r.type.startswith(("aws:", "aws-native:")) and TABLE.row_for(r.type, r.inputs).arns  # type: ignore[union-attr]
        for k in ("arn", "clusterArn")
        for a in _strings(r.outputs.get(k))
        if a.startswith("arn:")
    }
    denied: list[str] = []
    checked = 0
    kinds: set[str] = set()
    for reg in regs:
        for phase, actions in _phases(reg).items():
            for action in actions:
                if action in PER_ROLE:
                    continue
                for arn in _requests(reg, action, region):
                    for extra in _attached(reg, action):
                        checked += 1
                        kinds.add(reg.type)
                        ctx = {**_context(reg, by_arn, arn, region, phase, action), **extra}
                        if not allowed(docs, action, arn, ctx):
                            denied.append(f"{reg.type} {reg.name} {phase}: {action} on {arn} {extra}")
    assert denied == []
    assert checked > 300
    # the resources issue 31 names: buckets, roles, policies, clusters
    assert {"aws:s3/bucket:Bucket", "aws:iam/role:Role"} <= kinds
    if stack != "attach":
        assert {
            "aws:kms/key:Key",
            "aws:eks/cluster:Cluster",
            "aws-native:sagemaker:Cluster",
            "aws:iam/policy:Policy",
        } <= kinds


def _trusted_service(role: Registration) -> str | None:
    import json

    doc = role.inputs.get("assumeRolePolicy")
    doc = json.loads(doc) if isinstance(doc, str) else doc
    for st in (doc or {}).get("Statement", []):
        service = (st.get("Principal") or {}).get("Service")
        if isinstance(service, str):
            return service
    return None


@pytest.mark.parametrize("stack", REGIONAL_STACKS)
def test_each_role_can_be_passed_only_to_the_service_that_trusts_it(stack: str, runs) -> None:
    docs = _documents(runs[stack])
    regs = _aws(runs[stack])
    roles = [r for r in regs if r.type == "aws:iam/role:Role"]
    passed_to = {s for r in regs for s in PASSES.get(r.type, ())}
    services = {r.name: _trusted_service(r) for r in roles}
    assert any(s in passed_to for s in services.values())
    for role in roles:
        arn = str(role.outputs["arn"])
        assert f"-{stack}" in arn or f"hpi-{stack}" in arn, f"{arn} carries no stack name"
        if services[role.name] in passed_to:
            assert allowed(docs, "iam:PassRole", arn, {"iam:PassedToService": services[role.name]}), arn
        assert not allowed(docs, "iam:PassRole", arn, {"iam:PassedToService": "ec2.amazonaws.com"}), arn
        assert not allowed(docs, "iam:PassRole", arn, {}), arn


def _other(stack: str) -> str:
    return "dev" if stack != "dev" else "prod"


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_another_stacks_buckets_roles_policies_clusters_and_keys_are_denied(stack: str, runs) -> None:
    docs = _documents(runs[stack])
    region = _region(stack)
    other = runs[_other(stack)]
    for reg in _aws(other):
        arn = next((a for a in _strings(reg.outputs.get("arn")) if a.startswith("arn:")), None)
        if reg.type == "aws:s3/bucket:Bucket":
            for action in ("s3:CreateBucket", "s3:DeleteBucket", "s3:PutBucketPolicy"):
                assert not allowed(docs, action, f"arn:aws:s3:::{physical_name(reg.type, reg.name, reg.inputs)}")
        elif reg.type == "aws:iam/role:Role" and arn:
            ctx = {"iam:PermissionsBoundary": reg.inputs.get("permissionsBoundary")}
            for action in ("iam:CreateRole", "iam:PutRolePolicy", "iam:DeleteRole", "iam:UpdateAssumeRolePolicy"):
                assert not allowed(docs, action, arn, ctx), (action, arn)
        elif reg.type == "aws:iam/policy:Policy" and arn:
            assert not allowed(docs, "iam:CreatePolicyVersion", arn), arn
        elif reg.type == "aws:eks/cluster:Cluster":
            name = reg.inputs["name"]
            assert not allowed(docs, "eks:DeleteCluster", f"arn:aws:eks:{region}:{ACCOUNT_ID}:cluster/{name}")
    key = f"arn:aws:kms:{region}:{ACCOUNT_ID}:key/0b8c2c1e-1111-2222-3333-444455556666"
    other_tag = {f"aws:ResourceTag/{STACK_TAG}": _other(stack), "aws:RequestedRegion": region}
    own_tag = {f"aws:ResourceTag/{STACK_TAG}": stack, "aws:RequestedRegion": region}
    for action in ("kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:DisableKey", "kms:CreateGrant"):
        assert allowed(docs, action, key, own_tag), action
        assert not allowed(docs, action, key, other_tag), action
        assert not allowed(docs, action, key, {"aws:RequestedRegion": region}), action  # an untagged key
    # re-tagging another stack's key or cluster to take it over is denied
    retag = {**other_tag, f"aws:RequestTag/{STACK_TAG}": stack}
    assert not allowed(docs, "kms:TagResource", key, retag)
    cluster = f"arn:aws:sagemaker:{region}:{ACCOUNT_ID}:cluster/abcdef123456"
    assert allowed(docs, "sagemaker:DeleteCluster", cluster, own_tag)
    assert not allowed(docs, "sagemaker:DeleteCluster", cluster, other_tag)
    assert not allowed(docs, "sagemaker:AddTags", cluster, retag)
    # creating a key or a cluster needs the stack's tag in the request
    assert allowed(docs, "kms:CreateKey", "*", {f"aws:RequestTag/{STACK_TAG}": stack, "aws:RequestedRegion": region})
    assert not allowed(docs, "kms:CreateKey", "*", {"aws:RequestedRegion": region})


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_roles_only_with_the_boundary_and_service_linked_roles_only_for_the_stacks_services(stack: str, runs) -> None:
    docs = _documents(runs[stack])
    role = f"arn:aws:iam::{ACCOUNT_ID}:role/hpi-{stack}-hyperpod-execution"
    boundary = f"arn:aws:iam::{ACCOUNT_ID}:policy/hpi-{stack}-role-boundary"
    attach = {"iam:PolicyARN": "arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy"}
    for action in ("iam:CreateRole", "iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:PutRolePermissionsBoundary"):
        extra = attach if action == "iam:AttachRolePolicy" else {}
        assert allowed(docs, action, role, {"iam:PermissionsBoundary": boundary, **extra}), action
        assert not allowed(docs, action, role, {}), action
        other = f"arn:aws:iam::{ACCOUNT_ID}:policy/hpi-{_other(stack)}-role-boundary"
        assert not allowed(docs, action, role, {"iam:PermissionsBoundary": other, **extra}), action
    assert not allowed(docs, "iam:CreatePolicyVersion", boundary)
    assert not allowed(docs, "iam:DeleteRolePermissionsBoundary", role)
    slr = f"arn:aws:iam::{ACCOUNT_ID}:role/aws-service-role/eks.amazonaws.com/AWSServiceRoleForAmazonEKS"
    assert allowed(docs, "iam:CreateServiceLinkedRole", slr, {"iam:AWSServiceName": "eks.amazonaws.com"})
    for service in ("autoscaling.amazonaws.com", "ec2.amazonaws.com"):
        assert not allowed(docs, "iam:CreateServiceLinkedRole", slr, {"iam:AWSServiceName": service})


def test_bucket_prefix_not_name_prefix_names_the_bucket() -> None:
    """issue 31's bug, on a made-up stack: the bucket's ARN is its bucketPrefix + the provider's unique suffix."""
    bucket = Registration(
        type="aws:s3/bucket:Bucket",
        name="front-door-logs",
        urn="urn:pulumi:t::p::aws:s3/bucket:Bucket::front-door-logs",
        custom=True,
        parent=None,
        inputs={"bucketPrefix": "hpi-t-alb-logs-"},
    )
    concrete = physical_name(bucket.type, bucket.name, bucket.inputs)
    assert concrete == "hpi-t-alb-logs-2026120100000000008782b87f"  # prefix + 26 characters (PrefixedUniqueId)
    docs = dp.deployer_policy([bucket], (), stack="t", region="eu-west-1").parts()
    assert allowed(docs, "s3:CreateBucket", f"arn:aws:s3:::{concrete}")
    assert not allowed(docs, "s3:CreateBucket", "arn:aws:s3:::front-door-logs-0a1b2c3")  # the auto-name it is not
    assert not allowed(docs, "s3:CreateBucket", "arn:aws:s3:::hpi-u-alb-logs-2026120100000000008782b87f")


def test_prod_bucket_names_are_the_prefixes_the_program_gives(runs) -> None:
    names = sorted(str(r.outputs["bucket"]) for r in _aws(runs["prod"]) if r.type == "aws:s3/bucket:Bucket")
    assert [re.sub(r"[0-9a-f]{26}$", "<26>", n) for n in names] == [
        "hpi-prod-alb-logs-<26>",
        "hpi-prod-s3-access-logs-<26>",
        "hyperpod-tls-prod-123456789012",
        "sagemaker-hpi-prod-lifecycle-123456789012",
    ]


def test_the_table_keeps_the_conditions_it_needs() -> None:
    assert isinstance(TABLE, DeployActions)
    assert TABLE.stack_tag == STACK_TAG
    assert set(TABLE.boundary_actions) >= {"iam:CreateRole", "iam:PutRolePolicy"}
