"""Kubernetes scheduling semantics the capacity checks and the rehearsal share, case by case.

Literal expectations from the Kubernetes API reference: a toleration matches a taint when the effects agree
(an empty effect matches all), and the key and value match per operator (``Exists`` ignores the value; an empty
key with ``Exists`` tolerates everything; ``Equal`` compares values, empty equal to empty) — core/v1
``Toleration.ToleratesTaint``. Node affinity: ``nodeSelectorTerms`` are ORed, ``matchExpressions`` ANDed;
``In``/``NotIn``/``Exists``/``DoesNotExist``/``Gt``/``Lt`` as in "Assign Pods to Nodes" (kubernetes.io).
"""

from __future__ import annotations

from typing import Any

import pytest

from policies.capacity_rules import Taint, affinity_matches, tolerates

GPU_TAINT = Taint("nvidia.com/gpu", None, "NoSchedule")
HEALTH = Taint("sagemaker.amazonaws.com/node-health-status", "Unschedulable", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"operator": "Exists"}, HEALTH, True),  # empty key + Exists: tolerates every taint
        ({"key": "", "operator": "Equal"}, HEALTH, False),  # empty key needs Exists
        ({"key": HEALTH.key, "operator": "Exists"}, HEALTH, True),
        ({"key": HEALTH.key, "operator": "Exists", "effect": "NoExecute"}, HEALTH, False),  # other effect
        ({"key": HEALTH.key, "operator": "Equal", "value": "Unschedulable"}, HEALTH, True),
        ({"key": HEALTH.key, "value": "Unschedulable"}, HEALTH, True),  # operator defaults to Equal
        ({"key": HEALTH.key, "operator": "Equal", "value": "Schedulable"}, HEALTH, False),  # other value
        ({"key": HEALTH.key, "operator": "Equal", "value": "Unschedulable", "effect": "NoSchedule"}, HEALTH, True),
        ({"key": "other", "operator": "Exists"}, HEALTH, False),  # other key
        ({"key": GPU_TAINT.key, "operator": "Equal"}, GPU_TAINT, True),  # no value on either side
        ({"key": GPU_TAINT.key, "operator": "Equal", "value": "true"}, GPU_TAINT, False),
    ],
)
def test_toleration_matching(toleration: dict[str, Any], taint: Taint, expected: bool) -> None:
    assert tolerates([toleration], taint) is expected
    # one implementation: the rehearsal's model answers the same
    from policies.readiness import Toleration

    assert Toleration.model_validate(toleration).tolerates(taint.key, taint.value, taint.effect) is expected


def test_no_tolerations_tolerate_nothing_and_any_one_suffices() -> None:
    assert tolerates([], GPU_TAINT) is False
    assert tolerates([{"key": "other", "operator": "Exists"}, {"key": GPU_TAINT.key, "operator": "Exists"}], GPU_TAINT)


LABELS = {"node.kubernetes.io/instance-type": "ml.p5.48xlarge", "workload": "inference", "gpus": "8"}


def _affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": exprs} for exprs in terms]
        }
    }


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ({"key": "workload", "operator": "In", "values": ["inference", "batch"]}, True),
        ({"key": "workload", "operator": "In", "values": ["batch"]}, False),
        ({"key": "missing", "operator": "In", "values": ["inference"]}, False),
        ({"key": "workload", "operator": "NotIn", "values": ["batch"]}, True),
        ({"key": "workload", "operator": "NotIn", "values": ["inference"]}, False),
        ({"key": "missing", "operator": "NotIn", "values": ["x"]}, True),  # an absent label is not in the set
        ({"key": "workload", "operator": "Exists"}, True),
        ({"key": "missing", "operator": "Exists"}, False),
        ({"key": "missing", "operator": "DoesNotExist"}, True),
        ({"key": "workload", "operator": "DoesNotExist"}, False),
        ({"key": "gpus", "operator": "Gt", "values": ["7"]}, True),
        ({"key": "gpus", "operator": "Gt", "values": ["8"]}, False),
        ({"key": "gpus", "operator": "Lt", "values": ["9"]}, True),
        ({"key": "gpus", "operator": "Lt", "values": ["8"]}, False),
        ({"key": "workload", "operator": "Gt", "values": ["1"]}, False),  # not a number
        ({"key": "missing", "operator": "Lt", "values": ["1"]}, False),
        ({"key": "gpus", "operator": "Gt", "values": []}, False),  # no bound
        ({"key": "workload", "operator": "Bogus", "values": ["inference"]}, False),  # unknown operator
    ],
)
def test_node_affinity_expression(expr: dict[str, Any], expected: bool) -> None:
    assert affinity_matches(_affinity([expr]), LABELS) is expected


def test_node_affinity_terms_are_ored_and_expressions_anded() -> None:
    yes = {"key": "workload", "operator": "In", "values": ["inference"]}
    no = {"key": "workload", "operator": "In", "values": ["batch"]}
    assert affinity_matches(_affinity([yes, yes]), LABELS) is True
    assert affinity_matches(_affinity([yes, no]), LABELS) is False  # ANDed within a term
    assert affinity_matches(_affinity([no], [yes]), LABELS) is True  # ORed across terms
    assert affinity_matches(_affinity([no], [no]), LABELS) is False
    assert affinity_matches(None, LABELS) is True and affinity_matches({}, LABELS) is True
    assert affinity_matches({"requiredDuringSchedulingIgnoredDuringExecution": {}}, LABELS) is True
