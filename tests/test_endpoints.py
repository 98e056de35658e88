"""InferenceEndpoints: rendered custom resources against the operator's real CRDs, and the CRD samples.

Validation is jsonschema (Draft 7) on the CRD's v1 ``openAPIV3Schema`` with every object closed
(``additionalProperties: false`` where the CRD lists properties), so an unknown field fails as the API
server's strict decoding would. The documented 3.3 and 3.6 fields (no public CRD has them, see
../shared/crds/history/README.md) are added on top only when the stack's pinned add-on has them.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.config import ConfigError, StackConfig, parse_stack_config
from components.config.stackfile import config_from_mapping
from components.endpoints import (
    API_VERSION,
    ENGINE_LABEL,
    MANAGED_BY_LABEL,
    OwnedValues,
    render_endpoint,
    tls_output_uri,
)
from policies import compatibility as compat
from tests.conftest import CRDS, STACKS, stack_mapping

IEC_CRD = "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"
JSM_CRD = "inference.sagemaker.aws.amazon.com_jumpstartmodels.yaml"
REDIS_URL = "rediss://:tok3n@master.hpi-x-kv.abc123.use1.cache.amazonaws.com:6379"
TLS_BUCKET = "hyperpod-tls-123456789012-x"

# Fields documented for operator releases newer than any public CRD (history/README.md).
LATER_FIELDS: dict[str, dict[str, Any]] = {
    "3.3": {
        "loadBalancer.idleTimeoutSeconds": {"type": "integer", "minimum": 1, "maximum": 4000},
        "modelCacheConfig": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "imageCache": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["enabled"],
                    "properties": {"enabled": {"type": "boolean"}},
                },
                "weightsCache": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"enabled": {"type": "boolean"}, "hostPath": {"type": "string"}},
                },
            },
        },
    },
    "3.6": {
        "inferenceGateway": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"enabled": {"type": "boolean"}, "name": {"type": "string"}},
        }
    },
}


def _close(node: Any) -> Any:
    """Close every object schema that lists properties (unknown fields rejected)."""
    if isinstance(node, dict):
        out = {k: _close(v) for k, v in node.items()}
        if (
            out.get("type") == "object"
            and "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_close(v) for v in node]
    return node


@functools.cache
def _v1_spec_schema(path: str) -> dict[str, Any]:
    doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    (v1,) = [v for v in doc["spec"]["versions"] if v["name"] == "v1"]
    spec: dict[str, Any] = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def strict_schema(crd_path: Path, later: tuple[str, ...] = ()) -> dict[str, Any]:
    schema = copy.deepcopy(_v1_spec_schema(str(crd_path)))
    for release in later:
        for dotted, sub in LATER_FIELDS[release].items():
            *parents, leaf = dotted.split(".")
            node = schema
            for p in parents:
                node = node["properties"][p]
            node["properties"][leaf] = sub
    return _close(schema)


def spec_errors(spec: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path)) or '(spec)'}: {e.message}" for e in validator.iter_errors(spec)]


def stack_config(mapping: dict[str, Any], stack: str) -> StackConfig:
    config, secret_keys = config_from_mapping(mapping)
    prefix = "hyperpod-inference:"
    values = {
        k[len(prefix) :]: yaml.safe_load(v) if v[:1] in "{[" else v for k, v in config.items() if k.startswith(prefix)
    }
    return parse_stack_config(
        values, stack=stack, region=config["aws:region"], secret_keys={k[len(prefix) :] for k in secret_keys}
    )


def owned(cfg: StackConfig) -> OwnedValues:
    return OwnedValues(
        tls_bucket=TLS_BUCKET, redis_url=REDIS_URL if cfg.kv_cache.l2_backend == "redis" else None, tags=cfg.common_tags
    )


def crd_for(kind: str, crds: Path) -> Path:
    return crds / (IEC_CRD if kind == "InferenceEndpointConfig" else JSM_CRD)


# --- every stack's endpoints against the CRDs ---


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_endpoint_validates_against_the_crd(stack: str, crds_dir: Path) -> None:
    cfg = stack_config(stack_mapping(stack), stack)
    release = compat.addon(cfg.operator.addon_version)
    assert cfg.endpoints, "the reference stack has endpoints"
    for ep in cfg.endpoints:
        cr = render_endpoint(ep, owned(cfg))
        errors = spec_errors(cr["spec"], strict_schema(crd_for(ep.kind, crds_dir), release.later_fields))
        assert errors == [], f"{stack}/{ep.name}: {errors}"


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_endpoints_validate_against_the_pinned_release_crd(stack: str, crds_dir: Path) -> None:
    cfg = stack_config(stack_mapping(stack), stack)
    release = compat.addon(cfg.operator.addon_version)
    crd = (
        crds_dir / IEC_CRD if release.crd_history_file == "current" else crds_dir / "history" / release.crd_history_file
    )
    if not crd.exists():
        pytest.skip(f"no CRD of operator {release.operator_version} in {crds_dir / 'history'}")
    for ep in cfg.endpoints:
        if ep.kind != "InferenceEndpointConfig":
            continue
        cr = render_endpoint(ep, owned(cfg))
        assert spec_errors(cr["spec"], strict_schema(crd, release.later_fields)) == [], ep.name


def test_later_fields_are_rejected_by_the_v32_crd(crds_dir: Path) -> None:
    """The validator really closes objects: 3.6's inferenceGateway fails on a 3.2 pin."""
    cfg = stack_config(stack_mapping("prod"), "prod")
    (sglang,) = [e for e in cfg.endpoints if e.engine == "sglang"]
    spec = render_endpoint(sglang, owned(cfg))["spec"]
    assert any(
        e.startswith("(spec): Additional properties") and "inferenceGateway" in e
        for e in spec_errors(spec, strict_schema(crds_dir / IEC_CRD))
    )
    assert spec_errors(spec, strict_schema(crds_dir / IEC_CRD, ("3.3", "3.6"))) == []


# --- what the package owns ---


def test_metadata_labels_and_owned_fields_prod() -> None:
    cfg = stack_config(stack_mapping("prod"), "prod")
    by_name = {e.name: render_endpoint(e, owned(cfg)) for e in cfg.endpoints}
    kv = by_name["llama-70b-kvaware"]
    assert kv["apiVersion"] == API_VERSION and kv["kind"] == "InferenceEndpointConfig"
    assert kv["metadata"]["namespace"] == "inference"
    assert kv["metadata"]["labels"][ENGINE_LABEL] == "vllm"
    assert kv["metadata"]["labels"][MANAGED_BY_LABEL] == "pulumi"
    assert by_name["qwen-sglang"]["metadata"]["labels"][ENGINE_LABEL] == "sglang"
    assert kv["spec"]["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"] == REDIS_URL
    assert "l2CacheSpec" not in by_name["llama-70b-dpd"]["spec"]["kvCacheSpec"]
    assert kv["spec"]["tlsConfig"] == {
        "tlsCertificateOutputS3Uri": f"s3://{TLS_BUCKET}/endpoints/inference/llama-70b-kvaware"
    }
    assert {"name": "hyperpod-inference:stack", "value": "prod"} in kv["spec"]["tags"]
    assert {"name": "managed-by", "value": "pulumi"} in kv["spec"]["tags"]


def test_user_values_win_over_owned_defaults() -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:endpoints"][0]["spec"].update(
        tlsConfig={"tlsCertificateOutputS3Uri": "s3://my-tls/certs"}, tags=[{"name": "managed-by", "value": "team-a"}]
    )
    cfg = stack_config(mapping, "dev")
    spec = render_endpoint(cfg.endpoints[0], owned(cfg))["spec"]
    assert spec["tlsConfig"] == {"tlsCertificateOutputS3Uri": "s3://my-tls/certs"}
    assert [t for t in spec["tags"] if t["name"] == "managed-by"] == [{"name": "managed-by", "value": "team-a"}]
    assert spec["kvCacheSpec"]["l2CacheSpec"] == {"l2CacheBackend": "tieredstorage"}  # no URL for tieredstorage
    # The config entry itself is never mutated by rendering.
    assert cfg.endpoints[0].spec_dict()["tags"] == [{"name": "managed-by", "value": "team-a"}]


def test_jumpstart_model_renders_without_tags(crds_dir: Path) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:endpoints"].append(
        {
            "name": "jsm-mistral",
            "namespace": "inference",
            "kind": "JumpStartModel",
            "engine": "other",
            "spec": {
                "model": {"modelId": "huggingface-llm-mistral-7b-instruct", "acceptEula": True},
                "server": {"instanceType": "ml.p5.4xlarge"},
            },
        }
    )
    cfg = stack_config(mapping, "dev")
    cr = render_endpoint(cfg.endpoints[-1], owned(cfg))
    assert cr["kind"] == "JumpStartModel" and "tags" not in cr["spec"]
    assert cr["spec"]["tlsConfig"]["tlsCertificateOutputS3Uri"].startswith(f"s3://{TLS_BUCKET}/")
    assert spec_errors(cr["spec"], strict_schema(crds_dir / JSM_CRD)) == []


# --- the CRD samples, written as endpoints[] entries ---

SAMPLE_BUCKET = "model-bucket-123456789012"
ENGINES = {"vllm": ("vllm", "lmcache"), "sglang": ("sglang",)}


def _samples() -> list[Path]:
    root = CRDS / "samples"
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*.yaml") if "stale" not in p.relative_to(root).parts)


def _fill(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v) for v in value]
    if value == "<PLACEHOLDER_MODEL_STORAGE_BUCKET>":
        return SAMPLE_BUCKET
    return value


def _engine(spec: dict[str, Any]) -> str:
    image = str(spec.get("worker", {}).get("image", ""))
    env = {e.get("name"): e.get("value") for e in spec.get("worker", {}).get("environmentVariables", [])}
    if (
        "vllm" in image
        or "lmcache" in image
        or spec.get("inferenceGateway")
        or env.get("OPTION_ROLLING_BATCH") == "vllm"
    ):
        return "vllm"
    return "other"


def sample_variant(sample: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(stack mapping of a dev variant serving the sample, the endpoint entry written from the sample).

    The owned fields are left out of the entry when the sample holds a placeholder for them (the package
    fills them); a concrete user value stays.
    """
    spec = _fill(copy.deepcopy(sample["spec"]))
    tls = spec.get("tlsConfig", {})
    if str(tls.get("tlsCertificateOutputS3Uri", "")).startswith("<"):
        del spec["tlsConfig"]
    l2 = spec.get("kvCacheSpec", {}).get("l2CacheSpec", {})
    if str(l2.get("l2CacheLocalUrl", "")).startswith("<"):
        del l2["l2CacheLocalUrl"]
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:operator"]["addonVersion"] = "v2.0.0-eksbuild.2"
    mapping["hyperpod-inference:cluster"]["instanceGroups"] += [
        {"name": name, "instanceType": itype, "instanceCount": 1, "availabilityZoneId": "usw2-az1"}
        for name, itype in (("g5-8x", "ml.g5.8xlarge"), ("g5-48x", "ml.g5.48xlarge"), ("p5-48x", "ml.p5.48xlarge"))
    ]
    mapping["hyperpod-inference:kvCache"] = {"l2Backend": "redis" if l2 else "tieredstorage"}
    if spec.get("inferenceGateway", {}).get("enabled"):
        mapping["hyperpod-inference:gateway"] = {
            "enabled": True,
            "spec": {
                "bbr": {"enabled": False},
                "schedulers": [
                    {
                        "name": "m",
                        "modelName": spec["modelName"],
                        "modelSelector": {"matchLabels": {"app": sample["metadata"]["name"]}},
                    }
                ],
            },
        }
    entry = {
        "name": sample["metadata"]["name"],
        "namespace": sample["metadata"].get("namespace", "default"),
        "kind": sample["kind"],
        "engine": _engine(spec),
        "spec": spec,
    }
    mapping["hyperpod-inference:endpoints"] = [entry]
    return mapping, entry


def _owned_paths(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with the package-owned fields removed (for comparison)."""
    out = copy.deepcopy(spec)
    out.pop("tags", None)
    tls = out.get("tlsConfig")
    if isinstance(tls, dict):
        tls.pop("tlsCertificateOutputS3Uri", None)
        if not tls:
            out.pop("tlsConfig")
    l2 = out.get("kvCacheSpec", {}).get("l2CacheSpec")
    if isinstance(l2, dict):
        l2.pop("l2CacheLocalUrl", None)
    return out


def _is_doc_mistake(sample: dict[str, Any]) -> bool:
    return "modelLocation" in sample["spec"].get("modelSourceConfig", {}).get("s3Storage", {})


@pytest.mark.parametrize("sample_path", _samples(), ids=lambda p: p.stem)
def test_sample_renders_its_own_spec(sample_path: Path, crds_dir: Path) -> None:
    sample = yaml.safe_load(sample_path.read_text(encoding="utf-8"))
    if _is_doc_mistake(sample):
        # The AWS doc nests modelLocation under s3Storage; the CRD has it under modelSourceConfig.
        s3 = sample["spec"]["modelSourceConfig"]["s3Storage"]
        sample["spec"]["modelSourceConfig"]["modelLocation"] = s3.pop("modelLocation")
    mapping, _entry = sample_variant(sample)
    cfg = stack_config(mapping, "dev")
    (ep,) = cfg.endpoints
    cr = render_endpoint(ep, owned(cfg))
    assert cr["kind"] == sample["kind"]
    assert cr["metadata"]["name"] == sample["metadata"]["name"]
    assert cr["metadata"]["namespace"] == sample["metadata"].get("namespace", "default")
    expected = _fill(sample["spec"])
    assert _owned_paths(cr["spec"]) == _owned_paths(expected)
    # What the package owns equals what it fills (or what the sample set concretely).
    sample_tls = expected.get("tlsConfig", {}).get("tlsCertificateOutputS3Uri", "")
    want_tls = sample_tls if sample_tls and not sample_tls.startswith("<") else tls_output_uri(TLS_BUCKET, ep)
    assert cr["spec"]["tlsConfig"]["tlsCertificateOutputS3Uri"] == want_tls
    if "l2CacheSpec" in expected.get("kvCacheSpec", {}):
        assert cr["spec"]["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"] == REDIS_URL
    if cr["kind"] == "InferenceEndpointConfig":
        assert cr["spec"]["tags"] == [{"name": k, "value": v} for k, v in cfg.common_tags.items()]
    later = compat.addon(cfg.operator.addon_version).later_fields
    assert spec_errors(cr["spec"], strict_schema(crd_for(cr["kind"], crds_dir), later)) == []


def test_there_are_samples(crds_dir: Path) -> None:
    assert len(_samples()) >= 5


def test_reqlimits_sample_as_written_is_a_config_error_naming_the_path(crds_dir: Path) -> None:
    """The AWS doc's mistake (modelLocation under s3Storage) is rejected, at the path, before any resource."""
    sample = yaml.safe_load((crds_dir / "samples" / "aws-docs" / "reqlimits.yaml").read_text(encoding="utf-8"))
    assert _is_doc_mistake(sample)
    mapping, _ = sample_variant(sample)
    with pytest.raises(ConfigError) as err:
        stack_config(mapping, "dev")
    assert [i.path for i in err.value.issues] == ["endpoints[0].spec.modelSourceConfig.s3Storage.modelLocation"]
    assert "unknown key" in err.value.issues[0].message


def test_unknown_spec_field_is_a_config_error_naming_the_path(run) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:endpoints"][0]["spec"]["kvCacheSpec"]["l2CacheSpec"]["redisUrl"] = "rediss://x:6379"
    result = run("prod", mapping)
    assert result.config_error is not None and result.registrations == []
    rendered = [i.render() for i in result.config_error.issues]
    assert any(
        r.startswith("hyperpod-inference:endpoints[0].spec.kvCacheSpec.l2CacheSpec.redisUrl: unknown key")
        for r in rendered
    ), rendered
