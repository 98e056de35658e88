"""The capacity table: per HyperPod instance group, what one node allocates, what each endpoint takes, what is left.

:func:`capacity_report` reads the mock-registered graph (the same inputs the capacity policies read, through
``policies.capacity.stack_inputs``) and returns both a rich renderable for ``tools.cli.preview`` and JSON-able data
for its ``--json`` plan. Numbers are at the endpoints' replica counts (autoscaling: ``minReplicaCount``); the
``atMax`` figures use ``maxReplicaCount``. How each number is computed: docs/capacity.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group as RichGroup
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from policies import capacity_rules as cap
from policies.capacity import stack_inputs
from tools.plan.mocks import unwrap_secrets

_COLUMNS = (cap.GPU, cap.NEURON, cap.CPU, cap.MEMORY, cap.PODS)


@dataclass(frozen=True)
class CapacityReport:
    renderable: RenderableType
    data: dict[str, Any]


def amounts_json(amounts: Mapping[str, int]) -> dict[str, Any]:
    """Amounts in readable units: ``cpu`` in CPUs, ``memoryMiB``, device counts by resource name."""
    out: dict[str, Any] = {}
    for r, v in amounts.items():
        if r == cap.CPU:
            out["cpu"] = v / 1000
        elif r == cap.MEMORY:
            out["memoryMiB"] = v // 2**20
        else:
            out[r] = v
    return out


def _sub(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {r: a.get(r, 0) - b.get(r, 0) for r in a}


def _sum(parts: Sequence[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in parts:
        for r, v in p.items():
            out[r] = out.get(r, 0) + v
    return out


def _columns(groups: Sequence[cap.Group]) -> list[str]:
    has_neuron = any((g.spec and g.spec.neuron_devices) for g in groups)
    return [r for r in _COLUMNS if r != cap.NEURON or has_neuron]


def report_from(plan: cap.Plan, notes: Sequence[str] = ()) -> CapacityReport:
    """The table and data of an already computed plan."""
    if not plan.groups:  # a global stack, or a stack without HyperPod groups: nothing to tabulate
        findings = [{"rule": f.rule, "level": f.level, "path": f.path, "message": f.message} for f in plan.findings]
        data = {"groups": [], "unplacedPods": {}, "findings": findings, "notes": list(notes)}
        return CapacityReport(Text("capacity: no HyperPod instance groups in this stack"), data)
    cols = _columns(plan.groups)
    table = Table(title="capacity per instance group (endpoints at replicas / autoscaling minReplicaCount)")
    table.add_column("group")
    table.add_column("")
    for r in cols:
        table.add_column(cap.NOUN[r], justify="right")
    groups_data = []
    said: dict[str, str] = {}
    for g in plan.groups:
        a = plan.allocatable.get(g.name)
        if a is None:
            table.add_row(g.name, f"{g.instance_type}: not in components/config/data/instance_types.json")
            groups_data.append({"name": g.name, "instanceType": g.instance_type, "known": False})
            continue
        total = {r: v * g.count for r, v in a.allocatable.items()}
        used = plan.usage.get(g.name, {})
        left = _sub(total, _sum(list(used.values())))
        head = f"{g.count} x {g.instance_type}, threadsPerCore {g.threads_per_core}"
        if g.taints:
            head += f", taints {', '.join(str(t) for t in g.taints)}"
        per_node = f": per node ({a.observed})" if a.observed else ": per node"
        table.add_row(g.name, head + per_node, *(cap.show(r, a.allocatable.get(r, 0)) for r in cols))
        table.add_row("", "total", *(cap.show(r, total.get(r, 0)) for r in cols))
        for label, amounts in sorted(used.items()):  # sorted: the packing's order is no order to read
            table.add_row("", f"  {label}", *(cap.show(r, amounts.get(r, 0)) for r in cols))
        style = "red" if any(v < 0 for v in left.values()) else "green"
        table.add_row("", Text("left", style=style), *(Text(cap.show(r, left.get(r, 0)), style=style) for r in cols))
        if a.unknown_daemonsets:
            names = ", ".join(sorted(a.unknown_daemonsets))
            first = said.setdefault(names, g.name)  # a long list is said once; later groups refer to it
            text = names if first == g.name else f"the {len(a.unknown_daemonsets)} listed under {first}"
            table.add_row("", Text(f"DaemonSets with unknown requests: {text}", style="yellow"))
        groups_data.append(
            {
                "name": g.name,
                "instanceType": g.instance_type,
                "threadsPerCore": g.threads_per_core,
                "nodes": g.count,
                "taints": [str(t) for t in g.taints],
                "known": True,
                "perNode": {
                    "capacity": amounts_json(a.capacity),
                    "kubeReserved": amounts_json(a.kube_reserved),
                    "eviction": amounts_json(a.eviction),
                    "tieredStorage": amounts_json(a.tiered_storage),
                    "daemonSets": amounts_json(a.daemonsets),
                    "allocatable": amounts_json(a.allocatable),
                },
                "daemonSets": list(a.daemonset_names),
                "unknownDaemonSets": list(a.unknown_daemonsets),
                "total": amounts_json(total),
                "used": {label: amounts_json(v) for label, v in used.items()},
                "usedAtMax": {label: amounts_json(v) for label, v in plan.usage_max.get(g.name, {}).items()},
                "left": amounts_json(left),
            }
        )
    unknown = [pl.workload.label for pl in plan.placements if pl.requests is None and pl.workload.pods]
    all_notes = list(notes)
    unknown_controllers = [p.name for p in plan.system_pods if p.kind == "Deployment" and p.requests is None]
    if unknown_controllers:
        all_notes.append(f"controllers with unknown requests, not counted: {', '.join(unknown_controllers)}")
    if unknown:
        all_notes.append(f"requests unknown (chosen by the operator), not counted: {', '.join(unknown)}")
    if plan.unplaced:
        labels = {pl.workload.key: pl.workload.label for pl in plan.placements}
        all_notes.append(
            "pods that fit nowhere: " + ", ".join(f"{labels.get(k, k)} {n}" for k, n in plan.unplaced.items())
        )
    parts: list[RenderableType] = [table, *(Text(n, style="yellow") for n in all_notes)]
    data = {
        "groups": groups_data,
        "unplacedPods": {
            pl.workload.label: plan.unplaced[pl.workload.key]
            for pl in plan.placements
            if pl.workload.key in plan.unplaced
        },
        "findings": [{"rule": f.rule, "level": f.level, "path": f.path, "message": f.message} for f in plan.findings],
        "notes": all_notes,
    }
    return CapacityReport(RichGroup(*parts), data)


def capacity_report(registrations: Sequence[Any]) -> CapacityReport:
    """The capacity table of a mock run (``StackRun.registrations``: objects with ``type``, ``urn``, ``inputs``)."""
    triples = [(r.type, r.urn, unwrap_secrets(r.inputs)) for r in registrations]
    groups, workloads, _ = stack_inputs(triples)
    system_pods, note = cap.load_system_pods([(t, inputs) for t, _, inputs in triples])
    return report_from(cap.plan(groups, workloads, system_pods), [note] if note else [])


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command(
        "tools.plan.capacity_table", "python -m tools.cli.preview --stack <name> (it prints the capacity table)"
    )
