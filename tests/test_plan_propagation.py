"""Replacement spreads through the plan diff (issue 38 items 1 and 2): from a *created* dependency, and from a
Kubernetes provider whose cluster may be replaced to every object behind it.

Small made-up plans first (each branch of the rule, both directions), then the prod reference stack.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cached_scope
from tools.cli.preview import preview
from tools.plan.diff import POLICY, diff_plans
from tools.plan.writer import EXTENSION, UNKNOWN_ID

P = "urn:pulumi:prod::hyperpod-inference::"
VPC, SUBNET = "aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet"
EKS, K8S_PROVIDER = "eks:index:Cluster", "pulumi:providers:kubernetes"


def _urn(typ: str, name: str) -> str:
    return f"{P}{typ}::{name}"


def _res(
    typ: str, name: str, inputs: dict[str, Any], deps: dict[str, list[str]] | None = None, provider: str = ""
) -> dict[str, Any]:
    urn = _urn(typ, name)
    state: dict[str, Any] = {"type": typ, "urn": urn, "custom": True, "inputs": inputs}
    if deps:
        state["propertyDependencies"] = deps
        state["dependencies"] = sorted({u for us in deps.values() for u in us})
    step: dict[str, Any] = {"op": "create", "urn": urn, "newState": state, "detailedDiff": None}
    if provider:
        step["provider"] = state["provider"] = provider
    return step


def _plan(*steps: dict[str, Any]) -> dict[str, Any]:
    return {
        "steps": list(steps),
        EXTENSION: {"format": 3, "project": "hyperpod-inference", "stack": "prod", "environment": "prod"},
    }


def _ops(plan: dict[str, Any]) -> dict[str, str]:
    return {s["urn"].rsplit("::", 1)[-1]: s["op"] for s in plan["steps"]}


def _because(plan: dict[str, Any], name: str) -> list[str]:
    urn = next(s["urn"] for s in plan["steps"] if s["urn"].endswith(f"::{name}"))
    because: list[str] = plan[EXTENSION]["stepDetails"].get(urn, {}).get("because", [])
    return because


# --- 1. a created dependency ---------------------------------------------------------------------------


def _network(vpc_name: str, subnet_vpc_id: Any = UNKNOWN_ID) -> dict[str, Any]:
    vpc = _res(VPC, vpc_name, {"cidrBlock": "10.0.0.0/16"})
    subnet = _res(SUBNET, "subnet-a", {"cidrBlock": "10.0.0.0/20", "vpcId": subnet_vpc_id}, {"vpcId": [vpc["urn"]]})
    return _plan(vpc, subnet)


def test_a_renamed_vpc_is_created_and_its_subnet_replaced() -> None:
    """vpcId is ForceNew (ec2/vpc_subnet.go): a subnet whose VPC is created anew is replaced."""
    plan = diff_plans(_network("vpc-old"), _network("vpc-new"))
    assert _ops(plan) == {"vpc-new": "create", "subnet-a": "replace", "vpc-old": "delete"}
    assert _because(plan, "subnet-a") == ["replaced because VPC vpc-new is created (its vpcId)"]
    (subnet,) = [s for s in plan["steps"] if s["op"] == "replace"]
    assert subnet["replaceReasons"] == ["vpcId"]
    assert subnet["detailedDiff"] == {"vpcId": {"kind": "update-replace", "inputDiff": True}}


def test_a_created_dependency_behind_a_known_value_changes_nothing() -> None:
    """The subnet names its VPC by a value it was given (known offline): compared as it is, equal."""
    base, head = _network("vpc-old", "vpc-0123456789abcdef0"), _network("vpc-new", "vpc-0123456789abcdef0")
    assert _ops(diff_plans(base, head)) == {"vpc-new": "create", "vpc-old": "delete"}


def test_a_created_dependency_feeding_an_updatable_input_is_an_update() -> None:
    """A listener's default action forwards to a target group created anew: elbv2/listener.go updates
    default_action in place, so the listener is updated, not replaced."""

    def plan(tg_name: str) -> dict[str, Any]:
        tg = _res("aws:lb/targetGroup:TargetGroup", tg_name, {"port": 80, "protocol": "HTTP"})
        listener = _res(
            "aws:lb/listener:Listener",
            "http",
            {"defaultActions": [{"type": "forward", "targetGroupArn": UNKNOWN_ID}], "loadBalancerArn": "arn:lb"},
            {"defaultActions": [tg["urn"]]},
        )
        return _plan(tg, listener)

    diffed = diff_plans(plan("tg-old"), plan("tg-new"))
    assert _ops(diffed) == {"tg-new": "create", "http": "update", "tg-old": "delete"}
    assert _because(diffed, "http") == ["updated because target group tg-new is created (its defaultActions)"]


def test_a_dependency_only_updated_does_not_spread() -> None:
    base = _network("vpc")
    head = copy.deepcopy(base)
    head["steps"][0]["newState"]["inputs"]["tags"] = {"team": "ml"}
    assert _ops(diff_plans(base, head)) == {"vpc": "update"}


@pytest.fixture(scope=cached_scope("module"))
def prod_plan() -> dict[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert preview("prod", as_json=True) == 0
    plan: dict[str, Any] = json.loads(buf.getvalue())
    return plan


def _diff_prod(tmp_path: Path, base: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "base.json"
    path.write_text(json.dumps(base), encoding="utf-8")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = preview("prod", as_json=True, diff=path)
    return code, json.loads(buf.getvalue())


def test_prod_with_a_renamed_vpc_replaces_the_subnets_and_the_clusters(tmp_path, prod_plan) -> None:
    """The base's VPC had another name: the head's VPC is a create (and the old one a delete), and everything
    whose ForceNew input it computes is replaced — the HyperPod cluster included, which stops the prod plan."""
    (vpc,) = [s for s in prod_plan["steps"] if s["urn"].endswith("$aws:ec2/vpc:Vpc::network-vpc")]
    old = vpc["urn"].replace("::network-vpc", "::network-vpc-old")
    base = json.loads(json.dumps(prod_plan).replace(f'"{vpc["urn"]}"', f'"{old}"'))
    code, plan = _diff_prod(tmp_path, base)
    assert code == 1
    ops = _ops(plan)
    assert (ops["network-vpc"], ops["network-vpc-old"]) == ("create", "delete")
    for az in ("use1-az2", "use1-az4", "use1-az6"):
        assert ops[f"network-private-{az}"] == "replace"
        assert "replaced because VPC network-vpc is created (its vpcId)" in _because(plan, f"network-private-{az}")
    assert ops["hyperpod-cluster"] == "replace"
    results = {
        r["resourceName"]: r["enforcementLevel"] for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY
    }
    assert results["hyperpod-cluster"] == "mandatory"


# --- 2. a Kubernetes provider that may be replaced -----------------------------------------------------


def _cluster(eks_inputs: dict[str, Any]) -> dict[str, Any]:
    eks = _res(EKS, "eks-cluster", eks_inputs)
    provider = _res(K8S_PROVIDER, "eks-k8s", {"kubeconfig": UNKNOWN_ID}, {"kubeconfig": [eks["urn"]]})
    behind = f"{provider['urn']}::{UNKNOWN_ID}"
    other = f"{_urn(K8S_PROVIDER, 'other-cluster')}::{UNKNOWN_ID}"
    objects = [
        _res(
            "kubernetes:core/v1:Namespace", "ns", {"kind": "Namespace", "metadata": {"name": "inference"}}, None, behind
        ),
        _res("kubernetes:core/v1:ConfigMap", "cm", {"kind": "ConfigMap", "data": {"k": "v"}}, None, behind),
        _res(
            "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig",
            "endpoint",
            {"kind": "InferenceEndpointConfig", "spec": {"replicas": 2}},
            None,
            behind,
        ),
        _res("kubernetes:core/v1:ConfigMap", "elsewhere", {"kind": "ConfigMap", "data": {}}, None, other),
    ]
    return _plan(eks, provider, *objects)


@pytest.mark.parametrize(
    ("change", "eks_op", "behind_op"),
    [
        # pulumi-eks subnetIds: no source says how it is applied -> the cluster may be replaced
        ({"subnetIds": ["subnet-b"]}, "may-replace", "may-replace"),
        # a new name is a new cluster (ForceNew): the kubeconfig names another cluster; provider.go DiffConfig
        # decides from that cluster, which offline is unknown -> may-replace
        ({"name": "hpi-prod-eks-2"}, "replace", "may-replace"),
        # a version upgrade is in place (UpdateClusterVersion): the provider and its objects stay
        ({"version": "1.34"}, "update", "same"),
    ],
    ids=["cluster-may-be-replaced", "cluster-replaced", "cluster-updated"],
)
def test_every_object_behind_a_provider_whose_cluster_may_be_replaced(change, eks_op, behind_op) -> None:
    base = _cluster({"name": "hpi-prod-eks", "subnetIds": ["subnet-a"], "version": "1.33"})
    head = _cluster({"name": "hpi-prod-eks", "subnetIds": ["subnet-a"], "version": "1.33", **change})
    plan = diff_plans(base, head)
    ops = {s["urn"].rsplit("::", 1)[-1]: s["op"] for s in plan["steps"]}
    expected = {"eks-cluster": eks_op}
    if behind_op != "same":
        expected |= {"eks-k8s": "may-replace", "ns": behind_op, "cm": behind_op, "endpoint": behind_op}
    assert ops == expected, "the object behind another provider ('elsewhere') never moves"
    if behind_op == "may-replace":
        for name in ("ns", "cm", "endpoint"):
            assert _because(plan, name) == ["may be replaced because kubernetes provider eks-k8s may be replaced"]


def test_prod_every_kubernetes_object_behind_eks_k8s_may_be_replaced(tmp_path, prod_plan) -> None:
    """The EKS cluster's subnets recorded as other literal IDs: pulumi-eks privateSubnetIds may replace the cluster,
    so its kubeconfig, so the eks-k8s provider and every Kubernetes object it manages; the prod guard stops it."""
    base = copy.deepcopy(prod_plan)
    (eks,) = [s for s in base["steps"] if s["urn"].endswith("$eks:index:Cluster::eks-cluster")]
    assert eks["newState"]["inputs"]["privateSubnetIds"] == [UNKNOWN_ID] * 3, "computed by the network's subnets"
    eks["newState"]["inputs"]["privateSubnetIds"][0] = "subnet-0aaaaaaaaaaaaaaa0"
    code, plan = _diff_prod(tmp_path, base)
    assert code == 1
    behind = [
        s["urn"]
        for s in prod_plan["steps"]
        if s["newState"]["type"].startswith("kubernetes:") and s.get("provider", "").split("::")[-2] == "eks-k8s"
    ]
    assert len(behind) >= 10, "the operator's objects, the endpoints, the target group bindings"
    ops = {s["urn"]: s["op"] for s in plan["steps"]}
    assert {ops.get(u, "same") for u in behind} == {"may-replace"}
    assert ops[eks["urn"]] == "may-replace"
    (provider,) = [u for u in ops if u.endswith("$pulumi:providers:kubernetes::eks-k8s")]
    assert ops[provider] == "may-replace"
    results = {
        r["resourceName"]: r["enforcementLevel"] for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY
    }
    assert results == {"eks-cluster": "mandatory"}
