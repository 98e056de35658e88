"""``hyperpod-inference:network.interfaceEndpoints`` — interface VPC endpoints for the AWS APIs the nodes call.

Kept in its own module (the network layer's subnets and routes live in ``network.py``). With private DNS on, the
services' regional hostnames resolve to the endpoints' addresses inside the VPC, so image pulls (ECR) and
credential exchanges (STS, EKS Auth) stay off the NAT path. Which services, and why:
``policies.security_baselines.INTERFACE_ENDPOINT_SERVICES`` (one table for the config and the policy pack).

Default: on in prod, off elsewhere (each endpoint is billed per AZ-hour); off for ``network.existing`` unless
``enabled: true`` (the VPC's owner may already run endpoints with private DNS, and a second endpoint with private
DNS for the same service in one VPC is refused).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Protocol, cast

from pydantic import Field

from policies.security_baselines import INTERFACE_ENDPOINT_SERVICES

from .base import ConfigIssue, Model, join_path
from .checks import Check


class _Network(Protocol):
    @property
    def interface_endpoints(self) -> InterfaceEndpointsConfig: ...
    @property
    def existing(self) -> object | None: ...


class StackView(Protocol):
    """What this module reads of the stack: ``network`` (its module imports this one, so only its shape here)."""

    @property
    def is_prod(self) -> bool: ...
    @property
    def network(self) -> _Network: ...


InterfaceService = Literal["ec2", "ecr.api", "ecr.dkr", "sts", "sagemaker.api", "eks-auth"]
KEY = "network.interfaceEndpoints"


class InterfaceEndpointsConfig(Model):
    """Interface VPC endpoints (``com.amazonaws.<region>.<service>``) in the private subnets, private DNS on."""

    enabled: bool | None = Field(
        default=None,
        description="Create them. Default: true in prod for a new VPC, false elsewhere and for network.existing.",
    )
    services: list[InterfaceService] = Field(
        default_factory=lambda: cast(list[InterfaceService], list(INTERFACE_ENDPOINT_SERVICES)),
        description="Service suffixes: ec2 (FSBP EC2.10), ecr.api (EC2.55), ecr.dkr (EC2.56), sts, sagemaker.api "
        "and eks-auth (HyperPod: add-on installs can fail in private subnets without them). Default: all six.",
        min_length=1,
    )


def interface_endpoint_services(cfg: StackView) -> tuple[str, ...]:
    """The services to create endpoints for in this stack (empty when off)."""
    ie = cfg.network.interface_endpoints
    enabled = ie.enabled if ie.enabled is not None else (cfg.is_prod and cfg.network.existing is None)
    return tuple(dict.fromkeys(ie.services)) if enabled else ()


def _interface_endpoint_checks(cfg: StackView) -> Iterable[ConfigIssue]:
    seen: dict[str, int] = {}
    for i, service in enumerate(cfg.network.interface_endpoints.services):
        if service in seen:
            yield ConfigIssue(
                join_path(KEY, "services", i), f"{service} is listed twice (also services[{seen[service]}])"
            )
        seen.setdefault(service, i)


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (_interface_endpoint_checks,)
