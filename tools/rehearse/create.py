"""Simulate ``pulumi up`` offline: every wait of every resource, checked against what is created before it.

The engine starts a resource once everything it waits on is done, in parallel otherwise. A wait (from
``policies/readiness.yaml``) is met only by a resource already created — one the resource transitively
depends on. When the only resources that could meet it are the resource itself or its descendants, or
none, it never comes: a **deadlock**. When one exists but is not ordered before, it is a **race**. Other
findings: a typical create at least as long as its timeout, a custom resource whose CRD nothing installs
before it, a Kubernetes API Pulumi cannot reach, pods no node can take (taints, architecture; resource fit
through the ``fit`` hook the capacity checks provide).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from policies.readiness import (
    Readiness,
    ResourceReadiness,
    Selector,
    SystemPod,
    Toleration,
    Wait,
    all_hold,
    input_value,
)
from policies.resource_types.tokens import EKS_CLUSTER, EKS_COMPONENT
from tools.plan.mocks import Registration
from tools.rehearse.model import CompleteGraph, crd_of
from tools.rehearse.ordering import ordering_edges, report_missing
from tools.rehearse.report import FindingKind, Findings, LongCreate, Step

_Findings = Findings  # the grouped findings (tools/rehearse/report.py)

LONG_CREATE_MINUTES = 10.0
LONG_TIMEOUT_MINUTES = 30.0  # unknown typical time, but the provider waits up to this long


@dataclass(frozen=True)
class NodeGroup:
    """One HyperPod instance group, as the nodes it brings."""

    provider: str  # URN of the resource providing it
    cluster: str
    name: str
    instance_type: str
    count: int
    labels: dict[str, str]
    taints: tuple[tuple[str, str | None, str], ...]
    deep_health_checks: bool
    # False: the provider's create returns before these nodes join (a HyperPod cluster); a wait for pods is then
    # met only once a `nodes_joined` provider (the node wait) ordered before it is done.
    joined_at_create: bool = True

    def describe(self) -> str:
        return f"{self.cluster}/{self.name} ({self.count} x {self.instance_type})"


# Resource fit (CPU, memory, pods per node) is the capacity checks' part: given a pod, a group and the
# replicas, return why it does not fit, or None.
FitHook = Callable[[SystemPod, NodeGroup, int], "str | None"]


def node_groups(reg: Registration, readiness: Readiness, *, joined_at_create: bool = True) -> list[NodeGroup]:
    """The instance groups a HyperPod cluster registration creates, with their labels and taints."""
    out = []
    for g in input_value(reg.inputs, "instanceGroups", []) or []:
        if not isinstance(g, dict):
            continue
        itype = str(g.get("instanceType") or "")
        k8s = g.get("kubernetesConfig") or {}
        labels = {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": readiness.architecture.of(itype),
            "node.kubernetes.io/instance-type": itype,
            **{str(k): str(v) for k, v in (k8s.get("labels") or {}).items()},
        }
        taints = tuple(
            (str(t.get("key")), t.get("value"), str(t.get("effect"))) for t in (k8s.get("taints") or []) if t
        )
        out.append(
            NodeGroup(
                provider=reg.urn,
                cluster=reg.name,
                name=str(g.get("instanceGroupName") or ""),
                instance_type=itype,
                count=int(g.get("instanceCount") or 0),
                labels=labels,
                taints=taints,
                deep_health_checks=bool(g.get("onStartDeepHealthChecks")),
                joined_at_create=joined_at_create,
            )
        )
    return out


ADOPTED = "<adopted>"
"""Provider of node groups that exist before the deploy starts (an adopted HyperPod cluster)."""


def adopted_node_groups(mapping: dict[str, Any] | None, project: str, readiness: Readiness) -> list[NodeGroup]:
    """The instance groups of an adopted HyperPod cluster, as the stack config declares them.

    With ``cluster.existing.hyperpodClusterArn`` the program creates no HyperPod cluster: its nodes are
    already running when ``pulumi up`` starts (docs/adoption.md; preflight compares the declared groups with
    DescribeCluster/ListClusterNodes), so every wait for schedulable nodes can be met by them from the start.
    """
    cluster = (mapping or {}).get(f"{project}:cluster") or {}
    existing = cluster.get("existing") if isinstance(cluster, dict) else None
    if not isinstance(existing, dict) or not existing.get("hyperpodClusterArn"):
        return []
    arn = str(existing["hyperpodClusterArn"])
    out = []
    for g in cluster.get("instanceGroups") or []:
        if not isinstance(g, dict):
            continue
        itype = str(g.get("instanceType") or "")
        labels = {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": readiness.architecture.of(itype),
            "node.kubernetes.io/instance-type": itype,
            **{str(k): str(v) for k, v in (g.get("labels") or {}).items()},
        }
        taints = tuple((str(t.get("key")), t.get("value"), str(t.get("effect"))) for t in (g.get("taints") or []) if t)
        out.append(
            NodeGroup(
                provider=ADOPTED,
                cluster=arn.rsplit("/", 1)[-1],
                name=str(g.get("name") or ""),
                instance_type=itype,
                count=int(g.get("instanceCount") or 0),
                labels=labels,
                taints=taints,
                deep_health_checks=False,
            )
        )
    return out


def why_not_on(
    pod: SystemPod, tolerations: list[Toleration], group: NodeGroup, replicas: int, fit: FitHook | None
) -> str | None:
    """Why the pod cannot run on the group's nodes (None: it can)."""
    if group.count <= 0:
        return f"group {group.name} has no instances"
    for key, value, effect in group.taints:
        if effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(key, value, effect) for t in tolerations):
            return f"group {group.name}: taint {key}={value or ''}:{effect} not tolerated"
    for label, allowed in pod.node_selector.items():
        got = group.labels.get(label)
        if got not in allowed:
            return f"group {group.name}: {label}={got} not in {allowed}"
    if fit is not None:
        return fit(pod, group, replicas)
    return None


def parse_duration_minutes(text: str) -> float | None:
    """Pulumi custom timeouts use Go durations: '120m', '1h30m', '45s'."""
    parts = re.findall(r"([0-9.]+)(h|m|s)", text or "")
    if not parts:
        return None
    scale = {"h": 60.0, "m": 1.0, "s": 1 / 60}
    return sum(float(n) * scale[u] for n, u in parts)


def create_timeout(reg: Registration, entry: ResourceReadiness) -> float | None:
    """The create timeout in minutes: the program's customTimeouts, a timeout input, or the default."""
    custom = reg.custom_timeouts.get("create")
    if custom:
        got = parse_duration_minutes(custom)
        if got is not None:
            return got
    if entry.create_timeout_input is not None:
        value = input_value(reg.inputs, entry.create_timeout_input.input)
        if isinstance(value, int | float):
            return float(value) / 60 if entry.create_timeout_input.unit == "s" else float(value)
    return entry.create_timeout_minutes


@dataclass
class _Context:
    graph: CompleteGraph
    readiness: Readiness
    entries: dict[str, ResourceReadiness]
    groups: list[NodeGroup]
    crd_providers: dict[str, list[str]]
    pod_installers: dict[str, list[str]]
    fit: FitHook | None
    node_waits: list[str] = field(default_factory=list)  # URNs that provide `nodes_joined`
    selector_cache: dict[str, list[str]] = field(default_factory=dict)

    def name(self, urn: str) -> str:
        return self.graph.nodes[urn].name

    def select(self, selector: Selector) -> list[str]:
        key = selector.model_dump_json()
        got = self.selector_cache.get(key)
        if got is None:
            got = [
                u for u in self.graph.order if selector.matches(self.graph.nodes[u].type, self.graph.nodes[u].inputs)
            ]
            self.selector_cache[key] = got
        return got


def _context(graph: CompleteGraph, readiness: Readiness, fit: FitHook | None) -> _Context:
    entries: dict[str, ResourceReadiness] = {}
    groups: list[NodeGroup] = []
    crd_providers: dict[str, list[str]] = {}
    pod_installers: dict[str, list[str]] = {}
    node_waits: list[str] = []
    installer_types = {sel.type for pod in readiness.system_pods for sel in pod.installed_by}
    may_install: dict[str, bool] = {}
    for urn in graph.order:
        reg = graph.nodes[urn]
        entry = readiness.entry_for(reg.type, reg.inputs)
        entries[urn] = entry
        for provide in entry.provides:
            if not all_hold(provide.when, reg.inputs):
                continue
            if provide.kind == "nodes":
                groups.extend(node_groups(reg, readiness, joined_at_create=provide.joined_at_create))
            elif provide.kind == "nodes_joined":
                node_waits.append(urn)
            elif provide.kind == "crds":
                for crd in provide.crds:
                    crd_providers.setdefault(crd, []).append(urn)
        installs = may_install.get(reg.type)
        if installs is None:
            installs = may_install[reg.type] = any(fnmatch.fnmatchcase(reg.type, t) for t in installer_types)
        if installs:
            for pod in readiness.pods_installed_by(reg.type, reg.inputs):
                pod_installers.setdefault(pod.name, []).append(urn)
    return _Context(graph, readiness, entries, groups, crd_providers, pod_installers, fit, node_waits)


def _classify(ctx: _Context, urn: str, candidates: list[str]) -> tuple[str, list[str]]:
    """'met' if a candidate is created before ``urn``; else 'deadlock' (only itself/descendants/nothing)
    or 'race' (one that is not ordered either way); with the candidates concerned."""
    if ADOPTED in candidates:
        return "met", []
    others = [c for c in candidates if c != urn]
    if any(ctx.graph.is_ancestor(c, urn) for c in others):
        return "met", []
    unordered = [c for c in others if not ctx.graph.is_ancestor(urn, c)]
    if unordered:
        return "race", unordered
    return "deadlock", others


# --- API reachability --------------------------------------------------------------------------------


@dataclass
class ApiPath:
    """Whether (and through what) Pulumi reaches the Kubernetes API of the stack's cluster.

    ``reachable`` covers both directions: the runner's packets admitted by the cluster security group, and the
    control plane's replies routed back from the cluster subnets' route tables. ``advisories`` name what cannot be
    known offline (route tables the stack does not own, the far side of a transit gateway or peering) and what
    would check it; they are reported as notes, never as "reachable" facts nor as findings.
    """

    reachable: bool
    why: str
    via: list[str] = field(default_factory=list)  # URNs of the rules that admit the runner: any one opens it
    advisories: list[str] = field(default_factory=list)
    routes: list[str] = field(default_factory=list)  # URNs of the associations and routes back: all are needed
    source: str = ""  # of the fact an unreachable verdict rests on (default: deployer_access.source)


def physical_id(reg: Registration) -> str | None:
    """A registration's cloud id: its ``id`` output, else the last path segment of its ARN (the mocks' EC2 ids)."""
    rid = reg.outputs.get("id")
    if isinstance(rid, str) and rid:
        return rid
    arn = reg.outputs.get("arn")
    if isinstance(arn, str) and "/" in arn:
        return arn.rsplit("/", 1)[-1]
    return None


def _networks(values: Any) -> list[ipaddress.IPv4Network]:
    out = []
    for v in values if isinstance(values, list) else [values]:
        try:
            out.append(ipaddress.IPv4Network(str(v)))
        except ValueError:
            continue
    return out


@dataclass(frozen=True)
class _Route:
    destination: ipaddress.IPv4Network
    target: str  # the target input (natGatewayId, transitGatewayId, ...), '' for none
    value: str
    urn: str | None  # None for an inline route (part of its route table)


def _route_of(inputs: dict[str, Any], dest_key: str, targets: list[str], urn: str | None) -> _Route | None:
    dest = _networks(inputs.get(dest_key))
    if not dest:
        return None
    target = next((t for t in targets if inputs.get(t)), "")
    return _Route(dest[0], target, str(inputs.get(target) or ""), urn)


def route_back(ctx: _Context, cluster: Registration, runner_cidrs: list[ipaddress.IPv4Network]) -> ApiPath | None:
    """The return half of the deployer's path: do the route tables of the cluster's subnets send each runner CIDR to
    a target that reaches a private network (transit gateway, peering connection, VPN, Cloud WAN)?

    None when there is nothing to check (no runner CIDR outside the VPC). Unknown parts become advisories.
    """
    rm = ctx.readiness.deployer_access.routing
    subnets: list[str] = []
    for key in rm.subnet_inputs:
        got = input_value(cluster.inputs, key)
        if isinstance(got, list) and got:
            subnets = [str(s) for s in got]
            break
    by_id: dict[str, Registration] = {}
    associations: dict[str, tuple[str, str]] = {}  # subnet id -> (route table id, association URN)
    routes: dict[str, list[_Route]] = {}  # route table id -> routes
    vpc_cidr: ipaddress.IPv4Network | None = None
    vpc_id = input_value(cluster.inputs, rm.vpc_input)
    for urn in ctx.graph.order:
        reg = ctx.graph.nodes[urn]
        if reg.type == rm.association_type:
            associations[str(reg.inputs.get("subnetId"))] = (str(reg.inputs.get("routeTableId")), urn)
        elif reg.type == rm.route_type:
            route = _route_of(reg.inputs, rm.destination_input, rm.target_inputs, urn)
            if route is not None:
                routes.setdefault(str(reg.inputs.get("routeTableId")), []).append(route)
        elif reg.type in (rm.route_table_type, rm.vpc_type):
            rid = physical_id(reg)
            if rid is not None:
                by_id[rid] = reg
            if reg.type == rm.route_table_type and rid is not None:
                for inline in input_value(reg.inputs, rm.inline_routes_input, []) or []:
                    route = _route_of(inline, rm.inline_destination_input, rm.target_inputs, None)
                    if route is not None:
                        routes.setdefault(rid, []).append(route)
            elif rid is not None and rid == vpc_id:
                found = _networks(reg.inputs.get(rm.vpc_cidr_input))
                vpc_cidr = found[0] if found else None
    outside = [c for c in runner_cidrs if vpc_cidr is None or not c.subnet_of(vpc_cidr)]
    if not outside:
        return None
    advisories: list[str] = []
    unknown = [s for s in subnets if s not in associations]
    if unknown or not subnets:
        advisories.append(
            "the route tables of the cluster's subnets "
            + (", ".join(unknown) if unknown else "(none named)")
            + " are not in this stack (network.existing): whether they route "
            + ", ".join(map(str, outside))
            + " back to the runner cannot be known offline; `python -m tools.preflight.regional` checks them (DescribeRouteTables)"
        )
    tables = sorted({associations[s][0] for s in subnets if s in associations})
    if not tables:
        return ApiPath(True, "", advisories=advisories)
    via = sorted({associations[s][1] for s in subnets if s in associations})
    bad: dict[tuple[str, str], list[str]] = {}
    good: dict[str, set[str]] = {}
    for cidr in outside:
        for table in tables:
            candidates = [r for r in routes.get(table, []) if cidr.subnet_of(r.destination)]
            best = max(candidates, key=lambda r: r.destination.prefixlen, default=None)
            name = by_id[table].name if table in by_id else table
            prefix_ok = best is not None and best.target in rm.return_targets
            if best is not None and prefix_ok and best.value.startswith(rm.return_targets[best.target]):
                if best.urn is not None:
                    via.append(best.urn)
                good.setdefault(str(cidr), set()).add(f"{best.target} {best.value}".strip())
                continue
            where = (
                f"to {best.destination} via {best.target or 'no target'}" if best is not None else "nowhere (no route)"
            )
            bad.setdefault((str(cidr), where), []).append(name)
    if bad:
        parts = [
            f"route tables {', '.join(sorted(names))} send {cidr} {where}"
            for (cidr, where), names in sorted(bad.items())
        ]
        return ApiPath(
            False,
            "the control plane's replies cannot reach the runner: "
            + "; ".join(parts)
            + ", which cannot carry them to a private network (a NAT or internet gateway translates or drops them); "
            "add cluster.deployerAccess.routes (transitGatewayId or peerVpcId) for the runner's network "
            "(docs/cluster.md, 'Reaching the API')",
            advisories=advisories,
            source=rm.source,
            routes=via,
        )
    advisories.append(
        "the far side of the deployer's routes ("
        + "; ".join(f"{c} via {', '.join(sorted(t))}" for c, t in sorted(good.items()))
        + ") is outside this stack: whether it routes back to "
        + (str(vpc_cidr) if vpc_cidr is not None else "this VPC")
        + " (the transit gateway's route tables, the peer VPC's routes) cannot be known offline"
    )
    return ApiPath(
        True,
        "replies to "
        + ", ".join(sorted(good))
        + f" routed back from {', '.join(sorted(by_id[t].name if t in by_id else t for t in tables))}",
        advisories=advisories,
        routes=sorted(set(via)),
    )


def api_path(ctx: _Context, mapping: dict[str, Any] | None, project: str) -> ApiPath | None:
    """Both halves of the deployer's path to a private endpoint (or the public endpoint); None: no cluster here."""
    da = ctx.readiness.deployer_access
    clusters = [r for r in ctx.graph.nodes.values() if r.type == EKS_COMPONENT]
    prefix = ""
    if not clusters:
        clusters = [r for r in ctx.graph.nodes.values() if r.type == EKS_CLUSTER]
        prefix = "vpcConfig."
    if not clusters:
        return None
    cluster = clusters[0]
    public = input_value(cluster.inputs, prefix + da.public_input, True)  # EKS default: public on
    cidrs = input_value(cluster.inputs, prefix + da.public_cidrs_input, [])
    if public:
        shown = ", ".join(map(str, cidrs)) if cidrs else "0.0.0.0/0 (EKS default)"
        return ApiPath(True, f"public endpoint open to {shown}")
    forward, runner = _forward_path(ctx, cluster, mapping, project)
    if not forward.reachable:
        return forward
    back = route_back(ctx, cluster, runner)
    if back is None:
        return forward
    advisories = [*forward.advisories, *back.advisories]
    if not back.reachable:
        return ApiPath(False, back.why, forward.via, advisories, routes=back.routes, source=back.source)
    return ApiPath(
        True, forward.why + (f"; {back.why}" if back.why else ""), forward.via, advisories, routes=back.routes
    )


def _forward_path(
    ctx: _Context, cluster: Registration, mapping: dict[str, Any] | None, project: str
) -> tuple[ApiPath, list[ipaddress.IPv4Network]]:
    """The runner's half: an HTTPS rule on the cluster security group (or, without one in the graph, a declared
    deployer path), and the runner's CIDRs (admitted by those rules, declared in the config)."""
    da = ctx.readiness.deployer_access
    # A security-group rule admitting HTTPS to the cluster SG from something other than the nodes.
    cluster_sg_ids = {
        str(v)
        for v in (
            input_value(cluster.outputs, da.cluster_sg_output),
            input_value(cluster.outputs, "vpcConfig.clusterSecurityGroupId"),
        )
        if v
    }
    given = cluster.inputs.get(da.cluster_sg_input)
    if isinstance(given, str):
        cluster_sg_ids.add(given)
    cluster_sg_urns = set(cluster.property_dependencies.get(da.cluster_sg_input, []))
    if given:
        # A resource reference loses its URN under mocks; the component depends on the group it was given.
        cluster_sg_urns |= {
            d for d in cluster.dependencies if d in ctx.graph.nodes and ctx.graph.nodes[d].type == da.sg_type
        }
    cluster_sg_urns |= {
        u
        for u, r in ctx.graph.nodes.items()
        if r.parent == cluster.urn and r.name == cluster.name + da.cluster_sg_child
    }
    node_sgs: set[str] = set()
    for group_provider in {g.provider for g in ctx.groups if g.provider != ADOPTED}:
        reg = ctx.graph.nodes[group_provider]
        for path in da.node_sg_input_paths:
            node_sgs |= {str(s) for s in input_value(reg.inputs, path, []) or []}
        for g in input_value(reg.inputs, "instanceGroups", []) or []:
            node_sgs |= {str(s) for s in input_value(g, "overrideVpcConfig.securityGroupIds", []) or []}
    via = []
    for urn in ctx.graph.order:
        reg = ctx.graph.nodes[urn]
        if reg.type not in da.rule_types:
            continue
        on_cluster_sg = str(reg.inputs.get("securityGroupId")) in cluster_sg_ids or bool(
            set(reg.property_dependencies.get("securityGroupId", [])) & cluster_sg_urns
        )
        if not on_cluster_sg or reg.inputs.get("type", "ingress") != "ingress":
            continue
        proto = str(reg.inputs.get("ipProtocol") or reg.inputs.get("protocol") or "")
        lo, hi = reg.inputs.get("fromPort"), reg.inputs.get("toPort")
        if proto != "-1" and not (isinstance(lo, int) and isinstance(hi, int) and lo <= 443 <= hi):
            continue
        source_sg = reg.inputs.get("referencedSecurityGroupId") or reg.inputs.get("sourceSecurityGroupId")
        if source_sg is not None and str(source_sg) in node_sgs:
            continue
        via.append(urn)
    admitted = [n for u in via for k in ("cidrIpv4", "cidrBlocks") for n in _networks(ctx.graph.nodes[u].inputs.get(k))]
    declared: list[ipaddress.IPv4Network] = []
    for key in da.routing.runner_cidrs_keys:
        top, _, rest = key.partition(".")
        declared += _networks(input_value((mapping or {}).get(f"{project}:{top}") or {}, rest, []) if rest else [])
    runner = list(dict.fromkeys([*admitted, *declared]))
    if not via:
        for key in da.config_keys:
            top, _, rest = key.partition(".")
            if rest and input_value((mapping or {}).get(f"{project}:{top}") or {}, rest):
                why = f"deployer path declared by {project}:{key} (no rule for it found in the graph)"
                return ApiPath(True, why), runner
        why = (
            "the endpoint is private only and nothing declares how Pulumi reaches it "
            f"(no {', '.join(project + ':' + k for k in da.config_keys)}, no HTTPS rule on the cluster security "
            "group except from the nodes)"
        )
        return ApiPath(False, why), runner
    missing = [c for c in declared if not any(c.subnet_of(a) for a in admitted)]
    if missing:
        why = (
            f"no HTTPS rule on the cluster security group admits the runner's {', '.join(map(str, missing))} "
            f"({project}:{da.routing.runner_cidrs_keys[0]})"
        )
        return ApiPath(False, why, via), runner
    forward = ApiPath(True, "HTTPS to the cluster security group from " + ", ".join(ctx.name(u) for u in via), via)
    if not admitted:
        forward.advisories.append(
            "the runner is admitted by security group only: where it runs (in this VPC, or behind a peering or "
            "transit gateway route) cannot be known offline"
        )
    return forward, runner


# --- the simulation -----------------------------------------------------------------------------------


def _pods_wait(ctx: _Context, urn: str, reg: Registration, wait: Wait, *, out: _Findings, notes: list[str]) -> None:
    installed = ctx.readiness.pods_installed_by(reg.type, reg.inputs)
    if not installed:
        notes.append(f"{reg.name}: waits for its pods, but policies/readiness.yaml lists none for it; not checked")
    # A Deployment whose replica count no source gives still needs at least one pod.
    pods = [p for p in installed if p.kind == "Deployment" and p.effective_replicas(reg.inputs) != 0]
    for pod in pods:
        tolerations = pod.effective_tolerations(reg.inputs)
        replicas = pod.effective_replicas(reg.inputs) or 1
        waits = f"{replicas} ready {pod.name} pod(s) ({wait.detail})" if wait.detail else f"{pod.name} pods"
        if not ctx.groups:
            out.add(
                urn, reg, "deadlock", waits, "nothing in the stack provides nodes", source=wait.source or pod.source
            )
            continue
        if tolerations is None:
            # Which groups it can take is unknown; the nodes still have to exist before it.
            notes.append(f"{reg.name}: tolerations of {pod.name} unknown; taints and selectors not checked")
            reasons = [(g, None if g.count > 0 else f"group {g.name} has no instances") for g in ctx.groups]
        else:
            reasons = [(g, why_not_on(pod, tolerations, g, replicas, ctx.fit)) for g in ctx.groups]
        takers = [g for g, why in reasons if why is None]
        if not takers:
            why = "; ".join(f"{why}" for _, why in reasons if why)
            out.add(urn, reg, "unschedulable", waits, f"no node can take {pod.name}: {why}", source=pod.source)
            continue
        health = ctx.readiness.health_taint
        if (
            tolerations is not None
            and all(g.deep_health_checks for g in takers)
            and not any(t.tolerates(health.key, health.value, health.effect) for t in tolerations)
        ):
            notes.append(
                f"{reg.name}: {pod.name} can run only on groups with on-start deep health checks "
                f"({', '.join(g.name for g in takers)}) and does not tolerate {health.key}={health.value}:"
                f"{health.effect}, set while they run; whether the HyperPod create waits for the checks is UNCONFIRMED [hyperpod-create-completion]"
            )
        providers = sorted({g.provider for g in takers})
        state, concerned = _classify(ctx, urn, providers)
        if state == "met":
            _joined_wait(ctx, urn, reg, pod.name, waits=waits, takers=takers, out=out)
            continue
        names = ", ".join(ctx.name(u) for u in concerned)
        if state == "deadlock":
            why = f"the only nodes that can take it come from {names}, which is created after it (waits on it)"
        else:
            why = f"the nodes come from {names}, which is not ordered before it (works only if timing is lucky)"
        out.add(urn, reg, state, waits, why, source=wait.source)  # type: ignore[arg-type]


def _joined_wait(
    ctx: _Context, urn: str, reg: Registration, pod: str, *, waits: str, takers: list[NodeGroup], out: _Findings
) -> None:
    """The nodes exist before ``urn`` only once they have *joined*: for groups whose provider's create returns
    first (a HyperPod cluster), a ``nodes_joined`` provider of that cluster must be ordered before ``urn``."""
    if any(g.joined_at_create for g in takers):
        return
    for provider in sorted({g.provider for g in takers}):
        waits_on = [w for w in ctx.node_waits if ctx.graph.is_ancestor(provider, w)]
        state, concerned = _classify(ctx, urn, waits_on)
        if state == "met":
            return
        cluster = ctx.name(provider)
        entry = ctx.entries[urn]
        timeout = create_timeout(reg, entry)
        limit = f"its {timeout:g} min create timeout" if timeout is not None else "its create timeout"
        if state == "race":
            names = ", ".join(ctx.name(u) for u in concerned)
            why = (
                f"the nodes of {cluster} have joined only once {names} is done, which is not ordered before it: "
                f"{limit} may run out while they join (timeout risk)"
            )
            out.add(urn, reg, "race", waits, why, source=_join_source(ctx, provider))
            return
        why = (
            f"{cluster}'s create returns before its nodes join (AWS's Terraform waits for them afterwards) and "
            f"nothing that waits for them (a HyperPod node wait) is ordered before it: {limit} starts before {pod} "
            "can be scheduled (timeout risk)"
        )
        out.add(urn, reg, "timeout", waits, why, source=_join_source(ctx, provider))
        return


def _join_source(ctx: _Context, provider: str) -> str:
    """The source of "this provider's nodes join after its create" (its readiness ``provides`` entry)."""
    return next((p.source for p in ctx.entries[provider].provides if p.kind == "nodes"), "")


def _provider_wait(
    ctx: _Context,
    urn: str,
    reg: Registration,
    wait: Wait,
    *,
    what: str,
    candidates: list[str],
    out: _Findings,
    missing_kind: FindingKind,
) -> None:
    state, concerned = _classify(ctx, urn, candidates)
    if state == "met":
        return
    out.pairs.update((urn, c) for c in concerned)
    names = ", ".join(ctx.name(u) for u in concerned)
    if state == "race":
        kind: FindingKind = "race" if missing_kind != "crd-missing" else "crd-missing"
        why = f"provided by {names}, which is not ordered before it (race: works only if timing is lucky)"
        out.add(urn, reg, kind, what, why, source=wait.source)
    elif concerned:
        out.add(urn, reg, "deadlock", what, f"only {names} provides it, and it is created after it", source=wait.source)
    else:
        out.add(urn, reg, missing_kind, what, "nothing in the stack provides it", source=wait.source)


DEEP_CHECKS_INPUT = "deepHealthChecks"


def check_node_wait_timeouts(ctx: _Context, out: _Findings) -> None:
    """A node wait must allow what policies/readiness.yaml requires for the groups it waits for.

    Which groups run on-start deep health checks is read from the HyperPod cluster it waits on (its
    ``instanceGroups``, the cluster's own contract), not from the wait's inputs; the required timeout is the one
    of the readiness entry that such a wait matches (its ``deepHealthChecks`` listing them). A shorter timeout fails
    the create while the checks still run (issue 33 item 2).
    """
    for urn in ctx.node_waits:
        reg = ctx.graph.nodes[urn]
        checked = sorted(
            {g.name for g in ctx.groups if g.deep_health_checks and ctx.graph.is_ancestor(g.provider, urn)}
        )
        if not checked:
            continue
        required = ctx.readiness.entry_for(reg.type, {**reg.inputs, DEEP_CHECKS_INPUT: checked})
        need = required.program_create_timeout_minutes
        timeout = create_timeout(reg, ctx.entries[urn])
        if need is None or timeout is None or timeout >= need:
            continue
        out.add(
            urn,
            reg,
            "timeout",
            f"every instance group's nodes Running (groups with on-start deep health checks: {', '.join(checked)})",
            f"its {timeout:g} min wait is shorter than the {need:g} min policies/readiness.yaml sets for groups "
            "with on-start deep health checks, which run before their nodes are Running (timeout risk)",
            source=required.source,
        )


def check_waits(ctx: _Context, api: ApiPath | None, project: str, notes: list[str]) -> _Findings:
    out = _Findings()
    unreachable_reason = None if api is None or api.reachable else api.why
    for urn in ctx.graph.order:
        reg = ctx.graph.nodes[urn]
        entry = ctx.entries[urn]
        for wait in entry.waits_for:
            if not wait.applies(reg.inputs):
                continue
            if wait.kind == "pods":
                _pods_wait(ctx, urn, reg, wait, out=out, notes=notes)
            elif wait.kind == "k8s_api":
                if unreachable_reason is not None:
                    out.add(
                        urn,
                        reg,
                        "unreachable-api",
                        "a reachable Kubernetes API",
                        unreachable_reason,
                        source=(api.source if api is not None else "") or ctx.readiness.deployer_access.source,
                    )
                elif api is not None and (api.via or api.routes):
                    # one admitting rule, and every route back, must be created before it
                    state, concerned = _classify(ctx, urn, api.via) if api.via else ("met", [])
                    for route in api.routes if state == "met" else []:
                        state, concerned = _classify(ctx, urn, [route])
                        if state != "met":
                            break
                    if state != "met":
                        names = ", ".join(ctx.name(u) for u in concerned)
                        why = (
                            f"the path opens with {names}, which is created after it"
                            if state == "deadlock"
                            else f"the path opens with {names}, which is not ordered before it"
                        )
                        out.add(
                            urn,
                            reg,
                            "unreachable-api",
                            "a reachable Kubernetes API",
                            why,
                            source=ctx.readiness.deployer_access.source,
                        )
            elif wait.kind == "crd":
                crd = crd_of(reg.type)
                if crd is None:
                    continue
                _provider_wait(
                    ctx,
                    urn,
                    reg,
                    wait,
                    what=f"CRD {crd}",
                    candidates=ctx.crd_providers.get(crd, []),
                    out=out,
                    missing_kind="crd-missing",
                )
            elif wait.kind == "webhook":
                installers = sorted({u for p in wait.pods for u in ctx.pod_installers.get(p, [])})
                what = f"{', '.join(wait.pods)} serving ({wait.detail})" if wait.detail else ", ".join(wait.pods)
                _provider_wait(ctx, urn, reg, wait, what=what, candidates=installers, out=out, missing_kind="deadlock")
            elif wait.kind == "after" and wait.selector is not None:
                candidates = ctx.select(wait.selector)
                if not candidates:
                    notes.append(f"{reg.name}: nothing in the stack matches '{wait.detail}' ({wait.selector.type})")
                    continue
                _provider_wait(
                    ctx,
                    urn,
                    reg,
                    wait,
                    what=wait.detail or wait.selector.type,
                    candidates=candidates,
                    out=out,
                    missing_kind="race",
                )
        typical = entry.create_minutes
        timeout = create_timeout(reg, entry)
        if typical is not None and timeout is not None and typical >= timeout:
            out.add(
                urn,
                reg,
                "timeout",
                f"{entry.label or reg.type} (typically {typical:g} min)",
                f"its create timeout is {timeout:g} min",
                source=entry.source,
            )
    return out


def schedule(
    graph: CompleteGraph, entries: dict[str, ResourceReadiness]
) -> tuple[dict[str, float], dict[str, float], list[list[str]]]:
    """Start and finish minute of every resource, and the waves (all dependencies in earlier waves)."""
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    level: dict[str, int] = {}
    waves: list[list[str]] = []
    for urn in graph.order:
        deps = graph.edges.get(urn, ())
        start[urn] = max((finish.get(d, 0.0) for d in deps), default=0.0)
        finish[urn] = start[urn] + (entries[urn].create_minutes or 0.0)
        lvl = max((level.get(d, -1) for d in deps), default=-1) + 1
        level[urn] = lvl
        while len(waves) <= lvl:
            waves.append([])
        waves[lvl].append(urn)
    return start, finish, waves


def critical_path(
    graph: CompleteGraph, entries: dict[str, ResourceReadiness], start: dict[str, float], finish: dict[str, float]
) -> list[str]:
    """The chain ending last: at each step the dependency finishing last (ties: the longer chain)."""
    if not graph.order:
        return []
    depth: dict[str, int] = {}
    via: dict[str, str | None] = {}
    for urn in graph.order:
        best: str | None = None
        for d in graph.edges.get(urn, ()):
            if d not in depth:  # an edge against the order: only a cyclic (hand-mutated) graph has one
                continue
            if best is None or (finish[d], depth[d], graph._index[d]) > (finish[best], depth[best], graph._index[best]):
                best = d
        via[urn] = best
        depth[urn] = (depth[best] + 1) if best is not None else 1
    end = max(graph.order, key=lambda u: (finish[u], depth[u], graph._index[u]))
    chain = []
    cursor: str | None = end
    while cursor is not None:
        chain.append(cursor)
        cursor = via[cursor]
    return list(reversed(chain))


def simulate_create(
    graph: CompleteGraph,
    readiness: Readiness,
    *,
    mapping: dict[str, Any] | None,
    project: str,
    fit: FitHook | None = None,
) -> dict[str, Any]:
    """Findings, waves, critical path, long creates off it, and what never gets created."""
    ctx = _context(graph, readiness, fit)
    adopted = adopted_node_groups(mapping, project, readiness)
    ctx.groups.extend(adopted)
    notes: list[str] = []
    if adopted:
        notes.append(
            "nodes: the adopted HyperPod cluster's declared groups ("
            + ", ".join(g.describe() for g in adopted)
            + ") exist before the deploy; python -m tools.preflight.regional compares them with the real cluster"
        )
    api = api_path(ctx, mapping, project)
    if api is None and any(r.type.startswith("kubernetes:") for r in graph.nodes.values()):
        notes.append(
            "Kubernetes API: the cluster is adopted, not created here; whether the deployer reaches its endpoint "
            "cannot be checked offline (docs/adoption.md)"
        )
    found = check_waits(ctx, api, project, notes)
    check_node_wait_timeouts(ctx, found)
    # The edges the program must declare between its own resources (policies/readiness.yaml `ordering:`).
    report_missing(graph, ordering_edges(graph, readiness, ctx.crd_providers), found)
    start, finish, waves = schedule(graph, ctx.entries)
    chain = critical_path(graph, ctx.entries, start, finish)
    steps = [
        Step(
            graph.nodes[u].name,
            graph.nodes[u].type,
            start[u],
            ctx.entries[u].create_minutes,
            finish[u],
            create_timeout(graph.nodes[u], ctx.entries[u]),
        )
        for u in chain
    ]
    total = finish[chain[-1]] if chain else 0.0
    for u in chain:
        entry = ctx.entries[u]
        if entry.create_minutes_third_party and entry.create_minutes is not None:
            notes.append(
                f"{graph.nodes[u].name}: its typical create time ({entry.create_minutes:g} min) comes from a "
                "third-party page only, no AWS source gives one (policies/readiness.yaml)"
            )
    on_path = set(chain)
    long_off: list[LongCreate] = []
    for u in graph.order:
        if u in on_path:
            continue
        reg, entry = graph.nodes[u], ctx.entries[u]
        minutes, timeout = entry.create_minutes, create_timeout(reg, entry)
        if minutes is not None and minutes >= LONG_CREATE_MINUTES:
            long_off.append(LongCreate(reg.name, reg.type, minutes, finish[u], total - finish[u], timeout))
        elif minutes is None and timeout is not None and timeout >= LONG_TIMEOUT_MINUTES:
            # No typical time, but a provider that allows this long: worth knowing it runs in parallel.
            long_off.append(LongCreate(reg.name, reg.type, None, finish[u], None, timeout))
    blocked = graph.descendants(found.failed) - found.failed
    if api is not None:
        notes.insert(0, f"Kubernetes API: {'reachable' if api.reachable else 'UNREACHABLE'} — {api.why}")
        notes[1:1] = [f"Kubernetes API (cannot be known offline): {a}" for a in api.advisories]
    return {
        "findings": found.all(),
        "waves": [[graph.nodes[u].name for u in w] for w in waves],
        "critical_path": steps,
        "total": total,
        "unknown_on_path": sum(1 for s in steps if s.minutes is None),
        "off_path_long": long_off,
        "blocked": [graph.nodes[u].name for u in graph.order if u in blocked],
        "notes": sorted(set(notes), key=notes.index),
        "entries": ctx.entries,
        "context": ctx,
    }


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.rehearse.create", "python -m tools.rehearse --stack <name>")
