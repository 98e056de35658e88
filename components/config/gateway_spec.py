"""The InferenceGatewayConfig v1alpha1 spec, typed by hand from the AWS documentation (no public CRD exists).

Source: AWS docs "sagemaker-hyperpod-model-deployment-inference-gateway" (D4 in ``policies/compatibility.yaml``),
including its CRD reference, as summarised in ../shared/docs/operator-facts.md §7. Unlike the generated
``components/config/crd.py`` (InferenceEndpointConfig, JumpStartModel), no CRD YAML of this kind is published, so
every field, bound and documented validation rule below is transcribed from that page; ``tools.plan.k8s_schema``
reports the rendered object as cannot-validate-offline. Same conventions as the generated models: keys by their
documented names only, unknown keys forbidden, no defaults of its own.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from .crd import CrdModel

K8sName = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class BbrBackend(CrdModel):
    """`bbr.defaultBackend` — where body-based routing sends requests that name no known model."""

    name: str | None = Field(default=None, alias="name")
    port: int | None = Field(default=None, alias="port", ge=1, le=65535)


class Bbr(CrdModel):
    """`bbr` — body-based routing: reads the request body's ``model`` to pick a scheduler."""

    enabled: bool = Field(alias="enabled", description="Required; must be true with more than one scheduler.")
    replicas: int | None = Field(default=None, alias="replicas", ge=1)
    default_backend: BbrBackend | None = Field(default=None, alias="defaultBackend")
    max_request_body_bytes: int | None = Field(default=None, alias="maxRequestBodyBytes", ge=1, le=268435456)


class GatewayTls(CrdModel):
    """`tls` — ``{}`` auto-issues a certificate through cert-manager and imports it to ACM."""

    acm_arn: str | None = Field(
        default=None, alias="acmArn", pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[a-fA-F0-9-]+$"
    )


class RemoteJwks(CrdModel):
    uri: str = Field(alias="uri", pattern=r"^https://", description="JWKS URL of the identity provider.")


class RequiredClaim(CrdModel):
    name: str = Field(alias="name", min_length=1)
    value_type: Literal["String", "StringArray"] | None = Field(default=None, alias="valueType")
    values: list[str] = Field(alias="values", min_length=1, max_length=128)

    @model_validator(mode="after")
    def _value_lengths(self) -> RequiredClaim:
        if any(not 1 <= len(v) <= 1024 for v in self.values):
            raise ValueError("each of values must be 1-1024 characters")
        return self


class JwtProvider(CrdModel):
    name: str = Field(alias="name", min_length=1)
    issuer: str = Field(alias="issuer", min_length=1)
    remote_jwks: RemoteJwks = Field(alias="remoteJWKS")
    audiences: list[str] | None = Field(default=None, alias="audiences", max_length=8)
    required_claims: list[RequiredClaim] | None = Field(default=None, alias="requiredClaims", max_length=16)

    @model_validator(mode="after")
    def _audiences_or_claims(self) -> JwtProvider:
        if not self.audiences and not self.required_claims:
            raise ValueError("a JWT provider needs audiences or requiredClaims (or both)")
        return self


class Jwt(CrdModel):
    provider: JwtProvider = Field(alias="provider")


class GatewayAuth(CrdModel):
    """`auth` — without it the gateway accepts any request that reaches it over the network."""

    jwt: Jwt = Field(alias="jwt")


class GatewayMetrics(CrdModel):
    enabled: bool | None = Field(default=None, alias="enabled")


class GatewayObservability(CrdModel):
    metrics: GatewayMetrics | None = Field(default=None, alias="metrics")


class PodDefaults(CrdModel):
    """`podDefaults` — Kubernetes pod settings applied to the gateway's pods (core types, free-form)."""

    resources: dict[str, Any] | None = Field(default=None, alias="resources")
    node_selector: dict[str, str] | None = Field(default=None, alias="nodeSelector")
    tolerations: list[dict[str, Any]] | None = Field(default=None, alias="tolerations")
    affinity: dict[str, Any] | None = Field(default=None, alias="affinity")
    labels: dict[str, str] | None = Field(default=None, alias="labels")
    annotations: dict[str, str] | None = Field(default=None, alias="annotations")
    env: list[dict[str, Any]] | None = Field(default=None, alias="env")
    env_from: list[dict[str, Any]] | None = Field(default=None, alias="envFrom")


class SchedulerWeights(CrdModel):
    queue: int | None = Field(default=None, alias="queue", ge=0)
    kv_cache: int | None = Field(default=None, alias="kvCache", ge=0)
    prefix: int | None = Field(default=None, alias="prefix", ge=0)
    lru: int | None = Field(default=None, alias="lru", ge=0)
    lora_affinity: int | None = Field(default=None, alias="loraAffinity", ge=0)
    running_requests: int | None = Field(default=None, alias="runningRequests", ge=0)
    predicted_latency: int | None = Field(default=None, alias="predictedLatency", ge=0)


class ConfigMapRef(CrdModel):
    name: str = Field(alias="name", min_length=1)
    key: str | None = Field(default=None, alias="key")


class GatewayScheduler(CrdModel):
    """`schedulers[]` — one endpoint picker per model (selects the model's pods by label)."""

    name: str = Field(alias="name", max_length=63, pattern=K8sName)
    model_selector: dict[str, Any] = Field(alias="modelSelector", description="Label selector of the model's pods.")
    model_name: str = Field(alias="modelName", min_length=1, max_length=253)
    target_port: int | None = Field(default=None, alias="targetPort", ge=1, le=65535)
    app_protocol: Literal["http", "kubernetes.io/h2c"] | None = Field(default=None, alias="appProtocol")
    scheduler: Literal["llm-d", "epp"] | None = Field(default=None, alias="scheduler")
    engine_type: Literal["vllm", "sglang"] | None = Field(default=None, alias="engineType")
    weights: SchedulerWeights | None = Field(default=None, alias="weights")
    config_map_ref: ConfigMapRef | None = Field(default=None, alias="configMapRef")
    replicas: int | None = Field(default=None, alias="replicas", ge=1)
    env: list[dict[str, Any]] | None = Field(default=None, alias="env")
    env_from: list[dict[str, Any]] | None = Field(default=None, alias="envFrom")
    lora_adapters: list[str] | None = Field(default=None, alias="loraAdapters", max_length=50)
    route_timeout: str | None = Field(
        default=None,
        alias="routeTimeout",
        pattern=r"^([0-9]{1,5}(h|m|s|ms)){1,4}$",
        description="Gateway API duration.",
    )
    log_level: int | None = Field(default=None, alias="logLevel", ge=0, le=5)

    @model_validator(mode="after")
    def _documented_rules(self) -> GatewayScheduler:
        if self.weights is not None and self.config_map_ref is not None:
            raise ValueError("weights and configMapRef are mutually exclusive")
        if self.weights is not None and self.weights.lru is not None and self.scheduler not in (None, "llm-d"):
            raise ValueError("weights.lru is only valid with scheduler: llm-d")
        if any(not 1 <= len(a) <= 253 for a in self.lora_adapters or []):
            raise ValueError("each loraAdapters entry must be 1-253 characters")
        return self


class InferenceGatewayConfigSpec(CrdModel):
    """InferenceGatewayConfig v1alpha1 spec (add-on v2.0.0-eksbuild.2+): one gateway in front of many models."""

    bbr: Bbr = Field(alias="bbr")
    tls: GatewayTls | None = Field(default=None, alias="tls")
    auth: GatewayAuth | None = Field(default=None, alias="auth")
    observability: GatewayObservability | None = Field(default=None, alias="observability")
    pod_defaults: PodDefaults | None = Field(default=None, alias="podDefaults")
    schedulers: list[GatewayScheduler] = Field(alias="schedulers", min_length=1, max_length=100)

    @model_validator(mode="after")
    def _documented_rules(self) -> InferenceGatewayConfigSpec:
        names = [s.model_name for s in self.schedulers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"schedulers[].modelName must be unique; repeated: {', '.join(dupes)}")
        sched = [s.name for s in self.schedulers]
        if len(set(sched)) != len(sched):
            raise ValueError("schedulers[].name must be unique")
        if len(self.schedulers) > 1 and not self.bbr.enabled:
            raise ValueError("bbr.enabled must be true with more than one scheduler")
        return self
