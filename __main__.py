"""hyperpod-inference: one environment of LLM inference on SageMaker HyperPod.

Thin on purpose: load and validate the stack config (every problem is reported before any resource is
registered), build the components in dependency order, export what operators need.
"""

import pulumi
import pulumi_aws as aws

from components.config import load_stack_config
from components.eks_cluster import EksCluster, EksClusterArgs
from components.endpoints import InferenceEndpoints, InferenceEndpointsArgs
from components.hyperpod_cluster import HyperPodCluster, HyperPodClusterArgs
from components.hyperpod_dependencies import HyperPodDependencies, HyperPodDependenciesArgs
from components.inference_gateway import InferenceGateway, InferenceGatewayArgs
from components.inference_operator import InferenceOperatorAddon, InferenceOperatorAddonArgs
from components.ingress import IngressAlb, IngressAlbArgs
from components.kv_cache import RedisKvCache, RedisKvCacheArgs
from components.network import Network, NetworkArgs
from components.node_security_group import NodeSecurityGroup, NodeSecurityGroupArgs
from components.operator_iam import OperatorIam, OperatorIamArgs
from components.operator_prerequisites import OperatorPrerequisites, OperatorPrerequisitesArgs, model_buckets

cfg = load_stack_config()

network = Network(
    "network",
    NetworkArgs(
        network=cfg.network,
        region=cfg.region,
        nat_per_az=(cfg.network.nat_gateways or ("perAz" if cfg.is_prod else "single")) == "perAz",
        eks_cluster_name=f"{cfg.name_prefix}-eks",
        tags=cfg.common_tags,
    ),
)

# --- cluster layer: node security group, EKS, HyperPod cluster (issue 3) ---

node_sg = NodeSecurityGroup(
    "node-sg",
    NodeSecurityGroupArgs(
        vpc_id=network.vpc_id,
        vpc_cidr=network.vpc_cidr,
        fsx_enabled=cfg.cluster.fsx_enabled,
        name_prefix=cfg.name_prefix,
        tags=cfg.common_tags,
    ),
)
eks = EksCluster(
    "eks",
    EksClusterArgs(
        cluster=cfg.cluster,
        cluster_name=f"{cfg.name_prefix}-eks",
        vpc_id=network.vpc_id,
        private_subnet_ids=list(network.private_subnet_ids.values()),
        node_security_group_id=node_sg.security_group_id,
        is_prod=cfg.is_prod,
        tags=cfg.common_tags,
    ),
)
hyperpod_deps = HyperPodDependencies(
    "hyperpod-deps",
    HyperPodDependenciesArgs(
        config=cfg.cluster.hyperpod_dependencies, region=cfg.region, k8s_provider=eks.k8s_provider
    ),
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
    opts=pulumi.ResourceOptions(depends_on=[hyperpod_deps, eks]),
)
pulumi.export("eksClusterName", eks.cluster_name)
pulumi.export("hyperpodClusterArn", hyperpod.cluster_arn)
pulumi.export("hyperpodClusterName", hyperpod.cluster_name)

# --- inference operator: prerequisites, IAM, the add-on (issue 4) ---

account_id = aws.get_caller_identity_output().account_id
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
        protect_bucket=cfg.is_prod,
        tags=cfg.common_tags,
    ),
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
    # Controllers need schedulable HyperPod nodes (the only nodes of the cluster) to become ready.
    opts=pulumi.ResourceOptions(depends_on=[hyperpod]),
)
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
        depends_on=[*operator_prereqs.dependencies, *operator_iam.dependencies, hyperpod.cluster],
        tags=cfg.common_tags,
    ),
)
pulumi.export("inferenceOperatorAddonVersion", cfg.operator.addon_version)
pulumi.export("inferenceOperatorExecutionRoleArn", operator_iam.execution_role_arn)
pulumi.export("tlsCertificateBucket", operator_iam.tls_bucket_name)

# --- KV cache L2, endpoints, inference gateway (issue 5) ---

kv_cache = None
if cfg.kv_cache.l2_backend == "redis":
    kv_cache = RedisKvCache(
        "kv-cache",
        RedisKvCacheArgs(
            redis=cfg.kv_cache.redis,
            vpc_id=network.vpc_id,
            subnet_ids=list(network.private_subnet_ids.values()),
            node_security_group_id=node_sg.security_group_id,
            name_prefix=cfg.name_prefix,
            is_prod=cfg.is_prod,
            tags=cfg.common_tags,
        ),
    )
    pulumi.export("kvCacheUrl", kv_cache.url)
    pulumi.export("kvCacheAuthToken", kv_cache.auth_token)  # secret
inference_gateway = None
if cfg.gateway.enabled:
    inference_gateway = InferenceGateway(
        "inference-gateway",
        InferenceGatewayArgs(gateway=cfg.gateway, k8s_provider=eks.k8s_provider, depends_on=[inference_operator]),
    )
    pulumi.export("inferenceGatewayName", inference_gateway.name)
inference_endpoints = InferenceEndpoints(
    "endpoints",
    InferenceEndpointsArgs(
        endpoints=cfg.endpoints,
        tags=cfg.common_tags,
        tls_bucket=operator_iam.tls_bucket_name,
        redis_url=kv_cache.connection_url if kv_cache is not None else None,
        k8s_provider=eks.k8s_provider,
        depends_on=[inference_operator],
        gateway=inference_gateway,
    ),
)

# --- ALB front door with OIDC (issue 6) ---

if cfg.ingress.enabled:
    alb_subnets = network.public_subnet_ids if cfg.ingress.scheme == "internet-facing" else network.private_subnet_ids
    front_door = IngressAlb(
        "front-door",
        IngressAlbArgs(
            ingress=cfg.ingress,
            endpoints=cfg.endpoints,
            vpc_id=network.vpc_id,
            vpc_cidr=network.vpc_cidr,
            subnet_ids=list(alb_subnets.values()),
            name_prefix=cfg.name_prefix,
            is_prod=cfg.is_prod,
            k8s_provider=eks.k8s_provider,
            # the LB controller (and the TargetGroupBinding CRD) comes with the add-on or the prerequisites
            k8s_depends_on=[inference_operator, operator_prereqs],
            tags=cfg.common_tags,
        ),
    )
    pulumi.export("frontDoorUrl", front_door.url)
    pulumi.export("frontDoorAlbDnsName", front_door.dns_name)

# --- exports ---
pulumi.export("environment", cfg.environment)
pulumi.export("vpcId", network.vpc_id)
pulumi.export("privateSubnetIds", network.private_subnet_ids)
