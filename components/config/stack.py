"""The root of the stack-config contract: every key under ``hyperpod-inference:``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, model_validator

from policies import aws_names

from .base import ConfigIssue, Model, join_path
from .checks import Check
from .cluster import ClusterConfig
from .context import ValidationContext
from .endpoints import EndpointConfig
from .gateway import GatewayConfig
from .governance import GovernanceConfig
from .ingress import IngressConfig
from .kvcache import KvCacheConfig
from .network import NetworkConfig
from .observability import ObservabilityConfig
from .operator import OperatorConfig

Environment = Literal["dev", "staging", "prod"]


class StackConfig(Model):
    """Everything one environment of hyperpod-inference is built from.

    ``region`` comes from ``aws:region`` and ``stack`` from the Pulumi stack name; the rest are the
    ``hyperpod-inference:<key>`` entries of ``stacks/Pulumi.<stack>.yaml``.
    """

    stack: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=20, exclude=True)
    region: str = Field(pattern=r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", exclude=True)
    environment: Environment = Field(
        description="dev | staging | prod: secure defaults and policy strictness follow it."
    )
    network: NetworkConfig
    cluster: ClusterConfig
    operator: OperatorConfig
    kv_cache: KvCacheConfig = Field(default_factory=KvCacheConfig)
    ingress: IngressConfig = Field(default_factory=IngressConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    endpoints: list[EndpointConfig] = Field(default_factory=list)
    observability: ObservabilityConfig = Field(default_factory=ObservabilityConfig)
    governance: GovernanceConfig = Field(default_factory=GovernanceConfig)
    tags: dict[str, str] = Field(default_factory=dict, description="Extra tags on every AWS resource that takes tags.")
    allow_replacement: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description=(
            "Logical names of stateful resources (EKS cluster, HyperPod cluster, ElastiCache group, S3 buckets) "
            "this change may replace or delete: `tools.cli.preview --diff` then reports the "
            "no-replacement-of-stateful-resources policy as advisory instead of mandatory in prod. The names "
            "are the Pulumi resource names the diff prints (e.g. `hyperpod-cluster`). Remove the entry after "
            "the change is deployed."
        ),
    )

    _context: ValidationContext = PrivateAttr(default_factory=ValidationContext)

    @model_validator(mode="after")
    def _keep_context(self, info: ValidationInfo) -> StackConfig:
        """Keep the loader's validation context (``model_validate(..., context=...)``) for the checks."""
        if isinstance(info.context, ValidationContext):
            self._context = info.context
        return self

    @property
    def context(self) -> ValidationContext:
        """What the checks know besides the stack file (``components/config/context.py``), read by the loader."""
        return self._context

    @property
    def is_prod(self) -> bool:
        return self.environment == "prod"

    @property
    def stack_tags(self) -> dict[str, str]:
        """The tags the stack itself adds to every taggable AWS resource (they win over ``tags``)."""
        return {
            "hyperpod-inference:stack": self.stack,
            "hyperpod-inference:environment": self.environment,
            "managed-by": "pulumi",
        }

    @property
    def common_tags(self) -> dict[str, str]:
        """Tags every taggable AWS resource of the stack carries."""
        return {**self.tags, **self.stack_tags}

    @property
    def name_prefix(self) -> str:
        """Prefix of every physical name this stack creates (``hpi-<stack>``)."""
        return f"hpi-{self.stack}"


# Keys the stack file may set under the project namespace, as they appear there.
CONFIG_KEYS: tuple[str, ...] = tuple(
    (f.alias or n) for n, f in StackConfig.model_fields.items() if n not in ("stack", "region")
)


def _tags_follow_aws_rules(cfg: StackConfig) -> Iterator[ConfigIssue]:
    """``tags`` go on every taggable AWS resource: AWS's tag rules apply (no ``aws:`` prefix, lengths, characters,
    at most 50 with the stack's own), and a key the stack sets itself would be overwritten silently
    (``policies/aws_names.py``: Tag Editor user guide, "Tag naming limits and requirements")."""
    for key, problem in aws_names.tag_problems(cfg.tags, cfg.stack_tags):
        yield ConfigIssue(join_path("tags", key) if key else "tags", f"{problem} ({aws_names.TAG_RULES})")


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackConfig], ...] = (_tags_follow_aws_rules,)
