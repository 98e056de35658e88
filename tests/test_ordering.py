"""Ordering rules (issue 28): the edges the program must declare between resources of one run.

The rules are data (``ordering:`` in ``policies/readiness.yaml``); these tests derive what they check from
that data — every rule, every resource of every reference stack — and pin, with literal findings, that a
missing edge is reported as a race naming both resources, the rule and its source.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from policies.readiness import load_readiness
from tests.conftest import ALL_STACKS, REGIONAL_STACKS, cached_scope, registered, stack_mapping
from tools.plan.harness import StackRun, run_stack
from tools.plan.mocks import Registration
from tools.rehearse import CompleteGraph, Finding, edges, rehearse
from tools.rehearse.ordering import describe, missing_edges, values_at

IEC = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
NAMESPACE = "kubernetes:core/v1:Namespace"
ROLE_RULE = "iam-role-grants-before-its-users"


@pytest.fixture(scope=cached_scope("module"))
def reference_runs(every_stack_run: dict[str, StackRun]) -> dict[str, StackRun]:
    """Every stack in stacks/, the global one included (it is not among ``stack_runs``)."""
    runs = every_stack_run
    assert set(runs) == set(ALL_STACKS) and set(REGIONAL_STACKS) < set(runs)
    return runs


def copy_of(run: StackRun) -> list[Registration]:
    regs = copy.deepcopy(run.registrations)
    assert len(regs) > 50, "the run registered too few resources"
    return regs


def named(regs: list[Registration], name: str, typ: str | None = None) -> Registration:
    found = [r for r in regs if r.name == name and typ in (None, r.type)]
    assert len(found) == 1, f"{len(found)} registrations named {name}"
    return found[0]


def without(reg: Registration, dependency: Registration) -> None:
    """Forget that ``reg`` depends on ``dependency`` (as if the program had not declared it)."""
    assert dependency.urn in reg.dependencies, f"{reg.name} does not depend on {dependency.name}"
    reg.dependencies = [d for d in reg.dependencies if d != dependency.urn]
    reg.property_dependencies = {k: [u for u in v if u != dependency.urn] for k, v in reg.property_dependencies.items()}


def source_of(rule_id: str) -> str:
    return next(r.source for r in load_readiness().ordering if r.id == rule_id)


# --- the data --------------------------------------------------------------------------------------------


def test_every_ordering_rule_has_a_source_with_a_defined_label() -> None:
    r = load_readiness()
    assert [rule.id for rule in r.ordering] == [
        "namespace-before-its-objects",
        "crd-installer-before-its-custom-resources",
        "iam-role-grants-before-its-users",
        "lifecycle-scripts-before-the-hyperpod-cluster",
        "bucket-access-block-before-its-policy",
        "log-bucket-policy-before-its-log-sources",
        "alb-log-bucket-policy-before-the-alb",
        "access-entry-before-its-policy-associations",
        "gateway-config-before-its-endpoints",
        "secret-before-the-endpoints-that-read-it",
    ]
    for rule in r.ordering:
        head = rule.source.split()[0].strip(":,")
        assert head in r.sources or head == "AWS", f"{rule.id}: source label {head!r} is not defined"


def test_a_rule_without_the_fields_of_its_join_is_rejected(tmp_path: Path) -> None:
    data = yaml.safe_load(Path("policies/readiness.yaml").read_text(encoding="utf-8"))
    namespace_rule = next(r for r in data["ordering"] if r["id"] == "namespace-before-its-objects")
    del namespace_rule["provider_paths"]
    path = tmp_path / "readiness.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ValidationError, match="namespace-before-its-objects: join same_value needs provider_paths"):
        load_readiness(path)


def test_values_at_walks_lists_and_json() -> None:
    inputs = {"instanceGroups": [{"lifeCycleConfig": {"sourceS3Uri": "s3://a/x/"}}, {"lifeCycleConfig": {}}]}
    assert values_at(inputs, "instanceGroups.*.lifeCycleConfig.sourceS3Uri") == ["s3://a/x/"]
    assert values_at({"v": '{"a": {"b": 1}}'}, "v.a.b") == [1]
    assert values_at({}, "metadata.namespace") == []


# --- every reference stack, every rule -------------------------------------------------------------------


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_reference_stack_lacks_no_ordering_edge(reference_runs: dict[str, StackRun], stack: str) -> None:
    graph, found = edges(reference_runs[stack])
    missing = missing_edges(found)
    assert missing == [], "missing ordering edges:\n" + "\n".join(describe(graph, e) for e in missing)


def test_every_rule_applies_in_some_reference_stack(reference_runs: dict[str, StackRun]) -> None:
    """A rule that matches nothing checks nothing: each one must find edges in the reference stacks."""
    applied: dict[str, set[tuple[str, str]]] = {rule.id: set() for rule in load_readiness().ordering}
    for run in reference_runs.values():
        graph, found = edges(run)
        for e in found:
            applied[e.rule.id].add((graph.nodes[e.user].name, graph.nodes[e.provider].name))
    assert {rule: bool(pairs) for rule, pairs in applied.items()} == dict.fromkeys(applied, True)
    # the ones issue 28 names, by the resources' names
    assert ("endpoints-inference-llama-70b-kvaware", "endpoints-ns-inference") in applied[
        "namespace-before-its-objects"
    ]
    assert ("endpoints-inference-llama-70b-kvaware", "inference-operator-addon") in applied[
        "crd-installer-before-its-custom-resources"
    ]
    assert {
        ("hyperpod-cluster", "hyperpod-execution-inline"),
        ("hyperpod-cluster", "hyperpod-execution-managed"),
        ("operator-prereqs-aws-mountpoint-s3-csi-driver", "operator-prereqs-s3-csi-policy"),
        ("inference-operator-addon", "operator-iam-execution-policy-0"),
        ("observability-addon", "observability-policy"),
        ("network-flow-log", "network-flow-logs-policy"),
        ("eks-cluster-eksCluster", "eks-service-role-cluster-policy"),
    } <= applied[ROLE_RULE]
    assert applied["lifecycle-scripts-before-the-hyperpod-cluster"] == {
        ("hyperpod-cluster", "hyperpod-lifecycle-on-create-sh")
    }


def test_names_of_a_role_do_not_make_users(reference_runs: dict[str, StackRun]) -> None:
    """IAM documents, attachments and EKS access entries name a role without acting as it; a component's
    depends_on (expanded to its children) is not a reference either."""
    graph, found = edges(reference_runs["prod"])
    users = {graph.nodes[e.user].type for e in found if e.rule.id == ROLE_RULE}
    assert users == {
        "aws:ec2/flowLog:FlowLog",
        "aws:eks/cluster:Cluster",
        "aws:eks/addon:Addon",
        "aws-native:sagemaker:Cluster",
    }


# --- a missing edge is a race naming both resources, the rule and its source -----------------------------


def test_custom_resource_not_after_its_namespace(stack_runs: dict[str, StackRun]) -> None:
    # the DPD endpoint: the kvaware one also waits for its namespace through its Redis credentials Secret
    regs = copy_of(stack_runs["prod"])
    without(named(regs, "endpoints-inference-llama-70b-dpd"), named(regs, "endpoints-ns-inference"))
    result = rehearse(regs, mapping=stack_mapping("prod"))
    assert result.findings == [
        Finding(
            kind="race",
            resource="endpoints-inference-llama-70b-dpd",
            type=IEC,
            waits_for="kubernetes:core/v1:Namespace::endpoints-ns-inference (the Namespace it is created in)",
            why="ordering rule namespace-before-its-objects: endpoints-ns-inference is not ordered before it, "
            "both can be created in parallel",
            source=source_of("namespace-before-its-objects"),
            rule="namespace-before-its-objects",
            other="endpoints-ns-inference",
        )
    ]
    assert result.findings[0].source.startswith(
        "PULUMI concepts/options/dependson (the engine orders what the graph declares): an object created"
    )
    data = result.to_json()["findings"][0]
    assert (data["kind"], data["rule"], data["resource"], data["other"]) == (
        "race",
        "namespace-before-its-objects",
        "endpoints-inference-llama-70b-dpd",
        "endpoints-ns-inference",
    )
    assert result.exit_code == 1


def test_namespace_that_waits_on_its_object_is_a_deadlock(stack_runs: dict[str, StackRun]) -> None:
    regs = copy_of(stack_runs["prod"])
    endpoint, namespace = named(regs, "endpoints-inference-llama-70b-dpd"), named(regs, "endpoints-ns-inference")
    without(endpoint, namespace)
    namespace.dependencies.append(endpoint.urn)
    result = rehearse(regs, mapping=stack_mapping("prod"))
    ordering = [f for f in result.findings if f.rule]
    assert [(f.kind, f.resource, f.other, f.why) for f in ordering] == [
        (
            "deadlock",
            "endpoints-inference-llama-70b-dpd",
            "endpoints-ns-inference",
            "ordering rule namespace-before-its-objects: endpoints-ns-inference waits on it, so it cannot come first",
        )
    ]


@pytest.mark.parametrize(
    ("dropped", "rule", "detail"),
    [
        ("hyperpod-execution-inline", ROLE_RULE, "the inline policies and policy attachments of the IAM role it uses"),
        ("hyperpod-execution-managed", ROLE_RULE, "the inline policies and policy attachments of the IAM role it uses"),
        (
            "hyperpod-lifecycle-on-create-sh",
            "lifecycle-scripts-before-the-hyperpod-cluster",
            "the lifecycle scripts under its instance groups' SourceS3Uri",
        ),
    ],
)
def test_hyperpod_cluster_not_after_its_role_policies_or_scripts(
    stack_runs: dict[str, StackRun], dropped: str, rule: str, detail: str
) -> None:
    regs = copy_of(stack_runs["prod"])
    other = named(regs, dropped)
    without(named(regs, "hyperpod-cluster"), other)
    result = rehearse(regs, mapping=stack_mapping("prod"))
    assert [(f.kind, f.resource, f.type, f.waits_for, f.why, f.rule) for f in result.findings] == [
        (
            "race",
            "hyperpod-cluster",
            "aws-native:sagemaker:Cluster",
            f"{other.type}::{dropped} ({detail})",
            f"ordering rule {rule}: {dropped} is not ordered before it, both can be created in parallel",
            rule,
        )
    ]


def test_s3_csi_addon_not_after_its_role_attachment(stack_runs: dict[str, StackRun]) -> None:
    """The role's ARN keeps the edge to the role, not to the attachment: only the rule notices."""
    regs = copy_of(stack_runs["prod"])
    addon = named(regs, "operator-prereqs-aws-mountpoint-s3-csi-driver")
    without(addon, named(regs, "operator-prereqs-s3-csi-policy", "aws:iam/rolePolicyAttachment:RolePolicyAttachment"))
    assert named(regs, "operator-prereqs-s3-csi").urn in addon.property_dependencies["serviceAccountRoleArn"]
    result = rehearse(regs, mapping=stack_mapping("prod"))
    assert [(f.kind, f.resource, f.waits_for, f.rule, f.other) for f in result.findings] == [
        (
            "race",
            "operator-prereqs-aws-mountpoint-s3-csi-driver",
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment::operator-prereqs-s3-csi-policy "
            "(the inline policies and policy attachments of the IAM role it uses)",
            ROLE_RULE,
            "operator-prereqs-s3-csi-policy",
        )
    ]


def test_custom_resource_of_any_kind_waits_for_its_crd_installer(stack_runs: dict[str, StackRun]) -> None:
    """The rule covers every resource, not only the kinds with a readiness entry: a cert-manager Certificate
    (the generic 'Kubernetes object' entry, no crd wait) in the endpoints' namespace."""
    regs = copy_of(stack_runs["prod"])
    namespace = named(regs, "endpoints-ns-inference")
    cert = copy.deepcopy(named(regs, "endpoints-inference-llama-70b-kvaware"))
    cert.type = "kubernetes:cert-manager.io/v1:Certificate"
    cert.name, cert.urn = "serving-cert", cert.urn.replace(IEC, cert.type).rsplit("::", 1)[0] + "::serving-cert"
    cert.dependencies, cert.property_dependencies = [namespace.urn], {}
    regs.append(cert)
    result = rehearse(regs, mapping=stack_mapping("prod"))
    assert [(f.kind, f.resource, f.waits_for, f.rule) for f in result.findings] == [
        (
            "race",
            "serving-cert",
            "aws:eks/addon:Addon::operator-prereqs-cert-manager (the resource that installs its CRD)",
            "crd-installer-before-its-custom-resources",
        )
    ]
    cert.dependencies.append(named(regs, "operator-prereqs-cert-manager").urn)
    assert rehearse(regs, mapping=stack_mapping("prod")).findings == []


def test_a_crd_race_the_waits_report_is_not_repeated(stack_runs: dict[str, StackRun]) -> None:
    """An endpoint not after the add-on: the readiness waits for its CRD and the operator's webhook report it;
    the ordering rule finds the same two resources and adds nothing."""
    regs = copy_of(stack_runs["prod"])
    endpoint = named(regs, "endpoints-inference-llama-70b-kvaware")
    without(endpoint, named(regs, "inference-operator-addon"))
    without(endpoint, named(regs, "lb-controller-drain"))  # ordered after the add-on (components/destroy_waits.py)
    result = rehearse(regs, mapping=stack_mapping("prod"))
    about = [f for f in result.findings if endpoint.name in (f.resource, *f.also)]
    assert [(f.kind, f.waits_for.split(" (")[0], f.rule) for f in about] == [
        ("crd-missing", "CRD inference.sagemaker.aws.amazon.com/InferenceEndpointConfig", ""),
        ("race", "hyperpod-inference-operator-controller-manager serving", ""),
    ]


# --- the edges the rule found, fixed in components/ ------------------------------------------------------


def test_helm_mode_controllers_wait_for_their_roles_attachments() -> None:
    """ALB controller and KEDA charts (helm mode) carry their IRSA role's ARN in their values; the ARN
    OperatorIam hands out resolves only after the role's attachments (it was the role's own ARN: a race)."""
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:operator"]["loadBalancerController"] = {"mode": "helm", "chartVersion": "1.13.2"}
    mapping["hyperpod-inference:operator"]["keda"] = {"mode": "helm", "chartVersion": "2.17.2"}
    run = registered(run_stack("prod", mapping))
    graph, found = edges(run)
    pairs = {(graph.nodes[e.user].name, graph.nodes[e.provider].name, e.state) for e in found if e.rule.id == ROLE_RULE}
    assert {
        ("operator-prereqs-aws-load-balancer-controller", "operator-iam-lbc-policy-0", "met"),
        ("operator-prereqs-keda", "operator-iam-keda-policy-0", "met"),
    } <= pairs
    result = rehearse(run, mapping=mapping)
    assert result.findings == [], [f.render() for f in result.findings]
    # the TargetGroupBindings' CRD now comes from the chart (readiness `provides`), created before them
    crd = {(graph.nodes[e.user].name, graph.nodes[e.provider].name) for e in found if e.rule.join == "crd_installer"}
    assert ("front-door-tgb-llama-70b-kvaware", "operator-prereqs-aws-load-balancer-controller") in crd


def test_complete_graph_children_are_checked(stack_runs: dict[str, StackRun]) -> None:
    """pulumi-eks's expanded children are resources like any other: its control plane after its role's
    attachment (from the remote_components data)."""
    graph, found = edges(stack_runs["dev"])
    assert isinstance(graph, CompleteGraph)
    assert (
        "iam-role-grants-before-its-users: eks-cluster-eksCluster (aws:eks/cluster:Cluster) after "
        "eks-service-role-cluster-policy (aws:iam/rolePolicyAttachment:RolePolicyAttachment): met"
    ) in [describe(graph, e) for e in found]


def test_access_policy_associations_wait_for_their_own_principals_entry_only() -> None:
    """Hand mutation ``ordering-access-entry-by-cluster``: joined on the cluster name, every association would wait
    on every access entry of the cluster (over-broad, no test fails); AssociateAccessPolicy needs the entry of its
    own principal, so the join is on ``principalArn`` on both sides."""
    rule = next(r for r in load_readiness().ordering if r.id == "access-entry-before-its-policy-associations")
    assert (rule.join, list(rule.user_paths), list(rule.provider_paths)) == (
        "same_value",
        ["principalArn"],
        ["principalArn"],
    )
