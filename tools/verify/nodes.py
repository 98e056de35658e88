"""Check 3, the cluster: HyperPod nodes Running and Ready, their labels and taints, allocatable, system pods.

The capacity model (``policies/capacity_rules.py``) computes a node's allocatable from the instance data and
nodeadm's kube-reserved formula (UNCONFIRMED [nodeadm-defaults]), ``threadsPerCore`` (UNCONFIRMED
[threads-per-core]), ``maxPods`` (UNCONFIRMED [hyperpod-max-pods]) and leaves tiered storage's memory in
(UNCONFIRMED [tiered-storage-memory]). ``node-allocatable`` compares each group's smallest ``status.allocatable``
with it and records it, so the next offline preview uses the observed figure (``components/config/observed.py``).
``system-pods`` compares the real requests of the add-ons' and charts' pods with ``policies/readiness.yaml``.
"""

from __future__ import annotations

from typing import Any

from policies import capacity_rules as cap
from tools.preflight.checks import listed

from .base import Context, Result, check, condition, labels

LABELS_EXPECTED = (cap.INSTANCE_TYPE_LABEL, cap.GROUP_LABEL, cap.COMPUTE_TYPE_LABEL)
SHOWN = (cap.CPU, cap.MEMORY, cap.PODS, cap.GPU)


def group_nodes(ctx: Context, group: str) -> list[dict[str, Any]]:
    return [n for n in ctx.nodes if labels(n).get(cap.GROUP_LABEL) == group]


def _cluster_nodes(ctx: Context) -> list[dict[str, Any]]:
    return listed(
        ctx.aws("sagemaker"), "list_cluster_nodes", "ClusterNodeSummaries", ClusterName=ctx.hyperpod_cluster_name
    )


@check(
    "hyperpod-nodes",
    "every instance group's nodes",
    settles=("node-running-means-ready", "hyperpod-node-labels"),
    reads=("sagemaker:ListClusterNodes", "core/v1 nodes list"),
    traffic=True,
)
def hyperpod_nodes(ctx: Context) -> list[Result]:
    summaries = ctx.once("clusterNodes", lambda: _cluster_nodes(ctx))
    out = []
    for i, g in enumerate(ctx.cfg.cluster.instance_groups):
        key = f"cluster.instanceGroups[{i}]"
        mine = [s for s in summaries if s.get("InstanceGroupName") == g.name]
        running = [s for s in mine if (s.get("InstanceStatus") or {}).get("Status") == "Running"]
        nodes = group_nodes(ctx, g.name)
        ready = [n for n in nodes if (condition(n, "Ready") or {}).get("status") == "True"]
        problems = []
        if len(running) < g.instance_count:
            states = ", ".join(
                f"{s.get('InstanceId')} {(s.get('InstanceStatus') or {}).get('Status')}"
                for s in mine
                if s not in running
            )
            problems.append(
                f"{len(running)} of {g.instance_count} Running in ListClusterNodes ({states or 'none listed'})"
            )
        if len(ready) < len(running):
            problems.append(f"{len(ready)} Ready in Kubernetes of {len(running)} Running (node-running-means-ready)")
        want = {
            k: v
            for k, v in cap.Group(g.name, g.instance_type, g.instance_count, labels=dict(g.labels))
            .node_labels()
            .items()
            if k in LABELS_EXPECTED or k in g.labels
        }
        for n in nodes:
            have = labels(n)
            wrong = {k: have.get(k) for k, v in want.items() if have.get(k) != v}
            if wrong:
                problems.append(
                    f"node {n['metadata']['name']} labels {wrong}, expected { ({k: want[k] for k in wrong}) }"
                )
                break
            taints = {
                (t.get("key"), t.get("value"), t.get("effect")) for t in (n.get("spec") or {}).get("taints") or []
            }
            missing = [t for t in g.taints if (t.key, t.value, t.effect) not in taints]
            if missing:
                problems.append(
                    f"node {n['metadata']['name']} lacks the taints {', '.join(f'{t.key}:{t.effect}' for t in missing)}"
                )
                break
        if nodes:
            first = nodes[0]
            ctx.groups.setdefault(g.name, {}).update(
                nodes=len(nodes),
                labels={k: v for k, v in labels(first).items() if "/" in k},
                taints=list((first.get("spec") or {}).get("taints") or []),
            )
        fix = (
            "a node that joined with other labels or taints is from another group or HyperPod changed them: "
            f"compare {key} with `kubectl get nodes --show-labels`"
            if any("labels" in p or "taints" in p for p in problems)
            else f"aws sagemaker list-cluster-nodes --cluster-name {ctx.hyperpod_cluster_name}; a fresh group takes "
            "a while (--wait 30)"
        )
        out.append(
            Result(
                "hyperpod-nodes",
                "FAIL" if problems else "PASS",
                f"{g.name}: "
                + (
                    "; ".join(problems)
                    if problems
                    else f"{len(running)} Running, {len(ready)} Ready, labels and taints as configured"
                ),
                fix if problems else "",
                ("node-running-means-ready", "hyperpod-node-labels") if nodes else (),
            )
        )
    return out


def _smallest(nodes: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in nodes:
        alloc = (n.get("status") or {}).get("allocatable") or {}
        for r in (cap.CPU, cap.MEMORY, cap.PODS, *cap.EXTENDED):
            v = cap.amount(r, alloc.get(r, 0))
            out[r] = min(out.get(r, v), v)
    return out


@check(
    "node-allocatable",
    "each group's allocatable against the capacity model",
    settles=("hyperpod-max-pods", "nodeadm-defaults", "threads-per-core", "tiered-storage-memory"),
    reads=("core/v1 nodes list",),
)
def node_allocatable(ctx: Context) -> list[Result]:
    from components.config.capacity import groups_of

    out = []
    for g in groups_of(ctx.cfg):
        nodes = group_nodes(ctx, g.name)
        if not nodes:
            out.append(Result("node-allocatable", "SKIP", f"{g.name}: no node in Kubernetes yet (see hyperpod-nodes)"))
            continue
        seen = _smallest(nodes)
        ctx.groups.setdefault(g.name, {}).update(
            nodes=len(nodes),
            allocatable={
                r: cap.show(r, v) if r in (cap.CPU, cap.MEMORY) else str(v) for r, v in seen.items() if v or r in SHOWN
            },
        )
        model = cap.node_allocatable(g)
        if model is None:
            out.append(
                Result("node-allocatable", "WARN", f"{g.name}: {g.instance_type} is not in the capacity data; recorded")
            )
            continue
        kubelet = {
            r: model.capacity[r] - model.kube_reserved.get(r, 0) - model.eviction.get(r, 0) for r in model.capacity
        }
        short = [r for r in SHOWN if seen.get(r, 0) < kubelet.get(r, 0)]
        text = ", ".join(
            f"{cap.NOUN[r]} {cap.show(r, seen.get(r, 0))} (model {cap.show(r, kubelet.get(r, 0))})" for r in SHOWN
        )
        settles: tuple[str, ...] = ("hyperpod-max-pods", "nodeadm-defaults", "threads-per-core")
        if g.tiered_storage_percent:
            settles += ("tiered-storage-memory",)
        if short:
            out.append(
                Result(
                    "node-allocatable",
                    "FAIL",
                    f"{g.name}: a node offers less than the capacity model assumes: {text}",
                    f"commit verified/{ctx.cfg.stack}.json (this run wrote it): the offline capacity checks then use "
                    "the observed figures; rerun tools.cli.preview",
                    settles,
                )
            )
        else:
            out.append(Result("node-allocatable", "PASS", f"{g.name}: {text}", "", settles))
    return out


def _requests(obj: dict[str, Any]) -> dict[str, int]:
    total: dict[str, int] = {}
    spec = (((obj.get("spec") or {}).get("template") or {}).get("spec")) or {}
    for c in spec.get("containers") or []:
        for r, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[r] = total.get(r, 0) + cap.amount(r, v)
    return total


@check(
    "system-pods",
    "the system pods and DaemonSets, their real requests",
    settles=("system-pod-requests", "obs-workloads", "model-cache-daemonset-requests", "addon-bundled-chart-values"),
    reads=("apps/v1 daemonsets list", "apps/v1 deployments list", "core/v1 pods list"),
)
def system_pods(ctx: Context) -> list[Result]:
    known = {p.name: p for p in cap.load_system_pods()[0]}
    workloads = [
        *(("DaemonSet", d) for d in ctx.kube.items(ctx.kube.apps.list_daemon_set_for_all_namespaces)),
        *(("Deployment", d) for d in ctx.kube.items(ctx.kube.apps.list_deployment_for_all_namespaces)),
    ]
    recorded: dict[str, Any] = {}
    wrong, unknown = [], []
    for kind, obj in workloads:
        name = str(obj["metadata"]["name"])
        real = _requests(obj)
        replicas = (obj.get("spec") or {}).get("replicas")
        tolerations = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("tolerations") or []
        recorded[f"{obj['metadata'].get('namespace')}/{name}"] = {
            "kind": kind,
            "requests": {r: cap.show(r, v) for r, v in real.items()},
            "replicas": replicas,
            "tolerations": tolerations,
        }
        entry = known.get(name)
        if entry is None:
            continue
        if entry.requests is None:
            unknown.append(f"{name} ({cap.describe(real) or 'no requests'})")
            continue
        differs = {r for r in set(entry.requests) | set(real) if entry.requests.get(r, 0) != real.get(r, 0)}
        if differs:
            wrong.append(
                f"{name}: requests {cap.describe(real) or 'none'}, readiness.yaml says {cap.describe(entry.requests) or 'none'}"
            )
        if kind == "Deployment" and replicas is not None and entry.replicas != replicas:
            wrong.append(f"{name}: {replicas} replicas, readiness.yaml says {entry.replicas}")
    ctx.facts["systemPods"] = recorded
    pending = [
        f"{p['metadata'].get('namespace')}/{p['metadata']['name']}"
        for p in ctx.pods
        if (p.get("status") or {}).get("phase") == "Pending"
    ]
    settles = ("system-pod-requests", "obs-workloads", "model-cache-daemonset-requests", "addon-bundled-chart-values")
    out = []
    if pending:
        out.append(
            Result(
                "system-pods",
                "FAIL",
                f"{len(pending)} pod(s) Pending: {', '.join(pending[:8])}",
                "kubectl describe pod <name> -n <namespace> (Events: Insufficient ..., untolerated taint)",
            )
        )
    if wrong:
        out.append(
            Result(
                "system-pods",
                "FAIL",
                "; ".join(wrong),
                "update requests/replicas in policies/readiness.yaml (system pods) to what the cluster runs, with "
                f"the source 'observed {ctx.today.isoformat()} by verify'",
                settles,
            )
        )
    if unknown:
        out.append(
            Result(
                "system-pods",
                "WARN",
                f"requests the readiness data leaves unknown, now observed: {'; '.join(unknown)}",
                "set them in policies/readiness.yaml (recorded in verified/<stack>.json, facts.systemPods)",
                settles,
            )
        )
    if not out:
        out.append(Result("system-pods", "PASS", f"{len(workloads)} workloads as the readiness data says", "", settles))
    return out


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.verify.nodes", "python -m tools.verify --stack <name>")
