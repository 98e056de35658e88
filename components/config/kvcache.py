"""``hyperpod-inference:kvCache`` — the L2 KV cache shared between inference nodes.

Three ways to give endpoints an L2 tier:

* ``l2Backend: redis`` — the stack creates an ElastiCache (Valkey/Redis OSS) group and wires its URL (with the
  AUTH token) into every endpoint that asks for ``l2CacheBackend: redis`` without a URL;
* ``l2Backend: redis`` with ``redis.external.url`` — a Redis the stack does not create (your own ElastiCache,
  an in-cluster Redis, ...). The URL is a Pulumi secret (it may carry the AUTH token) and is wired into the
  same endpoints, exactly as the stack's own Redis; no ElastiCache resource is created;
* ``l2Backend: tieredstorage`` — HyperPod managed tiered storage.

With ``none`` or ``tieredstorage`` an endpoint may still name a Redis of its own in ``l2CacheLocalUrl`` (two
of the operator's official samples do); with ``redis`` it may not (a second Redis would split the cache).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr

from .base import ConfigIssue, Model, join_path
from .checks import cross_check
from .endpoints import L2_SPEC_PATH, endpoint_spec, l2_backend, own_l2_url
from .stackfile import OFFLINE_SECRET_PLACEHOLDER

if TYPE_CHECKING:
    from .stack import StackConfig

EXTERNAL_URL_KEY = "kvCache.redis.external.url"
# Keys of `kvCache.redis` that configure the ElastiCache group this stack creates (meaningless with `external`).
CREATED_REDIS_KEYS = {"engine": "engine", "engine_version": "engineVersion", "node_type": "nodeType",
                      "replicas": "replicas", "port": "port"}  # fmt: skip


class ExternalRedis(Model):
    """A Redis/Valkey this stack does not create; only its URL is needed."""

    url: SecretStr = Field(
        description="redis:// or rediss:// URL, with the AUTH token if any (rediss://:<token>@host:port). Must be a "
        "Pulumi secret: `pulumi config set --secret --path 'hyperpod-inference:kvCache.redis.external.url' <url>`. "
        "Its scheme must agree with kvCache.redis.transitEncryption (rediss:// when true)."
    )


class RedisConfig(Model):
    """The Redis L2 backend (``l2CacheBackend: redis``): an ElastiCache group this stack creates, or ``external``."""

    engine: Literal["valkey", "redis"] = "valkey"
    engine_version: str = Field(
        default="8.0",
        pattern=r"^[0-9]+\.[0-9]+$",
        description="Pinned engine version (major.minor): valkey 7.2/8.0/8.1, redis 6.2/7.0/7.1.",
    )
    node_type: str = Field(default="cache.r7g.large", pattern=r"^cache\.[a-z0-9]+\.[a-z0-9]+$")
    replicas: int = Field(default=1, ge=0, le=5, description="Read replicas per shard; prod needs at least 1.")
    port: int = Field(default=6379, ge=1024, le=65535)
    transit_encryption: bool = Field(
        default=True,
        description="TLS in transit (rediss://). Required in prod, for the created and the external Redis.",
    )
    external: ExternalRedis | None = Field(
        default=None, description="Use this Redis instead of creating an ElastiCache group (kvCache.l2Backend: redis)."
    )


class KvCacheConfig(Model):
    l2_backend: Literal["none", "redis", "tieredstorage"] = Field(
        default="none",
        description="none; redis (ElastiCache this package creates, or kvCache.redis.external); tieredstorage "
        "(HyperPod managed).",
    )
    redis: RedisConfig = Field(default_factory=RedisConfig)

    @property
    def creates_redis(self) -> bool:
        """The stack creates its own ElastiCache group."""
        return self.l2_backend == "redis" and self.redis.external is None

    @property
    def external_url(self) -> str | None:
        """The external Redis URL (the secret's value) when ``l2Backend: redis`` uses ``external``.

        Offline (``tools.preview``, the tests) a ``secure:`` value cannot be decrypted and arrives as the offline
        placeholder; the URL then becomes ``<scheme>://<placeholder>`` with the scheme ``transitEncryption``
        declares, so the rendered endpoints and the policy pack see the scheme the real URL must have (the
        checks below hold the real URL to it whenever it is known, i.e. under the Pulumi CLI).
        """
        if self.l2_backend != "redis" or self.redis.external is None:
            return None
        value = self.redis.external.url.get_secret_value()
        if value == OFFLINE_SECRET_PLACEHOLDER:
            return f"{self.scheme}://{OFFLINE_SECRET_PLACEHOLDER}"
        return value

    @property
    def scheme(self) -> str:
        return "rediss" if self.redis.transit_encryption else "redis"

    def url_at_config_time(self, name_prefix: str) -> str | None:
        """What the rules may see at config time of the URL the stack wires (None without a stack Redis).

        The created group's host is only known after deploy: a stand-in with the scheme it will have takes its
        place. An external URL is known (it is the config value).
        """
        if self.l2_backend != "redis":
            return None
        return self.external_url or f"{self.scheme}://kvcache.{name_prefix}:{self.redis.port}"


# Engine versions ElastiCache offers per engine, and the parameter-group family each one uses.
ENGINE_FAMILIES: dict[str, dict[str, str]] = {
    "valkey": {"7.2": "valkey7", "8.0": "valkey8", "8.1": "valkey8"},
    "redis": {"6.2": "redis6.x", "7.0": "redis7", "7.1": "redis7"},
}


def parameter_group_family(engine: str, engine_version: str) -> str:
    """The ElastiCache parameter-group family of a pinned engine version (validated by the checks below)."""
    return ENGINE_FAMILIES[engine][engine_version]


def _external_checks(cfg: StackConfig) -> Iterable[ConfigIssue]:
    kv = cfg.kv_cache
    external = kv.redis.external
    if external is None:
        return
    if kv.l2_backend != "redis":
        yield ConfigIssue(
            "kvCache.redis.external", f"set but kvCache.l2Backend is {kv.l2_backend}; set l2Backend: redis to use it"
        )
        return
    for attr, key in CREATED_REDIS_KEYS.items():
        if attr in kv.redis.model_fields_set:
            yield ConfigIssue(
                f"kvCache.redis.{key}",
                "configures the ElastiCache group this stack creates; with kvCache.redis.external none is created: "
                "remove it",
            )
    value = external.url.get_secret_value()
    if value == OFFLINE_SECRET_PLACEHOLDER:
        return  # offline: the ciphertext cannot be read here; checked whenever the program sees the value
    # Never echo the URL: it may carry the AUTH token.
    parts = urlsplit(value)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        yield ConfigIssue(EXTERNAL_URL_KEY, "must be a redis://host:port or rediss://host:port URL (value not shown)")
    elif parts.scheme != kv.scheme:
        yield ConfigIssue(
            EXTERNAL_URL_KEY,
            f"is a {parts.scheme}:// URL but kvCache.redis.transitEncryption is "
            f"{str(kv.redis.transit_encryption).lower()} ({kv.scheme}://); make them agree",
        )


cross_check(_external_checks)


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
        if kv.creates_redis and redis.replicas < 1:
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
        if l2_backend(spec) != "redis" or own_l2_url(spec) is None:
            continue
        if kv.l2_backend == "redis":
            what = (
                "this stack wires kvCache.redis.external into the endpoints that ask for redis"
                if redis.external is not None
                else "this stack creates the Redis L2 cache (kvCache.l2Backend: redis) and fills in its URL and AUTH "
                "token"
            )
            yield ConfigIssue(
                join_path("endpoints", i, "spec", *L2_SPEC_PATH, "l2CacheLocalUrl"),
                f"{what}; remove l2CacheLocalUrl (a second Redis would split the cache)",
            )


cross_check(_kv_cache_checks)
