"""The EKS control plane HyperPod orchestrates through (pulumi-eks).

HyperPod supplies every worker node (its general-purpose instance groups run the system pods), so no
default or managed node group is created. What the cluster gets instead:

* authentication mode ``API_AND_CONFIG_MAP``: HyperPod registers its nodes and service-linked role
  through EKS *access entries* (supported modes are API and API_AND_CONFIG_MAP per the HyperPod EKS
  prerequisites), while pulumi-eks still manages ``aws-auth`` for the creator;
* an IAM OIDC provider (IRSA for the inference operator, KEDA, the LB controller);
* a private API endpoint; public access is off in prod and limited to ``cluster.endpointPublicAccessCidrs``
  plus ``cluster.deployerAccess.publicCidrs`` elsewhere (off when both are empty);
* its own control-plane security group (passed to pulumi-eks as ``cluster_security_group``) that admits the
  HyperPod nodes and the declared deployer (``cluster.deployerAccess``: an in-VPC runner's security groups or
  CIDRs) on 443. Pulumi creates Kubernetes objects itself — pulumi-eks's aws-auth ConfigMap first — and with
  public access off "the API server can only receive requests from within the cluster VPC" (EKS API
  VpcConfigRequest), through the cluster security group ("You must ensure that your Amazon EKS control plane
  security group contains rules to allow ingress traffic on port 443 from your connected network": EKS user
  guide cluster-endpoint, "Accessing a private only API server"). The deployer rules exist before the EKS cluster
  is created, so they are in place when pulumi-eks writes aws-auth (deploy-readiness.md trap 5);
* envelope encryption of Kubernetes secrets with a KMS key this component creates (rotation on);
* control-plane logging;
* the core add-ons pinned from ``cluster.addons``: vpc-cni and kube-proxy through pulumi-eks, and
  eks-pod-identity-agent as an ``aws.eks.Addon`` — DaemonSets, which "can become active before nodes are
  available" (awslabs/awsome-distributed-ai@95b939cd ``hyperpod-eks-tf/modules/eks_cluster/main.tf:102``).
  CoreDNS is **not** created here: it is a Deployment, an EKS add-on create waits for ACTIVE and CoreDNS stays
  DEGRADED without nodes (pulumi/pulumi-eks#1819, #1525), and the only nodes come from the HyperPod cluster,
  which is created after this component. :meth:`EksCluster.coredns_addon` creates it after that cluster.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from policies.readiness import custom_timeouts

from .config.cluster import ClusterConfig
from .role_boundary import role_boundary_arn


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
    aws_profile: str | None = field(default=None, metadata={"doc": "aws:profile, for the kubeconfig's get-token."})
    assume_role_arn: str | None = field(
        default=None,
        metadata={"doc": "The aws:assumeRoles role: the cluster's creator, so the kubeconfig's token must be for it."},
    )
    network_path: Sequence[pulumi.CustomResource] = field(
        default=(),
        metadata={
            "doc": "What the runner's packets and the control plane's replies travel over: the private route-table "
            "associations and the routes to the runner's network (components/deployer_routes.py); created first."
        },
    )


def public_access_cidrs(cluster: ClusterConfig, is_prod: bool) -> list[str]:
    """CIDRs of the public endpoint: operators' networks plus the deployer's; none in prod (private only)."""
    if is_prod:
        return []
    access = cluster.deployer_access
    listed = [*cluster.endpoint_public_access_cidrs, *(access.public_cidrs if access is not None else [])]
    return list(dict.fromkeys(str(c) for c in listed))


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
        key = self._secrets_key(name, args)
        cluster_sg = self._control_plane_security_group(name, args)
        deployer_rules = self._deployer_rules(name, args.cluster, cluster_sg.id)
        service_role, service_policy = self._service_role(name, args)
        cluster = self._eks_cluster(
            name,
            args,
            key,
            cluster_sg,
            service_role=(service_role, service_policy),
            waits_for=[*deployer_rules, *args.network_path],
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
        self._pod_identity_agent(name, args)
        self._node_rules(name, args, cluster_sg)

        self.oidc_provider_arn = cluster.oidc_provider_arn
        self.oidc_provider_url = cluster.oidc_issuer.apply(lambda url: url.removeprefix("https://"))
        self.cluster_security_group_id = cluster_sg.id
        self.kms_key_arn = key.arn
        self.kubeconfig = pulumi.Output.secret(cluster.kubeconfig_json)
        self.k8s_provider = k8s.Provider(
            f"{name}-k8s", kubeconfig=self.kubeconfig, enable_server_side_apply=True, opts=self._child()
        )
        self.cluster = cluster
        self._tags = args.tags
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

    def _child(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self)

    def _secrets_key(self, name: str, args: EksClusterArgs) -> aws.kms.Key:
        """The KMS key (and its alias) that envelope-encrypts Kubernetes secrets; protected in prod."""
        key = aws.kms.Key(
            f"{name}-secrets-key",
            description=f"Envelope encryption of Kubernetes secrets in EKS cluster {args.cluster_name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=args.is_prod),
        )
        aws.kms.Alias(
            f"{name}-secrets-key-alias",
            name=f"alias/{args.cluster_name}-secrets",
            target_key_id=key.key_id,
            opts=self._child(),
        )
        return key

    def _control_plane_security_group(self, name: str, args: EksClusterArgs) -> aws.ec2.SecurityGroup:
        """The control plane's security group, ours rather than pulumi-eks's, so the deployer's 443 rules can exist
        before the cluster (and its aws-auth ConfigMap) is created."""
        cluster_sg = aws.ec2.SecurityGroup(
            f"{name}-cluster-sg",
            vpc_id=args.vpc_id,
            description=f"EKS control plane of {args.cluster_name}: API from HyperPod nodes and the deployer",
            revoke_rules_on_delete=True,
            tags={**args.tags, "Name": f"{args.cluster_name}-cluster"},
            opts=self._child(),
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-cluster-egress",
            security_group_id=cluster_sg.id,
            ip_protocol="-1",
            cidr_ipv4="0.0.0.0/0",
            description="Control plane to kubelets, webhooks and extension API servers (as pulumi-eks's own SG)",
            opts=self._child(),
        )
        return cluster_sg

    def _eks_cluster(
        self,
        name: str,
        args: EksClusterArgs,
        key: aws.kms.Key,
        cluster_sg: aws.ec2.SecurityGroup,
        *,
        service_role: tuple[aws.iam.Role, aws.iam.RolePolicyAttachment],
        waits_for: list[pulumi.CustomResource],
    ) -> eks.Cluster:
        """The EKS cluster (pulumi-eks), created only once the runner can reach it.

        It takes its subnets through the ids of the deployer rules and of the routes back to the runner
        (``waits_for``), so it — and everything pulumi-eks creates after it: aws-auth, the OIDC provider, the
        add-ons — is created only once the runner can reach it, both ways (deploy-readiness.md traps 5 and 11).
        """
        cfg = args.cluster
        rule_ids = [r.id for r in waits_for]
        subnet_ids = [
            pulumi.Output.all(subnet, *rule_ids).apply(lambda values: str(values[0]))
            for subnet in args.private_subnet_ids
        ]
        public_cidrs = public_access_cidrs(cfg, args.is_prod)
        return eks.Cluster(
            f"{name}-cluster",
            name=args.cluster_name,
            version=cfg.kubernetes_version,
            vpc_id=args.vpc_id,
            private_subnet_ids=subnet_ids,
            endpoint_private_access=True,
            endpoint_public_access=bool(public_cidrs),
            public_access_cidrs=public_cidrs or None,
            authentication_mode=eks.AuthenticationMode.API_AND_CONFIG_MAP,
            create_oidc_provider=True,
            encryption_config_key_arn=key.arn,
            enabled_cluster_log_types=list(cfg.control_plane_log_types),
            kubernetes_service_ip_address_range=str(cfg.service_ipv4_cidr),
            skip_default_node_group=True,
            # Our cluster SG replaces pulumi-eks's, and no pulumi-eks node SG: HyperPod nodes have their own.
            cluster_security_group=cluster_sg,
            skip_default_security_groups=True,
            deletion_protection=args.is_prod,
            vpc_cni_options=eks.VpcCniOptionsArgs(addon_version=cfg.addons.vpc_cni),
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=True, version=cfg.addons.kube_proxy),
            # Off here: CoreDNS needs nodes, and they come later (module docstring, coredns_addon).
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            # Ours, not pulumi-eks's auto-named `<name>-eksRole-<hex>`: it carries the stack's name and the
            # stack's permissions boundary (components/role_boundary.py), as the deploy policy requires.
            service_role=service_role[0],
            # The kubeconfig's token is for the principal that creates the cluster (its only admin): the profile and
            # the assumed role of the aws provider (pulumi-eks copies only a profile by default; issue 47 item 2).
            provider_credential_opts=(
                eks.KubeconfigOptionsArgs(profile_name=args.aws_profile, role_arn=args.assume_role_arn)
                if args.aws_profile or args.assume_role_arn
                else None
            ),
            tags=args.tags,
            # depends_on the SG too: it records the reference in the graph the policy pack reads.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster_sg, *service_role, *waits_for]),
        )

    def _pod_identity_agent(self, name: str, args: EksClusterArgs) -> None:
        aws.eks.Addon(
            f"{name}-pod-identity-agent",
            cluster_name=self.cluster_name,
            addon_name="eks-pod-identity-agent",
            addon_version=args.cluster.addons.pod_identity_agent,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=self._child(),
        )

    def _node_rules(self, name: str, args: EksClusterArgs, cluster_sg: aws.ec2.SecurityGroup) -> None:
        """Control plane <-> HyperPod nodes: kubelet, webhooks and the API server."""
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-api-from-nodes",
            security_group_id=cluster_sg.id,
            referenced_security_group_id=args.node_security_group_id,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="Kubernetes API from HyperPod nodes",
            opts=self._child(),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-nodes-from-api-443",
            security_group_id=args.node_security_group_id,
            referenced_security_group_id=cluster_sg.id,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="Admission webhooks on HyperPod nodes from the control plane",
            opts=self._child(),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-nodes-from-api-high",
            security_group_id=args.node_security_group_id,
            referenced_security_group_id=cluster_sg.id,
            ip_protocol="tcp",
            from_port=1025,
            to_port=65535,
            description="kubelet and extension API servers on HyperPod nodes from the control plane",
            opts=self._child(),
        )

    def _service_role(self, name: str, args: EksClusterArgs) -> tuple[aws.iam.Role, aws.iam.RolePolicyAttachment]:
        """The control plane's service role: trusted by eks.amazonaws.com, with AmazonEKSClusterPolicy (EKS user
        guide, "Amazon EKS cluster IAM role"), named for the cluster and bounded like every role of the stack."""
        child = pulumi.ResourceOptions(parent=self)
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "eks.amazonaws.com"},
                    "Action": ["sts:AssumeRole", "sts:TagSession"],
                }
            ],
        }
        role = aws.iam.Role(
            f"{name}-service-role",
            name=f"{args.cluster_name}-cluster-role",
            description=f"EKS control plane of {args.cluster_name}",
            assume_role_policy=json.dumps(trust),
            permissions_boundary=role_boundary_arn(args.tags, self),
            tags=args.tags,
            opts=child,
        )
        attachment = aws.iam.RolePolicyAttachment(
            f"{name}-service-role-cluster-policy",
            role=role.name,
            policy_arn=pulumi.Output.concat("arn:", partition, ":iam::aws:policy/AmazonEKSClusterPolicy"),
            opts=child,
        )
        return role, attachment

    def _deployer_rules(
        self, name: str, cfg: ClusterConfig, cluster_sg_id: pulumi.Output[str]
    ) -> list[aws.vpc.SecurityGroupIngressRule]:
        """443 on the control-plane SG from each declared in-VPC runner security group and CIDR."""
        access = cfg.deployer_access
        if access is None:
            return []
        rules = []
        for i, sg in enumerate(access.security_group_ids):
            rules.append(
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-api-from-deployer-sg-{i}",
                    security_group_id=cluster_sg_id,
                    referenced_security_group_id=sg,
                    ip_protocol="tcp",
                    from_port=443,
                    to_port=443,
                    description="Kubernetes API from the deployer (cluster.deployerAccess.securityGroupIds)",
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        for i, cidr in enumerate(access.cidrs):
            rules.append(
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-api-from-deployer-cidr-{i}",
                    security_group_id=cluster_sg_id,
                    cidr_ipv4=str(cidr),
                    ip_protocol="tcp",
                    from_port=443,
                    to_port=443,
                    description="Kubernetes API from the deployer (cluster.deployerAccess.cidrs)",
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        return rules

    def coredns_addon(
        self, name: str, version: str, after: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions
    ) -> aws.eks.Addon:
        """The CoreDNS EKS add-on, created after ``after`` (the HyperPod cluster and the wait for its nodes).

        An add-on create waits for ACTIVE, and DEGRADED counts as pending (hashicorp/terraform-provider-aws
        ``internal/service/eks/addon.go`` ``waitAddonCreated``, default 20 min); CoreDNS is a Deployment and stays
        DEGRADED until a node can run it (pulumi/pulumi-eks#1819, #1525). awslabs/awsome-distributed-ai creates it
        outside Terraform's wait for that reason (``modules/eks_cluster/main.tf:125-132``). The version comes
        from ``cluster.addons.coredns``. The caller owns the parent (``opts``); the add-on is not a child of this
        component because the HyperPod cluster depends on this component. The HyperPod create returns before its
        nodes join, so ``after`` holds the node wait (components/hyperpod_node_wait.py), and the create/update
        timeout (30 min: CoreDNS "always takes 15 minutes", aws-ia/terraform-aws-eks-blueprints#642) comes from the
        coredns entry of policies/readiness.yaml.
        """
        return aws.eks.Addon(
            name,
            cluster_name=self.cluster_name,
            addon_name="coredns",
            addon_version=version,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=self._tags,
            opts=pulumi.ResourceOptions.merge(
                opts,
                pulumi.ResourceOptions(
                    depends_on=list(after),
                    custom_timeouts=custom_timeouts("aws:eks/addon:Addon", {"addonName": "coredns"}),
                ),
            ),
        )
