"""`up` means serving (issue 45 item 4): every operator custom resource carries a sourced wait on its status, each
front-door route a wait for a healthy target, each with a timeout from the readiness data."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber

from components.target_health_wait import TargetHealthError, TargetHealthWaitProvider
from policies.readiness import TIMEOUT_SECONDS, WAIT_FOR, await_annotations, load_readiness, program_create_timeout
from tests.fake_time import FakeTime
from tools.plan.harness import StackRun

ENDPOINT_KINDS = ("InferenceEndpointConfig", "JumpStartModel")
DYNAMIC = "pulumi-python:dynamic:Resource"
TGB = "kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding"


def _endpoints(run: StackRun) -> list[Any]:
    return [r for r in run.registrations if r.type.rsplit(":", 1)[-1] in ENDPOINT_KINDS]


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_every_endpoint_waits_for_the_operator_to_report_it_deployed(stack: str, stack_runs: Any) -> None:
    """Without the annotation the provider returns once the API server accepts the object (no await for custom
    resources): `up` would finish before the model serves. With it, the provider polls until status.state is
    DeploymentComplete, within the readiness data's timeout, which customTimeouts repeat for the rehearsal."""
    endpoints = _endpoints(stack_runs[stack])
    assert endpoints
    for reg in endpoints:
        annotations = reg.inputs["metadata"]["annotations"]
        waits = json.loads(annotations[WAIT_FOR])
        assert waits[0] == "jsonpath={.status.state}=DeploymentComplete", reg.name
        minutes = program_create_timeout(reg.type, reg.inputs)
        assert annotations[TIMEOUT_SECONDS] == str(int(minutes * 60)) == "3600"
        assert reg.custom_timeouts == {"create": "60m", "update": "60m"}
        gateway = bool((reg.inputs["spec"].get("inferenceGateway") or {}).get("enabled"))
        assert ("jsonpath={.status.inferenceGateway.state}=Ready" in waits) is gateway, reg.name


def test_a_gateway_endpoint_also_waits_for_its_gateway_state(stack_runs: Any) -> None:
    (qwen,) = [r for r in _endpoints(stack_runs["prod"]) if r.inputs["metadata"]["name"] == "qwen-sglang"]
    assert json.loads(qwen.inputs["metadata"]["annotations"][WAIT_FOR]) == [
        "jsonpath={.status.state}=DeploymentComplete",
        "jsonpath={.status.inferenceGateway.state}=Ready",
    ]


def test_the_gateway_config_has_no_sourced_status_so_no_wait_is_invented() -> None:
    typ = "kubernetes:inference.sagemaker.aws.amazon.com/v1alpha1:InferenceGatewayConfig"
    assert await_annotations(typ, {"spec": {}}) == {}


def test_the_waited_status_is_the_operators_crd(crds_dir: Path) -> None:
    """The field and the value come from the operator's CRD (v3.3), not from a guess."""
    for name in (
        "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
        "inference.sagemaker.aws.amazon.com_jumpstartmodels.yaml",
    ):
        crd = yaml.safe_load((crds_dir / "v3.3" / name).read_text(encoding="utf-8"))
        status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
        assert "DeploymentComplete" in status["state"]["enum"], name
    entry = load_readiness().entry_for("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig", {})
    assert entry.ready_when[0].expression == "jsonpath={.status.state}=DeploymentComplete"
    assert "status.state enum" in entry.ready_when[0].source


def test_every_front_door_route_waits_for_a_healthy_target(stack_runs: Any) -> None:
    run = stack_runs["prod"]
    waits = [
        r
        for r in run.registrations
        if r.type == DYNAMIC and r.inputs.get("resourceKind") == "hyperpod:TargetHealthWait"
    ]
    bindings = {r.urn: r for r in run.registrations if r.type == TGB}
    listeners = {r.urn for r in run.registrations if r.type == "aws:lb/listener:Listener"}
    [https] = [u for u in listeners if u.endswith("front-door-https")]
    rules = {r.urn for r in run.registrations if r.type == "aws:lb/listenerRule:ListenerRule"}
    assert sorted(w.inputs["endpoint"] for w in waits) == ["llama-70b-dpd", "llama-70b-kvaware"]
    for w in waits:
        assert w.inputs["timeoutSeconds"] == 20 * 60
        own = [u for u in w.dependencies if u in bindings]
        assert len(own) == 1 and w.inputs["endpoint"] in own[0], w.name
        # After the HTTPS listener and its route rules: a target group no listener uses reports `unused`.
        assert [u for u in w.dependencies if u in listeners] == [https], w.name
        assert {u for u in w.dependencies if u in rules} == set(rules), w.name


def test_dev_without_a_front_door_has_no_target_wait(stack_runs: Any) -> None:
    assert not [
        r for r in stack_runs["dev"].registrations if r.inputs.get("resourceKind") == "hyperpod:TargetHealthWait"
    ]


# --- the target health wait, with botocore's Stubber (elbv2) ---------------------------------------------------

ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/hpi-prod-kvaware/0123456789abcdef"
PROPS: dict[str, Any] = {
    "region": "us-east-1",
    "targetGroupArn": ARN,
    "endpoint": "kvaware",
    "timeoutSeconds": 60,
    "pollSeconds": 15,
}


@dataclasses.dataclass
class Rig:
    provider: TargetHealthWaitProvider
    stub: Stubber


@pytest.fixture
def rig() -> Iterator[Rig]:
    client = boto3.client("elbv2", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t")
    stub = Stubber(client)
    fake = FakeTime()
    provider = TargetHealthWaitProvider(
        client_factory=lambda _s, _r: client, sleep=fake.sleep, clock=fake.clock, log=lambda m: None
    )
    with stub:
        yield Rig(provider, stub)
        stub.assert_no_pending_responses()


def _health(*states: str) -> dict[str, Any]:
    return {
        "TargetHealthDescriptions": [
            {"Target": {"Id": f"10.0.0.{i}", "Port": 8000}, "TargetHealth": {"State": s}} for i, s in enumerate(states)
        ]
    }


def test_create_waits_until_a_target_is_healthy(rig: Rig) -> None:
    for states in [(), ("initial",), ("initial", "healthy")]:
        rig.stub.add_response("describe_target_health", _health(*states), {"TargetGroupArn": ARN})
    result = rig.provider.create(dict(PROPS))
    assert result.outs["targetStates"] == {"healthy": 1, "initial": 1}


def test_no_healthy_target_in_time_is_one_error_with_the_states(rig: Rig) -> None:
    for _ in range(5):  # 0, 15, 30, 45, 60 s
        rig.stub.add_response("describe_target_health", _health("unhealthy"), {"TargetGroupArn": ARN})
    with pytest.raises(TargetHealthError, match=r"no healthy target .* after 60s .*unhealthy: 1"):
        rig.provider.create(dict(PROPS))


def test_a_timeout_or_credential_change_does_not_wait_again(rig: Rig) -> None:
    olds = {**PROPS, "targetStates": {"healthy": 2}}
    for change in ({"timeoutSeconds": 600}, {"awsProfile": "deploy"}):
        assert TargetHealthWaitProvider().diff(ARN, dict(PROPS), {**PROPS, **change}).changes is True
        assert rig.provider.update(ARN, olds, {**PROPS, **change}).outs["targetStates"] == {"healthy": 2}
    moved = TargetHealthWaitProvider().diff(ARN, dict(PROPS), {**PROPS, "targetGroupArn": ARN + "x"})
    assert moved.replaces == ["targetGroupArn"]
