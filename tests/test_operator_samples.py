"""The operator's published sample custom resources are test cases (issue 25, point 3).

Every sample aws/sagemaker-hyperpod-cli publishes in ``helm_chart/HyperPodHelmChart/charts/inference-operator/
config/samples/`` for an operator release the program supports (``apiVersion: .../v1``: operator 2.0+; the
``v1alpha1`` samples of older PRs are operator 1.x) either renders in a dev stack with its spec unchanged, or is
refused only for what Kubernetes or the operator itself rejects, with that rule named. What the stack file cannot
know (node names, zone names, image versions behind ``:latest``) is an advisory, never a refusal.

Where the samples come from (the project does not track CRD or sample YAML):

* ``../shared/crds/samples`` — the samples of main (aws/sagemaker-hyperpod-cli@011ca927, six files);
* PR #413 "[Inference Operator] Update sample CRD files for v3.1 features" (head 028b5428..., open): read at test
  time from a fetched copy of the repository (``HYPERPOD_CLI_GIT_DIR``, default ``../.mirror/aws+sagemaker-hyperpod-
  cli/repo``, a bare git dir), skipped with the reason when there is none. The refusals and advisories those samples
  exercise are also pinned below from their minimal derived facts (each with its ``repo@commit:path``), so they run
  without the fetched copy.

Placeholders (``<YOUR_HYPERPOD_NODE>``, ``<YOUR_MODEL_BUCKET>``, ...) are replaced with realistic values.
"""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import ConfigError, StackConfig
from components.config.loader import parse_stack_mapping
from components.config.regions import az_id_prefix
from components.config.stackfile import StackFileError, parse_yaml
from components.config.validation import run_advisories
from components.endpoints import OwnedValues, render_endpoint
from tests.conftest import CRDS, stack_mapping
from tests.crd_schema import validate_spec
from tools.plan.harness import ROOT

REPO = "aws/sagemaker-hyperpod-cli"
PR413 = "028b54284293304050437d3cd7c538990cbdf0d8"  # refs/pull/413/head, 2026-04-22
SAMPLES = "helm_chart/HyperPodHelmChart/charts/inference-operator/config/samples"
GIT_DIR = Path(os.environ.get("HYPERPOD_CLI_GIT_DIR", ROOT.parent / ".mirror" / "aws+sagemaker-hyperpod-cli" / "repo"))
ADDON = "v2.0.0-eksbuild.2"  # the newest add-on the program supports: every sample's fields exist there

ACCOUNT = "123456789012"
REALISTIC = {
    "<YOUR_HYPERPOD_NODE>": "hyperpod-i-0123456789abcdef0",
    "<YOUR_MODEL_BUCKET>": f"hpi-dev-models-{ACCOUNT}",
    "<YOUR_TLS_BUCKET>": f"hyperpod-tls-{ACCOUNT}",
    "<PLACEHOLDER_MODEL_STORAGE_BUCKET>": f"hpi-dev-models-{ACCOUNT}",
    "<PLACEHOLDER_TLS_CERT_S3_URI>": f"s3://hyperpod-tls-{ACCOUNT}/certs",
    "<ACCOUNT_ID>.dkr.ecr.<REGION>.amazonaws.com/<YOUR_LMCACHE_IMAGE>": f"{ACCOUNT}.dkr.ecr.us-east-2.amazonaws.com/"
    "lmcache/vllm-openai:v0.4.3",
}
TLS_BUCKET = f"hyperpod-tls-{ACCOUNT}-dev"


# The AWS doc excerpt ../shared/crds/samples/aws-docs/gw.yaml writes the bucket as `b` (not a bucket name: 3-63
# characters), a placeholder like the others.
DOC_BUCKET = "b"


def fill(value: Any) -> Any:
    """The sample with every placeholder replaced by a realistic value (strings keep their surroundings)."""
    if isinstance(value, dict):
        return {
            k: f"hpi-dev-models-{ACCOUNT}" if k == "bucketName" and v == DOC_BUCKET else fill(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [fill(v) for v in value]
    if isinstance(value, str):
        for marker, real in REALISTIC.items():
            value = value.replace(marker, real)
    return value


def _engine(spec: dict[str, Any]) -> str:
    image = str(spec.get("worker", {}).get("image", "")).lower()
    env = {e.get("name"): e.get("value") for e in spec.get("worker", {}).get("environmentVariables") or []}
    if "sglang" in image:
        return "sglang"
    if "vllm" in image or "lmcache" in image or env.get("OPTION_ROLLING_BATCH") == "vllm":
        return "vllm"
    return "other"


def _instance_types(spec: dict[str, Any]) -> list[str]:
    types = [spec["instanceType"]] if spec.get("instanceType") else list(spec.get("instanceTypes") or [])
    required = (spec.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == "node.kubernetes.io/instance-type":
                types += [str(v) for v in expr.get("values") or []]
    return types or ["ml.g5.12xlarge"]  # a node pinned by name: some GPU group must exist


def dev_variant(sample: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(stack mapping of a dev stack serving the sample, the filled sample spec).

    The stack is in the sample's Region (its model bucket's: the samples' zone names are of that Region), pins the
    newest add-on, has an instance group per instance type the sample names (threadsPerCore 2 and as many nodes as
    replicas: the samples size CPU for all vCPUs), and no stack Redis when the sample names its own.
    """
    spec = fill(copy.deepcopy(sample["spec"]))
    region = (spec.get("modelSourceConfig", {}).get("s3Storage") or {}).get("region", "us-west-2")
    az = f"{az_id_prefix(region)}-az1"
    mapping = stack_mapping("dev")
    mapping["aws:region"] = region
    mapping["hyperpod-inference:network"]["availabilityZoneIds"] = [az, f"{az_id_prefix(region)}-az2"]
    mapping["hyperpod-inference:operator"]["addonVersion"] = ADDON
    groups = mapping["hyperpod-inference:cluster"]["instanceGroups"]
    for g in groups:
        g["availabilityZoneId"] = az
    replicas = max(2, int(spec.get("replicas", 1)))
    groups += [
        {
            "name": t.removeprefix("ml.").replace(".", "-"),
            "instanceType": t,
            "instanceCount": replicas,
            "availabilityZoneId": az,
            "threadsPerCore": 2,
        }
        for t in sorted(set(_instance_types(spec)))
    ]
    own_redis = (spec.get("kvCacheSpec", {}).get("l2CacheSpec") or {}).get("l2CacheLocalUrl")
    if own_redis:
        mapping["hyperpod-inference:kvCache"] = {"l2Backend": "tieredstorage"}
    gateway = spec.get("inferenceGateway") or {}
    if gateway.get("enabled"):  # the gateway the sample joins is this stack's, with a scheduler for its model
        mapping["hyperpod-inference:gateway"] = {
            "enabled": True,
            **({"name": gateway["name"]} if gateway.get("name") else {}),
            "spec": {
                "bbr": {"enabled": False},
                "schedulers": [
                    {"name": "m", "modelName": spec["modelName"], "modelSelector": {"matchLabels": {"app": "m"}}}
                ],
            },
        }
    mapping["hyperpod-inference:endpoints"] = [
        {
            "name": sample["metadata"]["name"],
            "namespace": sample["metadata"].get("namespace", "default"),
            "kind": sample["kind"],
            "engine": _engine(spec),
            "spec": spec,
        }
    ]
    return mapping, spec


def _without_owned(rendered: dict[str, Any], sample: dict[str, Any]) -> dict[str, Any]:
    """The rendered spec without what the package adds when the sample leaves it out (tags, the TLS output URI)."""
    out = copy.deepcopy(rendered)
    out.pop("tags", None)
    tls = out.get("tlsConfig")
    if isinstance(tls, dict) and "tlsCertificateOutputS3Uri" not in (sample.get("tlsConfig") or {}):
        assert tls.pop("tlsCertificateOutputS3Uri", "").startswith(f"s3://{TLS_BUCKET}/endpoints/")
        if not tls:
            out.pop("tlsConfig")
    return out


def outcome(sample: dict[str, Any]) -> tuple[str, Any]:
    """``("renders", (config, rendered CR))`` or ``("refused", {(key, rule)})``."""
    mapping, _ = dev_variant(sample)
    try:
        cfg = parse_stack_mapping("dev", mapping)
    except ConfigError as err:
        return "refused", {(i.path, i.message.rsplit("[", 1)[-1].rstrip("]")) for i in err.issues}
    assert isinstance(cfg, StackConfig)
    (ep,) = cfg.endpoints
    return "renders", (cfg, render_endpoint(ep, OwnedValues(tls_bucket=TLS_BUCKET, tags=cfg.common_tags)))


# What each published sample does in a dev stack. Refusals name the rule and the key; advisories the rules that
# cannot decide offline. Sources: the sample files at aws/sagemaker-hyperpod-cli@<commit>:<SAMPLES>/<file>.
RESOURCES_VALID = "endpoint-resources-valid"  # Kubernetes: limits >= requests; extended resources request == limit
NODE_OFFLINE = "endpoint-node-selection-offline"
IMAGE = "image-compatible-with-operator"
SGLANG = "sglang-metrics-served"
HOSTNAME = {NODE_OFFLINE, IMAGE}  # pinned to a node name; lmcache/vllm-openai:latest
EXPECTED_PR413: dict[str, tuple[str, set[Any]]] = {
    "v1_huggingface_mistral7b": ("renders", set()),
    "v1_huggingface_mistral7b_noprefetch": ("renders", set()),
    "v1_huggingface_mistral7b_sglang": ("renders", {SGLANG}),  # lmsysorg/sglang:latest is no LMCache/vLLM image
    "v1_huggingface_mistral7b_sglang_prefetch": ("renders", {SGLANG}),
    "v1_huggingface_mistral7b_vllm": ("renders", set()),  # vllm:v0.8.4 is a version: advisory in the pack only
    "v1_huggingface_mistral7b_vllm_prefetch": ("renders", set()),
    "v1_huggingface_qwen_1.5b": ("renders", set()),
    "v1_iec_byo_certificate": ("renders", set()),  # as published not YAML (line 1 is a diff hunk header)
    "v1_iec_deepseek1.5b_with_probes": ("renders", set()),
    "v1_iec_llama70b_with_probes": ("renders", set()),
    "v1_nvme_k8s_volume": ("renders", HOSTNAME),
    "v1_nvme_k8s_volume_service_account": ("renders", HOSTNAME),
    "v1_nvme_s3_prefetch_off": ("renders", HOSTNAME),
    "v1_nvme_s3_prefetch_off_fallback": ("renders", HOSTNAME),
    "v1_nvme_s3_prefetch_on": ("renders", HOSTNAME),
    "v1_nvme_s3_prefetch_on_fallback": ("renders", HOSTNAME),
    "v1_qwen3_8b_multi_node_instance": ("renders", {IMAGE}),
    "v1_qwen3_8b_node_affnity": ("renders", {NODE_OFFLINE, IMAGE}),  # zone names: tools.preflight.regional maps them
    "v1_s3_llama70b_IR_L1_L2_membrain": (
        "refused",
        {
            ("endpoints[0].spec.worker.resources.limits.memory", RESOURCES_VALID),
            ("endpoints[0].spec.worker.resources.limits.nvidia.com/gpu", RESOURCES_VALID),
        },
    ),
    "v1_s3_llama8b_IR_L1Cache": ("renders", set()),
}


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={GIT_DIR}", *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def _fetched() -> bool:
    try:
        return _git("cat-file", "-t", PR413).strip() == "commit"
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return False


def _pr_samples() -> list[Any]:
    if not _fetched():
        reason = (
            f"no fetched copy of {REPO} with {PR413} at {GIT_DIR} (set HYPERPOD_CLI_GIT_DIR to a clone); the "
            "derived-facts tests below still run"
        )
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-fetched-copy")]
    names = sorted(Path(p).stem for p in _git("ls-tree", "--name-only", f"{PR413}:{SAMPLES}").split())
    return names


def _published(name: str) -> str:
    return _git("show", f"{PR413}:{SAMPLES}/{name}.yaml")


@pytest.mark.parametrize("name", _pr_samples())
def test_pr413_sample_renders_unchanged_or_is_refused_with_its_rule(name: str, crds_dir: Path) -> None:
    text = _published(name)
    if name == "v1_iec_byo_certificate":
        # Published with a stray diff hunk header as line 1: neither kubectl nor this loader reads that file.
        with pytest.raises(StackFileError, match=r"s:1:1: YAML syntax error"):
            parse_yaml(text, "s")
        text = text.split("\n", 1)[1]
    sample = yaml.safe_load(text)
    assert sample["apiVersion"] == "inference.sagemaker.aws.amazon.com/v1", "a sample for a supported operator"
    want, detail = EXPECTED_PR413[name]
    got, result = outcome(sample)
    assert got == want, result
    if got == "refused":
        assert result == detail
        return
    cfg, cr = result
    filled = fill(sample["spec"])
    assert _without_owned(cr["spec"], filled) == {k: v for k, v in filled.items() if k != "tags"}
    assert validate_spec(cr["spec"], crds_dir, cr["kind"], ADDON) == [], "spec unchanged"
    assert (cr["metadata"]["name"], cr["metadata"]["namespace"]) == (
        sample["metadata"]["name"],
        sample["metadata"].get("namespace", "default"),
    )
    assert validate_spec(cr["spec"], crds_dir, cr["kind"], ADDON) == []
    assert {a.rule for a in run_advisories(cfg)} == detail, [a.render() for a in run_advisories(cfg)]


def test_every_pr413_sample_has_an_expectation() -> None:
    if not _fetched():
        pytest.skip(f"no fetched copy of {REPO} at {GIT_DIR}")
    assert sorted(_pr_samples()) == sorted(EXPECTED_PR413)


# --- the samples in ../shared (main) ---------------------------------------------------------------------------


def _shared() -> list[Any]:
    root = CRDS / "samples"
    if not root.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no {root}"), id="no-shared-samples")]
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.yaml"))


# ../shared/crds/samples/stale: published on main, but their kinds/fields are in no v1 CRD; the API server refuses
# them, and so does the config (the CRD-typed models), at these keys.
STALE = {
    "stale/v1_modeldeployment.yaml": {"endpoints[0]"},  # kind ModelDeployment: no such CRD
    "stale/v1_deepseek_model15b.yaml": {  # a JumpStartModel with v1alpha1's server autoscaling fields
        "endpoints[0].spec.server.maxAutoScaleReplicas",
        "endpoints[0].spec.server.minAutoScaleReplicas",
    },
}
REQLIMITS_DOC_MISTAKE = {"endpoints[0].spec.modelSourceConfig.s3Storage.modelLocation"}  # AWS doc nests it wrongly


@pytest.mark.parametrize("rel", _shared())
def test_shared_sample_renders_unchanged_or_is_refused_by_the_crd(rel: str, crds_dir: Path) -> None:
    sample = yaml.safe_load((crds_dir / "samples" / rel).read_text(encoding="utf-8"))
    got, result = outcome(sample)
    refused = STALE.get(rel) or (REQLIMITS_DOC_MISTAKE if rel == "aws-docs/reqlimits.yaml" else None)
    if refused is not None:
        assert got == "refused"
        assert {key for key, _ in result} == refused
        # and the CRD refuses the same spec (unknown fields / kind), so these are Kubernetes' refusals
        if sample["kind"] in ("InferenceEndpointConfig", "JumpStartModel"):
            assert validate_spec(fill(sample["spec"]), crds_dir, sample["kind"]) != []
        return
    assert got == "renders", result
    _, cr = result
    filled = fill(sample["spec"])
    assert _without_owned(cr["spec"], filled) == {k: v for k, v in filled.items() if k != "tags"}
    assert validate_spec(cr["spec"], crds_dir, cr["kind"], ADDON) == []


# --- the refusals and advisories of PR #413, from the samples' derived facts (no fetched copy needed) -----------

SOURCE = f"{REPO}@{PR413}:{SAMPLES}"


def _minimal(**spec: Any) -> dict[str, Any]:
    base = {
        "modelName": "m",
        "modelSourceConfig": {
            "modelSourceType": "s3",
            "s3Storage": {"bucketName": f"hpi-dev-models-{ACCOUNT}", "region": "us-east-2"},
            "modelLocation": "models/m",
        },
        "worker": {
            "image": "lmcache/vllm-openai:v0.4.3",
            "modelInvocationPort": {"containerPort": 8000, "name": "http"},
            "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
            "resources": {
                "limits": {"nvidia.com/gpu": "1"},
                "requests": {"cpu": "6", "memory": "30Gi", "nvidia.com/gpu": "1"},
            },
        },
        "metrics": {"enabled": True, "modelMetrics": {"port": 8000}},
    }
    base.update(spec)
    return {"apiVersion": "inference.sagemaker.aws.amazon.com/v1", "kind": "InferenceEndpointConfig",
            "metadata": {"name": "sample", "namespace": "default"}, "spec": base}  # fmt: skip


def _affinity(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": list(exprs)}]}
    }


def test_node_name_affinity_renders_with_an_advisory() -> None:
    """{SOURCE}/v1_nvme_k8s_volume.yaml (and the five other v1_nvme_* samples): nodeAffinity
    kubernetes.io/hostname In [<YOUR_HYPERPOD_NODE>], no instance type; used to be refused by
    endpoint-pod-fits-node ("no instance group matches")."""
    sample = _minimal(
        nodeAffinity=_affinity({"key": "kubernetes.io/hostname", "operator": "In", "values": ["<YOUR_HYPERPOD_NODE>"]})
    )
    got, (cfg, _) = outcome(sample)
    assert got == "renders"
    (advisory,) = [a for a in run_advisories(cfg) if a.rule == NODE_OFFLINE]
    assert advisory.path == (
        "endpoints[0].spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0]"
    )
    assert advisory.message.startswith(
        "endpoints[0] sample: its worker pods requires kubernetes.io/hostname In [hyperpod-i-0123456789abcdef0]: "
        "node names exist only once the nodes have joined; not checked offline"
    )
    assert advisory.checked_by.startswith("the cluster: node names exist once the nodes join")


def test_zone_name_affinity_renders_with_an_advisory_in_its_region_and_is_refused_in_another() -> None:
    """{SOURCE}/v1_qwen3_8b_node_affnity.yaml: topology.kubernetes.io/zone In [us-east-2a, us-east-2b] with
    instance types g5.8x/12x/16xlarge."""
    exprs = (
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["ml.g5.12xlarge"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-2a", "us-east-2b"]},
    )
    got, (cfg, _) = outcome(_minimal(nodeAffinity=_affinity(*exprs)))
    assert got == "renders"
    (advisory,) = [a for a in run_advisories(cfg) if a.rule == NODE_OFFLINE]
    assert "topology.kubernetes.io/zone In [us-east-2a, us-east-2b]: zone names map to AZ IDs" in advisory.message
    assert (
        advisory.checked_by
        == "tools.preflight.regional (DescribeAvailabilityZones maps the zone names to this account's AZ IDs)"
    )
    other = _minimal(nodeAffinity=_affinity(*exprs))
    other["spec"]["modelSourceConfig"]["s3Storage"]["region"] = "us-west-2"  # the stack follows the bucket
    got, refused = outcome(other)
    assert got == "refused"
    assert refused == {
        (
            "endpoints[0].spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            f".matchExpressions[1].values[{k}]",
            "endpoint-pod-fits-node",
        )
        for k in (0, 1)
    }


def test_sglang_without_metrics_settings_is_advisory_in_dev_mandatory_in_prod() -> None:
    """{SOURCE}/v1_huggingface_mistral7b_sglang.yaml: lmsysorg/sglang:latest on containerPort 30000, no metrics
    settings (the CRD enables metrics on port 8080), no --enable-metrics."""
    sample = _minimal(metrics=None)
    del sample["spec"]["metrics"]
    sample["spec"]["worker"].update(
        image="lmsysorg/sglang:latest",
        modelInvocationPort={"containerPort": 30000, "name": "http"},
        args=["python3", "-m", "sglang.launch_server", "--port", "30000", "--host", "0.0.0.0", "--tp", "4"],
    )
    got, (cfg, _) = outcome(sample)
    assert got == "renders"
    (advisory,) = [a for a in run_advisories(cfg) if a.rule == SGLANG]
    assert advisory.path == "endpoints[0].spec.worker.args"
    assert advisory.checked_by == "the cluster: `curl http://<worker pod>:8080/metrics` answers"
    mapping, _ = dev_variant(sample)
    mapping["hyperpod-inference:environment"] = "prod"
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping("dev", mapping)
    found = {(i.path, i.message.rsplit("[", 1)[-1]) for i in err.value.issues if "sglang" in i.message}
    assert found == {
        ("endpoints[0].spec.metrics.modelMetrics.port", "sglang-metrics-served]"),
        ("endpoints[0].spec.worker.args", "sglang-metrics-served]"),
    }


def test_gpu_request_below_its_limit_is_refused_with_the_kubernetes_rule() -> None:
    """{SOURCE}/v1_s3_llama70b_IR_L1_L2_membrain.yaml: requests nvidia.com/gpu 4, limits 8; memory request 512Gi,
    limit 100Gi. Kubernetes rejects both (ResourceRequirements validation)."""
    sample = _minimal(instanceType="ml.p5.48xlarge", replicas=7)
    sample["spec"]["worker"]["resources"] = {
        "limits": {"nvidia.com/gpu": "8", "cpu": "48", "memory": "100Gi"},
        "requests": {"cpu": "48", "memory": "512Gi", "nvidia.com/gpu": "4"},
    }
    assert outcome(sample) == ("refused", EXPECTED_PR413["v1_s3_llama70b_IR_L1_L2_membrain"][1])


def test_latest_image_is_advisory_in_dev_and_refused_for_kvaware_in_prod() -> None:
    """{SOURCE}/v1_nvme_k8s_volume.yaml and v1_qwen3_8b_*: worker.image lmcache/vllm-openai:latest."""
    sample = _minimal(instanceType="ml.g5.12xlarge", invocationEndpoint="v1/completions")
    sample["spec"]["worker"]["image"] = "lmcache/vllm-openai:latest"
    got, (cfg, _) = outcome(sample)
    assert got == "renders"
    (advisory,) = [a for a in run_advisories(cfg) if a.rule == IMAGE]
    assert advisory.message.startswith(
        "image lmcache/vllm-openai:latest names no version (tag 'latest' is mutable), so whether it is LMCache >= "
        "0.4.3 (what add-on v2.0.0-eksbuild.2 needs) cannot be known offline"
    )
    sample["spec"]["intelligentRoutingSpec"] = {"enabled": True, "routingStrategy": "kvaware"}
    mapping, _ = dev_variant(sample)
    mapping["hyperpod-inference:environment"] = "prod"
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping("dev", mapping)
    assert any(
        i.path == "endpoints[0].spec.worker.image" and i.message.endswith("[image-compatible-with-operator]")
        for i in err.value.issues
    ), [i.render() for i in err.value.issues]
