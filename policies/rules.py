"""The semantic rules of hyperpod-inference: pure functions over operator custom resources.

One source of truth for two callers: the stack-config checks (``components/config/endpoints.py`` runs the
rules that are mandatory for the environment on the custom resources a stack will render) and the
CrossGuard policy pack (which wraps :data:`RULES` into ``pulumi_policy`` policies over the registered
``kubernetes:inference.sagemaker.aws.amazon.com/v1:*`` resources).

A rule takes a custom-resource dict ``{apiVersion, kind, metadata: {labels}, spec}`` and a
:class:`RuleContext`, and returns a list of :class:`Violation` (a ``str`` carrying the spec path it is about,
so config errors can point at ``endpoints[i].spec.<path>``). The operator's CRDs have no CEL validation
(aws/sagemaker-hyperpod-cli ``helm_chart/.../inference-operator/config/crd``), so none of these are enforced by the
API server; the operator rejects or silently ignores them later.

Each rule's level, severity, description, public sources and samples are in its record,
``policies/records/<name>.yaml``; :data:`RULES` is built from the records. D1 caching-and-routing, D2
request-limits, D3 DPD, D4 inference-gateway, D5 release notes, D7 model caching are the AWS docs pages whose URLs
``policies/compatibility.yaml`` lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import aws_names, crd_overlays, records
from . import capacity_rules as cap
from . import compatibility as compat
from .records import Escalation, PolicyRecord, resolve

ENGINE_LABEL = "hyperpod-inference/engine"
"""Label carrying ``endpoints[].engine`` on every rendered custom resource (vllm | sglang | other)."""

Environment = records.Environment
Level = records.Level
ENVIRONMENTS = records.ENVIRONMENTS

EFA_INSTANCE_TYPES = frozenset(
    {"ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge", "ml.p6-b200.48xlarge", "ml.p6-b300.48xlarge"}
)
"""Instance types with EFA and GPUDirect RDMA, the only ones DPD supports (D3)."""

DEFAULT_INVOCATION_ENDPOINT = "invocations"  # CRD default of spec.invocationEndpoint
DEFAULT_MODEL_METRICS_PORT = 8080  # CRD default of spec.metrics.modelMetrics.port


class Violation(str):
    """A violation message; ``path`` is the dotted spec path it concerns ("" for the resource as a whole).

    ``checked_by`` set means the rule *cannot be checked offline* here: it names what decides it (the cluster,
    ``tools.preflight.regional``). The rule's level still applies: where the level is mandatory the unknown is refused (the
    stack must make it knowable, e.g. pin an image version), elsewhere it is an advisory, never "holds".
    """

    path: str
    checked_by: str | None

    def __new__(cls, message: str, path: str = "", checked_by: str | None = None) -> Violation:
        obj = super().__new__(cls, message)
        obj.path = path
        obj.checked_by = checked_by
        return obj


@dataclass(frozen=True)
class RuleContext:
    """What a rule may know beyond the resource itself.

    ``instance_types`` is the set of HyperPod instance-group instance types of the stack; ``None`` means
    unknown (the rule that needs it is then skipped rather than guessing).
    """

    environment: Environment
    addon_version: str
    instance_types: frozenset[str] | None = None
    stack_tags: Mapping[str, str] | None = None  # the tags the stack adds to spec.tags (None: already in the CR)


# --- reading a custom resource ----------------------------------------------------------------------


def spec_of(cr: Mapping[str, Any]) -> dict[str, Any]:
    spec = cr.get("spec")
    return spec if isinstance(spec, dict) else {}


def get(data: Any, path: str, default: Any = None) -> Any:
    found, value = compat.dig(data, path)
    return value if found and value is not None else default


def engine_of(cr: Mapping[str, Any]) -> str:
    """The model server: the ``hyperpod-inference/engine`` label, else inferred from the worker image."""
    labels = get(cr, "metadata.labels", {}) or {}
    label = labels.get(ENGINE_LABEL) if isinstance(labels, dict) else None
    if label in ("vllm", "sglang", "other"):
        return str(label)
    image = str(get(spec_of(cr), "worker.image", "")).lower()
    if "vllm" in image or "lmcache" in image:
        return "vllm"
    if "sglang" in image:
        return "sglang"
    return "other"


ENGINES_BY_REPOSITORY: tuple[tuple[str, str], ...] = (("sglang", "sglang"), ("vllm", "vllm"), ("lmcache", "vllm"))
"""A word in an image repository's path -> the engine it names (lmsysorg/sglang, vllm/vllm-openai,
lmcache/vllm-openai: LMCache's images are vLLM with LMCache, LMCache docs "Docker"; DLC .../vllm)."""


def image_engine(image: str) -> str | None:
    """The engine an image's *repository* names (registry host, tag and digest ignored), or None when it names none
    (a private repository: the ``engine`` key is then all there is to go by)."""
    repository = compat.image_repository(image).lower()
    path = repository.split("/", 1)[1] if "/" in repository and "." in repository.split("/", 1)[0] else repository
    names = {engine for word, engine in ENGINES_BY_REPOSITORY if word in path}
    return next(iter(names)) if len(names) == 1 else None


def engine_image_mismatch(engine: str, image: str) -> str | None:
    """Why ``engine`` and the worker image disagree (the image's repository names another engine), or None. The one
    rule behind the config check (``endpoints[i].engine``) and the pack rule ``engine-matches-image``: the engine
    decides which checks apply, so an SGLang image declared vLLM would pass every vLLM-only check."""
    named = image_engine(image)
    if named is None or named == engine:
        return None
    return (
        f"is {engine} but the worker image {image} is a {named} image (its repository names {named}); "
        f"set engine: {named}, or use a {engine} image: the engine decides which checks apply "
        "(the KV cache and kvaware routing need vLLM)"
    )


def engine_matches_image(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """The stack's ``engine`` (the ``hyperpod-inference/engine`` label) against the worker image's repository. A
    resource without the label (written by hand) has only the image to go by: nothing to compare."""
    labels = get(cr, "metadata.labels", {}) or {}
    engine = labels.get(ENGINE_LABEL) if isinstance(labels, dict) else None
    image = get(spec_of(cr), "worker.image")
    if not isinstance(engine, str) or not isinstance(image, str):
        return []
    why = engine_image_mismatch(engine, image)
    return [Violation(f"engine {why}", "worker.image")] if why else []


def instance_types_of(cr: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(spec path, instance type)`` for every instance type the resource asks for."""
    spec = spec_of(cr)
    out: list[tuple[str, str]] = []
    if isinstance(spec.get("instanceType"), str):
        out.append(("instanceType", spec["instanceType"]))
    for i, t in enumerate(spec.get("instanceTypes") or []):
        out.append((f"instanceTypes[{i}]", str(t)))
    if isinstance(get(spec, "server.instanceType"), str):
        out.append(("server.instanceType", spec["server"]["instanceType"]))
    return out


def _routing(spec: Mapping[str, Any]) -> tuple[bool, str]:
    irs = spec.get("intelligentRoutingSpec") or {}
    return bool(irs.get("enabled", False)), str(irs.get("routingStrategy", "prefixaware"))


def _kv_cache_on(spec: Mapping[str, Any], addon_version: str | None = None) -> bool:
    """Whether kvCacheSpec turns a cache tier on (before operator 3.3 ``false`` was ignored, D5)."""
    kv = spec.get("kvCacheSpec")
    if not isinstance(kv, dict):
        return False
    if kv.get("enableL1Cache", True) is not False or kv.get("enableL2Cache", False) is True:
        return True
    if addon_version and compat.is_known_addon(addon_version):
        return compat.addon(addon_version).operator < (3, 3)
    return False


def _l2_backend(spec: Mapping[str, Any]) -> str | None:
    backend = get(spec, "kvCacheSpec.l2CacheSpec.l2CacheBackend")
    return str(backend).lower() if backend is not None else None


# --- the rules ------------------------------------------------------------------------------------------


def kvaware_requires_vllm_completions(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """kvaware routing: vLLM only, invocationEndpoint ending in ``completions`` but not ``chat/completions``.

    A JumpStartModel has no ``invocationEndpoint``: the operator serves it on its default path, which is not
    ``/completions``, so kvaware on a JumpStartModel is always a violation (use prefixaware there).
    """
    spec = spec_of(cr)
    enabled, strategy = _routing(spec)
    if not enabled or strategy != "kvaware":
        return []
    out = []
    engine = engine_of(cr)
    if engine != "vllm":
        out.append(
            Violation(
                f"routingStrategy kvaware needs a vLLM engine; this endpoint runs {engine}",
                "intelligentRoutingSpec.routingStrategy",
            )
        )
    if cr.get("kind") == compat.JSM:
        out.append(
            Violation(
                "routingStrategy kvaware needs invocationEndpoint /completions, which a JumpStartModel "
                "cannot set; use prefixaware",
                "intelligentRoutingSpec.routingStrategy",
            )
        )
        return out
    endpoint = str(spec.get("invocationEndpoint", DEFAULT_INVOCATION_ENDPOINT)).rstrip("/")
    if not endpoint.endswith("completions") or endpoint.endswith("chat/completions"):
        out.append(
            Violation(
                f"routingStrategy kvaware needs invocationEndpoint ending in /completions (e.g. "
                f"v1/completions), not chat/completions; got {endpoint!r}",
                "invocationEndpoint",
            )
        )
    return out


def kv_cache_requires_vllm(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """The managed tiered KV cache (L1/L2) works only with vLLM-based containers (D1)."""
    spec = spec_of(cr)
    engine = engine_of(cr)
    if engine != "vllm" and _kv_cache_on(spec, ctx.addon_version):
        return [Violation(f"kvCacheSpec needs a vLLM engine (LMCache); this endpoint runs {engine}", "kvCacheSpec")]
    return []


def gateway_excludes_intelligent_routing(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """``inferenceGateway.enabled`` and ``intelligentRoutingSpec.enabled`` are mutually exclusive (D4)."""
    spec = spec_of(cr)
    if get(spec, "inferenceGateway.enabled") is True and _routing(spec)[0]:
        return [
            Violation(
                "inferenceGateway.enabled and intelligentRoutingSpec.enabled are mutually exclusive; "
                "the gateway does model-aware routing itself",
                "inferenceGateway.enabled",
            )
        ]
    return []


def request_limits_require_metrics(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """``worker.requestLimits`` is enforced by the nginx sidecar, created only when metrics are enabled (D2)."""
    spec = spec_of(cr)
    if get(spec, "worker.requestLimits") is not None and get(spec, "metrics.enabled", True) is False:
        return [
            Violation(
                "worker.requestLimits needs metrics.enabled: true (the limiting sidecar only exists with metrics)",
                "metrics.enabled",
            )
        ]
    return []


def dpd_requires_efa_instances(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """pdSpec (disaggregated prefill/decode) needs EFA + GPUDirect RDMA instances (D3)."""
    spec = spec_of(cr)
    if spec.get("pdSpec") is None:
        return []
    allowed = ", ".join(sorted(EFA_INSTANCE_TYPES))
    types = instance_types_of(cr)
    if not types:
        return [Violation(f"pdSpec needs instanceType (or instanceTypes) from: {allowed}", "pdSpec")]
    return [
        Violation(f"pdSpec needs an EFA instance type ({allowed}); got {t}", path)
        for path, t in types
        if t not in EFA_INSTANCE_TYPES
    ]


def endpoint_instance_type_in_cluster(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """An endpoint's instance types must exist among the stack's HyperPod instance groups (a type no group has never schedules)."""
    if ctx.instance_types is None:
        return []
    have = ", ".join(sorted(ctx.instance_types)) or "none"
    return [
        Violation(f"instance type {t} is not in any HyperPod instance group (groups have: {have})", path)
        for path, t in instance_types_of(cr)
        if t not in ctx.instance_types
    ]


def instance_selection_exclusive(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """instanceType, instanceTypes and nodeAffinity are mutually exclusive (CRD descriptions, v3.0)."""
    spec = spec_of(cr)
    used = [k for k in ("instanceType", "instanceTypes", "nodeAffinity") if spec.get(k) not in (None, [], {})]
    if len(used) > 1:
        return [Violation(f"{' and '.join(used)} are mutually exclusive; set only one", used[1])]
    return []


def router_metrics_port_matches_worker(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """Router/cache metrics need metrics.enabled and modelMetrics.port == worker containerPort (D1)."""
    spec = spec_of(cr)
    if not _routing(spec)[0] and not _kv_cache_on(spec):
        return []
    if get(spec, "metrics.enabled", True) is False:
        return [Violation("intelligent routing / KV cache metrics need metrics.enabled: true", "metrics.enabled")]
    worker_port = get(spec, "worker.modelInvocationPort.containerPort")
    if worker_port is None:
        return []
    port = get(spec, "metrics.modelMetrics.port", DEFAULT_MODEL_METRICS_PORT)
    if port != worker_port:
        return [
            Violation(
                f"metrics.modelMetrics.port ({port}) must equal worker.modelInvocationPort.containerPort "
                f"({worker_port}) for router and cache metrics",
                "metrics.modelMetrics.port",
            )
        ]
    return []


SGLANG_METRICS_FLAG = "--enable-metrics"
"""SGLang exposes Prometheus metrics only with this flag, at ``/metrics`` on its serving port (SGLang docs,
"Production Metrics", docs.sglang.io/references/production_metrics.html)."""


def sglang_metrics_served(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """With ``metrics.enabled`` (the CRD default), an SGLang worker must actually serve what the operator scrapes.

    The operator scrapes ``metrics.modelMetrics.port`` (CRD default 8080); SGLang serves ``/metrics`` on its
    serving port, and only when started with ``--enable-metrics``.
    """
    spec = spec_of(cr)
    # The managed Inference Gateway needs SGLang's metrics too (>= 0.3.5.post1 started with --enable-metrics:
    # awslabs/ai-on-sagemaker-hyperpod@e53295231ea5 inference-gateway; issue 47 item 8), whatever metrics.enabled says.
    gateway = get(spec, "inferenceGateway.enabled") is True
    if engine_of(cr) != "sglang" or (get(spec, "metrics.enabled", True) is False and not gateway):
        return []
    worker = spec.get("worker")
    if not isinstance(worker, dict):
        return []
    out: list[Violation] = []
    worker_port = get(spec, "worker.modelInvocationPort.containerPort")
    port = get(spec, "metrics.modelMetrics.port", DEFAULT_MODEL_METRICS_PORT)
    if worker_port is not None and port != worker_port:
        out.append(
            Violation(
                f"metrics.modelMetrics.port ({port}) must equal worker.modelInvocationPort.containerPort "
                f"({worker_port}): SGLang serves /metrics on its serving port",
                "metrics.modelMetrics.port",
            )
        )
    words = [str(w) for w in [*(worker.get("command") or []), *(worker.get("args") or [])]]
    if not any(w == SGLANG_METRICS_FLAG or w.startswith(f"{SGLANG_METRICS_FLAG}=") for w in words):
        out.append(
            Violation(
                (
                    f"the managed Inference Gateway routes on SGLang's metrics but worker.command/args do not start "
                    f"the SGLang server with {SGLANG_METRICS_FLAG}; unless the image's entrypoint adds it, the "
                    "gateway's scheduler has no metrics (add it to worker.args)"
                    if gateway
                    else f"metrics are enabled (the CRD default) but worker.command/args do not start the SGLang "
                    f"server with {SGLANG_METRICS_FLAG}; unless the image's entrypoint adds it, /metrics is not "
                    "served (add it to worker.args, or set metrics.enabled: false)"
                ),
                "worker.args",
                checked_by=f"the cluster: `curl http://<worker pod>:{port}/metrics` answers",
            )
        )
    return out


def feature_supported_by_addon_version(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """Spec fields newer than the pinned add-on's operator are ignored or rejected (D5, compatibility.yaml)."""
    if not compat.is_known_addon(ctx.addon_version):
        return [Violation(f"add-on {ctx.addon_version} is not in the compatibility table")]
    out = []
    for path, introduced, feature in crd_overlays.features_missing(spec_of(cr), ctx.addon_version, str(cr.get("kind"))):
        minimum = compat.minimum_addon_for(introduced)
        need = f"add-on {minimum.addon_version} or later" if minimum else "no known add-on build carries it"
        out.append(
            Violation(
                f"`{feature.label}` needs operator {introduced}+ ({need}); pinned add-on is {ctx.addon_version}",
                path,
            )
        )
    return out


def feature_in_installed_crd(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """Fields of operators 3.4-3.7 (no public CRD) that no offline source can vouch for: the pinned add-on's
    operator mapping is inferred (3.5-3.7), or the overlay renders the field at a path no source states. Either
    way the installed CRD decides (an API server prunes a field its CRD lacks): an advisory naming the verify
    check, never a silent pass (``policies/crd_overlays.py``)."""
    if not compat.is_known_addon(ctx.addon_version):
        return []
    kind = str(cr.get("kind"))
    spec = spec_of(cr)
    refused, unknown = crd_overlays.gate(spec, ctx.addon_version, kind)
    out = [
        Violation(crd_overlays.unknown_text(o, f, ctx.addon_version), f.path, checked_by=crd_overlays.VERIFY_TEXT)
        for o, f in unknown
    ]
    skip = {id(f) for _, f in refused}
    for o, f in crd_overlays.used(spec, crd_overlays.active_fields(kind)):
        if f.checklist_id and id(f) not in skip:
            out.append(Violation(crd_overlays.path_unsourced_text(o, f), f.path, checked_by=crd_overlays.VERIFY_TEXT))
    return out


def _image_requirements(cr: Mapping[str, Any]) -> list[tuple[str, str, crd_overlays.ImageRequirement, bool | None]]:
    """(setting path, why, requirement, met) for each overlay image requirement the spec's settings trigger;
    ``met`` None when the image's tag does not name the component's version."""
    spec = spec_of(cr)
    image = get(spec, "worker.image")
    if engine_of(cr) != "vllm" or not isinstance(image, str):
        return []
    out = []
    for o, rule in crd_overlays.image_requirements():
        assert rule.when is not None and rule.requires is not None
        found, value = compat.present(spec, rule.when.path)
        if not found or not compat._same(value, rule.when.equals):
            continue
        component, version = compat.image_component(image)
        met: bool | None = None
        if component == rule.requires.component and version is not None:
            met = compat.VersionBound(min=rule.requires.min).allows(version)
        why = (
            f"`{rule.when.path}: {json.dumps(rule.when.equals)}` needs {rule.requires.label()} in the worker image "
            f"(operator {o.operator_version}; {compat.source_urls(rule.sources)})"
        )
        out.append((rule.when.path, why, rule.requires, met))
    return out


def image_meets_release_requirement(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """A setting of a later operator that needs a newer component (the overlays' rules): LMCache MultiProcess mode
    needs LMCache >= 0.5.0 (PR #464); refused when the image's tag names an older version. (The gateway's vLLM >=
    0.9.2, D4, is covered by the image sets: ``image-compatible-with-operator``.)"""
    image = get(spec_of(cr), "worker.image")
    return [
        Violation(f"{why}; worker.image {image} is older: pin one that is {req.label()}", "worker.image")
        for _, why, req, met in _image_requirements(cr)
        if met is False
    ]


def image_meets_release_requirement_offline(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """The same, where the image's tag does not name the component's version (an LMCache image for a vLLM bound,
    a vLLM image for an LMCache bound, ``:latest``): checked on the running pod."""
    image = get(spec_of(cr), "worker.image")
    return [
        Violation(
            f"{why}; the tag of worker.image {image} does not name its {req.label().split(' ')[0]} version, so this "
            "cannot be known offline",
            "worker.image",
            checked_by=f"the cluster: the {req.label().split(' ')[0]} version in the running worker "
            "(`kubectl exec <worker pod> -- pip show lmcache vllm`)",
        )
        for _, why, req, met in _image_requirements(cr)
        if met is None
    ]


def image_compatible_with_operator(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """LMCache/vLLM image versions must match the operator's supported set (D1 compatibility table).

    An LMCache/vLLM image whose tag is not a version (``:latest``, no tag, a DLC tag, a digest only) names no
    version: it cannot be checked offline (a mutable tag can change under the same name). That is refused where
    the version matters most (kvaware routing in prod: the rule's level is mandatory there) and an advisory
    elsewhere.
    """
    image = get(spec_of(cr), "worker.image")
    if not isinstance(image, str) or not compat.is_known_addon(ctx.addon_version):
        return []
    component, version = compat.image_component(image)
    if component is not None and version is None:
        need = compat.image_requirement(image, ctx.addon_version)
        return [
            Violation(
                f"image {image} names no version ({compat.image_tag_text(image)}), so whether it is {need} (what "
                f"add-on {ctx.addon_version} needs) cannot be known offline; pin "
                f"{compat.image_repository(image)}:<a version tag that is {need}>",
                "worker.image",
                checked_by="the cluster: the version the worker pod runs (`kubectl get pod -o jsonpath='{..image}'` "
                "and the image's own version)",
            )
        ]
    if compat.image_versions_ok(image, ctx.addon_version) is False:
        need = compat.image_requirement(image, ctx.addon_version)
        return [
            Violation(
                f"image {image} is not supported by add-on {ctx.addon_version} "
                f"(operator {compat.addon(ctx.addon_version).operator_version}) which needs {need}",
                "worker.image",
            )
        ]
    return []


def s3_locations_valid(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """S3 bucket names follow the S3 naming rules and are names, not URIs; ``modelLocation`` is a key prefix.

    ``modelSourceConfig.s3Storage.bucketName``, ``modelSourceConfig.modelLocation`` (with ``modelSourceType: s3``)
    and the bucket part of ``tlsConfig.tlsCertificateOutputS3Uri`` and ``dataCapture.s3Uri``
    (:mod:`policies.aws_names`: S3 User Guide, "General purpose bucket naming rules").
    """
    spec = spec_of(cr)
    out: list[Violation] = []
    bucket = get(spec, "modelSourceConfig.s3Storage.bucketName")
    if isinstance(bucket, str):
        out.extend(
            Violation(f"{p} ({aws_names.BUCKET_NAME_RULES})", "modelSourceConfig.s3Storage.bucketName")
            for p in aws_names.bucket_name_problems(bucket)
        )
    location = get(spec, "modelSourceConfig.modelLocation")
    if isinstance(location, str) and str(get(spec, "modelSourceConfig.modelSourceType", "")).lower() == "s3":
        out.extend(Violation(p, "modelSourceConfig.modelLocation") for p in aws_names.key_prefix_problems(location))
    for path in ("tlsConfig.tlsCertificateOutputS3Uri", "dataCapture.s3Uri"):
        uri = get(spec, path)
        parts = aws_names.s3_uri_parts(uri) if isinstance(uri, str) else None
        if parts is not None:
            out.extend(
                Violation(f"{path}: bucket {p} ({aws_names.BUCKET_NAME_RULES})", path)
                for p in aws_names.bucket_name_problems(parts[0])
            )
    return out


def endpoint_tags_valid(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """``spec.tags`` become tags of the SageMaker objects the operator creates: AWS's tag rules apply (no ``aws:``
    prefix, lengths, characters, at most 50 with the stack's own; :mod:`policies.aws_names`)."""
    raw = spec_of(cr).get("tags")
    if not isinstance(raw, list):
        return []
    tags = {str(t.get("name")): str(t.get("value", "")) for t in raw if isinstance(t, Mapping)}
    index = {str(t.get("name")): i for i, t in enumerate(raw) if isinstance(t, Mapping)}
    return [
        Violation(f"{message} ({aws_names.TAG_RULES})", f"tags[{index[key]}].name" if key in index else "tags")
        for key, message in aws_names.tag_problems(tags, ctx.stack_tags, user_wins=True)
    ]


def l2_redis_wired(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """``l2CacheBackend: redis`` needs ``l2CacheLocalUrl`` (the only Redis URL field), ``rediss://`` in prod (D1)."""
    spec = spec_of(cr)
    if _l2_backend(spec) != "redis":
        return []
    url = get(spec, "kvCacheSpec.l2CacheSpec.l2CacheLocalUrl")
    path = "kvCacheSpec.l2CacheSpec.l2CacheLocalUrl"
    if not url:
        return [Violation("l2CacheBackend redis needs l2CacheLocalUrl (the Redis/Valkey URL)", path)]
    if ctx.environment == "prod" and not str(url).startswith("rediss://"):
        return [Violation(f"prod needs a TLS Redis URL (rediss://...); got {str(url).split('://')[0]}://", path)]
    return []


def known_addon_defect(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """Known defects of the pinned add-on that this spec would hit (compatibility.yaml ``defects``)."""
    if not compat.is_known_addon(ctx.addon_version):
        return []
    return [
        Violation(
            f"{defect.description.strip()} Workaround: {defect.workaround} ({compat.source_urls(defect.sources)})", path
        )
        for defect, paths in compat.known_defects(spec_of(cr), ctx.addon_version)
        for path in paths
    ]


def tieredstorage_on_non_p_instance(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """Managed tiered storage L2 was observed not to be created on non-P instances (field reports; not in AWS docs)."""
    if _l2_backend(spec_of(cr)) != "tieredstorage":
        return []
    return [
        Violation(
            f"l2CacheBackend tieredstorage on {t}: the managed tiered KV cache has been observed to be "
            "created only on P-family instances (not in AWS docs: UNCONFIRMED [tieredstorage-p-only])",
            path,
        )
        for path, t in instance_types_of(cr)
        if not t.startswith("ml.p")
    ]


WEIGHTS_CACHE_DEFAULT_HOST_PATH = "/opt/dlami/nvme"
"""``modelCacheConfig.weightsCache.hostPath`` default (v3.3 CRD, aws/sagemaker-hyperpod-cli@0986f2cc): where the
operator expects the node's instance-store NVMe. That HyperPod's AMI mounts the instance store exactly there is not
in a stored AWS page: UNCONFIRMED [hyperpod-nvme-mount]."""

NODE_DISK_CHECK = "the node: `kubectl debug node/<node> -it --image=busybox -- df -h /host{path}` shows the NVMe device"


def _weights_cache_path(spec: Mapping[str, Any]) -> str | None:
    """``weightsCache.hostPath`` (its CRD default when unset) when weights caching is on, else None."""
    cache = get(spec, "modelCacheConfig.weightsCache")
    if not isinstance(cache, Mapping) or cache.get("enabled") is not True:
        return None
    return str(cache.get("hostPath") or WEIGHTS_CACHE_DEFAULT_HOST_PATH)


def _cache_targets(cr: Mapping[str, Any], ctx: RuleContext) -> tuple[list[tuple[str, str]], bool]:
    """``(spec path, instance type)`` of the nodes the cache populates, and whether the types are the endpoint's own
    (False: only ``nodeAffinity`` selects nodes, so every instance group of the stack is a candidate)."""
    named = instance_types_of(cr)
    if named:
        return named, True
    return [("nodeAffinity", t) for t in sorted(ctx.instance_types or ())], False


def weights_cache_needs_local_nvme(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """``weightsCache.enabled`` caches the model weights on the node's local NVMe at ``hostPath`` (AWS docs: model
    weights caching and image caching, D7): an instance type the EC2 data says has no instance-store NVMe cannot
    hold them (``components/config/data/instance_types.json``, from DescribeInstanceTypes)."""
    host = _weights_cache_path(spec_of(cr))
    targets, own = _cache_targets(cr, ctx)
    if host is None or not own:
        return []
    out = []
    for path, itype in targets:
        spec = cap.instance_spec(itype)
        if spec is not None and not spec.local_nvme:
            out.append(
                Violation(
                    f"modelCacheConfig.weightsCache caches the model weights on local NVMe at {host}, but {itype} "
                    "has no instance-store NVMe (EC2 DescribeInstanceTypes: no instance storage); turn weightsCache "
                    f"off or serve the model on an instance type with NVMe instance storage (the {path} here)",
                    "modelCacheConfig.weightsCache.enabled",
                )
            )
    return out


def weights_cache_nvme_offline(cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
    """What the instance data cannot tell about weights caching: an instance type it does not know, a ``hostPath``
    other than the CRD's default (whether it is on the instance store only the node knows), and endpoints that
    pick their nodes by ``nodeAffinity`` only (any group without NVMe they may land on)."""
    host = _weights_cache_path(spec_of(cr))
    if host is None:
        return []
    targets, own = _cache_targets(cr, ctx)
    check = NODE_DISK_CHECK.format(path=host)
    out = []
    for path, itype in targets:
        spec = cap.instance_spec(itype)
        if spec is None:
            out.append(
                Violation(
                    f"whether {itype} ({path}) has local NVMe for modelCacheConfig.weightsCache is unknown: it is not "
                    "in components/config/data/instance_types.json",
                    "modelCacheConfig.weightsCache.enabled",
                    checked_by=check,
                )
            )
        elif not own and not spec.local_nvme:
            out.append(
                Violation(
                    f"the endpoint selects its nodes by nodeAffinity only; instance group type {itype} has no "
                    "instance-store NVMe for modelCacheConfig.weightsCache, so weights caching fails on those nodes "
                    "unless the affinity excludes them",
                    "modelCacheConfig.weightsCache.enabled",
                    checked_by="the cluster: `kubectl get nodes -l <the affinity's labels> -L node.kubernetes.io/instance-type`",
                )
            )
    if host != WEIGHTS_CACHE_DEFAULT_HOST_PATH:
        out.append(
            Violation(
                f"modelCacheConfig.weightsCache.hostPath {host} is not the CRD default {WEIGHTS_CACHE_DEFAULT_HOST_PATH}: "
                "whether it is on the node's instance-store NVMe is known only on the node",
                "modelCacheConfig.weightsCache.hostPath",
                checked_by=check,
            )
        )
    return out


# --- the rules as their records describe them -----------------------------------------------------------

RuleFn = Callable[[Mapping[str, Any], RuleContext], list[Violation]]


def is_kvaware(cr: Mapping[str, Any]) -> bool:
    """Whether the endpoint routes kvaware (image-compatible-with-operator escalates there: its record)."""
    enabled, strategy = _routing(spec_of(cr))
    return enabled and strategy == "kvaware"


@dataclass(frozen=True)
class Rule:
    """An endpoint rule: its function and what its record (``policies/records/<name>.yaml``) says about it."""

    name: str
    fn: RuleFn
    description: str
    enforcement: Mapping[str, Level] = field(default_factory=lambda: dict.fromkeys(ENVIRONMENTS, "mandatory"))
    escalate: Escalation | None = None

    @classmethod
    def from_record(cls, record: PolicyRecord) -> Rule:
        levels: dict[str, Level] = {env: level for env, level in record.levels.items()}
        return cls(record.name, record.function(), record.description, levels, record.escalate)

    def level(self, cr: Mapping[str, Any], ctx: RuleContext) -> Level:
        """Enforcement for this resource: the per-environment level, unless the record escalates this resource."""
        up = self.escalate
        if up is not None and ctx.environment in up.environments and resolve(up.function)(cr):
            return up.to
        return self.enforcement[ctx.environment]

    def check(self, cr: Mapping[str, Any], ctx: RuleContext) -> list[Violation]:
        return self.fn(cr, ctx)


RULES: dict[str, Rule] = {r.name: Rule.from_record(r) for r in records.of_kind("endpoint")}
"""Every endpoint rule by its stable name, in record order."""


def evaluate(cr: Mapping[str, Any], ctx: RuleContext) -> list[tuple[Rule, Level, Violation]]:
    """All violations of a custom resource, each with its rule and resolved enforcement level."""
    out: list[tuple[Rule, Level, Violation]] = []
    for rule in RULES.values():
        violations = rule.check(cr, ctx)
        if violations:
            level = rule.level(cr, ctx)
            out.extend((rule, level, v) for v in violations)
    return out
