"""``hyperpod-inference:endpoints`` — the models served, each as its operator custom resource."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Model

K8sName = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class EndpointConfig(Model):
    name: str = Field(pattern=K8sName, max_length=63, description="metadata.name of the custom resource.")
    namespace: str = Field(default="default", pattern=K8sName, max_length=63)
    kind: Literal["InferenceEndpointConfig", "JumpStartModel"] = "InferenceEndpointConfig"
    engine: Literal["vllm", "sglang", "other"] = Field(description="The model server in the image.")
    spec: dict[str, Any] = Field(
        description="The custom resource's spec, field for field, camelCase as in the AWS docs."
    )
