"""Every layer that can be adopted is built adopted in every environment, not only in the staging-shaped attach stack.

A default that must differ for an adopted layer (an existing VPC, EKS/HyperPod clusters, the operator's
prerequisites, an external Redis) was exercised only by ``attach`` (environment staging), so prod with an existing
VPC was never built. The matrix here turns each reference stack (prod, staging, dev) into its adopted variant one
layer at a time, the smallest edit a user would make, and demands what the created variant already guarantees:
valid config, the adopted layer's resources not registered, no mandatory policy result, and a rehearsal that
converges, for create and for destroy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.config.cluster import GROUP_CREATION_KEYS
from policies.engine import evaluate
from policies.pack import POLICIES
from tests.conftest import cached_scope, stack_mapping
from tools.plan.harness import StackRun, run_stack
from tools.rehearse import rehearse

P = "hyperpod-inference:"
ENVIRONMENTS = ("prod", "staging", "dev")
Adopt = Callable[[dict[str, Any], str], None]


def _region(mapping: dict[str, Any]) -> str:
    return str(mapping["aws:region"])


def adopt_network(mapping: dict[str, Any], stack: str) -> None:
    """The VPC, its subnets (per AZ ID of the new-VPC plan) and, for an internet-facing ALB, two public subnets."""
    net = mapping[P + "network"]
    azs = net["availabilityZoneIds"]
    existing: dict[str, Any] = {
        "vpcId": "vpc-0123456789abcdef0",
        "cidr": net["cidr"],
        "privateSubnets": {az: f"subnet-0{i:016x}" for i, az in enumerate(azs)},
    }
    if not mapping.get(P + "ingress", {}).get("internal", False) and P + "ingress" in mapping:
        existing["publicSubnets"] = {az: f"subnet-1{i:016x}" for i, az in enumerate(azs)}
    mapping[P + "network"] = {"existing": existing}
    access = mapping[P + "cluster"].get("deployerAccess", {})
    access.pop("routes", None)  # the route tables of an adopted VPC are its owner's


def adopt_cluster(mapping: dict[str, Any], stack: str) -> None:
    """The EKS and HyperPod clusters (and so their VPC): the stack keeps only the groups it declares."""
    adopt_network(mapping, stack)
    cluster = mapping[P + "cluster"]
    existing: dict[str, Any] = {
        "eksClusterName": f"ml-{stack}",
        "hyperpodClusterArn": f"arn:aws:sagemaker:{_region(mapping)}:123456789012:cluster/a1b2c3d4e5f6",
    }
    if mapping.get(P + "kvCache", {}).get("l2Backend") == "redis":
        existing["nodeSecurityGroupId"] = "sg-0123456789abcdef0"
    # an adopted cluster's groups are its owner's to create and roll: they keep only what the stack reads of them
    groups = [{k: v for k, v in g.items() if k not in GROUP_CREATION_KEYS.values()} for g in cluster["instanceGroups"]]
    mapping[P + "cluster"] = {"existing": existing, "instanceGroups": groups}


def adopt_prerequisites(mapping: dict[str, Any], stack: str) -> None:
    mapping.setdefault(P + "operator", {})["existingPrerequisites"] = ["cert-manager", "metrics-server"]


LAYERS: dict[str, tuple[Adopt, set[str]]] = {
    # layer -> (the edit, types that must not be registered once it is adopted)
    # an adopted VPC is its owner's: no subnets, routes, flow logs or default-SG adoption, and no interface
    # endpoints by default (components/config/vpc_endpoints.py: the owner's VPC may have them already; a second
    # endpoint with private DNS for the same service fails)
    "network": (
        adopt_network,
        {
            "aws:ec2/vpc:Vpc",
            "aws:ec2/subnet:Subnet",
            "aws:ec2/natGateway:NatGateway",
            "aws:ec2/route:Route",
            "aws:ec2/internetGateway:InternetGateway",
            "aws:ec2/flowLog:FlowLog",
            "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
            "aws:ec2/vpcEndpoint:VpcEndpoint",
        },
    ),
    "cluster": (
        adopt_cluster,
        {"eks:index:Cluster", "aws-native:sagemaker:Cluster", "aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet"},
    ),
    "prerequisites": (adopt_prerequisites, set()),
}
ADDONS_OF_ADOPTED_PREREQUISITES = {"cert-manager", "metrics-server"}


@pytest.fixture(scope=cached_scope("module"))
def adopted_runs() -> dict[tuple[str, str], tuple[dict[str, Any], StackRun]]:
    runs = {}
    for stack in ENVIRONMENTS:
        for layer, (adopt, _) in LAYERS.items():
            mapping = stack_mapping(stack)
            adopt(mapping, stack)
            runs[(stack, layer)] = (mapping, run_stack(stack, mapping))
    return runs


CASES = [pytest.param(stack, layer, id=f"{stack}-{layer}") for stack in ENVIRONMENTS for layer in LAYERS]


@pytest.mark.parametrize(("stack", "layer"), CASES)
def test_adopted_layer_builds_in_every_environment(adopted_runs: dict, stack: str, layer: str) -> None:
    mapping, run = adopted_runs[(stack, layer)]
    assert run.config_error is None, f"{stack} with {layer} adopted: {run.config_error}"
    assert mapping[P + "environment"] == stack
    registered = {r.type for r in run.registrations}
    assert len(run.registrations) > 50
    assert not registered & LAYERS[layer][1], sorted(registered & LAYERS[layer][1])
    if layer == "prerequisites":
        addons = {r.inputs.get("addonName") for r in run.registrations if r.type == "aws:eks/addon:Addon"}
        assert not addons & ADDONS_OF_ADOPTED_PREREQUISITES, addons
    mandatory = [r.render() for r in evaluate(POLICIES, run.registrations, stack) if r.level == "mandatory"]
    assert mandatory == []


@pytest.mark.parametrize(("stack", "layer"), CASES)
def test_adopted_layer_rehearses_create_and_destroy(adopted_runs: dict, stack: str, layer: str) -> None:
    mapping, run = adopted_runs[(stack, layer)]
    assert run.config_error is None
    for destroy in (False, True):
        result = rehearse(run, mapping=mapping, destroy=destroy)
        assert result.converges, [f.render() if hasattr(f, "render") else str(f) for f in result.findings]


def test_the_matrix_differs_from_the_created_stacks(adopted_runs: dict, stack_runs: dict[str, StackRun]) -> None:
    """Guard against a vacuous matrix: each edit really removes what the created stack registers."""
    for (stack, layer), (_, run) in adopted_runs.items():
        created = {r.type for r in stack_runs[stack].registrations}
        assert LAYERS[layer][1] <= created or layer == "prerequisites", (stack, layer)
        assert len(run.registrations) < len(stack_runs[stack].registrations), (stack, layer)
