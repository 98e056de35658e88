"""The config contract of a *global* stack (``hyperpod-inference:role: global``).

A global stack owns one SageMaker Global Inference Gateway in front of the in-cluster Inference Gateways
of several regional stacks of this program. Its members are those regional stacks, read with
``pulumi.StackReference``: each regional stack exports ``globalGatewayMember`` (see
``components/hyperpod_inference.py``). Everything that can be checked from the stack file is checked here,
before any resource is registered (exit 2); what only the members' exports can tell (account, partition,
opt-in Region, gateway enabled, JWT) is checked by :func:`member_config_issues` as soon as the references
resolve — during ``pulumi preview`` already, because stack outputs are read from the backend then — and
before the gateway, its role or its policy is registered. The rules themselves live in
``policies/global_policies.py`` and are shared with the policy pack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from policies import global_policies as rules

from .base import PROJECT, ConfigIssue, Model, join_path, stack_file_schema
from .errors import ConfigError
from .gateway import gateway_namespace

if TYPE_CHECKING:
    from .stack import StackConfig

Environment = Literal["dev", "staging", "prod"]
ROLE = "global"
MEMBER_EXPORT = "globalGatewayMember"


class RoutingWeights(Model):
    """The four routing signals' weights (API ``Routing.Weights``): all four or none, summing to 1.0."""

    kv_headroom: float | None = None
    queue_depth: float | None = None
    region_proximity: float | None = None
    error_rate: float | None = None

    @model_validator(mode="after")
    def _rules(self) -> RoutingWeights:
        issues = rules.weight_issues(self.as_inputs())
        if issues:
            raise ValueError("; ".join(f"{k + ': ' if k else ''}{m}" for k, m in issues))
        return self

    def as_inputs(self) -> dict[str, float]:
        """camelCase keys, unset weights left out (the resource input and the rule's view)."""
        return {k: v for k, v in self.model_dump(by_alias=True).items() if v is not None}


class Routing(Model):
    weights: RoutingWeights | None = Field(
        default=None, description="Omit to let the Global Inference Gateway use its default weights."
    )


class MemberRef(Model):
    """One regional stack of this program whose in-cluster gateway joins the global gateway."""

    stack: str = Field(
        pattern=r"^([A-Za-z0-9_.-]+/){0,2}[A-Za-z0-9_.-]+$",
        description="Pulumi stack name (`org/hyperpod-inference/prod-use1`, or `prod-use1` in this project).",
    )


class GlobalStackConfig(Model):
    """Everything one global stack is built from (the ``hyperpod-inference:*`` keys of its stack file)."""

    stack: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=20, exclude=True)
    region: str = Field(pattern=r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", exclude=True)
    role: Literal["global"]
    environment: Environment
    gateway_name: str | None = Field(
        default=None, description="Name of the Global Inference Gateway; default `hpi-<stack>`."
    )
    members: list[MemberRef]
    routing: Routing = Field(default_factory=Routing)
    execution_role_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws[a-z\-]*:iam::[0-9]{12}:role/[A-Za-z0-9_+=,.@\-/]+$",
        max_length=2048,
        description="Bring your own execution role; by default the stack creates one.",
    )
    wait_timeout_minutes: int = Field(
        default=45, ge=5, le=180, description="How long create/update/delete wait for the gateway to settle."
    )
    tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("gateway_name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None:
            for _, message in rules.name_issues(value):
                raise ValueError(message)
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        limit = rules.api_limits().tags_max
        if len(value) + 3 > limit:  # + the three tags every stack adds
            raise ValueError(f"at most {limit - 3} tags (the API takes {limit}; the stack adds 3)")
        return value

    @property
    def is_prod(self) -> bool:
        return self.environment == "prod"

    @property
    def name(self) -> str:
        return self.gateway_name or f"hpi-{self.stack}"

    @property
    def name_prefix(self) -> str:
        return f"hpi-{self.stack}"

    @property
    def common_tags(self) -> dict[str, str]:
        return {
            **self.tags,
            "hyperpod-inference:stack": self.stack,
            "hyperpod-inference:environment": self.environment,
            "managed-by": "pulumi",
        }

    @property
    def weights(self) -> dict[str, float] | None:
        return self.routing.weights.as_inputs() if self.routing.weights is not None else None


GLOBAL_CONFIG_KEYS: tuple[str, ...] = tuple(
    (f.alias or n) for n, f in GlobalStackConfig.model_fields.items() if n not in ("stack", "region")
)


def _static_checks(cfg: GlobalStackConfig) -> list[ConfigIssue]:
    issues = [ConfigIssue("members", m) for _, m in rules.member_count_issues(len(cfg.members), cfg.environment)]
    seen: dict[str, int] = {}
    for i, member in enumerate(cfg.members):
        if member.stack in seen:
            issues.append(
                ConfigIssue(join_path("members", i, "stack"), f"listed twice (also members[{seen[member.stack]}])")
            )
        seen.setdefault(member.stack, i)
        if member.stack == cfg.stack or member.stack.endswith(f"/{cfg.stack}"):
            issues.append(ConfigIssue(join_path("members", i, "stack"), "the global stack can't be its own member"))
    return issues


def parse_global_config(
    values: Mapping[str, Any], *, stack: str, region: str | None, outside: Iterable[ConfigIssue] = ()
) -> GlobalStackConfig:
    """Validate a global stack's decoded config (keys without the project prefix); raises ConfigError.
    ``outside`` are problems already found with the keys of other namespaces (reported with the rest)."""
    issues: list[ConfigIssue] = list(outside)
    for key in values:
        if key not in GLOBAL_CONFIG_KEYS:
            issues.append(
                ConfigIssue(key, f"unknown key for a global stack; allowed keys are: {', '.join(GLOBAL_CONFIG_KEYS)}")
            )
    if region is None:
        issues.append(
            ConfigIssue(
                "aws:region", "not set; set the global gateway's Region with `pulumi config set aws:region <region>`"
            )
        )
    raw = {k: v for k, v in values.items() if k in GLOBAL_CONFIG_KEYS}
    try:
        cfg = GlobalStackConfig.model_validate({**raw, "stack": stack, "region": region or "unset-region-0"})
    except ValidationError as err:
        for e in err.errors(include_url=False):
            loc = [p for p in e["loc"] if not (isinstance(p, str) and "[" in p)]
            path = join_path(*loc) if loc else "(root)"
            if e["type"] == "extra_forbidden":
                issues.append(ConfigIssue(path, "unknown key"))
            elif e["type"] == "missing":
                issues.append(ConfigIssue(path, "required key is missing"))
            else:
                issues.append(ConfigIssue(path, e["msg"].removeprefix("Value error, ")))
        raise ConfigError(issues) from None
    issues.extend(_static_checks(cfg))
    if issues:
        raise ConfigError(issues)
    return cfg


def member_config_issues(
    cfg: GlobalStackConfig,
    index: int,
    exported: Any,
    *,
    account_id: str | None,
    partition: str | None,
) -> list[ConfigIssue]:
    """Problems with member ``index``'s ``globalGatewayMember`` export, located at ``members[i].stack``."""
    path = join_path("members", index, "stack")
    stack = cfg.members[index].stack
    if not isinstance(exported, Mapping):
        return [
            ConfigIssue(
                path,
                f"stack {stack!r} exports no {MEMBER_EXPORT}: is it a regional stack of {PROJECT}, "
                "and has `pulumi up` run on it since this version?",
            )
        ]
    return [
        ConfigIssue(path, f"stack {stack!r}: {MEMBER_EXPORT}.{key}: {message}")
        for key, message in rules.member_issues(
            exported, account_id=account_id, partition=partition, environment=cfg.environment
        )
    ]


def duplicate_gateway_issues(cfg: GlobalStackConfig, exported: list[Mapping[str, Any]]) -> list[ConfigIssue]:
    return [
        ConfigIssue(join_path("members", i, "stack"), f"stack {cfg.members[i].stack!r} exports {message}")
        for i, message in rules.duplicate_member_issues(exported)
    ]


def member_export(cfg: StackConfig) -> dict[str, Any]:
    """What a regional stack exports as ``globalGatewayMember`` (the cluster ARN is added by the component).

    Exported also when the gateway is off (``gatewayEnabled: false``), so a global stack that lists this
    stack fails with "gateway is off" instead of a missing output.
    """
    auth = cfg.gateway.spec_dict().get("auth") or {}
    return {
        "gatewayEnabled": cfg.gateway.enabled,
        "name": cfg.gateway.name,
        # where the InferenceGatewayConfig is: its endpoints' namespace (components/config/gateway.py)
        "namespace": gateway_namespace(cfg),
        "region": cfg.region,
        "jwtRequired": bool(cfg.gateway.enabled and isinstance(auth, dict) and auth.get("jwt")),
        "environment": cfg.environment,
        # The AZ IDs whose private subnets carry kubernetes.io/role/internal-elb (components/network.py tags every
        # private subnet of a VPC it creates); None with network.existing: the tags are the VPC owner's, so that a
        # member on an existing VPC has internal-elb subnets in two AZs is UNCONFIRMED [existing-vpc-internal-elb-azs].
        "internalElbAzIds": None if cfg.network.existing is not None else list(cfg.network.az_ids),
    }


GLOBAL_SCHEMA_PATH = Path(__file__).resolve().parents[2] / "stacks" / "global.schema.json"


def global_stack_schema() -> dict[str, Any]:
    """JSON Schema of a global stack file (editors: ``# yaml-language-server: $schema=global.schema.json``)."""
    model = GlobalStackConfig.model_json_schema(by_alias=True, mode="validation")
    defs = model.pop("$defs", {})
    props = {f"{PROJECT}:{k}": v for k, v in model["properties"].items() if k in GLOBAL_CONFIG_KEYS}
    props["aws:region"] = {
        "type": "string",
        "description": "The Region of the Global Inference Gateway's API.",
        "pattern": r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$",
    }
    required = ["aws:region", *(f"{PROJECT}:{k}" for k in model.get("required", []) if k in GLOBAL_CONFIG_KEYS)]
    return stack_file_schema(f"{PROJECT} global stack file", props, required, defs)
