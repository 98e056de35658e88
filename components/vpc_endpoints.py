"""VpcInterfaceEndpoints: interface VPC endpoints for the AWS APIs HyperPod nodes and pods call.

Why (``policies.security_baselines.INTERFACE_ENDPOINT_SERVICES`` has the source of each service): FSBP EC2.10,
EC2.55 and EC2.56 ask for EC2 and ECR (API and Docker Registry) endpoints; AWS's HyperPod docs say add-on
installs can fail for nodes in private subnets without the SageMaker API and EKS Auth endpoints; STS keeps the
pods' IRSA token exchange off the NAT gateway too. Private DNS is on, so the services' usual regional hostnames
resolve to the endpoints inside the VPC (that needs the VPC's DNS support and DNS hostnames, which the VPC this
package creates has; Amazon VPC PrivateLink guide, "private DNS").

One security group for all of them admits HTTPS (443) from the VPC CIDR only: the nodes' and pods' addresses
(the VPC CNI gives pods VPC addresses). It has no egress rule: endpoints only answer (security groups are
stateful), and pulumi-aws removes the allow-all egress AWS adds to a new group.

Nothing waits for the endpoints: until one is ``available`` its service is reached over the NAT gateway as
before, so creating them never blocks the nodes (policies/readiness.yaml).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

HTTPS = 443


@dataclass(frozen=True)
class VpcInterfaceEndpointsArgs:
    services: Sequence[str] = field(metadata={"doc": "Service suffixes: com.amazonaws.<region>.<service>."})
    region: str
    vpc_id: pulumi.Input[str]
    vpc_cidr: str
    subnet_ids: Sequence[pulumi.Input[str]] = field(metadata={"doc": "The private subnets (one per AZ)."})
    name_prefix: str
    tags: dict[str, str] = field(default_factory=dict)


def service_name(region: str, service: str) -> str:
    """The endpoint service name of an AWS service in a commercial Region (``com.amazonaws.<region>.<service>``)."""
    return f"com.amazonaws.{region}.{service}"


class VpcInterfaceEndpoints(pulumi.ComponentResource):
    """One interface endpoint per service in the private subnets, private DNS on, behind one 443-only group."""

    security_group_id: pulumi.Output[str]
    endpoint_ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: VpcInterfaceEndpointsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:vpc_endpoints:VpcInterfaceEndpoints", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"{args.name_prefix} interface VPC endpoints: HTTPS from the VPC only",
            tags={**args.tags, "Name": f"{args.name_prefix}-vpc-endpoints"},
            opts=child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-sg-in-https",
            security_group_id=sg.id,
            ip_protocol="tcp",
            from_port=HTTPS,
            to_port=HTTPS,
            cidr_ipv4=args.vpc_cidr,
            description=f"HTTPS to the AWS API endpoints from {args.vpc_cidr}",
            opts=child,
        )
        self.endpoint_ids = {}
        for service in args.services:
            endpoint = aws.ec2.VpcEndpoint(
                f"{name}-{service.replace('.', '-')}",
                vpc_id=args.vpc_id,
                service_name=service_name(args.region, service),
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=list(args.subnet_ids),
                security_group_ids=[sg.id],
                tags={**args.tags, "Name": f"{args.name_prefix}-{service}"},
                opts=child,
            )
            self.endpoint_ids[service] = endpoint.id
        self.security_group_id = sg.id
        self.register_outputs({"securityGroupId": self.security_group_id, "endpointIds": self.endpoint_ids})
