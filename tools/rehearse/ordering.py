"""Ordering rules: the edges a program must declare between resources it creates in the same run.

Pulumi creates in parallel whatever the graph does not order ("DR Pulumi semantics" in
``policies/readiness.yaml``). A wait in ``resources:`` says what a create needs from the world; an
``ordering:`` rule says which *other resource of the same run* must be created first: a namespaced object
after its Namespace, a custom resource after its CRD's installer, whatever uses an IAM role after that role's
inline policies and attachments, the HyperPod cluster after its lifecycle scripts. :func:`ordering_edges`
lists, for every resource of the complete graph and every rule, each resource the rule says it must wait on,
and whether it does (directly, or transitively through components: :class:`~tools.rehearse.model.CompleteGraph`
already holds the engine's edges). :func:`report_missing` turns the unmet ones into findings: a ``race`` (both
may be created in parallel) or a ``deadlock`` (the one it must wait on waits on it).

The join vocabulary (``same_value``, ``crd_installer``, ``role_grants``, ``s3_prefix``) is code; which types,
inputs and exceptions each rule uses is data, each rule with its source.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from policies.readiness import OrderingRule, Readiness, input_value
from tools.plan.mocks import Registration
from tools.rehearse.model import CompleteGraph, crd_of, provider_urn
from tools.rehearse.report import FindingKind, Findings

EdgeState = Literal["met", "race", "deadlock"]


@dataclass(frozen=True)
class OrderingEdge:
    """``user`` must be created after ``provider`` (URNs) by ``rule``; ``state`` says whether it is."""

    rule: OrderingRule
    user: str
    provider: str
    state: EdgeState

    @property
    def met(self) -> bool:
        return self.state == "met"


def values_at(data: Any, path: str) -> list[Any]:
    """Every value at dotted ``path``; ``*`` walks each element of a list (JSON strings are parsed)."""
    head, _, rest = path.partition(".")
    if head == "*":
        items = data if isinstance(data, list) else []
        return [v for item in items for v in (values_at(item, rest) if rest else [item])]
    got = input_value(data, head)
    if got is None:
        return []
    return values_at(got, rest) if rest else [got]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _s3_uri(uri: str) -> tuple[str, str] | None:
    """``s3://bucket/prefix/`` -> (bucket, prefix)."""
    if not uri.startswith("s3://"):
        return None
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return (bucket, prefix) if bucket else None


class _Graph:
    """The complete graph with the lookups the joins need (built once per check)."""

    def __init__(self, graph: CompleteGraph, readiness: Readiness, crd_providers: Mapping[str, list[str]]) -> None:
        self.graph = graph
        self.readiness = readiness
        self.crd_providers = crd_providers
        self.regs = [graph.nodes[u] for u in graph.order]
        self._text: dict[str, str] = {}

    def text(self, reg: Registration) -> str:
        """Every string in a resource's inputs, joined (to find an ARN anywhere, JSON values included)."""
        got = self._text.get(reg.urn)
        if got is None:
            got = self._text[reg.urn] = "\n".join(_strings(reg.inputs))
        return got

    def expanded(self, reg: Registration) -> bool:
        """Whether ``reg`` is a child :func:`~tools.rehearse.model.expand` added under a remote component."""
        parent = self.graph.nodes.get(reg.parent or "")
        return parent is not None and not parent.custom and self.readiness.remote(parent.type) is not None

    def matching(self, type_glob: str) -> list[Registration]:
        return [r for r in self.regs if fnmatch.fnmatchcase(r.type, type_glob)]


def _is_user(rule: OrderingRule, reg: Registration) -> bool:
    if not rule.user.matches(reg.type, reg.inputs):
        return False
    return not any(fnmatch.fnmatchcase(reg.type, t) for t in rule.user_except)


def _same_value(g: _Graph, rule: OrderingRule, users: list[Registration]) -> Iterator[tuple[Registration, str]]:
    assert rule.provider is not None
    providers = [p for p in g.regs if rule.provider.matches(p.type, p.inputs)]
    by_value: dict[str, list[Registration]] = {}
    for p in providers:
        for path in rule.provider_paths:
            for v in values_at(p.inputs, path) or values_at(p.outputs, path):
                by_value.setdefault(str(v), []).append(p)
    for user in users:
        wanted = {str(v) for path in rule.user_paths for v in values_at(user.inputs, path)}
        for value in sorted(wanted):
            for p in by_value.get(value, []):
                if p.urn != user.urn and (not rule.same_provider or provider_urn(p) == provider_urn(user)):
                    yield user, p.urn


def _crd_installer(g: _Graph, users: list[Registration]) -> Iterator[tuple[Registration, list[str]]]:
    for user in users:
        crd = crd_of(user.type)
        installers = [u for u in g.crd_providers.get(crd or "", []) if u != user.urn]
        if installers:
            yield user, installers


def _role_grants(g: _Graph, rule: OrderingRule, users: list[Registration]) -> Iterator[tuple[Registration, str]]:
    assert rule.roles is not None
    roles = [r for r in g.regs if rule.roles.matches(r.type, r.inputs)]
    grant_specs = [(spec, g.matching(spec.type)) for spec in rule.grants]
    for role in roles:
        names = {str(v) for k in rule.role_name_outputs for v in (role.outputs.get(k),) if v}
        if isinstance(role.inputs.get("name"), str):
            names.add(role.inputs["name"])
        grants: list[str] = []
        for spec, candidates in grant_specs:
            for grant in candidates:
                named = {
                    str(v)
                    for v in values_at(grant.inputs, spec.role_input)
                    for v in (v if isinstance(v, list) else [v])
                }
                by_name = bool(named & names)
                by_reference = role.urn in grant.property_dependencies.get(spec.role_input, [])
                # Expanded remote children carry no inputs: a dependency on the role is the reference.
                by_dependency = spec.role_input not in grant.inputs and role.urn in grant.dependencies
                if by_name or by_reference or by_dependency:
                    grants.append(grant.urn)
        if not grants:
            continue  # no policy of its own to wait for (none, or inline in the role itself)
        arn = role.outputs.get(rule.role_arn_output)
        for user in users:
            if user.urn == role.urn or user.urn in grants:
                continue
            uses = (
                any(role.urn in urns for urns in user.property_dependencies.values())
                or (isinstance(arn, str) and bool(arn) and arn in g.text(user))
                # an expanded child of a remote component has no inputs: its data's depends_on names the role
                or (g.expanded(user) and role.urn in user.dependencies)
            )
            if uses:
                for grant_urn in grants:
                    yield user, grant_urn


def _s3_prefix(g: _Graph, rule: OrderingRule, users: list[Registration]) -> Iterator[tuple[Registration, str]]:
    assert rule.provider is not None
    bucket_path, key_path = rule.provider_paths
    objects = []
    for obj in g.regs:
        if not rule.provider.matches(obj.type, obj.inputs):
            continue
        bucket, key = input_value(obj.inputs, bucket_path), input_value(obj.inputs, key_path)
        if isinstance(bucket, str) and isinstance(key, str):
            objects.append((obj.urn, bucket, key))
    for user in users:
        locations = {
            loc for path in rule.user_paths for v in values_at(user.inputs, path) for loc in [_s3_uri(str(v))] if loc
        }
        for urn, bucket, key in objects:
            if any(bucket == b and key.startswith(prefix) for b, prefix in locations):
                yield user, urn


def _state(graph: CompleteGraph, user: str, provider: str) -> EdgeState:
    if graph.is_ancestor(provider, user):
        return "met"
    return "deadlock" if graph.is_ancestor(user, provider) else "race"


def ordering_edges(
    graph: CompleteGraph, readiness: Readiness, crd_providers: Mapping[str, list[str]]
) -> list[OrderingEdge]:
    """Every edge the ordering rules require in ``graph``, each with whether the graph has it.

    ``crd_providers`` maps ``group/Kind`` to the URNs installing that CRD (the rehearsal's context). For a
    ``require: any`` rule (one installer of the CRD is enough) only the installers of an unmet requirement
    are listed as unmet; a met one lists the installer that meets it.
    """
    g = _Graph(graph, readiness, crd_providers)
    out: list[OrderingEdge] = []
    for rule in readiness.ordering:
        users = [r for r in g.regs if _is_user(rule, r)]
        if rule.join == "crd_installer":
            for user, installers in _crd_installer(g, users):
                states = {i: _state(graph, user.urn, i) for i in installers}
                meeting = [i for i, s in states.items() if s == "met"]
                if meeting:
                    out.append(OrderingEdge(rule, user.urn, meeting[0], "met"))
                else:
                    out.extend(OrderingEdge(rule, user.urn, i, s) for i, s in states.items())
            continue
        pairs = {
            "same_value": _same_value,
            "role_grants": _role_grants,
            "s3_prefix": _s3_prefix,
        }[rule.join](g, rule, users)
        seen: set[tuple[str, str]] = set()
        for user, provider in pairs:
            if (user.urn, provider) in seen:
                continue
            seen.add((user.urn, provider))
            out.append(OrderingEdge(rule, user.urn, provider, _state(graph, user.urn, provider)))
    return out


def report_missing(graph: CompleteGraph, edges: list[OrderingEdge], out: Findings) -> None:
    """Each unmet edge as a finding on the user: ``race`` or ``deadlock``, naming the other resource, the
    rule and its source. An edge the readiness waits already reported (same two resources) is not repeated."""
    for edge in edges:
        if edge.met or (edge.user, edge.provider) in out.pairs:
            continue
        user, other = graph.nodes[edge.user], graph.nodes[edge.provider]
        waits = f"{other.type}::{other.name} ({edge.rule.detail})"
        if edge.state == "race":
            why = (
                f"ordering rule {edge.rule.id}: {other.name} is not ordered before it, both can be created in parallel"
            )
        else:
            why = f"ordering rule {edge.rule.id}: {other.name} waits on it, so it cannot come first"
        kind: FindingKind = "race" if edge.state == "race" else "deadlock"
        out.add(edge.user, user, kind, waits, why, source=edge.rule.source, rule=edge.rule.id, other=other.name)


def missing_edges(edges: list[OrderingEdge]) -> list[OrderingEdge]:
    return [e for e in edges if not e.met]


def describe(graph: CompleteGraph, edge: OrderingEdge) -> str:
    """``rule: user (type) -> provider (type): state`` (for test messages and the docs)."""
    u, p = graph.nodes[edge.user], graph.nodes[edge.provider]
    return f"{edge.rule.id}: {u.name} ({u.type}) after {p.name} ({p.type}): {edge.state}"


__all__ = ["OrderingEdge", "describe", "missing_edges", "ordering_edges", "report_missing", "values_at"]


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.rehearse.ordering", "python -m tools.rehearse --stack <name>")
