"""Interface VPC endpoints (issue 23 item 10: FSBP EC2.10/EC2.55/EC2.56 and HyperPod's private-subnet note).

Registered values are asserted as literals; the policy ``vpc-interface-endpoints`` is caught alone on a variant of
prod's graph at each environment's level and passes on its nearest valid variants.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest

from components.config.vpc_endpoints import InterfaceService
from policies.readiness import load_readiness
from policies.security_baselines import INTERFACE_ENDPOINT_SERVICES, REQUIRED_INTERFACE_ENDPOINTS
from tests.conftest import registered, stack_mapping
from tests.test_edge import _added, _drop, _edit, _only, _set
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration

ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
SG = "aws:ec2/securityGroup:SecurityGroup"
SG_IN = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_OUT = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
COMPONENT = "hyperpod:vpc_endpoints:VpcInterfaceEndpoints"
NET = "hyperpod-inference:network"


def _interface(run: StackRun) -> dict[str, Registration]:
    return {r.name: r for r in run.of_type(ENDPOINT) if r.inputs.get("vpcEndpointType") == "Interface"}


def _id(run: StackRun, typ: str, name: str) -> str:
    return str(run.monitor.resources[run.named(typ, name).urn].id)


def test_prod_gets_the_six_interface_endpoints_with_private_dns(stack_runs: dict[str, StackRun]) -> None:
    run = stack_runs["prod"]
    endpoints = _interface(run)
    assert {n: e.inputs["serviceName"] for n, e in endpoints.items()} == {
        "network-endpoints-ec2": "com.amazonaws.us-east-1.ec2",
        "network-endpoints-ecr-api": "com.amazonaws.us-east-1.ecr.api",
        "network-endpoints-ecr-dkr": "com.amazonaws.us-east-1.ecr.dkr",
        "network-endpoints-sts": "com.amazonaws.us-east-1.sts",
        "network-endpoints-sagemaker-api": "com.amazonaws.us-east-1.sagemaker.api",
        "network-endpoints-eks-auth": "com.amazonaws.us-east-1.eks-auth",
    }
    private = sorted(
        _id(run, "aws:ec2/subnet:Subnet", f"network-private-{az}") for az in ("use1-az2", "use1-az4", "use1-az6")
    )
    sg_id = _id(run, SG, "network-endpoints-sg")
    vpc_id = _id(run, "aws:ec2/vpc:Vpc", "network-vpc")
    for endpoint in endpoints.values():
        assert endpoint.inputs["privateDnsEnabled"] is True
        assert sorted(endpoint.inputs["subnetIds"]) == private
        assert endpoint.inputs["securityGroupIds"] == [sg_id]
        assert endpoint.inputs["vpcId"] == vpc_id
    (component,) = [r for r in run.registrations if r.type == COMPONENT]
    assert component.parent == run.named("hyperpod:network:Network", "network").urn


def test_endpoint_security_group_admits_only_https_from_the_vpc(stack_runs: dict[str, StackRun]) -> None:
    run = stack_runs["prod"]
    sg = run.named(SG, "network-endpoints-sg")
    sg_id = _id(run, SG, "network-endpoints-sg")
    assert "ingress" not in sg.inputs and "egress" not in sg.inputs
    rules = [r.inputs for r in run.of_type(SG_IN) if r.inputs["securityGroupId"] == sg_id]
    assert [(r["ipProtocol"], r["fromPort"], r["toPort"], r["cidrIpv4"]) for r in rules] == [
        ("tcp", 443, 443, "10.64.0.0/16")
    ]
    assert [r for r in run.of_type(SG_OUT) if r.inputs["securityGroupId"] == sg_id] == []


def test_dev_has_none_by_default_and_gets_them_when_enabled(stack_runs: dict[str, StackRun], run) -> None:
    assert _interface(stack_runs["dev"]) == {}
    mapping = stack_mapping("dev")
    mapping[NET]["interfaceEndpoints"] = {"enabled": True, "services": ["ecr.api", "ecr.dkr"]}
    dev = registered(run("dev", mapping))
    assert sorted(e.inputs["serviceName"] for e in _interface(dev).values()) == [
        "com.amazonaws.us-west-2.ecr.api",
        "com.amazonaws.us-west-2.ecr.dkr",
    ]


def test_existing_vpc_gets_them_only_when_asked(stack_runs: dict[str, StackRun], run) -> None:
    assert _interface(stack_runs["attach"]) == {}
    mapping = stack_mapping("attach")
    mapping[NET]["interfaceEndpoints"] = {"enabled": True}
    attach = registered(run("attach", mapping))
    endpoints = _interface(attach)
    assert len(endpoints) == 6
    for endpoint in endpoints.values():
        assert endpoint.inputs["vpcId"] == "vpc-0a1b2c3d4e5f60718"
        assert sorted(endpoint.inputs["subnetIds"]) == ["subnet-0a1b2c3d4e5f60711", "subnet-0a1b2c3d4e5f60722"]


def test_prod_switched_off_fails_the_mandatory_policy(run) -> None:
    from policies.engine import evaluate
    from policies.pack import POLICIES

    mapping = stack_mapping("prod")
    mapping[NET]["interfaceEndpoints"] = {"enabled": False}
    prod = registered(run("prod", mapping))
    assert _interface(prod) == {}
    found = [r for r in evaluate(POLICIES, prod.registrations, "prod") if r.policy == "vpc-interface-endpoints"]
    assert [(r.level, r.resource_name) for r in found] == [("mandatory", "network-vpc")]
    assert found[0].message.startswith(
        "VPC has no interface endpoint for ec2, ecr.api, ecr.dkr, sagemaker.api, eks-auth"
    )


def test_a_service_listed_twice_is_a_config_error(run) -> None:
    mapping = stack_mapping("prod")
    mapping[NET]["interfaceEndpoints"] = {"services": ["ecr.api", "sts", "ecr.api"]}
    result = run("prod", mapping)
    assert result.config_error is not None and result.registrations == []
    assert [i.render() for i in result.config_error.issues] == [
        "hyperpod-inference:network.interfaceEndpoints.services[2]: ecr.api is listed twice (also services[0])"
    ]


def test_an_unknown_service_is_a_config_error_naming_the_key(run) -> None:
    mapping = stack_mapping("prod")
    mapping[NET]["interfaceEndpoints"] = {"services": ["ecr.api", "s3"]}
    result = run("prod", mapping)
    assert result.config_error is not None
    rendered = [i.render() for i in result.config_error.issues]
    assert any(r.startswith("hyperpod-inference:network.interfaceEndpoints.services[1]:") for r in rendered), rendered


# --- the policy, one variant at a time -------------------------------------------------------------------


@pytest.mark.parametrize(("env", "level"), [("prod", "mandatory"), ("staging", "advisory"), ("dev", "advisory")])
@pytest.mark.parametrize("service", ["ec2", "ecr.api", "ecr.dkr", "sagemaker.api", "eks-auth"])
def test_each_required_endpoint_missing_is_caught_alone(stack_runs, env: str, level: str, service: str) -> None:
    results = _only(
        _added(stack_runs, _drop(ENDPOINT, f"network-endpoints-{service.replace('.', '-')}"), env),
        "vpc-interface-endpoints",
        level,
    )
    assert [r.resource_name for r in results] == ["network-vpc"]
    assert f"no interface endpoint for {service} (" in results[0].message


def test_private_dns_off_is_caught_on_the_endpoint(stack_runs) -> None:
    results = _only(
        _added(stack_runs, _edit(ENDPOINT, "network-endpoints-ecr-dkr", _set(privateDnsEnabled=False))),
        "vpc-interface-endpoints",
        "mandatory",
    )
    assert [r.resource_name for r in results] == ["network-endpoints-ecr-dkr"]


def test_nearest_valid_variants(stack_runs) -> None:
    # sts is not required by any control; a gateway endpoint (S3) is no interface endpoint and not counted
    assert _added(stack_runs, _drop(ENDPOINT, "network-endpoints-sts")) == []

    def as_gateway(props: dict[str, Any]) -> None:
        props["vpcEndpointType"] = "Gateway"

    _only(
        _added(stack_runs, _edit(ENDPOINT, "network-endpoints-ec2", as_gateway)), "vpc-interface-endpoints", "mandatory"
    )


def test_service_list_is_one_table() -> None:
    assert list(typing.get_args(InterfaceService)) == list(INTERFACE_ENDPOINT_SERVICES)
    assert REQUIRED_INTERFACE_ENDPOINTS == ("ec2", "ecr.api", "ecr.dkr", "sagemaker.api", "eks-auth")


def test_readiness_knows_interface_endpoints(stack_runs: dict[str, StackRun]) -> None:
    readiness = load_readiness()
    endpoint = stack_runs["prod"].named(ENDPOINT, "network-endpoints-eks-auth")
    entry = readiness.entry_for(ENDPOINT, endpoint.inputs)
    assert entry.label == "interface VPC endpoint (private DNS)"
    assert (entry.create_timeout_minutes, entry.delete_timeout_minutes) == (10, 10)
    gateway = stack_runs["prod"].named(ENDPOINT, "network-s3-endpoint")
    assert readiness.entry_for(ENDPOINT, gateway.inputs).label != entry.label
