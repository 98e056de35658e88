"""The scheduling-feasibility rules of ``policies/capacity_rules.py`` as CrossGuard policies.

The pack sees what is registered: the instance groups of every ``aws-native:sagemaker:Cluster``
(``instanceGroups[]``: type, count, ``threadsPerCore``, ``kubernetesConfig.labels/taints``,
``trainingPlanArn``; ``tieredStorageConfig``) and every operator custom resource (InferenceEndpointConfig /
JumpStartModel, hand-written raw ``CustomResource``s included). It builds the same
:class:`~policies.capacity_rules.Group` / :class:`~policies.capacity_rules.Workload` inputs the config check
builds from the stack file and calls the same :func:`~policies.capacity_rules.plan`, once per stack (the
policies share the result). A stack without a HyperPod cluster has nothing to judge.

Endpoint findings are reported on the custom resource, controller findings on the HyperPod cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
)

from . import capacity_rules as cap
from .graph import HYPERPOD_CLUSTER, as_list, crd_kind, get, plain

ENDPOINT_KINDS = ("InferenceEndpointConfig", "JumpStartModel")


def groups_from_cluster(props: Mapping[str, Any]) -> list[cap.Group]:
    """The instance groups of one registered ``aws-native:sagemaker:Cluster`` (camelCase inputs)."""
    tiered = get(props, "tieredStorageConfig")
    percent = None
    if isinstance(tiered, Mapping) and str(get(tiered, "mode", default="")).lower() == "enable":
        percent = int(get(tiered, "instanceMemoryAllocationPercentage", default=0) or 0) or None
    out = []
    for i, g in enumerate(as_list(get(props, "instanceGroups"))):
        taints = tuple(
            cap.Taint(str(get(t, "key", default="")), get(t, "value"), str(get(t, "effect", default="")))
            for t in as_list(get(g, "kubernetesConfig", "taints"))
        )
        out.append(
            cap.Group(
                name=str(get(g, "instanceGroupName", default=f"group-{i}")),
                instance_type=str(get(g, "instanceType", default="")),
                count=int(get(g, "instanceCount", default=0) or 0),
                threads_per_core=int(get(g, "threadsPerCore", default=1) or 1),
                labels={str(k): str(v) for k, v in (get(g, "kubernetesConfig", "labels", default={}) or {}).items()},
                taints=taints,
                training_plan_arn=get(g, "trainingPlanArn"),
                tiered_storage_percent=percent,
                path=f"instanceGroups[{i}]",
            )
        )
    return out


def endpoint_label(cr: Mapping[str, Any]) -> str:
    meta = cr.get("metadata") if isinstance(cr.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    return f"{cr.get('kind', '?')} {meta.get('namespace', 'default')}/{meta.get('name', '?')}"


def stack_inputs(
    resources: Iterable[tuple[str, str, Mapping[str, Any]]],
) -> tuple[list[cap.Group], list[cap.Workload], str | None]:
    """(groups, workloads, URN of the first HyperPod cluster) from ``(type, urn, props)`` triples."""
    groups: list[cap.Group] = []
    workloads: list[cap.Workload] = []
    cluster_urn = None
    for typ, urn, props in resources:
        if typ == HYPERPOD_CLUSTER:
            cluster_urn = cluster_urn or urn
            groups.extend(groups_from_cluster(props))
        elif crd_kind(typ) in ENDPOINT_KINDS:
            cr = plain(props)
            workloads.append(cap.workload_from_cr(cr, urn, endpoint_label(cr)))
    return groups, workloads, cluster_urn


_CACHE: list[tuple[Sequence[PolicyResource], cap.Plan | None, str | None]] = []


def plan_for(args: StackValidationArgs) -> tuple[cap.Plan | None, str | None]:
    """The stack's capacity plan, computed once for all the capacity policies of one analysis."""
    for resources, cached, urn in _CACHE:
        if resources is args.resources:
            return cached, urn
    groups, workloads, cluster_urn = stack_inputs((r.resource_type, r.urn, r.props) for r in args.resources)
    result = None
    if cluster_urn is not None:
        system_pods = cap.load_system_pods([(r.resource_type, plain(r.props)) for r in args.resources])[0]
        result = cap.plan(groups, workloads, system_pods)
    _CACHE[:] = [(args.resources, result, cluster_urn)]
    return result, cluster_urn


def validate(rule: str, args: StackValidationArgs, report: ReportViolation) -> None:
    """Report the stack capacity plan's findings of one rule (the pack binds ``rule``, its record's name)."""
    result, cluster_urn = plan_for(args)
    if result is None:
        return
    for finding in result.by_rule(rule):
        where = f"spec.{finding.path}: " if finding.path and finding.key else ""
        unknown = f" (cannot be checked offline; checked by {finding.checked_by})" if finding.checked_by else ""
        report(f"{where}{finding.message}{unknown}", finding.key or cluster_urn)
