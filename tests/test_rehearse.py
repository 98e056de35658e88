"""Deploy rehearsal (issue 14): each convergence defect of issue 13, reintroduced in a copy of the registered
graph, is reported with the right kind; the reference stacks converge; every readiness entry has a source."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from policies.readiness import Condition, Toleration, input_value, load_readiness
from tests.conftest import stack_mapping
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration
from tools.rehearse import Rehearsal, expand, rehearse
from tools.rehearse.__main__ import main
from tools.rehearse.create import crd_of, parse_duration_minutes

ADDON = "aws:eks/addon:Addon"
HELM = "kubernetes:helm.sh/v3:Release"
HYPERPOD = "aws-native:sagemaker:Cluster"
IEC = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
TGB = "kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding"
NODE_WAIT = "hyperpod:HyperPodNodeWait"


def regs_of(run: StackRun) -> list[Registration]:
    """A deep copy of a run's registrations: defects are reintroduced here, never in the program."""
    regs = copy.deepcopy(run.registrations)
    assert len(regs) > 50, "the run registered too few resources"
    return regs


def one(regs: list[Registration], typ: str, pred: Callable[[Registration], bool] = lambda r: True) -> Registration:
    found = [r for r in regs if r.type == typ and pred(r)]
    assert len(found) == 1, f"{len(found)} registrations of {typ} match"
    return found[0]


def by_name(regs: list[Registration], name: str) -> Registration:
    found = [r for r in regs if r.name == name]
    assert len(found) == 1, f"{len(found)} registrations named {name}"
    return found[0]


def addon(regs: list[Registration], addon_name: str) -> Registration:
    return one(regs, ADDON, lambda r: r.inputs.get("addonName") == addon_name)


def drop_dependency(reg: Registration, urns: set[str]) -> None:
    """Remove ``urns`` from a registration's dependencies (as if the program forgot them)."""
    assert urns & set(reg.dependencies), f"{reg.name} does not depend on any of {urns}"
    reg.dependencies = [d for d in reg.dependencies if d not in urns]
    reg.property_dependencies = {k: [u for u in v if u not in urns] for k, v in reg.property_dependencies.items()}


def findings(result: Rehearsal, kind: str, resource: str) -> list[str]:
    return [f.render() for f in result.findings if f.kind == kind and (f.resource == resource or resource in f.also)]


def run_of(stack_runs: dict[str, StackRun], stack: str) -> tuple[list[Registration], dict]:
    return regs_of(stack_runs[stack]), stack_mapping(stack)


# --- the readiness data ------------------------------------------------------------------------------


def test_every_readiness_entry_has_a_source() -> None:
    r = load_readiness()
    entries = [r.default, *r.resources]
    assert len(r.resources) >= 15 and len(r.system_pods) >= 15
    for e in entries:
        assert e.source.strip(), f"{e.type} has no source"
        for w in e.waits_for:
            assert w.source.strip(), f"{e.type}: wait {w.kind} has no source"
    for p in r.system_pods:
        assert p.source.strip(), f"system pod {p.name} has no source"
    for rc in r.remote_components:
        assert rc.source.strip()
        for c in rc.children:
            assert c.source.strip(), f"{rc.type} child {c.suffix} has no source"
    for block in (r.architecture, r.health_taint, r.deployer_access):
        assert block.source.strip()
    # A source that starts with a label (all caps: P-EKS, TF-AWS, HPCLI, ...) names a defined one.
    texts = [e.source for e in entries] + [p.source for p in r.system_pods]
    texts += [w.source for e in entries for w in e.waits_for]
    for text in texts:
        head = text.split()[0].strip(":,")
        if head.isupper() and head not in {"AWS", "EKS", "EC2"}:
            assert head in r.sources, f"source label {head!r} is not defined in sources: ({text})"


def test_unknown_durations_stay_unknown() -> None:
    r = load_readiness()
    assert r.entry_for("aws:ec2/vpc:Vpc", {}).create_minutes is None
    assert r.entry_for(ADDON, {"addonName": "metrics-server"}).create_minutes is None
    assert r.entry_for("aws:eks/cluster:Cluster", {}).create_minutes == 15
    assert r.entry_for(ADDON, {"addonName": "amazon-sagemaker-hyperpod-inference"}).create_timeout_minutes == 20


def test_tolerations_match_like_kubernetes() -> None:
    key = "sagemaker.amazonaws.com/node-health-status"
    equal = Toleration(key=key, operator="Equal", value="Unschedulable", effect="NoSchedule")
    assert equal.tolerates(key, "Unschedulable", "NoSchedule")
    assert not equal.tolerates(key, "UnschedulablePendingReplacement", "NoSchedule")
    assert not equal.tolerates(key, "Unschedulable", "NoExecute")
    exists = Toleration(key=key, operator="Exists", effect="NoSchedule")
    assert exists.tolerates(key, "UnschedulablePendingReboot", "NoSchedule")
    assert not exists.tolerates("other", None, "NoSchedule")
    everything = Toleration(operator="Exists")
    assert everything.tolerates("anything", "x", "NoExecute")


def test_conditions_and_input_paths() -> None:
    inputs = {"configurationValues": json.dumps({"alb": {"enabled": True}}), "chart": "vendor/x/HyperPodHelmChart"}
    assert input_value(inputs, "configurationValues.alb.enabled") is True
    assert input_value(inputs, "configurationValues.keda.enabled", "absent") == "absent"
    assert Condition(input="chart", op="glob", value="*HyperPodHelmChart*").holds(inputs)
    assert not Condition(input="chart", op="glob", value="*keda*").holds(inputs)
    assert Condition(input="missing", op="ne", value=False, default=True).holds(inputs)
    assert not Condition(input="missing", op="ne", value=False, default=False).holds(inputs)
    assert Condition(input="missing", op="falsy").holds(inputs)
    assert Condition(input="addon", op="in", value=["a", "b"]).holds({"addon": "b"})


def test_small_helpers() -> None:
    assert parse_duration_minutes("120m") == 120
    assert parse_duration_minutes("1h30m") == 90
    assert parse_duration_minutes("90s") == 1.5
    assert parse_duration_minutes("") is None
    assert crd_of(IEC) == "inference.sagemaker.aws.amazon.com/InferenceEndpointConfig"
    assert crd_of(TGB) == "elbv2.k8s.aws/TargetGroupBinding"
    assert crd_of("kubernetes:core/v1:Namespace") is None
    assert crd_of("aws:s3/bucket:Bucket") is None


# --- the complete graph ------------------------------------------------------------------------------


def test_pulumi_eks_cluster_is_expanded_into_its_children(stack_runs) -> None:
    regs = regs_of(stack_runs["prod"])
    expanded = {r.name: r for r in expand(regs) if r.parent and r.parent.endswith("eks:index:Cluster::eks-cluster")}
    assert {
        "eks-cluster-eksCluster": "aws:eks/cluster:Cluster",
        "eks-cluster-oidcProvider": "aws:iam/openIdConnectProvider:OpenIdConnectProvider",
        "eks-cluster-eks-k8s": "pulumi:providers:kubernetes",
        "eks-cluster-nodeAccess": "kubernetes:core/v1:ConfigMap",
        "eks-cluster-vpc-cni": ADDON,
        "eks-cluster-kube-proxy": ADDON,
    }.items() <= {n: r.type for n, r in expanded.items()}.items()
    # the program passes its own service role (bounded, named for the stack): pulumi-eks creates none
    assert "eks-cluster-eksRole" not in expanded and "eks-cluster-eksRole-AmazonEKSClusterPolicy" not in expanded
    # vpc-cni waits on the aws-auth ConfigMap (P-EKS cluster.ts:1105); the ConfigMap on the provider.
    assert expanded["eks-cluster-nodeAccess"].urn in expanded["eks-cluster-vpc-cni"].dependencies
    assert expanded["eks-cluster-eksCluster"].inputs["vpcConfig"]["endpointPublicAccess"] is False
    assert expanded["eks-cluster-vpc-cni"].inputs["addonVersion"] == "v1.20.0-eksbuild.1"


@pytest.mark.parametrize(
    ("options", "skip_default", "created"),
    [
        ({"enabled": True}, True, True),  # explicitly enabled
        ({"configurationValues": {"replicaCount": 1}}, True, True),  # explicitly configured
        ({}, True, False),  # no node group, not explicit (PR #1371)
        ({}, False, True),  # default node group
        ({"enabled": False}, False, False),
        (None, True, False),
    ],
)
def test_coredns_child_follows_pulumi_eks_rules(stack_runs, options, skip_default, created) -> None:
    regs = regs_of(stack_runs["dev"])
    eks = one(regs, "eks:index:Cluster")
    eks.inputs.pop("corednsAddonOptions", None)
    if options is not None:
        eks.inputs["corednsAddonOptions"] = options
    eks.inputs["skipDefaultNodeGroup"] = skip_default
    names = {r.name for r in expand(regs)}
    assert ("eks-cluster-coredns" in names) is created


def test_dependency_on_remote_component_means_all_its_children(stack_runs) -> None:
    from tools.rehearse import CompleteGraph

    regs = regs_of(stack_runs["prod"])
    graph = CompleteGraph.build(regs)
    hp = one(regs, HYPERPOD)
    kids = {r.urn for r in graph.nodes.values() if r.parent and r.parent.endswith("eks:index:Cluster::eks-cluster")}
    assert len(kids) >= 6
    assert kids <= graph.ancestors(hp.urn), "the HyperPod cluster must wait for every pulumi-eks child"


# --- the reference stacks -----------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_reference_stacks_converge(stack_runs, stack) -> None:
    result = rehearse(stack_runs[stack], mapping=stack_mapping(stack))
    assert result.findings == [], "\n".join(f.render() for f in result.findings)
    assert result.exit_code == 0 and result.blocked == []
    assert result.resources > 60


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_critical_path_runs_eks_hyperpod_addon_endpoint(stack_runs, stack) -> None:
    result = rehearse(stack_runs[stack], mapping=stack_mapping(stack))
    types = [s.type for s in result.critical_path]
    names = [s.name for s in result.critical_path]
    wanted = ["aws:eks/cluster:Cluster", HYPERPOD]
    positions = [types.index(t) for t in wanted]
    positions.append(names.index("inference-operator-addon"))
    positions.append(
        max(i for i, t in enumerate(types) if t.startswith("kubernetes:inference.sagemaker.aws.amazon.com"))
    )
    assert positions == sorted(positions), names
    steps = result.critical_path
    assert result.total_minutes == steps[-1].finish >= 60
    for earlier, later in pairwise(steps):
        assert later.start == earlier.finish
    timeouts = {s.name: s.timeout for s in steps}
    assert timeouts["inference-operator-addon"] == 45  # the program's customTimeouts
    assert timeouts["hyperpod-cluster"] == 720  # the handler's timeoutInMinutes (policies/readiness.yaml)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_reference_stacks_destroy_clean(stack_runs, stack) -> None:
    result = rehearse(stack_runs[stack], mapping=stack_mapping(stack), destroy=True)
    assert result.findings == [], "\n".join(f.render() for f in result.findings)
    if stack == "prod":
        for name in ("hyperpod-cluster", "kv-cache-rg", "hyperpod-lifecycle", "operator-iam-tls"):
            assert name in result.protected
        assert "eks-cluster-eksCluster (deletionProtection)" in result.protected
    else:
        assert result.protected == []


# --- issue 13's defects, reintroduced in a copy of the graph -----------------------------------------


def test_coredns_through_pulumi_eks_before_nodes_is_a_deadlock(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    one(regs, "eks:index:Cluster").inputs["corednsAddonOptions"] = {"enabled": True, "version": "v1.12.1-eksbuild.2"}
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "deadlock", "eks-cluster-coredns")
    assert found and "coredns" in found[0] and "hyperpod-cluster" in found[0]
    assert result.exit_code == 1
    assert "hyperpod-cluster" in result.blocked


@pytest.mark.parametrize(
    ("atomic", "skip_await", "training", "deadlock"),
    [
        (True, False, True, True),  # today's defect: atomic (waits) and the chart's training Deployments
        (False, False, True, True),  # waiting is the default
        (True, True, True, True),  # atomic turns waiting back on
        (False, True, True, False),  # skipAwait: nothing to wait for
        (True, False, False, False),  # waits, but only DaemonSets (0 desired before nodes)
    ],
)
def test_waiting_helm_release_before_nodes_is_a_deadlock(stack_runs, atomic, skip_await, training, deadlock) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    release = one(regs, HELM, lambda r: "HyperPodHelmChart" in str(r.inputs.get("chart")))
    release.inputs["atomic"] = atomic
    release.inputs["skipAwait"] = skip_await
    release.inputs["values"]["trainingOperators"] = {"enabled": training}
    release.inputs["values"]["mpi-operator"] = {"enabled": training}
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "deadlock", release.name)
    assert bool(found) is deadlock, found
    if deadlock:
        assert any("training-operator" in f for f in found)
        assert any("mpi-operator" in f for f in found)


def test_endpoint_not_after_the_addon_misses_its_crd(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    endpoint = by_name(regs, "endpoints-inference-llama-70b-kvaware")
    # the add-on and the LB controller drain ordered after it (components/destroy_waits.py)
    drain = next(r for r in regs if r.inputs.get("resourceKind") == "hyperpod:LoadBalancerControllerDrain")
    drop_dependency(endpoint, {addon(regs, "amazon-sagemaker-hyperpod-inference").urn, drain.urn})
    result = rehearse(regs, mapping=mapping)
    crd = [f for f in result.findings if f.resource == endpoint.name and "CRD" in f.waits_for]
    assert crd and crd[0].kind in {"crd-missing", "race"}
    assert "inference.sagemaker.aws.amazon.com/InferenceEndpointConfig" in crd[0].waits_for
    assert "inference-operator-addon" in crd[0].why


def test_custom_resource_whose_crd_nothing_installs(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "dev")
    endpoint = one(regs, IEC)
    endpoint.type = "kubernetes:inference.sagemaker.aws.amazon.com/v1:NoSuchKind"
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "crd-missing", endpoint.name)
    assert found and "nothing in the stack provides it" in found[0]


def test_target_group_binding_before_the_lb_controller_is_a_race(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    tgb = by_name(regs, "front-door-tgb-llama-70b-kvaware")
    controllers = {addon(regs, "amazon-sagemaker-hyperpod-inference").urn}
    controllers |= {r.urn for r in regs if r.type == ADDON and r.name.startswith("operator-prereqs-")}
    # ... and the endpoint CR and Namespace it may wait on (they come after the add-on).
    controllers |= {r.urn for r in regs if r.type.startswith("kubernetes:") and r.type != HELM}
    # ... and the LB controller drain (components/destroy_waits.py), which comes after the add-on too.
    controllers |= {r.urn for r in regs if r.inputs.get("resourceKind") == "hyperpod:LoadBalancerControllerDrain"}
    drop_dependency(tgb, controllers)
    result = rehearse(regs, mapping=mapping)
    webhook = [f for f in result.findings if f.resource == tgb.name and "aws-load-balancer-controller" in f.waits_for]
    assert webhook and webhook[0].kind == "race"
    destroy = rehearse(regs, mapping=mapping, destroy=True)
    assert findings(destroy, "finalizer-orphaned", tgb.name)


def _without_deployer_rules(regs: list[Registration]) -> list[Registration]:
    rules = {r.urn for r in regs if "deployer" in r.name and "IngressRule" in r.type}
    assert rules, "prod declares no deployer rule (cluster.deployerAccess)"
    kept = [r for r in regs if r.urn not in rules]
    for r in kept:
        r.dependencies = [d for d in r.dependencies if d not in rules]
    return kept


def test_private_api_without_deployer_path_is_unreachable(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    regs = _without_deployer_rules(regs)
    mapping["hyperpod-inference:cluster"].pop("deployerAccess", None)
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "unreachable-api", "eks-cluster-nodeAccess")
    assert found and "private only" in found[0]
    assert "hyperpod-inference:cluster.deployerAccess" in found[0]
    # One finding per type and cause, naming every endpoint (linear output for many endpoints).
    endpoints = [f for f in result.findings if f.kind == "unreachable-api" and f.type == IEC]
    assert len(endpoints) == 1
    assert 1 + len(endpoints[0].also) == len([r for r in regs if r.type == IEC])


def test_public_endpoint_is_a_deployer_path(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    regs = _without_deployer_rules(regs)
    mapping["hyperpod-inference:cluster"].pop("deployerAccess", None)
    eks = one(regs, "eks:index:Cluster")
    eks.inputs["endpointPublicAccess"] = True
    eks.inputs["publicAccessCidrs"] = ["198.51.100.7/32"]
    result = rehearse(regs, mapping=mapping)
    assert "unreachable-api" not in result.kinds()
    assert any("198.51.100.7/32" in n for n in result.notes)


def test_deployer_rule_created_after_the_cluster_does_not_help(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    rules = [r for r in regs if "deployer" in r.name and "IngressRule" in r.type]
    assert rules
    eks = one(regs, "eks:index:Cluster")
    eks.dependencies = [d for d in eks.dependencies if d not in {r.urn for r in rules}]
    for rule in rules:
        rule.dependencies.append(eks.urn)  # e.g. built from an output of the cluster
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "unreachable-api", "eks-cluster-nodeAccess")
    assert found and rules[0].name in found[0]


# --- issue 23 item 1: a security-group rule is not a path; the replies need a route back -------------------

ROUTE = "aws:ec2/route:Route"
PRIVATE_TABLES = "network-private-use1-az2-rt, network-private-use1-az4-rt, network-private-use1-az6-rt"
# With deployer routes the EKS cluster sits in its own subnets, on their own tables (issue 33 item 5).
PLANE_TABLES = "network-control-plane-use1-az2-rt, network-control-plane-use1-az4-rt, network-control-plane-use1-az6-rt"


def test_prod_reaches_its_private_api_both_ways(stack_runs) -> None:
    result = rehearse(stack_runs["prod"], mapping=stack_mapping("prod"))
    assert "unreachable-api" not in result.kinds()
    assert result.notes[0] == (
        "Kubernetes API: reachable — HTTPS to the cluster security group from eks-api-from-deployer-cidr-0; replies "
        f"to 10.0.8.0/24 routed back from {PLANE_TABLES}"
    )
    assert (
        "Kubernetes API (cannot be known offline): the far side of the deployer's routes (10.0.8.0/24 via "
        "transitGatewayId tgw-0a1b2c3d4e5f60718) is outside this stack: whether it routes back to 10.64.0.0/16 (the "
        "transit gateway's route tables, the peer VPC's routes) cannot be known offline"
    ) in result.notes


def _without_deployer_routes(regs: list[Registration]) -> list[Registration]:
    """prod as it was before issue 23: the runner's CIDR admitted on 443, and no route back to it."""
    gone = {r.urn for r in regs if r.name.startswith("deployer-routes")}
    assert len(gone) >= 4, "prod creates no deployer routes"
    kept = [r for r in regs if r.urn not in gone]
    for r in kept:
        r.dependencies = [d for d in r.dependencies if d not in gone]
        r.property_dependencies = {k: [u for u in v if u not in gone] for k, v in r.property_dependencies.items()}
    return kept


UNROUTED = (
    "the control plane's replies cannot reach the runner: route tables "
    f"{PRIVATE_TABLES} send 10.0.8.0/24 to 0.0.0.0/0 via natGatewayId, which cannot carry them to a private network "
    "(a NAT or internet gateway translates or drops them); add cluster.deployerAccess.routes (transitGatewayId or "
    "peerVpcId) for the runner's network (docs/cluster.md, 'Reaching the API')"
)
UNROUTED_PLANE = (
    f"the control plane's replies cannot reach the runner: route tables {PLANE_TABLES} send 10.0.8.0/24 nowhere (no "
    "route), which cannot carry them to a private network (a NAT or internet gateway translates or drops them); add "
    "cluster.deployerAccess.routes (transitGatewayId or peerVpcId) for the runner's network (docs/cluster.md, "
    "'Reaching the API')"
)


def test_runner_cidr_without_a_route_back_is_unreachable_naming_the_route_tables(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    result = rehearse(_without_deployer_routes(regs), mapping=mapping)
    found = [f for f in result.findings if f.kind == "unreachable-api" and f.resource == "eks-cluster-nodeAccess"]
    assert [f.why for f in found] == [UNROUTED_PLANE]
    assert found[0].source.startswith("EKS user guide cluster-endpoint")
    assert result.exit_code == 1 and "hyperpod-cluster" in result.blocked


def test_cli_exits_1_for_the_stack_without_its_routes(tmp_path: Path, capsys) -> None:
    mapping = stack_mapping("prod")
    assert mapping["hyperpod-inference:cluster"]["deployerAccess"].pop("routes")
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump({"config": mapping}), encoding="utf-8")
    assert main(["--stack", "prod", "--stack-file", str(path), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["converges"] is False
    assert {f["why"] for f in out["findings"] if f["kind"] == "unreachable-api"} == {UNROUTED}
    assert main(["--stack", "prod"]) == 0  # the reference stack, with its routes
    capsys.readouterr()


def test_a_route_created_after_the_cluster_does_not_help(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    eks = one(regs, "eks:index:Cluster")
    route = by_name(regs, "deployer-routes-0-use1-az4")
    drop_dependency(eks, {route.urn})
    route.dependencies.append(eks.urn)
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "unreachable-api", "eks-cluster-nodeAccess")
    assert found and "the path opens with deployer-routes-0-use1-az4, which is created after it" in found[0]


def test_a_route_to_a_vpn_gateway_is_a_way_back_and_a_nat_more_specific_is_not(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    routes = [r for r in regs if r.type == ROUTE and r.inputs.get("destinationCidrBlock") == "10.0.8.0/24"]
    assert len(routes) == 3
    for r in routes:
        r.inputs.pop("transitGatewayId")
        r.inputs["gatewayId"] = "vgw-0a1b2c3d4e5f60718"
    assert "unreachable-api" not in rehearse(regs, mapping=mapping).kinds()
    routes[0].inputs["gatewayId"] = "igw-0a1b2c3d4e5f60718"  # an internet gateway cannot carry them
    result = rehearse(regs, mapping=mapping)
    assert any("send 10.0.8.0/24 to 10.0.8.0/24 via gatewayId" in f.why for f in result.findings)


def test_a_runner_inside_the_vpc_needs_no_route(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    regs = _without_deployer_routes(regs)
    one(regs, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", lambda r: r.name.endswith("cidr-0")).inputs[
        "cidrIpv4"
    ] = "10.64.250.0/24"
    mapping["hyperpod-inference:cluster"]["deployerAccess"]["cidrs"] = ["10.64.250.0/24"]
    result = rehearse(regs, mapping=mapping)
    assert "unreachable-api" not in result.kinds()
    assert result.notes[0] == (
        "Kubernetes API: reachable — HTTPS to the cluster security group from eks-api-from-deployer-cidr-0"
    )


def test_a_declared_runner_cidr_no_rule_admits_is_unreachable(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    mapping["hyperpod-inference:cluster"]["deployerAccess"]["cidrs"] = ["10.0.8.0/24", "10.0.9.0/24"]
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "unreachable-api", "eks-cluster-nodeAccess")
    assert (
        found
        and (
            "no HTTPS rule on the cluster security group admits the runner's 10.0.9.0/24 "
            "(hyperpod-inference:cluster.deployerAccess.cidrs)"
        )
        in found[0]
    )


def test_route_tables_of_an_existing_vpc_are_an_advisory_naming_preflight(run) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:network"] = {
        "existing": {
            "vpcId": "vpc-0a1b2c3d4e5f60718",
            "cidr": "10.64.0.0/16",
            "privateSubnets": {
                "use1-az2": "subnet-0a1b2c3d4e5f60712",
                "use1-az4": "subnet-0a1b2c3d4e5f60714",
                "use1-az6": "subnet-0a1b2c3d4e5f60716",
            },
            "publicSubnets": {"use1-az2": "subnet-0a1b2c3d4e5f60722", "use1-az4": "subnet-0a1b2c3d4e5f60724"},
        }
    }
    mapping["hyperpod-inference:cluster"]["deployerAccess"].pop("routes")
    adopted_vpc = run("prod", mapping)
    assert adopted_vpc.config_error is None, adopted_vpc.config_error
    result = rehearse(adopted_vpc, mapping=mapping)
    assert "unreachable-api" not in result.kinds()
    assert (
        "Kubernetes API (cannot be known offline): the route tables of the cluster's subnets subnet-0a1b2c3d4e5f60712, "
        "subnet-0a1b2c3d4e5f60714, subnet-0a1b2c3d4e5f60716 are not in this stack (network.existing): whether they "
        "route 10.0.8.0/24 back to the runner cannot be known offline; `python -m tools.preflight.regional` checks them "
        "(DescribeRouteTables)"
    ) in result.notes


def test_an_inline_route_in_a_route_table_counts(stack_runs) -> None:
    """A graph that still declares inline routes (older stacks) is read the same way."""
    regs, mapping = run_of(stack_runs, "prod")
    regs = _without_deployer_routes(regs)
    for table in [r for r in regs if r.type == "aws:ec2/routeTable:RouteTable" and "control-plane" in r.name]:
        table.inputs["routes"] = [{"cidrBlock": "10.0.0.0/16", "transitGatewayId": "tgw-0a1b2c3d4e5f60718"}]
    assert "unreachable-api" not in rehearse(regs, mapping=mapping).kinds()


def _groups(regs: list[Registration]) -> list[dict]:
    groups = one(regs, HYPERPOD).inputs["instanceGroups"]
    assert groups
    return groups


def test_controllers_that_tolerate_no_groups_taints_are_unschedulable(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    for g in _groups(regs):
        g.setdefault("kubernetesConfig", {})["taints"] = [{"key": "dedicated", "value": "llm", "effect": "NoSchedule"}]
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "unschedulable", "operator-prereqs-cert-manager")
    assert found and "taint dedicated=llm:NoSchedule not tolerated" in found[0]
    assert findings(result, "unschedulable", "inference-operator-addon")


def test_a_tolerated_taint_keeps_controllers_schedulable(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    for g in _groups(regs):
        g.setdefault("kubernetesConfig", {})["taints"] = [
            {"key": "dedicated", "value": "llm", "effect": "PreferNoSchedule"}
        ]
    result = rehearse(regs, mapping=mapping)
    assert "unschedulable" not in result.kinds(), [f.render() for f in result.findings]


def test_amd64_only_operator_on_arm64_nodes_is_unschedulable(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "dev")
    for g in _groups(regs):
        g["instanceType"] = "ml.p6e-gb200.36xlarge"
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "unschedulable", "inference-operator-addon")
    assert found and "kubernetes.io/arch=arm64" in found[0]


def exactly(result: Rehearsal) -> set[tuple[str, str, tuple[str, ...], str, str]]:
    """Every finding as (kind, resource, the others with it, what it waits for, why): the whole result."""
    got = {(f.kind, f.resource, tuple(f.also), f.waits_for, f.why) for f in result.findings}
    assert len(got) == len(result.findings), "two findings render the same"
    return got


def test_no_instances_means_no_nodes(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "dev")
    for g in _groups(regs):
        g["instanceCount"] = 0
    result = rehearse(regs, mapping=mapping)
    none = "group system has no instances; group gpu-p5 has no instances"

    def unschedulable(resource: str, pods: int, pod: str, detail: str) -> tuple[str, str, tuple[str, ...], str, str]:
        return (
            "unschedulable",
            resource,
            (),
            f"{pods} ready {pod} pod(s) ({detail})",
            f"no node can take {pod}: {none}",
        )

    controllers = "ACTIVE; DEGRADED pending; controller Deployments need schedulable nodes"
    cert_manager = "ACTIVE; controller Deployments need schedulable nodes (InsufficientNumberOfReplicas otherwise)"
    operator = "ACTIVE only once its controller-manager is healthy (a node ready, images pulled)"
    assert exactly(result) == {
        unschedulable("coredns", 2, "coredns", "add-on ACTIVE; DEGRADED (no CoreDNS pods running) counts as pending"),
        unschedulable(
            "observability-addon",
            1,
            "hyperpod-observability-controller-manager",
            "ACTIVE once its pods run; without schedulable nodes its pods stay Pending",
        ),
        unschedulable("operator-prereqs-aws-fsx-csi-driver", 2, "fsx-csi-controller", controllers),
        unschedulable("operator-prereqs-cert-manager", 1, "cert-manager", cert_manager),
        unschedulable("operator-prereqs-cert-manager", 1, "cert-manager-webhook", cert_manager),
        unschedulable("operator-prereqs-cert-manager", 1, "cert-manager-cainjector", cert_manager),
        unschedulable("operator-prereqs-metrics-server", 1, "metrics-server", controllers),
        unschedulable("inference-operator-addon", 1, "hyperpod-inference-operator-controller-manager", operator),
        unschedulable("inference-operator-addon", 2, "aws-load-balancer-controller", operator),
        unschedulable("inference-operator-addon", 1, "keda-operator", operator),
    }


def test_resource_fit_hook_is_consulted(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "dev")
    seen: list[tuple[str, str, int]] = []

    def fit(pod, group, replicas):
        seen.append((pod.name, group.name, replicas))
        return f"{pod.name} does not fit on {group.name}"

    result = rehearse(regs, mapping=mapping, fit=fit)
    assert ("metrics-server", "system", 1) in seen
    assert findings(result, "unschedulable", "operator-prereqs-metrics-server")


def test_hyperpod_not_after_the_chart_is_a_race(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    release = one(regs, HELM, lambda r: "HyperPodHelmChart" in str(r.inputs.get("chart")))
    for r in regs:  # the cluster and its component ancestors
        if release.urn in r.dependencies and (r.type == HYPERPOD or not r.custom):
            r.dependencies = [d for d in r.dependencies if d != release.urn]
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "race", "hyperpod-cluster")
    assert found and "HyperPod dependencies Helm chart" in found[0]


def test_addon_create_as_long_as_its_timeout(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    operator = addon(regs, "amazon-sagemaker-hyperpod-inference")
    assert operator.custom_timeouts.get("create") == "45m"
    operator.custom_timeouts = {}
    result = rehearse(regs, mapping=mapping)
    found = findings(result, "timeout", "inference-operator-addon")
    assert found and "20 min" in found[0]


# --- destroy -------------------------------------------------------------------------------------------


def test_written_bucket_without_force_destroy_in_dev(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "dev")
    for name in ("hyperpod-lifecycle", "operator-iam-tls"):
        one(regs, "aws:s3/bucket:Bucket", lambda r, n=name: r.name == n).inputs["forceDestroy"] = False
    result = rehearse(regs, mapping=mapping, destroy=True)
    lifecycle = findings(result, "bucket-not-empty", "hyperpod-lifecycle")
    assert lifecycle and "lifecycle scripts" in lifecycle[0]
    tls = findings(result, "bucket-not-empty", "operator-iam-tls")
    assert tls and "TLS certificates" in tls[0]


def test_protection_outside_prod_blocks_destroy(stack_runs) -> None:
    """prod's graph destroyed as staging: every protection and deletion-protection flag, and the buckets
    that are written to and not force-destroyed, block it; nothing else does."""
    regs, mapping = run_of(stack_runs, "prod")
    result = rehearse(regs, mapping=mapping, environment="staging", destroy=True)
    protected = ("protected", "pulumi destroy", "the resource is protected (outside prod)")

    def by(kind: str, waits: str, why: str, resource: str, *also: str) -> tuple[str, str, tuple[str, ...], str, str]:
        return (kind, resource, also, waits, why)

    not_empty = "written to by {} and forceDestroy is off"
    assert exactly(result) == {
        by(*protected, "observability-amp"),
        by(*protected, "dashboards-alarm-topic-key", "eks-secrets-key", "kv-cache-kms"),
        by(*protected, "access-logs-bucket", "front-door-logs", "operator-iam-tls", "hyperpod-lifecycle"),
        by(*protected, "hyperpod-cluster"),
        by(*protected, "kv-cache-rg"),
        by("deletion-protection", "pulumi destroy", "enableDeletionProtection is on (outside prod)", "front-door-alb"),
        by(
            "deletion-protection", "pulumi destroy", "deletionProtection is on (outside prod)", "eks-cluster-eksCluster"
        ),
        by(
            "bucket-not-empty",
            "an empty bucket",
            not_empty.format("ALB access logs (front-door-alb)"),
            "front-door-logs",
        ),
        by(
            "bucket-not-empty",
            "an empty bucket",
            not_empty.format("the inference operator's TLS certificates (inference-operator-addon)"),
            "operator-iam-tls",
        ),
        by(
            "bucket-not-empty",
            "an empty bucket",
            not_empty.format("the stack's own objects (lifecycle scripts) (hyperpod-lifecycle-on-create-sh)"),
            "hyperpod-lifecycle",
        ),
    }


def test_unprotected_state_in_prod(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    one(regs, "aws:elasticache/replicationGroup:ReplicationGroup").protect = False
    result = rehearse(regs, mapping=mapping, destroy=True)
    assert exactly(result) == {
        (
            "unprotected-stateful",
            "kv-cache-rg",
            (),
            "protection in prod",
            "it holds state and is not protected",
        )
    }
    assert result.findings[0].type == "aws:elasticache/replicationGroup:ReplicationGroup"
    assert result.findings[0].source.startswith("TF-AWS website/docs/r/elasticache_replication_group.html.markdown")


def test_addon_deleted_before_what_it_serves(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    operator = addon(regs, "amazon-sagemaker-hyperpod-inference")
    drop_dependency(operator, {addon(regs, "cert-manager").urn})
    result = rehearse(regs, mapping=mapping, destroy=True)
    found = findings(result, "served-deleted-first", "inference-operator-addon")
    assert found and "operator-prereqs-cert-manager" in found[0]


# --- output --------------------------------------------------------------------------------------------


def test_json_and_rich_output_carry_the_same_result(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    one(regs, "eks:index:Cluster").inputs["corednsAddonOptions"] = {"enabled": True}
    result = rehearse(regs, mapping=mapping, stack="prod")
    data = json.loads(json.dumps(result.to_json(), default=str))
    assert data["converges"] is False
    assert {"kind": "deadlock", "resource": "eks-cluster-coredns"}.items() <= data["findings"][0].items() or any(
        f["kind"] == "deadlock" and f["resource"] == "eks-cluster-coredns" for f in data["findings"]
    )
    assert data["criticalPath"]["steps"] and data["waves"]
    console = Console(record=True, width=200)
    console.print(result)
    text = console.export_text()
    assert "DEADLOCK aws:eks/addon:Addon::eks-cluster-coredns" in text
    assert "critical path" in text


def test_cli_exit_codes(tmp_path: Path, capsys) -> None:
    assert main(["--stack", "dev", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stack"] == "dev" and out["converges"] is True and out["criticalPath"]["totalMinutes"] >= 60
    assert main(["--stack", "dev", "--destroy"]) == 0
    capsys.readouterr()
    bad = stack_mapping("dev")
    bad["hyperpod-inference:cluster"]["instanceGrups"] = []
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump({"config": bad}), encoding="utf-8")
    assert main(["--stack", "bad", "--stack-file", str(path)]) == 2
    assert "instanceGrups" in capsys.readouterr().out
    assert main(["--stack", "nosuchstack"]) == 2


def test_long_creates_off_the_critical_path(stack_runs) -> None:
    result = rehearse(stack_runs["prod"], mapping=stack_mapping("prod"))
    off = {x.name: x for x in result.off_path_long}
    on = {s.name for s in result.critical_path}
    assert {"kv-cache-rg", "front-door-cert-validation"} <= off.keys()
    assert not on & off.keys()
    assert off["kv-cache-rg"].minutes is None and off["kv-cache-rg"].timeout == 60  # TF default, typical unknown
    assert off["front-door-cert-validation"].timeout == 75
    known = [x for x in result.off_path_long if x.minutes is not None]
    assert all(x.slack is not None and x.slack >= 0 for x in known)


def test_controllers_only_on_health_checked_groups_get_a_note(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "dev")
    groups = _groups(regs)
    system = [g for g in groups if g["instanceGroupName"] == "system"]
    assert system
    system[0]["instanceCount"] = 0
    for g in groups:
        if g["instanceGroupName"] != "system":
            g["onStartDeepHealthChecks"] = ["InstanceStress"]
    result = rehearse(regs, mapping=mapping)
    assert any(
        "hyperpod-inference-operator-controller-manager can run only on groups with on-start deep health checks" in n
        for n in result.notes
    ), result.notes
    assert "unschedulable" not in result.kinds()


def test_waves_follow_dependencies(stack_runs) -> None:
    from tools.rehearse import CompleteGraph
    from tools.rehearse.create import schedule

    regs = regs_of(stack_runs["prod"])
    graph = CompleteGraph.build(regs)
    readiness = load_readiness()
    entries = {u: readiness.entry_for(graph.nodes[u].type, graph.nodes[u].inputs) for u in graph.order}
    start, finish, waves = schedule(graph, entries)
    wave_of = {u: i for i, wave in enumerate(waves) for u in wave}
    assert len(wave_of) == len(graph.order)
    for urn, deps in graph.edges.items():
        for d in deps:
            assert wave_of[d] < wave_of[urn], f"{graph.nodes[urn].name} starts before {graph.nodes[d].name}"
            assert start[urn] >= finish[d]
    result = rehearse(regs, mapping=stack_mapping("prod"))
    assert [len(w) for w in result.waves] == [len(w) for w in waves]
    assert "network-vpc" in result.waves[0] and "hyperpod-cluster" not in result.waves[0]


def test_observability_addon_waits_for_nodes_and_pod_identity(stack_runs) -> None:
    """The edge branch's observability add-on: ordered before the nodes it is a deadlock; its unknown
    tolerations are noted, not guessed."""
    regs, mapping = run_of(stack_runs, "dev")
    agent = addon(regs, "eks-pod-identity-agent")
    # after the nodes means after the wait for them (HyperPod's create returns before they join)
    nodes = one(regs, "pulumi-python:dynamic:Resource", lambda r: r.inputs.get("resourceKind") == NODE_WAIT)
    obs = copy.deepcopy(agent)
    obs.name, obs.urn = "observability-addon", agent.urn.replace("eks-pod-identity-agent", "observability-addon")
    obs.inputs = {**agent.inputs, "addonName": "amazon-sagemaker-hyperpod-observability"}
    obs.dependencies = [agent.urn, nodes.urn]
    regs.append(obs)
    result = rehearse(regs, mapping=mapping)
    assert not findings(result, "deadlock", obs.name) and not findings(result, "race", obs.name)
    assert any("tolerations of hyperpod-observability-controller-manager unknown" in n for n in result.notes)
    obs.dependencies = []  # now neither after the nodes nor after the Pod Identity agent
    result = rehearse(regs, mapping=mapping)
    races = findings(result, "race", obs.name)
    assert any("Pod Identity" in f for f in races)
    assert any("hyperpod-observability-controller-manager" in f and "hyperpod-cluster" in f for f in races)


def test_deployer_path_declared_only_in_config(stack_runs) -> None:
    regs, mapping = run_of(stack_runs, "prod")
    regs = _without_deployer_rules(regs)
    assert mapping["hyperpod-inference:cluster"]["deployerAccess"], "prod declares cluster.deployerAccess"
    result = rehearse(regs, mapping=mapping)
    assert "unreachable-api" not in result.kinds()
    assert any("declared by hyperpod-inference:cluster.deployerAccess (no rule" in n for n in result.notes)


def test_adopted_hyperpod_cluster_provides_nodes_from_the_start() -> None:
    """attach creates no HyperPod cluster: the declared groups of the adopted one meet every wait for nodes;
    without them (the same graph, the adoption removed from the config) the add-ons would deadlock."""
    from tests.conftest import stack_mapping
    from tools.plan.harness import run_stack
    from tools.rehearse import rehearse

    mapping = stack_mapping("attach")
    run = run_stack("attach", mapping)
    assert run.config_error is None and run.registrations
    assert not [r for r in run.registrations if r.type == "aws-native:sagemaker:Cluster"]
    adopted = rehearse(run, mapping=mapping)
    assert adopted.converges, [f.kind for f in adopted.findings]
    assert any("a1b2c3d4e5f6/gpu-p5 (2 x ml.p5.48xlarge)" in n for n in adopted.notes)
    assert any("cannot be checked offline" in n for n in adopted.notes)
    without = copy.deepcopy(mapping)
    del without["hyperpod-inference:cluster"]["existing"]["hyperpodClusterArn"]
    orphaned = rehearse(run, mapping=without)
    assert not orphaned.converges
    assert {f.kind for f in orphaned.findings} == {"deadlock"}
    assert "inference-operator-addon" in {f.resource for f in orphaned.findings}
