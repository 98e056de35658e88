"""DeployerRoutes: the way back from the private subnets to the network `pulumi up` runs in.

With the EKS endpoint private, the runner reaches the API through the cluster security group (components/eks_cluster.py
admits ``cluster.deployerAccess.cidrs`` on 443) and the control plane answers from ENIs in the private subnets. Their
route tables send ``0.0.0.0/0`` to the NAT gateway, which cannot carry replies to a private network, and a VPC created
in the same ``pulumi up`` has no transit-gateway attachment or peering connection unless the stack creates one
(deploy-readiness.md trap 11; EKS user guide, cluster endpoint access: "connected network"). So for each
``cluster.deployerAccess.routes`` entry this component creates:

* ``transitGatewayId``: one VPC attachment of the private subnets (one per AZ ID) per transit gateway, and a route
  ``cidr -> transit gateway`` in every route table it is given, after the attachment (a route to a transit gateway needs
  the VPC's attachment to it; without it the route's create is refused: UNCONFIRMED [tgw-route-needs-attachment]). Whether the transit gateway accepts the
  attachment by itself (a shared gateway may need its owner to accept it) and routes ``cidr`` back to this VPC is
  its owner's configuration: UNCONFIRMED [deployer-route-far-side], ``python -m tools.preflight.regional`` checks that it exists and is available.
* ``peerVpcId``: one peering connection to that VPC (same account and region, so this stack accepts it:
  ``auto_accept``) and a route ``cidr -> peering connection`` in every route table it is given. The peer VPC's route
  back to this VPC's CIDR is its owner's.

The program gives it the control plane's own subnets and route tables (``Network.control_plane_*``), never the
node subnets': only the subnets that hold the EKS control-plane ENIs route back to the runner (issue 33 item 5).

Every route is a standalone ``aws.ec2.Route`` (never an inline route list, which would own the table's whole route
set). ``routes`` lists them; the EKS cluster waits on them (components/eks_cluster.py, ``network_path``), so they
exist when pulumi-eks writes the aws-auth ConfigMap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from .config.cluster import DeployerRoute


@dataclass(frozen=True)
class DeployerRoutesArgs:
    routes: list[DeployerRoute]
    vpc_id: pulumi.Input[str]
    private_subnet_ids: Mapping[str, pulumi.Input[str]] = field(metadata={"doc": "Private subnet per AZ ID."})
    private_route_table_ids: Mapping[str, pulumi.Input[str]] = field(metadata={"doc": "Private route table per AZ ID."})
    name_prefix: str
    tags: dict[str, str] = field(default_factory=dict)


class DeployerRoutes(pulumi.ComponentResource):
    """Transit-gateway attachments or peering connections, and the routes to the runner's network over them."""

    routes: list[aws.ec2.Route]

    def __init__(self, name: str, args: DeployerRoutesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:deployer_routes:DeployerRoutes", name, None, opts)
        self.routes = []
        attachments: dict[str, aws.ec2transitgateway.VpcAttachment] = {}
        peerings: dict[str, aws.ec2.VpcPeeringConnection] = {}
        for i, route in enumerate(args.routes):
            tgw_target: str | None = None
            pcx_target: pulumi.Input[str] | None = None
            after: pulumi.Resource
            if route.transit_gateway_id is not None:
                tgw = route.transit_gateway_id
                if tgw not in attachments:
                    attachments[tgw] = aws.ec2transitgateway.VpcAttachment(
                        f"{name}-{tgw}",
                        transit_gateway_id=tgw,
                        vpc_id=args.vpc_id,
                        subnet_ids=list(args.private_subnet_ids.values()),
                        tags={**args.tags, "Name": f"{args.name_prefix}-deployer-{tgw}"},
                        opts=pulumi.ResourceOptions(parent=self),
                    )
                after, tgw_target = attachments[tgw], tgw
            elif route.peer_vpc_id is not None:
                peer = route.peer_vpc_id
                if peer not in peerings:
                    peerings[peer] = aws.ec2.VpcPeeringConnection(
                        f"{name}-{peer}",
                        vpc_id=args.vpc_id,
                        peer_vpc_id=peer,
                        auto_accept=True,
                        tags={**args.tags, "Name": f"{args.name_prefix}-deployer-{peer}"},
                        opts=pulumi.ResourceOptions(parent=self),
                    )
                after, pcx_target = peerings[peer], peerings[peer].id
            else:  # unreachable: the config requires exactly one target (components/config/cluster.py)
                raise ValueError(f"cluster.deployerAccess.routes[{i}] has no target")
            for az, table in args.private_route_table_ids.items():
                self.routes.append(
                    aws.ec2.Route(
                        f"{name}-{i}-{az}",
                        route_table_id=table,
                        destination_cidr_block=str(route.cidr),
                        transit_gateway_id=tgw_target,
                        vpc_peering_connection_id=pcx_target,
                        opts=pulumi.ResourceOptions(parent=self, depends_on=[after]),
                    )
                )
        self.register_outputs(
            {
                "transitGatewayAttachmentIds": {k: v.id for k, v in attachments.items()},
                "peeringConnectionIds": {k: v.id for k, v in peerings.items()},
            }
        )
