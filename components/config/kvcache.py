"""``hyperpod-inference:kvCache`` — the L2 KV cache shared between inference nodes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from .base import ConfigIssue, Model, join_path
from .checks import cross_check

if TYPE_CHECKING:
    from .stack import StackConfig

L2_SPEC_PATH = ("kvCacheSpec", "l2CacheSpec")


class RedisConfig(Model):
    """ElastiCache replication group used as the L2 backend (``l2CacheBackend: redis``)."""

    engine: Literal["valkey", "redis"] = "valkey"
    engine_version: str = Field(
        default="8.0",
        pattern=r"^[0-9]+\.[0-9]+$",
        description="Pinned engine version (major.minor): valkey 7.2/8.0/8.1, redis 6.2/7.0/7.1.",
    )
    node_type: str = Field(default="cache.r7g.large", pattern=r"^cache\.[a-z0-9]+\.[a-z0-9]+$")
    replicas: int = Field(default=1, ge=0, le=5, description="Read replicas per shard; prod needs at least 1.")
    port: int = Field(default=6379, ge=1024, le=65535)
    transit_encryption: bool = Field(default=True, description="TLS in transit (rediss://). Required in prod.")


class KvCacheConfig(Model):
    l2_backend: Literal["none", "redis", "tieredstorage"] = Field(
        default="none",
        description="none; redis (ElastiCache, this package creates it); tieredstorage (HyperPod managed).",
    )
    redis: RedisConfig = Field(default_factory=RedisConfig)


# Engine versions ElastiCache offers per engine, and the parameter-group family each one uses.
ENGINE_FAMILIES: dict[str, dict[str, str]] = {
    "valkey": {"7.2": "valkey7", "8.0": "valkey8", "8.1": "valkey8"},
    "redis": {"6.2": "redis6.x", "7.0": "redis7", "7.1": "redis7"},
}


def parameter_group_family(engine: str, engine_version: str) -> str:
    """The ElastiCache parameter-group family of a pinned engine version (validated by the checks below)."""
    return ENGINE_FAMILIES[engine][engine_version]


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


def _kv_cache_checks(cfg: StackConfig) -> Iterable[ConfigIssue]:
    kv = cfg.kv_cache
    redis = kv.redis
    if redis.engine_version not in ENGINE_FAMILIES[redis.engine]:
        yield ConfigIssue(
            "kvCache.redis.engineVersion",
            f"{redis.engine} {redis.engine_version} is not a pinned ElastiCache version; allowed: "
            f"{', '.join(ENGINE_FAMILIES[redis.engine])}",
        )
    if kv.l2_backend == "redis" and cfg.is_prod:
        if redis.replicas < 1:
            yield ConfigIssue(
                "kvCache.redis.replicas",
                "prod needs at least 1 replica (Multi-AZ with automatic failover); 0 leaves every worker's L2 "
                "tier on one node",
            )
        if not redis.transit_encryption:
            yield ConfigIssue(
                "kvCache.redis.transitEncryption",
                "must be true in prod: KV blocks are derived from user prompts and the AUTH token needs TLS",
            )
    for i, endpoint in enumerate(cfg.endpoints):
        spec = endpoint_spec(endpoint)
        if l2_backend(spec) != "redis":
            continue
        l2 = l2_spec(spec) or {}
        url = l2.get("l2CacheLocalUrl")
        if kv.l2_backend == "redis" and url:
            yield ConfigIssue(
                join_path("endpoints", i, "spec", *L2_SPEC_PATH, "l2CacheLocalUrl"),
                "this stack creates the Redis L2 cache (kvCache.l2Backend: redis) and fills in its URL and AUTH "
                "token; remove l2CacheLocalUrl (a second Redis would split the cache)",
            )


cross_check(_kv_cache_checks)


def _gateway_auth_checks(cfg: StackConfig) -> Iterable[ConfigIssue]:
    """Gateway endpoints have no request authentication unless ``spec.auth.jwt`` is set (AWS docs): prod needs it.

    The provider's own fields (issuer, remoteJWKS.uri, audiences or requiredClaims) are checked by the typed
    gateway spec; this adds the environment rule and the endpoints' opt-in. It lives with the serving-layer
    checks (L2 cache, endpoints, gateway) that this package wires together.
    """
    gw = cfg.gateway
    spec = gw.spec_dict() if hasattr(gw, "spec_dict") else dict(gw.spec or {})
    if gw.enabled and cfg.is_prod and not (spec.get("auth") or {}).get("jwt"):
        yield ConfigIssue(
            "gateway.spec.auth.jwt.provider",
            "prod requires JWT authentication on the Inference Gateway: set name, issuer, remoteJWKS.uri and "
            "audiences or requiredClaims",
        )
    for i, endpoint in enumerate(cfg.endpoints):
        opt_in = endpoint_spec(endpoint).get("inferenceGateway")
        if isinstance(opt_in, dict) and opt_in.get("enabled") and not gw.enabled:
            yield ConfigIssue(
                join_path("endpoints", i, "spec", "inferenceGateway", "enabled"),
                "the endpoint opts into the Inference Gateway but gateway.enabled is false in this stack",
            )


cross_check(_gateway_auth_checks)
