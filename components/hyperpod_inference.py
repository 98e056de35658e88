"""HyperPodInference: one environment of LLM inference on SageMaker HyperPod, as one component.

It composes the layers in dependency order — network, cluster (node security group, EKS, the HyperPod
dependencies chart, the HyperPod cluster; or the adopted EKS / HyperPod clusters of ``cluster.existing``), the inference operator (IAM, prerequisites, the add-on), the
serving layer (L2 KV cache, inference gateway, endpoints) and the ALB front door — from one validated
:class:`~components.config.StackConfig`. ``__main__.py`` only loads the config, builds this component and
exports :attr:`HyperPodInference.exports`; another Pulumi program can do the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from .access_logs import AccessLogBucket, AccessLogBucketArgs
from .cluster_access import ClusterAccess, ClusterAccessArgs
from .config import StackConfig
from .config.endpoints import lmcache_redis_acl
from .config.gateway import gateway_namespace
from .config.global_gateway import member_export
from .config.ingress import waf_enabled
from .config.kvcache import split_redis_url
from .config.observability import access_log_retention, flow_log_retention
from .config.vpc_endpoints import interface_endpoint_services
from .dashboards import ObservabilityDashboards, ObservabilityDashboardsArgs
from .deployer_routes import DeployerRoutes, DeployerRoutesArgs
from .destroy_waits import (
    CLEANUP_KIND,
    DRAIN_KIND,
    GuardDutyEndpointCleanup,
    LoadBalancerControllerDrain,
    delete_timeout_seconds,
)
from .dynamic_provider import credential_inputs, kubeconfig_credentials
from .eks_cluster import EksCluster, EksClusterArgs
from .endpoints import InferenceEndpoints, InferenceEndpointsArgs, RedisConnection
from .existing_eks_cluster import ExistingEksCluster, ExistingEksClusterArgs
from .existing_hyperpod_cluster import ExistingHyperPodCluster, ExistingHyperPodClusterArgs
from .governance import TaskGovernance, TaskGovernanceArgs
from .hyperpod_cluster import HyperPodCluster, HyperPodClusterArgs
from .hyperpod_dependencies import HyperPodDependencies, HyperPodDependenciesArgs
from .inference_gateway import InferenceGateway, InferenceGatewayArgs
from .inference_operator import InferenceOperatorAddon, InferenceOperatorAddonArgs
from .ingress import IngressAlb, IngressAlbArgs
from .kv_cache import RedisKvCache, RedisKvCacheArgs
from .network import Network, NetworkArgs
from .node_security_group import NodeSecurityGroup, NodeSecurityGroupArgs
from .observability import ObservabilityAddon, ObservabilityAddonArgs
from .operator_iam import OperatorIam, OperatorIamArgs
from .operator_prerequisites import OperatorPrerequisites, OperatorPrerequisitesArgs, model_buckets
from .web_acl import WebAcl, WebAclArgs


@dataclass(frozen=True)
class _ClusterLayer:
    """The cluster layer as the layers above use it, whether created or adopted."""

    eks: EksCluster | ExistingEksCluster
    hyperpod: HyperPodCluster | ExistingHyperPodCluster
    node_security_group_id: pulumi.Input[str] | None = None  # None only for an adopted HyperPod cluster without it

    @property
    def nodes(self) -> list[pulumi.Resource]:
        """What anything that needs running pods waits on: the wait for the created cluster's nodes (an adopted
        cluster's nodes already run: preflight compares them with the declared groups)."""
        if not isinstance(self.hyperpod, HyperPodCluster):
            return []
        # The node software roll too: on a Kubernetes upgrade the operator add-on and the rest come after it.
        return [self.hyperpod.nodes_ready, self.hyperpod.node_software]


@dataclass(frozen=True)
class _OperatorLayer:
    """The inference operator as the serving layer and the front door use it: its IAM, prerequisites and add-on."""

    iam: OperatorIam
    prerequisites: OperatorPrerequisites
    addon: InferenceOperatorAddon
    drain: LoadBalancerControllerDrain  # destroy: waits for the LB controller's AWS resources to go
    governance: list[pulumi.Resource]  # task governance the endpoints' pods are admitted by (none when off)


@dataclass(frozen=True)
class _FrontDoor:
    """The edge as the dashboards use it; either part is None when the stack turns it off."""

    alb: IngressAlb | None
    web_acl: WebAcl | None


@dataclass(frozen=True)
class HyperPodInferenceArgs:
    """The validated stack config (``components.config.load_stack_config()`` or ``parse_stack_config``)."""

    config: StackConfig


class HyperPodInference(pulumi.ComponentResource):
    """Every layer of one hyperpod-inference environment; ``exports`` holds what operators need.

    The constructor reads as the order of the layers: each builder below registers one layer, parented to this
    component, and hands the next one only what it needs (so the waits between layers are visible here).
    """

    exports: dict[str, Any]

    def __init__(self, name: str, args: HyperPodInferenceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:index:HyperPodInference", name, None, opts)
        cfg = args.config
        self.exports = {}

        network = self._network(cfg)
        cluster = self._cluster(cfg, network)
        operator = self._operator(cfg, network, cluster)
        redis = self._l2_kv_cache(cfg, network, cluster)
        endpoints = self._endpoints(cfg, cluster, operator, redis)
        front_door = self._front_door(cfg, network, cluster, operator, endpoints)
        self._logs_and_observability(cfg, cluster, operator, front_door)

        # What a global stack (hyperpod-inference:role: global) reads from this one, see docs/multi-region.md.
        self._export("globalGatewayMember", {**member_export(cfg), "clusterArn": cluster.hyperpod.cluster_arn})
        self._export("environment", cfg.environment)
        self._export("vpcId", network.vpc_id)
        self._export("privateSubnetIds", network.private_subnet_ids)
        self.register_outputs(self.exports)

    def _child(self, depends_on: list[pulumi.Resource] | None = None) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, depends_on=depends_on)

    def _network(self, cfg: StackConfig) -> Network:
        """The VPC: a private subnet per AZ ID, public subnets, NAT, endpoints and flow logs."""
        return Network(
            "network",
            NetworkArgs(
                network=cfg.network,
                region=cfg.region,
                nat_per_az=(cfg.network.nat_gateways or ("perAz" if cfg.is_prod else "single")) == "perAz",
                eks_cluster_name=f"{cfg.name_prefix}-eks",
                flow_logs=cfg.observability.vpc_flow_logs,
                flow_log_retention_days=flow_log_retention(cfg),
                interface_endpoint_services=interface_endpoint_services(cfg),
                control_plane_subnets=self._dedicated_control_plane(cfg),
                tags=cfg.common_tags,
            ),
            opts=self._child(),
        )

    def _cluster(self, cfg: StackConfig, network: Network) -> _ClusterLayer:
        """The cluster layer (created or adopted: ``_cluster_layer`` chooses) and what it exports."""
        layer = self._cluster_layer(cfg, network)
        self._export("eksClusterName", layer.eks.cluster_name)
        self._export("hyperpodClusterArn", layer.hyperpod.cluster_arn)
        if isinstance(layer.hyperpod, HyperPodCluster):
            self._export("hyperpodClusterName", layer.hyperpod.cluster_name)
        if cfg.cluster.access_entries:
            ClusterAccess(
                "cluster-access",
                ClusterAccessArgs(
                    cluster_name=layer.eks.cluster_name, entries=cfg.cluster.access_entries, tags=cfg.common_tags
                ),
                opts=self._child(),
            )
        return layer

    def _operator(self, cfg: StackConfig, network: Network, layer: _ClusterLayer) -> _OperatorLayer:
        """The inference operator: its IAM, its prerequisites (after the nodes), then the add-on."""
        eks, hyperpod = layer.eks, layer.hyperpod
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        operator_iam = OperatorIam(
            "operator-iam",
            OperatorIamArgs(
                stack=cfg.stack,
                name_prefix=cfg.name_prefix,
                region=cfg.region,
                account_id=account_id,
                cluster_name=eks.cluster_name,
                oidc_provider_arn=eks.oidc_provider_arn,
                oidc_provider_url=eks.oidc_provider_url,
                alb_mode=cfg.operator.load_balancer_controller.mode,
                keda_mode=cfg.operator.keda.mode,
                gateway_enabled=cfg.gateway.enabled,
                gated_model_namespaces=[e.namespace for e in cfg.endpoints],
                protect_bucket=cfg.is_prod,
                tags=cfg.common_tags,
            ),
            opts=self._child(),
        )
        operator_prereqs = OperatorPrerequisites(
            "operator-prereqs",
            OperatorPrerequisitesArgs(
                name_prefix=cfg.name_prefix,
                region=cfg.region,
                operator=cfg.operator,
                cluster_name=eks.cluster_name,
                oidc_provider_arn=eks.oidc_provider_arn,
                oidc_provider_url=eks.oidc_provider_url,
                model_bucket_names=model_buckets(cfg.endpoints),
                vpc_id=network.vpc_id,
                k8s_provider=eks.k8s_provider,
                alb_role_arn=operator_iam.alb_role_arn,
                keda_role_arn=operator_iam.keda_role_arn,
                tags=cfg.common_tags,
            ),
            # Controllers need schedulable HyperPod nodes (the only nodes of the cluster) to become ready: after the
            # wait for them (a child of the HyperPod component, so in this dependency too).
            opts=self._child(depends_on=[hyperpod, *layer.nodes]),
        )
        # --- task governance (optional): add-on, cluster policy, team quotas; before the inference add-on, whose
        # pods Kueue's webhook admits once it is installed (components/governance.py) ---
        governance = None
        if cfg.governance.enabled:
            governance = TaskGovernance(
                "governance",
                TaskGovernanceArgs(
                    config=cfg.governance,
                    name_prefix=cfg.name_prefix,
                    region=cfg.region,
                    cluster_name=eks.cluster_name,
                    hyperpod_cluster_arn=hyperpod.cluster_arn,
                    depends_on=[hyperpod.cluster, *layer.nodes],
                    tags=cfg.common_tags,
                ),
                opts=self._child(),
            )
            self._export("taskGovernanceAddonVersion", cfg.governance.addon_version)
        governance_deps: list[pulumi.Resource] = governance.dependencies if governance is not None else []
        inference_operator = InferenceOperatorAddon(
            "inference-operator",
            InferenceOperatorAddonArgs(
                addon_version=cfg.operator.addon_version,
                cluster_name=eks.cluster_name,
                hyperpod_cluster_arn=hyperpod.cluster_arn,
                execution_role_arn=operator_iam.execution_role_arn,
                tls_bucket_name=operator_iam.tls_bucket_name,
                gated_model_role_arn=operator_iam.gated_model_role_arn,
                alb_mode=cfg.operator.load_balancer_controller.mode,
                keda_mode=cfg.operator.keda.mode,
                alb_role_arn=operator_iam.alb_role_arn,
                keda_role_arn=operator_iam.keda_role_arn,
                gateway_enabled=cfg.gateway.enabled,
                gateway_role_arn=operator_iam.gateway_role_arn,
                depends_on=[
                    *operator_prereqs.dependencies,
                    *operator_iam.dependencies,
                    hyperpod.cluster,
                    *layer.nodes,
                    *([governance.addon] if governance is not None else []),
                ],
                tags=cfg.common_tags,
            ),
            opts=self._child(),
        )
        # Destroy: what makes the LB controller create AWS resources goes first, then this waits for the controller
        # to remove them, then the add-on that runs it goes (components/destroy_waits.py).
        lbc_drain = LoadBalancerControllerDrain(
            "lb-controller-drain",
            {
                "region": self._region(),
                "clusterName": eks.cluster_name,
                "timeoutSeconds": delete_timeout_seconds(DRAIN_KIND),
                "pollSeconds": 15,
                **credential_inputs(),
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[inference_operator, operator_prereqs]),
        )
        self._export("inferenceOperatorAddonVersion", cfg.operator.addon_version)
        self._export("inferenceOperatorExecutionRoleArn", operator_iam.execution_role_arn)
        self._export("tlsCertificateBucket", operator_iam.tls_bucket_name)
        return _OperatorLayer(operator_iam, operator_prereqs, inference_operator, lbc_drain, governance_deps)

    def _l2_kv_cache(self, cfg: StackConfig, network: Network, layer: _ClusterLayer) -> RedisConnection | None:
        """The L2 KV cache's Redis: an ElastiCache group created here, an external URL, or none (tiered storage)."""
        if cfg.kv_cache.creates_redis:
            if layer.node_security_group_id is None:  # unreachable: the config requires it (cluster.py)
                raise ValueError("the Redis L2 cache needs the HyperPod nodes' security group")
            kv_cache = RedisKvCache(
                "kv-cache",
                RedisKvCacheArgs(
                    redis=cfg.kv_cache.redis,
                    vpc_id=network.vpc_id,
                    subnet_ids=list(network.private_subnet_ids.values()),
                    node_security_group_id=layer.node_security_group_id,
                    name_prefix=cfg.name_prefix,
                    is_prod=cfg.is_prod,
                    lmcache_commands=lmcache_redis_acl(cfg.endpoints)[0],
                    tags=cfg.common_tags,
                ),
                opts=self._child(),
            )
            self._export("kvCacheUrl", kv_cache.url)
            if kv_cache.password is not None:
                # The password is no stack output (secret or not): only the endpoints' Kubernetes Secret holds it,
                # so reading outputs (CI, `pulumi stack output --show-secrets`) never hands out the cache's key.
                self._export("kvCacheUsername", kv_cache.username)
            return RedisConnection(address=kv_cache.url, username=kv_cache.username, password=kv_cache.password)
        if cfg.kv_cache.external_url is not None:
            # kvCache.redis.external: no ElastiCache. Its credentials (if the URL has any) go to the same Secret.
            address, username, password = split_redis_url(cfg.kv_cache.external_url)
            return RedisConnection(
                address=address,
                username=pulumi.Output.secret(username or ""),
                password=pulumi.Output.secret(password) if password is not None else None,
            )
        return None

    def _endpoints(
        self, cfg: StackConfig, layer: _ClusterLayer, operator: _OperatorLayer, redis: RedisConnection | None
    ) -> InferenceEndpoints:
        """The model endpoints' custom resources, and the managed Inference Gateway in their namespace."""
        eks = layer.eks
        gateway_ns = gateway_namespace(cfg)

        def make_gateway(namespaces: Mapping[str, pulumi.Resource]) -> InferenceGateway:
            """The gateway in its endpoints' namespace, after that Namespace (built by InferenceEndpoints)."""
            assert gateway_ns is not None  # config.gateway: a namespace is required when enabled
            created = [namespaces[gateway_ns]] if gateway_ns in namespaces else []
            return InferenceGateway(
                "inference-gateway",
                InferenceGatewayArgs(
                    gateway=cfg.gateway,
                    namespace=gateway_ns,
                    k8s_provider=eks.k8s_provider,
                    depends_on=[operator.addon, operator.drain, *created],
                ),
                opts=self._child(),
            )

        endpoints = InferenceEndpoints(
            "endpoints",
            InferenceEndpointsArgs(
                endpoints=cfg.endpoints,
                tags=cfg.common_tags,
                tls_bucket=operator.iam.tls_bucket_name,
                redis=redis,
                k8s_provider=eks.k8s_provider,
                depends_on=[operator.addon, operator.drain, *operator.governance],
                gateway_factory=make_gateway if cfg.gateway.enabled else None,
                extra_namespaces=[gateway_ns] if cfg.gateway.enabled and gateway_ns else [],
                external_namespaces={ns: operator.governance for ns in cfg.governance.namespaces},
            ),
            opts=self._child(),
        )
        if isinstance(endpoints.gateway, InferenceGateway):
            self._export("inferenceGatewayName", endpoints.gateway.name)
            self._export("inferenceGatewayNamespace", endpoints.gateway.namespace)
        return endpoints

    def _front_door(
        self,
        cfg: StackConfig,
        network: Network,
        layer: _ClusterLayer,
        operator: _OperatorLayer,
        endpoints: InferenceEndpoints,
    ) -> _FrontDoor:
        """The WAF and the ALB front door (authentication per route) with its TargetGroupBindings."""
        web_acl = None
        if waf_enabled(cfg.ingress):
            web_acl = WebAcl(
                "edge-waf",
                WebAclArgs(waf=cfg.ingress.waf, name_prefix=cfg.name_prefix, tags=cfg.common_tags),
                opts=self._child(),
            )
            self._export("webAclArn", web_acl.arn)
        if not cfg.ingress.enabled:
            return _FrontDoor(None, web_acl)
        public = cfg.ingress.scheme == "internet-facing"
        alb_subnets = network.public_subnet_ids if public else network.private_subnet_ids
        alb = IngressAlb(
            "front-door",
            IngressAlbArgs(
                ingress=cfg.ingress,
                endpoints=cfg.endpoints,
                vpc_id=network.vpc_id,
                vpc_cidr=network.vpc_cidr,
                subnet_ids=list(alb_subnets.values()),
                name_prefix=cfg.name_prefix,
                is_prod=cfg.is_prod,
                k8s_provider=layer.eks.k8s_provider,
                # the LB controller (and the TargetGroupBinding CRD) comes with the add-on or the prerequisites
                k8s_depends_on=[operator.addon, operator.prerequisites, operator.drain],
                # each binding waits for its namespace and its endpoint's custom resource
                endpoint_resources=endpoints.resources,
                namespaces=endpoints.namespaces,
                web_acl_arn=web_acl.arn if web_acl is not None else None,
                tags=cfg.common_tags,
            ),
            opts=self._child(),
        )
        self._export("frontDoorUrl", alb.url)
        self._export("frontDoorAlbDnsName", alb.dns_name)
        return _FrontDoor(alb, web_acl)

    def _logs_and_observability(
        self, cfg: StackConfig, layer: _ClusterLayer, operator: _OperatorLayer, front_door: _FrontDoor
    ) -> None:
        """S3 access logs of the stack's buckets, the observability add-on, the dashboard and alarms."""
        hyperpod = layer.hyperpod
        AccessLogBucket(
            "access-logs",
            AccessLogBucketArgs(
                name_prefix=cfg.name_prefix,
                sources={
                    "tls-certificates": operator.iam.tls_bucket_name,
                    # an adopted HyperPod cluster's lifecycle bucket is its owner's
                    **(
                        {"lifecycle-scripts": hyperpod.lifecycle_bucket}
                        if isinstance(hyperpod, HyperPodCluster)
                        else {}
                    ),
                },
                retention_days=access_log_retention(cfg),
                protect=cfg.is_prod,
                tags=cfg.common_tags,
            ),
            opts=self._child(),
        )
        if cfg.observability.enabled:
            observability = ObservabilityAddon(
                "observability",
                ObservabilityAddonArgs(
                    config=cfg.observability,
                    cluster_name=layer.eks.cluster_name,
                    cluster_arn=layer.eks.cluster_arn,
                    region=cfg.region,
                    name_prefix=cfg.name_prefix,
                    # ACTIVE needs its pods running: HyperPod nodes, and the pod identity agent (in EksCluster).
                    depends_on=[hyperpod.cluster, *layer.nodes, layer.eks],
                    protect=cfg.is_prod,
                    tags=cfg.common_tags,
                ),
                opts=self._child(),
            )
            self._export("prometheusEndpoint", observability.prometheus_endpoint)
        alb, web_acl = front_door.alb, front_door.web_acl
        dashboards = ObservabilityDashboards(
            "dashboards",
            ObservabilityDashboardsArgs(
                name_prefix=cfg.name_prefix,
                region=cfg.region,
                endpoints=cfg.endpoints,
                alarms=cfg.observability.alarms,
                dashboard=cfg.observability.dashboard,
                https_listener_arn=alb.https_listener_arn if alb is not None else None,
                target_group_arns=dict(alb.target_group_arns) if alb is not None else {},
                web_acl_name=web_acl.name if web_acl is not None else None,
                waf_rate_rule_metrics=tuple(web_acl.rate_rule_metrics) if web_acl is not None else (),
                protect=cfg.is_prod,
                tags=cfg.common_tags,
            ),
            opts=self._child(),
        )
        if dashboards.dashboard_name is not None:
            self._export("dashboardName", dashboards.dashboard_name)

    def _cluster_layer(self, cfg: StackConfig, network: Network) -> _ClusterLayer:
        """The cluster layer, created or adopted: the one place that chooses (``cluster.existing``)."""
        child = pulumi.ResourceOptions(parent=self)
        existing = cfg.cluster.existing
        profile, role_arn = kubeconfig_credentials()  # the aws provider's principal, for Kubernetes calls too
        if existing is not None and existing.hyperpod_cluster_arn is not None:
            # Both adopted: nothing of the cluster layer is created (no node SG, no chart, no SG rules).
            adopted_eks = ExistingEksCluster(
                "eks",
                ExistingEksClusterArgs(
                    cluster_name=existing.eks_cluster_name,
                    create_oidc_provider=existing.create_oidc_provider,
                    tags=cfg.common_tags,
                    accept_unlisted_kubernetes_version=cfg.cluster.accept_unlisted_kubernetes_version,
                    aws_profile=profile,
                    assume_role_arn=role_arn,
                ),
                opts=child,
            )
            adopted_hyperpod = ExistingHyperPodCluster(
                "hyperpod",
                ExistingHyperPodClusterArgs(
                    cluster_arn=existing.hyperpod_cluster_arn, eks_cluster_arn=adopted_eks.cluster_arn
                ),
                opts=child,
            )
            return _ClusterLayer(adopted_eks, adopted_hyperpod, existing.node_security_group_id)

        node_sg = NodeSecurityGroup(
            "node-sg",
            NodeSecurityGroupArgs(
                vpc_id=network.vpc_id,
                vpc_cidr=network.vpc_cidr,
                fsx_enabled=cfg.cluster.fsx_enabled,
                name_prefix=cfg.name_prefix,
                tags=cfg.common_tags,
            ),
            opts=child,
        )
        eks: EksCluster | ExistingEksCluster
        if existing is not None:
            # EKS adopted, HyperPod created in it: the node SG and the control-plane rules are added to it.
            eks = ExistingEksCluster(
                "eks",
                ExistingEksClusterArgs(
                    cluster_name=existing.eks_cluster_name,
                    create_oidc_provider=existing.create_oidc_provider,
                    node_security_group_id=node_sg.security_group_id,
                    tags=cfg.common_tags,
                    accept_unlisted_kubernetes_version=cfg.cluster.accept_unlisted_kubernetes_version,
                    aws_profile=profile,
                    assume_role_arn=role_arn,
                ),
                opts=child,
            )
        else:
            eks = EksCluster(
                "eks",
                EksClusterArgs(
                    cluster=cfg.cluster,
                    cluster_name=f"{cfg.name_prefix}-eks",
                    vpc_id=network.vpc_id,
                    # With deployer routes, the control plane's own subnets (only they route back to the runner).
                    private_subnet_ids=list((network.control_plane_subnet_ids or network.private_subnet_ids).values()),
                    node_security_group_id=node_sg.security_group_id,
                    is_prod=cfg.is_prod,
                    tags=cfg.common_tags,
                    network_path=self._network_path(cfg, network),
                    aws_profile=profile,
                    assume_role_arn=role_arn,
                ),
                opts=child,
            )
        hyperpod_deps = HyperPodDependencies(
            "hyperpod-deps",
            HyperPodDependenciesArgs(
                config=cfg.cluster.hyperpod_dependencies, region=cfg.region, k8s_provider=eks.k8s_provider
            ),
            opts=child,
        )
        hyperpod = HyperPodCluster(
            "hyperpod",
            HyperPodClusterArgs(
                cluster=cfg.cluster,
                cluster_name=f"{cfg.name_prefix}-hp",
                eks_cluster_arn=eks.cluster_arn,
                node_security_group_id=node_sg.security_group_id,
                private_subnet_ids=network.private_subnet_ids,
                default_az_id=cfg.network.az_ids[0],
                name_prefix=cfg.name_prefix,
                tiered_storage=cfg.kv_cache.l2_backend == "tieredstorage",
                is_prod=cfg.is_prod,
                tags=cfg.common_tags,
            ),
            # AWS requires the dependencies chart on the EKS cluster before the HyperPod cluster is created.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[hyperpod_deps, eks]),
        )
        if isinstance(eks, EksCluster):  # an adopted EKS cluster's CoreDNS is its owner's (already running)
            # CoreDNS after the HyperPod cluster, the only source of nodes: its create waits for ACTIVE, which needs
            # running CoreDNS pods (components/eks_cluster.py, EksCluster.coredns_addon; deploy-readiness.md trap 1).
            eks.coredns_addon(
                "coredns", cfg.cluster.addons.coredns, after=[hyperpod.cluster, hyperpod.nodes_ready], opts=child
            )
        return _ClusterLayer(eks, hyperpod, node_sg.security_group_id)

    def _network_path(self, cfg: StackConfig, network: Network) -> list[pulumi.CustomResource]:
        """The route-table associations of the private subnets and the routes to the runner's network
        (``cluster.deployerAccess.routes``): the EKS cluster waits on them (components/deployer_routes.py)."""
        guards: list[pulumi.CustomResource] = []
        if cfg.network.existing is None:
            # Destroy: deleted after the EKS cluster (which waits on it) and before the subnets and the VPC (its
            # inputs): removes GuardDuty's endpoint from the VPC (components/destroy_waits.py).
            guards.append(
                GuardDutyEndpointCleanup(
                    "guardduty-endpoint-cleanup",
                    {
                        "region": self._region(),
                        "vpcId": network.vpc_id,
                        "subnetIds": list(network.private_subnet_ids.values()),
                        "timeoutSeconds": delete_timeout_seconds(CLEANUP_KIND),
                        **credential_inputs(),
                    },
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        access = cfg.cluster.deployer_access
        if access is None or not access.routes:
            return [*network.private_routing, *guards]
        # Only the control plane's subnets route back to the runner's network, and the transit gateway attaches
        # there: the node subnets, where the models run, get no path to it (issue 33 item 5).
        routes = DeployerRoutes(
            "deployer-routes",
            DeployerRoutesArgs(
                routes=list(access.routes),
                vpc_id=network.vpc_id,
                private_subnet_ids=network.control_plane_subnet_ids,
                private_route_table_ids=network.control_plane_route_table_ids,
                name_prefix=cfg.name_prefix,
                tags=cfg.common_tags,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return [*network.private_routing, *network.control_plane_routing, *routes.routes, *guards]

    @staticmethod
    def _dedicated_control_plane(cfg: StackConfig) -> bool:
        """Deployer routes go into dedicated control-plane subnets (EKS lets the cluster's subnets differ from the
        nodes'), never into the node subnets' route tables: everything the transit gateway or peering routes would
        otherwise reach the models' subnets with a way back."""
        access = cfg.cluster.deployer_access
        return bool(access is not None and access.routes and cfg.network.existing is None)

    def _region(self) -> pulumi.Output[str]:
        return aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region

    def _export(self, key: str, value: Any) -> None:
        self.exports[key] = value
