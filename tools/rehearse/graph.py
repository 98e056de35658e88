"""Views of the rehearsal's graph model: the DOT / Mermaid picture and the deploy critical path.

There is one graph model and one set of durations: the complete graph of :mod:`tools.rehearse.model`
(registrations plus the children remote components really create, dependencies on components expanded
to their resources, provider edges, component dependencies inherited by children) and the typical create
times of ``policies/readiness.yaml`` (unknown times count 0 and are shown as unknown). The critical path is
the rehearsal's: the same schedule and tie-breaking as ``python -m tools.rehearse``.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from policies.readiness import load_readiness
from tools.plan.mocks import Registration
from tools.rehearse.create import critical_path as _critical_path
from tools.rehearse.create import schedule
from tools.rehearse.model import CompleteGraph


def create_minutes(reg: Registration) -> float:
    """Typical create duration of one registration from the readiness data (0 for components and unknown)."""
    if not reg.custom:
        return 0.0
    return load_readiness().entry_for(reg.type, reg.inputs).create_minutes or 0.0


@dataclass
class Graph:
    """The complete graph: ``nodes`` every registration (expanded), ``edges`` custom URN -> URNs it waits on."""

    model: CompleteGraph

    @property
    def nodes(self) -> dict[str, Registration]:
        return self.model.nodes

    @property
    def edges(self) -> dict[str, set[str]]:
        return self.model.edges

    @classmethod
    def build(cls, registrations: list[Registration]) -> Graph:
        return cls(CompleteGraph.build(registrations, load_readiness()))

    def ancestors(self, urn: str) -> set[str]:
        """Everything ``urn`` transitively waits on."""
        return self.model.ancestors(urn)

    def critical_path(self) -> tuple[float, list[Registration]]:
        """The longest chain of typical create times (minutes) and the resources on it, first to last."""
        readiness = load_readiness()
        entries = {u: readiness.entry_for(self.nodes[u].type, self.nodes[u].inputs) for u in self.model.order}
        start, finish = schedule(self.model, entries)[:2]
        chain = _critical_path(self.model, entries, start, finish)
        if not chain:
            return 0.0, []
        return finish[chain[-1]], [self.nodes[u] for u in chain]

    # --- rendering -------------------------------------------------------------------------------

    def _ids(self) -> dict[str, str]:
        return {urn: f"n{i}" for i, urn in enumerate(self.nodes)}

    def to_dot(self) -> str:
        ids = self._ids()
        on_path = {r.urn for r in self.critical_path()[1]}
        lines = [
            "digraph hyperpod_inference {",
            "  rankdir=LR;",
            '  node [shape=box, fontsize=10, fontname="Helvetica"];',
        ]
        for urn, reg in self.nodes.items():
            style = "" if reg.custom else ", style=dashed"
            if urn in on_path:
                style += ", color=red, penwidth=2"
            minutes = create_minutes(reg)
            extra = f"\\n~{minutes:g} min" if minutes else ""
            lines.append(f'  {ids[urn]} [label="{reg.name}\\n{reg.type}{extra}"{style}];')
        for urn, reg in self.nodes.items():
            if reg.parent in self.nodes:
                lines.append(f"  {ids[reg.parent]} -> {ids[urn]} [style=dotted, arrowhead=none];")
        for urn, deps in self.edges.items():
            for d in sorted(deps):
                hot = ", color=red" if urn in on_path and d in on_path else ""
                lines.append(f"  {ids[d]} -> {ids[urn]}{' [' + hot[2:] + ']' if hot else ''};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_mermaid(self) -> str:
        ids = self._ids()
        lines = ["flowchart LR"]
        for urn, reg in self.nodes.items():
            lines.append(f'  {ids[urn]}["{reg.name}<br/><small>{reg.type}</small>"]')
        for urn, reg in self.nodes.items():
            if reg.parent in self.nodes:
                lines.append(f"  {ids[reg.parent]} -.- {ids[urn]}")
        for urn, deps in self.edges.items():
            lines.extend(f"  {ids[d]} --> {ids[urn]}" for d in sorted(deps))
        return "\n".join(lines) + "\n"


def write_graph(registrations: list[Registration], path: Path) -> list[Path]:
    """Write the graph as ``.dot``, ``.mmd`` (Mermaid) or ``.svg`` (needs Graphviz ``dot``) by suffix."""
    graph = Graph.build(registrations)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix in {".mmd", ".md"}:
        path.write_text(graph.to_mermaid(), encoding="utf-8")
        return [path]
    dot = graph.to_dot()
    if path.suffix == ".svg":
        exe = shutil.which("dot")
        if exe is None:
            fallback = path.with_suffix(".dot")
            fallback.write_text(dot, encoding="utf-8")
            return [fallback]
        subprocess.run([exe, "-Tsvg", "-o", str(path)], input=dot, text=True, check=True)
        return [path]
    path.write_text(dot, encoding="utf-8")
    return [path]


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command(
        "tools.rehearse.graph", "python -m tools.cli.preview --stack <name> --graph FILE.dot (or --critical-path)"
    )
