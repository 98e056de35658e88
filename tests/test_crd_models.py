"""The typed CRD spec models: in sync with the real CRDs, round-trip every published sample, and produce
specs the CRD schema accepts. Also the InferenceGatewayConfig spec's documented validation."""

from __future__ import annotations

import copy
import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from components.config import crd
from components.config.endpoints import EndpointConfig
from tests.conftest import stack_mapping
from tests.crd_schema import CRD_FILES, crd_spec_schema, validate_spec

ENDPOINT = TypeAdapter(EndpointConfig)
MODELS = {"InferenceEndpointConfig": crd.InferenceEndpointConfigSpec, "JumpStartModel": crd.JumpStartModelSpec}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model class inside ``X | None`` / ``list[X] | None`` annotations."""
    for arg in typing.get_args(annotation) or (annotation,):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
        if typing.get_origin(arg) is list:
            return _model_of(typing.get_args(arg)[0])
    return None


def _compare(schema: dict[str, Any], model: type[BaseModel], path: str, problems: list[str]) -> None:
    node = schema.get("items", schema) if schema.get("type") == "array" else schema
    props: dict[str, Any] = node.get("properties", {})
    fields = {f.alias: f for f in model.model_fields.values()}
    later = {p.rsplit(".", 1)[-1] for p in crd.LATER_FIELDS if (p.rpartition(".")[0] == path)}
    for key in sorted(set(props) - set(fields)):
        problems.append(f"{path or 'spec'}: CRD property {key} missing from {model.__name__}")
    for key in sorted(set(fields) - set(props) - later):
        problems.append(f"{path or 'spec'}: {model.__name__}.{key} is not in the CRD")
    required = {r for r in node.get("required", []) if "default" not in props.get(r, {})}
    for key, field in fields.items():
        if key in props and field.is_required() != (key in required):
            problems.append(f"{path or 'spec'}.{key}: required in model={field.is_required()}, CRD={key in required}")
    for key, sub in props.items():
        sub_path = f"{path}.{key}" if path else key
        if key not in fields or sub_path in crd.OPAQUE_PATHS:
            continue
        child = _model_of(fields[key].annotation)
        sub_node = sub.get("items", sub) if sub.get("type") == "array" else sub
        if child is None:
            if sub_node.get("properties"):
                problems.append(f"{sub_path}: CRD object with properties, model field is not a model")
            continue
        _compare(sub, child, sub_path, problems)


@pytest.mark.parametrize("kind", sorted(CRD_FILES))
def test_models_match_crd_properties(crds_dir: Path, kind: str) -> None:
    schema = crd_spec_schema(crds_dir / CRD_FILES[kind])
    problems: list[str] = []
    _compare(schema, MODELS[kind], "", problems)
    assert problems == []
    assert len(MODELS[kind].model_fields) >= 15


def test_later_fields_are_in_the_models() -> None:
    iec = crd.InferenceEndpointConfigSpec.model_fields
    assert {"modelCacheConfig", "inferenceGateway"} <= {f.alias for f in iec.values()}
    assert "idleTimeoutSeconds" in {f.alias for f in crd.LoadBalancer.model_fields.values()}
    assert crd.ImageCache.model_fields["enabled"].is_required()


# --- samples -------------------------------------------------------------------------------------------

PLACEHOLDERS = {
    "<PLACEHOLDER_MODEL_STORAGE_BUCKET>": "hpi-dev-models-123456789012",
    "<PLACEHOLDER_TLS_CERT_S3_URI>": "s3://hpi-tls-123456789012/certs",
    "<PLACEHOLDER_L2_CACHE_LOCAL_URL>": "rediss://kvcache.example.internal:6379",
}


def _fill(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v) for v in value]
    if isinstance(value, str) and value.startswith("<PLACEHOLDER"):
        return PLACEHOLDERS[value]
    return value


def _samples(crds_dir: Path) -> list[Path]:
    found = sorted(p for p in (crds_dir / "samples").rglob("*.yaml") if "stale" not in p.parts)
    # the operator's 4 published samples (config/samples) and, with ../shared/crds, the 3 AWS documentation ones
    docs = 3 if (crds_dir / "samples" / "aws-docs").is_dir() else 0
    assert len(found) >= 4 + docs, found
    return found


def _entry(sample: dict[str, Any]) -> dict[str, Any]:
    meta = sample.get("metadata", {})
    return {
        "name": meta["name"],
        "namespace": meta.get("namespace", "default"),
        "kind": sample["kind"],
        "engine": "vllm",
        "spec": sample["spec"],
    }


def test_every_sample_round_trips(crds_dir: Path) -> None:
    checked = 0
    for path in _samples(crds_dir):
        if path.name == "reqlimits.yaml":
            continue
        sample = _fill(yaml.safe_load(path.read_text(encoding="utf-8")))
        ep = ENDPOINT.validate_python(_entry(sample))
        assert ep.kind == sample["kind"]
        assert ep.spec_dict() == sample["spec"], path
        later = ("3.3", "3.6") if path.name == "gw.yaml" else ()
        assert validate_spec(ep.spec_dict(), crds_dir, ep.kind, later=later) == [], path
        checked += 1
    assert checked == len([p for p in _samples(crds_dir) if p.name != "reqlimits.yaml"])


def test_gateway_doc_sample_needs_later_fields(crds_dir: Path, aws_docs_samples: Path) -> None:
    sample = yaml.safe_load((aws_docs_samples / "gw.yaml").read_text(encoding="utf-8"))
    errors = validate_spec(sample["spec"], crds_dir)
    assert any("inferenceGateway" in e for e in errors)
    assert any("modelCacheConfig" in e for e in errors)
    assert any("idleTimeoutSeconds" in e for e in errors)


def test_request_limits_doc_sample_rejected_until_corrected(crds_dir: Path, aws_docs_samples: Path) -> None:
    sample = yaml.safe_load((aws_docs_samples / "reqlimits.yaml").read_text(encoding="utf-8"))
    with pytest.raises(ValidationError) as err:
        ENDPOINT.validate_python(_entry(sample))
    (e,) = err.value.errors()
    assert e["type"] == "extra_forbidden" and e["loc"][-2:] == ("s3Storage", "modelLocation")
    assert any("modelLocation" in m for m in validate_spec(sample["spec"], crds_dir))

    fixed = copy.deepcopy(sample)
    fixed["spec"]["modelSourceConfig"]["modelLocation"] = fixed["spec"]["modelSourceConfig"]["s3Storage"].pop(
        "modelLocation"
    )
    ep = ENDPOINT.validate_python(_entry(fixed))
    assert ep.spec_dict() == fixed["spec"]
    assert ep.spec.worker.request_limits.overflow_status_code == 503  # type: ignore[union-attr]
    assert validate_spec(ep.spec_dict(), crds_dir) == []


def test_jumpstart_model_entry(crds_dir: Path) -> None:
    spec = {
        "model": {"modelId": "meta-textgeneration-llama-3-1-8b-instruct", "acceptEula": True, "modelVersion": "2.8.0"},
        "server": {"instanceType": "ml.g5.8xlarge"},
        "sageMakerEndpoint": {"name": "llama-js"},
        "environmentVariables": [{"name": "SAGEMAKER_ENV", "value": "1"}],
        "kvCacheSpec": {"enableL1Cache": True},
    }
    ep = ENDPOINT.validate_python({"name": "llama-js", "kind": "JumpStartModel", "engine": "vllm", "spec": spec})
    assert isinstance(ep, crd_models_jsm()) and ep.spec_dict() == spec
    assert validate_spec(ep.spec_dict(), crds_dir, "JumpStartModel") == []
    bad = copy.deepcopy(spec)
    bad["worker"] = {"image": "x"}
    with pytest.raises(ValidationError, match="worker"):
        ENDPOINT.validate_python({"name": "j", "kind": "JumpStartModel", "engine": "vllm", "spec": bad})


def crd_models_jsm() -> type:
    from components.config.endpoints import JumpStartModelEndpoint

    return JumpStartModelEndpoint


def test_kind_defaults_to_inference_endpoint_config() -> None:
    entry = _entry_from_stack()
    entry.pop("kind")
    ep = ENDPOINT.validate_python(entry)
    assert ep.kind == "InferenceEndpointConfig" and ep.spec.model_name == "Llama-3.1-8B-Instruct"  # type: ignore[union-attr]


def _entry_from_stack() -> dict[str, Any]:
    entry: dict[str, Any] = copy.deepcopy(stack_mapping("dev")["hyperpod-inference:endpoints"][0])
    return entry


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda s: s["worker"].update(imagee="x"), r"worker\.imagee.*[Ee]xtra"),
        (lambda s: s.update(model_name="x"), r"model_name"),
        (lambda s: s["metrics"].update(metricsScrapeIntervalSeconds=1), r"greater than or equal to 5"),
        (lambda s: s["intelligentRoutingSpec"].update(routingStrategy="fastest"), r"prefixaware"),
        (lambda s: s["kvCacheSpec"]["l2CacheSpec"].update(l2CacheBackend="memcached"), r"redis\|tieredstorage"),
        (lambda s: s.update(loadBalancer={"idleTimeoutSeconds": 5000}), r"less than or equal to 4000"),
        (lambda s: s.update(modelCacheConfig={"imageCache": {}}), r"imageCache\.enabled"),
    ],
)
def test_typos_and_bad_values_fail(mutate: Any, pattern: str) -> None:
    entry = _entry_from_stack()
    mutate(entry["spec"])
    with pytest.raises(ValidationError) as err:
        ENDPOINT.validate_python(entry)
    text = "\n".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.value.errors())
    assert re.search(pattern, text), text


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_reference_stack_specs_validate_against_pinned_crd(crds_dir: Path, stack: str) -> None:
    mapping = stack_mapping(stack)
    addon = mapping["hyperpod-inference:operator"]["addonVersion"]
    entries = mapping["hyperpod-inference:endpoints"]
    assert entries
    for entry in entries:
        ep = ENDPOINT.validate_python(entry)
        assert ep.spec_dict() == entry["spec"]
        assert validate_spec(ep.spec_dict(), crds_dir, ep.kind, addon) == []


def test_history_crd_rejects_fields_of_later_operators(crds_dir: Path, aws_docs_samples: Path) -> None:
    dpd = yaml.safe_load((aws_docs_samples / "dpd.yaml").read_text(encoding="utf-8"))["spec"]
    assert validate_spec(dpd, crds_dir, addon_version="v1.3.0-eksbuild.1") == []
    assert any("pdSpec" in e for e in validate_spec(dpd, crds_dir, addon_version="v1.2.1-eksbuild.1"))


# --- InferenceGatewayConfig spec -----------------------------------------------------------------------

GW: dict[str, Any] = {
    "bbr": {"enabled": True},
    "tls": {},
    "auth": {
        "jwt": {
            "provider": {
                "name": "idp",
                "issuer": "https://login.example.com",
                "remoteJWKS": {"uri": "https://login.example.com/keys"},
                "audiences": ["inference"],
            }
        }
    },
    "schedulers": [
        {"name": "a", "modelName": "llama-8b", "modelSelector": {"matchLabels": {"app": "a"}}, "engineType": "vllm"},
        {
            "name": "b",
            "modelName": "qwen",
            "modelSelector": {"matchLabels": {"app": "b"}},
            "engineType": "sglang",
            "weights": {"queue": 2, "lru": 1},
        },
    ],
}


def test_gateway_spec_round_trips() -> None:
    spec = crd.InferenceGatewayConfigSpec.model_validate(GW)
    assert spec.dump() == GW
    assert spec.schedulers[1].engine_type == "sglang"


def _gw(mutate: Any) -> dict[str, Any]:
    g = copy.deepcopy(GW)
    mutate(g)
    return g


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda g: g["bbr"].pop("enabled"), r"bbr\.enabled.*[Ff]ield required"),
        (lambda g: g["bbr"].update(enabled=False), r"bbr\.enabled must be true"),
        (lambda g: g.update(schedulers=[]), r"at least 1"),
        (lambda g: g.update(schedulers=[{**g["schedulers"][0], "name": f"s{i}"} for i in range(101)]), r"at most 100"),
        (lambda g: g["schedulers"][1].update(modelName="llama-8b"), r"unique; repeated: llama-8b"),
        (lambda g: g["schedulers"][1].update(configMapRef={"name": "plugins"}), r"mutually exclusive"),
        (lambda g: g["schedulers"][1].update(scheduler="epp"), r"lru is only valid"),
        (lambda g: g["auth"]["jwt"]["provider"].pop("audiences"), r"audiences or requiredClaims"),
        (lambda g: g["auth"]["jwt"]["provider"].pop("remoteJWKS"), r"remoteJWKS.*[Ff]ield required"),
        (lambda g: g.update(bbrr={}), r"bbrr.*[Ee]xtra"),
    ],
)
def test_gateway_spec_documented_validation(mutate: Any, pattern: str) -> None:
    with pytest.raises(ValidationError) as err:
        crd.InferenceGatewayConfigSpec.model_validate(_gw(mutate))
    text = "\n".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.value.errors())
    assert re.search(pattern, text), text


def test_gateway_required_claims_satisfy_provider() -> None:
    g = _gw(lambda g: g["auth"]["jwt"]["provider"].pop("audiences"))
    g["auth"]["jwt"]["provider"]["requiredClaims"] = [{"name": "groups", "valueType": "StringArray", "values": ["ml"]}]
    assert crd.InferenceGatewayConfigSpec.model_validate(g).dump() == g


def test_model_fields_are_alias_only() -> None:
    for cls in (crd.InferenceEndpointConfigSpec, crd.JumpStartModelSpec, crd.InferenceGatewayConfigSpec):
        assert cls.model_config.get("extra") == "forbid"
        assert all(f.alias for f in cls.model_fields.values())
    assert typing.get_origin(EndpointConfig) is typing.Annotated
