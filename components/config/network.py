"""``hyperpod-inference:network`` — a new VPC sized for HyperPod, or an existing VPC and its subnets."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Annotated, Literal, Protocol

from pydantic import Field, model_validator

from .base import ConfigIssue, Model
from .checks import Check
from .vpc_endpoints import InterfaceEndpointsConfig


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def network(self) -> NetworkConfig: ...


AzId = Annotated[
    str, Field(pattern=r"^[a-z]{2,4}[0-9]+-az[0-9]+$", description="An availability-zone ID, e.g. usw2-az1")
]
SubnetId = Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")]


class ExistingVpc(Model):
    """A VPC you already run. HyperPod needs one private subnet per instance-group AZ ID."""

    vpc_id: str = Field(pattern=r"^vpc-[0-9a-f]{8,17}$")
    cidr: ipaddress.IPv4Network = Field(description="The VPC's primary CIDR (used for the node SG's 443 rule).")
    private_subnets: dict[AzId, SubnetId] = Field(min_length=1, description="Private subnet per AZ ID.")
    public_subnets: dict[AzId, SubnetId] = Field(
        default_factory=dict, description="Public subnets per AZ ID (internet-facing ALB)."
    )


class NetworkConfig(Model):
    """Either ``cidr`` + ``availabilityZoneIds`` (a new VPC) or ``existing``."""

    cidr: ipaddress.IPv4Network | None = Field(
        default=None, description="CIDR of the new VPC; /16 recommended (p5 nodes use many IPs)."
    )
    availability_zone_ids: list[AzId] = Field(
        default_factory=list, description="AZ IDs (not names) for the new VPC's subnets."
    )
    private_subnet_prefix_length: int | None = Field(
        default=None, ge=16, le=26, description="Size of each private subnet; default: VPC prefix + 3 (a /19 in a /16)."
    )
    public_subnet_prefix_length: int = Field(default=24, ge=20, le=28)
    nat_gateways: Literal["single", "perAz"] | None = Field(
        default=None, description="NAT gateways: one per AZ (default in prod) or a single one (default elsewhere)."
    )
    existing: ExistingVpc | None = None
    interface_endpoints: InterfaceEndpointsConfig = Field(
        default_factory=InterfaceEndpointsConfig,
        description="Interface VPC endpoints (EC2, ECR, STS, SageMaker API, EKS Auth) in the private subnets; "
        "on by default in prod (components/config/vpc_endpoints.py).",
    )

    @model_validator(mode="after")
    def _one_mode(self) -> NetworkConfig:
        if self.existing is not None:
            if self.cidr is not None or self.availability_zone_ids:
                raise ValueError("set either `existing` or `cidr` + `availabilityZoneIds`, not both")
        else:
            if self.cidr is None or not self.availability_zone_ids:
                raise ValueError(
                    "a new VPC needs `cidr` and at least one entry in `availabilityZoneIds` (or give `existing`)"
                )
            if len(set(self.availability_zone_ids)) != len(self.availability_zone_ids):
                raise ValueError("`availabilityZoneIds` lists an AZ ID twice")
        return self

    @property
    def az_ids(self) -> list[str]:
        """The AZ IDs the stack can place nodes in."""
        if self.existing is not None:
            return list(self.existing.private_subnets)
        return list(self.availability_zone_ids)

    @property
    def vpc_cidr(self) -> ipaddress.IPv4Network:
        cidr = self.existing.cidr if self.existing is not None else self.cidr
        assert cidr is not None  # guaranteed by _one_mode
        return cidr


class SubnetPlan(Model):
    """The subnet CIDRs a new VPC gets, one private and one public subnet per AZ ID, and (with
    ``cluster.deployerAccess.routes``) one /28 control-plane subnet per AZ ID."""

    private: dict[str, ipaddress.IPv4Network]
    public: dict[str, ipaddress.IPv4Network]
    control_plane: dict[str, ipaddress.IPv4Network] = {}


# The EKS control plane's own subnets, where its ENIs answer the deployer: "at least six IP
# addresses ... we recommend at least 16" and "in at least two different Availability Zones" (Amazon EKS user guide,
# network-reqs "Subnet requirements and considerations"). /28 is 16 addresses.
CONTROL_PLANE_PREFIX = 28


def plan_subnets(network: NetworkConfig, *, control_plane: bool = False) -> SubnetPlan:
    """Carve per-AZ subnets out of the new VPC's CIDR.

    Private subnets (where HyperPod nodes put their many ENIs) are taken from the start of the range at
    ``privateSubnetPrefixLength``; public subnets (ALB, NAT) from the last block of that size, cut into
    ``publicSubnetPrefixLength`` pieces. Raises ``ValueError`` when the sizes do not fit the VPC.
    """
    vpc = network.vpc_cidr
    azs = network.availability_zone_ids
    private_len = network.private_subnet_prefix_length or min(vpc.prefixlen + 3, 28)
    if private_len <= vpc.prefixlen:
        if network.private_subnet_prefix_length is None:  # the user set only the VPC: name what is too small
            raise ValueError(
                f"network.cidr {vpc} is too small for per-AZ subnets: private subnets are the VPC's prefix + 3, "
                "at most /28 (the smallest VPC subnet), which a /28 or smaller VPC cannot hold: use a larger VPC (/16 recommended)"
            )
        raise ValueError(f"privateSubnetPrefixLength /{private_len} must be longer than the VPC's /{vpc.prefixlen}")
    blocks = list(vpc.subnets(new_prefix=private_len))
    if len(blocks) < len(azs) + 1:
        raise ValueError(
            f"a {vpc} VPC holds {len(blocks)} /{private_len} blocks; {len(azs)} private subnets plus one block for "
            f"public subnets need {len(azs) + 1}: use a larger VPC or a longer privateSubnetPrefixLength"
        )
    public_block = blocks[-1]
    public_len = network.public_subnet_prefix_length
    if public_len < public_block.prefixlen:
        raise ValueError(f"publicSubnetPrefixLength /{public_len} is larger than the public block {public_block}")
    public_blocks = list(public_block.subnets(new_prefix=public_len))
    if len(public_blocks) < len(azs):
        raise ValueError(
            f"{public_block} holds only {len(public_blocks)} /{public_len} public subnets for {len(azs)} AZs"
        )
    # Control-plane subnets: /28s of the last public-sized block, which no AZ's public subnet uses (adding an AZ
    # takes the next unused block from the front, so existing subnets never move).
    planes: dict[str, ipaddress.IPv4Network] = {}
    if control_plane:
        spare = public_blocks[-1] if len(public_blocks) > len(azs) else None
        pieces = list(spare.subnets(new_prefix=CONTROL_PLANE_PREFIX)) if spare is not None else []
        if len(pieces) < len(azs):
            raise ValueError(
                f"cluster.deployerAccess.routes needs one /{CONTROL_PLANE_PREFIX} control-plane subnet per AZ ID, carved "
                f"from a /{public_len} block the public subnets leave free in {public_block}; there is "
                f"{'none' if spare is None else f'room for {len(pieces)}'}: use a shorter publicSubnetPrefixLength or "
                "fewer AZ IDs"
            )
        planes = {az: pieces[i] for i, az in enumerate(azs)}
    return SubnetPlan(
        private={az: blocks[i] for i, az in enumerate(azs)},
        public={az: public_blocks[i] for i, az in enumerate(azs)},
        control_plane=planes,
    )


def _network_checks(cfg: StackView) -> Iterable[ConfigIssue]:
    net = cfg.network
    if net.existing is None:
        try:
            plan_subnets(net)
        except ValueError as err:
            yield ConfigIssue("network.cidr", str(err))


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (_network_checks,)
