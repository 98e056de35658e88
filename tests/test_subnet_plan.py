"""``plan_subnets``: the new VPC's per-AZ subnets never overlap and always fit, or the config is rejected.

A property test over VPC sizes, subnet prefix lengths and AZ counts (hypothesis), plus literal cases for
each error path: a plan that AWS would reject at ``CreateSubnet`` ("The CIDR conflicts with another
subnet", EC2 API reference) must be stopped at config time instead.
"""

from __future__ import annotations

import ipaddress
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.config.network import NetworkConfig, plan_subnets

AZS = ["use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6", "use1-az3"]


def _network(vpc: str, azs: int, private_len: int | None, public_len: int) -> NetworkConfig:
    return NetworkConfig.model_validate(
        {
            "cidr": vpc,
            "availabilityZoneIds": AZS[:azs],
            "privateSubnetPrefixLength": private_len,
            "publicSubnetPrefixLength": public_len,
        }
    )


@settings(max_examples=300, deadline=None)
@given(
    vpc_len=st.integers(min_value=16, max_value=24),
    azs=st.integers(min_value=1, max_value=6),
    private_len=st.one_of(st.none(), st.integers(min_value=16, max_value=26)),
    public_len=st.integers(min_value=20, max_value=28),
)
def test_planned_subnets_are_disjoint_inside_the_vpc_or_rejected(
    vpc_len: int, azs: int, private_len: int | None, public_len: int
) -> None:
    vpc = ipaddress.ip_network(f"10.0.0.0/{vpc_len}")
    network = _network(str(vpc), azs, private_len, public_len)
    try:
        plan = plan_subnets(network)
    except ValueError as err:
        assert str(err), "a rejected plan says why"
        return
    subnets = [*plan.private.values(), *plan.public.values()]
    assert list(plan.private) == AZS[:azs] == list(plan.public)
    assert all(s.subnet_of(vpc) for s in subnets)
    for a, b in itertools.combinations(subnets, 2):
        assert not a.overlaps(b), f"{a} overlaps {b}"
    assert {s.prefixlen for s in plan.private.values()} == {private_len or min(vpc_len + 3, 28)}
    assert {s.prefixlen for s in plan.public.values()} == {public_len}


def test_default_plan_of_a_16_with_two_azs() -> None:
    plan = plan_subnets(_network("10.192.0.0/16", 2, None, 24))
    assert {k: str(v) for k, v in plan.private.items()} == {"use1-az1": "10.192.0.0/19", "use1-az2": "10.192.32.0/19"}
    assert {k: str(v) for k, v in plan.public.items()} == {"use1-az1": "10.192.224.0/24", "use1-az2": "10.192.225.0/24"}


@pytest.mark.parametrize(
    ("vpc", "azs", "private_len", "public_len", "message"),
    [
        # the private subnets would take every block, leaving the public ones on top of a private one
        (
            "10.0.0.0/16",
            4,
            18,
            24,
            "a 10.0.0.0/16 VPC holds 4 /18 blocks; 4 private subnets plus one block for public subnets need 5: "
            "use a larger VPC or a longer privateSubnetPrefixLength",
        ),
        ("10.0.0.0/20", 1, 20, 24, "privateSubnetPrefixLength /20 must be longer than the VPC's /20"),
        ("10.0.0.0/16", 2, 26, 24, "publicSubnetPrefixLength /24 is larger than the public block 10.0.255.192/26"),
        ("10.0.0.0/16", 3, 19, 20, "10.0.224.0/19 holds only 2 /20 public subnets for 3 AZs"),
    ],
)
def test_plans_that_do_not_fit_are_rejected(
    vpc: str, azs: int, private_len: int, public_len: int, message: str
) -> None:
    with pytest.raises(ValueError) as err:
        plan_subnets(_network(vpc, azs, private_len, public_len))
    assert str(err.value) == message


def test_plans_that_fit_exactly_are_accepted() -> None:
    """Boundaries: 3 private /18s plus the public /18 fill a /16 exactly; four /20 public subnets fill the block."""
    plan = plan_subnets(_network("10.0.0.0/16", 3, 18, 20))
    assert [str(s) for s in plan.private.values()] == ["10.0.0.0/18", "10.0.64.0/18", "10.0.128.0/18"]
    assert [str(s) for s in plan.public.values()] == ["10.0.192.0/20", "10.0.208.0/20", "10.0.224.0/20"]
    one_block = plan_subnets(_network("10.0.0.0/20", 1, 21, 21))  # a public subnet as large as its block
    assert [str(s) for s in one_block.public.values()] == ["10.0.8.0/21"]
    # the default private size is the VPC's prefix + 3, capped at /28
    assert {s.prefixlen for s in plan_subnets(_network("10.0.0.0/24", 1, None, 28)).private.values()} == {27}
