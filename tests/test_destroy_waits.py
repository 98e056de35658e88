"""Destroy without hands (issue 33 item 6): the LB controller drain between the endpoints and the add-on that runs
the controller, and GuardDuty's endpoint removed by the destroy itself after the EKS cluster and before the network.

The providers against botocore's Stubber (the real elbv2/ec2 service models validate every request and response),
the program's wiring (what waits on what), and the destroy rehearsal with each piece removed or misplaced.
"""

from __future__ import annotations

import copy
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from components.destroy_waits import (
    CleanupError,
    GuardDutyEndpointCleanupProvider,
    LoadBalancerControllerDrainProvider,
)
from tests.conftest import stack_mapping
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration
from tools.rehearse import rehearse

DYNAMIC = "pulumi-python:dynamic:Resource"
ADDON = "aws:eks/addon:Addon"
CLUSTER = "hpi-prod-eks"
LB_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/k8s-hyperpod-albllama/0123456789abcdef"
SG = "sg-0123456789abcdef0"


def _kind(run: StackRun, kind: str) -> list[Registration]:
    return [r for r in run.registrations if r.type == DYNAMIC and r.inputs.get("resourceKind") == kind]


def _closure(run: StackRun, urn: str) -> set[str]:
    by_urn = {r.urn: r for r in run.registrations}
    seen: set[str] = set()
    todo = [urn]
    while todo:
        reg = by_urn.get(todo.pop())
        if reg is None:
            continue
        nxt = set(reg.dependencies) | {u for us in reg.property_dependencies.values() for u in us}
        if reg.parent:
            nxt.add(reg.parent)
        for dep in nxt - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


# --- the wiring -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "attach"])
def test_the_drain_sits_between_the_endpoints_and_the_controllers_add_on(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    (drain,) = _kind(run, "hyperpod:LoadBalancerControllerDrain")
    assert drain.inputs["timeoutSeconds"] == 1200 and drain.inputs["pollSeconds"] == 15
    addon = next(r for r in run.registrations if r.type == ADDON and r.inputs["addonName"].endswith("-inference"))
    assert addon.urn in _closure(run, drain.urn), "the drain must be deleted before the add-on"
    crs = [r for r in run.registrations if r.type.startswith("kubernetes:inference.sagemaker.aws.amazon.com/")]
    assert crs, "the stack registers no endpoint custom resource"
    for cr in crs:
        assert drain.urn in _closure(run, cr.urn), f"{cr.name} is not deleted before the drain"


def test_the_guardduty_cleanup_comes_after_the_eks_cluster_and_before_the_network(stack_runs) -> None:
    run = stack_runs["prod"]
    (cleanup,) = _kind(run, "hyperpod:GuardDutyEndpointCleanup")
    assert cleanup.inputs["timeoutSeconds"] == 600
    vpc = next(r for r in run.registrations if r.type == "aws:ec2/vpc:Vpc")
    subnets = [r for r in run.registrations if r.type == "aws:ec2/subnet:Subnet" and "private" in r.name]
    assert cleanup.inputs["vpcId"] == run.outputs["vpcId"]
    assert len(subnets) == 3 and len(cleanup.inputs["subnetIds"]) == 3
    assert {vpc.urn, *(s.urn for s in subnets)} <= _closure(run, cleanup.urn)
    eks = next(r for r in run.registrations if r.type == "eks:index:Cluster")
    assert cleanup.urn in _closure(run, eks.urn), "the EKS cluster must be deleted before the cleanup runs"
    hp = next(r for r in run.registrations if r.type == "aws-native:sagemaker:Cluster")
    assert cleanup.urn in _closure(run, hp.urn)
    # an adopted network is its owner's: nothing to clean
    assert _kind(stack_runs["attach"], "hyperpod:GuardDutyEndpointCleanup") == []


# --- the rehearsal: the defect reintroduced ------------------------------------------------------------------


def _without(regs: list[Registration], kind: str) -> list[Registration]:
    gone = {r.urn for r in regs if r.inputs.get("resourceKind") == kind}
    assert len(gone) == 1, kind
    kept = [r for r in regs if r.urn not in gone]
    for r in kept:
        r.dependencies = [d for d in r.dependencies if d not in gone]
    return kept


def test_without_the_drain_the_destroy_rehearsal_reports_the_leak(stack_runs) -> None:
    regs = _without(copy.deepcopy(stack_runs["prod"].registrations), "hyperpod:LoadBalancerControllerDrain")
    result = rehearse(regs, mapping=stack_mapping("prod"), destroy=True)
    assert not result.converges
    leaks = [f for f in result.findings if f.kind == "leak"]
    # the endpoints' custom resources and the InferenceGatewayConfig, whose deletion garbage-collects the gateway's
    # internal load balancers (issue 47 item 8)
    crs = sorted(r.name for r in regs if r.type.startswith("kubernetes:inference.sagemaker.aws.amazon.com/"))
    assert "inference-gateway-config" in crs
    assert sorted(name for leak in leaks for name in (leak.resource, *leak.also)) == crs
    assert leaks[0].waits_for == (
        "the LB controller to finalize the operator's Ingress alb-<name>[-<namespace>] (its ALB, target groups and "
        "k8s-* security groups), finalized by the LB controller after the custom resource is gone; for an "
        "InferenceGatewayConfig, the gateway data plane's internal load balancers its deletion garbage-collects"
    )
    assert leaks[0].why == (
        "nothing waits for the controller's load balancers and groups to go between it and inference-operator-addon "
        "(which runs the controller): the ALB and its k8s-* security groups leak and the VPC delete fails"
    )


def test_a_drain_not_ordered_after_the_add_on_still_leaks(stack_runs) -> None:
    regs = copy.deepcopy(stack_runs["prod"].registrations)
    drain = next(r for r in regs if r.inputs.get("resourceKind") == "hyperpod:LoadBalancerControllerDrain")
    drain.dependencies = []
    drain.parent = ""
    result = rehearse(regs, mapping=stack_mapping("prod"), destroy=True)
    # one finding for the endpoints' custom resources, one for the gateway's InferenceGatewayConfig (a component each)
    leaks = [f for f in result.findings if f.kind == "leak"]
    assert [f.resource for f in leaks] == ["endpoints-inference-llama-70b-dpd", "inference-gateway-config"]


def test_with_the_drain_every_stack_destroys_without_a_leak(stack_runs) -> None:
    for stack in ("dev", "staging", "prod", "attach"):
        result = rehearse(stack_runs[stack], mapping=stack_mapping(stack), destroy=True)
        assert not [f.render() for f in result.findings if f.kind == "leak"], stack


def test_with_the_cleanup_the_destroy_rehearsal_says_the_destroy_removes_guarddutys_endpoint(stack_runs) -> None:
    result = rehearse(stack_runs["prod"], mapping=stack_mapping("prod"), destroy=True)
    notes = [n for n in result.notes if n.startswith("GuardDuty")]
    assert len(notes) == 1
    assert notes[0].startswith(
        "GuardDuty (cannot be known offline whether it is on): guardduty-endpoint-cleanup removes GuardDuty's VPC "
        "endpoint (com.amazonaws.<region>.guardduty-data) and security group from network-vpc during the destroy, "
        "after eks-cluster-eksCluster and before the subnets and the VPC"
    )


# --- the providers ------------------------------------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def _clients() -> dict[str, Any]:
    kw = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    return {"elbv2": boto3.client("elbv2", **kw), "ec2": boto3.client("ec2", **kw)}


DRAIN_PROPS = {"region": "us-east-1", "clusterName": CLUSTER, "timeoutSeconds": 30, "pollSeconds": 15}


def _lbs(elb: Stubber, *, tracked: bool) -> None:
    elb.add_response("describe_load_balancers", {"LoadBalancers": [{"LoadBalancerArn": LB_ARN}]}, {})
    tags = [{"Key": "elbv2.k8s.aws/cluster", "Value": CLUSTER if tracked else "other"}]
    elb.add_response(
        "describe_tags", {"TagDescriptions": [{"ResourceArn": LB_ARN, "Tags": tags}]}, {"ResourceArns": [LB_ARN]}
    )


def _sgs(ec2: Stubber, groups: list[str]) -> None:
    ec2.add_response(
        "describe_security_groups",
        {"SecurityGroups": [{"GroupId": g} for g in groups]},
        {"Filters": [{"Name": "tag:elbv2.k8s.aws/cluster", "Values": [CLUSTER]}]},
    )


def test_the_drain_waits_until_the_controller_has_removed_its_load_balancers_and_groups() -> None:
    clients, fake, logs = _clients(), FakeTime(), []
    provider = LoadBalancerControllerDrainProvider(
        client_factory=lambda service, _r: clients[service], sleep=fake.sleep, clock=fake.clock, log=logs.append
    )
    with Stubber(clients["elbv2"]) as elb, Stubber(clients["ec2"]) as ec2:
        _lbs(elb, tracked=True)
        _sgs(ec2, [SG])
        _lbs(elb, tracked=False)
        _sgs(ec2, [])
        provider.delete(CLUSTER, dict(DRAIN_PROPS))
        elb.assert_no_pending_responses()
        ec2.assert_no_pending_responses()
    assert fake.sleeps == [15.0]
    assert (
        f"{CLUSTER}: waiting for the load balancer controller to finalize: loadBalancers: {LB_ARN}; "
        f"securityGroups: {SG}" in logs
    )


def test_the_drain_times_out_naming_what_is_left_and_keeps_the_add_on() -> None:
    clients, fake = _clients(), FakeTime()
    provider = LoadBalancerControllerDrainProvider(
        client_factory=lambda service, _r: clients[service], sleep=fake.sleep, clock=fake.clock, log=lambda _m: None
    )
    with Stubber(clients["elbv2"]) as elb, Stubber(clients["ec2"]) as ec2:
        for _ in range(3):  # at 0, 15 and 30 s
            _lbs(elb, tracked=True)
            _sgs(ec2, [])
        with pytest.raises(CleanupError) as err:
            provider.delete(CLUSTER, dict(DRAIN_PROPS))
    assert str(err.value) == (
        f"EKS cluster {CLUSTER}: after 30s the AWS Load Balancer Controller still tracks (loadBalancers: {LB_ARN}; "
        f"tag elbv2.k8s.aws/cluster={CLUSTER}). The add-on that runs the controller is kept: check `kubectl get "
        "ingress,targetgroupbindings -A` for resources stuck on their finalizers, then rerun `pulumi destroy`, which "
        "waits again"
    )


def test_create_probes_one_read_call_and_diff_never_replaces() -> None:
    clients = _clients()
    drain = LoadBalancerControllerDrainProvider(client_factory=lambda service, _r: clients[service])
    cleanup = GuardDutyEndpointCleanupProvider(client_factory=lambda service, _r: clients[service])
    vpc = "vpc-0123456789abcdef0"
    cleanup_props = {"region": "us-east-1", "vpcId": vpc, "subnetIds": ["subnet-1"]}
    with Stubber(clients["elbv2"]) as elb, Stubber(clients["ec2"]) as ec2:
        elb.add_response("describe_load_balancers", {"LoadBalancers": []}, {"PageSize": 1})
        _sgs(ec2, [])
        ec2.add_response("describe_vpc_endpoints", {"VpcEndpoints": []}, None)
        for provider, props in ((drain, DRAIN_PROPS), (cleanup, cleanup_props)):
            created = provider.create(dict(props))
            assert created.outs == props
            assert provider.diff(created.id, dict(props), dict(props)).changes is False
            changed = provider.diff(created.id, dict(props), {**props, "timeoutSeconds": 99})
            assert (changed.changes, changed.replaces) == (True, [])
        elb.assert_no_pending_responses()
        ec2.assert_no_pending_responses()


def test_the_cleanup_deletes_guarddutys_tagged_endpoint_and_group() -> None:
    clients, fake, logs = _clients(), FakeTime(), []
    provider = GuardDutyEndpointCleanupProvider(
        client_factory=lambda service, _r: clients[service], sleep=fake.sleep, clock=fake.clock, log=logs.append
    )
    vpc, vpce = "vpc-0123456789abcdef0", "vpce-0123456789abcdef0"
    tag = [{"Key": "GuardDutyManaged", "Value": "true"}]
    with Stubber(clients["ec2"]) as ec2:
        ec2.add_response(
            "describe_vpc_endpoints",
            {"VpcEndpoints": [{"VpcEndpointId": vpce, "VpcId": vpc, "Groups": [{"GroupId": SG}], "Tags": tag}]},
            {
                "Filters": [
                    {"Name": "vpc-id", "Values": [vpc]},
                    {
                        "Name": "service-name",
                        "Values": [
                            "com.amazonaws.us-east-1.guardduty-data",
                            "com.amazonaws.us-east-1.guardduty-data-fips",
                        ],
                    },
                    {"Name": "tag-key", "Values": ["GuardDutyManaged"]},
                ]
            },
        )
        ec2.add_response(
            "describe_security_groups", {"SecurityGroups": [{"GroupId": SG, "Tags": tag}]}, {"GroupIds": [SG]}
        )
        ec2.add_response("delete_vpc_endpoints", {"Unsuccessful": []}, {"VpcEndpointIds": [vpce]})
        ec2.add_response(
            "describe_network_interfaces",
            {"NetworkInterfaces": []},
            {"Filters": [{"Name": "group-id", "Values": [SG]}]},
        )
        ec2.add_response("delete_security_group", {}, {"GroupId": SG})
        provider.delete(vpc, {"region": "us-east-1", "vpcId": vpc, "timeoutSeconds": 600})
        ec2.assert_no_pending_responses()
    assert f"{vpc}: deleting GuardDuty VPC endpoints {vpce}" in logs


@pytest.mark.parametrize("provider_cls", [LoadBalancerControllerDrainProvider, GuardDutyEndpointCleanupProvider])
@pytest.mark.parametrize("key", ["awsProfile", "awsAssumeRoles", "awsStsRegion"])
def test_an_empty_credential_value_is_no_change_but_a_real_one_updates_in_place(provider_cls: type, key: str) -> None:
    olds = {"region": "us-east-1", "clusterName": CLUSTER, "vpcId": "vpc-1"}  # state written before the chain
    real = {
        "awsProfile": "deploy",
        "awsAssumeRoles": [{"roleArn": "arn:aws:iam::111122223333:role/deployer"}],
        "awsStsRegion": "us-east-1",
    }[key]
    changed = provider_cls().diff("id", olds, {**olds, key: real})
    assert (changed.changes, changed.replaces) == (True, [])
    for empty in (None, "", []):
        assert provider_cls().diff("id", olds, {**olds, key: empty}).changes is False, empty
        assert provider_cls().diff("id", {**olds, key: empty}, olds).changes is False, empty
