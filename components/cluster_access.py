"""ClusterAccess: the EKS access entries of ``cluster.accessEntries`` (people, a break-glass role, the viewers).

One ``aws.eks.AccessEntry`` (type STANDARD, with its Kubernetes groups) per principal and one
``aws.eks.AccessPolicyAssociation`` per access policy, at cluster scope or namespace scope (EKS user guide,
"Associate access policies with access entries"; the rules are in ``components/config/access.py``). An access
policy's ARN is ``arn:<partition>:eks::aws:cluster-access-policy/<name>``, partition from the provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from .config.access import AccessEntryConfig
from .iam_documents import eks_access_policy_arn


@dataclass(frozen=True)
class ClusterAccessArgs:
    cluster_name: pulumi.Input[str]
    entries: Sequence[AccessEntryConfig]
    tags: dict[str, str] = field(default_factory=dict)


class ClusterAccess(pulumi.ComponentResource):
    """The people's access entries and access-policy associations of one EKS cluster."""

    resources: list[pulumi.Resource]

    def __init__(self, name: str, args: ClusterAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:access:ClusterAccess", name, None, opts)
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        self.resources = []
        for i, entry in enumerate(args.entries):
            access_entry = aws.eks.AccessEntry(
                f"{name}-{i}",
                cluster_name=args.cluster_name,
                principal_arn=entry.principal_arn,
                type="STANDARD",
                kubernetes_groups=list(entry.kubernetes_groups) or None,
                tags={**args.tags, **({"hyperpod-inference/break-glass": "true"} if entry.break_glass else {})},
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.resources.append(access_entry)
            for j, pol in enumerate(entry.policies):
                scope = (
                    aws.eks.AccessPolicyAssociationAccessScopeArgs(type="namespace", namespaces=list(pol.namespaces))
                    if pol.namespaces
                    else aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster")
                )
                self.resources.append(
                    aws.eks.AccessPolicyAssociation(
                        f"{name}-{i}-policy-{j}",
                        cluster_name=args.cluster_name,
                        principal_arn=entry.principal_arn,
                        policy_arn=self._policy_arn(partition, pol.policy),
                        access_scope=scope,
                        opts=pulumi.ResourceOptions(parent=self, depends_on=[access_entry]),
                    )
                )
        self.register_outputs({"principals": [e.principal_arn for e in args.entries]})

    @staticmethod
    def _policy_arn(partition: pulumi.Output[str], policy: str) -> pulumi.Output[str]:
        return partition.apply(lambda p: eks_access_policy_arn(p, policy))
