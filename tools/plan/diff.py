"""``tools.cli.preview --diff BASE.json``: compare this run's plan with a saved one, as ``pulumi preview --json --diff``.

Every step of the head plan becomes ``same``, ``create``, ``update``, ``replace`` or ``may-replace`` (matched to
the base by URN), and every base step without a head step a ``delete``; as ``pulumi preview --json`` without
``--show-sames``, only the root Stack's ``same`` step is listed (``changeSummary`` counts them all). Changed steps
carry ``diffReasons`` (top-level input keys), ``replaceReasons`` (those that force or may force a replacement),
``detailedDiff`` (``{property path: {kind, inputDiff}}``, kinds as Pulumi's ``DiffKind``: ``add``, ``update``,
``delete`` and their ``-replace`` forms); the extension block's ``stepDetails`` has, per URN, ``changes`` (each
path with its old and new value, secrets as ``"[secret]"``) and, when another resource caused it, ``because``
(``replaced because subnet network-private-use1-az2 is replaced``). Field names: see :mod:`tools.plan.writer`. The base
may also be a deployed stack's ``pulumi stack export`` (``--diff-state``, :mod:`tools.plan.state`).

What a change does, offline (no provider plugin runs its ``Diff``), is decided by the type's rules in
``policies/replacement_rules.json`` (:mod:`tools.generate.replacement_rules`: cfn-lint create-only properties,
terraform-provider-aws ForceNew, Kubernetes identity and webhook immutables, the dynamic providers' own diff).
**No change is called an update unless a source says so**: a type without rules, or a property its source does
not cover, is ``may-replace``.

Replacement propagates: an input that holds a value another resource computes (``04da6b54-…``, unknown until
deploy, see :func:`tools.plan.writer.mark_unknowns`) takes a new value when that resource is created, replaced or may
be replaced; the input's own rule then decides (a ForceNew ``subnetId`` replaces, an updatable one updates).
A resource whose provider is (or may be) replaced is (or may be) replaced with it.

The plan-level policy ``no-replacement-of-stateful-resources``: a step that replaces or deletes the EKS cluster,
the HyperPod cluster, the ElastiCache replication group or an S3 bucket — or, in prod, *may* replace one — is a
mandatory violation in prod and advisory elsewhere, unless the stack config lists the resource's logical name in
``hyperpod-inference:allowReplacement`` (then it is reported as advisory, to stay visible in the review). The
message names the stack-config keys the plans differ in (``network.cidr``). Secrets compare as ``"[secret]"``,
so a changed secret value is not seen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from components.config import PROJECT
from policies.baselines import STATEFUL as _PACK_STATEFUL
from policies.graph import EKS_CLUSTER, EKS_COMPONENT, HYPERPOD_CLUSTER
from policies.replacement_rules import rules_for
from tools.plan.mocks import ROOT_STACK_TYPE, qualified_type
from tools.plan.writer import (
    EXTENSION,
    PLAN_FORMAT,
    SECRET,
    UNKNOWN_ID,
    extension,
    is_default_provider,
    policy_diagnostic,
    preview_step,
    sort_results,
    summary,
)

POLICY = "no-replacement-of-stateful-resources"
POLICY_DESCRIPTION = (
    "A plan that replaces or deletes the EKS cluster, the HyperPod cluster, the ElastiCache replication group "
    "or an S3 bucket destroys running capacity or data; in prod a step that may replace one counts too. "
    "Mandatory in prod unless the stack's allowReplacement lists the resource, advisory elsewhere."
)
# The stateful types of the pack's stateful-resources-protected policy, plus the EKS cluster (both forms).
STATEFUL: dict[str, str] = {**_PACK_STATEFUL, EKS_CLUSTER: "EKS cluster", EKS_COMPONENT: "EKS cluster"}

_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_RANK = {"same": 0, "ignore": 0, "update": 1, "may-replace": 2, "replace": 3}

Path = tuple[str | int, ...]


def property_path(path: Path) -> str:
    """Pulumi's property-path syntax: ``a.b[0].c``, ``tags["hyperpod-inference:stack"]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out


def input_diff(old: Any, new: Any, path: Path = ()) -> dict[Path, str]:
    """``{path: add|delete|update}`` between two input values (lists element by element)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: dict[Path, str] = {}
        for k in sorted(set(old) | set(new)):
            if k not in old:
                out[(*path, k)] = "add"
            elif k not in new:
                out[(*path, k)] = "delete"
            else:
                out.update(input_diff(old[k], new[k], (*path, k)))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = {}
        for i in range(max(len(old), len(new))):
            if i >= len(old):
                out[(*path, i)] = "add"
            elif i >= len(new):
                out[(*path, i)] = "delete"
            else:
                out.update(input_diff(old[i], new[i], (*path, i)))
        return out
    return {} if old == new else {path: "update"}


def value_at(value: Any, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            value = value[part] if isinstance(value, list) and part < len(value) else None
        else:
            value = value.get(part) if isinstance(value, dict) else None
    return value


def contains_unknown(value: Any) -> bool:
    if isinstance(value, str):
        return value == UNKNOWN_ID
    if isinstance(value, dict):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_unknown(v) for v in value)
    return False


def contains_secret(value: Any) -> bool:
    """A blinded value built from another resource's outputs may hide a computed one (a kubeconfig)."""
    if isinstance(value, str):
        return value == SECRET
    if isinstance(value, dict):
        return any(contains_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_secret(v) for v in value)
    return False


def logical_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _type_of(urn: str) -> str:
    """``URN.Type``: the last ``$`` part of the qualified type."""
    return qualified_type(urn).rsplit("$", 1)[-1]


_ACRONYMS = {"Vpc": "VPC", "Eip": "EIP", "Eks": "EKS", "Acm": "ACM", "Kms": "KMS", "Sns": "SNS", "Iam": "IAM"}


def kind_label(typ: str) -> str:
    """``aws:ec2/subnet:Subnet`` -> ``subnet``; ``aws:ec2/vpc:Vpc`` -> ``VPC``; ``eks:index:Cluster`` -> ``cluster``."""
    name = typ.rsplit(":", 1)[-1]
    if typ in STATEFUL:
        return STATEFUL[typ]
    if typ.startswith("pulumi:providers:"):
        return f"{typ.rsplit(':', 1)[-1]} provider"
    words = re.findall(r"[A-Z][a-z0-9]*|[a-z0-9]+", name)
    return " ".join(_ACRONYMS.get(w, w.lower() if w not in _ACRONYMS.values() else w) for w in words) or name


_VERB = {"replace": "replaced", "may-replace": "may be replaced", "create": "created", "update": "updated"}
_STATE = {"replace": "is replaced", "may-replace": "may be replaced", "create": "is created"}


class _Step:
    """One head step under evaluation: its direct changes and what other steps' ops do to it."""

    def __init__(self, head: dict[str, Any], base: dict[str, Any] | None) -> None:
        self.head = head
        self.base = base
        self.urn: str = head["urn"]
        state = head.get("newState") or {}
        self.type: str = state.get("type", "")
        self.inputs: dict[str, Any] = state.get("inputs") or {}
        self.old_inputs: dict[str, Any] = ((base or {}).get("newState") or {}).get("inputs") or {}
        self.rules = rules_for(self.type, self.inputs)
        self.op = "create" if base is None else "same"
        # path -> (diff kind, effect, why)
        self.changes: dict[Path, tuple[str, str, str]] = {}
        self.causes: dict[str, tuple[str, str]] = {}  # dependency urn -> (its op, the input key it feeds)
        self.update_causes: dict[str, tuple[str, str]] = {}  # the same, where the new value is only an update
        self.propagated: set[str] = set()  # input keys that take a new value because a dependency changes

    def classify(self, path: Path) -> tuple[str, str]:
        if self.rules is None:
            return "may-replace", f"no replacement rules for {self.type} (policies/replacement_rules.json)"
        return self.rules.classify(path)

    def direct(self, known_base: bool = False) -> int:
        """The step's own input changes; the number of secrets it could not compare (``known_base`` only).

        ``known_base``: the base is a deployed stack's state (:mod:`tools.plan.state`), whose values are known. A
        new value that is unknown offline is then not compared (its dependency decides it: :meth:`propagate`),
        nor is a recorded secret against a new secret (offline the new one is a placeholder)."""
        if self.base is None:
            return 0
        secrets = 0
        for path, kind in input_diff(self.old_inputs, self.inputs).items():
            if known_base and kind == "update":
                new = value_at(self.inputs, path)
                if new == UNKNOWN_ID:
                    continue
                if value_at(self.old_inputs, path) == SECRET and contains_secret(new):
                    secrets += 1
                    continue
            effect, why = self.classify(path)
            if effect != "ignore":
                self.changes[path] = (kind, effect, why)
        self._settle()
        return secrets

    def propagate(self, ops: dict[str, str], provider_urn: str | None) -> bool:
        """Apply the ops of this step's dependencies; True when its own op changed."""
        if self.base is None:
            return False
        before = self.op
        deps = (self.head.get("newState") or {}).get("propertyDependencies") or {}
        for key, urns in sorted(deps.items()):
            value = self.inputs.get(key)
            if not (contains_unknown(value) or contains_secret(value)):
                continue  # a known value: compared as it is (a name the dependency was given, say)
            for dep in urns:
                dep_op = ops.get(dep, "same")
                if dep_op not in ("create", "replace", "may-replace"):
                    continue
                effect, why = self.classify((key,))
                if effect == "ignore":
                    continue
                if effect == "replace" and dep_op == "may-replace":
                    effect = "may-replace"
                if effect == "update" and dep_op == "may-replace":
                    effect = "update"
                prev = self.changes.get((key,))
                if prev is None or _RANK[effect] > _RANK[prev[1]]:
                    self.changes[(key,)] = ("update", effect, why)
                    self.propagated.add(key)
                if _RANK[effect] >= _RANK["may-replace"]:
                    self.causes.setdefault(dep, (dep_op, key))
                else:
                    self.update_causes.setdefault(dep, (dep_op, key))
        if provider_urn is not None and ops.get(provider_urn) in ("replace", "may-replace"):
            effect = ops[provider_urn]
            self.changes.setdefault(("__provider",), ("update", effect, "its provider is replaced with a new one"))
            self.causes.setdefault(provider_urn, (effect, "provider"))
        self._settle()
        return self.op != before

    def _settle(self) -> None:
        if self.base is None:
            return
        rank = max((_RANK[e] for _, e, _ in self.changes.values()), default=0)
        self.op = next(op for op, r in (("replace", 3), ("may-replace", 2), ("update", 1), ("same", 0)) if r == rank)


def _provider_urn(ref: str) -> str | None:
    return ref.rsplit("::", 1)[0] if ref else None


def _because(step: _Step, ops: dict[str, str]) -> list[str]:
    out = []
    verb = _VERB.get(step.op, step.op)
    causes = step.update_causes if step.op == "update" else step.causes
    for dep, (dep_op, key) in sorted(causes.items()):
        what = f"{kind_label(_type_of(dep))} {logical_name(dep)}"
        via = "" if key == "provider" else f" (its {key})"
        out.append(f"{verb} because {what} {_STATE.get(ops.get(dep, dep_op), dep_op)}{via}")
    return out


def _render(step: _Step, ops: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``PreviewStep`` of an evaluated step, and its details for the extension block (``stepDetails``)."""
    head = step.head
    provider = head.get("provider", "")
    if step.op == "create":
        return preview_step("create", step.urn, provider, newState=head.get("newState")), {}
    old_state = (step.base or {}).get("newState")
    if step.op == "same":
        return preview_step("same", step.urn, provider, oldState=old_state, newState=head.get("newState")), {}
    detailed: dict[str, dict[str, Any]] = {}
    changes: list[dict[str, Any]] = []
    replace_keys: set[str] = set()
    sources: set[str] = set()
    for path, (kind, effect, why) in sorted(step.changes.items(), key=lambda kv: property_path(kv[0])):
        if path == ("__provider",):
            continue
        forced = effect in ("replace", "may-replace")
        if forced:
            replace_keys.add(str(path[0]))
            sources.add(why)
        detailed[property_path(path)] = {"kind": f"{kind}-replace" if forced else kind, "inputDiff": True}
        change = {
            "path": property_path(path),
            "kind": kind,
            "effect": effect,
            "old": value_at(step.old_inputs, path),
            "new": value_at(step.inputs, path),
        }
        if len(path) == 1 and path[0] in step.propagated:
            every = {**step.update_causes, **step.causes}
            change["computedBy"] = sorted(logical_name(d) for d, (_, key) in every.items() if key == path[0]) or sorted(
                logical_name(d) for d in every
            )
        changes.append(change)
    rendered = preview_step(
        step.op,
        step.urn,
        provider,
        oldState=old_state,
        newState=head.get("newState"),
        diffReasons=sorted({str(p[0]) for p in step.changes if p != ("__provider",)}),
        replaceReasons=sorted(replace_keys),
        detailedDiff=detailed,
    )
    details: dict[str, Any] = {"changes": changes}
    if sources:
        details["replacementSource"] = sorted(sources)
    because = _because(step, ops)
    if because:
        details["because"] = because
    return rendered, details


def _stateful_message(verb: str, what: str, name: str, step: dict[str, Any], config_changes: list[str]) -> str:
    why = ""
    if step.get("because"):
        why = f" ({'; '.join(step['because'])})"
    elif step.get("replaceReasons") and verb != "delete":
        why = f" (a change to {', '.join(step['replaceReasons'])})"
    cfg = f"; the stack config changed: {', '.join(config_changes)}" if config_changes else ""
    return f"this plan would {verb} the {what} `{name}`{why}{cfg}"


def stateful_results(
    steps: list[dict[str, Any]],
    environment: str | None,
    allow_replacement: Iterable[str],
    config_changes: list[str] | None = None,
    details: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The ``no-replacement-of-stateful-resources`` results of a diffed plan (policyResults shape); ``details``
    are the extension block's ``stepDetails`` (why each step changes)."""
    allowed = set(allow_replacement)
    config_changes = config_changes or []
    details = details or {}
    out = []
    for s in steps:
        if s["op"] not in ("replace", "delete", "may-replace"):
            continue
        state = s.get("newState") or s.get("oldState") or {}
        what = STATEFUL.get(state.get("type", ""))
        if what is None:
            continue
        name = logical_name(s["urn"])
        verb = {"replace": "replace", "delete": "delete", "may-replace": "possibly replace"}[s["op"]]
        message = _stateful_message(verb, what, name, {**s, **details.get(s["urn"], {})}, config_changes)
        if name in allowed:
            level = "advisory"
            message += "; allowed by hyperpod-inference:allowReplacement"
        else:
            # In prod "may replace" counts as a replacement: the guard must not wait for certainty.
            level = "mandatory" if environment == "prod" else "advisory"
            message += (
                f", destroying it and what it holds"
                f"{' (every HyperPod node)' if state.get('type') == HYPERPOD_CLUSTER else ''}; "
                f"if that is intended, list `{name}` in hyperpod-inference:allowReplacement of the stack file"
            )
        out.append(
            {
                "policyName": POLICY,
                "enforcementLevel": level,
                "resourceType": state.get("type", ""),
                "resourceName": name,
                "resourceUrn": s["urn"],
                "message": message,
            }
        )
    return out


class BasePlanError(ValueError):
    """The ``--diff`` base is not a plan this tool can compare with."""


def check_base(base: Any, source: str, *, stack: str | None = None) -> dict[str, Any]:
    """``base`` when it is a plan of this project, ``stack`` and plan format; else :class:`BasePlanError`."""
    if not isinstance(base, dict) or not isinstance(base.get("steps", []), list):
        raise BasePlanError(f"{source}: not a plan (expected the JSON `tools.cli.preview --json` prints, with `steps`)")
    if EXTENSION not in base:
        older = f"plan format {base['format']!r}: " if "format" in base else ""
        raise BasePlanError(
            f"{source}: {older}not a plan of this tool (no `{EXTENSION}` block); regenerate the base with "
            "`python -m tools.cli.preview --stack <s> --json` on the base revision"
        )
    ext = extension(base)
    fmt = ext.get("format")
    if fmt != PLAN_FORMAT:
        raise BasePlanError(
            f"{source}: plan format {fmt!r}, this tool writes format {PLAN_FORMAT} (the engine's URNs and JSON "
            "shape); regenerate the base with `python -m tools.cli.preview --stack <s> --json` on the base revision"
        )
    project = ext.get("project")
    urn_projects = {s.get("urn", "").split("::")[1] for s in base.get("steps", []) if s.get("urn", "").count("::") >= 3}
    if project != PROJECT or urn_projects - {PROJECT}:
        found = project if project != PROJECT else ", ".join(sorted(urn_projects - {PROJECT}))
        raise BasePlanError(f"{source}: a plan of project {found!r}, not {PROJECT!r}")
    if stack is not None and ext.get("stack") != stack:
        raise BasePlanError(
            f"{source}: a plan of stack {ext.get('stack')!r}, not {stack!r}; diff a plan against one of its own stack"
        )
    return base


def config_changes(base: dict[str, Any], head: dict[str, Any]) -> list[dict[str, Any]]:
    """Changed stack-config paths (``network.cidr``) with old and new value, from the plans' ``config``."""

    def parsed(cfg: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for key, text in (cfg or {}).items():
            short = key.split(":", 1)[1] if key.startswith(f"{PROJECT}:") else key
            try:
                out[short] = json.loads(text) if isinstance(text, str) and text[:1] in "[{" else text
            except ValueError:
                out[short] = text
        return out

    old, new = parsed(base.get("config") or {}), parsed(head.get("config") or {})
    return [
        {"path": property_path(p), "kind": k, "old": value_at(old, p), "new": value_at(new, p)}
        for p, k in input_diff(old, new).items()
    ]


def all_steps(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The plan's steps with the default providers' internal ones (extension block) first."""
    return [*(extension(plan).get("defaultProviders") or []), *(plan.get("steps") or [])]


def diff_plans(
    base: dict[str, Any],
    head: dict[str, Any],
    *,
    allow_replacement: Iterable[str] = (),
    known_base: bool = False,
    not_compared: Iterable[str] = (),
) -> dict[str, Any]:
    """The head plan with every step diffed against ``base``, deletes appended, the stateful-resource policy run.

    The steps are what ``pulumi preview --json`` lists: changed ones and the root Stack's, no ``same`` step
    otherwise (``changeSummary`` counts them), no default provider's (internal steps: the extension block's
    ``defaultProviders`` keeps them, diffed).

    ``known_base``: ``base`` is a deployed stack's state (``--diff-state``, :mod:`tools.plan.state`), see
    :meth:`_Step.direct`. ``not_compared``: base URNs that are neither joined nor deleted (a remote component's
    children, which the mocks do not register), listed in the extension block's ``notComparedOffline``."""
    skipped = set(not_compared)
    base_steps = {s["urn"]: s for s in all_steps(base) if s.get("op") != "delete" and s["urn"] not in skipped}
    head_steps = all_steps(head)
    evaluated = [_Step(s, base_steps.get(s["urn"])) for s in head_steps]
    secrets = sum(st.direct(known_base) for st in evaluated)
    ops = {st.urn: st.op for st in evaluated}
    # Propagate to a fixed point: each round can only raise an op (same < update < may-replace < replace).
    for _ in range(len(evaluated) + 1):
        changed = False
        for st in evaluated:
            if st.propagate(ops, _provider_urn(st.head.get("provider", ""))):
                ops[st.urn] = st.op
                changed = True
        if not changed:
            break
    rendered = [(_render(st, ops), st) for st in evaluated]
    details = {st.urn: d for (_, d), st in rendered if d}
    every = [r for (r, _), _ in rendered]
    head_urns = {s["urn"] for s in head_steps}
    for urn, old in base_steps.items():
        if urn not in head_urns:
            every.append(preview_step("delete", urn, old.get("provider", ""), oldState=old.get("newState")))
    internal = [s for s in every if is_default_provider(s["urn"])]
    shown = [s for s in every if not is_default_provider(s["urn"])]
    steps = [s for s in shown if s["op"] != "same" or qualified_type(s["urn"]) == ROOT_STACK_TYPE]
    cfg = config_changes(base, head)
    results = stateful_results(
        steps, extension(head).get("environment"), allow_replacement, [c["path"] for c in cfg], details
    )
    ext = {**extension(head), "defaultProviders": internal}
    plan = {**head, "steps": steps, "changeSummary": summary(steps, same=len(shown) - len(steps))}
    ext["policyResults"] = sort_results([*ext.get("policyResults", []), *results])
    diagnostics = sort_results([*head.get("diagnostics", []), *(policy_diagnostic(r) for r in results)], key="message")
    if diagnostics:
        plan["diagnostics"] = diagnostics
    ext["base"] = {
        "stack": extension(base).get("stack"),
        "steps": len(base_steps),
        "source": "stack export" if known_base else "plan",
    }
    if known_base:
        ext["secretsNotCompared"] = secrets
        ext["notComparedOffline"] = sorted(skipped)
    ext["configChanges"] = cfg
    ext["stepDetails"] = details
    plan[EXTENSION] = ext
    return plan


_SYMBOL = {"create": "+", "update": "~", "replace": "+-", "may-replace": "+?", "delete": "-"}


def _shown(value: Any) -> str:
    if value is None:
        return "(none)"
    if value == UNKNOWN_ID:
        return "(unknown until deploy)"
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 120 else text[:117] + "..."


def diff_lines(plan: dict[str, Any]) -> list[str]:
    """The human form: one line per changed step (``+``, ``~``, ``+-``, ``+?``, ``-``), then each changed property
    with its old and new value, and why another resource forces it."""
    lines = []
    ext = extension(plan)
    details = ext.get("stepDetails") or {}
    for c in ext.get("configChanges") or []:
        lines.append(f"config {c['path']}: {_shown(c['old'])} -> {_shown(c['new'])}")
    for s in plan.get("steps") or []:
        op = s["op"]
        if op == "same":
            continue
        detail = details.get(s["urn"]) or {}
        state = s.get("newState") or s.get("oldState") or {}
        line = f"{_SYMBOL.get(op, op):<2} {op:<11} {state.get('type', '')} {logical_name(s['urn'])}"
        detailed = s.get("detailedDiff") or {}
        if detailed:
            parts = [f"{p} ({d['kind']})" if d["kind"].endswith("-replace") else p for p, d in detailed.items()]
            line += ": " + ", ".join(parts)
        lines.append(line)
        for reason in detail.get("because") or []:
            lines.append(f"     {reason}")
        for c in detail.get("changes") or []:
            if c.get("computedBy") and c["old"] == c["new"]:
                lines.append(f"     {c['path']}: takes a new value computed by {', '.join(c['computedBy'])}")
            else:
                lines.append(f"     {c['path']}: {_shown(c['old'])} -> {_shown(c['new'])}")
    counts = plan.get("changeSummary") or {}
    lines.append(
        ", ".join(
            f"{counts.get(op, 0)} {label}"
            for op, label in (
                ("create", "to create"),
                ("update", "to update"),
                ("replace", "to replace"),
                ("may-replace", "may replace"),
                ("delete", "to delete"),
            )
        )
        + f", {counts.get('same', 0)} unchanged"
    )
    return lines


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.plan.diff", "python -m tools.cli.preview --stack <name> --diff BASE.json")
