"""``cluster.accessEntries``: the people (and their roles) who may use the EKS cluster, besides the pipeline.

Without entries the only admin is the principal that created the cluster (pulumi-eks bootstraps the creator as
admin), the Role ``hpi-endpoint-viewer`` is bound to a group no IAM principal maps to, and rotating the creator
role locks everyone out of a private prod cluster (issue 47 item 9). Each entry is an EKS access entry
(``aws.eks.AccessEntry``, type STANDARD) with its access-policy associations (``aws.eks.AccessPolicyAssociation``)
and Kubernetes groups, following the EKS user guide, "Grant IAM users access to Kubernetes with EKS access
entries" and "Associate access policies with access entries":

- an access policy is associated at ``cluster`` scope, or at ``namespace`` scope with up to the namespaces listed
  (AmazonEKSClusterAdminPolicy grants cluster-wide access, so a namespace scope is refused for it here);
- Kubernetes group names must not start with ``system:`` (CreateAccessEntry ``kubernetesGroups``);
- ``breakGlass: true`` marks the role kept for emergencies: cluster scope AmazonEKSClusterAdminPolicy. Prod
  requires one (a stack that creates its cluster), so losing the deploy role never loses the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field, StringConstraints

from .base import ConfigAdvisory, ConfigIssue, Model, join_path
from .checks import Advise, Check

# The EKS access policies a person is given (EKS user guide, "Review access policy permissions").
AccessPolicyName = Literal[
    "AmazonEKSClusterAdminPolicy", "AmazonEKSAdminPolicy", "AmazonEKSEditPolicy", "AmazonEKSViewPolicy"
]
CLUSTER_ADMIN = "AmazonEKSClusterAdminPolicy"
VIEWER_GROUP = "hpi-endpoint-viewers"  # components/endpoints.py binds the read-only Role to it
PrincipalArn = Annotated[str, StringConstraints(pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[\w+=,.@/-]+$")]
Namespace = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)]
KubernetesGroup = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9:_.-]{0,99}$")]


class AccessPolicyConfig(Model):
    policy: AccessPolicyName = Field(description="The EKS access policy to associate.")
    namespaces: list[Namespace] = Field(
        default_factory=list, description="Namespace scope; empty: the whole cluster (cluster scope)."
    )


class AccessEntryConfig(Model):
    principal_arn: PrincipalArn = Field(description="The IAM role or user (a role for people: SSO or federation).")
    policies: list[AccessPolicyConfig] = Field(default_factory=list, description="EKS access policies it gets.")
    kubernetes_groups: list[KubernetesGroup] = Field(
        default_factory=list,
        description=f"Kubernetes groups it joins, e.g. {VIEWER_GROUP} (read-only on the endpoints; bound by this "
        "package). Not system:*.",
    )
    break_glass: bool = Field(
        default=False,
        description="The emergency admin: cluster-scope AmazonEKSClusterAdminPolicy; prod requires one entry so.",
    )


class ClusterView(Protocol):
    @property
    def access_entries(self) -> Sequence[AccessEntryConfig]: ...
    @property
    def existing(self) -> Any: ...


class StackView(Protocol):
    @property
    def is_prod(self) -> bool: ...
    @property
    def cluster(self) -> ClusterView: ...


def _entry_issues(cfg: StackView) -> Iterable[ConfigIssue]:
    entries = cfg.cluster.access_entries
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        base = join_path("cluster.accessEntries", i)
        if entry.principal_arn in seen:
            yield ConfigIssue(
                f"{base}.principalArn",
                f"already cluster.accessEntries[{seen[entry.principal_arn]}]: one access entry per principal",
            )
        seen.setdefault(entry.principal_arn, i)
        for j, group in enumerate(entry.kubernetes_groups):
            if group.startswith("system:"):
                yield ConfigIssue(
                    f"{base}.kubernetesGroups[{j}]", f"{group}: EKS refuses system: groups; use an access policy"
                )
        for j, pol in enumerate(entry.policies):
            if pol.policy == CLUSTER_ADMIN and pol.namespaces:
                yield ConfigIssue(
                    f"{base}.policies[{j}].namespaces",
                    f"{CLUSTER_ADMIN} grants the whole cluster; remove namespaces, or use AmazonEKSAdminPolicy",
                )
        if entry.break_glass and not any(p.policy == CLUSTER_ADMIN and not p.namespaces for p in entry.policies):
            yield ConfigIssue(
                f"{base}.breakGlass",
                f"a break-glass entry must have {CLUSTER_ADMIN} at cluster scope (policies: [{{policy: {CLUSTER_ADMIN}}}])",
            )
    adopted = cfg.cluster.existing is not None
    if cfg.is_prod and not adopted and not any(e.break_glass for e in entries):
        yield ConfigIssue(
            "cluster.accessEntries",
            "prod needs a break-glass entry: only the creator of the cluster is admin, and rotating or losing it "
            f"locks everyone out of a private cluster; add {{principalArn: <an emergency role>, breakGlass: true, "
            f"policies: [{{policy: {CLUSTER_ADMIN}}}]}}",
        )


def _viewer_group(cfg: StackView) -> Iterable[ConfigAdvisory]:
    """The read-only Role's group maps to nobody without an entry (said, not refused: a team may map it later)."""
    if not any(VIEWER_GROUP in e.kubernetes_groups for e in cfg.cluster.access_entries):
        yield ConfigAdvisory(
            "cluster.accessEntries",
            f"no entry joins {VIEWER_GROUP}: the Role hpi-endpoint-viewer is bound to a group no IAM principal maps "
            f"to; add kubernetesGroups: [{VIEWER_GROUP}] to the entry of the people who look at endpoints",
            "access-entries-viewer-group",
            "aws eks list-access-entries / describe-access-entry: an entry made outside this stack may map it",
        )


CHECKS: tuple[Check[StackView], ...] = (_entry_issues,)
ADVISORIES: tuple[Advise[StackView], ...] = (_viewer_group,)
