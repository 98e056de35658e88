"""The EKS control plane HyperPod orchestrates through (pulumi-eks).

HyperPod supplies every worker node (its general-purpose instance groups run the system pods), so no
default or managed node group is created. What the cluster gets instead:

* authentication mode ``API_AND_CONFIG_MAP``: HyperPod registers its nodes and service-linked role
  through EKS *access entries* (supported modes are API and API_AND_CONFIG_MAP per the HyperPod EKS
  prerequisites), while pulumi-eks still manages ``aws-auth`` for the creator;
* an IAM OIDC provider (IRSA for the inference operator, KEDA, the LB controller);
* a private API endpoint; public access is off in prod and limited to ``cluster.endpointPublicAccessCidrs``
  elsewhere (off when that list is empty);
* envelope encryption of Kubernetes secrets with a KMS key this component creates (rotation on);
* control-plane logging;
* the core add-ons pinned from ``cluster.addons`` (vpc-cni, kube-proxy, coredns through pulumi-eks, and
  eks-pod-identity-agent as an ``aws.eks.Addon``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from .config.cluster import ClusterConfig


@dataclass(frozen=True)
class EksClusterArgs:
    cluster: ClusterConfig
    cluster_name: str = field(metadata={"doc": "Physical EKS cluster name (subnets are tagged with it)."})
    vpc_id: pulumi.Input[str]
    private_subnet_ids: Sequence[pulumi.Input[str]]
    node_security_group_id: pulumi.Input[str] = field(
        metadata={"doc": "HyperPod node SG: opened to and from the control plane."}
    )
    is_prod: bool = False
    tags: dict[str, str] = field(default_factory=dict)


class EksCluster(pulumi.ComponentResource):
    """An EKS cluster ready for HyperPod: access entries, OIDC, KMS secrets encryption, pinned add-ons."""

    cluster_name: pulumi.Output[str]
    cluster_arn: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_provider_url: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    kms_key_arn: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    k8s_provider: k8s.Provider

    def __init__(self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:eks_cluster:EksCluster", name, None, opts)
        cfg = args.cluster
        child = pulumi.ResourceOptions(parent=self)

        key = aws.kms.Key(
            f"{name}-secrets-key",
            description=f"Envelope encryption of Kubernetes secrets in EKS cluster {args.cluster_name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=args.is_prod),
        )
        aws.kms.Alias(
            f"{name}-secrets-key-alias", name=f"alias/{args.cluster_name}-secrets", target_key_id=key.key_id, opts=child
        )

        public_cidrs = [] if args.is_prod else [str(c) for c in cfg.endpoint_public_access_cidrs]
        cluster = eks.Cluster(
            f"{name}-cluster",
            name=args.cluster_name,
            version=cfg.kubernetes_version,
            vpc_id=args.vpc_id,
            private_subnet_ids=list(args.private_subnet_ids),
            endpoint_private_access=True,
            endpoint_public_access=bool(public_cidrs),
            public_access_cidrs=public_cidrs or None,
            authentication_mode=eks.AuthenticationMode.API_AND_CONFIG_MAP,
            create_oidc_provider=True,
            encryption_config_key_arn=key.arn,
            enabled_cluster_log_types=list(cfg.control_plane_log_types),
            kubernetes_service_ip_address_range=str(cfg.service_ipv4_cidr),
            skip_default_node_group=True,
            deletion_protection=args.is_prod,
            vpc_cni_options=eks.VpcCniOptionsArgs(addon_version=cfg.addons.vpc_cni),
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=True, version=cfg.addons.kube_proxy),
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=True, version=cfg.addons.coredns),
            tags=args.tags,
            opts=child,
        )

        # The name is known up front; routing it through a cluster output makes every consumer depend on
        # the cluster actually existing.
        self.cluster_name = cluster.kubeconfig_json.apply(lambda _: args.cluster_name)
        caller = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self))
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self))
        self.cluster_arn = pulumi.Output.concat(
            "arn:", partition.partition, ":eks:", region.region, ":", caller.account_id, ":cluster/", self.cluster_name
        )

        aws.eks.Addon(
            f"{name}-pod-identity-agent",
            cluster_name=self.cluster_name,
            addon_name="eks-pod-identity-agent",
            addon_version=cfg.addons.pod_identity_agent,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=child,
        )

        # Control plane <-> HyperPod nodes: kubelet, webhooks and the API server.
        cluster_sg = cluster.cluster_security_group_id
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-api-from-nodes",
            security_group_id=cluster_sg,
            referenced_security_group_id=args.node_security_group_id,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="Kubernetes API from HyperPod nodes",
            opts=child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-nodes-from-api-443",
            security_group_id=args.node_security_group_id,
            referenced_security_group_id=cluster_sg,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="Admission webhooks on HyperPod nodes from the control plane",
            opts=child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-nodes-from-api-high",
            security_group_id=args.node_security_group_id,
            referenced_security_group_id=cluster_sg,
            ip_protocol="tcp",
            from_port=1025,
            to_port=65535,
            description="kubelet and extension API servers on HyperPod nodes from the control plane",
            opts=child,
        )

        self.oidc_provider_arn = cluster.oidc_provider_arn
        self.oidc_provider_url = cluster.oidc_issuer.apply(lambda url: url.removeprefix("https://"))
        self.cluster_security_group_id = cluster_sg
        self.kms_key_arn = key.arn
        self.kubeconfig = pulumi.Output.secret(cluster.kubeconfig_json)
        self.k8s_provider = k8s.Provider(
            f"{name}-k8s", kubeconfig=self.kubeconfig, enable_server_side_apply=True, opts=child
        )
        self.cluster = cluster
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "clusterArn": self.cluster_arn,
                "oidcProviderArn": self.oidc_provider_arn,
                "oidcProviderUrl": self.oidc_provider_url,
                "clusterSecurityGroupId": self.cluster_security_group_id,
                "kmsKeyArn": self.kms_key_arn,
            }
        )
