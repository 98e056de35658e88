"""Generate the operator custom resources' typed models and field table from their published CRDs.

    python -m tools.generate.crd_models            # write components/config/crd.py and policies/crd_fields.json
    python -m tools.generate.crd_models --check    # exit 1 when either differs from what the CRDs give

Inputs are the CRD files ``policies/compatibility.yaml`` lists under ``crdReleases`` (read from ``../shared/crds``,
else from ``vendor/crds`` filled by ``python -m tools.fetch.crds``, which pins and verifies every blob):

- ``components/config/crd.py``: one pydantic model per object of the v1 ``spec`` of InferenceEndpointConfig and
  JumpStartModel in the newest release (identical sub-objects share one class), plus the fields of the later
  operators with no public CRD (the overlays of ``policies/crd_overlays``, 3.4-3.7). Keys by their CRD names only,
  unknown keys forbidden, the CRD's enums, patterns and bounds; optional unless the CRD requires a field without
  a default; no defaults of their own, so a dump renders exactly what the user wrote. Embedded Kubernetes core
  types (:data:`OPAQUE`: resources, affinity, probes, env, volumes, init containers) stay mappings, validated
  against the CRD's own schema by ``tools.plan.k8s_schema`` (preview ``--out``) and the tests.
- ``policies/crd_fields.json``: for each kind, every spec path (and enum value) with the first release whose CRD
  has it; paths of the oldest published CRD of the kind are left out. ``policies.compatibility.features_missing``
  refuses a path the pinned release's CRD lacks, naming the release that adds it.

The output depends only on the CRD files and on this generator (``tests/test_crd_models.py`` regenerates and
compares). The few constraints the program adds to the CRD's (:data:`TIGHTER`) carry their source.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import keyword
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies import compatibility as compat
from policies import crd_overlays
from policies.yaml_files import load_yaml_file
from tools.fetch.crds import find_crds, git_blob_id
from tools.report import cli

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MODELS_OUT = PROJECT_ROOT / "components" / "config" / "crd.py"
TABLE_OUT = PROJECT_ROOT / "policies" / "crd_fields.json"

KINDS = {"IEC": "InferenceEndpointConfig", "JSM": "JumpStartModel"}

OPAQUE: dict[str, frozenset[str]] = {
    "IEC": frozenset(
        {
            "nodeAffinity",
            "kubernetes.initContainers",
            "kubernetes.volumes",
            "worker.environmentVariables",
            "worker.resources",
            "worker.probes.livenessProbe",
            "worker.probes.readinessProbe",
            "worker.probes.startupProbe",
            "pdSpec.prefillSpec.resources",
            "pdSpec.decodingSpec.resources",
        }
    ),
    "JSM": frozenset(),
}
"""Spec paths holding Kubernetes core types (core/v1 NodeAffinity, Container, Volume, EnvVar, ResourceRequirements,
Probe), kept as mappings: their schema is Kubernetes', checked by the schema validation rather than retyped."""

TIGHTER: dict[str, tuple[dict[str, Any], str]] = {
    "replicas": (
        {"minimum": 0},
        'the CRD declares no minimum; Kubernetes rejects negative replicas (apps/v1 validation "must be greater '
        'than or equal to 0", k8s.io/kubernetes pkg/apis/apps/validation)',
    ),
    "InitialReplicaCount": ({"minimum": 0}, "deprecated and without effect; a negative count is never valid"),
}
"""Top-level spec fields where the program is stricter than the CRD, with why."""

INT_FORMATS: dict[str, tuple[int, int]] = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
"""OpenAPI integer formats (OpenAPI 3.0 "Data Types": int32 "signed 32 bits", int64 "signed 64 bits")."""

NAMES = {
    ("JSM", "model"): "JumpStartModelRef",
    ("JSM", "server"): "JumpStartServer",
    ("IEC", "pdSpec.decodingSpec"): "PdRoleSpec",  # the prefill and decode roles share one shape
}
"""Class names chosen by hand where the key alone would read badly (``Model``, ``Server``)."""

_BASEMODEL_ATTRS = frozenset({"copy", "dict", "json", "schema", "construct", "validate", "fields", "model_config"})


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    s = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", "_", s)
    out = s.lower()
    if keyword.iskeyword(out) or out in _BASEMODEL_ATTRS:
        raise SystemExit(f"tools.generate.crd_models: the CRD key {name!r} needs a hand-picked field name")
    return out


def _pascal(key: str) -> str:
    return key[0].upper() + key[1:]


def _summary(description: str | None) -> str | None:
    """The description's first line, as the CRD writes it (cut at a word before 110 characters)."""
    if not description:
        return None
    line = description.strip().splitlines()[0].strip().rstrip(".")
    return line if len(line) <= 110 else line[:107].rsplit(" ", 1)[0].rstrip(" ,;:") + "..."


def _shape(node: dict[str, Any]) -> str:
    """A key for a schema without its descriptions: identical sub-objects share one class."""

    def strip(n: Any) -> Any:
        if isinstance(n, dict):
            return {k: strip(v) for k, v in sorted(n.items()) if k != "description"}
        if isinstance(n, list):
            return [strip(v) for v in n]
        return n

    return hashlib.sha256(json.dumps(strip(node), sort_keys=True).encode()).hexdigest()


@functools.cache
def _spec_schema(path: Path) -> str:
    doc = load_yaml_file(path)
    version = next(v for v in doc["spec"]["versions"] if v["name"] == "v1")
    return json.dumps(version["schema"]["openAPIV3Schema"]["properties"]["spec"])


def spec_schema(path: Path) -> dict[str, Any]:
    """The v1 ``spec`` schema of a CRD file (a fresh copy; each file is parsed once per process)."""
    spec: dict[str, Any] = json.loads(_spec_schema(path))
    return spec


def _opaque(kind_code: str) -> frozenset[str]:
    """:data:`OPAQUE` plus the overlay fields that are core types of the base CRD (``schemaFrom``)."""
    extra = {f.path for _, f in crd_overlays.active_fields(KINDS[kind_code]) if f.schema_from is not None}
    return OPAQUE[kind_code] | extra


def with_overlays(spec: dict[str, Any], kind_code: str, crds_dir: Path) -> dict[str, Any]:
    """``spec`` plus every overlay field of the kind (``policies/crd_overlays``; ``schemaFrom`` resolved against
    the newest published CRD)."""

    def core(code: str, path: str) -> dict[str, Any]:
        newest = [r for r in compat.load_compatibility().crd_releases if code in r.files][-1]
        node = crd_overlays.schema_path(spec_schema(crds_dir / newest.files[code]), path)  # type: ignore[index]
        if node is None:
            raise SystemExit(f"tools.generate.crd_models: schemaFrom {code} {path}: no such path in the newest CRD")
        return node

    return crd_overlays.apply(spec, crd_overlays.active_fields(KINDS[kind_code]), core)


# --- the models -------------------------------------------------------------------------------------------------


@dataclass
class _Class:
    name: str
    doc: str
    fields: list[str] = field(default_factory=list)


class _Models:
    """Names every object of the spec trees (breadth first, so shallow objects get the plain names), then emits
    the classes children first."""

    def __init__(self) -> None:
        self.by_shape: dict[str, str] = {}
        self.taken: set[str] = set()
        self.classes: dict[str, _Class] = {}
        self.order: list[str] = []

    def name_for(self, node: dict[str, Any], hint: str, parent: str) -> tuple[str, bool]:
        shape = _shape(node)
        if shape in self.by_shape:
            return self.by_shape[shape], False
        name = hint
        if name in self.taken:
            name = parent + hint
        n = 2
        while name in self.taken:
            name, n = f"{parent}{hint}{n}", n + 1
        self.taken.add(name)
        self.by_shape[shape] = name
        return name, True

    def build(self, kind_code: str, root: dict[str, Any], root_name: str) -> None:
        self.taken.add(root_name)
        self.by_shape[_shape(root)] = root_name
        queue: list[tuple[str, dict[str, Any], str, str]] = [("", root, root_name, "spec")]
        pending: list[tuple[str, dict[str, Any], str, str]] = []
        while queue:
            path, node, name, where = queue.pop(0)
            if name in self.classes:
                continue
            cls = _Class(name, self._doc(where, node, kind_code, path))
            self.classes[name] = cls
            pending.append((path, node, name, where))
            for key, sub in (node.get("properties") or {}).items():
                sub_path = f"{path}.{key}" if path else key
                obj = self._object_of(sub, kind_code, sub_path)
                if obj is not None:
                    hint = NAMES.get((kind_code, sub_path)) or _pascal(key)
                    if sub.get("type") == "array" and hint.endswith("s") and not hint.endswith("ss"):
                        hint = hint[:-1]
                    child, new = self.name_for(obj, hint, name)
                    if new:
                        where_sub = f"{sub_path}[]" if sub.get("type") == "array" else sub_path
                        queue.append((sub_path, obj, child, where_sub))
        for path, node, name, _ in pending:
            self.classes[name].fields = [
                self._field(kind_code, node, key, sub, f"{path}.{key}" if path else key)
                for key, sub in (node.get("properties") or {}).items()
            ]
        self.order = self._sorted()

    def _sorted(self) -> list[str]:
        """Classes children first (each after every class its fields name), otherwise in naming order."""
        names = list(self.classes)
        words = {
            n: set(re.findall(r"\b[A-Z]\w*", " ".join(f.split("= Field", 1)[0] for f in c.fields)))
            for n, c in self.classes.items()
        }
        out: list[str] = []

        def visit(n: str) -> None:
            if n in out:
                return
            for m in names:
                if m != n and m in words[n]:
                    visit(m)
            out.append(n)

        for n in names:
            visit(n)
        return out

    @staticmethod
    def _object_of(sub: dict[str, Any], kind_code: str, path: str) -> dict[str, Any] | None:
        if path in _opaque(kind_code):
            return None
        node = sub.get("items", sub) if sub.get("type") == "array" else sub
        return node if node.get("type") == "object" and node.get("properties") else None

    @staticmethod
    def _doc(where: str, node: dict[str, Any], kind_code: str, path: str) -> str:
        text = _summary(node.get("description"))
        head = f"``{where}``" if where != "spec" else f"``spec`` of {KINDS[kind_code]} v1"
        return f"{head} — {text}" if text else head

    def _type(self, kind_code: str, sub: dict[str, Any], path: str) -> str:  # noqa: PLR0911 - one per schema type
        if path in _opaque(kind_code):
            return "list[dict[str, Any]]" if sub.get("type") == "array" else "dict[str, Any]"
        if sub.get("x-kubernetes-int-or-string"):
            return "int | str"
        kind = sub.get("type")
        if "enum" in sub:
            return "Literal[" + ", ".join(json.dumps(v) for v in sub["enum"]) + "]"
        if kind == "string":
            return "str"
        if kind == "integer":
            return "int"
        if kind == "number":
            return "int | float"
        if kind == "boolean":
            return "bool"
        if kind == "array":
            items = sub.get("items") or {}
            inner = self._type(kind_code, items, path)
            constraints = self._constraints(items)
            if constraints and not (items.get("type") == "object" and items.get("properties")):
                return f"list[Annotated[{inner}, Field({constraints})]]"
            return f"list[{inner}]"
        if kind == "object":
            if sub.get("properties"):
                return self.by_shape[_shape(sub)]
            extra = sub.get("additionalProperties")
            if isinstance(extra, dict) and extra.get("type") == "string":
                return "dict[str, str]"
            return "dict[str, Any]"
        raise SystemExit(f"tools.generate.crd_models: {KINDS[kind_code]} spec.{path}: unsupported schema {sorted(sub)}")

    @staticmethod
    def _constraints(sub: dict[str, Any]) -> str:
        parts = []
        if sub.get("format") in INT_FORMATS:
            # the owner's figure for an integer the CRD bounds only by its format: the operator's Go field is an
            # int32/int64 (controller-gen writes `format` from it), so a larger value cannot even be decoded
            low, high = INT_FORMATS[sub["format"]]
            sub = {"minimum": low, "maximum": high, **sub}
        for key, arg in (
            ("minLength", "min_length"),
            ("maxLength", "max_length"),
            ("minItems", "min_length"),
            ("maxItems", "max_length"),
            ("minimum", "ge"),
            ("maximum", "le"),
        ):
            if key in sub:
                parts.append(f"{arg}={sub[key]!r}")
        if "pattern" in sub:
            parts.append(f"pattern={json.dumps(sub['pattern'])}")
        return ", ".join(parts)

    def _field(self, kind_code: str, node: dict[str, Any], key: str, sub: dict[str, Any], path: str) -> str:
        required = key in (node.get("required") or []) and "default" not in sub
        typ = self._type(kind_code, sub, path)
        extra = dict(sub)
        comment = ""
        if path in TIGHTER:
            tighter, why = TIGHTER[path]
            extra.update(tighter)
            comment = f"    # {why}\n"
        constraints = self._constraints(extra)
        if sub.get("type") == "array":
            constraints = self._constraints({k: v for k, v in extra.items() if k in ("minItems", "maxItems")})
        elif typ in ("int | str",) or typ.startswith("Literal["):
            constraints = ""
        args = [] if required else ["default=None"]
        args.append(f"alias={json.dumps(key)}")
        if constraints:
            args.append(constraints)
        summary = _summary(sub.get("description"))
        if summary:
            args.append(f"description={json.dumps(summary)}")
        annotation = typ if required else f"{typ} | None"
        return f"{comment}    {_snake(key)}: {annotation} = Field({', '.join(args)})"

    def render(self) -> str:
        out = []
        for name in self.order:
            cls = self.classes[name]
            body = "\n".join(cls.fields) if cls.fields else "    pass"
            doc = cls.doc.replace("\\", "\\\\").replace('"""', "'''")
            doc = doc[:-1] + '\\"' if doc.endswith('"') else doc
            out.append(f'class {name}(CrdModel):\n    """{doc}"""\n\n{body}\n')
        return "\n\n".join(out)


def _header(inputs: list[tuple[str, str]]) -> str:
    files = "\n".join(f"#   {name}  (blob {blob})" for name, blob in inputs)
    return f'''# Generated by `python -m tools.generate.crd_models` from the CRDs below (the crdReleases of policies/compatibility.yaml,
# in ../shared/crds or vendor/crds). Do not edit: change the generator and regenerate.
{files}
"""Typed specs of the operator's custom resources, generated from its newest published CRDs (operator {{newest}}).

Every model forbids unknown keys and takes keys only by their CRD names (camelCase); fields are optional unless
the CRD requires them without a default, and carry no defaults of their own, so ``dump()`` renders exactly what
the user wrote (the operator applies the CRD defaults). Embedded Kubernetes core types (:data:`OPAQUE_PATHS`)
are mappings, validated against the CRD by the schema validation. Fields of later operators that no public CRD
has are typed from their overlays, ``policies/crd_overlays/operator-<version>.yaml`` (:data:`OVERLAY_FIELDS`).
Which release has which field: ``policies/crd_fields.json`` (same generator). The InferenceGatewayConfig spec has
no public CRD: it is typed by hand from the AWS documentation in ``components/config/gateway_spec.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

OPAQUE_PATHS: dict[str, frozenset[str]] = {{opaque}}
"""Spec paths (per kind) holding Kubernetes core types, kept as mappings."""

OVERLAY_FIELDS: dict[str, str] = {{documented}}
"""Spec paths typed from the overlays (AWS documentation and release notes; no public CRD), with the operator
release that adds them."""


class CrdModel(BaseModel):
    """Base of every CRD spec model: keys by CRD name only, unknown keys forbidden, immutable."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=False, protected_namespaces=(), regex_engine="python-re"
    )

    def dump(self) -> dict[str, Any]:
        """What the user wrote, camelCase (unset fields left out; the operator applies CRD defaults)."""
        return self.model_dump(by_alias=True, exclude_unset=True)


'''


def generate_models(crds_dir: Path) -> str:
    table = compat.load_compatibility()
    newest = table.crd_releases[-1]
    models = _Models()
    inputs = []
    for code in ("IEC", "JSM"):
        rel = newest.files[code]
        raw = (crds_dir / rel).read_bytes()
        inputs.append((rel, git_blob_id(raw)))
        models.build(code, with_overlays(spec_schema(crds_dir / rel), code, crds_dir), f"{KINDS[code]}Spec")
    opaque = "{" + ", ".join(f'"{KINDS[k]}": frozenset({sorted(_opaque(k))!r})' for k in OPAQUE) + "}"
    documented = {f.path: o.operator_version for k in KINDS.values() for o, f in crd_overlays.active_fields(k)}
    head = _header(inputs).replace("{newest}", newest.operator_version)
    head = head.replace("{opaque}", opaque.replace("'", '"').replace("frozenset([])", "frozenset()"))
    head = head.replace("{documented}", json.dumps(documented))
    body = models.render()
    if "Annotated[" not in body:
        head = head.replace("from typing import Annotated, Any, Literal", "from typing import Any, Literal")
    return head + body


# --- overlays against a real CRD ----------------------------------------------------------------------------

_COMPARED = ("type", "enum", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern")


def _compare(ours: dict[str, Any], theirs: dict[str, Any], where: str) -> Iterator[str]:
    for key in _COMPARED:
        if key in ours and ours.get(key) != theirs.get(key):
            yield f"{where}: the overlay says {key} {ours[key]!r}, the CRD {theirs.get(key)!r}"
    for name, sub in (ours.get("properties") or {}).items():
        other = (theirs.get("properties") or {}).get(name)
        if other is None:
            yield f"{where}.{name}: in the overlay, not in the CRD"
        else:
            yield from _compare(sub, other, f"{where}.{name}")
    if isinstance(ours.get("items"), dict):
        yield from _compare(ours["items"], theirs.get("items") or {}, f"{where}[]")


def overlay_disagreements(overlay: crd_overlays.Overlay, real: dict[str, dict[str, Any]], core: Any) -> list[str]:
    """Where an overlay and a real CRD of its release (``real``: kind code -> v1 spec schema) differ: a field the
    CRD lacks at the overlay's path (for a field whose path no source states: the path to correct), or a type, enum
    or bound that differs on a field both have. Empty: they agree on every field they share."""
    out = []
    for f in overlay.fields:
        for code in f.kinds:
            if code not in real:
                continue
            theirs = crd_overlays.schema_path(real[code], f.path)
            label = f"{code} spec.{f.path}"
            if theirs is None:
                note = f" (checklist {f.checklist_id}: the path was a guess)" if f.checklist_id else ""
                out.append(f"{label}: in the overlay, not in the CRD{note}")
                continue
            out.extend(_compare(crd_overlays.fragment(f, core), theirs, label))
    return out


def real_crd_disagreements(crds_dir: Path) -> dict[str, list[str]]:
    """For every overlay a published CRD supersedes (a ``crdReleases`` row at or after its release): the
    disagreements with the oldest such CRD. ``{}`` while no CRD of 3.4+ is published."""
    table = compat.load_compatibility()

    def core(code: str, path: str) -> dict[str, Any]:
        newest = [r for r in table.crd_releases if code in r.files][-1]
        node = crd_overlays.schema_path(spec_schema(crds_dir / newest.files[code]), path)  # type: ignore[index]
        assert node is not None, (code, path)
        return node

    out: dict[str, list[str]] = {}
    for overlay in crd_overlays.load_overlays():
        later = [r for r in table.crd_releases if r.operator >= overlay.operator]
        if not later:
            continue
        real: dict[str, dict[str, Any]] = {
            str(code): spec_schema(crds_dir / rel) for code, rel in later[0].files.items()
        }
        out[overlay.operator_version] = overlay_disagreements(overlay, real, core)
    return out


# --- the field table --------------------------------------------------------------------------------------------


def spec_paths(node: dict[str, Any], kind_code: str, path: str = "") -> Iterator[str]:
    """Every spec path of a schema (``[]`` for list items, ``path=value`` for enum values), core types as one."""
    if path and path.replace("[]", "") in OPAQUE[kind_code]:
        return
    for value in node.get("enum") or []:
        yield f"{path}={value}"
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        items = node["items"]
        for key, sub in (items.get("properties") or {}).items():
            sub_path = f"{path}[].{key}"
            yield sub_path
            yield from spec_paths(sub, kind_code, sub_path)
        for value in items.get("enum") or []:
            yield f"{path}={value}"
        return
    for key, sub in (node.get("properties") or {}).items():
        sub_path = f"{path}.{key}" if path else key
        yield sub_path
        yield from spec_paths(sub, kind_code, sub_path)


def _parent(path: str) -> str:
    """``a.b[].c`` -> ``a.b``; ``a.b=v`` -> ``a.b``; ``a.b`` -> ``a``."""
    if "=" in path:
        return path.partition("=")[0]
    head = path.rpartition(".")[0]
    return head[:-2] if head.endswith("[]") else head


def generate_table(crds_dir: Path) -> str:
    table = compat.load_compatibility()
    kinds: dict[str, dict[str, str]] = {}
    files: dict[str, str] = {}
    for code in ("IEC", "JSM"):
        first: dict[str, str] = {}
        oldest = None
        for release in table.crd_releases:
            rel = release.files.get(code)
            if rel is None:
                continue
            files[rel] = git_blob_id((crds_dir / rel).read_bytes())
            oldest = oldest or release.operator_version
            for p in spec_paths(spec_schema(crds_dir / rel), code):
                first.setdefault(p, release.operator_version)
        kinds[code] = {
            p: v
            for p, v in sorted(first.items())
            if v != oldest and first.get(_parent(p)) != v  # parent covers it
        }
    doc = {
        "generator": "python -m tools.generate.crd_models (do not edit)",
        "meaning": "per kind, each spec path (`[]`: list items; `=value`: an enum value) with the first operator "
        "release whose CRD has it; paths of the oldest published CRD of the kind are left out",
        "crds": files,
        "kinds": kinds,
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def outputs(crds_dir: Path) -> dict[Path, str]:
    return {MODELS_OUT: generate_models(crds_dir), TABLE_OUT: generate_table(crds_dir)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.generate.crd_models", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed files differ")
    parser.add_argument(
        "--crds", type=Path, default=None, help="the CRD folder (default: ../shared/crds or vendor/crds)"
    )
    ns = parser.parse_args(argv)
    crds_dir = ns.crds or find_crds()
    if crds_dir is None:
        print(
            "tools.generate.crd_models: no CRD folder (../shared/crds, or run `python -m tools.fetch.crds`)",
            file=sys.stderr,
        )
        return 2
    stale = []
    for path, text in outputs(crds_dir).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            stale.append(path)
            if not ns.check:
                path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'differs' if ns.check else 'wrote'}: {path.relative_to(PROJECT_ROOT)}")
    return 1 if ns.check and stale else 0


if __name__ == "__main__":
    cli.run(main)
