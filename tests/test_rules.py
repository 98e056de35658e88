"""Every rule of policies/rules.py: a violating custom resource and the nearest valid variant."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from policies import rules
from policies.records import RECORDS
from policies.rules import RULES, RuleContext

DEV = RuleContext("dev", "v1.4.0-eksbuild.1", frozenset({"ml.p5.48xlarge", "ml.g5.8xlarge", "ml.p6-b200.48xlarge"}))
PROD = RuleContext("prod", "v1.4.0-eksbuild.1", DEV.instance_types)
GATEWAY_DEV = RuleContext("dev", "v2.0.0-eksbuild.2", DEV.instance_types)  # operator 3.6, inferred


def base_cr(**labels: str) -> dict[str, Any]:
    """A valid vLLM InferenceEndpointConfig with prefixaware routing and an L1 cache."""
    return {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": "m", "namespace": "inference", "labels": dict(labels)},
        "spec": {
            "modelName": "m",
            "instanceType": "ml.p5.48xlarge",
            "invocationEndpoint": "v1/completions",
            "modelSourceConfig": {
                "modelSourceType": "s3",
                "s3Storage": {"bucketName": "model-bucket", "region": "us-east-1"},
            },
            "metrics": {"enabled": True, "modelMetrics": {"port": 8000}},
            "kvCacheSpec": {"enableL1Cache": True},
            "intelligentRoutingSpec": {"enabled": True, "routingStrategy": "prefixaware"},
            "worker": {
                "image": "lmcache/vllm-openai:v0.4.3",
                "modelInvocationPort": {"containerPort": 8000, "name": "http"},
                "modelVolumeMount": {"name": "model-weights"},
                "resources": {},
            },
        },
    }


def jsm_cr() -> dict[str, Any]:
    return {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "JumpStartModel",
        "metadata": {"name": "j", "labels": {rules.ENGINE_LABEL: "vllm"}},
        "spec": {
            "model": {"modelId": "meta-textgeneration-llama-3-1-8b", "acceptEula": True},
            "server": {"instanceType": "ml.g5.8xlarge"},
            "intelligentRoutingSpec": {"enabled": True, "routingStrategy": "prefixaware"},
        },
    }


Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def apply(cr: dict[str, Any]) -> None:
        node = cr
        parts = path.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        # a copy: the same mutation object serves several cases, and later mutations edit nested dicts in place
        node[parts[-1]] = copy.deepcopy(value)

    return apply


def _del(path: str) -> Mutation:
    def apply(cr: dict[str, Any]) -> None:
        node = cr
        parts = path.split(".")
        for p in parts[:-1]:
            node = node[p]
        del node[parts[-1]]

    return apply


def _all(*ms: Mutation) -> Mutation:
    def apply(cr: dict[str, Any]) -> None:
        for m in ms:
            m(cr)

    return apply


KVAWARE = _set("spec.intelligentRoutingSpec.routingStrategy", "kvaware")
REDIS = _set("spec.kvCacheSpec", {"enableL2Cache": True, "l2CacheSpec": {"l2CacheBackend": "redis"}})
PD = _set("spec.pdSpec", {"prefillSpec": {"replicas": 1}, "decodingSpec": {"replicas": 1}})

# (rule, context, violating mutation, nearest valid mutation, expected spec path of the violation, text in message)
CASES: list[tuple[str, RuleContext, Mutation, Mutation, str, str]] = [
    (
        "kvaware-requires-vllm-completions",
        DEV,
        _all(KVAWARE, _set("spec.invocationEndpoint", "v1/chat/completions")),
        KVAWARE,
        "invocationEndpoint",
        "chat/completions",
    ),
    (
        "kvaware-requires-vllm-completions",
        DEV,
        _all(KVAWARE, _set("metadata.labels", {rules.ENGINE_LABEL: "sglang"})),
        KVAWARE,
        "intelligentRoutingSpec.routingStrategy",
        "sglang",
    ),
    (
        "kvaware-requires-vllm-completions",
        DEV,
        _all(KVAWARE, _del("spec.invocationEndpoint")),
        _all(KVAWARE, _set("spec.invocationEndpoint", "completions")),
        "invocationEndpoint",
        "'invocations'",
    ),
    (
        "engine-matches-image",
        PROD,
        _all(
            _set("metadata.labels", {rules.ENGINE_LABEL: "vllm"}), _set("spec.worker.image", "lmsysorg/sglang:v0.5.2")
        ),
        _set("metadata.labels", {rules.ENGINE_LABEL: "vllm"}),
        "worker.image",
        "is a sglang image (its repository names sglang)",
    ),
    (
        "kv-cache-requires-vllm",
        DEV,
        _set("spec.worker.image", "lmsysorg/sglang:v0.5.2"),
        _all(_set("spec.worker.image", "lmsysorg/sglang:v0.5.2"), _del("spec.kvCacheSpec")),
        "kvCacheSpec",
        "sglang",
    ),
    (
        "gateway-excludes-intelligent-routing",
        DEV,
        _set("spec.inferenceGateway", {"enabled": True}),
        _all(_set("spec.inferenceGateway", {"enabled": True}), _set("spec.intelligentRoutingSpec.enabled", False)),
        "inferenceGateway.enabled",
        "mutually exclusive",
    ),
    (
        "request-limits-require-metrics",
        DEV,
        _all(_set("spec.worker.requestLimits", {"maxConcurrentRequests": 4}), _set("spec.metrics", {"enabled": False})),
        _all(_set("spec.worker.requestLimits", {"maxConcurrentRequests": 4}), _del("spec.metrics")),
        "metrics.enabled",
        "requestLimits",
    ),
    (
        "dpd-requires-efa-instances",
        DEV,
        _all(PD, _set("spec.instanceType", "ml.g5.8xlarge")),
        PD,
        "instanceType",
        "ml.g5.8xlarge",
    ),
    (
        "dpd-requires-efa-instances",
        DEV,
        _all(PD, _del("spec.instanceType")),
        _all(PD, _del("spec.instanceType"), _set("spec.instanceTypes", ["ml.p5.48xlarge"])),
        "pdSpec",
        "instanceType",
    ),
    (
        "endpoint-instance-type-in-cluster",
        DEV,
        _set("spec.instanceTypes", ["ml.p5.48xlarge", "ml.p4d.24xlarge"]),
        _set("spec.instanceTypes", ["ml.p5.48xlarge"]),
        "instanceTypes[1]",
        "ml.p4d.24xlarge",
    ),
    (
        "instance-selection-exclusive",
        DEV,
        _set("spec.nodeAffinity", {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}),
        _all(
            _set("spec.nodeAffinity", {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}),
            _del("spec.instanceType"),
        ),
        "nodeAffinity",
        "mutually exclusive",
    ),
    (
        "router-metrics-port-matches-worker",
        DEV,
        _del("spec.metrics.modelMetrics"),
        _all(_del("spec.metrics.modelMetrics"), _set("spec.worker.modelInvocationPort.containerPort", 8080)),
        "metrics.modelMetrics.port",
        "(8080)",
    ),
    (
        "feature-supported-by-addon-version",
        RuleContext("dev", "v1.3.0-eksbuild.1", DEV.instance_types),
        _set("spec.loadBalancer", {"idleTimeoutSeconds": 120}),
        _set("spec.loadBalancer", {"healthCheckPath": "/health"}),
        "loadBalancer.idleTimeoutSeconds",
        "3.3",
    ),
    (
        # a 3.6 field on the add-on whose operator is inferred (no minimumAddon states it): an advisory naming the
        # verify check; inferenceGateway (D4 names the add-on builds) holds
        "feature-in-installed-crd",
        GATEWAY_DEV,
        _set("spec.kubernetes", {"podTemplateAnnotations": {"team": "search"}}),
        _set("spec.inferenceGateway", {"enabled": True}),
        "kubernetes.podTemplateAnnotations",
        "`kubernetes.podTemplateAnnotations` is added by operator 3.6 (https://github.com/aws/sagemaker-hyperpod-cli/"
        "pull/461); which operator add-on v2.0.0-eksbuild.2 carries is inferred",
    ),
    (
        "image-meets-release-requirement",
        GATEWAY_DEV,
        _set("spec.lmcache", {"mode": "MultiProcess"}),
        _all(_set("spec.lmcache", {"mode": "MultiProcess"}), _set("spec.worker.image", "lmcache/vllm-openai:v0.5.0")),
        "worker.image",
        '`lmcache.mode: "MultiProcess"` needs LMCache >= 0.5.0 in the worker image (operator 3.7; '
        "https://github.com/aws/sagemaker-hyperpod-cli/pull/464); worker.image lmcache/vllm-openai:v0.4.3 is older",
    ),
    (
        "image-meets-release-requirement-offline",
        GATEWAY_DEV,
        _all(_set("spec.lmcache", {"mode": "MultiProcess"}), _set("spec.worker.image", "vllm/vllm-openai:v0.10.1")),
        _all(_set("spec.lmcache", {"mode": "InProcess"}), _set("spec.worker.image", "vllm/vllm-openai:v0.10.1")),
        "worker.image",
        "the tag of worker.image vllm/vllm-openai:v0.10.1 does not name its LMCache version",
    ),
    (
        "image-compatible-with-operator",
        DEV,
        _set("spec.worker.image", "lmcache/vllm-openai:v0.3.9post2"),
        _set("spec.worker.image", "lmcache/vllm-openai:v0.4.4"),
        "worker.image",
        ">= 0.4.3",
    ),
    (
        "l2-redis-wired",
        DEV,
        REDIS,
        _all(REDIS, _set("spec.kvCacheSpec.l2CacheSpec.l2CacheLocalUrl", "redis://r.example:6379")),
        "kvCacheSpec.l2CacheSpec.l2CacheLocalUrl",
        "l2CacheLocalUrl",
    ),
    (
        "l2-redis-wired",
        PROD,
        _all(REDIS, _set("spec.kvCacheSpec.l2CacheSpec.l2CacheLocalUrl", "redis://r.example:6379")),
        _all(REDIS, _set("spec.kvCacheSpec.l2CacheSpec.l2CacheLocalUrl", "rediss://r.example:6379")),
        "kvCacheSpec.l2CacheSpec.l2CacheLocalUrl",
        "rediss://",
    ),
    (
        "known-addon-defect",
        RuleContext("dev", "v1.3.0-eksbuild.1", DEV.instance_types),
        _all(REDIS, _set("spec.kvCacheSpec.l2CacheSpec.l2CacheLocalUrl", "redis://r:6379")),
        _all(_set("spec.kvCacheSpec", {"enableL2Cache": True, "l2CacheSpec": {"l2CacheBackend": "tieredstorage"}})),
        "kvCacheSpec.l2CacheSpec.l2CacheBackend",
        "issues/431",
    ),
    (
        "known-addon-defect",
        RuleContext("dev", "v1.2.1-eksbuild.1", DEV.instance_types),
        _set("spec.kvCacheSpec", {"enableL1Cache": False}),
        _set("spec.kvCacheSpec", {"enableL1Cache": True}),
        "kvCacheSpec.enableL1Cache",
        "3.3",
    ),
    (
        "sglang-metrics-served",
        DEV,
        _all(
            _set("metadata.labels", {rules.ENGINE_LABEL: "sglang"}),
            _set("spec.worker.args", ["--port", "8000", "--enable-metrics"]),
            _set("spec.metrics", {"enabled": True}),  # scrape port defaults to 8080, SGLang serves on 8000
        ),
        _all(
            _set("metadata.labels", {rules.ENGINE_LABEL: "sglang"}),
            _set("spec.worker.args", ["--port", "8000", "--enable-metrics"]),
        ),
        "metrics.modelMetrics.port",
        "(8080) must equal",
    ),
    (
        "sglang-metrics-served",
        DEV,
        _all(
            _set("metadata.labels", {rules.ENGINE_LABEL: "sglang"}),
            _set("spec.worker.args", ["--port", "8000"]),
        ),
        _all(
            _set("metadata.labels", {rules.ENGINE_LABEL: "sglang"}),
            _set("spec.worker.args", ["--port", "8000"]),
            _set("spec.metrics", {"enabled": False}),
        ),
        "worker.args",
        "--enable-metrics",
    ),
    (
        "image-compatible-with-operator",
        DEV,
        _set("spec.worker.image", "lmcache/vllm-openai:latest"),
        _set("spec.worker.image", "lmcache/vllm-openai:v0.4.3"),
        "worker.image",
        "names no version (tag 'latest' is mutable), so whether it is LMCache >= 0.4.3",
    ),
    (
        "image-compatible-with-operator",
        DEV,
        _set("spec.worker.image", "vllm/vllm-openai"),
        _set("spec.worker.image", "vllm/vllm-openai:v0.19.1"),
        "worker.image",
        "no tag: Kubernetes pulls :latest, which is mutable",
    ),
    (
        "s3-locations-valid",
        DEV,
        _set("spec.modelSourceConfig.s3Storage.bucketName", "s3://my-models/"),
        _set("spec.modelSourceConfig.s3Storage.bucketName", "my-models"),
        "modelSourceConfig.s3Storage.bucketName",
        "'s3://my-models/' is an S3 URI, not a bucket name: write the bucket name only ('my-models')",
    ),
    (
        "s3-locations-valid",
        DEV,
        _set("spec.modelSourceConfig.s3Storage.bucketName", "My_Models"),
        _set("spec.modelSourceConfig.s3Storage.bucketName", "my-models"),
        "modelSourceConfig.s3Storage.bucketName",
        "'My_Models' contains 'M' '_'; only lowercase letters, numbers, '.' and '-'",
    ),
    (
        "s3-locations-valid",
        DEV,
        _set("spec.modelSourceConfig.modelLocation", "s3://model-bucket/llama"),
        _set("spec.modelSourceConfig.modelLocation", "llama"),
        "modelSourceConfig.modelLocation",
        "modelLocation is the key prefix inside s3Storage.bucketName: write 'llama'",
    ),
    (
        "s3-locations-valid",
        DEV,
        _set("spec.tlsConfig", {"tlsCertificateOutputS3Uri": "s3://tls..bucket/certs"}),
        _set("spec.tlsConfig", {"tlsCertificateOutputS3Uri": "s3://tls-bucket/certs"}),
        "tlsConfig.tlsCertificateOutputS3Uri",
        "'tls..bucket' contains two adjacent periods",
    ),
    (
        "endpoint-tags-valid",
        DEV,
        _set("spec.tags", [{"name": "team", "value": "ml"}, {"name": "aws:owner", "value": "x"}]),
        _set("spec.tags", [{"name": "team", "value": "ml"}, {"name": "owner", "value": "x"}]),
        "tags[1].name",
        "tag key 'aws:owner': the aws: prefix is reserved for AWS",
    ),
    (
        "weights-cache-needs-local-nvme",
        RuleContext("dev", "v1.4.0-eksbuild.1", frozenset({"ml.c5.18xlarge"})),
        _all(
            _set("spec.instanceType", "ml.c5.18xlarge"),
            _set("spec.modelCacheConfig", {"weightsCache": {"enabled": True}}),
        ),
        _all(
            _set("spec.instanceType", "ml.g5.8xlarge"),
            _set("spec.modelCacheConfig", {"weightsCache": {"enabled": True}}),
        ),
        "modelCacheConfig.weightsCache.enabled",
        "ml.c5.18xlarge has no instance-store NVMe",
    ),
    (
        "weights-cache-nvme-offline",
        DEV,
        _set("spec.modelCacheConfig", {"weightsCache": {"enabled": True, "hostPath": "/scratch"}}),
        _set("spec.modelCacheConfig", {"weightsCache": {"enabled": True}}),
        "modelCacheConfig.weightsCache.hostPath",
        "hostPath /scratch is not the CRD default /opt/dlami/nvme",
    ),
    (
        "tieredstorage-on-non-p-instance",
        DEV,
        _all(
            _set("spec.kvCacheSpec.l2CacheSpec", {"l2CacheBackend": "tieredstorage"}),
            _set("spec.instanceType", "ml.g5.8xlarge"),
        ),
        _set("spec.kvCacheSpec.l2CacheSpec", {"l2CacheBackend": "tieredstorage"}),
        "instanceType",
        "ml.g5.8xlarge",
    ),
]


def test_every_rule_has_cases() -> None:
    assert {c[0] for c in CASES} == set(RULES)


def test_base_resource_is_clean() -> None:
    assert rules.evaluate(base_cr(), DEV) == []
    assert rules.evaluate(base_cr(), PROD) == []


@pytest.mark.parametrize(("name", "ctx", "bad", "good", "path", "text"), CASES, ids=[c[0] for c in CASES])
def test_rule_violation_and_nearest_valid(
    name: str, ctx: RuleContext, bad: Mutation, good: Mutation, path: str, text: str
) -> None:
    rule = RULES[name]
    violating = base_cr()
    bad(violating)
    found = rule.check(violating, ctx)
    assert len(found) == 1, found
    assert found[0].path == path
    assert text in found[0]
    valid = base_cr()
    good(valid)
    assert rule.check(valid, ctx) == []


def test_kvaware_on_jumpstart_is_rejected_prefixaware_is_not() -> None:
    cr = jsm_cr()
    assert RULES["kvaware-requires-vllm-completions"].check(cr, DEV) == []
    cr["spec"]["intelligentRoutingSpec"]["routingStrategy"] = "kvaware"
    (v,) = RULES["kvaware-requires-vllm-completions"].check(cr, DEV)
    assert "JumpStartModel" in v
    assert [p for p, _ in rules.instance_types_of(cr)] == ["server.instanceType"]


def test_engine_from_label_then_image() -> None:
    cr = base_cr()
    assert rules.engine_of(cr) == "vllm"
    cr["spec"]["worker"]["image"] = "lmsysorg/sglang:v0.5.2"
    assert rules.engine_of(cr) == "sglang"
    cr["spec"]["worker"]["image"] = "nvcr.io/nvidia/tritonserver:25.01"
    assert rules.engine_of(cr) == "other"
    cr["metadata"]["labels"][rules.ENGINE_LABEL] = "vllm"
    assert rules.engine_of(cr) == "vllm"


def test_cache_disable_counts_as_on_before_operator_33() -> None:
    cr = base_cr()
    cr["spec"]["worker"]["image"] = "lmsysorg/sglang:v0.5.2"
    cr["spec"]["intelligentRoutingSpec"]["enabled"] = False
    cr["spec"]["kvCacheSpec"] = {"enableL1Cache": False, "enableL2Cache": False}
    assert RULES["kv-cache-requires-vllm"].check(cr, DEV) == []
    old = RuleContext("dev", "v1.3.0-eksbuild.1", DEV.instance_types)
    assert len(RULES["kv-cache-requires-vllm"].check(cr, old)) == 1


def test_unknown_instance_types_skip_cluster_rule() -> None:
    cr = base_cr()
    cr["spec"]["instanceType"] = "ml.p4d.24xlarge"
    assert RULES["endpoint-instance-type-in-cluster"].check(cr, RuleContext("dev", "v1.4.0-eksbuild.1")) == []
    assert len(RULES["endpoint-instance-type-in-cluster"].check(cr, DEV)) == 1


def test_enforcement_levels() -> None:
    """Each rule's levels are its record's; image-compatible-with-operator escalates kvaware endpoints in prod."""
    for name, rule in RULES.items():
        assert rule.description and rule.fn.__doc__
        assert rule.enforcement == RECORDS[name].levels, name
    image = RULES["image-compatible-with-operator"]
    kvaware = copy.deepcopy(base_cr())
    KVAWARE(kvaware)
    assert image.level(kvaware, PROD) == "mandatory"
    assert image.level(kvaware, DEV) == "advisory"
    assert image.level(base_cr(), PROD) == "advisory"


def test_evaluate_reports_level_per_violation() -> None:
    cr = base_cr()
    KVAWARE(cr)
    cr["spec"]["worker"]["image"] = "lmcache/vllm-openai:v0.3.9post2"
    cr["spec"]["invocationEndpoint"] = "v1/chat/completions"
    got = {(rule.name, level) for rule, level, _ in rules.evaluate(cr, PROD)}
    assert got == {("kvaware-requires-vllm-completions", "mandatory"), ("image-compatible-with-operator", "mandatory")}


# --- every branch of the conditions, with literal expectations ---------------------------------------------


@pytest.mark.parametrize(
    ("engine_label", "image", "kv_cache", "expected"),
    [
        # engine other (neither vllm nor sglang) with a cache on: caught, like sglang
        (
            "other",
            "ghcr.io/acme/tgi:2.0",
            {"enableL1Cache": True},
            ["kvCacheSpec needs a vLLM engine (LMCache); this endpoint runs other"],
        ),
        (
            "sglang",
            "lmsysorg/sglang:v0.5.2",
            {"enableL2Cache": True},
            ["kvCacheSpec needs a vLLM engine (LMCache); this endpoint runs sglang"],
        ),
        # engine inferred from the image when there is no label
        (
            None,
            "ghcr.io/acme/tgi:2.0",
            {"enableL1Cache": True},
            ["kvCacheSpec needs a vLLM engine (LMCache); this endpoint runs other"],
        ),
        # a vLLM engine with a cache: fine
        ("vllm", "ghcr.io/acme/tgi:2.0", {"enableL1Cache": True}, []),
        (None, "lmcache/vllm-openai:v0.4.3", {"enableL1Cache": True}, []),
        # no cache at all (no kvCacheSpec) or every tier off on operator >= 3.3: nothing to check
        ("other", "ghcr.io/acme/tgi:2.0", None, []),
        ("other", "ghcr.io/acme/tgi:2.0", {"enableL1Cache": False, "enableL2Cache": False}, []),
        # enableL1Cache defaults to on when kvCacheSpec is present (CRD default true)
        ("other", "ghcr.io/acme/tgi:2.0", {}, ["kvCacheSpec needs a vLLM engine (LMCache); this endpoint runs other"]),
    ],
)
def test_kv_cache_requires_vllm_every_engine(
    engine_label: str | None, image: str, kv_cache: dict[str, Any] | None, expected: list[str]
) -> None:
    cr = base_cr(**({rules.ENGINE_LABEL: engine_label} if engine_label else {}))
    cr["spec"]["worker"]["image"] = image
    if kv_cache is None:
        del cr["spec"]["kvCacheSpec"]
    else:
        cr["spec"]["kvCacheSpec"] = kv_cache
    found = RULES["kv-cache-requires-vllm"].check(cr, DEV)
    assert [str(v) for v in found] == expected
    assert [v.path for v in found] == ["kvCacheSpec"] * len(expected)


ROUTER_PORT_MSG = (
    "metrics.modelMetrics.port (9000) must equal worker.modelInvocationPort.containerPort (8000) "
    "for router and cache metrics"
)


@pytest.mark.parametrize(
    ("routing", "kv_cache", "metrics", "expected"),
    [
        # routing on alone, KV cache on alone, both: each needs the metrics port to match
        (True, None, {"enabled": True, "modelMetrics": {"port": 9000}}, [ROUTER_PORT_MSG]),
        (False, {"enableL1Cache": True}, {"enabled": True, "modelMetrics": {"port": 9000}}, [ROUTER_PORT_MSG]),
        (True, {"enableL1Cache": True}, {"enabled": True, "modelMetrics": {"port": 9000}}, [ROUTER_PORT_MSG]),
        # neither routing nor a cache: the port does not matter
        (False, None, {"enabled": True, "modelMetrics": {"port": 9000}}, []),
        (False, {"enableL1Cache": False, "enableL2Cache": False}, {"enabled": False}, []),
        # metrics turned off while routing or a cache needs them
        (True, None, {"enabled": False}, ["intelligent routing / KV cache metrics need metrics.enabled: true"]),
        (
            False,
            {"enableL1Cache": True},
            {"enabled": False},
            ["intelligent routing / KV cache metrics need metrics.enabled: true"],
        ),
        # the CRD default port is 8080, which is not the worker's 8000
        (True, None, {"enabled": True}, [ROUTER_PORT_MSG.replace("(9000)", "(8080)")]),
        # matching port: fine
        (True, {"enableL1Cache": True}, {"enabled": True, "modelMetrics": {"port": 8000}}, []),
    ],
)
def test_router_metrics_port_every_branch(
    routing: bool, kv_cache: dict[str, Any] | None, metrics: dict[str, Any], expected: list[str]
) -> None:
    cr = base_cr()
    cr["spec"]["intelligentRoutingSpec"]["enabled"] = routing
    if kv_cache is None:
        del cr["spec"]["kvCacheSpec"]
    else:
        cr["spec"]["kvCacheSpec"] = kv_cache
    cr["spec"]["metrics"] = metrics
    assert [str(v) for v in RULES["router-metrics-port-matches-worker"].check(cr, DEV)] == expected


def test_router_metrics_port_without_a_worker_port_is_not_judged() -> None:
    cr = base_cr()
    del cr["spec"]["worker"]["modelInvocationPort"]
    cr["spec"]["metrics"] = {"enabled": True, "modelMetrics": {"port": 9000}}
    assert RULES["router-metrics-port-matches-worker"].check(cr, DEV) == []


def test_empty_instance_type_set_is_not_unknown() -> None:
    """``None`` means the stack's groups are unknown (skip); an empty set means the stack has no group."""
    cr = base_cr()
    rule = RULES["endpoint-instance-type-in-cluster"]
    assert rule.check(cr, RuleContext("dev", "v1.4.0-eksbuild.1", None)) == []
    found = rule.check(cr, RuleContext("dev", "v1.4.0-eksbuild.1", frozenset()))
    assert [str(v) for v in found] == [
        "instance type ml.p5.48xlarge is not in any HyperPod instance group (groups have: none)"
    ]
    assert [v.path for v in found] == ["instanceType"]
    found = rule.check(cr, RuleContext("dev", "v1.4.0-eksbuild.1", frozenset({"ml.g5.8xlarge"})))
    assert [str(v) for v in found] == [
        "instance type ml.p5.48xlarge is not in any HyperPod instance group (groups have: ml.g5.8xlarge)"
    ]


def test_engine_label_wins_over_the_image_for_every_engine() -> None:
    for label in ("vllm", "sglang", "other"):
        cr = base_cr(**{rules.ENGINE_LABEL: label})
        cr["spec"]["worker"]["image"] = "lmsysorg/sglang:v0.5.2" if label != "sglang" else "lmcache/vllm-openai:v0.4.3"
        assert rules.engine_of(cr) == label
    unknown = base_cr(**{rules.ENGINE_LABEL: "tgi"})  # not an engine name: fall back to the image
    assert rules.engine_of(unknown) == "vllm"
    no_labels = base_cr()
    no_labels["metadata"].pop("labels")
    no_labels["spec"]["worker"]["image"] = "lmsysorg/sglang:v0.5.2"
    assert rules.engine_of(no_labels) == "sglang"


@pytest.mark.parametrize(
    ("kv_cache", "expected"),
    [
        ({"enableL1Cache": False, "enableL2Cache": True}, True),  # L2 alone turns the cache on
        ({"enableL1Cache": False}, False),  # L2 defaults to off
        ({"enableL2Cache": False}, True),  # L1 defaults to on (CRD default true)
        ({"enableL1Cache": False, "enableL2Cache": False}, False),
        ("not a mapping", False),
    ],
)
def test_kv_cache_tiers_on_operator_33_and_later(kv_cache: Any, expected: bool) -> None:
    assert rules._kv_cache_on({"kvCacheSpec": kv_cache}, "v1.4.0-eksbuild.1") is expected


@pytest.mark.parametrize(
    ("image", "engine"),
    [
        ("vllm/vllm-openai:v0.10.1", "vllm"),  # vLLM without LMCache in the name
        ("lmcache/lmcache-server:v0.4.3", "vllm"),  # LMCache without vLLM in the name
        ("LMCache/VLLM-OpenAI:v0.4.3", "vllm"),  # compared lower-case
        ("lmsysorg/sglang:v0.5.2", "sglang"),
        ("ghcr.io/acme/tgi:2.0", "other"),
    ],
)
def test_engine_from_the_image_without_a_label(image: str, engine: str) -> None:
    cr = base_cr()
    cr["metadata"]["labels"] = {}
    cr["spec"]["worker"]["image"] = image
    assert rules.engine_of(cr) == engine


def test_kvaware_on_a_jumpstart_model_says_what_to_do_instead() -> None:
    cr = jsm_cr()
    cr["spec"]["intelligentRoutingSpec"]["routingStrategy"] = "kvaware"
    found = RULES["kvaware-requires-vllm-completions"].check(cr, DEV)
    assert [(str(v), v.path) for v in found] == [
        (
            "routingStrategy kvaware needs invocationEndpoint /completions, which a JumpStartModel cannot set; "
            "use prefixaware",
            "intelligentRoutingSpec.routingStrategy",
        )
    ]
