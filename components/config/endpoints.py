"""``hyperpod-inference:endpoints`` — the models served, each as its operator custom resource."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag

from policies import compatibility as compat
from policies import rules

from .base import ConfigAdvisory, ConfigIssue, Model, join_path
from .checks import advisory_check, cross_check
from .crd import CrdModel, InferenceEndpointConfigSpec, JumpStartModelSpec

if TYPE_CHECKING:
    from .stack import StackConfig

K8sName = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
L2_SPEC_PATH = ("kvCacheSpec", "l2CacheSpec")

# Where the operator's CRD puts the facts the ALB target group needs (operator-facts.md §4, §4.3).
DEFAULT_HEALTH_CHECK_PATH = "/ping"  # spec.loadBalancer.healthCheckPath default in the CRD
DEFAULT_ROUTING_ALGORITHM = "least_outstanding_requests"  # spec.loadBalancer.routingAlgorithm default
DEFAULT_TARGET_PORT = 8080  # used only when an endpoint has no worker.modelInvocationPort (JumpStartModel)


class _Endpoint(Model):
    """What every ``endpoints[]`` entry has, whatever its kind."""

    name: str = Field(pattern=K8sName, max_length=63, description="metadata.name of the custom resource.")
    namespace: str = Field(default="default", pattern=K8sName, max_length=63)
    engine: Literal["vllm", "sglang", "other"] = Field(
        description="The model server in the image; rendered as the hyperpod-inference/engine label the rules read."
    )

    def spec_dict(self) -> dict[str, Any]:
        """The spec exactly as written in the stack file (camelCase, unset fields left out)."""
        spec: CrdModel = getattr(self, "spec")  # noqa: B009 - declared by each subclass
        return spec.dump()


class InferenceEndpointConfigEndpoint(_Endpoint):
    """An ``InferenceEndpointConfig`` (bring your own model and container)."""

    kind: Literal["InferenceEndpointConfig"] = "InferenceEndpointConfig"
    spec: InferenceEndpointConfigSpec = Field(
        description="The custom resource's spec, field for field, camelCase as in the AWS docs."
    )


class JumpStartModelEndpoint(_Endpoint):
    """A ``JumpStartModel`` (a SageMaker JumpStart model by id)."""

    kind: Literal["JumpStartModel"]
    spec: JumpStartModelSpec = Field(description="The custom resource's spec, field for field, camelCase.")


def _kind_of(value: Any) -> str:
    """The union tag: ``kind`` as written (``InferenceEndpointConfig`` when omitted)."""
    if isinstance(value, dict):
        return str(value.get("kind", "InferenceEndpointConfig"))
    return str(getattr(value, "kind", "InferenceEndpointConfig"))


EndpointConfig = Annotated[
    Annotated[InferenceEndpointConfigEndpoint, Tag("InferenceEndpointConfig")]
    | Annotated[JumpStartModelEndpoint, Tag("JumpStartModel")],
    Discriminator(_kind_of),
]
"""One ``endpoints[]`` entry; ``kind`` selects the spec model."""


# --- helpers that read an endpoint's spec (used by the kv-cache, gateway and ingress layers) ----------------


def endpoint_spec(endpoint: Any) -> dict[str, Any]:
    """An ``endpoints[]`` entry's spec as the plain camelCase mapping the user wrote.

    The spec may be a mapping or a typed pydantic model; only the keys the user set are kept, so a
    rendered custom resource never gains defaults the user did not ask for.
    """
    if hasattr(endpoint, "spec_dict"):
        typed: dict[str, Any] = endpoint.spec_dict()
        return typed
    spec = endpoint.spec
    if isinstance(spec, BaseModel):
        dumped: dict[str, Any] = spec.model_dump(by_alias=True, exclude_unset=True, mode="json")
        return dumped
    return dict(spec)


def l2_spec(spec: dict[str, Any]) -> dict[str, Any] | None:
    """``spec.kvCacheSpec.l2CacheSpec`` when present."""
    kv = spec.get("kvCacheSpec")
    l2 = kv.get("l2CacheSpec") if isinstance(kv, dict) else None
    return l2 if isinstance(l2, dict) else None


def l2_backend(spec: dict[str, Any]) -> str | None:
    """The endpoint's L2 backend, lower-cased (the CRD pattern is case-insensitive), or None."""
    l2 = l2_spec(spec)
    backend = l2.get("l2CacheBackend") if l2 else None
    return backend.lower() if isinstance(backend, str) else None


def own_l2_url(spec: dict[str, Any]) -> str | None:
    """The ``l2CacheLocalUrl`` the endpoint names itself (a Redis of its own), or None."""
    url = (l2_spec(spec) or {}).get("l2CacheLocalUrl")
    return url if isinstance(url, str) and url else None


def wants_stack_redis(endpoint: Any) -> bool:
    """True when the endpoint asks for the Redis L2 backend without naming a URL: the stack's Redis fills it."""
    spec = endpoint_spec(endpoint)
    return l2_backend(spec) == "redis" and own_l2_url(spec) is None


def opts_into_gateway(endpoint: Any) -> bool:
    """``spec.inferenceGateway.enabled`` is true."""
    opt_in = endpoint_spec(endpoint).get("inferenceGateway")
    return isinstance(opt_in, dict) and bool(opt_in.get("enabled"))


def _dig(value: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def endpoint_port(endpoint: Any) -> int:
    """The model server's container port from the endpoint spec (``worker.modelInvocationPort``)."""
    port = _dig(endpoint_spec(endpoint), "worker", "modelInvocationPort", "containerPort")
    return int(port) if isinstance(port, int | float) else DEFAULT_TARGET_PORT


def endpoint_health_check_path(endpoint: Any) -> str:
    path = _dig(endpoint_spec(endpoint), "loadBalancer", "healthCheckPath")
    return path if isinstance(path, str) and path.startswith("/") else DEFAULT_HEALTH_CHECK_PATH


def intelligent_routing(endpoint: Any) -> bool:
    """``spec.intelligentRoutingSpec.enabled`` is true (the operator then serves it through its router)."""
    return _dig(endpoint_spec(endpoint), "intelligentRoutingSpec", "enabled") is True


def endpoint_routing_algorithm(endpoint: Any) -> str:
    algo = _dig(endpoint_spec(endpoint), "loadBalancer", "routingAlgorithm")
    return algo if algo in ("least_outstanding_requests", "round_robin") else DEFAULT_ROUTING_ALGORITHM


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


CR_GROUP_VERSION = "inference.sagemaker.aws.amazon.com/v1"


def custom_resource(ep: InferenceEndpointConfigEndpoint | JumpStartModelEndpoint, cfg: StackConfig) -> dict[str, Any]:
    """The custom resource an endpoint renders to, as the rules see it at config time.

    The engine travels as the ``hyperpod-inference/engine`` label. With ``l2CacheBackend: redis`` and no
    ``l2CacheLocalUrl`` written, the package wires the stack's Redis URL (its own ElastiCache group, or
    ``kvCache.redis.external``); :meth:`KvCacheConfig.url_at_config_time` gives what the rules may see of it.
    """
    spec = ep.spec_dict()
    stack_url = cfg.kv_cache.url_at_config_time(cfg.name_prefix)
    if wants_stack_redis(ep) and stack_url is not None:
        l2 = l2_spec(spec) or {}
        kv = dict(spec["kvCacheSpec"])
        kv["l2CacheSpec"] = {**l2, "l2CacheLocalUrl": stack_url}
        spec = {**spec, "kvCacheSpec": kv}
    return {
        "apiVersion": CR_GROUP_VERSION,
        "kind": ep.kind,
        "metadata": {"name": ep.name, "namespace": ep.namespace, "labels": {rules.ENGINE_LABEL: ep.engine}},
        "spec": spec,
    }


def rule_context(cfg: StackConfig) -> rules.RuleContext:
    return rules.RuleContext(
        environment=cfg.environment,
        addon_version=cfg.operator.addon_version,
        instance_types=frozenset(g.instance_type for g in cfg.cluster.instance_groups),
        stack_tags=cfg.common_tags,
    )


def _spec_key(i: int, path: str) -> str:
    return join_path("endpoints", i, "spec", *path.split(".")) if path else join_path("endpoints", i)


# Covered by _features_supported with a more precise message; the policy pack still runs it.
_RULES_NOT_AT_CONFIG_TIME = frozenset({"feature-supported-by-addon-version"})


@cross_check
def _endpoint_rules(cfg: StackConfig) -> Iterator[ConfigIssue]:
    """The policy rules that are mandatory for this environment, run before anything is registered."""
    if not compat.is_known_addon(cfg.operator.addon_version):
        return
    ctx = rule_context(cfg)
    for i, ep in enumerate(cfg.endpoints):
        cr = custom_resource(ep, cfg)
        for rule in rules.RULES.values():
            if rule.name in _RULES_NOT_AT_CONFIG_TIME or rule.level(cr, ctx) != "mandatory":
                continue
            for v in rule.check(cr, ctx):
                yield ConfigIssue(_spec_key(i, v.path), f"{v} [{rule.name}]")


@advisory_check
def _endpoint_rule_advisories(cfg: StackConfig) -> Iterator[ConfigAdvisory]:
    """What the endpoint rules cannot check offline where their level is not mandatory (the advisories' table)."""
    if not compat.is_known_addon(cfg.operator.addon_version):
        return
    ctx = rule_context(cfg)
    for i, ep in enumerate(cfg.endpoints):
        cr = custom_resource(ep, cfg)
        for rule in rules.RULES.values():
            if rule.name in _RULES_NOT_AT_CONFIG_TIME or rule.level(cr, ctx) == "mandatory":
                continue
            for v in rule.check(cr, ctx):
                if v.checked_by is not None:
                    yield ConfigAdvisory(_spec_key(i, v.path), str(v), rule.name, v.checked_by)


MODEL_BUCKET_REGION = "model-bucket-region"


@advisory_check
def _model_bucket_region(cfg: StackConfig) -> Iterator[ConfigAdvisory]:
    """A model bucket in another Region works, but every download crosses Regions (billed inter-Region transfer,
    slower start); and what Region the bucket really is in only S3 knows (GetBucketLocation)."""
    for i, ep in enumerate(cfg.endpoints):
        s3 = _dig(ep.spec_dict(), "modelSourceConfig", "s3Storage")
        if not isinstance(s3, dict) or not isinstance(s3.get("region"), str) or s3["region"] == cfg.region:
            continue
        yield ConfigAdvisory(
            join_path("endpoints", i, "spec", "modelSourceConfig", "s3Storage", "region"),
            f"the model bucket {s3.get('bucketName')!r} is in {s3['region']}, the stack in {cfg.region}: every model "
            "download crosses Regions (inter-Region data transfer is billed; pods start slower)",
            MODEL_BUCKET_REGION,
            "tools.preflight (GetBucketLocation: the bucket's real Region)",
        )


@cross_check
def _redis_backend_needs_a_url(cfg: StackConfig) -> Iterator[ConfigIssue]:
    """An endpoint asking for the Redis L2 backend needs a URL: the stack's Redis, or its own ``l2CacheLocalUrl``."""
    for i, ep in enumerate(cfg.endpoints):
        if wants_stack_redis(ep) and cfg.kv_cache.l2_backend != "redis":
            yield ConfigIssue(
                join_path("endpoints", i, "spec", *L2_SPEC_PATH, "l2CacheBackend"),
                f"redis needs a Redis URL: kvCache.l2Backend: redis (the stack's ElastiCache, or "
                f"kvCache.redis.external), or the endpoint's own l2CacheLocalUrl; kvCache.l2Backend is "
                f"{cfg.kv_cache.l2_backend}",
            )


@cross_check
def _unique_endpoints(cfg: StackConfig) -> Iterator[ConfigIssue]:
    """Two endpoints with one (namespace, name) would be the same Kubernetes object."""
    seen: dict[tuple[str, str], int] = {}
    for i, ep in enumerate(cfg.endpoints):
        key = (ep.namespace, ep.name)
        if key in seen:
            yield ConfigIssue(
                join_path("endpoints", i, "name"),
                f"{ep.namespace}/{ep.name} is already endpoints[{seen[key]}]; (namespace, name) must be unique",
            )
        else:
            seen[key] = i
