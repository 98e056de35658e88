"""``hyperpod-inference:cluster`` — the EKS control plane and the HyperPod instance groups that join it.

Every version pin of this layer (Kubernetes, the core EKS add-ons, the HyperPod dependencies chart) has
its default here and only here; the components read them from the validated config.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Literal, Protocol

from pydantic import Field, field_validator

from policies.baselines import open_to_world
from policies.cluster_versions import (
    ACCEPT_UNLISTED_KEY,
    HYPERPOD_SUPPORTED_VERSIONS,
    HYPERPOD_UNLISTED_VERSIONS,
    version_problem,
)

from .access import AccessEntryConfig
from .api_bounds import API_BOUNDS
from .base import ConfigIssue, Model
from .checks import Check
from .context import ValidationContext
from .health_checks import default_checks
from .kvcache import KvCacheConfig
from .network import NetworkConfig, plan_subnets
from .node_software import IMAGE_RELEASE_PATTERN, SoftwareUpdates
from .regions import az_id_in_region, az_id_prefix, hyperpod_instance_types, hyperpod_regions


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def region(self) -> str: ...
    @property
    def is_prod(self) -> bool: ...
    @property
    def network(self) -> NetworkConfig: ...
    @property
    def kv_cache(self) -> KvCacheConfig: ...
    @property
    def cluster(self) -> ClusterConfig: ...
    @property
    def context(self) -> ValidationContext: ...


GroupName = Annotated[
    str, Field(pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$", description="HyperPod instance group name")
]
AddonPin = Annotated[str, Field(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Kubernetes minor the EKS cluster defaults to: the newest a retrievable AWS page lists as HyperPod-supported (the
# page's URL and sentence are in policies/cluster_versions.py). 1.35 is listed by no retrievable page: it needs
# cluster.acceptUnlistedKubernetesVersion (and then a v1.35 kube-proxy pin). 1.34 leaves EKS standard support on
# 2026-12-02 (extended support, billed extra, until 2027-12-02); the advisory policy eks-kubernetes-standard-support
# says so from that day.
DEFAULT_KUBERNETES_VERSION = "1.34"
VENDOR_COMMAND = "python -m tools.fetch.chart"

# Instance families with GPUs / accelerators: deep health checks default on, hyperthreading off.
ACCELERATED_FAMILIES = ("p", "g", "trn", "inf")
LogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
CONTROL_PLANE_LOG_TYPES: tuple[LogType, ...] = ("api", "audit", "authenticator", "controllerManager", "scheduler")
# aws/sagemaker-hyperpod-cli commit whose helm_chart/HyperPodHelmChart is installed: the v3.9.0 release tag
# (docs/cluster.md, "The HyperPod dependencies chart"). Only commits in REVIEWED_CHART_COMMITS may be pinned.
HYPERPOD_CLI_COMMIT = "b01cf90676553a711ab1a8ac51422adbb09aef6b"
HYPERPOD_CLI_REPO_URL = "https://github.com/aws/sagemaker-hyperpod-cli.git"
# Commits of aws/sagemaker-hyperpod-cli that were checked to be on `main` (or a release tag), with the proof.
# 1504d53b28a6de4449c0fcdf9d56b8c87f28283f (the previous pin) is GitHub's test-merge of the unmerged PR #276
# (refs/pull/276/merge): `git merge-base --is-ancestor 1504d53b… main` exits 1 and no branch or tag contains it.
REVIEWED_CHART_COMMITS: dict[str, str] = {
    "b01cf90676553a711ab1a8ac51422adbb09aef6b": (
        "tag v3.9.0 'Release v3.9.0 (#429)', 2026-06-11; `git merge-base --is-ancestor b01cf906 "
        "011ca927123e02b35a399935bbb3ab1905fe33c7` (main, 2026-06-22) exits 0 in a fetched snapshot"
    ),
    "011ca927123e02b35a399935bbb3ab1905fe33c7": (
        "main, 2026-06-22 'Add space getting-started reference (#432)'; differs from v3.9.0 in helm_chart/ only by "
        "the inference-operator sub-chart (2.2.2), which this package disables"
    ),
}


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
    instance_count: int = Field(
        **API_BOUNDS["cluster.instanceGroups[].instanceCount"].field(),
        description="Number of instances (0 keeps the group defined but empty; CreateCluster allows at most 6758).",
    )
    availability_zone_id: str | None = Field(
        default=None, description="AZ ID whose private subnet the group uses; default: the first network AZ ID."
    )
    min_instance_count: int | None = Field(
        default=None,
        ge=0,
        le=6758,
        description="Partial provisioning (CreateCluster MinInstanceCount): the group is InService once this many "
        "instances run (the rest keep coming; below it after 3 hours the group rolls back), and the node wait of "
        "`up` waits for this many. Default: all of instanceCount.",
    )
    threads_per_core: Literal[1, 2] = Field(
        default=1, description="1 disables hyperthreading (recommended for GPU nodes)."
    )
    ebs_volume_size_gb: int = Field(
        default=500,
        **API_BOUNDS["cluster.instanceGroups[].ebsVolumeSizeGb"].field(),
        description="Extra EBS volume per instance, GiB.",
    )
    role: Literal["inference", "training", "system"] | None = Field(
        default=None,
        description="What the group runs: sets its default deep health checks (health_checks.py); default: "
        "inference for GPU/Trainium/Inferentia types, system otherwise.",
    )
    on_start_deep_health_checks: list[Literal["InstanceStress", "InstanceConnectivity"]] | None = Field(
        default=None,
        description="Deep health checks on start; default: by role, of the checks the group supports (inference: "
        "InstanceStress; training: both; GPU/Trainium types only; InstanceConnectivity also needs EFA and >= 2).",
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Kubernetes labels on the group's nodes.")
    taints: list[Taint] = Field(default_factory=list, description="Kubernetes taints on the group's nodes.")
    training_plan_arn: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:training-plan/[a-zA-Z0-9-]+$"
    )
    image_release_version: str | None = Field(
        default=None,
        pattern=IMAGE_RELEASE_PATTERN,
        max_length=64,
        description="HyperPod AMI release (MAJOR.MINOR.PATCH) or `latest`; required in prod (node_software.py).",
    )
    software_updates: SoftwareUpdates = Field(
        default_factory=SoftwareUpdates,
        description="Rolling DeploymentConfig of the group's software updates, schedule and auto-patching.",
    )

    @property
    def accelerated(self) -> bool:
        return is_accelerated(self.instance_type)

    @property
    def effective_role(self) -> str:
        """``role`` as written, else ``inference`` for an accelerated type and ``system`` otherwise."""
        return self.role or ("inference" if self.accelerated else "system")

    @property
    def deep_health_checks(self) -> list[str]:
        """The checks to run on start: as configured, else the role's default of those the group supports."""
        if self.on_start_deep_health_checks is not None:
            return list(self.on_start_deep_health_checks)
        return default_checks(self.effective_role, self.instance_type, self.instance_count)


class AddonVersions(Model):
    """Pinned versions of the core EKS add-ons (defaults for Kubernetes 1.34, the default kubernetesVersion).

    kube-proxy follows the Kubernetes minor (checked below). ``v1.34.0-eksbuild.2`` is the 1.34 entry of the
    kube-proxy version map of aws-quickstart/cdk-eks-blueprints ``lib/addons/kube-proxy`` (stored index copy, not
    tied to a commit); for 1.35 the same map gives ``v1.35.0-eksbuild.2``. CoreDNS ``v1.13.2-eksbuild.1``: stored add-on
    version tables map v1.13.2 builds to 1.33, 1.34 and 1.35 alike; the exact build for 1.34 is UNCONFIRMED [addon-builds-in-region]. The stored
    copies of the EKS user guide's add-on tables stop at 1.33, so `python -m tools.preflight.regional` (DescribeAddonVersions)
    is what confirms both per region. vpc-cni and eks-pod-identity-agent builds are not tied to a Kubernetes minor.
    """

    vpc_cni: AddonPin = Field(default="v1.20.0-eksbuild.1", description="vpc-cni add-on version.")
    kube_proxy: AddonPin = Field(
        default="v1.34.0-eksbuild.2", description="kube-proxy add-on version; its minor must equal kubernetesVersion."
    )
    coredns: AddonPin = Field(
        default="v1.13.2-eksbuild.1",
        description="coredns add-on version (created after the HyperPod cluster, which provides its nodes).",
    )
    pod_identity_agent: AddonPin = Field(default="v1.3.7-eksbuild.2", description="eks-pod-identity-agent version.")


class HyperPodDependenciesConfig(Model):
    """The HyperPod dependencies Helm chart (health-monitoring agent, device plugins, deep health checks, ...).

    The chart is not published to a Helm repository; AWS documents installing it from a checkout of
    aws/sagemaker-hyperpod-cli. ``python -m tools.fetch.chart`` places exactly ``gitCommit`` at the default
    ``chartPath``. Sub-charts only training needs are off by default (docs/cluster.md lists what stays on and why);
    each has its own key to turn it back on.
    """

    enabled: bool = True
    git_commit: str = Field(
        default=HYPERPOD_CLI_COMMIT,
        pattern=r"^[0-9a-f]{40}$",
        description="Pinned aws/sagemaker-hyperpod-cli commit; must be one of the reviewed commits on main or a tag.",
    )

    @field_validator("git_commit")
    @classmethod
    def _reviewed(cls, value: str) -> str:
        if value not in REVIEWED_CHART_COMMITS:
            raise ValueError(
                f"{value} is not a reviewed aws/sagemaker-hyperpod-cli commit on main or a release tag; reviewed: "
                f"{', '.join(REVIEWED_CHART_COMMITS)} (add one with its `git merge-base --is-ancestor` proof to "
                "REVIEWED_CHART_COMMITS in components/config/cluster.py)"
            )
        return value

    chart_path: str = Field(
        default="vendor/sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart",
        min_length=1,
        description="Local path of the chart in a checkout of gitCommit (relative to the project); "
        "`python -m tools.fetch.chart` fills the default path.",
    )
    training_operators: bool = Field(
        default=False, description="Install the chart's Kubeflow training operator (trainingOperators); training only."
    )
    mpi_operator: bool = Field(default=False, description="Install the chart's Kubeflow MPI operator; training only.")
    job_auto_restart: bool = Field(
        default=False,
        description="Install the chart's job-auto-restart RBAC (PyTorchJob auto-resume); training only.",
    )


Sg = Annotated[str, Field(pattern=r"^sg-[0-9a-f]{8,17}$", description="A security group id")]


class DeployerRoute(Model):
    """A route to the runner's network, created in the route table of each of the control plane's own subnets.

    With public access off, the control plane answers from ENIs in the private subnets, so their route tables must
    send the runner's CIDR to where it lives; the NAT gateway's default route cannot carry the replies (deploy-readiness
    trap 11). A VPC created in this ``pulumi up`` has no such route unless the stack creates it, and no attachment or
    peering for it either, so the stack creates that too:

    * ``transitGatewayId``: a VPC attachment of the private subnets (one per AZ ID) to that transit gateway, and the
      route to it. The transit gateway's route tables (association, propagation, the route back to this VPC) are the
      transit gateway owner's; ``python -m tools.preflight.regional`` checks that the gateway exists and is available.
    * ``peerVpcId``: a peering connection to that VPC (same account and region, accepted by this stack) and the
      route over it. The route back in the peer VPC's tables is its owner's.
    """

    cidr: ipaddress.IPv4Network = Field(description="The runner's network (private CIDR outside the VPC).")
    transit_gateway_id: str | None = Field(
        default=None, pattern=r"^tgw-[0-9a-f]{8,17}$", description="Route through this transit gateway (attached here)."
    )
    peer_vpc_id: str | None = Field(
        default=None,
        pattern=r"^vpc-[0-9a-f]{8,17}$",
        description="Route through a peering connection to this VPC (same account and region; created here).",
    )


class DeployerAccess(Model):
    """How the machine that runs `pulumi up` reaches the EKS API server (every Kubernetes object needs it).

    Pulumi creates Kubernetes objects itself (pulumi-eks's aws-auth ConfigMap, the Helm release, the custom
    resources), so its host must reach the API: "with public access off, the API server can only receive requests
    from within the cluster VPC" and the cluster security group must admit it on 443 (EKS API VpcConfigRequest;
    EKS user guide cluster-endpoint, "Accessing a private only API server"). Declare one of:

    * ``securityGroupIds``: the security group of a runner inside the VPC (or a peered VPC in the region);
    * ``cidrs``: private CIDRs of such a runner (in the VPC, or a network routed into it: ``routes`` creates the
      routes back to it in a VPC this stack creates);
    * ``publicCidrs``: a short list of public CIDRs of the deploy principal; turns the public endpoint on, limited
      to them (plus ``endpointPublicAccessCidrs``). Not allowed in prod, where the endpoint stays private.
    """

    security_group_ids: list[Sg] = Field(
        default_factory=list, description="Security groups of an in-VPC runner; the cluster SG admits them on 443."
    )
    cidrs: list[ipaddress.IPv4Network] = Field(
        default_factory=list, description="Private CIDRs of an in-VPC (or routed) runner; admitted on 443."
    )
    public_cidrs: list[ipaddress.IPv4Network] = Field(
        default_factory=list,
        max_length=10,
        description="Public CIDRs of the deploy principal for the public endpoint (not in prod).",
    )
    routes: list[DeployerRoute] = Field(
        default_factory=list,
        description="Routes from the private subnets to the runner's network (transitGatewayId or peerVpcId), "
        "created before the EKS cluster; a VPC this stack creates has no other way back to cidrs outside it.",
    )

    @property
    def in_vpc(self) -> bool:
        return bool(self.security_group_ids or self.cidrs)

    @property
    def declared(self) -> bool:
        return self.in_vpc or bool(self.public_cidrs)


class ClusterConfig(Model):
    existing: ExistingClusters | None = Field(
        default=None,
        description="Adopt an existing EKS cluster (and optionally its HyperPod cluster) instead of creating them.",
    )
    access_entries: list[AccessEntryConfig] = Field(
        default_factory=list,
        description="People's IAM principals with EKS access policies (cluster or namespace scope) and Kubernetes "
        "groups; prod needs a breakGlass entry (components/config/access.py).",
    )
    kubernetes_version: str = Field(
        default=DEFAULT_KUBERNETES_VERSION,
        pattern=r"^1\.[0-9]{2}$",
        description="Kubernetes minor of the EKS cluster; one HyperPod supports (policies/cluster_versions.py).",
    )
    accept_unlisted_kubernetes_version: bool = Field(
        default=False,
        description="Allow a kubernetesVersion no retrievable AWS page lists as HyperPod-supported ("
        + ", ".join(HYPERPOD_UNLISTED_VERSIONS)
        + "); the policy eks-kubernetes-version-listed reports it as advisory.",
    )
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
    deployer_access: DeployerAccess | None = Field(
        default=None,
        description="How `pulumi up` reaches the EKS API (required: every stack creates Kubernetes objects).",
    )
    tiered_storage_memory_percentage: int = Field(
        default=20,
        ge=1,
        le=100,
        description="Share of instance memory HyperPod tiered storage may use (kvCache.l2Backend: tieredstorage).",
    )


def _cluster_checks(cfg: StackView) -> Iterable[ConfigIssue]:
    cluster = cfg.cluster
    region = cfg.region
    if cfg.network.vpc_cidr.overlaps(cluster.service_ipv4_cidr):
        yield ConfigIssue(
            "cluster.serviceIpv4Cidr",
            f"{cluster.service_ipv4_cidr} overlaps the VPC CIDR {cfg.network.vpc_cidr}; choose a range outside the VPC",
        )
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
        if group.min_instance_count is not None and group.min_instance_count > group.instance_count:
            yield ConfigIssue(
                f"{base}.minInstanceCount",
                f"{group.min_instance_count} is more than instanceCount {group.instance_count}; allowed: 0 to "
                f"{group.instance_count}",
            )
        if group.training_plan_arn and f":sagemaker:{region}:" not in group.training_plan_arn:
            yield ConfigIssue(f"{base}.trainingPlanArn", f"the training plan must be in the stack's region {region}")

    for i, cidr in enumerate(cluster.endpoint_public_access_cidrs):
        key = f"cluster.endpointPublicAccessCidrs[{i}]"
        if open_to_world([cidr]):
            yield ConfigIssue(
                key, f"{cidr} opens the EKS API endpoint to the internet; list the operator networks' CIDRs instead"
            )
        elif cfg.is_prod:
            yield ConfigIssue(
                key, "prod keeps the EKS API endpoint private (public access off); remove endpointPublicAccessCidrs"
            )

    on = cfg.context.today  # today or HPI_AS_OF, read by the loader (components/config/context.py)
    if on is None:  # a malformed HPI_AS_OF: the version cannot be judged, say why (no traceback)
        yield ConfigIssue(
            "cluster.kubernetesVersion", f"cannot be checked against the support calendar: {cfg.context.today_problem}"
        )
    else:
        problem = version_problem(
            cluster.kubernetes_version, on, accept_unlisted=cluster.accept_unlisted_kubernetes_version
        )
        if problem is not None:
            yield ConfigIssue("cluster.kubernetesVersion", problem)
        else:
            yield from _kube_proxy_matches(cluster)

    if cluster.existing is None:  # an adopted cluster's API access is its owner's (docs/adoption.md)
        yield from _deployer_access_issues(cfg)


def _kube_proxy_matches(cluster: ClusterConfig) -> Iterable[ConfigIssue]:
    """kube-proxy follows the Kubernetes minor. Reported at the key the user wrote: ``addons.kubeProxy`` when it is
    set, else ``kubernetesVersion`` (the default kube-proxy build belongs to the default version)."""
    proxy_minor = ".".join(cluster.addons.kube_proxy.lstrip("v").split(".")[:2])
    if proxy_minor == cluster.kubernetes_version:
        return
    written = "addons" in cluster.model_fields_set and "kube_proxy" in cluster.addons.model_fields_set
    if written:
        yield ConfigIssue(
            "cluster.addons.kubeProxy",
            f"kube-proxy {cluster.addons.kube_proxy} does not match kubernetesVersion {cluster.kubernetes_version}; "
            f"use a v{cluster.kubernetes_version}.x-eksbuild.N version",
        )
    else:
        yield ConfigIssue(
            "cluster.kubernetesVersion",
            f"Kubernetes {cluster.kubernetes_version} needs a kube-proxy v{cluster.kubernetes_version}.x-eksbuild.N; "
            f"the default ({cluster.addons.kube_proxy}) is for {DEFAULT_KUBERNETES_VERSION}: set cluster.addons."
            f"kubeProxy (and coredns) to builds for {cluster.kubernetes_version} (python -m tools.preflight.regional lists them)",
        )


def _deployer_access_issues(cfg: StackView) -> Iterable[ConfigIssue]:
    """A deployer path must be declared, and it must keep the API private to the internet (prod: no public access)."""
    access = cfg.cluster.deployer_access
    key = "cluster.deployerAccess"
    if access is None or not access.declared:
        yield ConfigIssue(
            key,
            "no way for `pulumi up` to reach the EKS API: Pulumi itself creates Kubernetes objects (pulumi-eks's "
            "aws-auth ConfigMap, the HyperPod dependencies chart, the endpoints), so declare the runner: "
            "securityGroupIds or cidrs of a runner inside the VPC"
            + ("" if cfg.is_prod else ", or publicCidrs of the deploy principal")
            + " (docs/cluster.md, 'Reaching the API')",
        )
        return
    for i, cidr in enumerate(access.cidrs):
        where = f"{key}.cidrs[{i}]"
        if not _vpc_range(cidr):
            yield ConfigIssue(
                where, f"{cidr} is not a private range; cidrs are an in-VPC runner's addresses (publicCidrs are public)"
            )
        elif cidr.overlaps(cfg.cluster.service_ipv4_cidr):
            yield ConfigIssue(where, f"{cidr} overlaps the Kubernetes service CIDR {cfg.cluster.service_ipv4_cidr}")
    yield from _deployer_route_issues(cfg)
    for i, cidr in enumerate(access.public_cidrs):
        where = f"{key}.publicCidrs[{i}]"
        if cfg.is_prod:
            yield ConfigIssue(
                where,
                "prod keeps the EKS API endpoint private (public access off); declare an in-VPC runner under "
                "securityGroupIds or cidrs instead",
            )
        elif open_to_world([cidr]):
            yield ConfigIssue(where, f"{cidr} opens the EKS API endpoint to the internet; list the deployer's CIDRs")
        elif _vpc_range(cidr):
            yield ConfigIssue(
                where, f"{cidr} is not a public range; an in-VPC runner's private addresses go under cidrs"
            )


def _deployer_route_issues(cfg: StackView) -> Iterable[ConfigIssue]:
    """Each route: one target, a private CIDR outside the VPC and the service CIDR, in a VPC this stack creates."""
    access = cfg.cluster.deployer_access
    if access is None:
        return
    vpc = cfg.network.vpc_cidr
    if access.routes and cfg.network.existing is None:
        try:  # the routes go into the control plane's own subnets only (deployer routes)
            plan_subnets(cfg.network, control_plane=True)
        except ValueError as err:
            yield ConfigIssue("cluster.deployerAccess.routes", str(err))
    for i, route in enumerate(access.routes):
        where = f"cluster.deployerAccess.routes[{i}]"
        if cfg.network.existing is not None:
            yield ConfigIssue(
                where,
                "routes are created in the route tables of a VPC this stack creates; with network.existing the VPC's "
                "route tables are its owner's: remove routes (`python -m tools.preflight.regional` checks that the private "
                "subnets' route tables send cidrs to a transit gateway, peering connection or VPN)",
            )
            continue
        targets = [
            k for k, v in (("transitGatewayId", route.transit_gateway_id), ("peerVpcId", route.peer_vpc_id)) if v
        ]
        if len(targets) != 1:
            yield ConfigIssue(
                where,
                f"set exactly one of transitGatewayId or peerVpcId (got {', '.join(targets) or 'neither'}); a NAT or "
                "internet gateway cannot carry the control plane's replies to a private network",
            )
        if not _vpc_range(route.cidr):
            yield ConfigIssue(
                f"{where}.cidr", f"{route.cidr} is not a private range; routes lead to the runner's private network"
            )
        elif route.cidr.overlaps(vpc):
            yield ConfigIssue(
                f"{where}.cidr",
                f"{route.cidr} overlaps the VPC CIDR {vpc}; the VPC's own range needs no route (the local route covers it)",
            )
        elif route.cidr.overlaps(cfg.cluster.service_ipv4_cidr):
            yield ConfigIssue(
                f"{where}.cidr", f"{route.cidr} overlaps the Kubernetes service CIDR {cfg.cluster.service_ipv4_cidr}"
            )


# Ranges a VPC (and so an in-VPC runner) can use: RFC 1918 and the RFC 6598 shared space (VPC user guide, "VPC CIDR
# blocks"). Documentation ranges (RFC 5737) count as public here, so reference stacks can use them as examples.
VPC_RANGES = tuple(ipaddress.IPv4Network(c) for c in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))


def _vpc_range(cidr: ipaddress.IPv4Network) -> bool:
    return any(cidr.subnet_of(r) for r in VPC_RANGES)


def running_for_real() -> bool:
    """True under a real Pulumi engine (preview or up); False under mocks or with no Pulumi runtime at all."""
    from pulumi.runtime import settings
    from pulumi.runtime.mocks import MockMonitor

    monitor = settings.get_monitor()
    return monitor is not None and not isinstance(monitor, MockMonitor)


def vendored_commit(chart_dir: Path) -> str | None:
    """The commit checked out in the git work tree that holds ``chart_dir`` (detached HEAD), else None."""
    for parent in (chart_dir, *chart_dir.parents):
        head = parent / ".git" / "HEAD"
        if head.is_file():
            text = head.read_text(encoding="utf-8").strip()
            return text if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else None
        if parent == PROJECT_ROOT:
            break
    return None


def chart_issues(deps: HyperPodDependenciesConfig, root: Path = PROJECT_ROOT) -> list[ConfigIssue]:
    """The chart must be on disk at ``chartPath`` and be a checkout of exactly ``gitCommit``."""
    if not deps.enabled:
        return []
    key = "cluster.hyperpodDependencies.chartPath"
    chart_dir = Path(deps.chart_path)
    chart_dir = chart_dir if chart_dir.is_absolute() else root / chart_dir
    if not (chart_dir / "Chart.yaml").is_file():
        return [
            ConfigIssue(
                key,
                f"no Helm chart at {deps.chart_path}; run `{VENDOR_COMMAND}` to fetch aws/sagemaker-hyperpod-cli@"
                f"{deps.git_commit} into vendor/",
            )
        ]
    found = vendored_commit(chart_dir)
    if found != deps.git_commit:
        return [
            ConfigIssue(
                key,
                f"{deps.chart_path} is a checkout of {found or 'an unknown commit'}, not gitCommit {deps.git_commit}; "
                f"run `{VENDOR_COMMAND}`",
            )
        ]
    return []


# FSBP EKS.8 ("EKS clusters should have audit logging enabled") and the authenticator log (who the API server
# mapped each IAM principal to): what an incident needs; the other types stay the user's choice (issue 46.3).
REQUIRED_CONTROL_PLANE_LOGS: tuple[LogType, ...] = ("audit", "authenticator")


def _control_plane_logs(cfg: StackView) -> Iterable[ConfigIssue]:
    """Prod refuses a control-plane log list without audit and authenticator, the omitted key included (the
    default has both); staging and dev may turn them off."""
    if not cfg.is_prod:
        return
    missing = [t for t in REQUIRED_CONTROL_PLANE_LOGS if t not in cfg.cluster.control_plane_log_types]
    if missing:
        yield ConfigIssue(
            "cluster.controlPlaneLogTypes",
            f"prod needs the {' and '.join(missing)} log{'s' if len(missing) > 1 else ''} (FSBP EKS.8: audit; "
            f"authenticator: which IAM principal each request ran as); add {', '.join(missing)} "
            f"(allowed: {', '.join(CONTROL_PLANE_LOG_TYPES)})",
        )


# --- adoption: an existing EKS cluster, an existing HyperPod cluster ---------------------------------------
#
# Source for the compatibility facts: SageMaker developer guide, "Getting started with Amazon EKS support in
# SageMaker HyperPod" (docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html,
# Requirement 2): authentication modes API and API_AND_CONFIG_MAP. The Kubernetes versions HyperPod supports are
# the one table in policies/cluster_versions.py (same page, Requirement 1). Switching a cluster away from
# CONFIG_MAP is one-way (EKS user guide, "Change authentication mode to use access entries").

HYPERPOD_AUTHENTICATION_MODES = ("API", "API_AND_CONFIG_MAP")
EXISTING_EKS_KEY = "cluster.existing.eksClusterName"
EXISTING_HYPERPOD_KEY = "cluster.existing.hyperpodClusterArn"
# `cluster` keys that configure the EKS cluster this stack creates: not applied to an adopted one.
EKS_CREATION_KEYS = {
    "kubernetes_version": "kubernetesVersion",
    "endpoint_public_access_cidrs": "endpointPublicAccessCidrs",
    "service_ipv4_cidr": "serviceIpv4Cidr",
    "addons": "addons",
    "control_plane_log_types": "controlPlaneLogTypes",
    "deployer_access": "deployerAccess",
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
    "min_instance_count": "minInstanceCount",
    "role": "role",
    "image_release_version": "imageReleaseVersion",
    "software_updates": "softwareUpdates",
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


def eks_compatibility_issues(
    name: str, authentication_mode: str | None, version: str | None, *, accept_unlisted: bool = False
) -> list[ConfigIssue]:
    """Why an EKS cluster read from AWS cannot orchestrate HyperPod (the program and preflight share this).

    ``accept_unlisted``: ``cluster.acceptUnlistedKubernetesVersion`` (an unlisted version, e.g. 1.35, is then allowed).
    """
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
    unlisted_ok = accept_unlisted and version in HYPERPOD_UNLISTED_VERSIONS
    if version is not None and version not in HYPERPOD_SUPPORTED_VERSIONS and not unlisted_ok:
        more = (
            f" (and, listed by no retrievable AWS page, {', '.join(HYPERPOD_UNLISTED_VERSIONS)} with "
            f"{ACCEPT_UNLISTED_KEY}: true)"
        )
        out.append(
            ConfigIssue(
                EXISTING_EKS_KEY,
                f"EKS cluster {name} runs Kubernetes {version}; HyperPod supports "
                f"{', '.join(HYPERPOD_SUPPORTED_VERSIONS)}{more}",
            )
        )
    return out


def _adoption_checks(cfg: StackView) -> Iterable[ConfigIssue]:
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


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (_cluster_checks, _adoption_checks, _control_plane_logs)
