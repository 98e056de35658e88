"""The resource graph of a mock run: DOT / Mermaid rendering and the deploy critical path.

Edges come from what the engine would wait on: a resource's ``dependencies`` (explicit ``depends_on`` and
the resources whose outputs feed its inputs). A dependency on a component means "on every resource under
it", as in the real engine. Component resources themselves take no time.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tools.mocks import Registration

DURATIONS_FILE = Path(__file__).with_name("create_durations.yaml")


@cache
def _durations() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(DURATIONS_FILE.read_text(encoding="utf-8"))
    return data


def create_minutes(reg: Registration) -> float:
    """Typical create duration of one registration (0 for components)."""
    if not reg.custom:
        return 0.0
    table = _durations()
    for key, entry in (table.get("overrides") or {}).items():
        if reg.inputs.get("addonName") == key or reg.name == key:
            return float(entry["minutes"])
    entry = (table.get("durations") or {}).get(reg.type)
    return float(entry["minutes"]) if entry else float(table.get("default", 0.2))


@dataclass(frozen=True)
class Graph:
    nodes: dict[str, Registration]  # urn -> registration
    edges: dict[str, set[str]]  # urn -> urns it waits on (custom resources only)

    @classmethod
    def build(cls, registrations: list[Registration]) -> Graph:
        nodes = {r.urn: r for r in registrations}
        children: dict[str, list[str]] = {}
        for r in registrations:
            if r.parent:
                children.setdefault(r.parent, []).append(r.urn)

        def expand(urn: str, seen: frozenset[str] = frozenset()) -> set[str]:
            reg = nodes.get(urn)
            if reg is None or urn in seen:
                return set()
            if reg.custom:
                return {urn}
            out: set[str] = set()
            for child in children.get(urn, []):
                out |= expand(child, seen | {urn})
            return out

        edges: dict[str, set[str]] = {}
        for r in registrations:
            if not r.custom:
                continue
            deps: set[str] = set()
            for d in r.dependencies:
                deps |= expand(d)
            deps.discard(r.urn)
            edges[r.urn] = deps
        return cls(nodes, edges)

    def ancestors(self, urn: str) -> set[str]:
        """Everything ``urn`` transitively waits on."""
        out: set[str] = set()
        stack = list(self.edges.get(urn, ()))
        while stack:
            u = stack.pop()
            if u not in out:
                out.add(u)
                stack.extend(self.edges.get(u, ()))
        return out

    def critical_path(self) -> tuple[float, list[Registration]]:
        """The longest chain of create durations (minutes) and the resources on it, first to last."""
        finish: dict[str, float] = {}
        via: dict[str, str | None] = {}

        def visit(urn: str, trail: frozenset[str] = frozenset()) -> float:
            if urn in finish:
                return finish[urn]
            if urn in trail:  # a cycle cannot happen in a real graph; guard anyway
                return 0.0
            best, best_dep = 0.0, None
            for dep in self.edges.get(urn, ()):
                t = visit(dep, trail | {urn})
                if t > best:
                    best, best_dep = t, dep
            finish[urn] = best + create_minutes(self.nodes[urn])
            via[urn] = best_dep
            return finish[urn]

        for urn in self.edges:
            visit(urn)
        if not finish:
            return 0.0, []
        end = max(finish, key=lambda u: finish[u])
        chain: list[Registration] = []
        cursor: str | None = end
        while cursor is not None:
            chain.append(self.nodes[cursor])
            cursor = via.get(cursor)
        return finish[end], list(reversed(chain))

    # --- rendering -------------------------------------------------------------------------------

    def _ids(self) -> dict[str, str]:
        return {urn: f"n{i}" for i, urn in enumerate(self.nodes)}

    def to_dot(self) -> str:
        ids = self._ids()
        lines = [
            "digraph hyperpod_inference {",
            "  rankdir=LR;",
            '  node [shape=box, fontsize=10, fontname="Helvetica"];',
        ]
        for urn, reg in self.nodes.items():
            style = "" if reg.custom else ", style=dashed"
            lines.append(f'  {ids[urn]} [label="{reg.name}\\n{reg.type}"{style}];')
        for urn, reg in self.nodes.items():
            if reg.parent in self.nodes:
                lines.append(f"  {ids[reg.parent]} -> {ids[urn]} [style=dotted, arrowhead=none];")
        for urn, deps in self.edges.items():
            lines.extend(f"  {ids[d]} -> {ids[urn]};" for d in sorted(deps))
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
