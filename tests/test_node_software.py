"""Node software lifecycle (issue 45 item 1): image release per group, the rolling DeploymentConfig, the roll's
capacity left, and what the cluster renders. Both directions for each rule, the default on its threshold."""

from __future__ import annotations

import copy
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber

from components.config.errors import ConfigError
from components.config.loader import parse_stack_mapping
from components.config.node_software import SCHEDULE_PATTERN, SoftwareUpdates
from components.config.validation import run_advisories
from policies.capacity_rules import PodTemplate, Workload
from policies.node_roll import RollingGroup, batch_nodes, roll_impacts
from tests.conftest import stack_mapping
from tools.plan.harness import StackRun
from tools.plan.render import resource_schema

CLUSTER = "hyperpod-inference:cluster"
ENDPOINTS = "hyperpod-inference:endpoints"


def _groups(m: dict[str, Any]) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = m[CLUSTER]["instanceGroups"]
    return groups


def _issues(stack: str, mapping: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping(stack, mapping)
    return {i.path: i.message for i in err.value.issues}


def _advisories(stack: str, mapping: dict[str, Any], rule: str) -> dict[str, str]:
    cfg = parse_stack_mapping(stack, mapping)
    return {a.path: a.message for a in run_advisories(cfg) if a.rule == rule}


# --- imageReleaseVersion ------------------------------------------------------------------------------------


def test_prod_refuses_a_group_that_names_no_image_release() -> None:
    m = copy.deepcopy(stack_mapping("prod"))
    del _groups(m)[1]["imageReleaseVersion"]
    issues = _issues("prod", m)
    assert list(issues) == ["cluster.instanceGroups[1].imageReleaseVersion"]
    assert "pinned MAJOR.MINOR.PATCH" in issues["cluster.instanceGroups[1].imageReleaseVersion"]


def test_outside_prod_an_omitted_release_is_latest_without_advisory() -> None:
    m = copy.deepcopy(stack_mapping("dev"))
    assert "imageReleaseVersion" not in _groups(m)[1]
    assert _advisories("dev", m, "image-release-pinned") == {}


def test_latest_is_an_advisory_in_prod_and_a_pin_is_not() -> None:
    m = copy.deepcopy(stack_mapping("prod"))
    assert set(_advisories("prod", m, "image-release-pinned")) == {
        f"cluster.instanceGroups[{i}].imageReleaseVersion" for i in range(4)
    }
    _groups(m)[1]["imageReleaseVersion"] = "1.2.3"
    assert "cluster.instanceGroups[1].imageReleaseVersion" not in _advisories("prod", m, "image-release-pinned")


@pytest.mark.parametrize("bad", ["1.2", "v1.2.3", "Latest", "1.2.3-rc1"])
def test_a_misspelt_release_is_refused_by_its_key(bad: str) -> None:
    m = copy.deepcopy(stack_mapping("dev"))
    _groups(m)[1]["imageReleaseVersion"] = bad
    assert "cluster.instanceGroups[1].imageReleaseVersion" in _issues("dev", m)


# --- softwareUpdates ----------------------------------------------------------------------------------------


def test_the_schedule_pattern_is_the_schemas() -> None:
    schema = resource_schema("AWS::SageMaker::Cluster", "us-east-1")
    assert schema is not None
    assert schema["definitions"]["ScheduledUpdateConfig"]["properties"]["ScheduleExpression"]["pattern"] == (
        SCHEDULE_PATTERN
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("schedule", "0 3 * * SUN"),
        ("autoPatch", "Always"),
        ("waitIntervalSeconds", 3601),
        ("maximumBatchSize", {"type": "CAPACITY_PERCENTAGE", "value": 101}),
        ("maximumBatchSize", {"type": "NODES", "value": 1}),
        ("maximumBatchSize", {"type": "INSTANCE_COUNT", "value": 0}),
        ("rollbackAlarms", [" "]),
        ("rollbak", True),
    ],
)
def test_bad_software_updates_are_refused_by_key(key: str, value: Any) -> None:
    m = copy.deepcopy(stack_mapping("dev"))
    _groups(m)[1]["softwareUpdates"] = {key: value}
    assert any(p.startswith("cluster.instanceGroups[1].softwareUpdates") for p in _issues("dev", m))


@pytest.mark.parametrize(("key", "value"), [("waitIntervalSeconds", 3600), ("waitIntervalSeconds", 0)])
def test_the_bounds_themselves_are_accepted(key: str, value: Any) -> None:
    m = copy.deepcopy(stack_mapping("dev"))
    _groups(m)[1]["softwareUpdates"] = {key: value, "maximumBatchSize": {"type": "CAPACITY_PERCENTAGE", "value": 100}}
    parse_stack_mapping("dev", m)


def test_the_deployment_config_is_what_update_cluster_software_accepts() -> None:
    """botocore validates the request (Stubber checks the parameters against the service model)."""
    updates = SoftwareUpdates.model_validate(
        {
            "maximumBatchSize": {"type": "CAPACITY_PERCENTAGE", "value": 25},
            "rollbackMaximumBatchSize": {"type": "INSTANCE_COUNT", "value": 2},
            "waitIntervalSeconds": 120,
            "rollbackAlarms": ["hpi-prod-5xx"],
        }
    )
    client = botocore.session.get_session().create_client(
        "sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    params = {"ClusterName": "hpi-prod", "DeploymentConfig": updates.deployment_config()}
    with Stubber(client) as stub:
        stub.add_response("update_cluster_software", {"ClusterArn": "arn:aws:sagemaker:us-east-1:1:cluster/x"}, params)
        client.update_cluster_software(**params)
    assert updates.deployment_config() == {
        "RollingUpdatePolicy": {
            "MaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE", "Value": 25},
            "RollbackMaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 2},
        },
        "WaitIntervalInSeconds": 120,
        "AutoRollbackConfiguration": [{"AlarmName": "hpi-prod-5xx"}],
    }


def test_the_default_rolls_one_node_at_a_time() -> None:
    assert SoftwareUpdates().deployment_config() == {
        "RollingUpdatePolicy": {"MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 1}},
        "WaitIntervalInSeconds": 300,
    }


# --- the roll's capacity left ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "kind", "value", "nodes"),
    [
        (4, None, None, 4),
        (4, "INSTANCE_COUNT", 1, 1),
        (4, "INSTANCE_COUNT", 9, 4),
        (4, "CAPACITY_PERCENTAGE", 25, 1),
        (4, "CAPACITY_PERCENTAGE", 26, 2),
        (4, "CAPACITY_PERCENTAGE", 1, 1),
        (0, "INSTANCE_COUNT", 1, 0),
    ],
)
def test_batch_nodes(count: int, kind: str | None, value: int | None, nodes: int) -> None:
    assert batch_nodes(count, kind, value) == nodes


def _workload(replicas: int, gpus: int, itype: str = "ml.p5.48xlarge") -> Workload:
    resources = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
    pod = PodTemplate("worker", "worker.resources", resources, replicas, replicas, "replicas", (itype,))
    return Workload("e", "e", (pod,))


@pytest.mark.parametrize(
    ("replicas", "gpus", "count", "batch", "spread", "packed"),
    [
        (1, 8, 4, 1, 0, 0),  # one replica: any roll empties it
        (2, 8, 4, 1, 1, 1),  # a whole node per replica: one node down leaves one
        (2, 1, 4, 1, 1, 0),  # spread leaves one; both on one node leaves none
        (4, 8, 4, 2, 2, 2),
        (2, 8, 2, 2, 0, 0),  # the batch is the whole group
        (5, 8, 4, 1, 3, 4),  # 2,1,1,1 spread: the worst batch takes the node with two
    ],
)
def test_capacity_left_during_a_batch(
    replicas: int, gpus: int, count: int, batch: int, spread: int, packed: int
) -> None:
    group = RollingGroup("g", "ml.p5.48xlarge", count, "INSTANCE_COUNT", batch)
    (impact,) = roll_impacts([group], [_workload(replicas, gpus)])
    assert (impact.left_spread, impact.left_packed) == (spread, packed)


def test_a_group_of_another_type_takes_nothing() -> None:
    group = RollingGroup("g", "ml.p6-b200.48xlarge", 4, "INSTANCE_COUNT", 1)
    assert roll_impacts([group], [_workload(1, 8)]) == []


def test_prod_refuses_a_roll_that_empties_an_endpoint_and_names_the_fix() -> None:
    m = copy.deepcopy(stack_mapping("prod"))
    qwen = next(e for e in m[ENDPOINTS] if e["name"] == "qwen-sglang")
    qwen["spec"]["replicas"] = 1
    issues = _issues("prod", m)
    assert list(issues) == ["cluster.instanceGroups[1].softwareUpdates.maximumBatchSize"]
    message = issues["cluster.instanceGroups[1].softwareUpdates.maximumBatchSize"]
    assert "qwen-sglang: 1 replica(s)" in message and "leaves 0 serving" in message
    assert "raise the endpoint's replicas" in message and "lower the batch" not in message


def test_prod_refuses_a_whole_group_batch_and_offers_a_smaller_one() -> None:
    m = copy.deepcopy(stack_mapping("prod"))
    _groups(m)[1]["softwareUpdates"]["maximumBatchSize"] = {"type": "CAPACITY_PERCENTAGE", "value": 100}
    issues = _issues("prod", m)
    message = issues["cluster.instanceGroups[1].softwareUpdates.maximumBatchSize"]
    assert "takes 4 node(s) at a time" in message and "lower the batch" in message


def test_prod_as_written_keeps_every_endpoint_serving_and_names_the_packing_risk() -> None:
    advisories = _advisories("prod", stack_mapping("prod"), "node-roll-keeps-serving")
    # qwen-sglang's two 1-GPU replicas may share one p5 node: only kubectl shows whether they do.
    assert list(advisories) == ["cluster.instanceGroups[1].softwareUpdates.maximumBatchSize"]
    assert "qwen-sglang" in advisories["cluster.instanceGroups[1].softwareUpdates.maximumBatchSize"]


def test_outside_prod_an_emptying_roll_is_an_advisory_not_an_error() -> None:
    advisories = _advisories("dev", stack_mapping("dev"), "node-roll-keeps-serving")
    assert "llama-8b" in advisories["cluster.instanceGroups[1].softwareUpdates.maximumBatchSize"]


# --- what the cluster renders -------------------------------------------------------------------------------------


def _groups_rendered(run: StackRun) -> dict[str, dict[str, Any]]:
    (cluster,) = [r for r in run.registrations if r.type == "aws-native:sagemaker:Cluster"]
    return {g["instanceGroupName"]: g for g in cluster.inputs["instanceGroups"]}


def test_prod_renders_the_schedule_with_its_rolling_config(stack_runs: Any) -> None:
    groups = _groups_rendered(stack_runs["prod"])
    assert groups["p5-inference"]["scheduledUpdateConfig"] == {
        "scheduleExpression": "cron(0 3 ? * SUN *)",
        "deploymentConfig": {
            "rollingUpdatePolicy": {"maximumBatchSize": {"type": "INSTANCE_COUNT", "value": 1}},
            "waitIntervalInSeconds": 600,
        },
    }
    assert "scheduledUpdateConfig" not in groups["p6-inference"]
    assert "autoPatchConfig" not in groups["p5-inference"]
    # `latest`: the property stays unset, so each new node takes the newest release
    assert all("imageReleaseVersion" not in g for g in groups.values())


def test_a_pin_and_auto_patching_render(run: Any) -> None:
    m = copy.deepcopy(stack_mapping("prod"))
    _groups(m)[2]["imageReleaseVersion"] = "1.4.2"
    _groups(m)[2]["softwareUpdates"]["autoPatch"] = "WhenIdle"
    _groups(m)[2]["softwareUpdates"]["rollbackAlarms"] = ["hpi-prod-front-door-5xx"]
    group = _groups_rendered(run("prod", m))["p6-inference"]
    assert group["imageReleaseVersion"] == "1.4.2"
    assert group["autoPatchConfig"] == {
        "patchingStrategy": "WhenIdle",
        "deploymentConfig": {
            "rollingUpdatePolicy": {"maximumBatchSize": {"type": "INSTANCE_COUNT", "value": 1}},
            "waitIntervalInSeconds": 600,
            "autoRollbackConfiguration": [{"alarmName": "hpi-prod-front-door-5xx"}],
        },
    }


# --- deep health checks by role (item 3) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stack", "role", "expected"),
    [
        ("prod", None, ["InstanceStress"]),  # a GPU group defaults to inference
        ("prod", "inference", ["InstanceStress"]),
        ("prod", "training", ["InstanceStress", "InstanceConnectivity"]),
        ("dev", "training", ["InstanceStress"]),  # one instance: nobody to test connectivity with
        ("prod", "system", []),
    ],
)
def test_the_default_checks_follow_the_role(stack: str, role: str | None, expected: list[str]) -> None:
    m = copy.deepcopy(stack_mapping(stack))
    if role is not None:
        _groups(m)[1]["role"] = role
    cfg = parse_stack_mapping(stack, m)
    assert cfg.cluster.instance_groups[1].deep_health_checks == expected  # type: ignore[union-attr]


def test_listed_checks_win_over_the_role() -> None:
    m = copy.deepcopy(stack_mapping("prod"))
    _groups(m)[1]["onStartDeepHealthChecks"] = ["InstanceStress", "InstanceConnectivity"]
    cfg = parse_stack_mapping("prod", m)
    assert cfg.cluster.instance_groups[1].deep_health_checks == ["InstanceStress", "InstanceConnectivity"]  # type: ignore[union-attr]
    assert cfg.cluster.instance_groups[0].deep_health_checks == []  # type: ignore[union-attr]


def test_the_cluster_timeouts_are_the_handlers(stack_runs: Any) -> None:
    """120 min was too short for a first create with deep health checks; the handler allows 720 (cfn-lint schema)."""
    schema = resource_schema("AWS::SageMaker::Cluster", "us-east-1")
    assert schema is not None
    handler = {k: schema["handlers"][k]["timeoutInMinutes"] for k in ("create", "update", "delete")}
    assert handler == {"create": 720, "update": 720, "delete": 720}
    (cluster,) = [r for r in stack_runs["prod"].registrations if r.type == "aws-native:sagemaker:Cluster"]
    assert cluster.custom_timeouts == {"create": "720m", "update": "720m", "delete": "720m"}
