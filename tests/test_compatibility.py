"""The compatibility table: its data, its query helpers, and the config checks built on it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from components.config import ConfigError, parse_stack_config
from policies import compatibility as compat
from policies import crd_overlays
from tests.conftest import CRDS, CRDS_MISSING, stack_mapping


def _parse(mapping: dict[str, Any]) -> Any:
    """Parse a stack mapping; the ingress section (secrets, another layer) is left out."""
    values = {
        k.split(":", 1)[1]: v
        for k, v in mapping.items()
        if k.startswith("hyperpod-inference:") and k != "hyperpod-inference:ingress"
    }
    return parse_stack_config(values, stack="dev", region=mapping["aws:region"])


GATEWAY_SPEC = {
    "bbr": {"enabled": True},
    "schedulers": [{"name": "llama", "modelName": "llama-8b", "modelSelector": {"matchLabels": {"app": "llama-8b"}}}],
}


def _issues(mapping: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as err:
        _parse(mapping)
    return [(i.path, i.message) for i in err.value.issues]


def test_table_rows_cite_sources_and_are_ordered() -> None:
    table = compat.load_compatibility()
    versions = [a.addon_version for a in table.addons]
    assert versions[0] == "v1.0.0-eksbuild.1"
    assert "v1.5.0-eksbuild.1" in versions and versions[-1] == "v2.1.0-eksbuild.1"
    operators = [a.operator for a in table.addons]
    assert operators == sorted(operators)
    for row in (*table.addons, *table.features, *table.defects):
        assert row.sources, row
        for key in row.sources:
            assert table.sources[key].startswith("https://")
    assert compat.load_compatibility() is table  # cached


def test_operator_versions_of_known_addons() -> None:
    assert compat.addon("v1.3.0-eksbuild.1").operator_version == "3.2"
    assert compat.addon("v1.2.0-eksbuild.1").required_configuration == ("hyperpodClusterArn",)
    assert compat.addon("v1.0.0-eksbuild.1").required_configuration == ()
    assert compat.addon("v2.0.0-eksbuild.2").inference_gateway
    assert not compat.addon("v1.5.0-eksbuild.1").inference_gateway
    with pytest.raises(KeyError, match=r"v1\.0\.0-eksbuild\.1"):
        compat.addon("v9.9.9-eksbuild.1")
    assert compat.minimum_addon_for("3.2").addon_version == "v1.3.0-eksbuild.1"  # type: ignore[union-attr]
    assert compat.minimum_addon_for("3.1").addon_version == "v1.2.0-eksbuild.1"  # type: ignore[union-attr]
    assert compat.minimum_addon_for("9.0") is None


def test_crd_files_exist_for_each_release() -> None:
    if not CRDS.is_dir():
        pytest.skip(CRDS_MISSING)
    table = compat.load_compatibility()
    for r in table.crd_releases:
        for rel in r.files.values():
            assert (CRDS / rel).is_file(), f"operator {r.operator_version}: {rel}"
        assert r.commit in table.sources[r.source]
    # every add-on's operator has a published CRD (the newest not newer than it)
    got = {a.addon_version: compat.crd_release_for(a.operator_version).operator_version for a in table.addons}
    assert got == {
        "v1.0.0-eksbuild.1": "3.0",
        "v1.2.0-eksbuild.1": "3.1.2",
        "v1.2.1-eksbuild.1": "3.1.2",
        "v1.3.0-eksbuild.1": "3.2",
        "v1.4.0-eksbuild.1": "3.3",
        "v1.5.0-eksbuild.1": "3.3",
        "v2.0.0-eksbuild.2": "3.3",
        "v2.1.0-eksbuild.1": "3.3",
    }
    # the JumpStartModel CRD is published from 3.2 on: older operators are judged against it
    assert compat.crd_release_for("3.1.2", "JumpStartModel").operator_version == "3.2"


def test_field_table_dates_the_crd_fields() -> None:
    """The generated table (policies/crd_fields.json) has what the hand-dated features used to say, from the CRDs."""
    iec = compat.crd_field_table()["IEC"]
    assert iec["worker.requestLimits"] == "3.1" and iec["kubernetes"] == "3.1"
    assert iec["modelSourceConfig.modelSourceType=huggingface"] == "3.1.2"
    assert iec["pdSpec"] == "3.2"
    assert iec["modelCacheConfig"] == iec["loadBalancer.idleTimeoutSeconds"] == "3.3"
    assert "modelCacheConfig.imageCache" not in iec  # covered by its parent
    assert compat.crd_field_table()["JSM"] == {"loadBalancer.idleTimeoutSeconds": "3.3", "modelCacheConfig": "3.3"}
    # a hand-dated feature never dates a path the CRDs date (one place per fact)
    for f in compat.load_compatibility().features:
        for code in f.kinds:
            assert f.path not in compat.crd_field_table()[code], (f.path, code)


@pytest.mark.parametrize(
    ("image", "addon", "ok"),
    [
        ("lmcache/vllm-openai:v0.4.3", "v1.3.0-eksbuild.1", True),
        ("lmcache/vllm-openai:v0.3.9post2", "v1.3.0-eksbuild.1", False),
        ("lmcache/vllm-openai:v0.3.9post2", "v1.2.0-eksbuild.1", True),
        ("lmcache/vllm-openai:v0.4.3", "v1.2.0-eksbuild.1", False),
        ("vllm/vllm-openai:v0.19.1", "v1.4.0-eksbuild.1", True),
        ("vllm/vllm-openai:v0.18.0", "v1.4.0-eksbuild.1", False),
        ("vllm/vllm-openai:v0.11.1", "v1.0.0-eksbuild.1", True),
        ("public.ecr.aws/deep-learning-containers/vllm:server-hyperpod-cuda-v1.1", "v1.4.0-eksbuild.1", None),
        ("lmsysorg/sglang:v0.5.2", "v1.4.0-eksbuild.1", None),
        ("registry.local:5000/lmcache/vllm-openai", "v1.4.0-eksbuild.1", None),
    ],
)
def test_image_versions_ok(image: str, addon: str, ok: bool | None) -> None:
    assert compat.image_versions_ok(image, addon) is ok


def test_features_missing_and_defects() -> None:
    spec = {
        "pdSpec": {"prefillSpec": {}, "decodingSpec": {}},
        "modelSourceConfig": {"modelSourceType": "huggingface"},
        "loadBalancer": {"idleTimeoutSeconds": 120},
    }
    missing = {(p, v) for p, v, _ in compat.features_missing(spec, "v1.2.0-eksbuild.1")}
    assert missing == {("pdSpec", "3.2"), ("loadBalancer.idleTimeoutSeconds", "3.3")}
    assert {p for p, _, _ in compat.features_missing(spec, "v1.0.0-eksbuild.1")} >= {
        "modelSourceConfig.modelSourceType"
    }
    assert compat.features_missing(spec, "v1.4.0-eksbuild.1") == []

    redis = {"kvCacheSpec": {"enableL2Cache": True, "l2CacheSpec": {"l2CacheBackend": "Redis"}}}
    assert [d.id for d, _ in compat.known_defects(redis, "v1.3.0-eksbuild.1")] == ["redis-l2-ignored"]
    assert compat.known_defects(redis, "v1.4.0-eksbuild.1") == []
    off = {"kvCacheSpec": {"enableL1Cache": False}}
    assert [(d.id, hits) for d, hits in compat.known_defects(off, "v1.2.1-eksbuild.1")] == [
        ("cache-disable-ignored", ["kvCacheSpec.enableL1Cache"])
    ]
    assert compat.known_defects(off, "v1.4.0-eksbuild.1") == []


def test_unknown_addon_is_a_config_error_listing_allowed() -> None:
    m = stack_mapping("dev")
    m["hyperpod-inference:operator"]["addonVersion"] = "v1.1.0-eksbuild.1"
    issues = dict(_issues(m))
    msg = issues["operator.addonVersion"]
    assert "v1.1.0-eksbuild.1" in msg and "v1.0.0-eksbuild.1" in msg and "v2.0.0-eksbuild.2" in msg


def test_feature_newer_than_addon_is_error_at_spec_path() -> None:
    m = stack_mapping("prod")
    m["hyperpod-inference:operator"]["addonVersion"] = "v1.2.1-eksbuild.1"
    issues = dict(_issues(m))
    msg = issues["endpoints[1].spec.pdSpec"]
    assert "pdSpec" in msg and "3.2" in msg and "v1.3.0-eksbuild.1" in msg and "v1.2.1-eksbuild.1" in msg


def test_gateway_needs_v2_addon() -> None:
    m = stack_mapping("dev")
    m["hyperpod-inference:gateway"] = {"enabled": True, "spec": GATEWAY_SPEC}
    issues = dict(_issues(m))
    assert re.search(r"v2\.0\.0-eksbuild\.2.*v1\.\d\.\d-eksbuild\.1", issues["gateway.enabled"])


def test_mandatory_rules_run_at_config_time_advisory_do_not() -> None:
    m = stack_mapping("prod")
    ep = m["hyperpod-inference:endpoints"][0]
    assert ep["spec"]["intelligentRoutingSpec"]["routingStrategy"] == "kvaware"
    ep["spec"]["invocationEndpoint"] = "v1/chat/completions"
    ep["spec"]["worker"]["image"] = "lmcache/vllm-openai:v0.3.9post2"
    ep["spec"]["metrics"]["modelMetrics"]["port"] = 9000  # advisory rule: not a config error
    issues = _issues(m)
    paths = {p for p, _ in issues}
    assert paths == {"endpoints[0].spec.invocationEndpoint", "endpoints[0].spec.worker.image"}
    messages = dict(issues)
    assert "[kvaware-requires-vllm-completions]" in messages["endpoints[0].spec.invocationEndpoint"]
    assert ">= 0.4.3" in messages["endpoints[0].spec.worker.image"]  # mandatory for kvaware in prod


def test_same_image_is_only_advisory_in_dev() -> None:
    m = stack_mapping("dev")
    m["hyperpod-inference:endpoints"][0]["spec"]["worker"]["image"] = "lmcache/vllm-openai:v0.3.9post2"
    cfg = _parse(m)
    assert cfg.endpoints[0].spec_dict()["worker"]["image"].endswith("v0.3.9post2")


def test_endpoint_instance_type_must_be_a_cluster_group() -> None:
    m = stack_mapping("dev")
    m["hyperpod-inference:endpoints"][0]["spec"]["instanceType"] = "ml.g5.8xlarge"
    msg = dict(_issues(m))["endpoints[0].spec.instanceType"]
    assert "ml.g5.8xlarge" in msg and "ml.p5.4xlarge" in msg


def test_redis_backend_needs_kvcache_redis() -> None:
    m = stack_mapping("dev")
    l2 = m["hyperpod-inference:endpoints"][0]["spec"]["kvCacheSpec"]["l2CacheSpec"]
    l2["l2CacheBackend"] = "redis"
    issues = dict(_issues(m))
    msg = issues["endpoints[0].spec.kvCacheSpec.l2CacheSpec.l2CacheBackend"]
    assert "kvCache.l2Backend: redis" in msg and "tieredstorage" in msg


def test_prod_redis_without_tls_is_rejected() -> None:
    m = stack_mapping("prod")
    m["hyperpod-inference:kvCache"]["redis"]["transitEncryption"] = False
    issues = dict(_issues(m))
    assert "rediss://" in issues["endpoints[0].spec.kvCacheSpec.l2CacheSpec.l2CacheLocalUrl"]


def test_duplicate_endpoint_names() -> None:
    m = stack_mapping("prod")
    eps = m["hyperpod-inference:endpoints"]
    eps[1]["name"] = eps[0]["name"]
    msg = dict(_issues(m))["endpoints[1].name"]
    assert "inference/llama-70b-kvaware" in msg and "endpoints[0]" in msg
    eps[1]["namespace"] = "other"
    assert len(_parse(m).endpoints) == len(eps)


# --- v2.0.0-eksbuild.2 -> operator 3.6 is inferred from prose: marked as such, and what it gates -------------


def test_only_the_gateway_rows_are_inferred_and_they_say_from_what() -> None:
    table = compat.load_compatibility()
    inferred = [a.addon_version for a in table.addons if a.operator_version_inferred]
    assert inferred == ["v2.0.0-eksbuild.2", "v2.1.0-eksbuild.1"]
    row = compat.addon("v2.0.0-eksbuild.2")
    assert row.operator_version_basis == "inferred"
    assert "D4" in str(row.operator_version_note) and "P461" in str(row.operator_version_note)
    assert "https://github.com/aws/sagemaker-hyperpod-cli/pull/461" in compat.source_urls(row.sources)
    newest = compat.addon("v2.1.0-eksbuild.1")  # issue 47 item 8: it exists (AOSH); its operator is not published
    assert (newest.operator_version, newest.inference_gateway, newest.released) == ("3.6", True, None)
    assert "ai-on-sagemaker-hyperpod/blob/e53295231ea5" in compat.source_urls(newest.sources)
    assert set(newest.required_configuration) >= {"executionRoleArn", "tlsCertificateS3Bucket"}
    assert all(a.operator_version_basis == "documented" for a in table.addons if a not in (row, newest))


def test_an_inferred_row_without_a_note_is_rejected() -> None:
    raw = compat.load_compatibility().model_dump(by_alias=True)
    raw["addons"][-1].pop("operatorVersionNote")
    with pytest.raises(ValueError, match="inferred operatorVersion needs operatorVersionNote"):
        compat.CompatibilityTable.model_validate(raw)
    raw["addons"][-1].pop("operatorVersionBasis")
    with pytest.raises(ValueError, match="operatorVersionBasis"):
        compat.CompatibilityTable.model_validate(raw)


GATEWAY_OPT_IN = {"inferenceGateway": {"enabled": True, "name": "inference-gateway"}}


def test_mapping_gates_the_gateway_opt_in_field() -> None:
    # operator 3.6 (the inferred mapping) accepts spec.inferenceGateway; 3.4 (v1.5.0) does not
    assert crd_overlays.features_missing(GATEWAY_OPT_IN, "v2.0.0-eksbuild.2") == []
    ((path, introduced, feature),) = crd_overlays.features_missing(GATEWAY_OPT_IN, "v1.5.0-eksbuild.1")
    assert (path, introduced, feature.path) == ("inferenceGateway", "3.6", "inferenceGateway")
    # the error message's "add-on X or later" comes from this row
    assert compat.minimum_addon_for("3.6").addon_version == "v2.0.0-eksbuild.2"  # type: ignore[union-attr]
    assert crd_overlays.features_missing(GATEWAY_OPT_IN, "v2.0.0-eksbuild.2", "JumpStartModel") == []


def test_mapping_gates_operator_3_3_fields_images_and_defects() -> None:
    spec_33 = {"loadBalancer": {"idleTimeoutSeconds": 120}, "modelCacheConfig": {"imageCache": {"enabled": True}}}
    assert compat.features_missing(spec_33, "v2.0.0-eksbuild.2") == []
    assert len(compat.features_missing(spec_33, "v1.3.0-eksbuild.1")) == 2
    assert compat.image_versions_ok("lmcache/vllm-openai:v0.4.3", "v2.0.0-eksbuild.2") is True
    assert compat.image_versions_ok("lmcache/vllm-openai:v0.3.9post2", "v2.0.0-eksbuild.2") is False
    # the pre-3.3 "cache disable ignored" defect no longer applies with operator 3.6
    off = {"kvCacheSpec": {"enableL1Cache": False}}
    assert compat.known_defects(off, "v2.0.0-eksbuild.2") == []
    assert [d.id for d, _ in compat.known_defects(off, "v1.3.0-eksbuild.1")] == ["cache-disable-ignored"]


def test_gateway_section_is_gated_by_the_row(run) -> None:
    """prod's gateway is accepted on v2.0.0-eksbuild.2 and rejected, naming the key, one release earlier."""
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:operator"]["addonVersion"] = "v1.5.0-eksbuild.1"
    result = run("prod", mapping)
    assert result.config_error is not None and result.registrations == []
    paths = {i.path for i in result.config_error.issues}
    assert any(p.startswith("gateway") for p in paths), paths
    assert any(p.endswith(".spec.inferenceGateway") for p in paths), paths


# --- image references, literal cases (mutmut found the digest and registry-port paths untested) ----------------


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("lmcache/vllm-openai:v0.4.3", ("lmcache", "v0.4.3")),
        ("lmcache/vllm-openai:v0.4.3@sha256:0123abcd", ("lmcache", "v0.4.3")),  # a digest after the tag
        ("lmcache/vllm-openai@sha256:0123abcd", ("lmcache", None)),  # a digest and no tag: no version
        ("registry.example.com:5000/lmcache/vllm-openai:v0.4.3", ("lmcache", "v0.4.3")),  # a registry port
        ("registry.example.com:5000/lmcache/vllm-openai", ("lmcache", None)),  # the port is not a tag
        ("LMCache/VLLM-OpenAI:v0.4.3", ("lmcache", "v0.4.3")),  # repository names compared lower-case
        ("vllm/vllm-openai:v0.10.1", ("vllm", "v0.10.1")),
        ("vllm/vllm-openai:latest", ("vllm", None)),  # a tag that is not a version
        ("ghcr.io/acme/tgi:2.0", (None, None)),
    ],
)
def test_image_component_reads_repository_and_tag(image: str, expected: tuple[str | None, str | None]) -> None:
    from policies.compatibility import image_component

    assert image_component(image) == expected


def test_image_requirement_names_the_component_and_its_minimum() -> None:
    from policies.compatibility import image_requirement

    assert image_requirement("lmcache/vllm-openai:v0.2.1", "v2.0.0-eksbuild.2") == "LMCache >= 0.4.3"
    assert image_requirement("vllm/vllm-openai:v0.6.0", "v2.0.0-eksbuild.2") == "vLLM >= 0.19.1"
    assert image_requirement("ghcr.io/acme/tgi:2.0", "v2.0.0-eksbuild.2") is None
