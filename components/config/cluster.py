"""``hyperpod-inference:cluster`` — the EKS control plane and the HyperPod instance groups that join it.

Every version pin of this layer (Kubernetes, the core EKS add-ons, the HyperPod dependencies chart) has
its default here and only here; the components read them from the validated config.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from .base import ConfigIssue, Model
from .checks import cross_check
from .regions import az_id_in_region, az_id_prefix, hyperpod_instance_types, hyperpod_regions

if TYPE_CHECKING:
    from .stack import StackConfig

GroupName = Annotated[
    str, Field(pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$", description="HyperPod instance group name")
]
AddonPin = Annotated[str, Field(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")]

# Instance families with GPUs / accelerators: deep health checks default on, hyperthreading off.
ACCELERATED_FAMILIES = ("p", "g", "trn", "inf")
LogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
CONTROL_PLANE_LOG_TYPES: tuple[LogType, ...] = ("api", "audit", "authenticator", "controllerManager", "scheduler")
# aws/sagemaker-hyperpod-cli commit whose helm_chart/HyperPodHelmChart is installed (see README).
HYPERPOD_CLI_COMMIT = "1504d53b28a6de4449c0fcdf9d56b8c87f28283f"


def is_accelerated(instance_type: str) -> bool:
    """``ml.p5.48xlarge`` / ``ml.p6-b200.48xlarge`` -> True, ``ml.m5.2xlarge`` -> False."""
    family = instance_type.split(".")[1] if instance_type.count(".") >= 2 else ""
    head = ""
    for ch in family:
        if not ch.isalpha():
            break
        head += ch
    return head in ACCELERATED_FAMILIES


class Taint(Model):
    key: str = Field(min_length=1)
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class InstanceGroup(Model):
    """One HyperPod instance group (``ClusterInstanceGroup``)."""

    name: GroupName
    instance_type: str = Field(
        pattern=r"^ml\.[a-z0-9-]+\.[a-z0-9]+$", description="HyperPod instance type, e.g. ml.p5.48xlarge"
    )
    instance_count: int = Field(ge=0, description="Number of instances (0 keeps the group defined but empty).")
    availability_zone_id: str | None = Field(
        default=None, description="AZ ID whose private subnet the group uses; default: the first network AZ ID."
    )
    threads_per_core: Literal[1, 2] = Field(
        default=1, description="1 disables hyperthreading (recommended for GPU nodes)."
    )
    ebs_volume_size_gb: int = Field(default=500, ge=1, le=16384, description="Extra EBS volume per instance, GiB.")
    on_start_deep_health_checks: list[Literal["InstanceStress", "InstanceConnectivity"]] | None = Field(
        default=None, description="Deep health checks on start; default both for accelerated groups, none otherwise."
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Kubernetes labels on the group's nodes.")
    taints: list[Taint] = Field(default_factory=list, description="Kubernetes taints on the group's nodes.")
    training_plan_arn: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:training-plan/[a-zA-Z0-9-]+$"
    )

    @property
    def accelerated(self) -> bool:
        return is_accelerated(self.instance_type)

    @property
    def deep_health_checks(self) -> list[str]:
        """The checks to run on start: as configured, else both for accelerated groups and none otherwise."""
        if self.on_start_deep_health_checks is not None:
            return list(self.on_start_deep_health_checks)
        return ["InstanceStress", "InstanceConnectivity"] if self.accelerated else []


class AddonVersions(Model):
    """Pinned versions of the core EKS add-ons (defaults match Kubernetes 1.33)."""

    vpc_cni: AddonPin = Field(default="v1.20.0-eksbuild.1", description="vpc-cni add-on version.")
    kube_proxy: AddonPin = Field(
        default="v1.33.0-eksbuild.2", description="kube-proxy add-on version; its minor must equal kubernetesVersion."
    )
    coredns: AddonPin = Field(default="v1.12.1-eksbuild.2", description="coredns add-on version.")
    pod_identity_agent: AddonPin = Field(default="v1.3.7-eksbuild.2", description="eks-pod-identity-agent version.")


class HyperPodDependenciesConfig(Model):
    """The HyperPod dependencies Helm chart (health-monitoring agent, device plugins, deep health checks, ...).

    The chart is not published to a Helm repository; AWS documents installing it from a checkout of
    aws/sagemaker-hyperpod-cli. ``chartPath`` must point at ``helm_chart/HyperPodHelmChart`` of a checkout of
    ``gitCommit`` with ``helm dependency update`` run (see README).
    """

    enabled: bool = True
    git_commit: str = Field(
        default=HYPERPOD_CLI_COMMIT, pattern=r"^[0-9a-f]{40}$", description="Pinned aws/sagemaker-hyperpod-cli commit."
    )
    chart_path: str = Field(
        default="vendor/sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart",
        min_length=1,
        description="Local path of the chart in a checkout of gitCommit (relative to the project).",
    )


class ClusterConfig(Model):
    existing: ExistingClusters | None = Field(
        default=None,
        description="Adopt an existing EKS cluster (and optionally its HyperPod cluster) instead of creating them.",
    )
    kubernetes_version: str = Field(default="1.33", pattern=r"^1\.[0-9]{2}$")
    endpoint_public_access_cidrs: list[ipaddress.IPv4Network] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public EKS API endpoint; empty keeps the endpoint private only. "
        "Not allowed in prod (the endpoint is private there).",
    )
    service_ipv4_cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("172.20.0.0/16"), description="Kubernetes service CIDR; must not overlap the VPC."
    )
    node_provisioning_mode: Literal["Continuous"] | None = None
    fsx_enabled: bool = Field(
        default=False, description="Open the FSx for Lustre ports (988, 1018-1023) on the node SG."
    )
    instance_groups: list[InstanceGroup] = Field(min_length=1)
    addons: AddonVersions = Field(default_factory=AddonVersions, description="Pinned core EKS add-on versions.")
    control_plane_log_types: list[LogType] = Field(
        default_factory=lambda: list(CONTROL_PLANE_LOG_TYPES), description="EKS control-plane log types to enable."
    )
    hyperpod_dependencies: HyperPodDependenciesConfig = Field(default_factory=HyperPodDependenciesConfig)
    tiered_storage_memory_percentage: int = Field(
        default=20,
        ge=1,
        le=100,
        description="Share of instance memory HyperPod tiered storage may use (kvCache.l2Backend: tieredstorage).",
    )


def _cluster_checks(cfg: StackConfig) -> Iterable[ConfigIssue]:
    cluster = cfg.cluster
    region = cfg.region
    offered = hyperpod_instance_types(region)
    prefix = az_id_prefix(region)
    if not offered:
        yield ConfigIssue(
            "aws:region",
            f"SageMaker HyperPod is not offered in {region}; regions with HyperPod: {', '.join(hyperpod_regions())}",
        )
    if prefix is None:
        yield ConfigIssue("aws:region", f"no AZ-ID prefix known for {region} (components/config/regions.py)")
    else:
        for i, az in enumerate(cfg.network.az_ids):
            if not az_id_in_region(az, region):
                key = "network.existing.privateSubnets" if cfg.network.existing else f"network.availabilityZoneIds[{i}]"
                yield ConfigIssue(key, f"AZ ID {az} is not in {region}; AZ IDs there look like {prefix}-az1")

    first_seen: dict[str, int] = {}
    for i, group in enumerate(cluster.instance_groups):
        base = f"cluster.instanceGroups[{i}]"
        if group.name in first_seen:
            yield ConfigIssue(
                f"{base}.name",
                f"instance group name {group.name!r} is already used by cluster.instanceGroups[{first_seen[group.name]}];"
                " group names must be unique",
            )
        first_seen.setdefault(group.name, i)
        if offered and group.instance_type not in offered:
            yield ConfigIssue(
                f"{base}.instanceType",
                f"{group.instance_type} is not a HyperPod instance type in {region} "
                f"(cfn-lint region data; e.g. {', '.join(sorted(t for t in offered if t.startswith('ml.p5')) or sorted(offered)[:3])})",
            )
        group_az = group.availability_zone_id
        if group_az is not None:
            if prefix is not None and not az_id_in_region(group_az, region):
                yield ConfigIssue(
                    f"{base}.availabilityZoneId",
                    f"AZ ID {group_az} is not in {region}; AZ IDs there look like {prefix}-az1",
                )
            elif group_az not in cfg.network.az_ids:
                yield ConfigIssue(
                    f"{base}.availabilityZoneId",
                    f"AZ ID {group_az} has no private subnet in this stack; allowed: {', '.join(cfg.network.az_ids)}",
                )
        if group.training_plan_arn and f":sagemaker:{region}:" not in group.training_plan_arn:
            yield ConfigIssue(f"{base}.trainingPlanArn", f"the training plan must be in the stack's region {region}")

    for i, cidr in enumerate(cluster.endpoint_public_access_cidrs):
        key = f"cluster.endpointPublicAccessCidrs[{i}]"
        if cidr.prefixlen == 0:
            yield ConfigIssue(
                key, f"{cidr} opens the EKS API endpoint to the internet; list the operator networks' CIDRs instead"
            )
        elif cfg.is_prod:
            yield ConfigIssue(
                key, "prod keeps the EKS API endpoint private (public access off); remove endpointPublicAccessCidrs"
            )

    proxy_minor = ".".join(cluster.addons.kube_proxy.lstrip("v").split(".")[:2])
    if proxy_minor != cluster.kubernetes_version:
        yield ConfigIssue(
            "cluster.addons.kubeProxy",
            f"kube-proxy {cluster.addons.kube_proxy} does not match kubernetesVersion {cluster.kubernetes_version}; "
            f"use a v{cluster.kubernetes_version}.x-eksbuild.N version",
        )


cross_check(_cluster_checks)


# --- adoption: an existing EKS cluster, an existing HyperPod cluster ---------------------------------------
#
# Source for the compatibility facts: SageMaker developer guide, "Getting started with Amazon EKS support in
# SageMaker HyperPod" (docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html,
# Requirements 1 and 2): authentication modes API and API_AND_CONFIG_MAP; Kubernetes 1.28 to 1.34 (the list
# grows with EKS releases; the docs.amazonaws.cn copy of the page lists 1.34).

HYPERPOD_AUTHENTICATION_MODES = ("API", "API_AND_CONFIG_MAP")
HYPERPOD_KUBERNETES_VERSIONS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
EXISTING_EKS_KEY = "cluster.existing.eksClusterName"
EXISTING_HYPERPOD_KEY = "cluster.existing.hyperpodClusterArn"
# `cluster` keys that configure the EKS cluster this stack creates: not applied to an adopted one.
EKS_CREATION_KEYS = {
    "kubernetes_version": "kubernetesVersion",
    "endpoint_public_access_cidrs": "endpointPublicAccessCidrs",
    "service_ipv4_cidr": "serviceIpv4Cidr",
    "addons": "addons",
    "control_plane_log_types": "controlPlaneLogTypes",
}
# `cluster` keys that configure the HyperPod cluster (or its node SG) this stack creates.
HYPERPOD_CREATION_KEYS = {
    "node_provisioning_mode": "nodeProvisioningMode",
    "fsx_enabled": "fsxEnabled",
    "hyperpod_dependencies": "hyperpodDependencies",
    "tiered_storage_memory_percentage": "tieredStorageMemoryPercentage",
}
# Instance-group keys only a create applies; an adopted group declares name, type, count, labels, taints (and AZ).
GROUP_CREATION_KEYS = {
    "threads_per_core": "threadsPerCore",
    "ebs_volume_size_gb": "ebsVolumeSizeGb",
    "on_start_deep_health_checks": "onStartDeepHealthChecks",
    "training_plan_arn": "trainingPlanArn",
}


class ExistingClusters(Model):
    """Clusters this stack adopts: an EKS cluster by name, and optionally the HyperPod cluster it orchestrates.

    With only ``eksClusterName`` the stack reads that cluster and creates the HyperPod cluster in it (with its
    dependencies chart); with ``hyperpodClusterArn`` as well it creates nothing of the cluster layer and
    ``cluster.instanceGroups`` *declares* the existing groups (preflight compares them with the real ones).
    """

    eks_cluster_name: str = Field(
        pattern=r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$", description="Name of the EKS cluster to adopt (same region)."
    )
    hyperpod_cluster_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:cluster/[a-z0-9]{12}$",
        description="ARN of the HyperPod cluster to adopt; it must be orchestrated by eksClusterName.",
    )
    create_oidc_provider: bool = Field(
        default=False,
        description="Create the IAM OIDC provider for the cluster's issuer (IRSA); leave false when it exists "
        "(preflight checks which).",
    )
    node_security_group_id: str | None = Field(
        default=None,
        pattern=r"^sg-[0-9a-f]{8,17}$",
        description="Security group of the adopted HyperPod nodes; needed only when this stack creates the Redis "
        "L2 cache (its only client SG).",
    )

    @property
    def adopts_hyperpod(self) -> bool:
        return self.hyperpod_cluster_arn is not None


ClusterConfig.model_rebuild()  # `existing` refers to ExistingClusters, defined after ClusterConfig


def eks_compatibility_issues(name: str, authentication_mode: str | None, version: str | None) -> list[ConfigIssue]:
    """Why an EKS cluster read from AWS cannot orchestrate HyperPod (the program and preflight share this)."""
    out: list[ConfigIssue] = []
    if authentication_mode not in HYPERPOD_AUTHENTICATION_MODES:
        out.append(
            ConfigIssue(
                EXISTING_EKS_KEY,
                f"EKS cluster {name} uses authentication mode {authentication_mode or 'unknown'}; HyperPod supports "
                f"{' and '.join(HYPERPOD_AUTHENTICATION_MODES)} only (switch with `aws eks update-cluster-config "
                f"--name {name} --access-config authenticationMode=API_AND_CONFIG_MAP`; it cannot be switched back)",
            )
        )
    if version is not None and version not in HYPERPOD_KUBERNETES_VERSIONS:
        out.append(
            ConfigIssue(
                EXISTING_EKS_KEY,
                f"EKS cluster {name} runs Kubernetes {version}; HyperPod supports "
                f"{', '.join(HYPERPOD_KUBERNETES_VERSIONS)}",
            )
        )
    return out


def _adoption_checks(cfg: StackConfig) -> Iterable[ConfigIssue]:
    existing = cfg.cluster.existing
    if existing is None:
        return
    cluster = cfg.cluster
    if cfg.network.existing is None:
        yield ConfigIssue(
            "cluster.existing",
            "an existing EKS cluster runs in an existing VPC: set network.existing to that VPC and its subnets "
            "(a new VPC would not reach the cluster)",
        )
    for attr, key in EKS_CREATION_KEYS.items():
        if attr in cluster.model_fields_set:
            yield ConfigIssue(
                f"cluster.{key}",
                "configures the EKS cluster this stack creates; with cluster.existing the cluster is adopted and its "
                "own settings are read from it: remove it",
            )
    if existing.hyperpod_cluster_arn is not None:
        arn_region = existing.hyperpod_cluster_arn.split(":")[3]
        if arn_region != cfg.region:
            yield ConfigIssue(EXISTING_HYPERPOD_KEY, f"the cluster is in {arn_region}; the stack is in {cfg.region}")
        for attr, key in HYPERPOD_CREATION_KEYS.items():
            if attr in cluster.model_fields_set:
                yield ConfigIssue(
                    f"cluster.{key}",
                    "configures the HyperPod cluster this stack creates; with cluster.existing.hyperpodClusterArn it "
                    "is adopted: remove it",
                )
        for i, group in enumerate(cluster.instance_groups):
            for attr, key in GROUP_CREATION_KEYS.items():
                if attr in group.model_fields_set:
                    yield ConfigIssue(
                        f"cluster.instanceGroups[{i}].{key}",
                        "only applies when this stack creates the group; an adopted cluster's groups declare "
                        "name, instanceType, instanceCount, labels, taints (and availabilityZoneId): remove it",
                    )
        if cfg.kv_cache.creates_redis and existing.node_security_group_id is None:
            yield ConfigIssue(
                "cluster.existing.nodeSecurityGroupId",
                "required when this stack creates the Redis L2 cache on an adopted HyperPod cluster: the cache admits "
                "the nodes' security group only (DescribeCluster InstanceGroups[].OverrideVpcConfig or VpcConfig "
                "SecurityGroupIds); or use kvCache.redis.external",
            )
    elif existing.node_security_group_id is not None:
        yield ConfigIssue(
            "cluster.existing.nodeSecurityGroupId",
            "only used with hyperpodClusterArn: this stack creates the HyperPod nodes' security group itself",
        )


cross_check(_adoption_checks)
