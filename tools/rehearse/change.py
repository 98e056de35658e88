"""The change rehearsal: ``hpi rehearse --stack S --diff BASE.json`` (or ``--diff-state EXPORT.json``) walks the update.

The create rehearsal proves a first ``up`` converges; a green create says nothing about the change after it. This
module takes the diffed plan (:func:`tools.plan.diff.diff_plans`: every step ``same``, ``update``, ``replace``,
``may-replace``, ``create`` or ``delete``, classified by the owners' create-only rules) and judges each changed step
by its owner's *update* rules. Every judgement has one of three outcomes:

* ``holds`` — the owner's rules allow it (the rule and its source are named);
* ``refused`` — the owner refuses it or it would fail; the key that causes it and the fix;
* ``advisory`` — it cannot be known offline; names what checks it.

Rules (each with its source):

* ``elasticache-engine-transition`` — ElastiCache upgrades a Redis OSS replication group to Valkey in place
  (ModifyReplicationGroup ``Engine``/``EngineVersion``; "Upgrading engine versions including cross engine upgrades",
  https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/VersionManagement.HowTo.html), never Valkey back to Redis
  OSS, and no engine version is downgraded ("you can't downgrade to an older engine version", same guide, "Version
  management"; https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_ModifyReplicationGroup.html).
* ``eks-addon-downgrade`` — an EKS add-on version only moves forward (UpdateAddon; EKS user guide "Update an Amazon
  EKS add-on": a downgrade is not supported; remove and re-create the add-on instead).
* ``eks-version-step`` — the control plane moves one minor version per update and never back (EKS user guide
  "Update existing cluster to new Kubernetes version": "one minor version at a time"; no downgrade).
* ``fixed-name-replacement`` — a replacement is create-before-delete unless the resource says
  ``deleteBeforeReplace``; with a name fixed by an input (its record's ``physical_name``, ``policies/resource_types``) the new one collides with
  the old (e.g. CreateCluster with a ClusterName in use). Refused unless the name differs between old and new, or
  the resource deletes first.
* ``deep-health-checks-during-update`` — SageMaker says UpdateCluster does not work as expected while deep health
  checks run (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-deep-health-checks.html):
  a scale-up of a group that runs on-start checks holds when the plan's node wait waits for the new nodes (its
  update runs the wait again), so nothing after it lands while they run.
* ``update-timeout`` — a node software roll's fixed part (its batches' wait intervals) against its timeout.

A Kubernetes version change is walked as the documented upgrade (:func:`upgrade_walk`): control plane, core add-ons,
the HyperPod node software with each group's rolling config and the serving capacity left during a batch
(:mod:`policies.node_roll`), then the operator add-on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from policies.node_roll import batch_nodes
from policies.physical_names import name_rule
from policies.resource_types.tokens import (
    EKS_ADDON,
    EKS_CLUSTER,
    EKS_COMPONENT,
    HYPERPOD_CLUSTER,
    REPLICATION_GROUP,
)
from tools.plan.diff import logical_name
from tools.plan.writer import extension

Outcome = Literal["holds", "refused", "advisory"]
EKS_CLUSTERS = (EKS_CLUSTER, EKS_COMPONENT)  # pulumi-eks's component carries version, kubeProxyAddonOptions
NODE_WAIT = "hyperpod:HyperPodNodeWait"
NODE_SOFTWARE = "hyperpod:HyperPodNodeSoftware"
OPERATOR_ADDON = "amazon-sagemaker-hyperpod-inference"
CORE_ADDONS = ("kube-proxy", "coredns", "vpc-cni", "eks-pod-identity-agent")


@dataclass(frozen=True)
class Judgement:
    """One changed step judged by its owner's update rules."""

    resource: str
    op: str
    rule: str
    outcome: Outcome
    message: str
    fix: str = ""
    checked_by: str = ""


@dataclass
class UpgradeStep:
    """One step of the documented Kubernetes upgrade order, with what it takes away while it runs."""

    order: int
    name: str
    resources: list[str]
    takes_away: list[str] = field(default_factory=list)


@dataclass
class ChangeRehearsal:
    stack: str
    base: str
    judgements: list[Judgement] = field(default_factory=list)
    upgrade: list[UpgradeStep] = field(default_factory=list)
    config_changes: list[str] = field(default_factory=list)

    @property
    def refused(self) -> list[Judgement]:
        return [j for j in self.judgements if j.outcome == "refused"]

    @property
    def converges(self) -> bool:
        return not self.refused

    @property
    def exit_code(self) -> int:
        return 0 if self.converges else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "mode": "change",
            "base": self.base,
            "converges": self.converges,
            "configChanges": self.config_changes,
            "judgements": [asdict(j) for j in self.judgements],
            "upgrade": [asdict(s) for s in self.upgrade],
        }

    def lines(self) -> list[str]:
        out = [f"change rehearsal of {self.stack} against {self.base}:"]
        out += [f"  config {c}" for c in self.config_changes]
        if self.upgrade:
            out.append("  Kubernetes upgrade, in the documented order:")
            for s in self.upgrade:
                out.append(f"    {s.order}. {s.name}: {', '.join(s.resources) or '(nothing changes)'}")
                out += [f"       while it runs: {t}" for t in s.takes_away]
        for j in self.judgements:
            line = f"  {j.outcome:<8} {j.op:<11} {j.resource} [{j.rule}]: {j.message}"
            if j.fix:
                line += f"; fix: {j.fix}"
            if j.checked_by:
                line += f"; checked by {j.checked_by}"
            out.append(line)
        verdict = "converges" if self.converges else f"{len(self.refused)} refused"
        out.append(f"  {len(self.judgements)} changed step(s) judged: {verdict}")
        return out


# --- values ---------------------------------------------------------------------------------------------------


def _version(text: Any) -> tuple[int, ...]:
    """``v1.35.0-eksbuild.2`` / ``8.0`` / ``1.35`` -> comparable numbers (eksbuild last)."""
    if not isinstance(text, str):
        return ()
    head, _, build = text.lstrip("v").partition("-eksbuild.")
    parts = [int(p) for p in head.split(".") if p.isdigit()]
    if build.isdigit():
        parts.append(int(build))
    return tuple(parts)


def _inputs(step: Mapping[str, Any], which: str) -> dict[str, Any]:
    state = step.get(which) or {}
    inputs: dict[str, Any] = state.get("inputs") or {}
    return inputs


def _type(step: Mapping[str, Any]) -> str:
    state = step.get("newState") or step.get("oldState") or {}
    return str(state.get("type", ""))


# --- the rules ------------------------------------------------------------------------------------------------


def _elasticache(name: str, op: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Judgement | None:
    engine_old, engine_new = old.get("engine"), new.get("engine")
    version_old, version_new = old.get("engineVersion"), new.get("engineVersion")
    if (engine_old, version_old) == (engine_new, version_new):
        return None
    rule = "elasticache-engine-transition"
    if engine_old == "valkey" and engine_new == "redis":
        return Judgement(
            name,
            op,
            rule,
            "refused",
            f"engine valkey {version_old} -> redis {version_new}: ElastiCache upgrades Redis OSS to Valkey, never "
            "Valkey back to Redis OSS (ModifyReplicationGroup)",
            "keep kvCache.redis.engine valkey; to run Redis OSS, create a new replication group (a new name, the "
            "old one in allowReplacement) and move the clients",
        )
    if engine_old == engine_new and _version(version_new) < _version(version_old):
        return Judgement(
            name,
            op,
            rule,
            "refused",
            f"{engine_new} {version_old} -> {version_new}: ElastiCache does not downgrade an engine version",
            f"keep kvCache.redis.engineVersion at {version_old} or later",
        )
    if engine_old == "redis" and engine_new == "valkey":
        return Judgement(
            name,
            op,
            rule,
            "holds",
            f"redis {version_old} -> valkey {version_new}: the cross-engine upgrade ElastiCache performs in place",
        )
    return Judgement(name, op, rule, "holds", f"{engine_new} {version_old} -> {version_new}: an engine upgrade")


def _addon(name: str, op: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Judgement | None:
    before, after = old.get("addonVersion"), new.get("addonVersion")
    if before == after or before is None or after is None:
        return None
    if _version(after) < _version(before):
        return Judgement(
            name,
            op,
            "eks-addon-downgrade",
            "refused",
            f"{new.get('addonName')} {before} -> {after}: EKS does not downgrade an add-on",
            f"keep {before} or a later build; to go back, remove the add-on and create it at {after}",
        )
    return Judgement(name, op, "eks-addon-downgrade", "holds", f"{new.get('addonName')} {before} -> {after}")


def _eks_version(name: str, op: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Judgement | None:
    before, after = _version(old.get("version")), _version(new.get("version"))
    if before == after or not before or not after:
        return None
    rule = "eks-version-step"
    shown = f"Kubernetes {old.get('version')} -> {new.get('version')}"
    if after < before:
        return Judgement(
            name,
            op,
            rule,
            "refused",
            f"{shown}: EKS never downgrades a control plane",
            f"keep cluster.kubernetesVersion {old.get('version')}",
        )
    if after[0] != before[0] or after[1] - before[1] > 1:
        step = f"{before[0]}.{before[1] + 1}"
        return Judgement(
            name,
            op,
            rule,
            "refused",
            f"{shown}: EKS moves one minor version per update",
            f"set cluster.kubernetesVersion {step} first, `up`, then the next",
        )
    return Judgement(name, op, rule, "holds", f"{shown}: one minor version forward")


def _kube_proxy(name: str, op: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Judgement | None:
    """pulumi-eks's kube-proxy add-on (``kubeProxyAddonOptions.version``) follows the EKS add-on rule."""
    before = (old.get("kubeProxyAddonOptions") or {}).get("version")
    after = (new.get("kubeProxyAddonOptions") or {}).get("version")
    judged = _addon(name, op, {"addonVersion": before}, {"addonVersion": after, "addonName": "kube-proxy"})
    return judged


def _fixed_name(  # noqa: PLR0917 - one rule of judge(), the step's parts
    name: str,
    op: str,
    typ: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    delete_first: bool,
    config_changes: Sequence[str],
) -> Judgement | None:
    found = name_rule(typ)
    if found is None or found[1].name is None:
        return None
    key = found[1].name
    before, after = old.get(key), new.get(key)
    if not isinstance(after, str) or not after:
        return None  # auto-named: old and new coexist
    if before != after:
        return Judgement(
            name,
            op,
            "fixed-name-replacement",
            "holds",
            f"replaced under a new {key} ({before} -> {after}): both exist during the replacement",
        )
    if delete_first:
        return Judgement(
            name,
            op,
            "fixed-name-replacement",
            "holds",
            f"{key} {after} is fixed, and the resource is delete-before-replace (an outage while it goes)",
        )
    cause = f" (the stack config changed: {', '.join(config_changes)})" if config_changes else ""
    outcome: Outcome = "refused" if op == "replace" else "advisory"
    return Judgement(
        name,
        op,
        "fixed-name-replacement",
        outcome,
        f"{'replaced' if op == 'replace' else 'may be replaced'} under the fixed {key} {after}{cause}: Pulumi creates "
        "the new one before deleting the old, and the name is still in use",
        "revert the change that forces the replacement (availabilityZoneIds is an ordered list: keep the old order "
        "and append new AZ IDs); if the replacement is intended, derive the name so both can coexist or make the "
        "resource delete-before-replace, and list it in allowReplacement",
        "" if outcome == "refused" else "the provider's Diff at `pulumi preview` (whether it replaces)",
    )


def _group_counts(inputs: Mapping[str, Any]) -> dict[str, tuple[int, bool]]:
    out = {}
    for g in inputs.get("instanceGroups") or []:
        if isinstance(g, Mapping):
            out[str(g.get("instanceGroupName"))] = (
                int(g.get("instanceCount") or 0),
                bool(g.get("onStartDeepHealthChecks")),
            )
    return out


def _deep_health_checks(
    name: str, op: str, old: Mapping[str, Any], new: Mapping[str, Any], node_wait_reruns: bool
) -> Judgement | None:
    before, after = _group_counts(old), _group_counts(new)
    grown = sorted(g for g, (n, checked) in after.items() if checked and n > before.get(g, (0, False))[0])
    if not grown:
        return None
    rule = "deep-health-checks-during-update"
    if node_wait_reruns:
        return Judgement(
            name,
            op,
            rule,
            "holds",
            f"new nodes of {', '.join(grown)} run on-start deep health checks; the node wait waits for them, so "
            "nothing after it (the node roll, the operator add-on) updates while they run",
            checked_by="do not start another `up` before this one ends (UpdateCluster misbehaves during the checks)",
        )
    return Judgement(
        name,
        op,
        rule,
        "refused",
        f"new nodes of {', '.join(grown)} run on-start deep health checks and no node wait in this plan waits for them",
        "keep the node wait (components/hyperpod_node_wait.py) on the cluster's groups",
    )


def _roll_timeout(
    name: str, op: str, old: Mapping[str, Any], new: Mapping[str, Any], counts: Mapping[str, int]
) -> list[Judgement]:
    if old.get("kubernetesVersion") == new.get("kubernetesVersion"):
        return []
    out = []
    timeout_min = float(new.get("timeoutSeconds") or 0) / 60
    for group, deployment in sorted((new.get("groups") or {}).items()):
        count = counts.get(group, 0)
        batch = (deployment.get("RollingUpdatePolicy") or {}).get("MaximumBatchSize") or {}
        per = batch_nodes(count, batch.get("Type"), batch.get("Value"))
        batches = math.ceil(count / per) if per else 0
        waits = max(0, batches - 1) * int(deployment.get("WaitIntervalInSeconds") or 0) / 60
        if waits >= timeout_min:
            out.append(
                Judgement(
                    name,
                    op,
                    "update-timeout",
                    "refused",
                    f"group {group}: {batches} batch(es) with {waits:g} min of wait intervals alone reach the roll's "
                    f"timeout of {timeout_min:g} min",
                    "raise the batch size or lower softwareUpdates.waitIntervalSeconds",
                )
            )
        else:
            out.append(
                Judgement(
                    name,
                    op,
                    "update-timeout",
                    "advisory",
                    f"group {group}: {batches} batch(es) of {per} node(s), {waits:g} min of wait intervals, plus each "
                    f"batch's patch time (no source states one) within {timeout_min:g} min",
                    checked_by=f"aws sagemaker describe-cluster (InstanceGroups[{group}].SoftwareUpdateStatus) during the roll",
                )
            )
    return out


# --- the walk --------------------------------------------------------------------------------------------------


def judge(plan: Mapping[str, Any], registrations: Sequence[Any]) -> list[Judgement]:
    """Every changed step of a diffed plan, judged (a step no specific rule covers holds by its replacement rule)."""
    steps = [s for s in plan.get("steps") or [] if s.get("op") in ("update", "replace", "may-replace")]
    config_changes = [c["path"] for c in extension(dict(plan)).get("configChanges") or []]
    delete_first = {r.urn: bool(getattr(r, "delete_before_replace", False)) for r in registrations}
    rerun = {
        s["urn"]
        for s in steps
        if _inputs(s, "newState").get("resourceKind") == NODE_WAIT
        and _inputs(s, "oldState").get("groups") != _inputs(s, "newState").get("groups")
    }
    counts: dict[str, int] = {}
    for r in registrations:
        if getattr(r, "type", "") == HYPERPOD_CLUSTER:
            counts = {g: n for g, (n, _) in _group_counts(getattr(r, "inputs", {}) or {}).items()}
    out: list[Judgement] = []
    for s in steps:
        typ, op, name = _type(s), s["op"], logical_name(s["urn"])
        old, new = _inputs(s, "oldState"), _inputs(s, "newState")
        found: list[Judgement | None] = []
        if op in ("replace", "may-replace"):
            found.append(_fixed_name(name, op, typ, old, new, delete_first.get(s["urn"], False), config_changes))
        if typ == REPLICATION_GROUP:
            found.append(_elasticache(name, op, old, new))
        elif typ == EKS_ADDON:
            found.append(_addon(name, op, old, new))
        elif typ in EKS_CLUSTERS:
            found.append(_eks_version(name, op, old, new))
            found.append(_kube_proxy(name, op, old, new))
        elif typ == HYPERPOD_CLUSTER:
            found.append(_deep_health_checks(name, op, old, new, bool(rerun)))
        elif new.get("resourceKind") == NODE_SOFTWARE:
            found.extend(_roll_timeout(name, op, old, new, counts))
        judged = [j for j in found if j is not None]
        if not judged:
            reasons = ", ".join(s.get("diffReasons") or []) or "inputs"
            what = "in place" if op == "update" else "by replacement (create-before-delete, auto-named)"
            judged = [
                Judgement(
                    name,
                    op,
                    "replacement-rules",
                    "holds" if op != "may-replace" else "advisory",
                    f"{reasons} change {what} (policies/replacement_rules.json)",
                    checked_by="" if op != "may-replace" else "the provider's Diff at `pulumi preview`",
                )
            ]
        out.extend(judged)
    return out


def upgrade_walk(plan: Mapping[str, Any], impacts: Sequence[Any]) -> list[UpgradeStep]:
    """The documented order of a Kubernetes upgrade, when the plan changes the control plane's version."""
    steps = plan.get("steps") or []
    control = [
        s
        for s in steps
        if _type(s) in EKS_CLUSTERS
        and s.get("op") == "update"
        and _inputs(s, "oldState").get("version") != _inputs(s, "newState").get("version")
    ]
    if not control:
        return []
    addons = [s for s in steps if _type(s) == EKS_ADDON and s.get("op") in ("update", "replace")]
    core = [s for s in addons if _inputs(s, "newState").get("addonName") in CORE_ADDONS]
    operator = [s for s in addons if _inputs(s, "newState").get("addonName") == OPERATOR_ADDON]
    software = [s for s in steps if _inputs(s, "newState").get("resourceKind") == NODE_SOFTWARE]
    pinned = [s for s in steps if _type(s) == HYPERPOD_CLUSTER and s.get("op") == "update"]
    old_v, new_v = (_inputs(control[0], w).get("version") for w in ("oldState", "newState"))
    proxy = [
        f"{logical_name(s['urn'])} kube-proxy ({(_inputs(s, 'newState').get('kubeProxyAddonOptions') or {}).get('version')})"
        for s in control
        if (_inputs(s, "oldState").get("kubeProxyAddonOptions") or {}).get("version")
        != (_inputs(s, "newState").get("kubeProxyAddonOptions") or {}).get("version")
    ]
    roll_takes = [f"{i.group}: {i.batch_nodes} node(s) at a time; {i.describe()}" for i in impacts] or [
        "no endpoint runs on the rolled groups"
    ]
    rolled = [logical_name(s["urn"]) for s in software] + [logical_name(s["urn"]) for s in pinned]
    return [
        UpgradeStep(
            1,
            f"control plane {old_v} -> {new_v}",
            [logical_name(s["urn"]) for s in control],
            ["the API server stays up (EKS updates it in place); no pod moves"],
        ),
        UpgradeStep(
            2,
            f"core add-ons at builds for {new_v}",
            proxy + [f"{logical_name(s['urn'])} ({_inputs(s, 'newState').get('addonVersion')})" for s in core],
            ["kube-proxy / CoreDNS pods restart one by one (DaemonSet / Deployment rollout)"],
        ),
        UpgradeStep(
            3, "HyperPod node software (each group's rolling DeploymentConfig, one group at a time)", rolled, roll_takes
        ),
        UpgradeStep(
            4,
            "inference operator add-on",
            [logical_name(s["urn"]) for s in operator],
            ["the operator's controller restarts; serving pods keep running"],
        ),
    ]


def rehearse_change(
    stack: str, plan: Mapping[str, Any], registrations: Sequence[Any], impacts: Sequence[Any], base: str
) -> ChangeRehearsal:
    result = ChangeRehearsal(stack=stack, base=base)
    result.config_changes = [
        f"{c['path']}: {c.get('old')!r} -> {c.get('new')!r}" for c in extension(dict(plan)).get("configChanges") or []
    ]
    result.judgements = judge(plan, registrations)
    result.upgrade = upgrade_walk(plan, impacts)
    return result


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.rehearse.change", "python -m tools.rehearse --stack <name> --diff BASE.json")
