"""The node wait vs on-start deep health checks (issue 33 item 2).

Groups with ``onStartDeepHealthChecks`` run them before their nodes are Running (AWS docs
sagemaker-hyperpod-eks-resiliency-deep-health-checks); no source says how long they take, so the node wait
allows 90 minutes for such a cluster (policies/readiness.yaml; no source; safe side chosen) and 30 minutes
otherwise. The rehearsal reads the cluster's own instance groups and reports a wait that is shorter; a re-run
after a timed-out wait waits again (the wait is not saved, the cluster is untouched).
"""

from __future__ import annotations

import copy

import boto3
import pytest
from botocore.stub import Stubber

from components.hyperpod_node_wait import HyperPodNodeWaitProvider, NodeWaitError
from tests.conftest import registered, stack_mapping
from tests.test_hyperpod_node_wait import CLUSTER, LIST_PARAMS, PROPS, FakeTime, node, page
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration
from tools.rehearse import rehearse

DYNAMIC = "pulumi-python:dynamic:Resource"


def _wait(run: StackRun) -> Registration:
    found = [r for r in run.registrations if r.inputs.get("resourceKind") == "hyperpod:HyperPodNodeWait"]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


@pytest.mark.parametrize(
    ("stack", "groups"),
    [
        ("dev", ["gpu-p5"]),
        ("staging", ["gpu-p5"]),
        ("prod", ["p5-inference", "p6-inference"]),
    ],
)
def test_a_cluster_with_deep_health_checks_waits_90_minutes(stack: str, groups: list[str], stack_runs) -> None:
    wait = _wait(stack_runs[stack])
    assert wait.inputs["deepHealthChecks"] == groups
    assert wait.inputs["timeoutSeconds"] == 5400


def test_a_cluster_without_deep_health_checks_waits_30_minutes(run) -> None:
    mapping = stack_mapping("dev")
    for group in mapping["hyperpod-inference:cluster"]["instanceGroups"]:
        group["onStartDeepHealthChecks"] = []
    wait = _wait(registered(run("dev", mapping)))
    assert wait.inputs["deepHealthChecks"] == []
    assert wait.inputs["timeoutSeconds"] == 1800
    hp = next(r for r in run("dev", mapping).registrations if r.type == "aws-native:sagemaker:Cluster")
    assert all(not g.get("onStartDeepHealthChecks") for g in hp.inputs["instanceGroups"])


def test_reference_stacks_rehearse_without_a_node_wait_timeout(stack_runs) -> None:
    for stack in ("dev", "staging", "prod"):
        result = rehearse(stack_runs[stack], mapping=stack_mapping(stack))
        assert not [f.render() for f in result.findings if f.resource == "hyperpod-nodes"], stack


def test_the_rehearsal_reports_a_30_minute_wait_for_deep_checked_groups(stack_runs) -> None:
    """The defect reintroduced: the wait keeps 30 min while the cluster's groups run deep health checks."""
    regs = copy.deepcopy(stack_runs["prod"].registrations)
    wait = next(r for r in regs if r.inputs.get("resourceKind") == "hyperpod:HyperPodNodeWait")
    wait.inputs["timeoutSeconds"] = 1800
    wait.inputs["deepHealthChecks"] = []  # the rehearsal reads the cluster's groups, not this input
    result = rehearse(regs, mapping=stack_mapping("prod"))
    found = [f for f in result.findings if f.resource == "hyperpod-nodes"]
    assert [(f.kind, f.waits_for) for f in found] == [
        (
            "timeout",
            "every instance group's nodes Running (groups with on-start deep health checks: p5-inference, "
            "p6-inference)",
        )
    ]
    assert found[0].why == (
        "its 30 min wait is shorter than the 90 min policies/readiness.yaml sets for groups with on-start deep "
        "health checks, which run before their nodes are Running (timeout risk)"
    )
    assert "safe side chosen" in found[0].source
    assert result.exit_code == 1


def test_a_rerun_after_a_timed_out_wait_converges() -> None:
    """The first `pulumi up` times out while the checks run (the create fails, nothing is saved); the next one
    creates the wait again with the same inputs and succeeds once the nodes are Running. Nothing is called on the
    cluster itself: ListClusterNodes only (the Stubber fails on any other call)."""
    client = boto3.client(
        "sagemaker", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    fake = FakeTime()
    provider = HyperPodNodeWaitProvider(
        client_factory=lambda _s, _r: client, sleep=fake.sleep, clock=fake.clock, log=[].append
    )
    checking = page(
        node("system", "Running", 1),
        node("system", "Running", 2),
        node("p5", "DeepHealthCheckInProgress", 1),
        node("p5", "DeepHealthCheckInProgress", 2),
    )
    ready = page(
        node("system", "Running", 1), node("system", "Running", 2), node("p5", "Running", 1), node("p5", "Running", 2)
    )
    with Stubber(client) as stub:
        for _ in range(5):
            stub.add_response("list_cluster_nodes", checking, LIST_PARAMS)
        with pytest.raises(NodeWaitError, match="rerun `pulumi up`, which waits again"):
            provider.create(dict(PROPS))
        stub.add_response("list_cluster_nodes", ready, LIST_PARAMS)
        again = provider.create(dict(PROPS))
        stub.assert_no_pending_responses()
    assert again.id == CLUSTER
    assert again.outs is not None and again.outs["runningNodes"] == {"empty": 0, "p5": 2, "system": 2}


def test_instance_connectivity_runs_on_two_instances_the_threshold() -> None:
    """Hand mutation ``health-connectivity-threshold``: two EFA instances are the least InstanceConnectivity tests
    (the API's "communication between instances"); one is refused, two are not."""
    from components.config.health_checks import INSTANCE_CONNECTIVITY, unsupported_reason

    assert unsupported_reason(INSTANCE_CONNECTIVITY, "ml.p5.48xlarge", 2) is None
    assert "the group has 1" in (unsupported_reason(INSTANCE_CONNECTIVITY, "ml.p5.48xlarge", 1) or "")
