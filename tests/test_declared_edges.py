"""Every ordering edge the components declare is checked: dropping it is a finding, or it is listed with why not.

The ordering rules of ``policies/readiness.yaml`` and the readiness waits turn a missing edge into a rehearsal
finding, but only for the edges they name. An edge a component declares for a reason no rule names (the bucket
policy after the bucket's public-access block) could be dropped with every test green. The sweep drops, one at a
time, one edge of each kind (user type, dependency type) that the reference stacks declare with ``depends_on``
between two resources, rehearses the create, and demands a finding on the user, unless the kind is listed in
``UNCHECKED_BY_DESIGN`` with the reason it carries no ordering fact of its own.
"""

from __future__ import annotations

import copy

import pytest

from tests.conftest import cached_scope, stack_mapping
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration
from tools.rehearse import rehearse

IEC = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
IGC = "kubernetes:inference.sagemaker.aws.amazon.com/v1alpha1:InferenceGatewayConfig"
TGB = "kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding"

# (user type, dependency type) -> why dropping the edge is no finding
COARSE = (
    "an edge of a depends_on on a whole component (the program waits for every child of an earlier layer): the "
    "ordering fact it carries is checked on the child that matters (readiness waits, ordering rules)"
)
UNCHECKED_BY_DESIGN: dict[tuple[str, str], str] = {
    ("aws:ec2/natGateway:NatGateway", "aws:ec2/internetGateway:InternetGateway"): (
        "a public NAT gateway in a VPC without an attached internet gateway fails its create (EC2 CreateNatGateway, "
        "terraform-provider-aws aws_nat_gateway docs: 'depends_on the Internet Gateway'); no join in the data "
        "links a NAT's subnet to its VPC's gateway: pinned by tests/test_foundation.py"
    ),
    ("aws:ec2/route:Route", "aws:ec2transitgateway/vpcAttachment:VpcAttachment"): (
        "a route to a transit gateway needs the VPC's attachment (EC2 CreateRoute: "
        "InvalidTransitGatewayID.NotFound); the deployer routes are created only with it: pinned by "
        "tests/test_cluster.py's deployer-route tests"
    ),
    (TGB, IEC): (
        "the binding's Service is created by the operator for the endpoint, not by this run: the load balancer "
        "controller requeues a binding whose Service does not exist yet (kubernetes-sigs/aws-load-balancer-"
        "controller controllers/elbv2/targetgroupbinding_controller.go), so the edge orders up's waits, it does not "
        "prevent a failed create"
    ),
}
WAIT_AFTER_FRONT_DOOR = (
    "the front door's target health wait (components/target_health_wait.py) follows the HTTPS listener, its route "
    "rules and the endpoint's TargetGroupBinding so that its clock starts when the ALB can use the targets (ELBv2 "
    "DescribeTargetHealth reports the targets of a target group no listener uses as `unused`); without the edge "
    "no create fails, the wait polls until healthy within its timeout: pinned by tests/test_serving_waits.py"
)
for _kind in ("aws:lb/listener:Listener", "aws:lb/listenerRule:ListenerRule", TGB):
    UNCHECKED_BY_DESIGN[("pulumi-python:dynamic:Resource", _kind)] = WAIT_AFTER_FRONT_DOOR
COARSE_KINDS = {
    (IEC, "aws-native:sagemaker:ComputeQuota"),
    (IEC, "aws:eks/addon:Addon"),
    (IGC, "aws:eks/addon:Addon"),
    (IGC, "pulumi-python:dynamic:Resource"),
    (TGB, "aws:eks/addon:Addon"),
    (TGB, "aws:iam/policy:Policy"),
    (TGB, "aws:iam/role:Role"),
    (TGB, "aws:iam/rolePolicyAttachment:RolePolicyAttachment"),
    (TGB, "pulumi-python:dynamic:Resource"),
    ("kubernetes:rbac.authorization.k8s.io/v1:Role", "aws-native:sagemaker:ComputeQuota"),
    ("kubernetes:rbac.authorization.k8s.io/v1:Role", "aws:eks/addon:Addon"),
    ("kubernetes:rbac.authorization.k8s.io/v1:Role", "pulumi-python:dynamic:Resource"),
    ("pulumi-python:dynamic:Resource", "aws:iam/policy:Policy"),
    ("pulumi-python:dynamic:Resource", "aws:iam/role:Role"),
    ("pulumi-python:dynamic:Resource", "aws:iam/rolePolicyAttachment:RolePolicyAttachment"),
    ("aws:eks/addon:Addon", "aws-native:sagemaker:Cluster"),
    ("aws:eks/addon:Addon", "aws:ec2/securityGroup:SecurityGroup"),
    ("aws:eks/addon:Addon", "aws:eks/accessEntry:AccessEntry"),
    ("aws:eks/addon:Addon", "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"),
    ("aws:eks/addon:Addon", "aws:iam/role:Role"),
    ("aws:eks/addon:Addon", "aws:kms/alias:Alias"),
    ("aws:eks/addon:Addon", "aws:kms/key:Key"),
    ("aws:eks/addon:Addon", "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"),
    ("aws:eks/addon:Addon", "aws:s3/bucketOwnershipControls:BucketOwnershipControls"),
    ("aws:eks/addon:Addon", "aws:s3/bucketPolicy:BucketPolicy"),
    ("aws:eks/addon:Addon", "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"),
    ("aws:eks/addon:Addon", "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"),
    ("aws:eks/addon:Addon", "aws:s3/bucketVersioning:BucketVersioning"),
    ("aws:eks/addon:Addon", "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"),
    ("aws:eks/addon:Addon", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"),
    ("aws:eks/addon:Addon", "pulumi:providers:kubernetes"),
    ("aws:lb/loadBalancer:LoadBalancer", "aws:s3/bucketOwnershipControls:BucketOwnershipControls"),
    ("aws:lb/loadBalancer:LoadBalancer", "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"),
    (
        "aws:lb/loadBalancer:LoadBalancer",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    ),
    ("aws:s3/bucketLogging:BucketLogging", "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"),
    ("aws:s3/bucketLogging:BucketLogging", "aws:s3/bucketOwnershipControls:BucketOwnershipControls"),
    ("aws:s3/bucketLogging:BucketLogging", "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"),
    (
        "aws:s3/bucketLogging:BucketLogging",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    ),
}
UNCHECKED_BY_DESIGN.update(dict.fromkeys(COARSE_KINDS, COARSE))


def _explicit_edges(regs: list[Registration]) -> list[tuple[int, str]]:
    """(index of the user, URN of the dependency) for each depends_on edge between two custom resources."""
    by_urn = {r.urn: r for r in regs}
    out = []
    for index, reg in enumerate(regs):
        if not reg.custom:
            continue
        through_inputs = {u for urns in reg.property_dependencies.values() for u in urns}
        for dep in reg.dependencies:
            if dep not in through_inputs and dep in by_urn and by_urn[dep].custom:
                out.append((index, dep))
    return out


@pytest.fixture(scope=cached_scope("module"))
def runs(every_stack_run: dict[str, StackRun]) -> dict[str, StackRun]:
    return every_stack_run


def _dropped_is_found(regs: list[Registration], stack: str, index: int, dep: str) -> bool:
    changed = list(regs)
    reg = copy.deepcopy(regs[index])
    reg.dependencies = [d for d in reg.dependencies if d != dep]
    reg.property_dependencies = {k: [u for u in v if u != dep] for k, v in reg.property_dependencies.items()}
    changed[index] = reg
    result = rehearse(changed, mapping=stack_mapping(stack))
    return any(f.resource == reg.name for f in result.findings)


@pytest.mark.slow
def test_every_declared_edge_kind_is_checked_or_listed(runs: dict[str, StackRun]) -> None:
    checked: set[tuple[str, str]] = set()
    unchecked: dict[tuple[str, str], str] = {}
    for stack in sorted(runs):
        regs = runs[stack].registrations
        by_urn = {r.urn: r for r in regs}
        for index, dep in _explicit_edges(regs):
            kind = (regs[index].type, by_urn[dep].type)
            if kind in checked:
                continue
            if _dropped_is_found(regs, stack, index, dep):
                checked.add(kind)
                unchecked.pop(kind, None)
            else:
                unchecked.setdefault(kind, f"{stack}: {regs[index].name} -> {by_urn[dep].name}")
    assert checked, "no declared edge is checked at all: the sweep tests nothing"
    unexplained = {k: v for k, v in unchecked.items() if k not in UNCHECKED_BY_DESIGN}
    assert not unexplained, "declared edges no rule or wait checks (name them in the readiness data):\n" + "\n".join(
        f"{a} -> {b} ({where})" for (a, b), where in sorted(unexplained.items())
    )
    stale = sorted(set(UNCHECKED_BY_DESIGN) - set(unchecked))
    assert not stale, f"listed as unchecked but now checked or gone (remove them): {stale}"


def test_bucket_policy_without_its_access_block_edge_is_a_race(runs: dict[str, StackRun]) -> None:
    """The instance: S3 refuses a bucket policy while the bucket's public-access block is being applied."""
    regs = copy.deepcopy(runs["prod"].registrations)
    policy = next(r for r in regs if r.name == "front-door-logs-policy")
    block = next(r for r in regs if r.name == "front-door-logs-public-access")
    assert block.urn in policy.dependencies
    policy.dependencies = [d for d in policy.dependencies if d != block.urn]
    result = rehearse(regs, mapping=stack_mapping("prod"))
    found = [(f.kind, f.resource, f.rule, f.other) for f in result.findings]
    assert found == [
        ("race", "front-door-logs-policy", "bucket-access-block-before-its-policy", "front-door-logs-public-access")
    ]
