"""Issue 47 item 9: people's access to the EKS cluster (``cluster.accessEntries``), a break-glass role in prod, and
the viewers group bound to an IAM principal."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.config import ConfigError
from components.config.loader import parse_stack_mapping
from components.config.validation import run_advisories
from tests.conftest import stack_mapping
from tools.plan.harness import StackRun

ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOC = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
CLUSTER = "hyperpod-inference:cluster"
BREAK_GLASS = "arn:aws:iam::123456789012:role/hpi-break-glass"


def test_prod_renders_the_entries_with_their_scopes(stack_runs: dict[str, StackRun]) -> None:
    prod = stack_runs["prod"]
    entries = {r.inputs["principalArn"]: r for r in prod.of_type(ENTRY) if r.name.startswith("cluster-access-")}
    assert len(entries) == 3
    glass = entries[BREAK_GLASS]
    assert glass.inputs["type"] == "STANDARD" and glass.inputs["clusterName"] == "hpi-prod-eks"
    assert glass.inputs["tags"]["hyperpod-inference/break-glass"] == "true"
    viewer = next(r for a, r in entries.items() if "MLEngineer" in a)
    assert viewer.inputs["kubernetesGroups"] == ["hpi-endpoint-viewers"]
    assocs = {
        (r.inputs["principalArn"], r.inputs["policyArn"]): r
        for r in prod.of_type(ASSOC)
        if r.name.startswith("cluster-access-")
    }
    prefix = "arn:aws:eks::aws:cluster-access-policy/"
    assert assocs[(BREAK_GLASS, prefix + "AmazonEKSClusterAdminPolicy")].inputs["accessScope"] == {"type": "cluster"}
    ((_, view),) = [(k, r) for k, r in assocs.items() if k[1] == prefix + "AmazonEKSViewPolicy"]
    assert view.inputs["accessScope"] == {"type": "namespace", "namespaces": ["inference"]}
    for r in assocs.values():  # each association waits for its entry
        assert any(e.urn in r.dependencies for e in entries.values())


def _errors(stack: str, change: Any) -> list[str]:
    mapping = stack_mapping(stack)
    change(mapping[CLUSTER])
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping(stack, mapping)
    return [i.render() for i in err.value.issues]


def test_prod_without_a_break_glass_entry_is_refused() -> None:
    def drop(cluster: dict[str, Any]) -> None:
        cluster["accessEntries"] = [e for e in cluster["accessEntries"] if not e.get("breakGlass")]

    (issue,) = _errors("prod", drop)
    assert issue.startswith("hyperpod-inference:cluster.accessEntries: prod needs a break-glass entry")


@pytest.mark.parametrize(
    ("entry", "path", "text"),
    [
        ({"principalArn": BREAK_GLASS, "breakGlass": True, "policies": [{"policy": "AmazonEKSViewPolicy"}]},
         "cluster.accessEntries[0].breakGlass", "must have AmazonEKSClusterAdminPolicy at cluster scope"),
        ({"principalArn": BREAK_GLASS, "policies": [{"policy": "AmazonEKSClusterAdminPolicy", "namespaces": ["a"]}]},
         "cluster.accessEntries[0].policies[0].namespaces", "grants the whole cluster"),
        ({"principalArn": BREAK_GLASS, "kubernetesGroups": ["system:masters"]},
         "cluster.accessEntries[0].kubernetesGroups[0]", "EKS refuses system: groups"),
        ({"principalArn": BREAK_GLASS, "policies": [{"policy": "AmazonEKSReadOnly"}]},
         "cluster.accessEntries[0].policies[0].policy", ""),
        ({"principalArn": "arn:aws:iam::123456789012:group/admins"}, "cluster.accessEntries[0].principalArn", ""),
    ],
)  # fmt: skip
def test_entry_rules(entry: dict[str, Any], path: str, text: str) -> None:
    def put(cluster: dict[str, Any]) -> None:
        cluster["accessEntries"] = [entry]

    found = [i for i in _errors("dev", put) if i.startswith(f"hyperpod-inference:{path}")]
    assert found and text in found[0], found


def test_one_entry_per_principal() -> None:
    def twice(cluster: dict[str, Any]) -> None:
        cluster["accessEntries"] = [{"principalArn": BREAK_GLASS}, {"principalArn": BREAK_GLASS}]

    assert _errors("dev", twice) == [
        "hyperpod-inference:cluster.accessEntries[1].principalArn: already cluster.accessEntries[0]: one access entry "
        "per principal"
    ]


def test_the_viewers_group_unbound_is_an_advisory_bound_is_not() -> None:
    dev = parse_stack_mapping("dev", stack_mapping("dev"))
    (advisory,) = [a for a in run_advisories(dev) if a.rule == "access-entries-viewer-group"]
    assert advisory.path == "cluster.accessEntries" and "hpi-endpoint-viewers" in advisory.message
    prod = parse_stack_mapping("prod", copy.deepcopy(stack_mapping("prod")))
    assert [a for a in run_advisories(prod) if a.rule == "access-entries-viewer-group"] == []


def test_dev_needs_no_entries(stack_runs: dict[str, StackRun]) -> None:
    assert not [r for r in stack_runs["dev"].of_type(ENTRY) if r.name.startswith("cluster-access-")]
