"""The security group every HyperPod node's ENIs (and the EFA devices on them) live in.

EFA's SRD transport needs traffic allowed *to and from the group itself* in both directions: a missing
self-referencing egress rule is a known cause of failed EFA deep health checks, and an ``egress
0.0.0.0/0`` rule does not cover it. All rules are standalone ``aws.vpc.SecurityGroupIngressRule`` /
``aws.vpc.SecurityGroupEgressRule`` resources (never inline rules), so each one is visible to policies and
adding one never rewrites the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

# FSx for Lustre: the LNet port and the range the Lustre clients and servers use.
FSX_LUSTRE_PORTS: tuple[tuple[int, int], ...] = ((988, 988), (1018, 1023))


@dataclass(frozen=True)
class NodeSecurityGroupArgs:
    vpc_id: pulumi.Input[str]
    vpc_cidr: str = field(metadata={"doc": "HTTPS (443) is allowed from within the VPC (VPC endpoints, webhooks)."})
    fsx_enabled: bool = False
    name_prefix: str = "hpi"
    tags: dict[str, str] = field(default_factory=dict)


class NodeSecurityGroup(pulumi.ComponentResource):
    """HyperPod node SG: self ingress + self egress (all traffic), FSx Lustre ports, 443 from the VPC."""

    security_group_id: pulumi.Output[str]

    def __init__(self, name: str, args: NodeSecurityGroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:node_security_group:NodeSecurityGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            name=f"{args.name_prefix}-hyperpod-nodes",
            description="SageMaker HyperPod nodes: EFA self traffic, FSx for Lustre, HTTPS from the VPC",
            vpc_id=args.vpc_id,
            tags={**args.tags, "Name": f"{args.name_prefix}-hyperpod-nodes"},
            opts=child,
        )
        rule_tags = dict(args.tags)
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-self-ingress",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol="-1",
            description="All traffic from HyperPod nodes (EFA, NCCL, kubelet)",
            tags=rule_tags,
            opts=child,
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-self-egress",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol="-1",
            description="All traffic to HyperPod nodes (EFA requires the self egress rule)",
            tags=rule_tags,
            opts=child,
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-egress-all",
            security_group_id=sg.id,
            cidr_ipv4="0.0.0.0/0",
            ip_protocol="-1",
            description="Outbound to AWS APIs, ECR and the EKS control plane (through NAT / endpoints)",
            tags=rule_tags,
            opts=child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-https-from-vpc",
            security_group_id=sg.id,
            cidr_ipv4=args.vpc_cidr,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="HTTPS from within the VPC",
            tags=rule_tags,
            opts=child,
        )
        if args.fsx_enabled:
            for low, high in FSX_LUSTRE_PORTS:
                suffix = f"{low}" if low == high else f"{low}-{high}"
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-fsx-{suffix}",
                    security_group_id=sg.id,
                    referenced_security_group_id=sg.id,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    description=f"FSx for Lustre {suffix} between nodes and the file system",
                    tags=rule_tags,
                    opts=child,
                )
        self.security_group_id = sg.id
        self.register_outputs({"securityGroupId": self.security_group_id})
