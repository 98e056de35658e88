"""Simulate ``pulumi destroy`` offline: the reverse walk, and what would block or hang it.

``dependsOn`` orders delete as well as create, in reverse (pulumi.com/docs/concepts/options/dependson):
a resource is deleted only after everything that waits on it. What blocks: protected resources and
deletion protection (expected in prod, a finding elsewhere), buckets something writes objects into that
are not ``forceDestroy`` (outside prod), custom resources whose finalizer needs a controller (the operator,
the LB controller) that is not guaranteed to outlive them, and in prod anything stateful left unprotected.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from policies.readiness import Readiness, input_value
from policies.resource_types.tokens import BUCKET, BUCKET_V2, EKS_CLUSTER, LOAD_BALANCER
from tools.rehearse.create import _context, _Findings
from tools.rehearse.model import CompleteGraph

BUCKET_TYPES = (BUCKET, BUCKET_V2)
# Inputs that turn on deletion protection, by type (the stack's own flags; AWS refuses the delete).
DELETION_PROTECTION = {
    LOAD_BALANCER: "enableDeletionProtection",
    EKS_CLUSTER: "deletionProtection",
}


@dataclass
class DestroyResult:
    findings: list[Any]
    waves: list[list[str]]
    protected: list[str]
    notes: list[str]


def _bucket_names(reg: Any) -> set[str]:
    return {str(v) for v in (reg.inputs.get("bucket"), reg.outputs.get("bucket"), reg.outputs.get("id")) if v}


def simulate_destroy(
    graph: CompleteGraph, readiness: Readiness, *, is_prod: bool, stack: str | None = None
) -> DestroyResult:
    ctx = _context(graph, readiness, None)
    out = _Findings()
    notes: list[str] = []
    protected: list[str] = []
    source = str(readiness.destroy.get("source", ""))

    # Reverse waves: a resource goes once everything that waits on it is gone.
    dependents: dict[str, list[str]] = {}
    for u, deps in graph.edges.items():
        for d in deps:
            dependents.setdefault(d, []).append(u)
    level: dict[str, int] = {}
    for urn in reversed(graph.order):
        level[urn] = max((level[v] for v in dependents.get(urn, ())), default=-1) + 1
    waves: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for urn in graph.order:
        waves[level[urn]].append(graph.nodes[urn].name)

    writers = readiness.destroy.get("bucket_writers", [])
    written: dict[str, list[str]] = {}
    for urn in graph.order:
        reg = graph.nodes[urn]
        for w in writers:
            if reg.type == w["type"]:
                target = input_value(reg.inputs, w["input"])
                if target:
                    written.setdefault(str(target), []).append(f"{w['what']} ({reg.name})")

    for urn in graph.order:
        reg = graph.nodes[urn]
        entry = ctx.entries[urn]
        flag = DELETION_PROTECTION.get(reg.type)
        deletion_protected = bool(flag and reg.inputs.get(flag))
        if reg.protect:
            protected.append(reg.name)
            if not is_prod:
                out.add(
                    urn, reg, "protected", "pulumi destroy", "the resource is protected (outside prod)", source=source
                )
        if deletion_protected:
            protected.append(f"{reg.name} ({flag})")
            if not is_prod:
                out.add(
                    urn, reg, "deletion-protection", "pulumi destroy", f"{flag} is on (outside prod)", source=source
                )
        if is_prod and entry.stateful and not (reg.protect or deletion_protected):
            out.add(
                urn,
                reg,
                "unprotected-stateful",
                "protection in prod",
                "it holds state and is not protected",
                source=entry.source,
            )
        if reg.type in BUCKET_TYPES and not is_prod and not reg.inputs.get("forceDestroy"):
            what = [w for name in _bucket_names(reg) for w in written.get(name, [])]
            if what:
                out.add(
                    urn,
                    reg,
                    "bucket-not-empty",
                    "an empty bucket",
                    f"written to by {', '.join(what)} and forceDestroy is off",
                    source=entry.source,
                )
        # Finalizers: the controller (and the nodes it runs on) must be deleted after the object.
        for pod in entry.finalizer_controller:
            installers = ctx.pod_installers.get(pod, [])
            if not installers:
                continue
            if not any(graph.is_ancestor(i, urn) for i in installers):
                names = ", ".join(graph.nodes[i].name for i in installers)
                out.add(
                    urn,
                    reg,
                    "finalizer-orphaned",
                    f"{pod} to remove its finalizer",
                    f"{names} does not wait on it, so it can be deleted first and the delete hangs until its timeout",
                    source=entry.source,
                )
            node_providers = sorted({g.provider for g in ctx.groups})
            if node_providers and not any(graph.is_ancestor(p, urn) for p in node_providers):
                out.add(
                    urn,
                    reg,
                    "served-deleted-first",
                    f"nodes for {pod}",
                    "the node provider "
                    + ", ".join(graph.nodes[p].name for p in node_providers)
                    + " can be deleted before it, taking the controller with it",
                    source=entry.source,
                )
        # Add-ons (and anything else) this resource needs at create time must outlive it.
        for wait in entry.waits_for:
            if wait.kind != "after" or wait.selector is None or not wait.applies(reg.inputs):
                continue
            for cand in ctx.select(wait.selector):
                if cand != urn and not graph.is_ancestor(cand, urn):
                    out.add(
                        urn,
                        reg,
                        "served-deleted-first",
                        wait.detail,
                        f"{graph.nodes[cand].name} does not come after it in the reverse walk",
                        source=wait.source,
                    )
    _controller_leaks(graph, readiness, ctx, out)
    notes.extend(_guardduty_notes(graph, readiness, stack))
    return DestroyResult(out.all(), waves, protected, notes)


def _is(reg: Any, sel: dict[str, Any]) -> bool:
    return bool(reg.type == sel.get("type") and reg.inputs.get(str(sel.get("input"))) == sel.get("value"))


def _controller_leaks(graph: CompleteGraph, readiness: Readiness, ctx: Any, out: Any) -> None:
    """What the LB controller finalizes after Pulumi saw its owner go must be drained before the controller goes.

    For each resource of ``leaves_behind`` (policies/readiness.yaml ``destroy.lb_controller_cleanup``), a drain must
    come between it and every resource that installs the controller in the reverse walk: the resource waits on the
    drain (so it goes first) and the drain waits on each installer (so they go after its delete, which waits for the
    controller's load balancers and groups). Otherwise the installer can be deleted while the controller still has
    to finalize the operator's Ingress: the ALB and its k8s-* security groups leak, and the VPC delete fails.
    """
    spec = readiness.destroy.get("lb_controller_cleanup") or {}
    installers = ctx.pod_installers.get(spec.get("controller_pod"), [])
    if not installers:
        return
    drains = [u for u in graph.order if _is(graph.nodes[u], spec.get("drain") or {})]
    for urn in graph.order:
        reg = graph.nodes[urn]
        if not any(fnmatch.fnmatchcase(reg.type, t) for t in spec.get("leaves_behind") or []):
            continue
        ok = any(graph.is_ancestor(d, urn) and all(graph.is_ancestor(i, d) for i in installers) for d in drains)
        if ok:
            continue
        names = ", ".join(graph.nodes[i].name for i in installers)
        out.add(
            urn,
            reg,
            "leak",
            f"the LB controller to finalize {spec.get('what')}",
            f"nothing waits for the controller's load balancers and groups to go between it and {names} (which runs "
            "the controller): the ALB and its k8s-* security groups leak and the VPC delete fails",
            source=str(spec.get("source", "")),
        )


def _guardduty_notes(graph: CompleteGraph, readiness: Readiness, stack: str | None) -> list[str]:
    """GuardDuty's endpoint in a VPC this stack deletes: whether GuardDuty is on cannot be known offline."""
    gd = readiness.destroy.get("guardduty_vpc") or {}
    vpcs = [graph.nodes[u].name for u in graph.order if graph.nodes[u].type == gd.get("vpc_type")]
    if not vpcs:
        return []
    sel = readiness.destroy.get("guardduty_cleanup") or {}
    vpc_urns = [u for u in graph.order if graph.nodes[u].type == gd.get("vpc_type")]
    eks = [u for u in graph.order if graph.nodes[u].type == sel.get("eks_type")]
    for c in (u for u in graph.order if _is(graph.nodes[u], sel)):
        if all(graph.is_ancestor(v, c) for v in vpc_urns) and all(graph.is_ancestor(c, e) for e in eks):
            return [
                f"GuardDuty (cannot be known offline whether it is on): {graph.nodes[c].name} removes GuardDuty's VPC "
                f"endpoint ({gd.get('service')}) and security group from {', '.join(vpcs)} during the destroy, after "
                f"{', '.join(graph.nodes[e].name for e in eks) or 'the EKS cluster'} and before the subnets and the VPC "
                f"(components/destroy_waits.py) [{gd.get('source')}]"
            ]
    return [
        f"GuardDuty (cannot be known offline): with EKS Runtime Monitoring and automated agent configuration on, "
        f"GuardDuty adds a VPC endpoint ({gd.get('service')}) and a security group to {', '.join(vpcs)}; they block "
        f"deleting its subnets, security groups and the VPC. Checked by {gd.get('checked_by')}; before the network "
        f"is deleted run {str(gd.get('cleanup')).replace('<stack>', stack or '<stack>')} [{gd.get('source')}]"
    ]


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.rehearse.destroy", "python -m tools.rehearse --stack <name> --destroy")
