"""``hyperpod-inference:gateway`` — the managed Inference Gateway (add-on v2.0.0-eksbuild.2+).

Where the gateway lives: with the models it fronts. Each scheduler becomes an InferencePool, and "[its selector]
matches Pods by their labels only within the same namespace; cross-namespace selection is not supported"
(gateway-api-inference-extension API reference, ``InferencePoolSpec.selector``:
gateway-api-inference-extension.sigs.k8s.io/reference/spec; the llm-d API reference repeats it). AWS's guide
applies the ``InferenceGatewayConfig`` with ``namespace: ${MODEL_NS}`` and the controller then creates "one
endpoint picker deployment per scheduler, in your model namespace" (awslabs.github.io/ai-on-sagemaker-hyperpod,
docs/eks-orchestration/inference/inference-gateway, "Create the Gateway" and "Inspect the gateway"; only the
Envoy proxy goes to hyperpod-inference-system). So the gateway's namespace defaults to the one namespace of the
endpoints that opt in, and every opted-in endpoint must be in it and name this gateway.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from pydantic import Field

from policies import compatibility as compat
from policies.baselines import GATEWAY_REQUIRES_JWT, gateway_jwt_violations

from .base import ConfigAdvisory, ConfigIssue, Model, join_path
from .checks import Advise, Check
from .cluster import ClusterConfig
from .endpoints import Endpoint
from .gateway_spec import InferenceGatewayConfigSpec
from .operator import OperatorConfig


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def is_prod(self) -> bool: ...
    @property
    def operator(self) -> OperatorConfig: ...
    @property
    def cluster(self) -> ClusterConfig: ...
    @property
    def gateway(self) -> GatewayConfig: ...
    @property
    def endpoints(self) -> Sequence[Endpoint]: ...


class GatewayConfig(Model):
    enabled: bool = False
    name: str = Field(default="inference-gateway", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    namespace: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
        description="Namespace of the InferenceGatewayConfig: the namespace of the endpoints that opt in (an "
        "InferencePool selects pods in its own namespace only). Default: that namespace; required when no "
        "endpoint opts in.",
    )
    spec: InferenceGatewayConfigSpec | None = Field(
        default=None,
        description="The InferenceGatewayConfig v1alpha1 spec, camelCase as in the AWS docs; required when enabled.",
    )

    def spec_dict(self) -> dict[str, Any]:
        """The spec exactly as written (camelCase, unset fields left out); empty when not given."""
        return self.spec.dump() if self.spec is not None else {}


def gateway_namespace(cfg: StackView) -> str | None:
    """Where the InferenceGatewayConfig goes: ``gateway.namespace``, else the opted-in endpoints' one namespace.

    None when neither decides (no endpoint opts in, or they are in several namespaces: both config errors).
    """
    if cfg.gateway.namespace is not None:
        return cfg.gateway.namespace
    namespaces = list(dict.fromkeys(e.namespace for e in cfg.endpoints if e.opts_into_gateway))
    return namespaces[0] if len(namespaces) == 1 else None


def _gateway_with_its_endpoints(cfg: StackView) -> Iterator[ConfigIssue]:
    """Every endpoint that opts in shares one namespace with the gateway and names it (see the module docstring)."""
    gw = cfg.gateway
    if not gw.enabled:
        return
    opted = [(i, e) for i, e in enumerate(cfg.endpoints) if e.opts_into_gateway]
    where = gateway_namespace(cfg)
    if not opted and where is None:
        yield ConfigIssue(
            "gateway.namespace",
            "required when no endpoint opts into the gateway (spec.inferenceGateway.enabled): the namespace of the "
            "models it fronts (an InferencePool selects pods in its own namespace only)",
        )
    if opted and where is None:
        listed = ", ".join(f"endpoints[{i}] {e.name} in {e.namespace}" for i, e in opted)
        for i, _ in opted:
            yield ConfigIssue(
                join_path("endpoints", i, "namespace"),
                f"endpoints opting into the Inference Gateway must share one namespace with it (an InferencePool "
                f"selects pods in its own namespace only); they are in several: {listed}. Move them into one, or "
                "run one gateway per namespace in separate stacks",
            )
    elif where is not None:
        for i, endpoint in opted:
            if endpoint.namespace != where:
                yield ConfigIssue(
                    join_path("endpoints", i, "namespace"),
                    f"{endpoint.namespace}, but gateway.namespace is {where}: the gateway's InferencePools select "
                    "pods in their own namespace only, so this endpoint would get no traffic; put both in one "
                    "namespace",
                )
    for i, endpoint in opted:
        name = endpoint.gateway_name
        if name != gw.name:
            shown = f"names {name!r}" if name else "names no gateway (the operator then generates inf-igw-<uuid>)"
            yield ConfigIssue(
                join_path("endpoints", i, "spec", "inferenceGateway", "name"),
                f"{shown}; this stack's gateway is {gw.name!r}: any other name makes the operator create a gateway "
                f"without this stack's spec (no JWT authentication); set name: {gw.name}",
            )


def _gateway_needs_spec(cfg: StackView) -> Iterator[ConfigIssue]:
    """An enabled gateway needs its spec (bbr and at least one scheduler); there is no useful default."""
    if cfg.gateway.enabled and cfg.gateway.spec is None:
        yield ConfigIssue("gateway.spec", "required when gateway.enabled is true (bbr and schedulers at least)")


def _gateway_needs_addon(cfg: StackView) -> Iterator[ConfigIssue]:
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


def _gateway_auth_checks(cfg: StackView) -> Iterable[ConfigIssue]:
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
        if endpoint.opts_into_gateway and not gw.enabled:
            yield ConfigIssue(
                join_path("endpoints", i, "spec", "inferenceGateway", "enabled"),
                "the endpoint opts into the Inference Gateway but gateway.enabled is false in this stack",
            )


# --- names that must point at something this stack has --------------------------------------------------------


def _scheduler_gaps(cfg: StackView) -> list[tuple[int, str, list[str]]]:
    """``(scheduler index, modelName, the served names)`` of every scheduler no endpoint of this stack serves."""
    if not cfg.gateway.enabled or cfg.gateway.spec is None:
        return []
    served = sorted(str(ep.model_name) for ep in cfg.endpoints if ep.opts_into_gateway and ep.model_name)
    return [(j, s.model_name, served) for j, s in enumerate(cfg.gateway.spec.schedulers) if s.model_name not in served]


def _scheduler_models_knowable(cfg: StackView) -> bool:
    """Whether this stack's endpoints are all the models the gateway can front: not on an adopted cluster (other
    models may run there) and no JumpStartModel opts in (the operator names its served model)."""
    jumpstart = any(ep.opts_into_gateway and ep.kind == "JumpStartModel" for ep in cfg.endpoints)
    return cfg.cluster.existing is None and not jumpstart


def _scheduler_model_served(cfg: StackView) -> Iterator[ConfigIssue]:
    """A scheduler's ``modelName`` must be the ``spec.modelName`` of an endpoint that opts into the gateway: the
    body-based router sends a request for that model to that scheduler (D4), and with no such endpoint there is
    nothing behind it."""
    if not _scheduler_models_knowable(cfg):
        return
    for j, model, served in _scheduler_gaps(cfg):
        yield ConfigIssue(
            join_path("gateway", "spec", "schedulers", j, "modelName"),
            f"{model!r} is served by no endpoint of this stack that opts into the gateway; served: "
            f"{', '.join(served) or 'none (no endpoint sets spec.inferenceGateway.enabled)'}",
        )


def _scheduler_model_elsewhere(cfg: StackView) -> Iterator[ConfigAdvisory]:
    """On an adopted cluster (or with a JumpStartModel behind the gateway) the model may be served by something
    this stack does not describe: not checked offline."""
    if _scheduler_models_knowable(cfg):
        return
    for j, model, _ in _scheduler_gaps(cfg):
        yield ConfigAdvisory(
            join_path("gateway", "spec", "schedulers", j, "modelName"),
            f"{model!r} is served by no endpoint of this stack; it may be a model another stack runs on the adopted "
            "cluster, or a JumpStartModel's served name",
            "scheduler-model-served",
            "the cluster: `kubectl get inferenceendpointconfigs,jumpstartmodels -A` (spec.modelName)",
        )


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (
    _gateway_with_its_endpoints,
    _gateway_needs_spec,
    _gateway_needs_addon,
    _gateway_auth_checks,
    _scheduler_model_served,
)
ADVISORIES: tuple[Advise[StackView], ...] = (_scheduler_model_elsewhere,)
