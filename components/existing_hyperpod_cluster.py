"""ExistingHyperPodCluster: a HyperPod cluster this stack adopts by ARN; nothing of the cluster layer is created.

It offers what the other layers use from :class:`~components.hyperpod_cluster.HyperPodCluster` (``cluster_arn``,
and ``cluster`` to order the inference add-on after) and checks, when the read resolves, that the cluster is
orchestrated by the adopted EKS cluster: the inference add-on is installed on that EKS cluster and configured
with this ARN (``hyperpodClusterArn``), so a mismatch would wire the operator to another cluster's nodes. The
read is the typed data source ``aws_native.sagemaker.get_cluster_output`` (CloudControl GetResource).

The instance groups the endpoint and capacity checks use are *declared* in ``cluster.instanceGroups`` (same
model as the groups the stack creates); preflight compares them with DescribeCluster / ListClusterNodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws_native as aws_native

from .config.base import ConfigIssue
from .config.cluster import EXISTING_HYPERPOD_KEY
from .config.loader import ConfigError


@dataclass(frozen=True)
class ExistingHyperPodClusterArgs:
    cluster_arn: str
    eks_cluster_arn: pulumi.Input[str]


class ExistingHyperPodCluster(pulumi.ComponentResource):
    """An adopted HyperPod cluster (EKS orchestrator): read and checked, never modified."""

    cluster_arn: pulumi.Output[str]
    cluster_status: pulumi.Output[str]
    cluster: pulumi.Resource

    def __init__(
        self, name: str, args: ExistingHyperPodClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("hyperpod:existing_hyperpod_cluster:ExistingHyperPodCluster", name, None, opts)
        # Read after the EKS cluster was read and checked: an incompatible EKS cluster is reported first, and
        # the orchestrator comparison below always has both sides.
        after_eks = pulumi.Output.from_input(args.eks_cluster_arn).apply(lambda _: args.cluster_arn)
        found = aws_native.sagemaker.get_cluster_output(
            cluster_arn=after_eks, opts=pulumi.InvokeOutputOptions(parent=self)
        )

        def orchestrated(v: list[Any]) -> str:
            cluster, eks_arn = v
            eks = cluster.orchestrator.eks if cluster.orchestrator is not None else None
            actual = eks.cluster_arn if eks is not None else None
            if actual != eks_arn:
                raise ConfigError(
                    [
                        ConfigIssue(
                            EXISTING_HYPERPOD_KEY,
                            f"{args.cluster_arn} is orchestrated by {actual or 'no EKS cluster'}, not by "
                            f"cluster.existing.eksClusterName ({eks_arn}); name the EKS cluster it belongs to",
                        )
                    ]
                )
            return str(cluster.cluster_arn or args.cluster_arn)

        self.cluster_arn = pulumi.Output.all(found, args.eks_cluster_arn).apply(orchestrated)
        self.cluster_status = found.apply(lambda c: str(c.cluster_status or "unknown"))
        self.cluster = self  # what the add-on orders after: nothing is created, the checked read is the dependency
        self.register_outputs({"clusterArn": self.cluster_arn, "clusterStatus": self.cluster_status})
