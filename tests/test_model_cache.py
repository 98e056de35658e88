"""Operator 3.3's model caching and ALB idle timeout: rendered and schema-checked against the v3.3 CRDs, refused
on an add-on that carries operator 3.2 (naming the field and the release), weights caching only where the instance
data knows NVMe (unknown: an advisory), the cache DaemonSets on the endpoint's nodes in the capacity table and the
rehearsal's fit, and an idle timeout that covers ``expectedMaxResponseSeconds``.

The staging stack file caches its first endpoint (image and weights) with ``idleTimeoutSeconds: 300`` and
``expectedMaxResponseSeconds: 240`` on add-on v1.5.0-eksbuild.1 (operator 3.4, whose CRD is the 3.3 one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.config import ConfigError, parse_stack_config
from components.config.validation import run_advisories
from policies import capacity_rules as cap
from policies import rules
from tests.conftest import stack_mapping
from tests.crd_schema import crd_path, validate_cr
from tools.plan.capacity_table import capacity_report
from tools.plan.harness import StackRun
from tools.plan.mocks import unwrap_secrets

CACHED = "llama-8b-prefix"
IEC_TYPE = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"


def _parse(mapping: dict[str, Any]) -> Any:
    values = {
        k.split(":", 1)[1]: v
        for k, v in mapping.items()
        if k.startswith("hyperpod-inference:") and k != "hyperpod-inference:ingress"
    }
    return parse_stack_config(values, stack="staging", region=mapping["aws:region"])


def _issues(mapping: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        _parse(mapping)
    return {i.path: i.message for i in err.value.issues}


def _cached_cr(run: StackRun) -> dict[str, Any]:
    (reg,) = [r for r in run.registrations if r.type == IEC_TYPE and r.inputs["metadata"]["name"] == CACHED]
    cr: dict[str, Any] = unwrap_secrets(reg.inputs)
    return cr


def test_cached_endpoint_renders_and_validates_against_the_v33_crds(
    stack_runs: dict[str, StackRun], crds_dir: Path
) -> None:
    cr = _cached_cr(stack_runs["staging"])
    assert cr["spec"]["modelCacheConfig"] == {"imageCache": {"enabled": True}, "weightsCache": {"enabled": True}}
    assert cr["spec"]["loadBalancer"] == {"healthCheckPath": "/health", "idleTimeoutSeconds": 300}
    assert "expectedMaxResponseSeconds" not in cr["spec"]  # the program's own field stays out of the CR
    addon = stack_mapping("staging")["hyperpod-inference:operator"]["addonVersion"]
    assert addon == "v1.5.0-eksbuild.1"
    assert crd_path(crds_dir, "InferenceEndpointConfig", addon).parts[-2:] == (
        "v3.3",
        "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
    )
    assert validate_cr(cr, crds_dir, addon) == []
    # the same custom resource is refused by operator 3.2's CRD (the fields do not exist there)
    errors = validate_cr(cr, crds_dir, "v1.3.0-eksbuild.1")
    assert any("modelCacheConfig" in e for e in errors) and any("idleTimeoutSeconds" in e for e in errors)


def test_the_same_stack_on_an_operator_32_addon_is_refused_naming_field_and_release() -> None:
    mapping = stack_mapping("staging")
    mapping["hyperpod-inference:operator"]["addonVersion"] = "v1.3.0-eksbuild.1"
    issues = _issues(mapping)
    crd33 = "https://github.com/aws/sagemaker-hyperpod-cli/tree/0986f2cc4eb14070d3aeb159c2c9b09d1b5f287b/"
    assert issues["endpoints[0].spec.modelCacheConfig"].startswith(
        "`modelCacheConfig` needs operator 3.3+ (add-on v1.4.0-eksbuild.1 or later; " + crd33
    )
    assert issues["endpoints[0].spec.modelCacheConfig"].endswith(
        "operator.addonVersion pins v1.3.0-eksbuild.1 (operator 3.2)"
    )
    assert issues["endpoints[0].spec.loadBalancer.idleTimeoutSeconds"].startswith(
        "`loadBalancer.idleTimeoutSeconds` needs operator 3.3+ (add-on v1.4.0-eksbuild.1 or later"
    )


def test_weights_caching_without_local_nvme_is_refused() -> None:
    mapping = stack_mapping("staging")
    mapping["hyperpod-inference:cluster"]["instanceGroups"].append(
        {"name": "cpu", "instanceType": "ml.c5.18xlarge", "instanceCount": 1, "availabilityZoneId": "euw2-az2"}
    )
    mapping["hyperpod-inference:endpoints"][0]["spec"]["instanceType"] = "ml.c5.18xlarge"
    issues = _issues(mapping)
    assert issues["endpoints[0].spec.modelCacheConfig.weightsCache.enabled"] == (
        "modelCacheConfig.weightsCache caches the model weights on local NVMe at /opt/dlami/nvme, but "
        "ml.c5.18xlarge has no instance-store NVMe (EC2 DescribeInstanceTypes: no instance storage); turn "
        "weightsCache off or serve the model on an instance type with NVMe instance storage (the instanceType here) "
        "[weights-cache-needs-local-nvme]"
    )
    # the image cache alone needs no NVMe
    mapping["hyperpod-inference:endpoints"][0]["spec"]["modelCacheConfig"].pop("weightsCache")
    assert "endpoints[0].spec.modelCacheConfig.weightsCache.enabled" not in _issues_or_none(mapping)


def _issues_or_none(mapping: dict[str, Any]) -> dict[str, str]:
    try:
        _parse(mapping)
    except ConfigError as err:
        return {i.path: i.message for i in err.issues}
    return {}


def test_weights_caching_is_an_advisory_where_the_data_cannot_tell() -> None:
    # a hostPath other than the CRD default: whether it is on the NVMe only the node knows
    mapping = stack_mapping("staging")
    mapping["hyperpod-inference:endpoints"][0]["spec"]["modelCacheConfig"]["weightsCache"]["hostPath"] = "/data"
    advisories = [a for a in run_advisories(_parse(mapping)) if a.rule == "weights-cache-nvme-offline"]
    assert [(a.path, a.checked_by) for a in advisories] == [
        (
            "endpoints[0].spec.modelCacheConfig.weightsCache.hostPath",
            "the node: `kubectl debug node/<node> -it --image=busybox -- df -h /host/data` shows the NVMe device",
        )
    ]
    # the default hostPath on a type the data knows has NVMe: no advisory, no error
    assert [a for a in run_advisories(_parse(stack_mapping("staging"))) if a.rule.startswith("weights-cache")] == []
    # an instance type the data does not know: unknown, never "holds"
    cr = {
        "kind": "InferenceEndpointConfig",
        "spec": {"instanceType": "ml.x9.unknown", "modelCacheConfig": {"weightsCache": {"enabled": True}}},
    }
    ctx = rules.RuleContext("dev", "v1.5.0-eksbuild.1", frozenset({"ml.x9.unknown"}))
    assert rules.weights_cache_needs_local_nvme(cr, ctx) == []
    (unknown,) = rules.weights_cache_nvme_offline(cr, ctx)
    assert unknown.startswith("whether ml.x9.unknown (instanceType) has local NVMe") and unknown.checked_by


def test_node_affinity_only_endpoints_are_judged_against_every_group() -> None:
    cr = {
        "kind": "InferenceEndpointConfig",
        "spec": {"nodeAffinity": {}, "modelCacheConfig": {"weightsCache": {"enabled": True}}},
    }
    ctx = rules.RuleContext("dev", "v1.5.0-eksbuild.1", frozenset({"ml.p5.4xlarge", "ml.m5.2xlarge"}))
    assert rules.weights_cache_needs_local_nvme(cr, ctx) == []
    (adv,) = rules.weights_cache_nvme_offline(cr, ctx)
    assert "ml.m5.2xlarge has no instance-store NVMe" in adv and adv.path == "modelCacheConfig.weightsCache.enabled"


def test_instance_data_knows_instance_store_nvme() -> None:
    p5 = cap.instance_spec("ml.p5.4xlarge")
    m5 = cap.instance_spec("ml.m5.2xlarge")
    assert p5 is not None and (p5.instance_store_gb, p5.instance_store_nvme, p5.local_nvme) == (3800, "required", True)
    assert m5 is not None and (m5.instance_store_gb, m5.instance_store_nvme, m5.local_nvme) == (0, None, False)


def test_capacity_table_shows_the_cache_daemonsets_on_the_target_group(stack_runs: dict[str, StackRun]) -> None:
    data = capacity_report(stack_runs["staging"].registrations).data
    by_group = {g["name"]: g for g in data["groups"]}
    image = "model-image-cache (hyperpod-ns-serving/llama-8b-prefix)"
    weights = "model-weights-cache (hyperpod-ns-serving/llama-8b-prefix)"
    assert {image, weights} <= set(by_group["gpu-p5"]["daemonSets"])
    assert {image, weights} <= set(by_group["gpu-p5"]["unknownDaemonSets"])  # requests unpublished: unknown
    assert image not in by_group["system"]["daemonSets"]
    # each takes a pod slot on every gpu-p5 node (requests unknown: not subtracted, and listed)
    ds_pods = by_group["gpu-p5"]["perNode"]["daemonSets"]["pods"]
    assert ds_pods == len(by_group["gpu-p5"]["daemonSets"])


def test_one_image_cache_per_image_and_the_rehearsals_fit_counts_it() -> None:
    def cr(name: str, image: str, itype: str) -> tuple[str, dict[str, Any]]:
        spec = {
            "instanceType": itype,
            "worker": {"image": image},
            "modelCacheConfig": {"imageCache": {"enabled": True}},
        }
        return IEC_TYPE, {"kind": "InferenceEndpointConfig", "metadata": {"name": name, "namespace": "a"}, "spec": spec}

    pods = cap.target_node_pods(
        [cr("x", "img:1", "ml.p5.4xlarge"), cr("y", "img:1", "ml.g5.8xlarge"), cr("z", "img:2", "ml.p5.4xlarge")]
    )
    assert [(p.name, p.node_selector) for p in pods] == [
        ("model-image-cache (a/x, a/y)", {cap.INSTANCE_TYPE_LABEL: ("ml.g5.8xlarge", "ml.p5.4xlarge")}),
        ("model-image-cache (a/z)", {cap.INSTANCE_TYPE_LABEL: ("ml.p5.4xlarge",)}),
    ]
    group = cap.Group("gpu", "ml.p5.4xlarge", 1)
    with_caches = cap.node_allocatable(group, [*cap.load_system_pods()[0], *pods])
    without = cap.node_allocatable(group, cap.load_system_pods()[0])
    assert with_caches is not None and without is not None
    assert with_caches.allocatable[cap.PODS] == without.allocatable[cap.PODS] - 2
    assert cap.fit_hook_for([cr("x", "img:1", "ml.p5.4xlarge")]) is not None


def test_idle_timeout_must_cover_the_longest_expected_response() -> None:
    mapping = stack_mapping("staging")
    mapping["hyperpod-inference:endpoints"][0]["spec"]["loadBalancer"]["idleTimeoutSeconds"] = 120
    assert _issues(mapping) == {
        "endpoints[0].spec.loadBalancer.idleTimeoutSeconds": (
            "expectedMaxResponseSeconds is 240 s but the endpoint's ALB closes connections idle for 120 s: responses "
            "slower than that end in 504; set spec.loadBalancer.idleTimeoutSeconds to at least 240"
        )
    }
    # unset: the CRD's 60 s default, and on operator 3.2 the field itself needs 3.3
    mapping = stack_mapping("staging")
    ep = mapping["hyperpod-inference:endpoints"][0]
    ep["spec"]["loadBalancer"].pop("idleTimeoutSeconds")
    ep["spec"].pop("modelCacheConfig")
    mapping["hyperpod-inference:operator"]["addonVersion"] = "v1.3.0-eksbuild.1"
    assert _issues(mapping)["endpoints[0].expectedMaxResponseSeconds"] == (
        "expectedMaxResponseSeconds is 240 s but the endpoint's ALB closes connections idle for 60 s (the CRD "
        "default): responses slower than that end in 504; set spec.loadBalancer.idleTimeoutSeconds to at least 240 "
        "(the field needs operator 3.3+: add-on v1.4.0-eksbuild.1 or later; operator.addonVersion pins "
        "v1.3.0-eksbuild.1)"
    )
    # bounded by what any ALB idle timeout can cover
    mapping = stack_mapping("staging")
    mapping["hyperpod-inference:endpoints"][0]["expectedMaxResponseSeconds"] = 5000
    assert "endpoints[0].expectedMaxResponseSeconds" in _issues(mapping)
