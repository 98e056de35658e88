"""A strict reader of ``pulumi preview --json``: the engine's structs, field for field, and nothing else.

One reader for both the engine's own output and this project's plan (:mod:`tools.plan.writer`), so "shaped like
``pulumi preview --json``" is checked by a consumer, not by the writer. It reads what Go's ``encoding/json``
would decode into these structs with ``DisallowUnknownFields`` — and, because every struct field tagged
``omitempty`` is never written with its zero value by Go's encoder, it refuses such a field when it is present and
empty (``"parent": ""``, ``"dependencies": []``, ``"inputs": {}``): the engine cannot have written it.

The structs (pulumi/pulumi@0ac56e876614aedf12771d73ef7e80959b8a6fd4, tag v3.259.0: the newest release in the
mirror, the SDK pin 3.272.0 is not tagged there; unchanged up to master 1b5949891b3cefcb9974752b24a5ecef0acc86c8):

* ``PreviewDigest``, ``PreviewStep``, ``PropertyDiff``, ``PreviewDiagnostic``: ``pkg/display/json.go``;
* ``ResourceV3``: ``sdk/go/common/apitype/core.go``;
* the ops: ``pkg/resource/deploy/step.go`` (``OpSame`` ... ``OpExtendParameterize``);
* the severities: ``sdk/go/common/diag/sink.go``.

Extensions: one top-level key, ``hyperpodInference`` (:data:`tools.plan.writer.EXTENSION`), is skipped (a reader of the
engine's struct ignores it: Go's decoder drops unknown fields unless told otherwise), and one op, ``may-replace``,
which a reader that knows only the engine's ops must read as ``replace`` (:data:`STRICT_OP`): the change may
destroy the resource, and the engine's nearest statement of that is a replacement.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tools.plan.writer import EXTENSION

# pkg/resource/deploy/step.go, `const ( OpSame ... )`.
ENGINE_OPS = frozenset(
    {
        "same",
        "create",
        "update",
        "delete",
        "replace",
        "create-replacement",
        "delete-replaced",
        "read",
        "read-replacement",
        "refresh",
        "discard",
        "discard-replaced",
        "remove-pending-replace",
        "import",
        "import-replacement",
        "diff",
        "extend-parameterize",
    }
)
# Our op -> the engine op a strict reader takes it for.
STRICT_OP = {"may-replace": "replace"}
SEVERITIES = frozenset({"debug", "info", "info#err", "warning", "error"})  # diag/sink.go
DIFF_KINDS = frozenset({"add", "add-replace", "delete", "delete-replace", "update", "update-replace"})

# field -> (JSON type(s), omitempty)
_DIGEST = {
    "config": (dict, True),
    "steps": (list, True),
    "diagnostics": (list, True),
    "duration": (int, True),
    "changeSummary": (dict, True),
    "maybeCorrupt": (bool, True),
}
_STEP = {
    "op": (str, False),
    "urn": (str, False),
    "provider": (str, True),
    "oldState": (dict, True),
    "newState": (dict, True),
    "diffReasons": (list, True),
    "replaceReasons": (list, True),
    "detailedDiff": ((dict, type(None)), False),
}
_DIAGNOSTIC = {"urn": (str, True), "prefix": (str, True), "message": (str, True), "severity": (str, True)}
_PROPERTY_DIFF = {"kind": (str, False), "inputDiff": (bool, False)}
# apitype.ResourceV3: urn, custom, type without omitempty; every other field with it.
_RESOURCE: dict[str, tuple[Any, bool]] = {
    "urn": (str, False),
    "custom": (bool, False),
    "type": (str, False),
    **{
        k: (t, True)
        for k, t in {
            "delete": bool,
            "id": str,
            "inputs": dict,
            "outputs": dict,
            "parent": str,
            "protect": bool,
            "taint": bool,
            "external": bool,
            "dependencies": list,
            "initErrors": list,
            "provider": str,
            "propertyDependencies": dict,
            "pendingReplacement": bool,
            "additionalSecretOutputs": list,
            "aliases": list,
            "customTimeouts": dict,
            "importID": str,
            "retainOnDelete": bool,
            "deletedWith": str,
            "replaceWith": list,
            "created": str,
            "modified": str,
            "sourcePosition": str,
            "stackTrace": list,
            "ignoreChanges": list,
            "hideDiff": list,
            "replaceOnChanges": list,
            "replacementTrigger": object,
            "refreshBeforeUpdate": bool,
            "viewOf": str,
            "resourceHooks": dict,
            "extensionRef": str,
            "snippetID": str,
        }.items()
    },
}


class PreviewJSONError(ValueError):
    """The document is not what ``pulumi preview --json`` writes."""


@dataclass
class Step:
    op: str
    urn: str
    provider: str = ""
    old_state: dict[str, Any] | None = None
    new_state: dict[str, Any] | None = None
    diff_reasons: list[str] = field(default_factory=list)
    replace_reasons: list[str] = field(default_factory=list)
    detailed_diff: dict[str, dict[str, Any]] | None = None

    @property
    def engine_op(self) -> str:
        """The op as a reader of the engine's ops takes it (``may-replace`` -> ``replace``)."""
        return STRICT_OP.get(self.op, self.op)


@dataclass
class PreviewDigest:
    steps: list[Step]
    diagnostics: list[dict[str, Any]]
    change_summary: dict[str, int]
    config: dict[str, str]
    duration_ns: int
    maybe_corrupt: bool
    extension: dict[str, Any] | None


def _check(obj: Any, spec: dict[str, tuple[Any, bool]], where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise PreviewJSONError(f"{where}: expected an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(spec))
    if unknown:
        raise PreviewJSONError(f"{where}: unknown field(s) {', '.join(unknown)}")
    for key, (typ, omitempty) in spec.items():
        if key not in obj:
            if not omitempty:
                raise PreviewJSONError(f"{where}: missing field {key} (not omitempty: always written)")
            continue
        value = obj[key]
        if typ is not object:
            types = typ if isinstance(typ, tuple) else (typ,)
            # JSON has no int/bool distinction problem in Go; Python's bool is an int: keep them apart.
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise PreviewJSONError(f"{where}.{key}: expected {'/'.join(t.__name__ for t in types)}")
        if omitempty and value in ("", False, 0, [], {}, None) and not (value == 0 and isinstance(value, float)):
            raise PreviewJSONError(f"{where}.{key}: an empty value the engine omits (omitempty)")
    return obj


def _resource(obj: Any, where: str) -> dict[str, Any]:
    state = _check(obj, _RESOURCE, where)
    if not str(state["urn"]).startswith("urn:pulumi:"):
        raise PreviewJSONError(f"{where}.urn: not a URN: {state['urn']!r}")
    return state


def read_preview(doc: Any) -> PreviewDigest:
    """Parse ``doc`` as a ``PreviewDigest``; :class:`PreviewJSONError` names the first field that does not fit."""
    if not isinstance(doc, dict):
        raise PreviewJSONError("the document: expected an object")
    ext = doc.get(EXTENSION)
    digest = _check({k: v for k, v in doc.items() if k != EXTENSION}, _DIGEST, "PreviewDigest")
    steps = []
    for i, raw in enumerate(digest.get("steps") or []):
        where = f"steps[{i}]"
        s = _check(raw, _STEP, where)
        if s["op"] not in ENGINE_OPS and s["op"] not in STRICT_OP:
            raise PreviewJSONError(f"{where}.op: {s['op']!r} is no engine op")
        detailed = s["detailedDiff"]
        for path, d in (detailed or {}).items():
            _check(d, _PROPERTY_DIFF, f"{where}.detailedDiff[{path!r}]")
            if d["kind"] not in DIFF_KINDS:
                raise PreviewJSONError(f"{where}.detailedDiff[{path!r}].kind: {d['kind']!r} is no DiffKind")
        old = _resource(s["oldState"], f"{where}.oldState") if "oldState" in s else None
        new = _resource(s["newState"], f"{where}.newState") if "newState" in s else None
        for state in (old, new):
            if state is not None and state["urn"] != s["urn"]:
                raise PreviewJSONError(f"{where}: the state's urn {state['urn']!r} is not the step's")
        steps.append(
            Step(
                op=s["op"],
                urn=s["urn"],
                provider=s.get("provider", ""),
                old_state=old,
                new_state=new,
                diff_reasons=list(s.get("diffReasons") or []),
                replace_reasons=list(s.get("replaceReasons") or []),
                detailed_diff=detailed,
            )
        )
    diagnostics = []
    for i, raw in enumerate(digest.get("diagnostics") or []):
        d = _check(raw, _DIAGNOSTIC, f"diagnostics[{i}]")
        if "severity" in d and d["severity"] not in SEVERITIES:
            raise PreviewJSONError(f"diagnostics[{i}].severity: {d['severity']!r} is no diag.Severity")
        diagnostics.append(d)
    summary = digest.get("changeSummary") or {}
    for op, n in summary.items():
        if (op not in ENGINE_OPS and op not in STRICT_OP) or not isinstance(n, int) or isinstance(n, bool):
            raise PreviewJSONError(f"changeSummary.{op}: expected an engine op and a count")
    return PreviewDigest(
        steps=steps,
        diagnostics=diagnostics,
        change_summary=dict(summary),
        config=dict(digest.get("config") or {}),
        duration_ns=int(digest.get("duration") or 0),
        maybe_corrupt=bool(digest.get("maybeCorrupt")),
        extension=ext if isinstance(ext, dict) else None,
    )


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.plan.reader", "python -m tools.cli.preview --stack <name> --json (the plan this module reads)")
