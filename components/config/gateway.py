"""``hyperpod-inference:gateway`` — the managed Inference Gateway (add-on v2.0.0-eksbuild.2+)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pydantic import Field

from policies import compatibility as compat
from policies.baselines import GATEWAY_REQUIRES_JWT, gateway_jwt_violations

from .base import ConfigIssue, Model, join_path
from .checks import cross_check
from .crd import InferenceGatewayConfigSpec
from .endpoints import opts_into_gateway

if TYPE_CHECKING:
    from .stack import StackConfig


class GatewayConfig(Model):
    enabled: bool = False
    name: str = Field(default="inference-gateway", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    namespace: str = Field(default="hyperpod-inference-system", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    spec: InferenceGatewayConfigSpec | None = Field(
        default=None,
        description="The InferenceGatewayConfig v1alpha1 spec, camelCase as in the AWS docs; required when enabled.",
    )

    def spec_dict(self) -> dict[str, Any]:
        """The spec exactly as written (camelCase, unset fields left out); empty when not given."""
        return self.spec.dump() if self.spec is not None else {}


@cross_check
def _gateway_needs_spec(cfg: StackConfig) -> Iterator[ConfigIssue]:
    """An enabled gateway needs its spec (bbr and at least one scheduler); there is no useful default."""
    if cfg.gateway.enabled and cfg.gateway.spec is None:
        yield ConfigIssue("gateway.spec", "required when gateway.enabled is true (bbr and schedulers at least)")


@cross_check
def _gateway_needs_addon(cfg: StackConfig) -> Iterator[ConfigIssue]:
    """The managed Inference Gateway ships only in add-on releases the table marks (D4: v2.0.0-eksbuild.2+)."""
    version = cfg.operator.addon_version
    if not cfg.gateway.enabled or not compat.is_known_addon(version):
        return
    if not compat.addon(version).inference_gateway:
        first = next(a.addon_version for a in compat.load_compatibility().addons if a.inference_gateway)
        yield ConfigIssue(
            "gateway.enabled",
            f"the managed Inference Gateway needs add-on {first} or later; operator.addonVersion pins {version}",
        )


@cross_check
def _gateway_auth_checks(cfg: StackConfig) -> Iterable[ConfigIssue]:
    """Gateway endpoints have no request authentication unless ``spec.auth.jwt`` is set (AWS docs): prod needs it.

    The rule is the policy pack's ``gateway-requires-jwt`` (``policies/baselines.py``), run here on the spec as
    written so prod fails before anything is registered; the provider's own fields (issuer, remoteJWKS.uri,
    audiences or requiredClaims) are also checked by the typed gateway spec. Endpoints that opt into the
    gateway need it enabled.
    """
    gw = cfg.gateway
    if gw.enabled and cfg.is_prod and gw.spec is not None:
        for message in gateway_jwt_violations(gw.spec_dict()):
            yield ConfigIssue(
                "gateway.spec.auth.jwt.provider",
                f"prod requires JWT authentication on the Inference Gateway: {message}; set name, issuer, "
                f"remoteJWKS.uri and audiences or requiredClaims [{GATEWAY_REQUIRES_JWT}]",
            )
    for i, endpoint in enumerate(cfg.endpoints):
        if opts_into_gateway(endpoint) and not gw.enabled:
            yield ConfigIssue(
                join_path("endpoints", i, "spec", "inferenceGateway", "enabled"),
                "the endpoint opts into the Inference Gateway but gateway.enabled is false in this stack",
            )
