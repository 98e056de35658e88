"""hyperpod-inference: one environment of LLM inference on SageMaker HyperPod.

Thin on purpose: load and validate the stack config (every problem is reported before any resource is
registered), build the components in dependency order, export what operators need.
"""

import pulumi

from components.config import load_stack_config
from components.network import Network, NetworkArgs

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

# --- inference operator: prerequisites, IAM, the add-on (issue 4) ---

# --- KV cache L2, endpoints, inference gateway (issue 5) ---

# --- ALB front door with OIDC (issue 6) ---

# --- exports ---
pulumi.export("environment", cfg.environment)
pulumi.export("vpcId", network.vpc_id)
pulumi.export("privateSubnetIds", network.private_subnet_ids)
