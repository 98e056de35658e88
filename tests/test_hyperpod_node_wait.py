"""The wait for HyperPod nodes (issue 23 item 2): the dynamic provider against botocore's Stubber (the real sagemaker
service model validates every request and response), its typed shapes against that model, the program's wiring
(what waits on it, the timeouts from policies/readiness.yaml), and the rehearsal with the wait removed."""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from components.hyperpod_node_wait import (
    ClusterNodeSummaryShape,
    HyperPodNodeWaitProvider,
    InstanceStatusShape,
    ListClusterNodesRequest,
    ListClusterNodesResponse,
    NodeWaitError,
)
from tests.conftest import registered, stack_mapping
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration
from tools.rehearse import rehearse

CLUSTER = "arn:aws:sagemaker:us-east-1:123456789012:cluster/k3x9p2m7q1ab"
DYNAMIC = "pulumi-python:dynamic:Resource"
ADDON = "aws:eks/addon:Addon"
PROPS: dict[str, Any] = {
    "resourceKind": "hyperpod:HyperPodNodeWait",
    "region": "us-east-1",
    "clusterArn": CLUSTER,
    "groups": {"system": 2, "p5": 2, "empty": 0},
    "timeoutSeconds": 120,
    "pollSeconds": 30,
    "awsProfile": None,
}
LIST_PARAMS = {"ClusterName": CLUSTER, "MaxResults": 100}


def sagemaker_model() -> Any:
    return boto3.client("sagemaker", region_name="us-east-1").meta.service_model


# --- typed shapes vs botocore's service model -------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "shape"),
    [
        (ListClusterNodesRequest, "ListClusterNodesRequest"),
        (ListClusterNodesResponse, "ListClusterNodesResponse"),
        (ClusterNodeSummaryShape, "ClusterNodeSummary"),
        (InstanceStatusShape, "ClusterInstanceStatusDetails"),
    ],
)
def test_typed_shapes_are_members_of_the_service_model(typed: Any, shape: str) -> None:
    model = sagemaker_model().shape_for(shape)
    keys = set(typing.get_type_hints(typed))
    assert keys <= set(model.members), f"{typed.__name__} uses members {shape} lacks: {keys - set(model.members)}"
    assert set(typed.__required_keys__) <= set(model.required_members)


def test_the_model_has_what_the_wait_relies_on() -> None:
    model = sagemaker_model()
    op = model.operation_model("ListClusterNodes")
    assert op.input_shape.required_members == ["ClusterName"]
    assert op.input_shape.members["MaxResults"].metadata == {"min": 1, "max": 100}
    status = model.shape_for("ClusterInstanceStatusDetails")
    assert status.required_members == ["Status"]
    assert "Running" in status.members["Status"].enum
    assert {"Pending", "DeepHealthCheckInProgress", "Failure"} <= set(status.members["Status"].enum)


# --- the provider, with botocore's Stubber ------------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


@dataclasses.dataclass
class Rig:
    provider: HyperPodNodeWaitProvider
    stub: Stubber
    time: FakeTime
    logs: list[str]


@pytest.fixture
def rig() -> Iterator[Rig]:
    client = boto3.client(
        "sagemaker", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    stub = Stubber(client)
    fake, logs = FakeTime(), []
    provider = HyperPodNodeWaitProvider(
        client_factory=lambda _s, region: client, sleep=fake.sleep, clock=fake.clock, log=logs.append
    )
    with stub:
        yield Rig(provider, stub, fake, logs)
        stub.assert_no_pending_responses()


def node(group: str, status: str, i: int) -> dict[str, Any]:
    return {
        "InstanceGroupName": group,
        "InstanceId": f"i-{group}{i:04d}",
        "InstanceType": "ml.p5.48xlarge" if group == "p5" else "ml.m5.2xlarge",
        "LaunchTime": datetime(2026, 12, 1, tzinfo=UTC),
        "InstanceStatus": {"Status": status},
    }


def page(*nodes: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"ClusterNodeSummaries": list(nodes)}
    if token:
        out["NextToken"] = token
    return out


def test_create_waits_until_every_group_has_its_target_running(rig: Rig) -> None:
    rig.stub.add_response(
        "list_cluster_nodes",
        page(node("system", "Running", 1), node("system", "Pending", 2), node("p5", "DeepHealthCheckInProgress", 1)),
        LIST_PARAMS,
    )
    rig.stub.add_response(
        "list_cluster_nodes",
        page(
            node("system", "Running", 1),
            node("system", "Running", 2),
            node("p5", "Running", 1),
            node("p5", "Running", 2),
        ),
        LIST_PARAMS,
    )
    result = rig.provider.create(dict(PROPS))
    assert result.id == CLUSTER
    assert result.outs is not None and result.outs["runningNodes"] == {"empty": 0, "p5": 2, "system": 2}
    assert rig.time.sleeps == [30.0]
    assert (
        f"{CLUSTER}: waiting for nodes: instance group p5: 0 of 2 node(s) Running (DeepHealthCheckInProgress: 1); "
        "instance group system: 1 of 2 node(s) Running (Pending: 1)"
    ) in rig.logs
    assert any("every instance group has its nodes Running after 30s" in line for line in rig.logs)


def test_pages_are_followed(rig: Rig) -> None:
    rig.stub.add_response(
        "list_cluster_nodes", page(node("system", "Running", 1), node("p5", "Running", 1), token="t1"), LIST_PARAMS
    )
    rig.stub.add_response(
        "list_cluster_nodes",
        page(node("system", "Running", 2), node("p5", "Running", 2)),
        {**LIST_PARAMS, "NextToken": "t1"},
    )
    result = rig.provider.create(dict(PROPS))
    assert result.outs is not None and result.outs["runningNodes"] == {"empty": 0, "p5": 2, "system": 2}
    assert rig.time.sleeps == []


def test_timeout_names_each_group_short_and_its_count(rig: Rig) -> None:
    short = page(
        node("system", "Running", 1),
        node("system", "Running", 2),
        node("p5", "Running", 1),
        node("p5", "Failure", 2),
    )
    for _ in range(5):  # at 0, 30, 60, 90 and 120 s: the last look is at the 120 s timeout
        rig.stub.add_response("list_cluster_nodes", short, LIST_PARAMS)
    with pytest.raises(NodeWaitError) as err:
        rig.provider.create(dict(PROPS))
    assert str(err.value) == (
        f"HyperPod cluster {CLUSTER}: after 120s (timeoutSeconds 120, policies/readiness.yaml) instance group p5: "
        "1 of 2 node(s) Running (Failure: 1). The nodes may still join: check `aws sagemaker list-cluster-nodes "
        f"--cluster-name {CLUSTER} --region us-east-1` (a Failure status shows its reason in InstanceStatus.Message), "
        "then rerun `pulumi up`, which waits again"
    )
    assert rig.time.sleeps == [30.0] * 4


def test_a_group_with_no_node_listed_yet_counts_zero(rig: Rig) -> None:
    for _ in range(5):
        rig.stub.add_response(
            "list_cluster_nodes", page(node("system", "Running", 1), node("system", "Running", 2)), LIST_PARAMS
        )
    with pytest.raises(NodeWaitError, match=r"instance group p5: 0 of 2 node\(s\) Running \(no other nodes listed\)"):
        rig.provider.create(dict(PROPS))


def test_throttling_botocore_could_not_absorb_is_one_error_at_once(rig: Rig) -> None:
    """botocore retries throttling (adaptive mode, components/aws_calls.py); what still arrives is not retried again."""
    rig.stub.add_client_error("list_cluster_nodes", service_error_code="ThrottlingException", http_status_code=400)
    with pytest.raises(NodeWaitError, match="ListClusterNodes: still throttled after botocore's 10 attempts"):
        rig.provider.create(dict(PROPS))
    assert rig.time.sleeps == []


def test_access_denied_names_the_iam_action(rig: Rig) -> None:
    rig.stub.add_client_error("list_cluster_nodes", service_error_code="AccessDeniedException", http_status_code=403)
    with pytest.raises(NodeWaitError) as err:
        rig.provider.create(dict(PROPS))
    assert str(err.value).startswith(
        "access denied: the credentials running `pulumi up` need IAM action sagemaker:ListClusterNodes on "
        f"{CLUSTER} to wait for its nodes"
    )


def test_unknown_cluster_is_one_clear_error(rig: Rig) -> None:
    rig.stub.add_client_error("list_cluster_nodes", service_error_code="ResourceNotFound", service_message="gone")
    with pytest.raises(NodeWaitError, match=f"^ListClusterNodes: no HyperPod cluster {CLUSTER}: gone$"):
        rig.provider.create(dict(PROPS))


def test_update_waits_again_for_the_new_targets(rig: Rig) -> None:
    rig.stub.add_response(
        "list_cluster_nodes",
        page(*(node("p5", "Running", i) for i in (1, 2, 3)), node("system", "Running", 1)),
        LIST_PARAMS,
    )
    news = {**PROPS, "groups": {"system": 1, "p5": 3}}
    result = rig.provider.update(CLUSTER, dict(PROPS), news)
    assert result.outs is not None and result.outs["runningNodes"] == {"p5": 3, "system": 1}


@pytest.mark.parametrize(
    "change",
    [
        {"timeoutSeconds": 5400},
        {"pollSeconds": 10},
        {"awsProfile": "deploy"},
        {"awsAssumeRoles": [{"roleArn": "arn:aws:iam::123456789012:role/deployer"}]},
        {"awsStsRegion": "us-west-2"},
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_credential_or_timeout_change_records_without_waiting(rig: Rig, change: dict[str, Any]) -> None:
    """No ListClusterNodes call at all (the Stubber has no response queued, so one would fail), and the last wait's
    runningNodes are kept; the diff still reports the update, so the state records the new inputs."""
    olds = {**PROPS, "runningNodes": {"p5": 2, "system": 2}}
    assert HyperPodNodeWaitProvider().diff(CLUSTER, dict(PROPS), {**PROPS, **change}).changes is True
    result = rig.provider.update(CLUSTER, olds, {**PROPS, **change})
    assert result.outs is not None and result.outs["runningNodes"] == {"p5": 2, "system": 2}
    assert result.outs[next(iter(change))] == next(iter(change.values()))
    assert any("no wait" in line for line in rig.logs)


@pytest.mark.parametrize(
    "change",
    [{"groups": {"system": 2, "p5": 3, "empty": 0}}, {"groups": {"system": 2, "p5": 2}}],
    ids=["count", "group-removed"],
)
def test_a_group_or_count_change_waits_again(rig: Rig, change: dict[str, Any]) -> None:
    targets = {**PROPS, **change}["groups"]
    rig.stub.add_response(
        "list_cluster_nodes",
        page(
            *(node("p5", "Running", i) for i in range(targets["p5"])), *(node("system", "Running", i) for i in (1, 2))
        ),
        LIST_PARAMS,
    )
    result = rig.provider.update(CLUSTER, {**PROPS, "runningNodes": {"p5": 2, "system": 2}}, {**PROPS, **change})
    assert result.outs is not None and result.outs["runningNodes"] == {g: n for g, n in targets.items()}


def test_diff_read_delete() -> None:
    provider = HyperPodNodeWaitProvider()
    assert provider.diff(CLUSTER, dict(PROPS), copy.deepcopy(PROPS)).changes is False
    moved = provider.diff(CLUSTER, dict(PROPS), {**PROPS, "clusterArn": CLUSTER + "x"})
    assert (moved.changes, moved.replaces) == (True, ["clusterArn"])
    resized = provider.diff(CLUSTER, dict(PROPS), {**PROPS, "groups": {"system": 2, "p5": 4, "empty": 0}})
    assert (resized.changes, resized.replaces) == (True, [])
    read = provider.read(CLUSTER, dict(PROPS))
    assert (read.id, read.outs) == (CLUSTER, PROPS)
    assert provider.delete(CLUSTER, dict(PROPS)) is None


# --- the program: what waits on it, and the timeouts from policies/readiness.yaml ------------------------------


def _one(run: StackRun, typ: str, pred: Any = lambda r: True) -> Registration:
    found = [r for r in run.registrations if r.type == typ and pred(r)]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


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


def _node_wait(run: StackRun) -> Registration:
    return _one(run, DYNAMIC, lambda r: r.inputs.get("resourceKind") == "hyperpod:HyperPodNodeWait")


def test_prod_waits_for_every_groups_target_count(stack_runs) -> None:
    run = stack_runs["prod"]
    wait = _node_wait(run)
    hp = _one(run, "aws-native:sagemaker:Cluster")
    assert wait.name == "hyperpod-nodes"
    # p5/p6 set minInstanceCount (partial provisioning): `up` is serving with that many
    assert wait.inputs["groups"] == {"system": 2, "p5-inference": 2, "p6-inference": 2, "system-b": 1}
    assert (wait.inputs["region"], wait.inputs["timeoutSeconds"], wait.inputs["pollSeconds"]) == ("us-east-1", 5400, 30)
    assert wait.inputs["clusterArn"] == hp.outputs["clusterArn"]
    assert hp.urn in wait.dependencies


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_everything_that_needs_running_pods_waits_for_the_nodes(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    wait = _node_wait(run)
    waiting = [
        r for r in run.registrations if r.type == ADDON and r.inputs["addonName"] not in {"eks-pod-identity-agent"}
    ]
    names = {r.inputs["addonName"] for r in waiting}
    assert {"coredns", "metrics-server", "cert-manager", "amazon-sagemaker-hyperpod-inference"} <= names
    for reg in waiting:
        assert wait.urn in _closure(run, reg.urn), f"{reg.name} does not wait for the nodes"
    # ... and nothing the HyperPod cluster waits on waits for them (no cycle)
    assert wait.urn not in _closure(run, _one(run, "aws-native:sagemaker:Cluster").urn)


def test_create_timeouts_come_from_the_readiness_data(stack_runs, run) -> None:
    prod = stack_runs["prod"]
    timeouts = {r.inputs["addonName"]: r.custom_timeouts for r in prod.registrations if r.type == ADDON}
    assert timeouts["coredns"] == {"create": "30m", "update": "30m"}
    for name in ("metrics-server", "cert-manager", "aws-fsx-csi-driver", "aws-mountpoint-s3-csi-driver"):
        assert timeouts[name] == {"create": "30m", "update": "30m"}, name
    assert timeouts["amazon-sagemaker-hyperpod-inference"] == {"create": "45m", "update": "45m"}
    assert timeouts["amazon-sagemaker-hyperpod-observability"] == {"create": "30m", "update": "30m"}
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:operator"]["loadBalancerController"] = {"mode": "helm", "chartVersion": "1.13.2"}
    helm = registered(run("prod", mapping))
    lbc = _one(helm, "kubernetes:helm.sh/v3:Release", lambda r: r.inputs.get("chart") == "aws-load-balancer-controller")
    assert lbc.inputs["timeout"] == 900
    assert _node_wait(helm).urn in _closure(helm, lbc.urn)


def test_adopted_hyperpod_cluster_gets_no_wait(stack_runs) -> None:
    attach = stack_runs["attach"]
    assert not [r for r in attach.registrations if r.inputs.get("resourceKind") == "hyperpod:HyperPodNodeWait"]


# --- the rehearsal: defect 2 reintroduced ------------------------------------------------------------------------


def _without_node_wait(regs: list[Registration]) -> list[Registration]:
    waits = {r.urn for r in regs if r.inputs.get("resourceKind") == "hyperpod:HyperPodNodeWait"}
    assert len(waits) == 1, "the stack registers no node wait"
    kept = [r for r in regs if r.urn not in waits]
    for r in kept:
        r.dependencies = [d for d in r.dependencies if d not in waits]
    return kept


def test_without_the_node_wait_the_rehearsal_reports_the_coredns_timeout_risk(stack_runs) -> None:
    regs = _without_node_wait(copy.deepcopy(stack_runs["prod"].registrations))
    result = rehearse(regs, mapping=stack_mapping("prod"))
    assert result.exit_code == 1
    coredns = [f for f in result.findings if f.resource == "coredns"]
    assert [(f.kind, f.waits_for) for f in coredns] == [
        (
            "timeout",
            "2 ready coredns pod(s) (add-on ACTIVE; DEGRADED (no CoreDNS pods running) counts as pending)",
        )
    ]
    assert coredns[0].why == (
        "hyperpod-cluster's create returns before its nodes join (AWS's Terraform waits for them afterwards) and "
        "nothing that waits for them (a HyperPod node wait) is ordered before it: its 30 min create timeout starts "
        "before coredns can be scheduled (timeout risk)"
    )
    assert "wait-for-hyperpod-nodes.sh" in coredns[0].source
    timed_out = {f.resource for f in result.findings if f.kind == "timeout"}
    assert {"inference-operator-addon", "operator-prereqs-metrics-server", "operator-prereqs-cert-manager"} <= timed_out


def test_a_node_wait_not_ordered_before_coredns_is_a_race(stack_runs) -> None:
    regs = copy.deepcopy(stack_runs["prod"].registrations)
    wait = next(r for r in regs if r.inputs.get("resourceKind") == "hyperpod:HyperPodNodeWait")
    coredns = next(r for r in regs if r.type == ADDON and r.inputs.get("addonName") == "coredns")
    assert wait.urn in coredns.dependencies
    coredns.dependencies = [d for d in coredns.dependencies if d != wait.urn]
    result = rehearse(regs, mapping=stack_mapping("prod"))
    found = [f for f in result.findings if f.resource == "coredns"]
    assert [f.kind for f in found] == ["race"]
    assert "have joined only once hyperpod-nodes is done, which is not ordered before it" in found[0].why


def test_with_the_node_wait_the_reference_stacks_have_no_timeout_risk(stack_runs) -> None:
    for stack in ("dev", "prod"):
        result = rehearse(stack_runs[stack], mapping=stack_mapping(stack))
        assert not [f.render() for f in result.findings if "timeout risk" in f.why], stack
