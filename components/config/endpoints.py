"""``hyperpod-inference:endpoints`` — the models served, each as its operator custom resource.

An ``endpoints[]`` entry is one typed object: the custom resource's spec (the models generated from the operator's
CRDs, ``components/config/crd.py``) plus the program's own fields (``name``, ``namespace``, ``engine``,
``expectedMaxResponseSeconds``). Its properties (:attr:`Endpoint.port`, :attr:`Endpoint.wants_stack_redis`, ...)
are what the components and the other config sections read; nothing recomputes them from a dict.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol

from pydantic import Discriminator, Field, Tag

from policies import compatibility as compat
from policies import crd_overlays, rules

from .base import ConfigAdvisory, ConfigIssue, Model, join_path
from .checks import Advise, Check
from .cluster import ClusterConfig
from .crd import InferenceEndpointConfigSpec, JumpStartModelSpec, KvCacheSpec, LoadBalancer, ModelCacheConfig
from .env_secrets import env_secret_reason
from .kvcache import CREDENTIALS_SECRET, RESERVED_ENV, KvCacheConfig
from .operator import OperatorConfig

K8sName = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
L2_SPEC_PATH = ("kvCacheSpec", "l2CacheSpec")

# Where the operator's CRD puts the facts the ALB target group needs (operator-facts.md §4, §4.3).
DEFAULT_HEALTH_CHECK_PATH = "/ping"  # spec.loadBalancer.healthCheckPath default in the CRD
DEFAULT_ROUTING_ALGORITHM = "least_outstanding_requests"  # spec.loadBalancer.routingAlgorithm default
DEFAULT_TARGET_PORT = 8080  # used only when an endpoint has no worker.modelInvocationPort (JumpStartModel)
# spec.loadBalancer.idleTimeoutSeconds: "If not specified, defaults to 60 seconds" (v3.3 CRD description, S2), the
# ALB's own default (Elastic Load Balancing user guide, "Connection idle timeout"); the CRD allows 1-4000.
DEFAULT_IDLE_TIMEOUT_SECONDS = 60
MAX_IDLE_TIMEOUT_SECONDS = 4000
# spec.modelCacheConfig.weightsCache.hostPath default (v3.3 CRD, S2).
DEFAULT_WEIGHTS_HOST_PATH = "/opt/dlami/nvme"


class _Endpoint(Model):
    """What every ``endpoints[]`` entry has, whatever its kind; the properties read its typed spec."""

    name: str = Field(pattern=K8sName, max_length=63, description="metadata.name of the custom resource.")
    namespace: str = Field(default="default", pattern=K8sName, max_length=63)
    engine: Literal["vllm", "sglang", "other"] = Field(
        description="The model server in the image; rendered as the hyperpod-inference/engine label the rules read."
    )
    expected_max_response_seconds: int | None = Field(
        default=None,
        ge=1,
        le=MAX_IDLE_TIMEOUT_SECONDS,
        description="The longest a request may wait without a byte coming back: a non-streamed completion's full "
        "generation time, a streamed one's time to first token. The ALB closes a connection idle for longer than "
        "spec.loadBalancer.idleTimeoutSeconds (default 60 s), so the check needs that to be at least this "
        "(operator 3.3+ sets it; at most 4000 s).",
    )
    team: str | None = Field(
        default=None,
        pattern=K8sName,
        max_length=40,
        description="Task governance team (governance.teams[].name) whose quota and queue the endpoint uses; its "
        "namespace must then be hyperpod-ns-<team> (components/config/governance.py).",
    )
    priority_class: str | None = Field(
        default=None,
        pattern=K8sName,
        max_length=40,
        description="Task governance priority class (governance.priorityClasses[].name) of the endpoint's pods.",
    )
    spec: InferenceEndpointConfigSpec | JumpStartModelSpec

    def spec_dict(self) -> dict[str, Any]:
        """The spec exactly as written in the stack file (camelCase, unset fields left out): a fresh copy."""
        return self.spec.dump()

    # --- what the spec says, typed -----------------------------------------------------------------------

    @property
    def instance_types(self) -> tuple[str, ...]:
        """The instance types the endpoint names (``instanceType``/``instanceTypes``, a JumpStartModel's
        ``server.instanceType``); empty when only ``nodeAffinity`` selects nodes."""
        spec = self.spec
        if isinstance(spec, JumpStartModelSpec):
            return (spec.server.instance_type,)
        if spec.instance_type:
            return (spec.instance_type,)
        return tuple(spec.instance_types or ())

    @property
    def load_balancer(self) -> LoadBalancer | None:
        return self.spec.load_balancer

    @property
    def health_check_path(self) -> str:
        path = self.load_balancer.health_check_path if self.load_balancer else None
        return path if path and path.startswith("/") else DEFAULT_HEALTH_CHECK_PATH

    @property
    def routing_algorithm(self) -> str:
        algo = self.load_balancer.routing_algorithm if self.load_balancer else None
        return algo or DEFAULT_ROUTING_ALGORITHM

    @property
    def idle_timeout_seconds(self) -> int:
        """The ALB idle timeout the operator sets (the CRD's documented default when unset)."""
        value = self.load_balancer.idle_timeout_seconds if self.load_balancer else None
        return value if value is not None else DEFAULT_IDLE_TIMEOUT_SECONDS

    @property
    def port(self) -> int:
        """The model server's container port (``worker.modelInvocationPort``)."""
        if isinstance(self.spec, InferenceEndpointConfigSpec):
            return self.spec.worker.model_invocation_port.container_port
        return DEFAULT_TARGET_PORT

    @property
    def intelligent_routing(self) -> bool:
        """``spec.intelligentRoutingSpec.enabled`` is true (the operator then serves it through its router)."""
        irs = self.spec.intelligent_routing_spec
        return irs is not None and irs.enabled is True

    @property
    def kv_cache_spec(self) -> KvCacheSpec | None:
        return self.spec.kv_cache_spec

    @property
    def l2_backend(self) -> str | None:
        """The L2 backend, lower-cased (the CRD pattern is case-insensitive), or None."""
        l2 = self.kv_cache_spec.l2_cache_spec if self.kv_cache_spec else None
        return l2.l2_cache_backend.lower() if l2 and l2.l2_cache_backend else None

    @property
    def own_l2_url(self) -> str | None:
        """The ``l2CacheLocalUrl`` the endpoint names itself (a Redis of its own), or None."""
        l2 = self.kv_cache_spec.l2_cache_spec if self.kv_cache_spec else None
        return l2.l2_cache_local_url if l2 and l2.l2_cache_local_url else None

    @property
    def wants_stack_redis(self) -> bool:
        """The endpoint asks for the Redis L2 backend without naming a URL: the stack's Redis fills it."""
        return self.l2_backend == "redis" and self.own_l2_url is None

    @property
    def opts_into_gateway(self) -> bool:
        """``spec.inferenceGateway.enabled`` is true."""
        gw = self.spec.inference_gateway
        return gw is not None and gw.enabled is True

    @property
    def gateway_name(self) -> str | None:
        """``spec.inferenceGateway.name`` (None: the operator generates one)."""
        gw = self.spec.inference_gateway
        return gw.name if gw is not None and gw.name else None

    @property
    def model_name(self) -> str | None:
        """``spec.modelName`` (InferenceEndpointConfig; a JumpStartModel has none)."""
        return self.spec.model_name if isinstance(self.spec, InferenceEndpointConfigSpec) else None

    @property
    def model_cache(self) -> ModelCacheConfig | None:
        return self.spec.model_cache_config

    @property
    def image_cache(self) -> bool:
        """``modelCacheConfig.imageCache.enabled``: the operator pre-pulls the image on the target nodes."""
        cache = self.model_cache.image_cache if self.model_cache else None
        return cache is not None and cache.enabled

    @property
    def weights_cache_host_path(self) -> str | None:
        """Where the weights are cached on the node when ``weightsCache.enabled`` (None: weights caching off)."""
        cache = self.model_cache.weights_cache if self.model_cache else None
        if cache is None or cache.enabled is not True:
            return None
        return cache.host_path or DEFAULT_WEIGHTS_HOST_PATH

    @property
    def worker_image(self) -> str | None:
        """``worker.image`` of an InferenceEndpointConfig (a JumpStartModel's image is chosen by JumpStart)."""
        return self.spec.worker.image if isinstance(self.spec, InferenceEndpointConfigSpec) else None

    @property
    def env_path(self) -> tuple[str, ...]:
        """Where the container environment lives in the spec (IEC ``worker.environmentVariables``, JSM
        ``environmentVariables``)."""
        if isinstance(self.spec, InferenceEndpointConfigSpec):
            return ("worker", "environmentVariables")
        return ("environmentVariables",)

    @property
    def env(self) -> list[Mapping[str, Any]]:
        spec = self.spec
        raw: list[Any] = []
        if isinstance(spec, InferenceEndpointConfigSpec):
            raw = list(spec.worker.environment_variables or [])
        else:
            raw = [e.dump() for e in spec.environment_variables or []]
        return [e for e in raw if isinstance(e, Mapping)]

    def custom_resource(self, stack_redis_url: str | None = None) -> dict[str, Any]:
        """The custom resource this entry renders to, as the rules see it at config time.

        The engine travels as the ``hyperpod-inference/engine`` label. With ``l2CacheBackend: redis`` and no
        ``l2CacheLocalUrl`` written, the package wires the stack's Redis URL (its own ElastiCache group, or
        ``kvCache.redis.external``); ``stack_redis_url`` is what the rules may see of it
        (:meth:`KvCacheConfig.url_at_config_time`).
        """
        spec = self.spec_dict()
        if self.wants_stack_redis and stack_redis_url is not None:
            spec["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"] = stack_redis_url
        kind: str = getattr(self, "kind")  # noqa: B009 - declared by each subclass
        return {
            "apiVersion": CR_GROUP_VERSION,
            "kind": kind,
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": {rules.ENGINE_LABEL: self.engine}},
            "spec": spec,
        }


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

Endpoint = InferenceEndpointConfigEndpoint | JumpStartModelEndpoint
"""An ``endpoints[]`` entry as the other sections and the components read it."""

CR_GROUP_VERSION = "inference.sagemaker.aws.amazon.com/v1"


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def environment(self) -> rules.Environment: ...
    @property
    def region(self) -> str: ...
    @property
    def name_prefix(self) -> str: ...
    @property
    def common_tags(self) -> dict[str, str]: ...
    @property
    def operator(self) -> OperatorConfig: ...
    @property
    def cluster(self) -> ClusterConfig: ...
    @property
    def kv_cache(self) -> KvCacheConfig: ...
    @property
    def endpoints(self) -> Sequence[Endpoint]: ...


def _spec_key(i: int, path: str) -> str:
    return join_path("endpoints", i, "spec", *path.replace("[]", "").split(".")) if path else join_path("endpoints", i)


def _addon_in_table(cfg: StackView) -> Iterator[ConfigIssue]:
    """The add-on pin must be a release the compatibility table knows (policies/compatibility.yaml)."""
    version = cfg.operator.addon_version
    if not compat.is_known_addon(version):
        yield ConfigIssue(
            "operator.addonVersion",
            f"{version} is not in the compatibility table (policies/compatibility.yaml); "
            f"allowed: {', '.join(compat.addon_versions())}",
        )


def _features_supported(cfg: StackView) -> Iterator[ConfigIssue]:
    """An endpoint may only use spec fields the CRD of the pinned add-on's operator has (the generated field table
    of its published CRDs, and the documented fields of ``policies/compatibility.yaml``)."""
    version = cfg.operator.addon_version
    if not compat.is_known_addon(version):
        return
    for i, ep in enumerate(cfg.endpoints):
        for path, introduced, feature in crd_overlays.features_missing(ep.spec_dict(), version, ep.kind):
            yield ConfigIssue(_spec_key(i, path), compat.missing_text(feature, introduced, version))


def rule_context(cfg: StackView) -> rules.RuleContext:
    return rules.RuleContext(
        environment=cfg.environment,
        addon_version=cfg.operator.addon_version,
        instance_types=frozenset(g.instance_type for g in cfg.cluster.instance_groups),
        stack_tags=cfg.common_tags,
    )


# Covered by _features_supported with a more precise message; the policy pack still runs it.
_RULES_NOT_AT_CONFIG_TIME = frozenset({"feature-supported-by-addon-version"})


def _violations(cfg: StackView, *, mandatory: bool) -> Iterator[tuple[int, rules.Rule, rules.Violation]]:
    ctx = rule_context(cfg)
    stack_url = cfg.kv_cache.url_at_config_time(cfg.name_prefix)
    for i, ep in enumerate(cfg.endpoints):
        cr = ep.custom_resource(stack_url)
        for rule in rules.RULES.values():
            if rule.name in _RULES_NOT_AT_CONFIG_TIME or (rule.level(cr, ctx) == "mandatory") != mandatory:
                continue
            for v in rule.check(cr, ctx):
                yield i, rule, v


def _endpoint_rules(cfg: StackView) -> Iterator[ConfigIssue]:
    """The policy rules that are mandatory for this environment, run before anything is registered."""
    if not compat.is_known_addon(cfg.operator.addon_version):
        return
    for i, rule, v in _violations(cfg, mandatory=True):
        yield ConfigIssue(_spec_key(i, v.path), f"{v} [{rule.name}]")


def _endpoint_rule_advisories(cfg: StackView) -> Iterator[ConfigAdvisory]:
    """What the endpoint rules cannot check offline where their level is not mandatory (the advisories' table)."""
    if not compat.is_known_addon(cfg.operator.addon_version):
        return
    for i, rule, v in _violations(cfg, mandatory=False):
        if v.checked_by is not None:
            yield ConfigAdvisory(_spec_key(i, v.path), str(v), rule.name, v.checked_by)


def _idle_timeout_covers_responses(cfg: StackView) -> Iterator[ConfigIssue]:
    """``expectedMaxResponseSeconds`` needs an ALB idle timeout at least that long: the operator's ALB closes a
    connection that carries no byte for ``idleTimeoutSeconds`` (CRD default 60 s), and a request that waits longer
    for its first byte gets a 504 from the ALB (Elastic Load Balancing user guide, "Connection idle timeout")."""
    operator = cfg.operator
    for i, ep in enumerate(cfg.endpoints):
        want = ep.expected_max_response_seconds
        if want is None or want <= ep.idle_timeout_seconds:
            continue
        set_it = ep.load_balancer is not None and ep.load_balancer.idle_timeout_seconds is not None
        where = (
            join_path("endpoints", i, "spec", "loadBalancer", "idleTimeoutSeconds")
            if set_it
            else join_path("endpoints", i, "expectedMaxResponseSeconds")
        )
        fix = f"set spec.loadBalancer.idleTimeoutSeconds to at least {want}"
        if compat.is_known_addon(operator.addon_version) and compat.addon(operator.addon_version).operator < (3, 3):
            fix += (
                f" (the field needs operator 3.3+: add-on {compat.minimum_addon_for('3.3').addon_version} or later; "  # type: ignore[union-attr]
                f"operator.addonVersion pins {operator.addon_version})"
            )
        yield ConfigIssue(
            where,
            f"expectedMaxResponseSeconds is {want} s but the endpoint's ALB closes connections idle for "
            f"{ep.idle_timeout_seconds} s{'' if set_it else ' (the CRD default)'}: responses slower than that end in "
            f"504; {fix}",
        )


MODEL_BUCKET_REGION = "model-bucket-region"


def _model_bucket_region(cfg: StackView) -> Iterator[ConfigAdvisory]:
    """A model bucket in another Region works, but every download crosses Regions (billed inter-Region transfer,
    slower start); and what Region the bucket really is in only S3 knows (GetBucketLocation)."""
    region = cfg.region
    for i, ep in enumerate(cfg.endpoints):
        if not isinstance(ep.spec, InferenceEndpointConfigSpec):
            continue
        s3 = ep.spec.model_source_config.s3_storage
        if s3 is None or s3.region == region:
            continue
        yield ConfigAdvisory(
            join_path("endpoints", i, "spec", "modelSourceConfig", "s3Storage", "region"),
            f"the model bucket {s3.bucket_name!r} is in {s3.region}, the stack in {region}: every model "
            "download crosses Regions (inter-Region data transfer is billed; pods start slower)",
            MODEL_BUCKET_REGION,
            "tools.preflight.regional (GetBucketLocation: the bucket's real Region)",
        )


LMCACHE_REDIS_COMMANDS_UNKNOWN = "lmcache-redis-commands-unknown"


def lmcache_redis_acl(endpoints: Sequence[Endpoint]) -> tuple[tuple[str, ...], list[tuple[int, str]]]:
    """The commands the stack's LMCache ElastiCache user may run, and the endpoints whose LMCache is not known.

    The union of what the LMCache releases of the endpoints that use the stack's Redis send
    (``lmcacheRedisCommands`` of policies/compatibility.yaml, by the version the image tag names); an image whose
    LMCache version is not in that table (a vLLM or DLC image, ``:latest``, a release not read) adds every listed
    release's commands and is returned as ``(index, image)``: a command outside the ACL would get NOPERM and the L2
    cache would degrade silently, which only the running worker shows (issue 47 item 6).
    """
    commands: dict[str, None] = {}
    unknown: list[tuple[int, str]] = []
    for i, ep in enumerate(endpoints):
        if not ep.wants_stack_redis:
            continue
        image = ep.worker_image or ""
        version = compat.image_lmcache_version(image)
        known = compat.lmcache_redis_commands(version) if version is not None else None
        if known is None:
            unknown.append((i, image))
            known = compat.all_lmcache_redis_commands()
        commands.update(dict.fromkeys(known))
    return tuple(commands) or compat.all_lmcache_redis_commands(), unknown


def _lmcache_redis_commands(cfg: StackView) -> Iterator[ConfigAdvisory]:
    """An endpoint on the stack's ElastiCache whose image does not name an LMCache release the table has read."""
    if not cfg.kv_cache.creates_redis:
        return  # an external Redis: its ACL is its owner's
    commands, unknown = lmcache_redis_acl(cfg.endpoints)
    for i, image in unknown:
        yield ConfigAdvisory(
            join_path("endpoints", i, "spec", "worker", "image"),
            f"{image or 'the worker image'} does not name an LMCache release whose Redis commands are known "
            f"(policies/compatibility.yaml lmcacheRedisCommands: "
            f"{', '.join(r.lmcache for r in compat.load_compatibility().lmcache_redis_commands)}); the cache user "
            f"may run {', '.join(commands).upper()} only: any other command gets NOPERM and the L2 cache degrades "
            "silently",
            LMCACHE_REDIS_COMMANDS_UNKNOWN,
            "tools.verify check endpoint-pods (NOPERM in the worker's log); pin an lmcache/vllm-openai:<version> "
            "image the table lists, or add the release's commands to the table",
        )


def _redis_backend_needs_a_url(cfg: StackView) -> Iterator[ConfigIssue]:
    """An endpoint asking for the Redis L2 backend needs a URL: the stack's Redis, or its own ``l2CacheLocalUrl``.
    With the stack's Redis an endpoint may not name another (a second Redis would split the cache)."""
    kv_cache = cfg.kv_cache
    for i, ep in enumerate(cfg.endpoints):
        if ep.wants_stack_redis and kv_cache.l2_backend != "redis":
            yield ConfigIssue(
                join_path("endpoints", i, "spec", *L2_SPEC_PATH, "l2CacheBackend"),
                f"redis needs a Redis URL: kvCache.l2Backend: redis (the stack's ElastiCache, or "
                f"kvCache.redis.external), or the endpoint's own l2CacheLocalUrl; kvCache.l2Backend is "
                f"{kv_cache.l2_backend}",
            )
        if ep.l2_backend == "redis" and ep.own_l2_url is not None and kv_cache.l2_backend == "redis":
            what = (
                "this stack wires kvCache.redis.external into the endpoints that ask for redis"
                if kv_cache.redis.external is not None
                else "this stack creates the Redis L2 cache (kvCache.l2Backend: redis) and fills in its URL and AUTH "
                "token"
            )
            yield ConfigIssue(
                join_path("endpoints", i, "spec", *L2_SPEC_PATH, "l2CacheLocalUrl"),
                f"{what}; remove l2CacheLocalUrl (a second Redis would split the cache)",
            )


def _credential_env_checks(cfg: StackView) -> Iterator[ConfigIssue]:
    """Endpoints that get the stack's Redis must not set the variables the package wires (they would collide)."""
    if cfg.kv_cache.l2_backend != "redis":
        return
    for i, ep in enumerate(cfg.endpoints):
        if not ep.wants_stack_redis:
            continue
        for j, var in enumerate(ep.env):
            if var.get("name") in RESERVED_ENV:
                yield ConfigIssue(
                    join_path("endpoints", i, "spec", *ep.env_path, j, "name"),
                    f"{var['name']} is wired by this stack for the Redis L2 cache (its URL and credentials come from "
                    f"the Secret {CREDENTIALS_SECRET}); remove it",
                )


ENV_SECRET_PLAINTEXT = "env-secret-plaintext"


def _env_secrets(cfg: StackView) -> Iterator[tuple[str, str]]:
    for i, ep in enumerate(cfg.endpoints):
        for j, var in enumerate(ep.env):
            reason = env_secret_reason(var)
            if reason is None:
                continue
            name = var.get("name")
            fix = (
                f"put it in a Kubernetes Secret in namespace {ep.namespace} and reference it: "
                f"{{name: {name}, valueFrom: {{secretKeyRef: {{name: <secret>, key: <key>}}}}}}"
                if isinstance(ep.spec, InferenceEndpointConfigSpec)
                else "a JumpStartModel's environmentVariables take no Secret reference: deploy the model as an "
                "InferenceEndpointConfig and reference a Kubernetes Secret (valueFrom.secretKeyRef)"
            )
            yield (
                join_path("endpoints", i, "spec", *ep.env_path, j, "value"),
                f"{name} is written in plain text and {reason}: the value lands in the stack file, plan.json and the "
                f"endpoint's custom resource (readable by the endpoint viewers); {fix}",
            )


def _env_secrets_refused_in_prod(cfg: StackView) -> Iterator[ConfigIssue]:
    """Prod refuses a secret in an endpoint's environment variables (by name or value shape)."""
    if cfg.environment != "prod":
        return
    for where, message in _env_secrets(cfg):
        yield ConfigIssue(where, f"{message} [{ENV_SECRET_PLAINTEXT}]")


def _env_secrets_advised(cfg: StackView) -> Iterator[ConfigAdvisory]:
    """Staging and dev: the same finding as an advisory."""
    if cfg.environment == "prod":
        return
    for where, message in _env_secrets(cfg):
        yield ConfigAdvisory(where, message, ENV_SECRET_PLAINTEXT, "kubectl get secret (the reference's target)")


def _unique_endpoints(cfg: StackView) -> Iterator[ConfigIssue]:
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


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (
    _addon_in_table,
    _features_supported,
    _endpoint_rules,
    _idle_timeout_covers_responses,
    _redis_backend_needs_a_url,
    _credential_env_checks,
    _unique_endpoints,
    _env_secrets_refused_in_prod,
)
ADVISORIES: tuple[Advise[StackView], ...] = (
    _endpoint_rule_advisories,
    _lmcache_redis_commands,
    _env_secrets_advised,
    _model_bucket_region,
)
