"""``hyperpod-inference:kvCache`` — the L2 KV cache shared between inference nodes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model


class RedisConfig(Model):
    """ElastiCache replication group used as the L2 backend (``l2CacheBackend: redis``)."""

    engine: Literal["valkey", "redis"] = "valkey"
    engine_version: str = Field(default="8.0", pattern=r"^[0-9]+\.[0-9]+$")
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
