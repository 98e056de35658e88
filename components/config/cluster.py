"""``hyperpod-inference:cluster`` — the EKS control plane and the HyperPod instance groups that join it."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field

from .base import Model

GroupName = Annotated[
    str, Field(pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$", description="HyperPod instance group name")
]


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


class ClusterConfig(Model):
    kubernetes_version: str = Field(default="1.33", pattern=r"^1\.[0-9]{2}$")
    endpoint_public_access_cidrs: list[ipaddress.IPv4Network] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public EKS API endpoint; empty keeps the endpoint private only.",
    )
    service_ipv4_cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("172.20.0.0/16"), description="Kubernetes service CIDR; must not overlap the VPC."
    )
    node_provisioning_mode: Literal["Continuous"] | None = None
    fsx_enabled: bool = Field(
        default=False, description="Open the FSx for Lustre ports (988, 1018-1023) on the node SG."
    )
    instance_groups: list[InstanceGroup] = Field(min_length=1)
