"""``hyperpod-inference:endpoints`` — the models served, each as its operator custom resource."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from policies import compatibility as compat

from .base import ConfigIssue, Model, join_path
from .checks import cross_check

if TYPE_CHECKING:
    from .stack import StackConfig

K8sName = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class EndpointConfig(Model):
    name: str = Field(pattern=K8sName, max_length=63, description="metadata.name of the custom resource.")
    namespace: str = Field(default="default", pattern=K8sName, max_length=63)
    kind: Literal["InferenceEndpointConfig", "JumpStartModel"] = "InferenceEndpointConfig"
    engine: Literal["vllm", "sglang", "other"] = Field(description="The model server in the image.")
    spec: dict[str, Any] = Field(
        description="The custom resource's spec, field for field, camelCase as in the AWS docs."
    )

    def spec_dict(self) -> dict[str, Any]:
        """The spec exactly as written in the stack file (camelCase, unset fields left out)."""
        return dict(self.spec)


@cross_check
def _addon_in_table(cfg: StackConfig) -> Iterator[ConfigIssue]:
    """The add-on pin must be a release the compatibility table knows (policies/compatibility.yaml)."""
    version = cfg.operator.addon_version
    if not compat.is_known_addon(version):
        yield ConfigIssue(
            "operator.addonVersion",
            f"{version} is not in the compatibility table (policies/compatibility.yaml); "
            f"allowed: {', '.join(compat.addon_versions())}",
        )


@cross_check
def _features_supported(cfg: StackConfig) -> Iterator[ConfigIssue]:
    """An endpoint may only use spec fields the pinned add-on's operator understands."""
    version = cfg.operator.addon_version
    if not compat.is_known_addon(version):
        return
    for i, ep in enumerate(cfg.endpoints):
        for path, introduced, feature in compat.features_missing(ep.spec_dict(), version, ep.kind):
            minimum = compat.minimum_addon_for(introduced)
            need = minimum.addon_version if minimum else f"an add-on with operator {introduced}"
            yield ConfigIssue(
                join_path("endpoints", i, "spec", *path.split(".")),
                f"`{feature.label}` needs operator {introduced}+ (add-on {need} or later); "
                f"operator.addonVersion pins {version} (operator {compat.addon(version).operator_version})",
            )
