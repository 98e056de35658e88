"""The root of the stack-config contract: every key under ``hyperpod-inference:``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from . import capacity as _capacity  # noqa: F401 - registers the scheduling-feasibility cross-check
from .base import Model
from .cluster import ClusterConfig
from .endpoints import EndpointConfig
from .gateway import GatewayConfig
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
    tags: dict[str, str] = Field(default_factory=dict, description="Extra tags on every AWS resource that takes tags.")

    @property
    def is_prod(self) -> bool:
        return self.environment == "prod"

    @property
    def common_tags(self) -> dict[str, str]:
        """Tags every taggable AWS resource of the stack carries."""
        return {
            **self.tags,
            "hyperpod-inference:stack": self.stack,
            "hyperpod-inference:environment": self.environment,
            "managed-by": "pulumi",
        }

    @property
    def name_prefix(self) -> str:
        """Prefix of every physical name this stack creates (``hpi-<stack>``)."""
        return f"hpi-{self.stack}"


# Keys the stack file may set under the project namespace, as they appear there.
CONFIG_KEYS: tuple[str, ...] = tuple(
    (f.alias or n) for n, f in StackConfig.model_fields.items() if n not in ("stack", "region")
)
