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
from tools.mocks import Registration
from tools.rehearse.model import CompleteGraph
from tools.rehearse.report import Finding, FindingKind, LongCreate, Step

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

    def describe(self) -> str:
        return f"{self.cluster}/{self.name} ({self.count} x {self.instance_type})"


# Resource fit (CPU, memory, pods per node) is the capacity checks' part: given a pod, a group and the
# replicas, return why it does not fit, or None.
FitHook = Callable[[SystemPod, NodeGroup, int], "str | None"]


def node_groups(reg: Registration, readiness: Readiness) -> list[NodeGroup]:
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


def crd_of(typ: str) -> str | None:
    """``kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig`` -> ``group/Kind``."""
    if not typ.startswith("kubernetes:"):
        return None
    _, api, kind = typ.split(":", 2)
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    # Groups without a dot (core, apps, batch, policy) are built into the API server.
    return f"{group}/{kind}" if "." in group else None


@dataclass
class _Context:
    graph: CompleteGraph
    readiness: Readiness
    entries: dict[str, ResourceReadiness]
    groups: list[NodeGroup]
    crd_providers: dict[str, list[str]]
    pod_installers: dict[str, list[str]]
    fit: FitHook | None
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
                groups.extend(node_groups(reg, readiness))
            elif provide.kind == "crds":
                for crd in provide.crds:
                    crd_providers.setdefault(crd, []).append(urn)
        installs = may_install.get(reg.type)
        if installs is None:
            installs = may_install[reg.type] = any(fnmatch.fnmatchcase(reg.type, t) for t in installer_types)
        if installs:
            for pod in readiness.pods_installed_by(reg.type, reg.inputs):
                pod_installers.setdefault(pod.name, []).append(urn)
    return _Context(graph, readiness, entries, groups, crd_providers, pod_installers, fit)


class _Findings:
    """Findings grouped: one per (kind, type, cause), naming the first resource and the others."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, ...], Finding] = {}
        self.failed: set[str] = set()

    def add(self, urn: str, reg: Registration, kind: FindingKind, waits_for: str, why: str, *, source: str) -> None:
        self.failed.add(urn)
        key = (kind, reg.type, waits_for, why)
        got = self.by_key.get(key)
        if got is None:
            self.by_key[key] = Finding(kind, reg.name, reg.type, waits_for, why, source)
        else:
            got.also.append(reg.name)

    def all(self) -> list[Finding]:
        return list(self.by_key.values())


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
    """Whether (and through what) Pulumi reaches the Kubernetes API of the stack's cluster."""

    reachable: bool
    why: str
    via: list[str] = field(default_factory=list)  # URNs of rules that open the path (ordering matters)


def api_path(ctx: _Context, mapping: dict[str, Any] | None, project: str) -> ApiPath | None:
    da = ctx.readiness.deployer_access
    clusters = [r for r in ctx.graph.nodes.values() if r.type == "eks:index:Cluster"]
    prefix = ""
    if not clusters:
        clusters = [r for r in ctx.graph.nodes.values() if r.type == "aws:eks/cluster:Cluster"]
        prefix = "vpcConfig."
    if not clusters:
        return None
    cluster = clusters[0]
    public = input_value(cluster.inputs, prefix + da.public_input, True)  # EKS default: public on
    cidrs = input_value(cluster.inputs, prefix + da.public_cidrs_input, [])
    if public:
        shown = ", ".join(map(str, cidrs)) if cidrs else "0.0.0.0/0 (EKS default)"
        return ApiPath(True, f"public endpoint open to {shown}")
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
    if via:
        return ApiPath(True, "HTTPS to the cluster security group from " + ", ".join(ctx.name(u) for u in via), via)
    for key in da.config_keys:
        top, _, rest = key.partition(".")
        declared = input_value((mapping or {}).get(f"{project}:{top}") or {}, rest) if rest else None
        if declared:
            return ApiPath(True, f"deployer path declared by {project}:{key} (no rule for it found in the graph)")
    return ApiPath(
        False,
        "the endpoint is private only and nothing declares how Pulumi reaches it "
        f"(no {', '.join(project + ':' + k for k in da.config_keys)}, no HTTPS rule on the cluster security group "
        "except from the nodes)",
    )


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
            continue
        names = ", ".join(ctx.name(u) for u in concerned)
        if state == "deadlock":
            why = f"the only nodes that can take it come from {names}, which is created after it (waits on it)"
        else:
            why = f"the nodes come from {names}, which is not ordered before it (works only if timing is lucky)"
        out.add(urn, reg, state, waits, why, source=wait.source)  # type: ignore[arg-type]


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
    names = ", ".join(ctx.name(u) for u in concerned)
    if state == "race":
        kind: FindingKind = "race" if missing_kind != "crd-missing" else "crd-missing"
        why = f"provided by {names}, which is not ordered before it (race: works only if timing is lucky)"
        out.add(urn, reg, kind, what, why, source=wait.source)
    elif concerned:
        out.add(urn, reg, "deadlock", what, f"only {names} provides it, and it is created after it", source=wait.source)
    else:
        out.add(urn, reg, missing_kind, what, "nothing in the stack provides it", source=wait.source)


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
                        source=ctx.readiness.deployer_access.source,
                    )
                elif api is not None and api.via:
                    state, concerned = _classify(ctx, urn, api.via)
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
            + ") exist before the deploy; python -m tools.preflight compares them with the real cluster"
        )
    api = api_path(ctx, mapping, project)
    if api is None and any(r.type.startswith("kubernetes:") for r in graph.nodes.values()):
        notes.append(
            "Kubernetes API: the cluster is adopted, not created here; whether the deployer reaches its endpoint "
            "cannot be checked offline (docs/adoption.md)"
        )
    found = check_waits(ctx, api, project, notes)
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
