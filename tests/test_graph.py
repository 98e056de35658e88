"""Resource graph, critical path and independence of long creates (benchmark issue); since the rehearsal
issue, views of the rehearsal's complete graph (pulumi-eks children expanded) and readiness durations."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from tools.cli.preview import preview
from tools.rehearse.graph import Graph, create_minutes, write_graph

HEAVY = ("eks:index:Cluster", "aws:eks/cluster:Cluster", "aws-native:sagemaker:Cluster")
ROOT = Path(__file__).resolve().parents[1]


def test_critical_path_is_a_dependency_chain(stack_runs) -> None:
    run = stack_runs["prod"]
    graph = Graph.build(run.registrations)
    total, chain = graph.critical_path()
    assert chain, "no critical path found"
    assert total == sum(create_minutes(r) for r in chain)
    for earlier, later in pairwise(chain):
        assert earlier.urn in graph.edges[later.urn], f"{later.name} does not wait on {earlier.name}"
    # The chain ends at the resource that finishes last: nothing waits on it.
    assert not any(chain[-1].urn in deps for deps in graph.edges.values())


def test_dependency_on_component_means_its_resources(stack_runs) -> None:
    run = stack_runs["prod"]
    graph = Graph.build(run.registrations)
    for deps in graph.edges.values():
        assert all(graph.nodes[d].custom for d in deps), "edges must point at real resources, not components"


def _independent(run, typ: str, heavy_urns: set[str]) -> None:
    graph = Graph.build(run.registrations)
    regs = run.of_type(typ)
    assert regs, f"prod registers no {typ}"
    for reg in regs:
        waits_on = graph.ancestors(reg.urn) & heavy_urns
        assert not waits_on, f"{typ} {reg.name} waits on {[graph.nodes[u].name for u in waits_on]}"


def test_long_independent_creates_do_not_wait_on_eks_or_hyperpod(stack_runs) -> None:
    run = stack_runs["prod"]
    heavy = {r.urn for r in run.registrations if r.type in HEAVY}
    assert heavy, "prod registers neither EKS nor HyperPod"
    for typ in (
        "aws:elasticache/replicationGroup:ReplicationGroup",
        "aws:acm/certificateValidation:CertificateValidation",
    ):
        _independent(run, typ, heavy)
    graph = Graph.build(run.registrations)
    # IAM roles trusting only AWS services (not the cluster's OIDC provider) must not wait either.
    service_roles = [
        r for r in run.of_type("aws:iam/role:Role") if "oidc" not in str(r.inputs.get("assumeRolePolicy", "")).lower()
    ]
    assert service_roles
    for reg in service_roles:
        assert not graph.ancestors(reg.urn) & heavy, f"role {reg.name} waits on EKS/HyperPod"


def test_preview_writes_graph_and_prints_critical_path(tmp_path: Path, capsys) -> None:
    target = tmp_path / "prod.mmd"
    assert preview("prod", critical_path=True, graph=target) == 0
    out = capsys.readouterr().out
    assert "deploy critical path" in out
    text = target.read_text()
    assert text.startswith("flowchart LR") and "-->" in text


def test_dot_output(stack_runs, tmp_path: Path) -> None:
    (path,) = write_graph(stack_runs["dev"].registrations, tmp_path / "dev.dot")
    text = path.read_text()
    assert text.startswith("digraph") and "aws:ec2/vpc:Vpc" in text


def test_critical_path_includes_the_eks_control_plane(stack_runs) -> None:
    """Under mocks eks:index:Cluster has no children; the complete graph gives it its real ones."""
    total, chain = Graph.build(stack_runs["prod"].registrations).critical_path()
    types = [r.type for r in chain]
    assert "aws:eks/cluster:Cluster" in types
    assert types.index("aws:eks/cluster:Cluster") < types.index("aws-native:sagemaker:Cluster")
    assert [r.name for r in chain if r.type == "aws:eks/cluster:Cluster"] == ["eks-cluster-eksCluster"]
    assert total >= 15 + 25 + 20  # EKS, HyperPod, the inference add-on (policies/readiness.yaml)


def test_durations_come_from_the_readiness_data(stack_runs) -> None:
    run = stack_runs["prod"]
    by_type = {r.type: r for r in Graph.build(run.registrations).nodes.values()}
    assert create_minutes(by_type["aws:eks/cluster:Cluster"]) == 15
    assert create_minutes(by_type["aws-native:sagemaker:Cluster"]) == 25
    assert create_minutes(by_type["aws:ec2/vpc:Vpc"]) == 0  # unknown: counts 0, shown as unknown
    assert create_minutes(by_type["eks:index:Cluster"]) == 0  # a component takes no time itself
    assert not (ROOT / "tools" / "create_durations.yaml").exists(), "one copy of the durations only"


def test_graph_picture_includes_eks_children(stack_runs, tmp_path: Path) -> None:
    (path,) = write_graph(stack_runs["prod"].registrations, tmp_path / "prod.dot")
    text = path.read_text()
    for name in ("eks-cluster-eksCluster", "eks-cluster-nodeAccess", "eks-cluster-vpc-cni"):
        assert name in text
    assert "color=red" in text  # the critical path is highlighted


def test_committed_graph_picture_is_current() -> None:
    svg = (ROOT / "docs" / "prod-graph.svg").read_text(encoding="utf-8").replace("&#45;", "-")
    assert "eks-cluster-eksCluster" in svg and "hyperpod-cluster" in svg
