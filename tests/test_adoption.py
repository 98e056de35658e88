"""Adoption modes: an existing EKS cluster, an existing HyperPod cluster, existing prerequisites, external Redis.

Each mode asserts what is and is not registered and how the adopted values are wired. The program runs two
ways: through ``__main__`` (``tools.plan.harness.run_stack``, as ``pulumi up`` would) and by building
:class:`HyperPodInference` directly (as another Pulumi program would), with the same mocks.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import settings
from rich.console import Console

from components import HyperPodInference, HyperPodInferenceArgs
from components.config import PROJECT, ConfigError, StackConfig, parse_stack_config
from components.endpoints import OwnedValues, render_endpoint
from tests.conftest import CRDS, CRDS_MISSING, cached_scope, registered, stack_mapping
from tools.cli.preview import preview
from tools.plan.harness import StackRun, run_stack
from tools.plan.mocks import GraphMonitor, RecordingMocks, Registration, eks_cluster_read
from tools.preflight.regional import load_config

ATTACH_EKS = "ml-platform"
ATTACH_HYPERPOD = "arn:aws:sagemaker:us-west-2:123456789012:cluster/a1b2c3d4e5f6"
ATTACH_EKS_ARN = "arn:aws:eks:us-west-2:123456789012:cluster/ml-platform"
OFFLINE_URL = "rediss://offline-preview-secret-placeholder"  # the secret URL offline, with its declared scheme
SECRET_SIG = "4dabf18193072939515e22adb298388d"
CR_IEC = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
ADDON = "aws:eks/addon:Addon"
# What the cluster layer creates; an adopted layer must register none of it.
CLUSTER_LAYER_TYPES = {
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/natGateway:NatGateway",
    "eks:index:Cluster",
    "aws:eks/cluster:Cluster",
    "hyperpod:eks_cluster:EksCluster",
    "aws-native:sagemaker:Cluster",
    "hyperpod:hyperpod_cluster:HyperPodCluster",
    "hyperpod:hyperpod_dependencies:HyperPodDependencies",
    "kubernetes:helm.sh/v3:Release",
    "hyperpod:node_security_group:NodeSecurityGroup",
    "aws:ec2/securityGroup:SecurityGroup",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:kms/key:Key",
    "aws:elasticache/replicationGroup:ReplicationGroup",
}


def types(run: StackRun | DirectRun) -> set[str]:
    return {r.type for r in run.registrations}


def unwrap(value: Any) -> tuple[Any, bool]:
    """(plain value, was it a Pulumi secret) of a recorded input."""
    if isinstance(value, dict) and value.get(SECRET_SIG) is not None:
        return value["value"], True
    return value, False


def iec(run: StackRun | DirectRun, name: str) -> Registration:
    found = [r for r in run.registrations if r.type == CR_IEC and r.name == f"endpoints-inference-{name}"]
    assert len(found) == 1, f"endpoint {name} not registered"
    return found[0]


# --- the component used directly ------------------------------------------------------------------------


@dataclass
class DirectRun:
    registrations: list[Registration]
    exports: dict[str, Any]
    error: Exception | None


def run_component(cfg: StackConfig, mocks: RecordingMocks | None = None) -> DirectRun:
    """Build ``HyperPodInference`` directly (no ``__main__``) under the recording mocks."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    mocks = mocks or RecordingMocks(region=cfg.region)
    monitor = GraphMonitor(mocks)
    settings.ROOT.set(None)  # a fresh root stack, as tools.plan.harness does
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=cfg.stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config({}, [])
    exports: dict[str, Any] = {}

    def program() -> pulumi.Output[Any]:
        component = HyperPodInference("hyperpod-inference", HyperPodInferenceArgs(config=cfg))
        keys = sorted(component.exports)
        return pulumi.Output.all(*(component.exports[k] for k in keys)).apply(
            lambda values: exports.update(dict(zip(keys, values, strict=True)))
        )

    error: Exception | None = None
    try:
        pulumi.runtime.test(program)()
    except ConfigError as err:
        error = err
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    return DirectRun(monitor.registrations, exports, error)


def attach_config(mapping: dict[str, Any] | None = None) -> StackConfig:
    return load_config("attach", mapping if mapping is not None else stack_mapping("attach"))


def test_the_component_directly_registers_what_main_does(stack_runs: dict[str, StackRun]) -> None:
    direct = run_component(load_config("dev", stack_mapping("dev")))
    assert direct.error is None
    via_main = stack_runs["dev"]
    assert len(direct.registrations) > 50
    assert sorted((r.type, r.name) for r in direct.registrations) == sorted(
        (r.type, r.name) for r in via_main.registrations
    )
    top = [r for r in direct.registrations if r.type == "hyperpod:index:HyperPodInference"]
    assert [r.name for r in top] == ["hyperpod-inference"]
    assert direct.exports["eksClusterName"] == "hpi-dev-eks"
    assert direct.exports["environment"] == "dev"


def test_attach_directly_and_through_main_agree() -> None:
    direct = run_component(attach_config())
    via_main = registered(run_stack("attach"))
    assert direct.error is None
    assert sorted((r.type, r.name) for r in direct.registrations) == sorted(
        (r.type, r.name) for r in via_main.registrations
    )
    assert direct.exports["hyperpodClusterArn"] == ATTACH_HYPERPOD
    assert direct.exports["eksClusterName"] == ATTACH_EKS


# --- attach: existing EKS + HyperPod clusters, external Redis, two endpoints --------------------------------


@pytest.fixture(scope=cached_scope("module"))
def attach() -> StackRun:
    return registered(run_stack("attach"))


def test_attach_previews_with_exit_0() -> None:
    out = io.StringIO()
    assert preview("attach", console=Console(file=out, width=200)) == 0, out.getvalue()[-3000:]
    assert "0 mandatory" in out.getvalue()


def test_attach_registers_no_vpc_eks_or_hyperpod_resource(attach: StackRun) -> None:
    assert types(attach) & CLUSTER_LAYER_TYPES == set()
    assert len(attach.of_type("hyperpod:existing_eks_cluster:ExistingEksCluster")) == 1
    assert len(attach.of_type("hyperpod:existing_hyperpod_cluster:ExistingHyperPodCluster")) == 1
    # The adopted HyperPod component is a read, nothing under it.
    hp = attach.of_type("hyperpod:existing_hyperpod_cluster:ExistingHyperPodCluster")[0]
    assert [r for r in attach.registrations if r.parent == hp.urn] == []
    assert sorted(r.name for r in attach.of_type(CR_IEC)) == [
        "endpoints-inference-llama-8b",
        "endpoints-inference-qwen-sglang",
    ]


def test_attach_wires_the_adopted_clusters(attach: StackRun) -> None:
    addon = attach.named(ADDON, "inference-operator-addon")
    assert addon.inputs["clusterName"] == ATTACH_EKS
    values = json.loads(addon.inputs["configurationValues"])
    assert values["hyperpodClusterArn"] == ATTACH_HYPERPOD
    assert attach.outputs["hyperpodClusterArn"] == ATTACH_HYPERPOD
    assert "hyperpodClusterName" not in attach.outputs

    provider = attach.named("pulumi:providers:kubernetes", "eks-k8s")
    kubeconfig_value, secret = unwrap(provider.inputs["kubeconfig"])
    assert secret, "the kubeconfig is a secret"
    kubeconfig = json.loads(kubeconfig_value)
    assert kubeconfig["clusters"][0]["cluster"]["server"].endswith(".gr7.us-west-2.eks.amazonaws.com")
    assert kubeconfig["users"][0]["user"]["exec"]["args"] == [
        "eks", "get-token", "--cluster-name", "ml-platform", "--region", "us-west-2", "--output", "json"
    ]  # fmt: skip
    # Every Kubernetes object goes through the adopted cluster's provider.
    for cr in attach.of_type(CR_IEC):
        assert cr.provider is not None and cr.provider.startswith(provider.urn)
    # IRSA trusts the adopted cluster's OIDC provider (IAM's ARN for its issuer; preflight checks it exists).
    trust = json.loads(attach.named("aws:iam/role:Role", "operator-iam-keda").inputs["assumeRolePolicy"])
    federated = trust["Statement"][0]["Principal"]["Federated"]
    assert federated.startswith("arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/")
    assert attach.of_type("aws:iam/openIdConnectProvider:OpenIdConnectProvider") == []


def test_attach_external_redis_is_wired_like_the_stacks_own(attach: StackRun) -> None:
    llama = iec(attach, "llama-8b")
    spec, _ = unwrap(llama.inputs["spec"])
    # offline the URL is the placeholder (no credentials in it): wired as it is, no Secret needed
    assert spec["kvCacheSpec"]["l2CacheSpec"] == {"l2CacheBackend": "redis", "l2CacheLocalUrl": OFFLINE_URL}
    assert attach.of_type("kubernetes:core/v1:Secret") == []
    qwen = iec(attach, "qwen-sglang")
    qwen_spec, qwen_secret = unwrap(qwen.inputs["spec"])
    assert "kvCacheSpec" not in qwen_spec and not qwen_secret, "only endpoints that ask for redis get the URL"
    assert "kvCacheUrl" not in attach.outputs


def test_attach_existing_prerequisites_are_not_installed(attach: StackRun) -> None:
    addons = sorted(r.inputs["addonName"] for r in attach.of_type(ADDON))
    assert addons == [
        "amazon-sagemaker-hyperpod-inference",
        "amazon-sagemaker-hyperpod-observability",  # the stack's own (observability.enabled), on the adopted cluster
        "aws-fsx-csi-driver",
        "aws-mountpoint-s3-csi-driver",
    ]
    prereq_urns = {r.urn for r in attach.of_type(ADDON) if r.name.startswith("operator-prereqs-")}
    assert prereq_urns <= set(attach.named(ADDON, "inference-operator-addon").dependencies)


def test_a_real_external_url_is_wired_as_a_secret() -> None:
    """Under the CLI the program sees the decrypted URL: it reaches the endpoint unchanged, and stays secret."""
    mapping = stack_mapping("attach")
    values = {k.split(":", 1)[1]: v for k, v in mapping.items() if k.startswith("hyperpod-inference:")}
    real = "rediss://:s3cr3tT0ken@redis.ml-platform.internal:6380"
    values["kvCache"]["redis"]["external"]["url"] = real
    cfg = parse_stack_config(values, stack="attach", region="us-west-2", secret_keys={"kvCache"})
    direct = run_component(cfg)
    assert direct.error is None
    spec, _ = unwrap(iec(direct, "llama-8b").inputs["spec"])
    # the token moves to the Secret; the custom resource names it by reference only
    url = "rediss://$(HPI_KV_CACHE_USERNAME):$(HPI_KV_CACHE_PASSWORD)@redis.ml-platform.internal:6380"
    assert spec["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"] == url
    assert "s3cr3tT0ken" not in str(spec)
    assert {"name": "LMCACHE_REMOTE_URL", "value": url} in spec["worker"]["environmentVariables"]
    (secret,) = [r for r in direct.registrations if r.type == "kubernetes:core/v1:Secret"]
    data, is_secret = unwrap(secret.inputs["stringData"])
    assert is_secret and data == {"username": "", "password": "s3cr3tT0ken"}
    assert not any(r.type == "aws:elasticache/replicationGroup:ReplicationGroup" for r in direct.registrations)


# --- incompatible adopted clusters: a config error naming the key, nothing that needs the cluster ----------------


def _direct_with(eks: dict[str, Any] | None = None, hyperpod: dict[str, Any] | None = None) -> DirectRun:
    mocks = RecordingMocks(region="us-west-2")
    if eks:
        mocks.eks_overrides[ATTACH_EKS] = eks
    if hyperpod:
        mocks.hyperpod_overrides[ATTACH_HYPERPOD] = hyperpod
    return run_component(attach_config(), mocks)


def _no_cluster_dependents(run: DirectRun) -> None:
    assert not any(r.type == ADDON or r.type.startswith("kubernetes:") for r in run.registrations)


@pytest.mark.parametrize("mode", ["CONFIG_MAP", None])
def test_config_map_authentication_mode_is_a_config_error(mode: str | None) -> None:
    run = _direct_with(
        eks={"accessConfigs": [{"authenticationMode": mode, "bootstrapClusterCreatorAdminPermissions": False}]}
    )
    assert isinstance(run.error, ConfigError)
    [issue] = run.error.issues
    assert issue.path == "cluster.existing.eksClusterName"
    assert f"authentication mode {mode or 'unknown'}" in issue.message
    assert "API and API_AND_CONFIG_MAP" in issue.message
    _no_cluster_dependents(run)


@pytest.mark.parametrize("mode", ["API", "API_AND_CONFIG_MAP"])
def test_supported_authentication_modes_pass(mode: str) -> None:
    run = _direct_with(
        eks={"accessConfigs": [{"authenticationMode": mode, "bootstrapClusterCreatorAdminPermissions": True}]}
    )
    assert run.error is None
    assert any(r.type == ADDON for r in run.registrations)


def test_unsupported_kubernetes_version_is_a_config_error() -> None:
    run = _direct_with(eks={"version": "1.27"})
    assert isinstance(run.error, ConfigError)
    assert "runs Kubernetes 1.27; HyperPod supports 1.30" in run.error.issues[0].message
    _no_cluster_dependents(run)


def test_hyperpod_cluster_of_another_eks_cluster_is_a_config_error() -> None:
    other = "arn:aws:eks:us-west-2:123456789012:cluster/someone-else"
    run = _direct_with(hyperpod={"orchestrator": {"eks": {"clusterArn": other}}})
    assert isinstance(run.error, ConfigError)
    [issue] = run.error.issues
    assert issue.path == "cluster.existing.hyperpodClusterArn"
    assert f"orchestrated by {other}, not by cluster.existing.eksClusterName ({ATTACH_EKS_ARN})" in issue.message
    assert not any(r.name == "inference-operator-addon" for r in run.registrations)


@pytest.mark.parametrize("orchestrator", [None, {}], ids=["no-orchestrator", "no-eks-orchestrator"])
def test_hyperpod_cluster_orchestrated_by_no_eks_cluster_is_a_config_error(orchestrator: Any) -> None:
    """A Slurm-orchestrated (or orchestrator-less) cluster has no EKS orchestrator: the same error, naming none."""
    run = _direct_with(hyperpod={"orchestrator": orchestrator})
    assert isinstance(run.error, ConfigError)
    assert [(i.path, i.message) for i in run.error.issues] == [
        (
            "cluster.existing.hyperpodClusterArn",
            f"{ATTACH_HYPERPOD} is orchestrated by no EKS cluster, not by cluster.existing.eksClusterName "
            f"({ATTACH_EKS_ARN}); name the EKS cluster it belongs to",
        )
    ]
    assert not any(r.name == "inference-operator-addon" for r in run.registrations)


# --- existing EKS, HyperPod created in it -----------------------------------------------------------------------


def _eks_only(create_oidc: bool = False) -> dict[str, Any]:
    mapping = stack_mapping("attach")
    existing = mapping["hyperpod-inference:cluster"]["existing"]
    del existing["hyperpodClusterArn"]
    existing["createOidcProvider"] = create_oidc
    return mapping


def test_existing_eks_creates_hyperpod_in_it() -> None:
    run = registered(run_stack("attach", _eks_only()))
    present = types(run)
    assert {"eks:index:Cluster", "aws:eks/cluster:Cluster", "hyperpod:eks_cluster:EksCluster"} & present == set()
    assert "aws:ec2/vpc:Vpc" not in present
    [cluster] = run.of_type("aws-native:sagemaker:Cluster")
    assert cluster.inputs["orchestrator"] == {"eks": {"clusterArn": ATTACH_EKS_ARN}}
    assert cluster.inputs["clusterName"] == "hpi-attach-hp"
    assert len(run.of_type("kubernetes:helm.sh/v3:Release")) == 1, "the HyperPod dependencies chart, on the adopted EKS"
    # The created node SG is opened to and from the adopted cluster's SG (as read from EKS).
    cluster_sg = eks_cluster_read("us-west-2", ATTACH_EKS)["vpcConfig"]["clusterSecurityGroupId"]
    node_sg_ids = {r.outputs.get("id") or r.urn for r in run.of_type("aws:ec2/securityGroup:SecurityGroup")}
    rules = {r.name: r.inputs for r in run.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")}
    assert rules["eks-api-from-nodes"]["securityGroupId"] == cluster_sg
    assert rules["eks-api-from-nodes"]["fromPort"] == 443
    assert rules["eks-nodes-from-api-high"]["referencedSecurityGroupId"] == cluster_sg
    assert (rules["eks-nodes-from-api-high"]["fromPort"], rules["eks-nodes-from-api-high"]["toPort"]) == (1025, 65535)
    assert (
        rules["eks-api-from-nodes"]["referencedSecurityGroupId"] == rules["eks-nodes-from-api-443"]["securityGroupId"]
    )
    assert len(node_sg_ids) == 1
    assert run.outputs["hyperpodClusterName"] == "hpi-attach-hp"


def test_existing_eks_can_get_its_oidc_provider() -> None:
    run = registered(run_stack("attach", _eks_only(create_oidc=True)))
    [oidc] = run.of_type("aws:iam/openIdConnectProvider:OpenIdConnectProvider")
    assert oidc.inputs["url"].startswith("https://oidc.eks.us-west-2.amazonaws.com/id/")
    assert oidc.inputs["clientIdLists"] == ["sts.amazonaws.com"]
    trust = json.loads(run.named("aws:iam/role:Role", "operator-iam-keda").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"]["Federated"] == (
        "arn:aws:iam::123456789012:oidc-provider/" + oidc.inputs["url"].removeprefix("https://")
    )


# --- config errors of the adoption keys ------------------------------------------------------------------------


def issues(mapping: dict[str, Any], stack: str = "attach") -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        load_config(stack, mapping)
    return {i.path: i.message for i in err.value.issues}


def test_existing_cluster_needs_an_existing_vpc() -> None:
    mapping = stack_mapping("attach")
    mapping["hyperpod-inference:network"] = {"cidr": "10.80.0.0/16", "availabilityZoneIds": ["usw2-az1", "usw2-az2"]}
    assert "set network.existing" in issues(mapping)["cluster.existing"]


def test_creation_keys_are_refused_on_adopted_clusters() -> None:
    mapping = stack_mapping("attach")
    cluster = mapping["hyperpod-inference:cluster"]
    cluster["kubernetesVersion"] = "1.33"
    cluster["fsxEnabled"] = True
    cluster["instanceGroups"][1]["trainingPlanArn"] = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p1"
    found = issues(mapping)
    assert "configures the EKS cluster this stack creates" in found["cluster.kubernetesVersion"]
    assert "configures the HyperPod cluster this stack creates" in found["cluster.fsxEnabled"]
    assert "only applies when this stack creates the group" in found["cluster.instanceGroups[1].trainingPlanArn"]
    # With only the EKS cluster adopted, the HyperPod creation keys are fine again.
    eks_only = _eks_only()
    eks_only["hyperpod-inference:cluster"]["fsxEnabled"] = True
    eks_only["hyperpod-inference:cluster"]["instanceGroups"][1]["ebsVolumeSizeGb"] = 1000
    assert load_config("attach", eks_only).cluster.fsx_enabled is True


def test_hyperpod_arn_in_another_region() -> None:
    mapping = stack_mapping("attach")
    mapping["hyperpod-inference:cluster"]["existing"]["hyperpodClusterArn"] = ATTACH_HYPERPOD.replace(
        "us-west-2", "us-east-1"
    )
    assert (
        issues(mapping)["cluster.existing.hyperpodClusterArn"]
        == "the cluster is in us-east-1; the stack is in us-west-2"
    )


def test_own_redis_on_an_adopted_hyperpod_cluster_needs_the_node_sg() -> None:
    mapping = stack_mapping("attach")
    mapping["hyperpod-inference:kvCache"] = {"l2Backend": "redis"}
    assert (
        "required when this stack creates the Redis L2 cache" in issues(mapping)["cluster.existing.nodeSecurityGroupId"]
    )
    mapping["hyperpod-inference:cluster"]["existing"]["nodeSecurityGroupId"] = "sg-0123456789abcdef0"
    run = registered(run_stack("attach", mapping))
    [group] = run.of_type("aws:elasticache/replicationGroup:ReplicationGroup")
    [rule] = [
        r
        for r in run.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.name == "kv-cache-from-nodes"
    ]
    assert rule.inputs["referencedSecurityGroupId"] == "sg-0123456789abcdef0"
    assert group.inputs["transitEncryptionEnabled"] is True


def test_node_sg_without_an_adopted_hyperpod_cluster() -> None:
    mapping = _eks_only()
    mapping["hyperpod-inference:cluster"]["existing"]["nodeSecurityGroupId"] = "sg-0123456789abcdef0"
    assert "only used with hyperpodClusterArn" in issues(mapping)["cluster.existing.nodeSecurityGroupId"]


def test_existing_prerequisites_refuse_a_pin_and_duplicates() -> None:
    mapping = stack_mapping("attach")
    op = mapping["hyperpod-inference:operator"]
    op["certManagerVersion"] = "v1.18.2-eksbuild.2"
    op["existingPrerequisites"] = ["cert-manager", "metrics-server", "cert-manager"]
    found = issues(mapping)
    assert "listed in operator.existingPrerequisites" in found["operator.certManagerVersion"]
    assert found["operator.existingPrerequisites[2]"] == "cert-manager is listed twice"
    op["existingPrerequisites"] = ["kube-proxy"]
    del op["certManagerVersion"]
    assert "operator.existingPrerequisites[0]" in issues(mapping)


# --- external Redis: the URL is a secret, its scheme the declared one, prod needs TLS ----------------------------


def _external(url: str, *, tls: bool = True, env: str = "staging", secret: bool = True, **redis: Any) -> dict[str, Any]:
    mapping = stack_mapping("attach")
    values = {k.split(":", 1)[1]: v for k, v in mapping.items() if k.startswith("hyperpod-inference:")}
    values["environment"] = env
    values["kvCache"] = {"l2Backend": "redis", "redis": {"transitEncryption": tls, "external": {"url": url}, **redis}}
    return {"values": values, "secret_keys": {"kvCache"} if secret else set()}


def _external_issues(**kw: Any) -> dict[str, str]:
    url = kw.pop("url")
    spec = _external(url, **kw)
    with pytest.raises(ConfigError) as err:
        parse_stack_config(spec["values"], stack="attach", region="us-west-2", secret_keys=spec["secret_keys"])
    return {i.path: i.message for i in err.value.issues}


def _external_ok(**kw: Any) -> StackConfig:
    url = kw.pop("url")
    spec = _external(url, **kw)
    return parse_stack_config(spec["values"], stack="attach", region="us-west-2", secret_keys=spec["secret_keys"])


def test_external_url_must_be_a_secret() -> None:
    found = _external_issues(url="rediss://redis.internal:6379", secret=False)
    assert "must be a Pulumi secret" in found["kvCache.redis.external.url"]


def test_external_url_scheme_must_match_transit_encryption() -> None:
    found = _external_issues(url="redis://redis.internal:6379", tls=True)
    assert "is a redis:// URL but kvCache.redis.transitEncryption is true" in found["kvCache.redis.external.url"]
    assert (
        _external_ok(url="redis://redis.internal:6379", tls=False).kv_cache.external_url
        == "redis://redis.internal:6379"
    )


def test_a_malformed_external_url_is_refused_without_echoing_it() -> None:
    found = _external_issues(url="http://:t0ken@redis.internal:6379")
    assert "must be a redis://host:port or rediss://host:port URL" in found["kvCache.redis.external.url"]
    assert "t0ken" not in " ".join(found.values())


def test_external_redis_refuses_elasticache_keys_and_needs_the_redis_backend() -> None:
    found = _external_issues(url="rediss://redis.internal:6379", nodeType="cache.r7g.xlarge")
    assert "with kvCache.redis.external none is created" in found["kvCache.redis.nodeType"]
    spec = _external("rediss://redis.internal:6379")
    spec["values"]["kvCache"]["l2Backend"] = "none"
    with pytest.raises(ConfigError) as err:
        parse_stack_config(spec["values"], stack="attach", region="us-west-2", secret_keys={"kvCache"})
    assert any(i.path == "kvCache.redis.external" and "set l2Backend: redis" in i.message for i in err.value.issues)


def test_prod_tls_rule_holds_for_the_external_redis() -> None:
    found = _external_issues(url="redis://redis.internal:6379", tls=False, env="prod")
    assert "must be true in prod" in found["kvCache.redis.transitEncryption"]
    url_issue = found["endpoints[0].spec.kvCacheSpec.l2CacheSpec.l2CacheLocalUrl"]
    assert "rediss://" in url_issue and url_issue.endswith("[l2-redis-wired]")
    assert _external_ok(url="rediss://redis.internal:6379", env="prod").kv_cache.creates_redis is False


def test_prod_external_redis_offline_previews_with_its_declared_scheme() -> None:
    mapping = stack_mapping("attach")
    mapping["hyperpod-inference:environment"] = "prod"
    run = registered(run_stack("attach", mapping))
    spec, _ = unwrap(iec(run, "llama-8b").inputs["spec"])
    assert spec["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"] == OFFLINE_URL


# --- an endpoint's own Redis when the stack creates none: the shared sample, unchanged -----------------------------

SAMPLE = CRDS / "samples" / "placeholder-values" / "v1_llama31_8b_kv_cache_l1_l2.yaml"
SAMPLE_FILL = {
    # as the sample's own comments suggest
    "<PLACEHOLDER_L2_CACHE_LOCAL_URL>": "redis://redis.ns-team-a.svc.cluster.local:6379",
    "<PLACEHOLDER_TLS_CERT_S3_URI>": "s3://tls-certs-bucket/certs",
    "<PLACEHOLDER_MODEL_STORAGE_BUCKET>": "hpi-dev-models-123456789012",
}


def _filled(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _filled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v) for v in value]
    return SAMPLE_FILL.get(value, value) if isinstance(value, str) else value


@pytest.fixture(scope=cached_scope("module"))
def sample() -> dict[str, Any]:
    if not SAMPLE.is_file():
        pytest.skip(f"no operator sample {SAMPLE}: {CRDS_MISSING}")
    data: dict[str, Any] = _filled(yaml.safe_load(SAMPLE.read_text(encoding="utf-8")))
    return data


def _dev_with_sample(sample: dict[str, Any]) -> dict[str, Any]:
    mapping = stack_mapping("dev")
    assert mapping["hyperpod-inference:kvCache"] == {"l2Backend": "tieredstorage"}, "dev creates no Redis"
    mapping["hyperpod-inference:operator"]["addonVersion"] = "v1.5.0-eksbuild.1"
    mapping["hyperpod-inference:cluster"]["instanceGroups"].append(
        {"name": "gpu-g5", "instanceType": "ml.g5.8xlarge", "instanceCount": 1, "availabilityZoneId": "usw2-az2"}
    )
    mapping["hyperpod-inference:endpoints"].append(
        {
            "name": sample["metadata"]["name"],
            "namespace": sample["metadata"]["namespace"],
            "kind": sample["kind"],
            "engine": "vllm",
            "spec": copy.deepcopy(sample["spec"]),
        }
    )
    return mapping


def test_the_shared_sample_with_its_own_redis_renders_unchanged(sample: dict[str, Any]) -> None:
    run = registered(run_stack("dev", _dev_with_sample(sample)))
    assert run.of_type("aws:elasticache/replicationGroup:ReplicationGroup") == []
    found = [r for r in run.of_type(CR_IEC) if r.name == "endpoints-ns-team-a-llama-8b-kv-cache-l1-l2"]
    assert len(found) == 1, "the sample's endpoint was not registered"
    spec, secret = unwrap(found[0].inputs["spec"])
    assert not secret, "the stack wires no URL into it"
    tags = spec.pop("tags")
    assert spec == sample["spec"], "the sample's spec must render field for field"
    assert {"name": "hyperpod-inference:stack", "value": "dev"} in tags
    assert found[0].inputs["metadata"]["name"] == "llama-8b-kv-cache-l1-l2"


def test_the_sample_render_function_keeps_its_url(sample: dict[str, Any]) -> None:
    cfg = load_config("dev", _dev_with_sample(sample))
    endpoint = cfg.endpoints[-1]
    cr = render_endpoint(endpoint, OwnedValues(tls_bucket="hyperpod-tls-x", redis=None))
    assert (
        cr["spec"]["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"] == "redis://redis.ns-team-a.svc.cluster.local:6379"
    )
    assert cr["spec"]["tlsConfig"] == {"tlsCertificateOutputS3Uri": "s3://tls-certs-bucket/certs"}


def test_an_own_url_is_refused_when_the_stack_wires_a_redis(sample: dict[str, Any]) -> None:
    mapping = _dev_with_sample(sample)
    mapping["hyperpod-inference:kvCache"] = {"l2Backend": "redis"}
    found = issues(mapping, "dev")
    assert "remove l2CacheLocalUrl" in found["endpoints[1].spec.kvCacheSpec.l2CacheSpec.l2CacheLocalUrl"]


def test_redis_without_any_url_is_refused(sample: dict[str, Any]) -> None:
    mapping = _dev_with_sample(sample)
    del mapping["hyperpod-inference:endpoints"][1]["spec"]["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"]
    found = issues(mapping, "dev")
    assert "or the endpoint's own l2CacheLocalUrl" in found["endpoints[1].spec.kvCacheSpec.l2CacheSpec.l2CacheBackend"]
