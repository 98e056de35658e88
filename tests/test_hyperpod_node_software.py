"""The node software roll (issue 45 item 1): UpdateClusterSoftware per `latest` group on a Kubernetes version change,
requests validated by botocore's Stubber, the wait on DescribeCluster, and where the program puts it."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from components.hyperpod_node_software import HyperPodNodeSoftwareProvider, NodeSoftwareError, update_request
from tests.conftest import stack_mapping
from tests.fake_time import FakeTime
from tools.plan.harness import StackRun

CLUSTER = "arn:aws:sagemaker:us-east-1:123456789012:cluster/k3x9p2m7q1ab"
ROLLING = {
    "RollingUpdatePolicy": {"MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 1}},
    "WaitIntervalInSeconds": 600,
}
PROPS: dict[str, Any] = {
    "resourceKind": "hyperpod:HyperPodNodeSoftware",
    "region": "us-east-1",
    "clusterArn": CLUSTER,
    "kubernetesVersion": "1.34",
    "groups": {"p5": ROLLING, "system": {**ROLLING, "WaitIntervalInSeconds": 300}},
    "timeoutSeconds": 3600,
    "pollSeconds": 60,
    "awsProfile": None,
}
NEW = {**PROPS, "kubernetesVersion": "1.35"}


@dataclasses.dataclass
class Rig:
    provider: HyperPodNodeSoftwareProvider
    stub: Stubber


@pytest.fixture
def rig() -> Iterator[Rig]:
    client = boto3.client("sagemaker", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t")
    stub = Stubber(client)
    fake = FakeTime()
    provider = HyperPodNodeSoftwareProvider(
        client_factory=lambda _s, region: client, sleep=fake.sleep, clock=fake.clock, log=lambda m: None
    )
    with stub:
        yield Rig(provider, stub)
        stub.assert_no_pending_responses()


def described(status: str, group: str, update: str | None) -> dict[str, Any]:
    g: dict[str, Any] = {"InstanceGroupName": group}
    if update is not None:
        g["SoftwareUpdateStatus"] = update
    return {
        "ClusterArn": CLUSTER,
        "ClusterStatus": status,
        "InstanceGroups": [g],
        "CreationTime": datetime(2026, 12, 1, tzinfo=UTC),
    }


def _expect_roll(rig: Rig, group: str, deployment: dict[str, Any], *statuses: tuple[str, str | None]) -> None:
    rig.stub.add_response(
        "update_cluster_software", {"ClusterArn": CLUSTER}, update_request(CLUSTER, group, deployment)
    )
    for status, update in statuses:
        rig.stub.add_response("describe_cluster", described(status, group, update), {"ClusterName": CLUSTER})


def _expect_releases(rig: Rig, releases: dict[str, str]) -> None:
    response = described("InService", "p5", None)
    response["InstanceGroups"] = [
        {"InstanceGroupName": g, "CurrentImageReleaseVersion": v} for g, v in releases.items()
    ] + [{"InstanceGroupName": "new"}]
    rig.stub.add_response("describe_cluster", response, {"ClusterName": CLUSTER})


def test_a_version_change_rolls_each_group_in_turn_with_its_deployment_config(rig: Rig) -> None:
    _expect_roll(rig, "p5", ROLLING, ("Updating", "InProgress"), ("InService", "Succeeded"))
    _expect_roll(rig, "system", PROPS["groups"]["system"], ("InService", "Succeeded"))
    _expect_releases(rig, {"p5": "1.5.0", "system": "1.5.0"})
    result = rig.provider.update(CLUSTER, dict(PROPS), dict(NEW))
    assert result.outs is not None and result.outs["rolledGroups"] == ["p5", "system"]
    assert result.outs["imageReleases"] == {"p5": "1.5.0", "system": "1.5.0"}


@pytest.mark.parametrize(
    "change",
    [{"timeoutSeconds": 60}, {"awsProfile": "deploy"}, {"groups": {"p5": ROLLING}}],
    ids=lambda c: next(iter(c)),
)
def test_anything_else_updates_without_a_call(rig: Rig, change: dict[str, Any]) -> None:
    assert HyperPodNodeSoftwareProvider().diff(CLUSTER, dict(PROPS), {**PROPS, **change}).changes is True
    result = rig.provider.update(CLUSTER, dict(PROPS), {**PROPS, **change})
    assert result.outs is not None and result.outs["rolledGroups"] == []


def test_create_rolls_nothing_and_records_each_groups_release(rig: Rig) -> None:
    _expect_releases(rig, {"p5": "1.4.2", "system": "1.4.2"})
    result = rig.provider.create(dict(PROPS))
    assert (result.id, result.outs["rolledGroups"]) == (CLUSTER, [])
    assert result.outs["imageReleases"] == {"p5": "1.4.2", "system": "1.4.2"}


@pytest.mark.parametrize("update", ["Failed", "RollbackInProgress", "RollbackComplete"])
def test_a_rollback_is_one_error_naming_the_group(rig: Rig, update: str) -> None:
    _expect_roll(rig, "p5", ROLLING, ("Updating", update))
    with pytest.raises(NodeSoftwareError, match=f"instance group p5 .*SoftwareUpdateStatus {update}"):
        rig.provider.update(CLUSTER, dict(PROPS), dict(NEW))


def test_the_wait_is_bounded_by_the_timeout(rig: Rig) -> None:
    statuses = [("Updating", "InProgress")] * 61  # 60 polls of 60 s reach timeoutSeconds 3600
    _expect_roll(rig, "p5", ROLLING, *statuses)
    with pytest.raises(NodeSoftwareError, match="still Updating / InProgress after 3600s"):
        rig.provider.update(CLUSTER, dict(PROPS), dict(NEW))


def test_access_denied_names_the_action(rig: Rig) -> None:
    rig.stub.add_client_error(
        "update_cluster_software", "AccessDeniedException", "no", expected_params=update_request(CLUSTER, "p5", ROLLING)
    )
    with pytest.raises(NodeSoftwareError, match="sagemaker:UpdateClusterSoftware"):
        rig.provider.update(CLUSTER, dict(PROPS), dict(NEW))


def test_diff_replaces_on_a_new_cluster() -> None:
    diff = HyperPodNodeSoftwareProvider().diff(CLUSTER, dict(PROPS), {**PROPS, "clusterArn": CLUSTER + "x"})
    assert (diff.changes, diff.replaces) == (True, ["clusterArn"])
    assert HyperPodNodeSoftwareProvider().diff(CLUSTER, dict(PROPS), copy.deepcopy(PROPS)).changes is False


# --- the program ------------------------------------------------------------------------------------------------


def _software(run: StackRun) -> Any:
    (reg,) = [r for r in run.registrations if r.inputs.get("resourceKind") == "hyperpod:HyperPodNodeSoftware"]
    return reg


def test_prod_rolls_its_latest_groups_with_their_deployment_configs(stack_runs: Any) -> None:
    reg = _software(stack_runs["prod"])
    assert reg.inputs["kubernetesVersion"] == "1.35"
    assert reg.inputs["groups"]["p5-inference"] == ROLLING
    assert set(reg.inputs["groups"]) == {"system", "p5-inference", "p6-inference", "system-b"}
    assert reg.inputs["timeoutSeconds"] == 720 * 60


def test_a_pinned_group_is_rolled_by_its_property_not_by_the_call(run: Any) -> None:
    m = copy.deepcopy(stack_mapping("prod"))
    m["hyperpod-inference:cluster"]["instanceGroups"][2]["imageReleaseVersion"] = "1.4.2"
    assert "p6-inference" not in _software(run("prod", m)).inputs["groups"]


def test_the_operator_add_on_comes_after_the_roll(stack_runs: Any) -> None:
    run = stack_runs["prod"]
    software = _software(run)
    (addon,) = [
        r
        for r in run.registrations
        if r.type == "aws:eks/addon:Addon" and r.inputs.get("addonName") == "amazon-sagemaker-hyperpod-inference"
    ]
    assert software.urn in addon.dependencies
    (wait,) = [r for r in run.registrations if r.inputs.get("resourceKind") == "hyperpod:HyperPodNodeWait"]
    assert wait.urn in software.dependencies
