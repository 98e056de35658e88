"""Scheduling feasibility of the stack config: every endpoint's pods fit the HyperPod instance groups.

The rules are the pure functions of ``policies/capacity_rules.py`` (the policy pack runs the same ones on the
registered resources). This module only turns the validated config into their inputs — the instance groups
(:func:`groups_of`), the endpoints' custom resources (:func:`workloads_of`) and the system pods of
``policies/readiness.yaml`` — and registers one cross-check that reports the mandatory findings as config
errors (exit 2) at ``endpoints[i].spec.<path>`` or ``cluster.instanceGroups``.

:func:`allocatable_per_node` gives each group's per-node allocatable with its breakdown (what the capacity
table of ``tools/plan/capacity_table.py`` prints).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from policies import capacity_rules as cap

from .base import ConfigAdvisory, ConfigIssue, join_path
from .checks import Advise, Check
from .cluster import ClusterConfig
from .context import ValidationContext
from .endpoints import CR_GROUP_VERSION, Endpoint
from .kvcache import KvCacheConfig
from .network import NetworkConfig


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def region(self) -> str: ...
    @property
    def name_prefix(self) -> str: ...
    @property
    def cluster(self) -> ClusterConfig: ...
    @property
    def kv_cache(self) -> KvCacheConfig: ...
    @property
    def endpoints(self) -> Sequence[Endpoint]: ...
    @property
    def context(self) -> ValidationContext: ...
    @property
    def is_prod(self) -> bool: ...
    @property
    def network(self) -> NetworkConfig: ...


def groups_of(cfg: StackView) -> list[cap.Group]:
    """The instance groups as the capacity rules see them (labels, taints, threads per core, tiered storage)."""
    tiered = cfg.cluster.tiered_storage_memory_percentage if cfg.kv_cache.l2_backend == "tieredstorage" else None
    return [
        cap.Group(
            name=g.name,
            instance_type=g.instance_type,
            count=g.instance_count,
            threads_per_core=g.threads_per_core,
            labels=dict(g.labels),
            taints=tuple(cap.Taint(t.key, t.value, t.effect) for t in g.taints),
            training_plan_arn=g.training_plan_arn,
            tiered_storage_percent=tiered,
            path=f"cluster.instanceGroups[{i}]",
            # components/hyperpod_cluster.py: the group's subnet is its AZ's private subnet, by default the first
            az_id=g.availability_zone_id or (cfg.network.az_ids[0] if cfg.network.az_ids else None),
        )
        for i, g in enumerate(cfg.cluster.instance_groups)
    ]


def workloads_of(cfg: StackView) -> list[cap.Workload]:
    """Each endpoint's pods, from the custom resource it renders to; key = its index in ``endpoints``."""
    url = cfg.kv_cache.url_at_config_time(cfg.name_prefix)
    return [
        cap.workload_from_cr(ep.custom_resource(url), str(i), f"endpoints[{i}] {ep.name}")
        for i, ep in enumerate(cfg.endpoints)
    ]


def capacity_plan(cfg: StackView) -> cap.Plan:
    url = cfg.kv_cache.url_at_config_time(cfg.name_prefix)
    crs = [(f"kubernetes:{CR_GROUP_VERSION}:{ep.kind}", ep.custom_resource(url)) for ep in cfg.endpoints]
    system = [*cap.load_system_pods()[0], *cap.target_node_pods(crs)]
    # what tools.verify read from the nodes (verified/<stack>.json) replaces the computed allocatable
    return cap.plan(groups_of(cfg), workloads_of(cfg), system, cfg.context.allocatable)


def allocatable_per_node(cfg: StackView) -> dict[str, cap.NodeAllocatable | None]:
    """``{group name: what one node offers pods}`` (``None`` for an instance type missing from the data)."""
    return capacity_plan(cfg).allocatable


def _adopts_hyperpod(cfg: StackView) -> bool:
    existing = cfg.cluster.existing
    return existing is not None and existing.hyperpod_cluster_arn is not None


def _where(f: cap.Finding) -> str:
    if f.key.isdigit():
        base = join_path("endpoints", int(f.key), "spec")
        return f"{base}.{f.path}" if f.path else join_path("endpoints", int(f.key))
    return "cluster.instanceGroups"  # controllers: the groups as a whole


def _capacity(cfg: StackView) -> Iterator[ConfigIssue]:
    """The mandatory capacity findings, each at the stack key it is about."""
    plan = capacity_plan(cfg)
    if cfg.is_prod and not _adopts_hyperpod(cfg):
        for message in cap.controllers_in_one_zone(plan):
            yield ConfigIssue("cluster.instanceGroups", f"{message} [{cap.ZONE_RULE}]")
    for f in plan.findings:
        if f.level == "mandatory":
            yield ConfigIssue(_where(f), f"{f.message} [{f.rule}]")


def _capacity_unknowns(cfg: StackView) -> Iterator[ConfigAdvisory]:
    """What the capacity rules cannot check offline (node names, zone names, undeclared labels, training plans)."""
    plan = capacity_plan(cfg)
    for f in plan.findings:
        if f.level != "mandatory" and f.checked_by:
            yield ConfigAdvisory(_where(f), f.message, f.rule, f.checked_by)
    if cfg.is_prod and _adopts_hyperpod(cfg):
        # the adopted cluster's groups are its owner's: said, not refused (docs/adoption.md)
        for message in cap.controllers_in_one_zone(plan):
            yield ConfigAdvisory(
                "cluster.instanceGroups",
                message,
                cap.ZONE_RULE,
                "the adopted cluster's owner (hpi preflight compares the declared groups)",
            )


def zone_names(spec: dict[str, object]) -> list[tuple[str, str]]:
    """``(spec path, zone name)`` of every ``In`` value on a zone label in ``nodeAffinity`` (required terms)."""
    out: list[tuple[str, str]] = []
    affinity = spec.get("nodeAffinity")
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(affinity, dict) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    for i, term in enumerate(terms if isinstance(terms, list) else []):
        for j, expr in enumerate(term.get("matchExpressions") or [] if isinstance(term, dict) else []):
            if isinstance(expr, dict) and expr.get("key") in cap.ZONE_LABELS and expr.get("operator") == "In":
                path = f"{cap.AFFINITY_TERMS}[{i}].matchExpressions[{j}].values"
                out.extend((f"{path}[{k}]", str(v)) for k, v in enumerate(expr.get("values") or []))
    return out


def _zone_names_in_region(cfg: StackView) -> Iterator[ConfigIssue]:
    """A zone name of another Region never matches a node of this stack (zone names start with their Region:
    EC2 User Guide, "Regions and Zones"); which zone ID a name of this Region is, only the account knows
    (tools.preflight.regional, DescribeAvailabilityZones)."""
    for i, ep in enumerate(cfg.endpoints):
        for path, zone in zone_names(ep.spec_dict()):
            if not zone.startswith(cfg.region):
                yield ConfigIssue(
                    f"{join_path('endpoints', i, 'spec')}.{path}",
                    f"zone {zone!r} is not in the stack's Region {cfg.region}: no node of this stack is there "
                    f"(zone names here look like {cfg.region}a) [endpoint-pod-fits-node]",
                )


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (
    _capacity,
    _zone_names_in_region,
)
ADVISORIES: tuple[Advise[StackView], ...] = (_capacity_unknowns,)
