"""GlobalInferenceGateway: a Pulumi dynamic resource for the SageMaker Global Inference Gateway.

No CloudFormation type exists for it, so neither pulumi-aws nor aws-native has a resource (operator-facts
§14); botocore's ``sagemaker`` service model (1.44.x) carries the API, and this provider drives it with
boto3. Every request and response shape below is a ``TypedDict`` mirroring that model, and
``tests/test_global_gateway.py`` checks them against it, so an AWS model change is noticed.

Lifecycle, as the API documents it (botocore ``sagemaker`` model, operation documentation):

- create: ``CreateGlobalInferenceGateway`` (with a fresh ``ClientToken`` that this create's retries reuse,
  so a retried request creates one gateway) is asynchronous — CREATING until ACTIVE or FAILED; the provider
  polls ``DescribeGlobalInferenceGateway`` until ACTIVE, bounded by ``waitTimeoutSeconds``, and reports
  progress through the engine's log. FAILED becomes one error carrying ``FailureReason`` after the failed
  gateway is deleted (Pulumi would not track it, and it holds the name); ``ResourceInUse`` (name taken, or a
  member gateway already in another global gateway) one error naming both causes.
- read: ``Describe``; ``ResourceNotFound`` reads as gone (an empty id), so ``pulumi refresh`` drops a
  gateway deleted outside Pulumi.
- diff: the name, the API Region and the execution role replace (``UpdateGlobalInferenceGateway`` only
  takes ``Routing``), and always delete-before-replace: a member gateway can belong to one global gateway
  only, so a replacement created first would fail with ResourceInUse. Routing weights, members and tags
  update in place.
- update: ``UpdateGlobalInferenceGateway`` for the weights (then wait ACTIVE), ``AddInferenceGateway``
  for each new member and ``RemoveInferenceGateway`` for each old one — adds first, because removing the
  last member fails with ValidationException — waiting for each member (``ListInferenceGateways``) since
  the API answers ConflictException while another operation is in progress; ``AddTags``/``DeleteTags``.
- delete: ``DeleteGlobalInferenceGateway`` (idempotent), then poll until ``Describe`` answers
  ResourceNotFound; the members are then free to join another global gateway.

Errors: AccessDenied names the IAM action (``sagemaker:<Operation>``); throttling is retried by botocore (adaptive
mode), ConflictException (which botocore does not retry) with exponential backoff. Waits take an injectable
``sleep`` and ``clock`` so tests run in milliseconds. Clients, retries, the credential chain and the diff come
from the shared base, ``components/dynamic_provider.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

import pulumi
from botocore.exceptions import ClientError
from pulumi import dynamic

from policies.global_policies import RESOURCE_KIND, WEIGHT_KEYS

from .dynamic_provider import (
    DENIED_CODES,
    MAX_RETRIES,
    NOT_FOUND_CODES,
    THROTTLED,
    THROTTLING_CODES,
    DynamicProviderBase,
    error_code,
    error_message,
)

# --- API shapes (botocore sagemaker model, 2017-07-24; checked in tests) -------------------------------


class MemberShape(TypedDict):
    """``GlobalInferenceGatewayMember``."""

    Name: str
    Namespace: str
    ClusterArn: str


class WeightsShape(TypedDict, total=False):
    """``GlobalInferenceGatewayRoutingWeights``: all four or none."""

    KVHeadroom: float
    QueueDepth: float
    RegionProximity: float
    ErrorRate: float


class RoutingShape(TypedDict):
    """``GlobalInferenceGatewayRouting``."""

    Weights: WeightsShape


class TagShape(TypedDict):
    Key: str
    Value: str


class _CreateRequired(TypedDict):
    Name: str
    ExecutionRoleArn: str
    Gateways: list[MemberShape]


class CreateRequest(_CreateRequired, total=False):
    """``CreateGlobalInferenceGatewayInput``."""

    Routing: RoutingShape
    ClientToken: str
    Tags: list[TagShape]


class UpdateRequest(TypedDict):
    """``UpdateGlobalInferenceGatewayInput``."""

    Identifier: str
    Routing: RoutingShape


class MemberRequest(TypedDict):
    """``AddInferenceGatewayInput`` / ``RemoveInferenceGatewayInput``."""

    Identifier: str
    ClusterArn: str
    Namespace: str
    Name: str


class _DescribeRequired(TypedDict):
    Arn: str
    Id: str
    Name: str
    ExecutionRoleArn: str
    Status: str


class DescribeResponse(_DescribeRequired, total=False):
    """``DescribeGlobalInferenceGatewayOutput`` (the fields this provider reads)."""

    EndpointUrl: str
    VpcEndpointServiceName: str
    Routing: RoutingShape
    FailureReason: str


# Statuses (enum ``GlobalInferenceGatewayStatus`` / ``GlobalInferenceGatewayMemberStatus``).
ACTIVE, FAILED = "ACTIVE", "FAILED"
DEFAULT_TIMEOUT_SECONDS = 45 * 60
POLL_SECONDS = 15.0


class GatewayError(Exception):
    """One clear, actionable message for a failed Global Inference Gateway operation."""


class GatewayFailed(GatewayError):
    """The gateway reached status FAILED (the message carries AWS's FailureReason)."""


# --- props -> API requests ------------------------------------------------------------------------------


def member_shape(member: Mapping[str, Any]) -> MemberShape:
    return MemberShape(
        Name=str(member["name"]), Namespace=str(member["namespace"]), ClusterArn=str(member["clusterArn"])
    )


def member_key(member: Mapping[str, Any]) -> tuple[str, str, str]:
    shape = member_shape(member)
    return (shape["ClusterArn"], shape["Namespace"], shape["Name"])


def weights_shape(weights: Mapping[str, Any] | None) -> WeightsShape:
    out = WeightsShape()
    for key, api in WEIGHT_KEYS.items():
        if weights and weights.get(key) is not None:
            out[api] = float(weights[key])  # type: ignore[literal-required]
    return out


def tag_list(tags: Mapping[str, Any] | None) -> list[TagShape]:
    return [TagShape(Key=str(k), Value=str(v)) for k, v in sorted((tags or {}).items())]


def create_request(props: Mapping[str, Any], client_token: str) -> CreateRequest:
    request = CreateRequest(
        Name=str(props["name"]),
        ExecutionRoleArn=str(props["executionRoleArn"]),
        Gateways=[member_shape(m) for m in props["members"]],
        ClientToken=client_token,
    )
    weights = weights_shape(props.get("routingWeights"))
    if weights:
        request["Routing"] = RoutingShape(Weights=weights)
    tags = tag_list(props.get("tags"))
    if tags:
        request["Tags"] = tags
    return request


def update_request(gateway_id: str, props: Mapping[str, Any]) -> UpdateRequest:
    # An empty Weights means "use the default weights" (model documentation of RoutingWeights).
    return UpdateRequest(
        Identifier=gateway_id, Routing=RoutingShape(Weights=weights_shape(props.get("routingWeights")))
    )


def member_request(gateway_id: str, member: Mapping[str, Any]) -> MemberRequest:
    shape = member_shape(member)
    return MemberRequest(
        Identifier=gateway_id, ClusterArn=shape["ClusterArn"], Namespace=shape["Namespace"], Name=shape["Name"]
    )


def client_token() -> str:
    """A fresh token per create: every retry of that one create (botocore's and this provider's) reuses it.

    Not derived from the inputs: a gateway destroyed and created again with the same inputs must not hit
    an idempotency window of the old request. Across separate ``pulumi up`` runs the unique name guards
    against duplicates (ResourceInUse).
    """
    return str(uuid.uuid4())


# --- the provider ---------------------------------------------------------------------------------------


_code, _message = error_code, error_message


class GlobalInferenceGatewayProvider(DynamicProviderBase):
    """CRUD for one Global Inference Gateway; ``client_factory``/``sleep``/``clock``/``log`` are for tests.

    Clients (in the resource's ``region``, on the stack's credential chain passed as inputs), retries and the
    waits' clock come from :class:`~components.dynamic_provider.DynamicProviderBase`; ConflictException is retried
    too (the API answers it while another operation on the gateway is in progress).
    """

    retry_codes = frozenset({"ConflictException"})

    def __init__(
        self,
        *,
        client_factory: Callable[[str, str], Any] | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        log: Callable[[str], None] | None = None,
        poll_seconds: float = POLL_SECONDS,
        token: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(client_factory=client_factory, sleep=sleep, clock=clock, log=log)
        self._poll = poll_seconds
        self._token = token

    def error(self, operation: str, params: Mapping[str, Any], err: ClientError) -> Exception:
        return self._error(operation, params, err)

    def _error(self, operation: str, params: Mapping[str, Any], err: ClientError) -> Exception:
        code, message = _code(err), _message(err)
        if code in DENIED_CODES:
            return GatewayError(
                f"access denied: the credentials running `pulumi up` need IAM action sagemaker:{operation} "
                f"(and iam:PassRole on the execution role for create): {message}"
            )
        if code == "ResourceInUse" and operation == "CreateGlobalInferenceGateway":
            return GatewayError(
                f"{operation}: resource in use — the name {params.get('Name')!r} is taken in this account and "
                f"Region, or a member gateway already belongs to another global inference gateway "
                f"(`python -m tools.preflight.regional --stack <global stack>` finds which): {message}"
            )
        if code == "ResourceInUse":
            member = f"{params.get('Namespace')}/{params.get('Name')} on {params.get('ClusterArn')}"
            return GatewayError(
                f"{operation}: resource in use — gateway {member} already belongs to another global inference "
                f"gateway; remove it there first: {message}"
            )
        if code in THROTTLING_CODES or code in self.retry_codes:
            tried = THROTTLED if code in THROTTLING_CODES else f"{code} after {MAX_RETRIES} retries"
            return GatewayError(f"{operation}: {tried}: {message}")
        if code in NOT_FOUND_CODES:
            return GatewayError(f"{operation}: not found: {message}")
        return GatewayError(f"{operation} failed ({code}): {message}")

    def _describe(self, region: str, identifier: str) -> DescribeResponse | None:
        response: DescribeResponse | None = self._call(
            region, "DescribeGlobalInferenceGateway", missing_ok=True, Identifier=identifier
        )
        return response

    def _deadline(self, props: Mapping[str, Any]) -> float:
        return self._now() + float(props.get("waitTimeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)

    def _wait_active(self, region: str, identifier: str, props: Mapping[str, Any], what: str) -> DescribeResponse:
        deadline, started = self._deadline(props), self._now()
        while True:
            gw = self._describe(region, identifier)
            if gw is None:
                raise GatewayError(
                    f"{what}: global inference gateway {identifier} disappeared while waiting for ACTIVE"
                )
            status = gw["Status"]
            if status == ACTIVE:
                self._info(f"{what}: {gw['Name']} is ACTIVE after {self._now() - started:.0f}s")
                return gw
            if status == FAILED:
                raise GatewayFailed(
                    f"{what}: global inference gateway {gw['Name']} is FAILED: {gw.get('FailureReason', 'no reason given')}"
                )
            if self._now() >= deadline:
                raise GatewayError(
                    f"{what}: global inference gateway {gw['Name']} still {status} after "
                    f"{self._now() - started:.0f}s (waitTimeoutMinutes); it keeps converging in AWS — check "
                    "`aws sagemaker describe-global-inference-gateway`, then `pulumi refresh` and rerun"
                )
            self._info(f"{what}: {gw['Name']} is {status}, waiting")
            self._wait(self._poll)

    def _member_status(self, region: str, identifier: str, member: Mapping[str, Any]) -> dict[str, Any] | None:
        key = member_key(member)
        filters = [{"Name": "ClusterArn", "Value": key[0]}]
        for summary in self._items(
            region, "ListInferenceGateways", "InferenceGatewaySummaries", Identifier=identifier, Filters=filters
        ):
            if (summary["ClusterArn"], summary["Namespace"], summary["Name"]) == key:
                return dict(summary)
        return None

    def _wait_member(
        self, region: str, identifier: str, member: Mapping[str, Any], props: Mapping[str, Any], *, present: bool
    ) -> None:
        deadline, label = self._deadline(props), "/".join(member_key(member))
        while True:
            summary = self._member_status(region, identifier, member)
            if present and summary is not None and summary.get("Status") == ACTIVE:
                return
            if not present and summary is None:
                return
            if summary is not None and summary.get("Status") == FAILED:
                raise GatewayError(f"member {label} is FAILED: {summary.get('FailureReason', 'no reason given')}")
            if self._now() >= deadline:
                state = summary.get("Status") if summary else "absent"
                raise GatewayError(f"member {label} still {state} after the wait timeout (waitTimeoutMinutes)")
            self._info(f"member {label}: {summary.get('Status') if summary else 'absent'}, waiting")
            self._wait(self._poll)

    @staticmethod
    def _outs(props: Mapping[str, Any], gw: Mapping[str, Any]) -> dict[str, Any]:
        return {
            **props,
            "arn": gw["Arn"],
            "gatewayId": gw["Id"],
            "status": gw["Status"],
            "endpointUrl": gw.get("EndpointUrl", ""),
            "vpcEndpointServiceName": gw.get("VpcEndpointServiceName", ""),
        }

    # CRUD

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        region = self._use(props)
        request = create_request(props, (self._token or client_token)())
        self._info(
            f"creating global inference gateway {request['Name']} in {region} ({len(request['Gateways'])} members)"
        )
        created = self._call(region, "CreateGlobalInferenceGateway", **request)
        try:
            gw = self._wait_active(region, created["Id"], props, "create")
        except GatewayFailed as failed:
            # A FAILED gateway keeps its name (a rerun would hit ResourceInUse) and Pulumi does not track it:
            # delete it so that fixing the cause and rerunning works.
            try:
                self.delete(created["Id"], props)
            except GatewayError as cleanup:
                raise GatewayError(
                    f"{failed}; deleting the failed gateway {created['Id']} also failed: {cleanup}"
                ) from None
            raise GatewayError(f"{failed}; the failed gateway was deleted, fix the cause and rerun") from None
        except GatewayError as err:
            raise GatewayError(
                f"{err}. Pulumi does not track gateway {created['Id']}: delete it "
                f"(`aws sagemaker delete-global-inference-gateway --identifier {created['Id']} --region {region}`) "
                "or wait until it is ACTIVE and delete it, then rerun with a larger waitTimeoutMinutes"
            ) from None
        return dynamic.CreateResult(gw["Id"], self._outs(props, gw))

    def read(self, id_: str, props: dict[str, Any]) -> dynamic.ReadResult:
        gw = self._describe(self._use(props), id_)
        if gw is None:
            return dynamic.ReadResult("", {})  # deleted outside Pulumi: the engine drops it
        return dynamic.ReadResult(gw["Id"], self._outs(props, gw))

    # "You can't change the role after you create the global inference gateway" (model documentation of
    # CreateGlobalInferenceGateway.ExecutionRoleArn); the name and the Region identify it.
    replace_keys = ("name", "region", "executionRoleArn")
    update_keys = ("routingWeights", "tags", "waitTimeoutSeconds", "environment")

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        members: list[str] = []
        if sorted(map(member_key, olds.get("members") or [])) != sorted(map(member_key, news.get("members") or [])):
            members.append("members")
        elif [dict(m) for m in olds.get("members") or []] != [dict(m) for m in news.get("members") or []]:
            members.append("members")  # member metadata (stack, jwtRequired, ...) only: no API call
        base = self.diff_keys(olds, news, extra_changes=members)
        # always delete-before-replace: a member gateway belongs to one global gateway only (module docstring)
        return dynamic.DiffResult(
            changes=base.changes, replaces=base.replaces, delete_before_replace=True if base.replaces else None
        )

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        region = self._use(news)
        if weights_shape(olds.get("routingWeights")) != weights_shape(news.get("routingWeights")):
            self._info(f"updating routing weights of {news['name']}")
            self._call(region, "UpdateGlobalInferenceGateway", **update_request(id_, news))
            self._wait_active(region, id_, news, "update")
        old = {member_key(m): m for m in olds.get("members") or []}
        new = {member_key(m): m for m in news.get("members") or []}
        for key in [k for k in new if k not in old]:
            self._info(f"adding member {'/'.join(key)}")
            self._call(region, "AddInferenceGateway", **member_request(id_, new[key]))
            self._wait_member(region, id_, new[key], news, present=True)
        for key in [k for k in old if k not in new]:
            self._info(f"removing member {'/'.join(key)}")
            self._call(region, "RemoveInferenceGateway", **member_request(id_, old[key]))
            self._wait_member(region, id_, old[key], news, present=False)
        gw = self._describe(region, id_)
        if gw is None:
            raise GatewayError(f"update: global inference gateway {id_} no longer exists; run `pulumi refresh`")
        if (olds.get("tags") or {}) != (news.get("tags") or {}):
            self._sync_tags(region, gw["Arn"], olds.get("tags"), news.get("tags"))
        return dynamic.UpdateResult(self._outs(news, gw))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        region = self._use(props)
        self._info(f"deleting global inference gateway {props.get('name', id_)}")
        self._call(region, "DeleteGlobalInferenceGateway", Identifier=id_)
        deadline, started = self._deadline(props), self._now()
        while True:
            gw = self._describe(region, id_)
            if gw is None:
                self._info(f"delete: {props.get('name', id_)} is gone after {self._now() - started:.0f}s")
                return
            if self._now() >= deadline:
                raise GatewayError(
                    f"delete: global inference gateway {gw['Name']} still {gw['Status']} after "
                    f"{self._now() - started:.0f}s; its members join no other gateway until it is gone"
                )
            self._info(f"delete: {gw['Name']} is {gw['Status']}, waiting")
            self._wait(self._poll)


# --- the dynamic resource -------------------------------------------------------------------------------


class GlobalInferenceGateway(dynamic.Resource):
    """The Global Inference Gateway. Inputs are camelCase (they also feed the policy pack):

    ``name``, ``region`` (of the API), ``executionRoleArn``, ``members`` (``stack``, ``name``, ``namespace``,
    ``clusterArn``, ``region``, ``jwtRequired``, ``gatewayEnabled``), ``routingWeights`` (or None),
    ``tags``, ``environment``, ``accountId``, ``partition``, ``waitTimeoutSeconds``, and the credential chain
    ``awsProfile`` / ``awsAssumeRoles`` / ``awsStsRegion`` (:func:`components.dynamic_provider.credential_inputs`).
    """

    arn: pulumi.Output[str]
    gatewayId: pulumi.Output[str]  # outputs keep their property names
    endpointUrl: pulumi.Output[str]
    status: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: GlobalInferenceGatewayProvider | None = None,
    ) -> None:
        inputs: dict[str, Any] = {
            **props,
            "resourceKind": RESOURCE_KIND,
            "arn": None,
            "gatewayId": None,
            "endpointUrl": None,
            "status": None,
            "vpcEndpointServiceName": None,
        }
        super().__init__(provider or GlobalInferenceGatewayProvider(), name, inputs, opts)


def members_input(members: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``members`` input: each member's export, reduced to the keys the resource carries."""
    keys = ("stack", "name", "namespace", "clusterArn", "region", "jwtRequired", "gatewayEnabled")
    return [{k: m.get(k) for k in keys} for m in members]
