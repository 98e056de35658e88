"""InferenceEndpoints: rendered custom resources against the operator's real CRDs, and the CRD samples.

Validation uses ``tests/crd_schema.py``: jsonschema (Draft 7) on the CRD's v1 ``openAPIV3Schema`` with every
object closed, so an unknown field fails; the documented 3.3 and 3.6 fields (no public CRD has them) are
accepted on top only when the stack's pinned add-on has them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import ConfigError, StackConfig, parse_stack_config
from components.config.stackfile import config_from_mapping
from components.endpoints import (
    API_VERSION,
    ENGINE_LABEL,
    MANAGED_BY_LABEL,
    OwnedValues,
    RedisWiring,
    render_endpoint,
    tls_output_uri,
)
from tests.conftest import CRDS, CRDS_MISSING, STACKS, stack_mapping
from tests.crd_schema import crd_path, validate_cr, validate_spec
from tools.plan.harness import StackRun

REDIS_ADDRESS = "rediss://master.hpi-x-kv.abc123.use1.cache.amazonaws.com:6379"
# What l2CacheLocalUrl holds when the Redis takes credentials: references the kubelet expands, no credential.
REDIS_URL = (
    "rediss://$(HPI_KV_CACHE_USERNAME):$(HPI_KV_CACHE_PASSWORD)@master.hpi-x-kv.abc123.use1.cache.amazonaws.com:6379"
)
# The variables the package appends to the worker's environment for it (components/config/kvcache.py).
CREDENTIAL_ENV = [
    {
        "name": "HPI_KV_CACHE_USERNAME",
        "valueFrom": {"secretKeyRef": {"name": "hpi-kv-cache-credentials", "key": "username"}},
    },
    {
        "name": "HPI_KV_CACHE_PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": "hpi-kv-cache-credentials", "key": "password"}},
    },
    {"name": "LMCACHE_REMOTE_URL", "value": REDIS_URL},
    {"name": "LMCACHE_LOG_LEVEL", "value": "WARNING"},
]
TLS_BUCKET = "hyperpod-tls-123456789012-x"
SECRET_SIG = "4dabf18193072939515e22adb298388d"
KINDS = ("InferenceEndpointConfig", "JumpStartModel")


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
    redis = RedisWiring(url=REDIS_URL, credentials=True) if cfg.kv_cache.l2_backend == "redis" else None
    return OwnedValues(tls_bucket=TLS_BUCKET, redis=redis, tags=cfg.common_tags)


# --- every stack's endpoints against the CRDs ---


@pytest.mark.parametrize("stack", STACKS)
def test_every_registered_endpoint_validates_against_the_crd(
    stack: str, stack_runs: dict[str, StackRun], crds_dir: Path
) -> None:
    """What the real program registers (owned fields filled, secrets unwrapped) against the newest CRD."""
    run = stack_runs[stack]
    cfg = stack_config(stack_mapping(stack), stack)
    crs = [r for r in run.registrations if r.type.rsplit(":", 1)[-1] in KINDS and "inference.sagemaker" in r.type]
    assert len(crs) == len(cfg.endpoints) > 0
    for reg in crs:
        spec = reg.inputs["spec"]
        spec = spec["value"] if SECRET_SIG in spec else spec
        errors = validate_spec(spec, crds_dir, reg.inputs["kind"], cfg.operator.addon_version)
        assert errors == [], f"{stack}/{reg.name}: {errors}"


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_endpoints_validate_against_the_pinned_release_crd(stack: str, crds_dir: Path) -> None:
    cfg = stack_config(stack_mapping(stack), stack)
    for ep in cfg.endpoints:
        if not crd_path(crds_dir, ep.kind, cfg.operator.addon_version).exists():
            pytest.skip(f"no CRD of the release {cfg.operator.addon_version} pins in {crds_dir / 'history'}")
        cr = render_endpoint(ep, owned(cfg))
        assert validate_cr(cr, crds_dir, cfg.operator.addon_version) == [], ep.name


def test_documented_fields_are_rejected_by_the_crd_of_an_older_release(crds_dir: Path) -> None:
    """The validator really closes objects: 3.6's inferenceGateway fails on operator 3.4's CRD (v3.3 + nothing)."""
    cfg = stack_config(stack_mapping("prod"), "prod")
    (sglang,) = [e for e in cfg.endpoints if e.engine == "sglang"]
    spec = render_endpoint(sglang, owned(cfg))["spec"]
    errors = validate_spec(spec, crds_dir, addon_version="v1.5.0-eksbuild.1")
    assert any("Additional properties" in e and "inferenceGateway" in e for e in errors), errors
    assert validate_spec(spec, crds_dir, addon_version="v2.0.0-eksbuild.2") == []


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
    assert kv["spec"]["worker"]["environmentVariables"] == CREDENTIAL_ENV
    assert "l2CacheSpec" not in by_name["llama-70b-dpd"]["spec"]["kvCacheSpec"]
    # the DPD endpoint's own variables are untouched (it does not use the Redis)
    assert by_name["llama-70b-dpd"]["spec"]["worker"]["environmentVariables"] == [
        {"name": "PD_BUFFER_SIZE", "value": "8589934592"}
    ]
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
    assert validate_spec(cr["spec"], crds_dir, "JumpStartModel") == []


# --- the CRD samples, written as endpoints[] entries ---

SAMPLE_BUCKET = "model-bucket-123456789012"
ENGINES = {"vllm": ("vllm", "lmcache"), "sglang": ("sglang",)}


def _samples() -> list[Any]:
    root = CRDS / "samples"
    if not root.is_dir():
        reason = f"no samples/ at {root}: {CRDS_MISSING}"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-samples")]
    return sorted(p for p in root.rglob("*.yaml") if "stale" not in p.relative_to(root).parts)


# Placeholders of the samples: `<...>` markers, and the one-letter bucket `b` of the AWS doc excerpt gw.yaml (not
# a valid bucket name: S3 names have 3-63 characters).
PLACEHOLDER_BUCKETS = ("<PLACEHOLDER_MODEL_STORAGE_BUCKET>", "b")


def _fill(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (SAMPLE_BUCKET if k == "bucketName" and v in PLACEHOLDER_BUCKETS else _fill(v)) for k, v in value.items()
        }
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
        # threadsPerCore 2: the AWS samples size CPU requests for all vCPUs; 2 nodes: the DPD sample's prefill and
        # decode pods take 8 GPUs each (docs/capacity.md)
        {"name": name, "instanceType": itype, "instanceCount": 2, "availabilityZoneId": "usw2-az1", "threadsPerCore": 2}
        for name, itype in (("g5-8x", "ml.g5.8xlarge"), ("g5-48x", "ml.g5.48xlarge"), ("p5-48x", "ml.p5.48xlarge"))
    ]
    mapping["hyperpod-inference:kvCache"] = {"l2Backend": "redis" if l2 else "tieredstorage"}
    if spec.get("inferenceGateway", {}).get("enabled"):
        mapping["hyperpod-inference:gateway"] = {
            "enabled": True,
            # the endpoint names its gateway; the stack's must carry that name (components/config/gateway.py)
            "name": spec["inferenceGateway"].get("name", "inference-gateway"),
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
    worker = out.get("worker")
    if isinstance(worker, dict) and isinstance(worker.get("environmentVariables"), list):
        worker["environmentVariables"] = [e for e in worker["environmentVariables"] if e not in CREDENTIAL_ENV]
        if not worker["environmentVariables"]:
            del worker["environmentVariables"]
    return out


def _is_doc_mistake(sample: dict[str, Any]) -> bool:
    return "modelLocation" in sample["spec"].get("modelSourceConfig", {}).get("s3Storage", {})


@pytest.mark.parametrize("sample_path", _samples(), ids=lambda p: p.stem if isinstance(p, Path) else str(p))
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
    assert validate_spec(cr["spec"], crds_dir, cr["kind"], cfg.operator.addon_version) == []


def test_there_are_samples(crds_dir: Path) -> None:
    assert len(_samples()) >= 4  # the operator's published samples (the AWS documentation ones: ../shared only)


def test_reqlimits_sample_as_written_is_a_config_error_naming_the_path(aws_docs_samples: Path) -> None:
    """The AWS doc's mistake (modelLocation under s3Storage) is rejected, at the path, before any resource."""
    sample = yaml.safe_load((aws_docs_samples / "reqlimits.yaml").read_text(encoding="utf-8"))
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


# --- who may read the endpoints (issue 23 item 6) ----------------------------------------------------------

ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_a_read_only_viewer_role_without_secrets_per_endpoint_namespace(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    (role,) = run.of_type(ROLE)
    assert role.inputs["metadata"]["name"] == "hpi-endpoint-viewer"
    assert role.inputs["metadata"]["namespace"] == "inference"
    assert role.inputs["rules"] == [
        {
            "apiGroups": ["inference.sagemaker.aws.amazon.com"],
            "resources": [
                "inferenceendpointconfigs",
                "inferenceendpointconfigs/status",
                "jumpstartmodels",
                "jumpstartmodels/status",
            ],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": [""], "resources": ["pods", "services", "events"], "verbs": ["get", "list", "watch"]},
    ]
    (binding,) = run.of_type(BINDING)
    assert binding.inputs["metadata"] == {**role.inputs["metadata"]}
    assert binding.inputs["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "hpi-endpoint-viewer",
    }
    assert binding.inputs["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "hpi-endpoint-viewers"}
    ]
    assert role.urn in binding.dependencies
    assert run.named("kubernetes:core/v1:Namespace", "endpoints-ns-inference").urn in role.dependencies


def test_no_viewer_role_in_the_operator_namespace(run) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:endpoints"][0]["namespace"] = "hyperpod-inference-system"
    result = run("dev", mapping)
    assert result.config_error is None and result.registrations
    assert result.of_type(ROLE) == [] and result.of_type(BINDING) == []
