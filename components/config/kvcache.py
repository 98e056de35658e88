"""``hyperpod-inference:kvCache`` — the L2 KV cache shared between inference nodes.

Three ways to give endpoints an L2 tier:

* ``l2Backend: redis`` — the stack creates an ElastiCache (Valkey/Redis OSS) group and wires its URL (its RBAC
  user's credentials by Secret reference, see the end of this module) into every endpoint that asks for ``l2CacheBackend: redis`` without a URL;
* ``l2Backend: redis`` with ``redis.external.url`` — a Redis the stack does not create (your own ElastiCache,
  an in-cluster Redis, ...). The URL is a Pulumi secret (it may carry the AUTH token) and is wired into the
  same endpoints, exactly as the stack's own Redis; no ElastiCache resource is created;
* ``l2Backend: tieredstorage`` — HyperPod managed tiered storage.

With ``none`` or ``tieredstorage`` an endpoint may still name a Redis of its own in ``l2CacheLocalUrl`` (two
of the operator's official samples do); with ``redis`` it may not (a second Redis would split the cache).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr

from .base import ConfigIssue, Model
from .checks import Check
from .stackfile import OFFLINE_SECRET_PLACEHOLDER

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

        Offline (``tools.cli.preview``, the tests) a ``secure:`` value cannot be decrypted and arrives as the offline
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


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def is_prod(self) -> bool: ...
    @property
    def kv_cache(self) -> KvCacheConfig: ...


def _external_checks(cfg: StackView) -> Iterable[ConfigIssue]:
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


def _kv_cache_checks(cfg: StackView) -> Iterable[ConfigIssue]:
    """The Redis pins and prod's demands; what endpoints may ask of the L2 cache is checked with them
    (``components/config/endpoints.py``)."""
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
                "must be true in prod: KV blocks are derived from user prompts and the Redis credentials need TLS",
            )


# --- how the L2 URL and its credentials reach LMCache ---------------------------------------------------------
# What LMCache accepts, read from LMCache v0.4.3 (the version the pinned worker images carry: image tag
# lmcache/vllm-openai:v0.4.3, operator-facts §4.2 "LMCache >= v0.4.3"; read from the PyPI release wheel
# lmcache-0.4.3-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl, sha256 f7907151461c2557..., because
# the fetched LMCache/LMCache snapshot ends at v0.1.2-alpha):
# * lmcache/v1/storage_backend/connector/redis_adapter.py RedisConnectorAdapter.can_parse: redis://, rediss://
#   and unix:// go to RedisConnector, which hands the whole URL to redis-py
#   (redis_connector.py: redis.asyncio.ConnectionPool.from_url(url, max_connections=150)). redis-py's URL
#   grammar gives TLS (rediss://) and credentials (rediss://<user>:<password>@host:port; an empty user sends
#   AUTH <password>). No environment variable or file carries the Redis credentials for this connector (only
#   the resp:// connector reads LMCACHE_RESP_USERNAME/PASSWORD, and its native client has no TLS).
# * The URL itself is config `remote_url`, read from the environment variable LMCACHE_REMOTE_URL
#   (lmcache/v1/config.py _CONFIG_DEFINITIONS, config_base.py _from_env with prefix LMCACHE_); environment
#   variables override a config file (config_base.py load_config: "Allow environment variables to override").
# * LMCache logs that URL in full at INFO twice (redis_adapter.py "Creating Redis connector for URL: ...",
#   config.py _log_config "LMCache Configuration: {...}"); LMCACHE_LOG_LEVEL sets the level (lmcache/logging.py).
# So the password travels through the URL, but the URL in the custom resource names it only as Kubernetes
# dependent-variable references $(VAR), which the kubelet expands from a Secret (worker.environmentVariables with
# valueFrom.secretKeyRef, allowed by the CRD's core EnvVar schema): the custom resource carries no credential.
CREDENTIALS_SECRET = "hpi-kv-cache-credentials"
USERNAME_ENV = "HPI_KV_CACHE_USERNAME"
PASSWORD_ENV = "HPI_KV_CACHE_PASSWORD"
REMOTE_URL_ENV = "LMCACHE_REMOTE_URL"
LOG_LEVEL_ENV = "LMCACHE_LOG_LEVEL"
# The level below INFO's URL lines; an endpoint that sets LMCACHE_LOG_LEVEL itself keeps its own.
QUIET_LOG_LEVEL = "WARNING"
RESERVED_ENV = (USERNAME_ENV, PASSWORD_ENV, REMOTE_URL_ENV)

# The commands LMCache sends to its L2 Redis are per release, in policies/compatibility.yaml
# (``lmcacheRedisCommands``, read from each wheel); the access string is built from the endpoints' images
# (components/config/endpoints.py ``lmcache_redis_acl``). redis-py's connect adds AUTH (always allowed) and CLIENT
# SETINFO, whose errors it ignores (redis/asyncio/connection.py AbstractConnection.on_connect: `except
# ResponseError: pass`); SELECT only for a database other than 0, HELLO only with protocol 3, PING only with
# health_check_interval (neither set by LMCache).


def lmcache_access_string(commands: Iterable[str]) -> str:
    """ElastiCache RBAC access string (Redis ACL syntax; ElastiCache RBAC: `on`, key patterns, +command; no
    passwords): every key, only ``commands``."""
    return "on ~* -@all " + " ".join(f"+{c}" for c in commands)


# The user every ElastiCache user group must contain ("A user named default must be included": CloudFormation
# AWS::ElastiCache::UserGroup UserIds), switched off: a connection that does not AUTH as the LMCache user can do
# nothing (Redis ACL: with `default` off, new connections start unauthenticated).
DEFAULT_USER_ACCESS_STRING = "off -@all"


def credential_url(address: str) -> str:
    """``rediss://host:port`` -> ``rediss://$(HPI_KV_CACHE_USERNAME):$(HPI_KV_CACHE_PASSWORD)@host:port``."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        raise ValueError(f"not a URL: {address!r}")
    return f"{scheme}://$({USERNAME_ENV}):$({PASSWORD_ENV})@{rest}"


def credential_env(user_env: list[dict[str, Any]] | None, url: str) -> list[dict[str, Any]]:
    """The environment variables appended after the endpoint's own, in the order the kubelet needs.

    ``$(VAR)`` expands only from variables defined earlier in the list (Kubernetes "Define dependent environment
    variables"), and a name defined twice keeps the later value. The operator's own LMCACHE_REMOTE_URL (built from
    ``l2CacheLocalUrl``, aws/sagemaker-hyperpod-cli#431) lands before or after these — its order is not
    published — so both spellings of the URL reference the two credential variables defined first: either wins
    with the same expanded value, and a config file written from l2CacheLocalUrl is overridden by the variable.
    """
    names = {e.get("name") for e in user_env or [] if isinstance(e, dict)}
    ref = lambda key: {"secretKeyRef": {"name": CREDENTIALS_SECRET, "key": key}}  # noqa: E731
    env: list[dict[str, Any]] = [
        {"name": USERNAME_ENV, "valueFrom": ref("username")},
        {"name": PASSWORD_ENV, "valueFrom": ref("password")},
        {"name": REMOTE_URL_ENV, "value": url},
    ]
    if LOG_LEVEL_ENV not in names:
        env.append({"name": LOG_LEVEL_ENV, "value": QUIET_LOG_LEVEL})
    return env


def split_redis_url(url: str) -> tuple[str, str | None, str | None]:
    """``(address without credentials, username, password)`` of a redis(s):// URL, raw (still URL-encoded).

    A URL without ``@`` has no credentials: ``(url, None, None)``.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None, None
    userinfo, hostport = parts.netloc.rsplit("@", 1)
    username, _, password = userinfo.partition(":")
    address = urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    return address, username, password


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (
    _external_checks,
    _kv_cache_checks,
)
