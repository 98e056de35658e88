"""``hyperpod-inference:gateway`` — the managed Inference Gateway (add-on v2.0.0-eksbuild.2+)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Model


class GatewayConfig(Model):
    enabled: bool = False
    name: str = Field(default="inference-gateway", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    namespace: str = Field(default="hyperpod-inference-system", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    spec: dict[str, Any] = Field(
        default_factory=dict, description="The InferenceGatewayConfig spec, as in the AWS docs."
    )
