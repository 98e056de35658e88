"""Guardrails of the global stack (the SageMaker Global Inference Gateway), in one place.

The rule functions below are used twice: by the global stack's config contract
(``components/config/global_gateway.py``, exit 2 before any resource is registered, and again on the
member stacks' exports as soon as the StackReferences resolve) and by the CrossGuard policies at the end
of this module, which read the same facts from the registered ``GlobalInferenceGateway`` dynamic resource.

Facts the rules rely on, with their sources:

- API limits (weights 0..1, 1..10 members, name pattern, 50 tags) are read from botocore's ``sagemaker``
  service model (shapes ``GlobalInferenceGatewayRoutingWeight``, ``GlobalInferenceGatewayMembers``,
  ``GlobalInferenceGatewayName``, ``TagList``), so an AWS model change shows up here, not at deploy time.
- "Specify all four weights or none ... they must sum to 1.0, within 0.001" — the model's documentation of
  ``GlobalInferenceGatewayRoutingWeights`` (botocore 1.44.8); not machine-readable, so kept as constants.
- Members: "The cluster must be in the same account and partition as the global inference gateway. It can
  be in a different Region, but not in an opt-in Region." — documentation of
  ``GlobalInferenceGatewayMember.ClusterArn`` in the same model.
- Opt-in Regions: AWS Account Management Reference, "Enable or disable AWS Regions in your account"
  (manage-acct-regions): Regions launched after 2019-03-20 are disabled by default. ``tools.preflight.global_stack``
  confirms each member Region live (``ec2:DescribeRegions`` ``OptInStatus``).
- A gateway without ``spec.auth.jwt`` accepts any request (AWS docs,
  sagemaker-hyperpod-model-deployment-inference-gateway); the global gateway forwards the caller's
  ``X-Amzn-SageMaker-Customer-Identity-Token`` to the member, which validates it (model documentation of
  ``CustomerIdentityToken``, sagemaker-gateway-runtime 2026-10-01), so in prod every member must require JWT.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
)

from .graph import get, is_list, truthy
from .resource_types import DYNAMIC as DYNAMIC_RESOURCE

# The marker input that says which dynamic resource it is (every Python dynamic resource shares the token).
RESOURCE_KIND = "hyperpod:GlobalInferenceGateway"

# Routing-weight keys: stack file / resource input (camelCase) -> API member name.
WEIGHT_KEYS: dict[str, str] = {
    "kvHeadroom": "KVHeadroom",
    "queueDepth": "QueueDepth",
    "regionProximity": "RegionProximity",
    "errorRate": "ErrorRate",
}
WEIGHT_SUM = 1.0
WEIGHT_SUM_TOLERANCE = 0.001
MIN_PROD_MEMBERS = 2

OPT_IN_REGIONS: frozenset[str] = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-east-2",
        "ap-south-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-6",
        "ap-southeast-7",
        "ca-west-1",
        "eu-central-2",
        "eu-south-1",
        "eu-south-2",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "mx-central-1",
    }
)

CLUSTER_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):sagemaker:(?P<region>[a-z0-9-]+):(?P<account>[0-9]{12}):cluster/[a-z0-9]{12}$"
)


@dataclass(frozen=True)
class ApiLimits:
    """Limits of CreateGlobalInferenceGateway, read from botocore's service model."""

    weight_min: float
    weight_max: float
    members_min: int
    members_max: int
    name_pattern: str
    name_max: int
    tags_max: int


@cache
def api_limits() -> ApiLimits:
    from botocore.loaders import create_loader
    from botocore.model import ServiceModel

    # The loader alone: a botocore session would read AWS config (profiles), which a model lookup needs not.
    model = ServiceModel(create_loader().load_service_model("sagemaker", "service-2"), "sagemaker")
    weight = model.shape_for("GlobalInferenceGatewayRoutingWeight").metadata
    members = model.shape_for("GlobalInferenceGatewayMembers").metadata
    name = model.shape_for("GlobalInferenceGatewayName").metadata
    tags = model.shape_for("TagList").metadata
    return ApiLimits(
        weight_min=float(weight["min"]),
        weight_max=float(weight["max"]),
        members_min=int(members["min"]),
        members_max=int(members["max"]),
        name_pattern=str(name["pattern"]),
        name_max=int(name["max"]),
        tags_max=int(tags["max"]),
    )


Issue = tuple[str, str]  # (key path relative to the caller's root, message)


def weight_issues(weights: Mapping[str, Any] | None) -> list[Issue]:
    """Routing weights: none (AWS defaults) or all four, each within the model's range, summing to 1.0."""
    if weights is None:
        return []
    limits = api_limits()
    out: list[Issue] = []
    missing = [k for k in WEIGHT_KEYS if weights.get(k) is None]
    if missing and len(missing) < len(WEIGHT_KEYS):
        out.append(("", f"set all four weights or none; missing {', '.join(missing)}"))
    values: list[float] = []
    for key in WEIGHT_KEYS:
        value = weights.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            out.append((key, f"must be a number from {limits.weight_min:g} to {limits.weight_max:g}"))
            continue
        values.append(float(value))
        if value < limits.weight_min:
            out.append((key, f"must not be negative (allowed {limits.weight_min:g} to {limits.weight_max:g})"))
        elif value > limits.weight_max:
            out.append((key, f"must be at most {limits.weight_max:g}"))
    if values and not missing and not out:
        total = sum(values)
        if total == 0:
            out.append(("", "all weights are 0: at least one routing signal must count"))
        elif abs(total - WEIGHT_SUM) > WEIGHT_SUM_TOLERANCE:
            out.append(("", f"weights must sum to 1.0 (within {WEIGHT_SUM_TOLERANCE}); they sum to {total:g}"))
    return out


def member_count_issues(count: int, environment: str) -> list[Issue]:
    limits = api_limits()
    if count < limits.members_min:
        return [("", f"at least {limits.members_min} member stack is required")]
    if count > limits.members_max:
        return [("", f"at most {limits.members_max} members per global inference gateway (got {count})")]
    if environment == "prod" and count < MIN_PROD_MEMBERS:
        return [("", f"prod needs at least {MIN_PROD_MEMBERS} members (got {count}): one member is not multi-region")]
    return []


def name_issues(name: str) -> list[Issue]:
    limits = api_limits()
    if len(name) > limits.name_max or not re.fullmatch(limits.name_pattern, name):
        return [("", f"must match {limits.name_pattern} (at most {limits.name_max} characters)")]
    if re.fullmatch(r"[a-z0-9]{12}", name):
        # boto3 docs of create_global_inference_gateway: the ID has that format, so a name may not.
        return [("", "can't be exactly 12 lowercase letters or digits (that is the format of gateway IDs)")]
    return []


def cluster_arn_parts(arn: Any) -> dict[str, str] | None:
    match = CLUSTER_ARN.match(arn) if isinstance(arn, str) else None
    return match.groupdict() if match else None


def region_is_opt_in(region: str) -> bool:
    return region in OPT_IN_REGIONS


# The managed gateway's load balancers are internal (they go in subnets tagged kubernetes.io/role/internal-elb),
# and global routing fails with GlobalRoutingInsufficientAZs unless such subnets exist in at least two AZs
# (awslabs/ai-on-sagemaker-hyperpod@e53295231ea5, inference-gateway 05-cleanup-and-troubleshooting.md).
MIN_INTERNAL_ELB_AZS = 2


def member_issues(
    member: Mapping[str, Any], *, account_id: str | None, partition: str | None, environment: str
) -> list[Issue]:
    """One member's exports (``globalGatewayMember`` of a regional stack) against the global stack.

    Keys: ``gatewayEnabled``, ``name``, ``namespace``, ``clusterArn``, ``region``, ``jwtRequired``,
    ``internalElbAzIds`` (None: the member's VPC is not its own, whose subnet tags this rule cannot see).
    """
    out: list[Issue] = []
    if not truthy(member.get("gatewayEnabled")):
        out.append(
            ("gatewayEnabled", "the stack's in-cluster Inference Gateway is off; set gateway.enabled: true there")
        )
        return out
    for key in ("name", "namespace", "clusterArn", "region"):
        if not member.get(key):
            out.append((key, "missing from the stack's globalGatewayMember export; run `pulumi up` on that stack"))
    parts = cluster_arn_parts(member.get("clusterArn"))
    if member.get("clusterArn") and parts is None:
        out.append(("clusterArn", f"not a HyperPod cluster ARN: {member.get('clusterArn')!r}"))
    if parts is not None:
        if account_id and parts["account"] != account_id:
            out.append(
                ("clusterArn", f"cluster is in account {parts['account']}; the global gateway is in {account_id}")
            )
        if partition and parts["partition"] != partition:
            out.append(
                ("clusterArn", f"cluster is in partition {parts['partition']}; the global gateway is in {partition}")
            )
    region = member.get("region") or (parts or {}).get("region")
    if isinstance(region, str) and region_is_opt_in(region):
        out.append(("region", f"{region} is an opt-in Region; the Global Inference Gateway can't use members there"))
    if environment == "prod" and not truthy(member.get("jwtRequired")):
        out.append(("jwtRequired", "in prod every member's gateway must require JWT (gateway.spec.auth.jwt)"))
    azs = member.get("internalElbAzIds")
    if isinstance(azs, list) and len(set(azs)) < MIN_INTERNAL_ELB_AZS:
        out.append(
            (
                "internalElbAzIds",
                f"global routing fails with GlobalRoutingInsufficientAZs unless subnets in at least "
                f"{MIN_INTERNAL_ELB_AZS} AZs carry kubernetes.io/role/internal-elb; the stack's private subnets are in "
                f"{', '.join(azs) or 'no AZ'}: add an AZ ID to its network.availabilityZoneIds",
            )
        )
    return out


def duplicate_member_issues(members: Sequence[Mapping[str, Any]]) -> list[tuple[int, str]]:
    """(index, message) for a member gateway listed twice (same cluster, namespace and name)."""
    seen: dict[tuple[Any, Any, Any], int] = {}
    out: list[tuple[int, str]] = []
    for i, m in enumerate(members):
        key = (m.get("clusterArn"), m.get("namespace"), m.get("name"))
        if key in seen:
            out.append((i, f"the same gateway as members[{seen[key]}]"))
        else:
            seen[key] = i
    return out


# --- CrossGuard policies over the registered dynamic resource ---------------------------------------


def _is_global_gateway(args: ResourceValidationArgs) -> bool:
    return args.resource_type == DYNAMIC_RESOURCE and get(args.props, "resourceKind") == RESOURCE_KIND


def _members(args: ResourceValidationArgs) -> list[Mapping[str, Any]]:
    members = get(args.props, "members", default=[])
    return [m for m in members if isinstance(m, Mapping)] if is_list(members) else []


def _member_policy(keys: Iterable[str]) -> Any:
    wanted = frozenset(keys)

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if not _is_global_gateway(args):
            return
        env = str(get(args.props, "environment", default="prod"))
        for i, member in enumerate(_members(args)):
            for key, message in member_issues(
                member,
                account_id=get(args.props, "accountId"),
                partition=get(args.props, "partition"),
                environment=env,
            ):
                if key in wanted:
                    report(f"members[{i}] ({get(member, 'stack', default='?')}): {message}", None)

    return validate


def _weights(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not _is_global_gateway(args):
        return
    weights = get(args.props, "routingWeights")
    for key, message in weight_issues(weights if isinstance(weights, Mapping) else None):
        report(f"routingWeights{'.' + key if key else ''}: {message}", None)


def _member_count(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not _is_global_gateway(args):
        return
    env = str(get(args.props, "environment", default="prod"))
    for _, message in member_count_issues(len(_members(args)), env):
        report(f"members: {message}", None)


_members_same_account = _member_policy({"clusterArn"})
_members_not_opt_in = _member_policy({"region"})
_members_gateway_enabled = _member_policy({"gatewayEnabled", "name", "namespace"})
_members_require_jwt = _member_policy({"jwtRequired"})
