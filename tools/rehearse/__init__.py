"""Deploy rehearsal: simulate ``pulumi up`` and ``pulumi destroy`` offline and prove they converge.

Mocks prove wiring, not convergence. This package takes the graph a mock run registered, completes it
(remote components expanded into the children they really create: :mod:`tools.rehearse.model`), and
walks it as the engine would, checking every wait against ``policies/readiness.yaml``
(:mod:`tools.rehearse.create`, :mod:`tools.rehearse.destroy`).

Entry point for other tools (``tools.cli.preview``)::

    from tools.rehearse import rehearse
    result = rehearse(run)            # a tools.plan.harness.StackRun, or a list of Registrations
    result.exit_code, result.to_json(), console.print(result)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from components.config import PROJECT
from policies.readiness import Readiness, load_readiness
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration
from tools.rehearse.create import FitHook, NodeGroup, _context, simulate_create
from tools.rehearse.destroy import simulate_destroy
from tools.rehearse.model import CompleteGraph, expand
from tools.rehearse.ordering import OrderingEdge, ordering_edges
from tools.rehearse.report import EXIT_CONFIG, EXIT_FINDINGS, EXIT_OK, Finding, Rehearsal, Step

__all__ = [
    "EXIT_CONFIG",
    "EXIT_FINDINGS",
    "EXIT_OK",
    "CompleteGraph",
    "Finding",
    "FitHook",
    "NodeGroup",
    "OrderingEdge",
    "Rehearsal",
    "Step",
    "edges",
    "expand",
    "rehearse",
]


def _environment(mapping: dict[str, Any] | None) -> str:
    env = (mapping or {}).get(f"{PROJECT}:environment")
    return env if isinstance(env, str) else "dev"


def rehearse(
    run: StackRun | Sequence[Registration],
    *,
    mapping: dict[str, Any] | None = None,
    stack: str | None = None,
    environment: str | None = None,
    destroy: bool = False,
    fit: FitHook | None = None,
    readiness: Readiness | None = None,
) -> Rehearsal:
    """Rehearse the create (or, with ``destroy=True``, the destroy) of a mock run's graph.

    ``mapping`` is the stack's ``config:`` mapping (for the environment and the declared deployer path);
    ``environment`` overrides it. ``fit`` is the capacity checks' resource-fit hook (see ``FitHook``).
    """
    readiness = readiness or load_readiness()
    if isinstance(run, StackRun):
        registrations: Sequence[Registration] = run.registrations
        stack = stack or run.stack
    else:
        registrations = run
    env = environment or _environment(mapping)
    graph = CompleteGraph.build(registrations, readiness)
    result = Rehearsal(
        stack=stack or "?", environment=env, mode="destroy" if destroy else "create", resources=len(graph.order)
    )
    if destroy:
        d = simulate_destroy(graph, readiness, is_prod=env == "prod", stack=stack)
        result.findings, result.waves, result.protected, result.notes = d.findings, d.waves, d.protected, d.notes
        return result
    c = simulate_create(graph, readiness, mapping=mapping, project=PROJECT, fit=fit)
    result.findings = c["findings"]
    result.waves = c["waves"]
    result.critical_path = c["critical_path"]
    result.total_minutes = c["total"]
    result.unknown_on_path = c["unknown_on_path"]
    result.off_path_long = c["off_path_long"]
    result.blocked = c["blocked"]
    result.notes = c["notes"]
    return result


def edges(
    run: StackRun | Sequence[Registration], readiness: Readiness | None = None
) -> tuple[CompleteGraph, list[OrderingEdge]]:
    """The complete graph of a mock run and every edge its ``ordering:`` rules require, met or not (the
    rehearsal reports the unmet ones; the ordering tests list them per reference stack)."""
    readiness = readiness or load_readiness()
    registrations = run.registrations if isinstance(run, StackRun) else run
    graph = CompleteGraph.build(registrations, readiness)
    return graph, ordering_edges(graph, readiness, _context(graph, readiness, None).crd_providers)
