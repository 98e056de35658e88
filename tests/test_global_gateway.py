"""The global stack (``hyperpod-inference:role: global``): the Global Inference Gateway provider (botocore
Stubber on the real service model), its typed shapes against that model, the config contract, the program
under mocks with two member StackReferences, every guardrail both ways (config error and pack policy), the
regional stacks' member export, and the global preflight.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import typing
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from botocore.validate import ParamValidator
from rich.console import Console

from components.config import ConfigError
from components.config.global_gateway import GlobalStackConfig, parse_global_config
from components.global_inference_gateway import (
    CreateRequest,
    DescribeResponse,
    GatewayError,
    GlobalInferenceGatewayProvider,
    MemberRequest,
    MemberShape,
    RoutingShape,
    TagShape,
    UpdateRequest,
    WeightsShape,
    client_token,
    create_request,
)
from policies import global_policies as gp
from policies.engine import evaluate
from policies.pack import GLOBAL_POLICIES, POLICIES
from tests.conftest import cached_scope, registered, stack_mapping
from tests.iam_lint import assert_policy_clean, policy_documents
from tools.plan import mocks
from tools.plan.harness import StackRun, run_stack
from tools.preflight.checks import Clients

DYNAMIC = "pulumi-python:dynamic:Resource"
ACCOUNT = "123456789012"
CLUSTER_A = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef012345"
CLUSTER_B = "arn:aws:sagemaker:us-west-2:123456789012:cluster/0123456789ab"
ROLE = "arn:aws:iam::123456789012:role/hpi-global-global-gateway"
GW_ARN = "arn:aws:sagemaker:us-east-1:123456789012:global-inference-gateway/k3x9p2m7q1ab"
GW_ID = "k3x9p2m7q1ab"
MEMBER_A = {
    "stack": "acme/hyperpod-inference/prod",
    "name": "inference-gateway",
    "namespace": "inference",
    "clusterArn": CLUSTER_A,
    "region": "us-east-1",
    "jwtRequired": True,
    "gatewayEnabled": True,
}
MEMBER_B = {**MEMBER_A, "stack": "acme/hyperpod-inference/prod-usw2", "clusterArn": CLUSTER_B, "region": "us-west-2"}
WEIGHTS = {"kvHeadroom": 0.4, "queueDepth": 0.3, "regionProximity": 0.2, "errorRate": 0.1}
PROPS: dict[str, Any] = {
    "resourceKind": "hyperpod:GlobalInferenceGateway",
    "name": "hpi-global",
    "region": "us-east-1",
    "executionRoleArn": ROLE,
    "members": [MEMBER_A, MEMBER_B],
    "routingWeights": WEIGHTS,
    "tags": {"managed-by": "pulumi", "team": "ml"},
    "environment": "prod",
    "accountId": ACCOUNT,
    "partition": "aws",
    "waitTimeoutSeconds": 600,
}


def sagemaker_model() -> Any:
    return boto3.client("sagemaker", region_name="us-east-1").meta.service_model


# --- typed shapes vs botocore's service model ---------------------------------------------------------


def _keys(td: Any) -> tuple[set[str], set[str]]:
    hints = typing.get_type_hints(td)
    return set(hints), set(td.__required_keys__)


@pytest.mark.parametrize(
    ("typed", "shape", "exact"),
    [
        (CreateRequest, "CreateGlobalInferenceGatewayRequest", True),
        (UpdateRequest, "UpdateGlobalInferenceGatewayRequest", True),
        (MemberRequest, "AddInferenceGatewayRequest", True),
        (MemberRequest, "RemoveInferenceGatewayRequest", True),
        (MemberShape, "GlobalInferenceGatewayMember", True),
        (WeightsShape, "GlobalInferenceGatewayRoutingWeights", True),
        (RoutingShape, "GlobalInferenceGatewayRouting", True),
        (TagShape, "Tag", True),
        (DescribeResponse, "DescribeGlobalInferenceGatewayResponse", False),
    ],
)
def test_typed_shapes_match_the_service_model(typed: Any, shape: str, exact: bool) -> None:
    model = sagemaker_model().shape_for(shape)
    keys, required = _keys(typed)
    if exact:
        assert keys == set(model.members), f"{typed.__name__} vs {shape}"
    else:
        assert keys <= set(model.members), f"{typed.__name__} reads members {shape} lacks"
    assert required == set(model.required_members) & keys, f"required keys of {typed.__name__} vs {shape}"


def test_operations_the_provider_calls_exist_in_the_model() -> None:
    ops = set(sagemaker_model().operation_names)
    for op in (
        "CreateGlobalInferenceGateway",
        "DescribeGlobalInferenceGateway",
        "UpdateGlobalInferenceGateway",
        "DeleteGlobalInferenceGateway",
        "AddInferenceGateway",
        "RemoveInferenceGateway",
        "ListInferenceGateways",
        "ListGlobalInferenceGateways",
        "AddTags",
        "DeleteTags",
    ):
        assert op in ops, op
    runtime = boto3.client("sagemaker-gateway-runtime", region_name="us-east-1").meta.service_model
    assert "InvokeGlobalInferenceGateway" in runtime.operation_names
    assert runtime.signing_name == "sagemaker"


def test_create_request_validates_against_the_model() -> None:
    request = create_request(PROPS, client_token())
    report = ParamValidator().validate(
        request, sagemaker_model().operation_model("CreateGlobalInferenceGateway").input_shape
    )
    assert not report.has_errors(), report.generate_report()
    assert request["Routing"] == {
        "Weights": {"KVHeadroom": 0.4, "QueueDepth": 0.3, "RegionProximity": 0.2, "ErrorRate": 0.1}
    }
    assert request["Gateways"][1] == {
        "Name": "inference-gateway",
        "Namespace": "inference",
        "ClusterArn": CLUSTER_B,
    }
    assert request["Tags"] == [{"Key": "managed-by", "Value": "pulumi"}, {"Key": "team", "Value": "ml"}]
    assert re.fullmatch(r"[a-zA-Z0-9-]{1,64}", request["ClientToken"])


def test_client_token_is_fresh_per_create() -> None:
    first, second = client_token(), client_token()
    assert first != second
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first)


def test_api_limits_come_from_the_model() -> None:
    limits = gp.api_limits()
    assert (limits.weight_min, limits.weight_max) == (0.0, 1.0)
    assert (limits.members_min, limits.members_max) == (1, 10)
    assert limits.tags_max == 50
    assert limits.name_max == 63


# --- the provider, with botocore's Stubber ------------------------------------------------------------


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
    provider: GlobalInferenceGatewayProvider
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
    provider = GlobalInferenceGatewayProvider(
        client_factory=lambda _s, region: client,
        sleep=fake.sleep,
        clock=fake.clock,
        log=logs.append,
        poll_seconds=10,
        token=lambda: TOKEN,
    )
    with stub:
        yield Rig(provider, stub, fake, logs)
        stub.assert_no_pending_responses()


def describe(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "Arn": GW_ARN,
        "Id": GW_ID,
        "Name": "hpi-global",
        "ExecutionRoleArn": ROLE,
        "Status": status,
        "CreationTime": datetime(2026, 12, 1, tzinfo=UTC),
        **extra,
    }


TOKEN = "2b7e1516-28ae-4d2a-abf7-158809cf4f3c"
CREATED = {"Arn": GW_ARN, "Id": GW_ID, "Name": "hpi-global", "Status": "CREATING"}


def expect_create(rig: Rig) -> None:
    rig.stub.add_response(
        "create_global_inference_gateway",
        CREATED,
        {
            "Name": "hpi-global",
            "ExecutionRoleArn": ROLE,
            "Gateways": [
                {"Name": "inference-gateway", "Namespace": "inference", "ClusterArn": CLUSTER_A},
                {"Name": "inference-gateway", "Namespace": "inference", "ClusterArn": CLUSTER_B},
            ],
            "Routing": {"Weights": {"KVHeadroom": 0.4, "QueueDepth": 0.3, "RegionProximity": 0.2, "ErrorRate": 0.1}},
            "ClientToken": TOKEN,
            "Tags": [{"Key": "managed-by", "Value": "pulumi"}, {"Key": "team", "Value": "ml"}],
        },
    )


def test_create_waits_for_active(rig: Rig) -> None:
    expect_create(rig)
    rig.stub.add_response("describe_global_inference_gateway", describe("CREATING"), {"Identifier": GW_ID})
    rig.stub.add_response(
        "describe_global_inference_gateway",
        describe("ACTIVE", EndpointUrl="https://k3x9p2m7q1ab.001.sm-gateway.us-east-1.on.aws"),
        {"Identifier": GW_ID},
    )
    result = rig.provider.create(dict(PROPS))
    assert result.id == GW_ID
    assert result.outs is not None
    assert result.outs["arn"] == GW_ARN
    assert result.outs["endpointUrl"] == "https://k3x9p2m7q1ab.001.sm-gateway.us-east-1.on.aws"
    assert result.outs["status"] == "ACTIVE"
    assert rig.time.sleeps == [10]
    assert any("CREATING, waiting" in line for line in rig.logs)
    assert any("ACTIVE after 10s" in line for line in rig.logs)


def test_create_failed_reports_the_reason_and_cleans_up(rig: Rig) -> None:
    expect_create(rig)
    rig.stub.add_response(
        "describe_global_inference_gateway",
        describe("FAILED", FailureReason="execution role can't be assumed"),
        {"Identifier": GW_ID},
    )
    rig.stub.add_response("delete_global_inference_gateway", {"Arn": GW_ARN, "Id": GW_ID}, {"Identifier": GW_ID})
    rig.stub.add_client_error("describe_global_inference_gateway", service_error_code="ResourceNotFound")
    with pytest.raises(GatewayError) as err:
        rig.provider.create(dict(PROPS))
    assert str(err.value) == (
        "create: global inference gateway hpi-global is FAILED: execution role can't be assumed; "
        "the failed gateway was deleted, fix the cause and rerun"
    )


def test_create_failed_and_cleanup_denied(rig: Rig) -> None:
    expect_create(rig)
    rig.stub.add_response("describe_global_inference_gateway", describe("FAILED"), {"Identifier": GW_ID})
    rig.stub.add_client_error("delete_global_inference_gateway", service_error_code="AccessDeniedException")
    with pytest.raises(
        GatewayError,
        match=r"is FAILED: no reason given; deleting the failed gateway k3x9p2m7q1ab also failed: access denied.*sagemaker:DeleteGlobalInferenceGateway",
    ):
        rig.provider.create(dict(PROPS))


def test_create_resource_in_use_is_one_clear_error(rig: Rig) -> None:
    rig.stub.add_client_error(
        "create_global_inference_gateway", service_error_code="ResourceInUse", service_message="taken"
    )
    with pytest.raises(GatewayError) as err:
        rig.provider.create(dict(PROPS))
    assert "resource in use" in str(err.value)
    assert "'hpi-global' is taken" in str(err.value)
    assert "tools.preflight.regional" in str(err.value)
    assert "already belongs to another global inference gateway" in str(err.value)


def test_create_access_denied_names_the_iam_action(rig: Rig) -> None:
    rig.stub.add_client_error(
        "create_global_inference_gateway", service_error_code="AccessDeniedException", http_status_code=403
    )
    with pytest.raises(GatewayError, match="IAM action sagemaker:CreateGlobalInferenceGateway"):
        rig.provider.create(dict(PROPS))


def test_create_conflicting_then_succeeds(rig: Rig) -> None:
    """ConflictException (documented as retryable; botocore does not retry it) is retried with backoff."""
    rig.stub.add_client_error(
        "create_global_inference_gateway", service_error_code="ConflictException", http_status_code=409
    )
    rig.stub.add_client_error(
        "create_global_inference_gateway", service_error_code="ConflictException", http_status_code=409
    )
    expect_create(rig)
    rig.stub.add_client_error(
        "describe_global_inference_gateway", service_error_code="ConflictException", http_status_code=409
    )
    rig.stub.add_response("describe_global_inference_gateway", describe("ACTIVE"), {"Identifier": GW_ID})
    result = rig.provider.create(dict(PROPS))
    assert result.id == GW_ID
    assert rig.time.sleeps == [1.0, 2.0, 1.0]  # exponential backoff, reset per call


def test_create_still_conflicting_gives_up(rig: Rig) -> None:
    for _ in range(7):
        rig.stub.add_client_error("create_global_inference_gateway", service_error_code="ConflictException")
    with pytest.raises(GatewayError, match="ConflictException after 6 retries"):
        rig.provider.create(dict(PROPS))


def test_throttling_botocore_could_not_absorb_is_one_error_at_once(rig: Rig) -> None:
    rig.stub.add_client_error("create_global_inference_gateway", service_error_code="ThrottlingException")
    with pytest.raises(GatewayError, match="still throttled after botocore's 10 attempts"):
        rig.provider.create(dict(PROPS))
    assert rig.time.sleeps == []


def test_create_wait_times_out(rig: Rig) -> None:
    expect_create(rig)
    for _ in range(61):  # 600 s budget / 10 s polls, plus the final look
        rig.stub.add_response("describe_global_inference_gateway", describe("CREATING"), {"Identifier": GW_ID})
    with pytest.raises(GatewayError, match=r"still CREATING after 600s") as err:
        rig.provider.create(dict(PROPS))
    assert "Pulumi does not track gateway k3x9p2m7q1ab" in str(err.value)
    assert "delete-global-inference-gateway --identifier k3x9p2m7q1ab --region us-east-1" in str(err.value)


def test_read_found_and_deleted_outside_pulumi(rig: Rig) -> None:
    rig.stub.add_response("describe_global_inference_gateway", describe("ACTIVE"), {"Identifier": GW_ID})
    rig.stub.add_client_error("describe_global_inference_gateway", service_error_code="ResourceNotFound")
    found = rig.provider.read(GW_ID, dict(PROPS))
    assert (found.id, found.outs and found.outs["arn"]) == (GW_ID, GW_ARN)
    gone = rig.provider.read(GW_ID, dict(PROPS))
    assert gone.id == ""
    assert gone.outs == {}


def test_diff_replaces_on_name_and_updates_the_rest() -> None:
    provider = GlobalInferenceGatewayProvider()
    same = provider.diff(GW_ID, dict(PROPS), copy.deepcopy(PROPS))
    assert same.changes is False
    renamed = provider.diff(GW_ID, dict(PROPS), {**PROPS, "name": "hpi-global-2"})
    assert renamed.replaces == ["name"]
    assert renamed.delete_before_replace is True  # members belong to one global gateway at a time
    role = provider.diff(GW_ID, dict(PROPS), {**PROPS, "executionRoleArn": ROLE + "-2"})
    assert role.replaces == ["executionRoleArn"]
    for changed in (
        {"routingWeights": {**WEIGHTS, "kvHeadroom": 0.3, "queueDepth": 0.4}},
        {"members": [MEMBER_A]},
        {"tags": {"managed-by": "pulumi"}},
    ):
        result = provider.diff(GW_ID, dict(PROPS), {**PROPS, **changed})
        assert (result.changes, result.replaces) == (True, []), changed


def _list(member: dict[str, Any], status: str | None) -> dict[str, Any]:
    summaries = []
    if status is not None:
        summaries.append(
            {
                "Name": member["name"],
                "Namespace": member["namespace"],
                "ClusterArn": member["clusterArn"],
                "Status": status,
            }
        )
    return {"InferenceGatewaySummaries": summaries}


def _member_params(member: dict[str, Any]) -> dict[str, Any]:
    return {
        "Identifier": GW_ID,
        "ClusterArn": member["clusterArn"],
        "Namespace": member["namespace"],
        "Name": member["name"],
    }


def _list_params(member: dict[str, Any]) -> dict[str, Any]:
    return {"Identifier": GW_ID, "Filters": [{"Name": "ClusterArn", "Value": member["clusterArn"]}]}


def test_update_adds_then_removes_members(rig: Rig) -> None:
    member_c = {
        **MEMBER_B,
        "stack": "acme/hyperpod-inference/prod-use2",
        "clusterArn": CLUSTER_B.replace("0123", "9999"),
    }
    olds, news = dict(PROPS), {**PROPS, "members": [MEMBER_A, member_c]}
    member_reply = {"Arn": GW_ARN, "Id": GW_ID, "Name": "hpi-global"}
    rig.stub.add_response(
        "add_inference_gateway",
        {
            **member_reply,
            "Gateway": {k: v for k, v in _member_params(member_c).items() if k != "Identifier"},
            "Status": "ADDING",
        },
        _member_params(member_c),
    )
    rig.stub.add_response("list_inference_gateways", _list(member_c, "ADDING"), _list_params(member_c))
    rig.stub.add_response("list_inference_gateways", _list(member_c, "ACTIVE"), _list_params(member_c))
    rig.stub.add_response(
        "remove_inference_gateway",
        {
            **member_reply,
            "Gateway": {k: v for k, v in _member_params(MEMBER_B).items() if k != "Identifier"},
            "Status": "REMOVING",
        },
        _member_params(MEMBER_B),
    )
    rig.stub.add_response("list_inference_gateways", _list(MEMBER_B, "REMOVING"), _list_params(MEMBER_B))
    rig.stub.add_response("list_inference_gateways", _list(MEMBER_B, None), _list_params(MEMBER_B))
    rig.stub.add_response("describe_global_inference_gateway", describe("ACTIVE"), {"Identifier": GW_ID})
    result = rig.provider.update(GW_ID, olds, news)
    assert result.outs is not None
    assert result.outs["members"] == [MEMBER_A, member_c]
    assert rig.time.sleeps == [10, 10]


def test_update_member_failed_reports_the_reason(rig: Rig) -> None:
    member_c = {**MEMBER_B, "clusterArn": CLUSTER_B.replace("0123", "9999")}
    rig.stub.add_response(
        "add_inference_gateway",
        {
            "Arn": GW_ARN,
            "Id": GW_ID,
            "Name": "hpi-global",
            "Gateway": {k: v for k, v in _member_params(member_c).items() if k != "Identifier"},
        },
        _member_params(member_c),
    )
    failed = _list(member_c, "FAILED")
    failed["InferenceGatewaySummaries"][0]["FailureReason"] = "gateway not found in cluster"
    rig.stub.add_response("list_inference_gateways", failed, _list_params(member_c))
    with pytest.raises(GatewayError, match="is FAILED: gateway not found in cluster"):
        rig.provider.update(GW_ID, dict(PROPS), {**PROPS, "members": [MEMBER_A, MEMBER_B, member_c]})


def test_update_member_in_use(rig: Rig) -> None:
    member_c = {**MEMBER_B, "clusterArn": CLUSTER_B.replace("0123", "9999")}
    rig.stub.add_client_error("add_inference_gateway", service_error_code="ResourceInUse", service_message="member")
    with pytest.raises(
        GatewayError,
        match="AddInferenceGateway: resource in use — gateway inference/inference-gateway on "
        + re.escape(member_c["clusterArn"])
        + " already belongs to another global inference gateway",
    ):
        rig.provider.update(GW_ID, dict(PROPS), {**PROPS, "members": [MEMBER_A, MEMBER_B, member_c]})


def test_update_weights_and_tags(rig: Rig) -> None:
    weights = {"kvHeadroom": 0.25, "queueDepth": 0.25, "regionProximity": 0.25, "errorRate": 0.25}
    news = {**PROPS, "routingWeights": weights, "tags": {"managed-by": "pulumi", "owner": "platform"}}
    rig.stub.add_response(
        "update_global_inference_gateway",
        {"Arn": GW_ARN, "Id": GW_ID, "Name": "hpi-global", "Status": "UPDATING"},
        {
            "Identifier": GW_ID,
            "Routing": {
                "Weights": {"KVHeadroom": 0.25, "QueueDepth": 0.25, "RegionProximity": 0.25, "ErrorRate": 0.25}
            },
        },
    )
    rig.stub.add_response("describe_global_inference_gateway", describe("UPDATING"), {"Identifier": GW_ID})
    rig.stub.add_response("describe_global_inference_gateway", describe("ACTIVE"), {"Identifier": GW_ID})
    rig.stub.add_response("describe_global_inference_gateway", describe("ACTIVE"), {"Identifier": GW_ID})
    rig.stub.add_response("delete_tags", {}, {"ResourceArn": GW_ARN, "TagKeys": ["team"]})
    rig.stub.add_response(
        "add_tags", {"Tags": []}, {"ResourceArn": GW_ARN, "Tags": [{"Key": "owner", "Value": "platform"}]}
    )
    result = rig.provider.update(GW_ID, dict(PROPS), news)
    assert result.outs is not None
    assert result.outs["routingWeights"] == weights


def test_update_to_default_weights_sends_empty_weights(rig: Rig) -> None:
    rig.stub.add_response(
        "update_global_inference_gateway",
        {"Arn": GW_ARN, "Id": GW_ID, "Name": "hpi-global", "Status": "UPDATING"},
        {"Identifier": GW_ID, "Routing": {"Weights": {}}},
    )
    rig.stub.add_response("describe_global_inference_gateway", describe("ACTIVE"), {"Identifier": GW_ID})
    rig.stub.add_response("describe_global_inference_gateway", describe("ACTIVE"), {"Identifier": GW_ID})
    result = rig.provider.update(GW_ID, dict(PROPS), {**PROPS, "routingWeights": None})
    rig.stub.assert_no_pending_responses()
    assert result.outs == {
        **PROPS,
        "routingWeights": None,
        "arn": GW_ARN,
        "gatewayId": GW_ID,
        "status": "ACTIVE",
        "endpointUrl": "",
        "vpcEndpointServiceName": "",
    }
    assert rig.time.sleeps == []
    assert rig.logs[0] == "updating routing weights of hpi-global"


def test_update_changes_the_value_of_an_existing_tag(rig: Rig) -> None:
    """The same key with another value is re-sent with AddTags (which overwrites); nothing is deleted."""
    news = {**PROPS, "tags": {"managed-by": "pulumi", "team": "platform"}}
    rig.stub.add_response("describe_global_inference_gateway", describe("ACTIVE"), {"Identifier": GW_ID})
    rig.stub.add_response(
        "add_tags", {"Tags": []}, {"ResourceArn": GW_ARN, "Tags": [{"Key": "team", "Value": "platform"}]}
    )
    result = rig.provider.update(GW_ID, dict(PROPS), news)
    rig.stub.assert_no_pending_responses()
    assert result.outs is not None
    assert result.outs["tags"] == {"managed-by": "pulumi", "team": "platform"}
    assert rig.time.sleeps == []


def test_delete_waits_until_gone(rig: Rig) -> None:
    rig.stub.add_response("delete_global_inference_gateway", {"Arn": GW_ARN, "Id": GW_ID}, {"Identifier": GW_ID})
    rig.stub.add_response("describe_global_inference_gateway", describe("DELETING"), {"Identifier": GW_ID})
    rig.stub.add_client_error("describe_global_inference_gateway", service_error_code="ResourceNotFound")
    rig.provider.delete(GW_ID, dict(PROPS))
    assert rig.time.sleeps == [10]
    assert any("is gone after 10s" in line for line in rig.logs)


def test_delete_conflict_retried_then_times_out(rig: Rig) -> None:
    rig.stub.add_client_error("delete_global_inference_gateway", service_error_code="ConflictException")
    rig.stub.add_response("delete_global_inference_gateway", {"Arn": GW_ARN, "Id": GW_ID}, {"Identifier": GW_ID})
    for _ in range(61):
        rig.stub.add_response("describe_global_inference_gateway", describe("DELETING"), {"Identifier": ANY})
    with pytest.raises(GatewayError, match="still DELETING after"):
        rig.provider.delete(GW_ID, dict(PROPS))


def test_provider_pickles_without_clients() -> None:
    import dill

    provider = GlobalInferenceGatewayProvider()
    provider._clients["us-east-1"] = object()
    clone = dill.loads(dill.dumps(provider, recurse=True))
    assert clone._clients == {}


# --- the config contract -------------------------------------------------------------------------------


def global_values(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "role": "global",
        "environment": "prod",
        "members": [{"stack": "acme/hyperpod-inference/prod"}, {"stack": "acme/hyperpod-inference/prod-usw2"}],
        "routing": {"weights": dict(WEIGHTS)},
    }
    values.update(overrides)
    return values


def parse(**overrides: Any) -> GlobalStackConfig:
    return parse_global_config(global_values(**overrides), stack="global", region="us-east-1")


def issues(**overrides: Any) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse(**overrides)
    return [i.render() for i in err.value.issues]


def test_reference_global_stack_file_parses() -> None:
    mapping = stack_mapping("global")
    from tools.preflight.global_stack import load_global

    cfg = load_global("global", mapping)
    assert cfg.name == "hpi-global"
    assert cfg.region == "us-east-1"
    assert cfg.weights == {"kvHeadroom": 0.4, "queueDepth": 0.3, "regionProximity": 0.2, "errorRate": 0.1}
    assert [m.stack for m in cfg.members] == ["acme/hyperpod-inference/prod", "acme/hyperpod-inference/prod-usw2"]


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ({"kvHeadroom": 0.5, "queueDepth": 0.5}, "set all four weights or none; missing regionProximity, errorRate"),
        ({**WEIGHTS, "kvHeadroom": -0.1, "queueDepth": 0.8}, "kvHeadroom: must not be negative"),
        ({**WEIGHTS, "kvHeadroom": 1.5}, "kvHeadroom: must be at most 1"),
        ({**WEIGHTS, "kvHeadroom": 0.5}, "weights must sum to 1.0 (within 0.001); they sum to 1.1"),
        ({"kvHeadroom": 0, "queueDepth": 0, "regionProximity": 0, "errorRate": 0}, "all weights are 0"),
    ],
)
def test_weights_rules_reject(weights: dict[str, Any], expected: str) -> None:
    found = issues(routing={"weights": weights})
    assert any("hyperpod-inference:routing.weights: " in i and expected in i for i in found), found


@pytest.mark.parametrize(
    "weights",
    [
        None,
        {"kvHeadroom": 1, "queueDepth": 0, "regionProximity": 0, "errorRate": 0},
        {"kvHeadroom": 0.2505, "queueDepth": 0.25, "regionProximity": 0.25, "errorRate": 0.25},  # within 0.001
    ],
)
def test_weights_rules_accept(weights: dict[str, Any] | None) -> None:
    cfg = parse(routing={"weights": weights} if weights is not None else {})
    assert cfg.weights == weights


def test_prod_needs_two_members_dev_does_not() -> None:
    one = [{"stack": "acme/hyperpod-inference/prod"}]
    assert issues(members=one) == [
        "hyperpod-inference:members: prod needs at least 2 members (got 1): one member is not multi-region"
    ]
    assert parse(members=one, environment="dev").members[0].stack == "acme/hyperpod-inference/prod"
    assert any("at least 1 member" in i for i in issues(members=[], environment="dev"))
    eleven = [{"stack": f"acme/hyperpod-inference/r{i}"} for i in range(11)]
    assert any("at most 10 members" in i for i in issues(members=eleven))


def test_config_errors_name_the_key_path() -> None:
    assert issues(bogus=1)[0].startswith("hyperpod-inference:bogus: unknown key for a global stack")
    assert any(
        i.startswith("hyperpod-inference:members[0].stak: unknown key")
        for i in issues(members=[{"stak": "x"}, {"stack": "y"}])
    )
    assert any("listed twice" in i for i in issues(members=[{"stack": "a/b/c"}, {"stack": "a/b/c"}]))
    assert any("can't be exactly 12 lowercase" in i for i in issues(gatewayName="abcdefabcdef"))
    assert any(i.startswith("hyperpod-inference:gatewayName: must match") for i in issues(gatewayName="bad_name"))
    assert any(
        i.startswith("hyperpod-inference:executionRoleArn:") for i in issues(executionRoleArn="arn:aws:iam::1:role/x")
    )
    assert parse(gatewayName="hpi-global-2").name == "hpi-global-2"


def test_regional_stack_may_write_its_role(run: Any) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:role"] = "regional"
    result = registered(run("dev", mapping))
    assert result.of_type("hyperpod:index:HyperPodInference")
    assert not result.of_type("hyperpod:index:GlobalInference")


# --- the program under mocks ---------------------------------------------------------------------------


@pytest.fixture(scope=cached_scope("module"))
def global_run() -> StackRun:
    return registered(run_stack("global", stack_mapping("global")))


def gateway_reg(run: StackRun) -> Any:
    return run.named(DYNAMIC, "global-gateway")


def test_global_stack_registers_the_gateway_role_and_invoke_policy(global_run: StackRun) -> None:
    types = sorted(r.type for r in global_run.registrations)
    assert types == ["aws:iam/policy:Policy", "aws:iam/role:Role", "hyperpod:index:GlobalInference", DYNAMIC]
    component = global_run.named("hyperpod:index:GlobalInference", "global")
    for reg in global_run.registrations:
        if reg is not component:
            assert reg.parent == component.urn, reg.name
    gw = gateway_reg(global_run)
    assert gw.protect is True  # prod
    assert gw.custom_timeouts == {"create": "50m", "update": "50m", "delete": "50m"}
    inputs = gw.inputs
    assert inputs["resourceKind"] == "hyperpod:GlobalInferenceGateway"
    assert inputs["name"] == "hpi-global"
    assert inputs["region"] == "us-east-1"
    assert inputs["routingWeights"] == {"kvHeadroom": 0.4, "queueDepth": 0.3, "regionProximity": 0.2, "errorRate": 0.1}
    assert inputs["executionRoleArn"] == "arn:aws:iam::123456789012:role/hpi-global-global-gateway"
    assert inputs["waitTimeoutSeconds"] == 2700
    assert (inputs["accountId"], inputs["partition"], inputs["environment"]) == ("123456789012", "aws", "prod")
    assert inputs["members"] == [
        {
            "stack": "acme/hyperpod-inference/prod",
            "name": "inference-gateway",
            "namespace": "inference",
            "clusterArn": "arn:aws:sagemaker:us-east-1:123456789012:cluster/" + mocks._hex("hpi-prod-hp", n=12),
            "region": "us-east-1",
            "jwtRequired": True,
            "gatewayEnabled": True,
        },
        {
            "stack": "acme/hyperpod-inference/prod-usw2",
            "name": "inference-gateway",
            "namespace": "inference",
            "clusterArn": "arn:aws:sagemaker:us-west-2:123456789012:cluster/" + mocks._hex("hpi-prod-usw2-hp", n=12),
            "region": "us-west-2",
            "jwtRequired": True,
            "gatewayEnabled": True,
        },
    ]
    assert inputs["tags"] == {
        "cost-center": "inference",
        "hyperpod-inference:stack": "global",
        "hyperpod-inference:environment": "prod",
        "managed-by": "pulumi",
    }
    assert "__provider" in inputs  # the pickled provider travels with the resource
    assert "awsProfile" not in inputs  # no aws:profile: nothing sent, the provider uses the default chain


def test_global_stack_exports_and_invoke_policy(global_run: StackRun) -> None:
    out = global_run.outputs
    gid = out["globalGatewayId"]
    assert re.fullmatch(r"[a-z0-9]{12}", gid)
    assert out["globalGatewayArn"] == f"arn:aws:sagemaker:us-east-1:123456789012:global-inference-gateway/{gid}"
    assert out["globalGatewayEndpointUrl"] == f"https://{gid}.001.sm-gateway.us-east-1.on.aws"
    assert out["invokePolicyArn"] == "arn:aws:iam::123456789012:policy/hpi-global-invoke-global-gateway"
    assert out["memberStacks"] == ["acme/hyperpod-inference/prod", "acme/hyperpod-inference/prod-usw2"]
    policy = json.loads(global_run.named("aws:iam/policy:Policy", "global-invoke-policy").inputs["policy"])
    assert policy["Statement"] == [
        {
            "Sid": "InvokeGlobalInferenceGateway",
            "Effect": "Allow",
            "Action": [
                "sagemaker:InvokeGlobalInferenceGateway",
                "sagemaker:InvokeGlobalInferenceGatewayWithResponseStream",
            ],
            "Resource": out["globalGatewayArn"],
        }
    ]


def test_execution_role_documents(global_run: StackRun) -> None:
    role = global_run.named("aws:iam/role:Role", "global-execution-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert trust["Statement"][0]["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    inline = json.loads(role.inputs["inlinePolicies"][0]["policy"])
    assert inline["Statement"][0]["Action"] == ["sagemaker:DescribeCluster"]
    assert inline["Statement"][0]["Resource"] == sorted(
        m["clusterArn"] for m in gateway_reg(global_run).inputs["members"]
    )


def test_global_stack_policies_are_parliament_clean(global_run: StackRun) -> None:
    docs = list(policy_documents(global_run))
    assert len(docs) == 3  # trust, inline, invoke
    for where, doc in docs:
        assert_policy_clean(doc, where)


def test_bring_your_own_execution_role(run: Any) -> None:
    mapping = stack_mapping("global")
    mapping["hyperpod-inference:executionRoleArn"] = "arn:aws:iam::123456789012:role/my-gateway-role"
    result = registered(run("global", mapping))
    assert not result.of_type("aws:iam/role:Role")
    assert gateway_reg(result).inputs["executionRoleArn"] == "arn:aws:iam::123456789012:role/my-gateway-role"


def test_dev_global_stack_is_not_protected(run: Any) -> None:
    mapping = stack_mapping("global")
    mapping["hyperpod-inference:environment"] = "dev"
    mapping["hyperpod-inference:members"] = [{"stack": "acme/hyperpod-inference/prod"}]
    result = registered(run("global", mapping))
    assert gateway_reg(result).protect is False
    assert len(gateway_reg(result).inputs["members"]) == 1


@pytest.fixture
def member_outputs(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    patched = copy.deepcopy(mocks.STACK_OUTPUTS)
    monkeypatch.setattr(mocks, "STACK_OUTPUTS", patched)
    return patched


def member(patched: dict[str, dict[str, Any]], i: int) -> dict[str, Any]:
    stack = ["acme/hyperpod-inference/prod", "acme/hyperpod-inference/prod-usw2"][i]
    export: dict[str, Any] = patched[stack]["globalGatewayMember"]
    return export


def member_errors(result: StackRun) -> list[str]:
    assert result.config_error is not None, "expected a member config error"
    # nothing but the component itself is registered: no role, no gateway, no policy
    assert [r.type for r in result.registrations] == ["hyperpod:index:GlobalInference"]
    return [i.render() for i in result.config_error.issues]


OTHER_ACCOUNT = "arn:aws:sagemaker:us-west-2:210987654321:cluster/0123456789ab"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"gatewayEnabled": False},
            "globalGatewayMember.gatewayEnabled: the stack's in-cluster Inference Gateway is off",
        ),
        ({"jwtRequired": False}, "globalGatewayMember.jwtRequired: in prod every member's gateway must require JWT"),
        ({"clusterArn": OTHER_ACCOUNT}, "cluster is in account 210987654321; the global gateway is in 123456789012"),
        (
            {"clusterArn": "arn:aws-cn:sagemaker:cn-north-1:123456789012:cluster/0123456789ab", "region": "cn-north-1"},
            "cluster is in partition aws-cn; the global gateway is in aws",
        ),
        (
            {"clusterArn": "arn:aws:sagemaker:ap-east-1:123456789012:cluster/0123456789ab", "region": "ap-east-1"},
            "ap-east-1 is an opt-in Region",
        ),
        ({"clusterArn": "not-an-arn"}, "not a HyperPod cluster ARN"),
        ({"namespace": ""}, "globalGatewayMember.namespace: missing"),
        # issue 47 item 8: internal-elb subnets in one AZ only
        (
            {"internalElbAzIds": ["usw2-az1"]},
            "globalGatewayMember.internalElbAzIds: global routing fails with GlobalRoutingInsufficientAZs unless "
            "subnets in at least 2 AZs carry kubernetes.io/role/internal-elb; the stack's private subnets are in "
            "usw2-az1: add an AZ ID to its network.availabilityZoneIds",
        ),
        ({"internalElbAzIds": ["usw2-az1", "usw2-az1"]}, "GlobalRoutingInsufficientAZs"),
    ],
)
def test_member_guardrail_config_errors(
    run: Any, member_outputs: dict[str, Any], change: dict[str, Any], expected: str
) -> None:
    member(member_outputs, 1).update(change)
    found = member_errors(run("global", stack_mapping("global")))
    assert any(
        i.startswith("hyperpod-inference:members[1].stack: stack 'acme/hyperpod-inference/prod-usw2': ")
        and expected in i
        for i in found
    ), found


def test_member_without_export_is_a_clear_error(run: Any, member_outputs: dict[str, Any]) -> None:
    mapping = stack_mapping("global")
    mapping["hyperpod-inference:members"] = [{"stack": "acme/hyperpod-inference/prod"}, {"stack": "acme/other/stack"}]
    found = member_errors(run("global", mapping))
    assert found == [
        "hyperpod-inference:members[1].stack: stack 'acme/other/stack' exports no globalGatewayMember: is it a "
        "regional stack of hyperpod-inference, and has `pulumi up` run on it since this version?"
    ]


def test_same_gateway_twice_is_an_error(run: Any, member_outputs: dict[str, Any]) -> None:
    member_outputs["acme/hyperpod-inference/prod-usw2"] = copy.deepcopy(member_outputs["acme/hyperpod-inference/prod"])
    found = member_errors(run("global", stack_mapping("global")))
    assert found == [
        "hyperpod-inference:members[1].stack: stack 'acme/hyperpod-inference/prod-usw2' exports the same gateway as members[0]"
    ]


@pytest.mark.parametrize("azs", [["usw2-az1", "usw2-az2"], None])
def test_two_internal_elb_azs_or_a_vpc_not_its_own_pass(run: Any, member_outputs: dict[str, Any], azs: Any) -> None:
    """Two AZs hold; None (network.existing: the subnet tags are the VPC owner's) is not refused here."""
    member(member_outputs, 1)["internalElbAzIds"] = azs
    result = registered(run("global", stack_mapping("global")))
    assert result.config_error is None and gateway_reg(result).inputs["members"][1]


def test_jwt_is_not_required_outside_prod(run: Any, member_outputs: dict[str, Any]) -> None:
    member(member_outputs, 1)["jwtRequired"] = False
    mapping = stack_mapping("global")
    mapping["hyperpod-inference:environment"] = "staging"
    result = registered(run("global", mapping))
    assert gateway_reg(result).inputs["members"][1]["jwtRequired"] is False


# --- the policy pack, on the registered dynamic resource ----------------------------------------------


def test_pack_is_quiet_on_the_reference_global_stack(global_run: StackRun) -> None:
    assert evaluate(POLICIES, global_run.registrations, "prod") == []


def _with(reg: Any, **changes: Any) -> Any:
    inputs = copy.deepcopy(reg.inputs)
    inputs.update(changes)
    return dataclasses.replace(reg, inputs=inputs)


def _with_member(reg: Any, index: int, **changes: Any) -> Any:
    members = copy.deepcopy(reg.inputs["members"])
    members[index].update(changes)
    return _with(reg, members=members)


def _violations(reg: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in evaluate(GLOBAL_POLICIES, [reg], "prod"):
        assert r.level == "mandatory"
        out.setdefault(r.policy, []).append(r.message)
    return out


@pytest.mark.parametrize(
    ("mutate", "policy", "message"),
    [
        (
            lambda r: _with(r, routingWeights={**WEIGHTS, "kvHeadroom": -0.2, "errorRate": 0.5}),
            "global-gateway-routing-weights",
            "routingWeights.kvHeadroom: must not be negative",
        ),
        (
            lambda r: _with(r, routingWeights={"kvHeadroom": 0, "queueDepth": 0, "regionProximity": 0, "errorRate": 0}),
            "global-gateway-routing-weights",
            "all weights are 0",
        ),
        (
            lambda r: _with_member(r, 0, clusterArn=OTHER_ACCOUNT),
            "global-gateway-members-same-account",
            "members[0] (acme/hyperpod-inference/prod): cluster is in account 210987654321",
        ),
        (
            lambda r: _with_member(
                r, 1, region="me-south-1", clusterArn="arn:aws:sagemaker:me-south-1:123456789012:cluster/0123456789ab"
            ),
            "global-gateway-members-not-opt-in",
            "me-south-1 is an opt-in Region",
        ),
        (
            lambda r: _with_member(r, 1, gatewayEnabled=False),
            "global-gateway-members-gateway-enabled",
            "in-cluster Inference Gateway is off",
        ),
        (lambda r: _with_member(r, 0, jwtRequired=False), "global-gateway-members-require-jwt", "must require JWT"),
        (
            lambda r: _with(r, members=r.inputs["members"][:1]),
            "global-gateway-min-members",
            "prod needs at least 2 members",
        ),
    ],
)
def test_pack_policies_fire(global_run: StackRun, mutate: Any, policy: str, message: str) -> None:
    reg = gateway_reg(global_run)
    assert _violations(reg) == {}  # the unmutated resource passes every policy
    found = _violations(mutate(reg))
    assert policy in found, found
    assert any(message in m for m in found[policy]), found[policy]
    assert set(found) == {policy}, found


def test_pack_policies_relax_outside_prod(global_run: StackRun) -> None:
    reg = _with_member(gateway_reg(global_run), 0, jwtRequired=False)
    reg = _with(reg, environment="dev", members=reg.inputs["members"][:1])
    assert _violations(reg) == {}
    assert _violations(_with(reg, environment="prod")).keys() == {
        "global-gateway-members-require-jwt",
        "global-gateway-min-members",
    }


def test_pack_ignores_other_dynamic_resources(global_run: StackRun) -> None:
    reg = _with(gateway_reg(global_run), resourceKind="something-else", members=[])
    assert _violations(reg) == {}


def test_policy_levels_are_in_every_environment_config() -> None:
    for env in ("dev", "staging", "prod"):
        cfg = json.loads((Path(__file__).resolve().parents[1] / "policies" / f"config.{env}.json").read_text())
        for policy in GLOBAL_POLICIES:
            assert cfg[policy.name] == {"enforcementLevel": "mandatory"}, (env, policy.name)
    assert {p.name for p in GLOBAL_POLICIES} <= {p.name for p in POLICIES}


# --- the regional stacks' member export ---------------------------------------------------------------


def test_regional_prod_exports_what_a_member_needs(stack_runs: dict[str, StackRun]) -> None:
    exported = stack_runs["prod"].outputs["globalGatewayMember"]
    hp = stack_runs["prod"].of_type("aws-native:sagemaker:Cluster")
    assert len(hp) == 1
    assert exported == {
        "gatewayEnabled": True,
        "name": "inference-gateway",
        "namespace": "inference",
        "region": "us-east-1",
        "jwtRequired": True,
        "environment": "prod",
        "clusterArn": hp[0].outputs["clusterArn"],
        "internalElbAzIds": ["use1-az2", "use1-az4", "use1-az6"],
    }
    # the mocks answer the global stack's StackReference with exactly what the prod stack exports
    assert mocks.STACK_OUTPUTS["acme/hyperpod-inference/prod"]["globalGatewayMember"] == exported


def test_regional_dev_exports_gateway_off(stack_runs: dict[str, StackRun]) -> None:
    exported = stack_runs["dev"].outputs["globalGatewayMember"]
    assert exported["gatewayEnabled"] is False
    assert exported["jwtRequired"] is False
    assert exported["region"] == "us-west-2"
    assert exported["clusterArn"].startswith("arn:aws:sagemaker:us-west-2:123456789012:cluster/")


def test_regional_prod_without_jwt_exports_jwt_not_required(run: Any) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:gateway"]["spec"].pop("auth")
    mapping["hyperpod-inference:environment"] = "staging"  # prod itself refuses a gateway without JWT
    result = registered(run("prod", mapping))
    assert result.outputs["globalGatewayMember"]["jwtRequired"] is False
    assert result.outputs["globalGatewayMember"]["gatewayEnabled"] is True


# --- offline preview ------------------------------------------------------------------------------------


def test_offline_preview_of_the_global_stack(capsys: pytest.CaptureFixture[str]) -> None:
    from tools.cli.preview import preview

    assert preview("global", as_json=True) == 0
    data = json.loads(capsys.readouterr().out)["hyperpodInference"]
    assert data["counts"] == {
        "aws:iam/policy:Policy": 1,
        "aws:iam/role:Role": 1,
        "hyperpod:index:GlobalInference": 1,
        DYNAMIC: 1,
    }
    assert data["policyResults"] == []
    assert data["outputs"]["globalGatewayRegion"] == "us-east-1"


# --- preflight of the global stack ----------------------------------------------------------------------


class StubbedClients:
    """One ``Clients`` per Region, every client with an active Stubber."""

    def __init__(self) -> None:
        self.session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        )
        self.by_region: dict[str, Clients] = {}
        self.stubs: dict[tuple[str, str], Stubber] = {}

    def __call__(self, region: str) -> Clients:
        if region not in self.by_region:
            self.by_region[region] = Clients(self.session, region)
            self.by_region[region]._identity = {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/ci"}
        return self.by_region[region]

    def stub(self, region: str, service: str) -> Stubber:
        if (region, service) not in self.stubs:
            stubber = Stubber(self(region)(service))
            stubber.activate()
            self.stubs[(region, service)] = stubber
        return self.stubs[(region, service)]

    def verify(self) -> None:
        for stubber in self.stubs.values():
            stubber.assert_no_pending_responses()


OTHER_GW = {"Arn": GW_ARN.replace("k3x9", "zzzz"), "Id": "zzzzp2m7q1ab", "Name": "someone-else", "Status": "ACTIVE"}


def _outputs_file(tmp_path: Path) -> Path:
    path = tmp_path / "members.json"
    path.write_text(
        json.dumps({"acme/hyperpod-inference/prod": MEMBER_A, "acme/hyperpod-inference/prod-usw2": MEMBER_B})
    )
    return path


def _stub_members(c: StubbedClients, *, owner_of_b: bool = False, b_missing: bool = False) -> None:
    c.stub("us-east-1", "sagemaker").add_response(
        "list_global_inference_gateways", {"GlobalInferenceGatewaySummaries": [OTHER_GW]}, {}
    )
    for region, arn in (("us-east-1", CLUSTER_A), ("us-west-2", CLUSTER_B)):
        c.stub("us-east-1", "ec2").add_response(
            "describe_regions",
            {"Regions": [{"RegionName": region, "OptInStatus": "opt-in-not-required"}]},
            {"AllRegions": True, "RegionNames": [region]},
        )
        if region == "us-west-2" and b_missing:
            c.stub(region, "sagemaker").add_client_error("describe_cluster", service_error_code="ResourceNotFound")
            continue
        c.stub(region, "sagemaker").add_response(
            "describe_cluster",
            {
                "ClusterArn": arn,
                "ClusterName": f"hpi-{region}-hp",
                "ClusterStatus": "InService",
                "InstanceGroups": [],
            },
            {"ClusterName": arn},
        )
    # membership: every global gateway in the global Region and the members' Regions
    for region in ("us-east-1",) if b_missing else ("us-east-1", "us-west-2"):
        summaries = [OTHER_GW] if region == "us-east-1" else []
        c.stub(region, "sagemaker").add_response(
            "list_global_inference_gateways", {"GlobalInferenceGatewaySummaries": summaries}, {}
        )
    arns = [CLUSTER_A] if b_missing else [CLUSTER_A, CLUSTER_B]
    for arn in arns:
        owned = owner_of_b and arn == CLUSTER_B
        c.stub("us-east-1", "sagemaker").add_response(
            "list_inference_gateways",
            {
                "InferenceGatewaySummaries": [
                    {
                        "Name": "inference-gateway",
                        "Namespace": "inference",
                        "ClusterArn": arn,
                        "Status": "ACTIVE",
                    }
                ]
                if owned
                else []
            },
            {"Identifier": OTHER_GW["Arn"], "Filters": [{"Name": "ClusterArn", "Value": arn}]},
        )


def _preflight(c: StubbedClients, tmp_path: Path) -> tuple[int, str]:
    from tools.preflight.global_stack import preflight_global

    console = Console(record=True, width=500)
    code = preflight_global("global", member_outputs_file=_outputs_file(tmp_path), clients_for=c, console=console)
    return code, console.export_text()


def test_preflight_global_passes(tmp_path: Path) -> None:
    c = StubbedClients()
    _stub_members(c)
    code, text = _preflight(c, tmp_path)
    assert code == 0, text
    assert "ListGlobalInferenceGateways answers in us-east-1" in text
    assert "us-west-2 is a default Region" in text
    assert text.count("is in no other global gateway") == 2
    c.verify()


def test_preflight_global_finds_a_taken_member_gateway(tmp_path: Path) -> None:
    c = StubbedClients()
    _stub_members(c, owner_of_b=True)
    code, text = _preflight(c, tmp_path)
    assert code == 1
    assert "already belongs to global gateway someone-else (us-east-1)" in text
    c.verify()


def test_preflight_global_finds_a_missing_cluster(tmp_path: Path) -> None:
    c = StubbedClients()
    _stub_members(c, b_missing=True)
    code, text = _preflight(c, tmp_path)
    assert code == 1
    assert f"HyperPod cluster {CLUSTER_B} not found in us-west-2" in text
    c.verify()


def test_preflight_global_api_not_answering(tmp_path: Path) -> None:
    from tools.preflight.global_stack import check_api

    c = StubbedClients()
    c.stub("us-east-1", "sagemaker").add_client_error(
        "list_global_inference_gateways", service_error_code="UnknownOperationException"
    )
    rows = check_api(c, parse())
    assert [(r.status, r.check) for r in rows] == [("FAIL", "global gateway API")]
    assert "does not answer in us-east-1" in rows[0].detail
    c.stub("us-east-1", "sagemaker").add_client_error(
        "list_global_inference_gateways", service_error_code="AccessDeniedException", http_status_code=403
    )
    rows = check_api(c, parse())
    assert rows[0].detail == "access denied: the caller lacks sagemaker:ListGlobalInferenceGateways"


def test_preflight_global_opt_in_region(tmp_path: Path) -> None:
    from tools.preflight.global_stack import Member, check_member

    c = StubbedClients()
    c.stub("us-east-1", "ec2").add_response(
        "describe_regions",
        {"Regions": [{"RegionName": "ap-east-1", "OptInStatus": "opted-in"}]},
        {"AllRegions": True, "RegionNames": ["ap-east-1"]},
    )
    c.stub("ap-east-1", "sagemaker").add_response(
        "describe_cluster",
        {
            "ClusterArn": CLUSTER_A.replace("us-east-1", "ap-east-1"),
            "ClusterName": "x",
            "ClusterStatus": "InService",
            "InstanceGroups": [],
        },
        {"ClusterName": "hpi-x-hp"},
    )
    rows, _ = check_member(c, parse(), Member("x", "ap-east-1", "inference-gateway", "ns", cluster_name="hpi-x-hp"))
    assert rows[0].status == "FAIL"
    assert "ap-east-1 is an opt-in Region (opted-in)" in rows[0].detail


def test_preflight_derives_members_from_local_stack_files() -> None:
    from tools.preflight.global_stack import members_from

    found = members_from(parse(), None)
    assert found[0].region == "us-east-1"
    assert found[0].cluster_name == "hpi-prod-hp"
    assert (found[0].namespace, found[0].name) == ("inference", "inference-gateway")
    assert found[1].region is None  # no stacks/Pulumi.prod-usw2.yaml here: SKIPped, with a hint


def test_preflight_entry_point_delegates_global_stacks(monkeypatch: pytest.MonkeyPatch) -> None:
    import tools.preflight.global_stack as preflight_global
    import tools.preflight.regional as preflight

    calls: list[str] = []
    monkeypatch.setattr(preflight_global, "preflight_global", lambda stack, **kw: calls.append(stack) or 0)
    assert preflight.preflight("global", console=Console(record=True)) == 0
    assert calls == ["global"]


@pytest.mark.parametrize("env", ["prod", "dev"])
def test_offline_engine_matches_the_cli_analyzer_on_a_broken_gateway(global_run: StackRun, env: str) -> None:
    """The analyzer servicer the CLI talks to (props proxied read-only, numbers as floats) agrees."""
    from tests.test_policies import _analyzer_results

    broken = _with_member(
        _with_member(gateway_reg(global_run), 0, clusterArn=OTHER_ACCOUNT, jwtRequired=False),
        1,
        gatewayEnabled=False,
    )
    broken = _with(
        broken,
        routingWeights={"kvHeadroom": 0, "queueDepth": 0, "regionProximity": 0, "errorRate": 0},
        environment="prod",
    )
    opt_in = _with_member(
        _with(gateway_reg(global_run), members=gateway_reg(global_run).inputs["members"][:1]),
        0,
        region="me-south-1",
        clusterArn="arn:aws:sagemaker:me-south-1:123456789012:cluster/0123456789ab",
    )
    opt_in = dataclasses.replace(opt_in, urn=opt_in.urn + "-2", name="global-gateway-2")
    regs = [broken, opt_in]
    offline = {(r.level, r.policy, r.resource_type, r.resource_name) for r in evaluate(POLICIES, regs, env)}
    assert offline == _analyzer_results(regs, env)
    assert {policy for _, policy, _, _ in offline} == {p.name for p in GLOBAL_POLICIES}


def test_global_schema_file_is_current_and_accepts_the_reference_stack() -> None:
    import jsonschema
    import yaml

    from components.config.global_gateway import GLOBAL_SCHEMA_PATH, global_stack_schema

    schema = json.loads(GLOBAL_SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema == global_stack_schema(), "regenerate with `python -m components.config.schema --write`"
    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "stacks" / "Pulumi.global.yaml").read_text())
    jsonschema.validate(doc, schema)
    doc["config"]["hyperpod-inference:bogus"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_stack_aws_profile_reaches_the_provider(run: Any) -> None:
    mapping = stack_mapping("global")
    mapping["aws:profile"] = "inference-admin"
    result = registered(run("global", mapping))
    assert gateway_reg(result).inputs["awsProfile"] == "inference-admin"
    provider = GlobalInferenceGatewayProvider()
    assert provider._use({**PROPS, "awsProfile": "inference-admin"}) == "us-east-1"
    assert provider._profile == "inference-admin"


def test_create_retries_reuse_one_client_token(rig: Rig) -> None:
    tokens = iter(["token-first-create", "token-never-used"])
    rig.provider._token = lambda: next(tokens)
    first = {**create_request(PROPS, "token-first-create")}
    rig.stub.add_client_error(
        "create_global_inference_gateway", service_error_code="ConflictException", expected_params=first
    )
    rig.stub.add_response("create_global_inference_gateway", CREATED, first)
    rig.stub.add_response("describe_global_inference_gateway", describe("ACTIVE"), {"Identifier": GW_ID})
    assert rig.provider.create(dict(PROPS)).id == GW_ID


def test_preflight_global_unknown_profile_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import ProfileNotFound

    import tools.preflight.global_stack as preflight_global

    def no_profile(**kwargs: Any) -> Any:
        raise ProfileNotFound(profile=kwargs.get("profile_name"))

    monkeypatch.setattr(preflight_global.boto3, "Session", no_profile)
    console = Console(record=True, width=300)
    assert preflight_global.preflight_global("global", profile="nope", console=console) == 1
    assert "The config profile (nope) could not be found: pass an existing --profile" in console.export_text()
