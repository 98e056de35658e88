"""Network: a VPC sized for HyperPod, or an existing VPC passed through.

A new VPC gets, per configured AZ ID, a large private subnet (p5 nodes attach many ENIs and IPs) tagged
``kubernetes.io/role/internal-elb`` and a public subnet tagged ``kubernetes.io/role/elb`` for the ALB;
NAT gateways (one per AZ, or a single one); and the S3 gateway endpoint the inference operator requires
(model weights and TLS certificates are read from S3 without crossing the NAT).

Routes are standalone ``aws.ec2.Route`` resources (the default routes to the internet gateway and the NAT
gateways here; the routes to the deployer's network in ``components/deployer_routes.py``), never inline
``routes=[...]`` on a route table: an inline list owns the table's whole route set, so a route someone else adds
(a transit gateway attachment's, an operator's) would be removed on the next ``pulumi up`` (terraform-provider-aws
``route_table`` docs on inline routes vs ``aws_route``; awslabs/awsome-distributed-ai@95b939cd
``hyperpod-eks-tf/modules/private_subnet/main.tf:37-61`` uses ``aws_route`` the same way).

Baselines on the VPC it creates (AWS Foundational Security Best Practices):

- EC2.6 "VPC flow logging should be enabled in all VPCs": a flow log of ``ALL`` traffic to a CloudWatch Logs
  group with retention, written through a role only ``vpc-flow-logs.amazonaws.com`` of this account may assume
  (aws:SourceAccount / aws:SourceArn conditions, Amazon VPC user guide "IAM role for publishing flow logs to
  CloudWatch Logs").
- EC2.2 "VPC default security groups should not allow inbound or outbound traffic": the default security group
  is adopted as ``aws.ec2.DefaultSecurityGroup`` with no ingress and no egress rules (the provider removes the
  rules AWS puts there when it adopts the group; pulumi-aws ``ec2.DefaultSecurityGroup`` docs). Nothing in this
  package uses the default group. An existing VPC's default group and flow logs belong to its owner.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from components.role_boundary import role_boundary_arn

from .config.network import NetworkConfig, plan_subnets
from .config.observability import FlowLogsConfig
from .vpc_endpoints import VpcInterfaceEndpoints, VpcInterfaceEndpointsArgs


@dataclass(frozen=True)
class NetworkArgs:
    network: NetworkConfig
    region: str
    nat_per_az: bool
    eks_cluster_name: str = field(metadata={"doc": "Tagged on subnets so EKS and the LB controller discover them."})
    flow_logs: FlowLogsConfig = field(default_factory=FlowLogsConfig)
    flow_log_retention_days: int = 365
    interface_endpoint_services: tuple[str, ...] = field(
        default=(), metadata={"doc": "Interface VPC endpoints to create (config.vpc_endpoints); empty: none."}
    )
    control_plane_subnets: bool = field(
        default=False,
        metadata={"doc": "A /28 subnet per AZ ID for the EKS control plane, on its own route table (deployer routes)."},
    )
    tags: dict[str, str] = field(default_factory=dict)


def flow_log_trust(account_id: str, region: str, partition: str = "aws") -> dict[str, Any]:
    """Only the VPC Flow Logs service, for flow logs of this account and region, may assume the role."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": account_id},
                    "ArnLike": {"aws:SourceArn": f"arn:{partition}:ec2:{region}:{account_id}:vpc-flow-log/*"},
                },
            }
        ],
    }


def flow_log_policy(log_group_arn: str) -> dict[str, Any]:
    """Write access to the one log group (Amazon VPC user guide: flow-logs IAM role permissions)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                "Resource": [log_group_arn, f"{log_group_arn}:log-stream:*"],
            },
            {"Effect": "Allow", "Action": "logs:DescribeLogGroups", "Resource": "*"},
        ],
    }


class Network(pulumi.ComponentResource):
    """The VPC and subnets the EKS cluster, the HyperPod nodes, Redis and the ALB live in."""

    vpc_id: pulumi.Output[str]
    vpc_cidr: str
    private_subnet_ids: dict[str, pulumi.Output[str]]
    public_subnet_ids: dict[str, pulumi.Output[str]]
    # Private route table per AZ ID (a new VPC only), and the associations that put the private subnets on them:
    # the EKS control plane's replies leave through these tables, so the cluster waits on them.
    private_route_table_ids: dict[str, pulumi.Output[str]]
    private_routing: list[pulumi.CustomResource]
    # With NetworkArgs.control_plane_subnets (a new VPC only): the EKS control plane's own subnets, route tables and
    # their associations. The routes to the deployer's network go into these tables only, so the node subnets,
    # where the models run, get no way back to it (issue 33 item 5).
    control_plane_subnet_ids: dict[str, pulumi.Output[str]]
    control_plane_route_table_ids: dict[str, pulumi.Output[str]]
    control_plane_routing: list[pulumi.CustomResource]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:network:Network", name, None, opts)
        cfg = args.network
        self.vpc_cidr = str(cfg.vpc_cidr)
        if cfg.existing is not None:
            self.vpc_id = pulumi.Output.from_input(cfg.existing.vpc_id)
            self.private_subnet_ids = {
                az: pulumi.Output.from_input(s) for az, s in cfg.existing.private_subnets.items()
            }
            self.public_subnet_ids = {az: pulumi.Output.from_input(s) for az, s in cfg.existing.public_subnets.items()}
            self.s3_endpoint_id: pulumi.Output[str] | None = None
            self.private_route_table_ids = {}  # the owner's (preflight reads them: DescribeRouteTables)
            self.private_routing = []
            self.control_plane_subnet_ids, self.control_plane_route_table_ids = {}, {}
            self.control_plane_routing = []
        else:
            self._create_vpc(name, args)
        self.interface_endpoints = self._interface_endpoints(name, args)
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _create_vpc(self, name: str, args: NetworkArgs) -> None:
        cfg = args.network
        plan = plan_subnets(cfg, control_plane=args.control_plane_subnets)
        child = pulumi.ResourceOptions(parent=self)
        cluster_tag = {f"kubernetes.io/cluster/{args.eks_cluster_name}": "shared"}

        def tags(resource: str, **extra: str) -> dict[str, str]:
            return {**args.tags, "Name": f"{name}-{resource}", **extra}

        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=self.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=tags("vpc"),
            opts=child,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=tags("igw"), opts=child)

        public_rt = aws.ec2.RouteTable(f"{name}-public-rt", vpc_id=vpc.id, tags=tags("public-rt"), opts=child)
        aws.ec2.Route(
            f"{name}-public-default-route",
            route_table_id=public_rt.id,
            destination_cidr_block="0.0.0.0/0",
            gateway_id=igw.id,
            opts=child,
        )
        public: dict[str, aws.ec2.Subnet] = {}
        private: dict[str, aws.ec2.Subnet] = {}
        for az in cfg.availability_zone_ids:
            public[az] = aws.ec2.Subnet(
                f"{name}-public-{az}",
                vpc_id=vpc.id,
                cidr_block=str(plan.public[az]),
                availability_zone_id=az,
                map_public_ip_on_launch=False,
                tags=tags(f"public-{az}", **{"kubernetes.io/role/elb": "1"}, **cluster_tag),
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{az}-rta", subnet_id=public[az].id, route_table_id=public_rt.id, opts=child
            )
            private[az] = aws.ec2.Subnet(
                f"{name}-private-{az}",
                vpc_id=vpc.id,
                cidr_block=str(plan.private[az]),
                availability_zone_id=az,
                tags=tags(f"private-{az}", **{"kubernetes.io/role/internal-elb": "1"}, **cluster_tag),
                opts=child,
            )

        nat_azs = cfg.availability_zone_ids if args.nat_per_az else cfg.availability_zone_ids[:1]
        nats: dict[str, aws.ec2.NatGateway] = {}
        for az in nat_azs:
            eip = aws.ec2.Eip(f"{name}-nat-{az}-eip", domain="vpc", tags=tags(f"nat-{az}-eip"), opts=child)
            nats[az] = aws.ec2.NatGateway(
                f"{name}-nat-{az}",
                allocation_id=eip.id,
                subnet_id=public[az].id,
                tags=tags(f"nat-{az}"),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
            )

        private_rts: list[aws.ec2.RouteTable] = []
        self.private_routing = []
        for az in cfg.availability_zone_ids:
            nat = nats.get(az) or nats[nat_azs[0]]
            rt = aws.ec2.RouteTable(f"{name}-private-{az}-rt", vpc_id=vpc.id, tags=tags(f"private-{az}-rt"), opts=child)
            aws.ec2.Route(
                f"{name}-private-{az}-default-route",
                route_table_id=rt.id,
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=nat.id,
                opts=child,
            )
            association = aws.ec2.RouteTableAssociation(
                f"{name}-private-{az}-rta", subnet_id=private[az].id, route_table_id=rt.id, opts=child
            )
            private_rts.append(rt)
            self.private_routing.append(association)
        self.private_route_table_ids = dict(zip(cfg.availability_zone_ids, (rt.id for rt in private_rts), strict=True))

        s3_endpoint = aws.ec2.VpcEndpoint(
            f"{name}-s3-endpoint",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[rt.id for rt in private_rts],
            tags=tags("s3-endpoint"),
            opts=child,
        )

        # The control plane's own subnets: local routing only, plus the deployer routes (components/deployer_routes.py).
        # Its ENIs need no internet path; the VPC's local route reaches the nodes, webhooks and endpoints.
        self.control_plane_subnet_ids, self.control_plane_route_table_ids = {}, {}
        self.control_plane_routing = []
        for az, cidr in plan.control_plane.items():
            subnet = aws.ec2.Subnet(
                f"{name}-control-plane-{az}",
                vpc_id=vpc.id,
                cidr_block=str(cidr),
                availability_zone_id=az,
                tags=tags(f"control-plane-{az}", **cluster_tag),
                opts=child,
            )
            rt = aws.ec2.RouteTable(
                f"{name}-control-plane-{az}-rt", vpc_id=vpc.id, tags=tags(f"control-plane-{az}-rt"), opts=child
            )
            self.control_plane_routing.append(
                aws.ec2.RouteTableAssociation(
                    f"{name}-control-plane-{az}-rta", subnet_id=subnet.id, route_table_id=rt.id, opts=child
                )
            )
            self.control_plane_subnet_ids[az] = subnet.id
            self.control_plane_route_table_ids[az] = rt.id

        self._baselines(name, args, vpc, tags)

        self.vpc_id = vpc.id
        self.private_subnet_ids = {az: s.id for az, s in private.items()}
        self.public_subnet_ids = {az: s.id for az, s in public.items()}
        self.s3_endpoint_id = s3_endpoint.id

    def _baselines(self, name: str, args: NetworkArgs, vpc: aws.ec2.Vpc, tags: Any) -> None:
        """The default security group locked (EC2.2) and flow logs on (EC2.6)."""
        child = pulumi.ResourceOptions(parent=self)
        aws.ec2.DefaultSecurityGroup(
            f"{name}-default-sg", vpc_id=vpc.id, ingress=[], egress=[], tags=tags("default-sg-unused"), opts=child
        )
        if not args.flow_logs.enabled:
            return
        caller = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        log_group = aws.cloudwatch.LogGroup(
            f"{name}-flow-logs",
            name_prefix=f"/hyperpod-inference/{name}/vpc-flow-logs-",
            retention_in_days=args.flow_log_retention_days,
            tags=tags("flow-logs"),
            opts=child,
        )
        role = aws.iam.Role(
            f"{name}-flow-logs-role",
            name=f"{args.eks_cluster_name}-vpc-flow-logs",
            assume_role_policy=pulumi.Output.all(caller.account_id, partition).apply(
                lambda v: json.dumps(flow_log_trust(str(v[0]), args.region, str(v[1])))
            ),
            tags=tags("flow-logs-role"),
            permissions_boundary=role_boundary_arn(args.tags, self),
            opts=child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-flow-logs-policy",
            role=role.id,
            policy=log_group.arn.apply(lambda arn: json.dumps(flow_log_policy(arn))),
            opts=child,
        )
        aws.ec2.FlowLog(
            f"{name}-flow-log",
            vpc_id=vpc.id,
            traffic_type=args.flow_logs.traffic_type,
            log_destination_type="cloud-watch-logs",
            log_destination=log_group.arn,
            iam_role_arn=role.arn,
            max_aggregation_interval=60,
            tags=tags("flow-log"),
            # The flow log is created only if the role can already write to the group.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )

    # --- interface VPC endpoints (components/vpc_endpoints.py; kept apart from the subnets and routes) ---------

    def _interface_endpoints(self, name: str, args: NetworkArgs) -> VpcInterfaceEndpoints | None:
        """Interface endpoints in the private subnets (new or existing VPC), when the config asks for them."""
        if not args.interface_endpoint_services:
            return None
        return VpcInterfaceEndpoints(
            f"{name}-endpoints",
            VpcInterfaceEndpointsArgs(
                services=args.interface_endpoint_services,
                region=args.region,
                vpc_id=self.vpc_id,
                vpc_cidr=self.vpc_cidr,
                subnet_ids=list(self.private_subnet_ids.values()),
                name_prefix=name,
                tags=args.tags,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
