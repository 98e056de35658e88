"""Which HyperPod on-start deep health checks an instance group can run (one rule, used by config and component).

AWS documents (docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-deep-health-checks.html,
"List of deep health checks done by SageMaker HyperPod"):

* instance-level checks (``InstanceStress``: GPU/NVLink count, DCGM level 4 — "GPU"; Neuron sysfs, Neuron
  hardware check, NCCOM local test — "Trainium"; EFA benchmarks — "GPU and Trainium") exist for GPU and
  Trainium instance types only; Inferentia and CPU types have none;
* cluster-level checks (``InstanceConnectivity``: NCCL / NCCOM tests across instances over EFA) test
  communication *between* instances, so they need EFA and at least two instances in the group (one
  instance has nobody to talk to — this repository's reading of "cluster-level", not an AWS sentence).

Which types have GPUs, Trainium chips and EFA comes from the HyperPod CLI's own table
(``data/hyperpod_instance_accelerators.json``, source named inside). An explicitly configured check that the
group cannot run is a config error naming the key.

**The default depends on the group's role** (``cluster.instanceGroups[].role``, issue 45 item 3). The checks run
while a node starts, before it takes pods, and SageMaker's UpdateCluster "does not work as expected" while they run
(same page), so each check is paid for in create time and in updates blocked:

* ``inference`` (the default of a GPU/Trainium group): ``InstanceStress`` only. An inference replica runs on one
  node (tensor parallel over the node's own GPUs and NVLink); what it needs on start is exactly the instance-level
  check: GPUs, NVLink, DCGM, the node's EFA. ``InstanceConnectivity`` tests NCCL/NCCOM collectives *between*
  instances, the path multi-node training uses and a single-node replica does not: opt in by listing it.
* ``training``: every check the group supports (the multi-node collectives are what it runs).
* ``system`` (the default of a CPU group): none (none exists for its types).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from .base import ConfigIssue
from .checks import Check


class _Group(Protocol):
    @property
    def instance_type(self) -> str: ...
    @property
    def instance_count(self) -> int: ...
    @property
    def on_start_deep_health_checks(self) -> Sequence[str] | None: ...


class _Cluster(Protocol):
    @property
    def instance_groups(self) -> Sequence[_Group]: ...


class StackView(Protocol):
    """What this module reads of the stack: the instance groups (``cluster.py`` imports this module, so only
    their shape here)."""

    @property
    def cluster(self) -> _Cluster: ...


DATA_FILE = Path(__file__).resolve().parent / "data" / "hyperpod_instance_accelerators.json"
INSTANCE_STRESS = "InstanceStress"
INSTANCE_CONNECTIVITY = "InstanceConnectivity"


@cache
def _table() -> dict[str, dict[str, int]]:
    raw: dict[str, Any] = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    types: dict[str, dict[str, int]] = raw["instanceTypes"]
    return types


def accelerators(instance_type: str) -> dict[str, int] | None:
    """``{"gpu": n, "trainium": n, "efa": n}`` for a HyperPod type, None when the table does not know it."""
    return _table().get(instance_type)


def unsupported_reason(check: str, instance_type: str, instance_count: int) -> str | None:
    """Why ``check`` cannot run on this group, or None when it can."""
    acc = accelerators(instance_type)
    if acc is None:
        return f"{instance_type} is not in the HyperPod instance table (components/config/data/), so no check is known to run"
    if acc["gpu"] == 0 and acc["trainium"] == 0:
        return f"deep health checks run on GPU and Trainium instance types only; {instance_type} has neither"
    if check == INSTANCE_CONNECTIVITY:
        if acc["efa"] == 0:
            return f"InstanceConnectivity tests EFA between instances; {instance_type} has no EFA"
        if instance_count < 2:
            return f"InstanceConnectivity tests communication between instances; the group has {instance_count}"
    return None


ROLE_DEFAULT_CHECKS: dict[str, tuple[str, ...]] = {
    "inference": (INSTANCE_STRESS,),
    "training": (INSTANCE_STRESS, INSTANCE_CONNECTIVITY),
    "system": (),
}


def default_checks(role: str, instance_type: str, instance_count: int) -> list[str]:
    """The checks a group of ``role`` runs on start when it lists none: the role's, of those the group supports."""
    return [c for c in supported_checks(instance_type, instance_count) if c in ROLE_DEFAULT_CHECKS[role]]


def supported_checks(instance_type: str, instance_count: int) -> list[str]:
    """Every on-start check the group can run, in the API's order (the default)."""
    return [
        c
        for c in (INSTANCE_STRESS, INSTANCE_CONNECTIVITY)
        if unsupported_reason(c, instance_type, instance_count) is None
    ]


def _deep_health_check_issues(cfg: StackView) -> Iterable[ConfigIssue]:
    for i, group in enumerate(cfg.cluster.instance_groups):
        for j, check in enumerate(group.on_start_deep_health_checks or []):
            reason = unsupported_reason(check, group.instance_type, group.instance_count)
            if reason is not None:
                yield ConfigIssue(
                    f"cluster.instanceGroups[{i}].onStartDeepHealthChecks[{j}]",
                    f"{check} is not supported here: {reason}; remove it or leave the key unset for the default",
                )


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (_deep_health_check_issues,)
