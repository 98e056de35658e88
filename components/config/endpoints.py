"""``hyperpod-inference:endpoints`` — the models served, each as its operator custom resource."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from policies import compatibility as compat
from policies import rules

from .base import ConfigIssue, Model, join_path
from .checks import cross_check
from .crd import CrdModel, InferenceEndpointConfigSpec, JumpStartModelSpec

if TYPE_CHECKING:
    from .stack import StackConfig

K8sName = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


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
    ``l2CacheLocalUrl`` written, the package wires the URL of its own ElastiCache group; a stand-in with the
    scheme that group will have (``rediss://`` with transit encryption) takes its place here.
    """
    spec = ep.spec_dict()
    l2 = (spec.get("kvCacheSpec") or {}).get("l2CacheSpec") or {}
    if (
        str(l2.get("l2CacheBackend", "")).lower() == "redis"
        and not l2.get("l2CacheLocalUrl")
        and cfg.kv_cache.l2_backend == "redis"
    ):
        scheme = "rediss" if cfg.kv_cache.redis.transit_encryption else "redis"
        kv = dict(spec["kvCacheSpec"])
        kv["l2CacheSpec"] = {**l2, "l2CacheLocalUrl": f"{scheme}://kvcache.{cfg.name_prefix}:{cfg.kv_cache.redis.port}"}
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
    )


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
                where = join_path("endpoints", i, "spec", *v.path.split(".")) if v.path else join_path("endpoints", i)
                yield ConfigIssue(where, f"{v} [{rule.name}]")


@cross_check
def _redis_backend_needs_kvcache_redis(cfg: StackConfig) -> Iterator[ConfigIssue]:
    """An endpoint asking for the Redis L2 backend needs the stack's ElastiCache (``kvCache.l2Backend: redis``)."""
    for i, ep in enumerate(cfg.endpoints):
        backend = compat.dig(ep.spec_dict(), "kvCacheSpec.l2CacheSpec.l2CacheBackend")[1]
        if isinstance(backend, str) and backend.lower() == "redis" and cfg.kv_cache.l2_backend != "redis":
            yield ConfigIssue(
                join_path("endpoints", i, "spec", "kvCacheSpec", "l2CacheSpec", "l2CacheBackend"),
                f"redis needs kvCache.l2Backend: redis (the stack's ElastiCache); kvCache.l2Backend is "
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
