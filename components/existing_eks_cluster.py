"""ExistingEksCluster: an EKS cluster this stack adopts by name instead of creating it.

It offers the interface the other layers use from :class:`~components.eks_cluster.EksCluster` — ``cluster_name``,
``cluster_arn``, ``oidc_provider_arn`` / ``oidc_provider_url``, ``cluster_security_group_id``, ``k8s_provider`` —
read from the typed data source ``aws.eks.get_cluster_output`` (endpoint, CA, OIDC issuer, security group,
authentication mode, version). The package adds only what it needs:

* the IAM OIDC provider for the issuer, when ``cluster.existing.createOidcProvider`` is true (IRSA for the
  operator, KEDA, the LB controller and the CSI drivers); otherwise its ARN is the one IAM gives every OIDC
  provider (``arn:<partition>:iam::<account>:oidc-provider/<issuer host/path>``) and preflight checks it exists;
* when this stack creates the HyperPod cluster in it: the control-plane <-> node security-group rules the
  created cluster gets too (API from the nodes; webhooks and kubelet from the control plane).

Nothing else of the cluster is touched: no core add-on, no access entry, no KMS key (they are the cluster
owner's; the caller must already have Kubernetes access, e.g. a cluster-admin access entry).

Compatibility (HyperPod EKS prerequisites page, Requirements 1-2): the authentication mode must be API or
API_AND_CONFIG_MAP and the version one HyperPod supports. The data source is read at deploy time, so an
incompatible cluster is reported as a :class:`~components.config.ConfigError` (``hyperpod-inference:cluster
.existing.eksClusterName: ...``) when the read resolves, before any resource that needs the cluster is
registered; preflight reports the same earlier (``tools/preflight/checks.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from .config.cluster import eks_compatibility_issues
from .config.loader import ConfigError

# EKS's audience for IRSA web-identity tokens (EKS user guide, "Create an IAM OIDC provider for your cluster").
STS_AUDIENCE = "sts.amazonaws.com"


def kubeconfig(
    cluster_name: str,
    endpoint: str,
    ca_data: str,
    region: str,
    *,
    profile: str | None = None,
    role_arn: str | None = None,
) -> str:
    """A kubeconfig that authenticates with ``aws eks get-token`` (as ``aws eks update-kubeconfig`` writes), with
    the aws provider's profile and assumed role (``--profile``, ``--role-arn``; AWS CLI ``eks get-token``), so
    Kubernetes calls run as the principal the aws provider runs as (issue 47 item 2)."""
    extra = [*(["--role-arn", role_arn] if role_arn else []), *(["--profile", profile] if profile else [])]
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
            "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
            "current-context": cluster_name,
            "users": [
                {
                    "name": cluster_name,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "aws",
                            "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region,
                                     "--output", "json", *extra],
                        }
                    },
                }
            ],
        },
        sort_keys=True,
    )  # fmt: skip


def open_control_plane_to_nodes(
    name: str, parent: pulumi.Resource, cluster_sg: pulumi.Input[str], node_sg: pulumi.Input[str]
) -> list[aws.vpc.SecurityGroupIngressRule]:
    """Control plane <-> HyperPod nodes: the API from the nodes; webhooks and kubelet from the control plane."""
    child = pulumi.ResourceOptions(parent=parent)
    rules = [
        (f"{name}-api-from-nodes", cluster_sg, node_sg, 443, 443, "Kubernetes API from HyperPod nodes"),
        (f"{name}-nodes-from-api-443", node_sg, cluster_sg, 443, 443,
         "Admission webhooks on HyperPod nodes from the control plane"),
        (f"{name}-nodes-from-api-high", node_sg, cluster_sg, 1025, 65535,
         "kubelet and extension API servers on HyperPod nodes from the control plane"),
    ]  # fmt: skip
    return [
        aws.vpc.SecurityGroupIngressRule(
            rule_name,
            security_group_id=target,
            referenced_security_group_id=source,
            ip_protocol="tcp",
            from_port=low,
            to_port=high,
            description=description,
            opts=child,
        )
        for rule_name, target, source, low, high, description in rules
    ]


@dataclass(frozen=True)
class ExistingEksClusterArgs:
    cluster_name: str = field(metadata={"doc": "cluster.existing.eksClusterName"})
    create_oidc_provider: bool = False
    node_security_group_id: pulumi.Input[str] | None = field(
        default=None, metadata={"doc": "The node SG of a HyperPod cluster this stack creates (opens the SG rules)."}
    )
    tags: dict[str, str] = field(default_factory=dict)
    accept_unlisted_kubernetes_version: bool = field(
        default=False, metadata={"doc": "cluster.acceptUnlistedKubernetesVersion (e.g. an adopted 1.35 cluster)."}
    )
    aws_profile: str | None = field(default=None, metadata={"doc": "aws:profile, for the kubeconfig's get-token."})
    assume_role_arn: str | None = field(default=None, metadata={"doc": "The aws:assumeRoles role (kubeconfig)."})


class ExistingEksCluster(pulumi.ComponentResource):
    """An adopted EKS cluster: read, checked for HyperPod compatibility, and given only what the package needs."""

    cluster_name: pulumi.Output[str]
    cluster_arn: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_provider_url: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    kubernetes_version: pulumi.Output[str]
    authentication_mode: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    k8s_provider: k8s.Provider

    def __init__(self, name: str, args: ExistingEksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:existing_eks_cluster:ExistingEksCluster", name, None, opts)
        invoke = pulumi.InvokeOutputOptions(parent=self)
        region = aws.get_region_output(opts=invoke).region
        partition = aws.get_partition_output(opts=invoke).partition
        account_id = aws.get_caller_identity_output(opts=invoke).account_id

        def compatible(found: Any) -> Any:
            access = found.access_configs[0].authentication_mode if found.access_configs else None
            issues = eks_compatibility_issues(
                args.cluster_name, access, found.version, accept_unlisted=args.accept_unlisted_kubernetes_version
            )
            if issues:
                raise ConfigError(issues)
            return found

        # Every value below comes through the checked read, so nothing that needs the cluster is registered
        # against an incompatible one.
        cluster = aws.eks.get_cluster_output(name=args.cluster_name, opts=invoke).apply(compatible)
        self.cluster_name = cluster.name
        self.cluster_arn = cluster.arn
        self.kubernetes_version = cluster.version
        self.authentication_mode = cluster.apply(lambda c: str(c.access_configs[0].authentication_mode))
        self.cluster_security_group_id = cluster.apply(lambda c: str(c.vpc_config.cluster_security_group_id))
        issuer = cluster.apply(lambda c: str(c.identities[0].oidcs[0].issuer))
        self.oidc_provider_url = issuer.apply(lambda url: url.removeprefix("https://"))

        if args.create_oidc_provider:
            provider = aws.iam.OpenIdConnectProvider(
                f"{name}-oidc",
                url=issuer,
                client_id_lists=[STS_AUDIENCE],
                tags=args.tags,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.oidc_provider_arn = provider.arn
        else:
            self.oidc_provider_arn = pulumi.Output.concat(
                "arn:", partition, ":iam::", account_id, ":oidc-provider/", self.oidc_provider_url
            )

        if args.node_security_group_id is not None:
            open_control_plane_to_nodes(name, self, self.cluster_security_group_id, args.node_security_group_id)

        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster, region).apply(
                lambda v: kubeconfig(
                    args.cluster_name,
                    v[0].endpoint,
                    v[0].certificate_authorities[0].data,
                    v[1],
                    profile=args.aws_profile,
                    role_arn=args.assume_role_arn,
                )
            )
        )
        self.k8s_provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "clusterArn": self.cluster_arn,
                "oidcProviderArn": self.oidc_provider_arn,
                "oidcProviderUrl": self.oidc_provider_url,
                "clusterSecurityGroupId": self.cluster_security_group_id,
                "kubernetesVersion": self.kubernetes_version,
            }
        )
