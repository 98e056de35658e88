"""The complete resource graph of a mock run: registrations plus the children remote components create.

Under mocks a remote component (pulumi-eks ``eks:index:Cluster``) registers no children, so everything
that depends on it would hang off a childless node. :func:`expand` adds the children it really creates,
as :class:`~tools.plan.mocks.Registration` objects (so every view — rehearsal, critical path, graph picture —
handles one kind of node), following ``remote_components`` in ``policies/readiness.yaml``.

:class:`CompleteGraph` holds what the engine waits on: a resource waits on its ``dependencies`` (explicit
``depends_on`` and the resources whose outputs feed its inputs) and on its provider. A dependency on a
component — local or remote — means every resource under it: "the construction of a remote component
always waits on the construction of its children" (pulumi 3.272.0 ``runtime/rpc.py:260-291``).
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field

from policies.readiness import Readiness, RemoteComponent, load_readiness
from policies.resource_types.tokens import EKS_CLUSTER
from tools.plan.mocks import Registration


def _child_urn(component: Registration, typ: str, name: str) -> str:
    # urn:pulumi:<stack>::<project>::<parent type chain>$<type>::<name>
    head, _, _ = component.urn.rpartition("::")
    return f"{head}${typ}::{name}"


def _expand_one(reg: Registration, spec: RemoteComponent) -> list[Registration]:
    created = [c for c in spec.children if c.created(reg.inputs)]
    by_suffix = {c.suffix: c for c in created}
    urns = {c.suffix: _child_urn(reg, c.type, reg.name + c.suffix) for c in created}
    provider_urn = next((urns[c.suffix] for c in created if c.type == "pulumi:providers:kubernetes"), None)
    out: list[Registration] = []
    for child in created:
        inputs = child.inputs_for(reg.inputs)
        sibling = [urns[s] for s in child.depends_on if s in by_suffix]
        # Children with no sibling to wait on are built from the component's inputs, so they wait on
        # what the component waits on.
        deps = sibling if sibling else list(reg.dependencies)
        # The control plane carries the component's outputs (cluster security group id, endpoint, ...).
        outputs = copy.deepcopy(reg.outputs) if child.type == EKS_CLUSTER else {}
        out.append(
            Registration(
                type=child.type,
                name=reg.name + child.suffix,
                urn=urns[child.suffix],
                custom=True,
                parent=reg.urn,
                inputs=inputs,
                outputs=outputs,
                dependencies=deps,
                protect=reg.protect,
                provider=(provider_urn + "::expanded") if child.kubernetes and provider_urn else None,
            )
        )
    return out


def expand(registrations: Iterable[Registration], readiness: Readiness | None = None) -> list[Registration]:
    """The registrations with every remote component's children added right after the component."""
    readiness = readiness or load_readiness()
    out: list[Registration] = []
    for reg in registrations:
        out.append(reg)
        spec = readiness.remote(reg.type) if not reg.custom else None
        if spec is not None:
            out.extend(_expand_one(reg, spec))
    return out


def crd_of(typ: str) -> str | None:
    """``kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig`` -> ``group/Kind``."""
    if not typ.startswith("kubernetes:"):
        return None
    _, api, kind = typ.split(":", 2)
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    # Groups without a dot (core, apps, batch, policy) are built into the API server.
    return f"{group}/{kind}" if "." in group else None


def provider_urn(reg: Registration) -> str | None:
    """The URN of the provider a resource uses (the reference is ``<urn>::<id>``)."""
    if not reg.provider:
        return None
    return reg.provider.rsplit("::", 1)[0]


@dataclass
class CompleteGraph:
    """Nodes by URN, and for each custom resource the custom resources it waits on."""

    nodes: dict[str, Registration]
    edges: dict[str, set[str]]
    order: list[str] = field(default_factory=list)  # custom URNs, dependencies first
    _index: dict[str, int] = field(default_factory=dict, repr=False)
    _anc: dict[str, int] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, registrations: Iterable[Registration], readiness: Readiness | None = None) -> CompleteGraph:
        regs = expand(registrations, readiness)
        nodes = {r.urn: r for r in regs}
        children: dict[str, list[str]] = {}
        for r in regs:
            if r.parent:
                children.setdefault(r.parent, []).append(r.urn)
        under: dict[str, set[str]] = {}

        def customs_under(urn: str) -> set[str]:
            """Every custom resource under a component (memoised: linear in the graph)."""
            got = under.get(urn)
            if got is not None:
                return got
            under[urn] = set()  # cycle guard
            acc: set[str] = set()
            for child in children.get(urn, ()):
                reg = nodes[child]
                if reg.custom:
                    acc.add(child)
                acc |= customs_under(child)
            under[urn] = acc
            return acc

        def inherited(r: Registration) -> list[str]:
            """The dependencies of the component ancestors: a child registers only once its parent's
            URN resolves, and a component registers only once the URNs of its ``depends_on`` resolve —
            which for a custom resource means created (pulumi 3.272.0 ``runtime/resource.py``
            ``_prepare_resource``: ``await opts.parent.urn.future()`` after ``_resolve_depends_on_urns``)."""
            out: list[str] = []
            cursor = nodes.get(r.parent or "")
            while cursor is not None and not cursor.custom:
                out.extend(cursor.dependencies)
                cursor = nodes.get(cursor.parent or "")
            return out

        edges: dict[str, set[str]] = {}
        for r in regs:
            if not r.custom:
                continue
            deps: set[str] = set()
            for d in [*r.dependencies, *inherited(r)]:
                target = nodes.get(d)
                if target is None:
                    continue
                if target.custom:
                    deps.add(d)
                else:
                    deps |= customs_under(d)
            prov = provider_urn(r)
            if prov is not None and prov in nodes:
                deps.add(prov)
            deps.discard(r.urn)
            edges[r.urn] = deps
        graph = cls(nodes, edges)
        graph.order = graph._topological()
        graph._index = {u: i for i, u in enumerate(graph.order)}
        return graph

    def _topological(self) -> list[str]:
        """Kahn's algorithm; ties go by (type, name), not registration order, which varies run to run with
        the SDK's asynchronous registrations, so waves and the critical path are the same on every run.
        Cycles (impossible in a real graph) go last."""
        pending = {u: len(d) for u, d in self.edges.items()}
        dependents: dict[str, list[str]] = {}
        for u, deps in self.edges.items():
            for d in deps:
                dependents.setdefault(d, []).append(u)
        stable = sorted(self.edges, key=lambda u: (self.nodes[u].type, self.nodes[u].name, u))
        position = {u: i for i, u in enumerate(stable)}
        ready = sorted((u for u, n in pending.items() if n == 0), key=position.__getitem__)
        out: list[str] = []
        heap = [(position[u], u) for u in ready]
        heapq.heapify(heap)
        while heap:
            _, u = heapq.heappop(heap)
            out.append(u)
            for v in dependents.get(u, ()):
                pending[v] -= 1
                if pending[v] == 0:
                    heapq.heappush(heap, (position[v], v))
        if len(out) < len(self.edges):
            seen = set(out)
            out.extend(u for u in self.edges if u not in seen)
        return out

    # --- ancestry (bitsets over the topological order: linear memory in practice) ---------------

    def _ancestor_bits(self, urn: str) -> int:
        if not self._anc:
            # One pass in topological order: a node's ancestors are its dependencies and theirs.
            for u in self.order:
                bits = 0
                for d in self.edges.get(u, ()):
                    bits |= (1 << self._index[d]) | self._anc.get(d, 0)
                self._anc[u] = bits
        return self._anc.get(urn, 0)

    def is_ancestor(self, candidate: str, of: str) -> bool:
        """Whether ``of`` transitively waits on ``candidate`` (so ``candidate`` is created first)."""
        idx = self._index.get(candidate)
        return idx is not None and bool(self._ancestor_bits(of) >> idx & 1)

    def ancestors(self, urn: str) -> set[str]:
        bits = self._ancestor_bits(urn)
        return {u for u, i in self._index.items() if bits >> i & 1}

    def descendants(self, urns: Iterable[str]) -> set[str]:
        """Everything that transitively waits on any of ``urns``."""
        dependents: dict[str, list[str]] = {}
        for u, deps in self.edges.items():
            for d in deps:
                dependents.setdefault(d, []).append(u)
        out: set[str] = set()
        stack = list(urns)
        while stack:
            u = stack.pop()
            for v in dependents.get(u, ()):
                if v not in out:
                    out.add(v)
                    stack.append(v)
        return out

    def customs(self) -> list[Registration]:
        return [self.nodes[u] for u in self.order]


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.rehearse.model", "python -m tools.rehearse --stack <name>")
