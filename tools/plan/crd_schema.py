"""Validate custom-resource specs against the operator's real CRD schemas (jsonschema Draft 7, closed).

Reusable by any test that renders custom resources::

    from tests.crd_schema import validate_cr
    errors = validate_cr(cr, crds_dir, addon_version="v1.4.0-eksbuild.1")
    assert errors == []

The schema is the CRD's ``v1`` ``openAPIV3Schema`` with three adjustments that make jsonschema behave like the
API server plus a strict client:

- ``additionalProperties: false`` wherever ``properties`` are given (the API server would silently prune an
  unknown field; we want a misspelt key to fail);
- a ``required`` field that has a ``default`` is not required (the API server applies defaults before it
  validates, e.g. JumpStartModel ``model.acceptEula``);
- ``x-kubernetes-int-or-string`` becomes ``integer | string``.

For an add-on pin, the CRD of that operator release is used (:func:`policies.compatibility.crd_release_for` over
``crdReleases`` in ``policies/compatibility.yaml``), plus the overlays of the releases without a public CRD
(``policies/crd_overlays``) that the pinned add-on carries. Without a pin: the newest CRD and every overlay.

:func:`classify_spec` says what a verdict rests on (``policies/crd_overlays.py``):

- ``valid``: the spec validates and uses only fields of the published CRD;
- ``valid-against-docs-schema``: it validates, and sets overlay fields (their files and sources are named);
- ``cannot-validate-offline``: it validates, but sets an overlay field whose path no source states, or one the
  pinned add-on may or may not carry (its operator mapping is inferred): the verify check reads the installed CRD;
- ``invalid``: a schema error, or a field the pinned release does not have (named with the release adding it).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from policies import compatibility as compat
from policies import crd_overlays
from policies.yaml_files import load_yaml_file

VALID = "valid"
VALID_AGAINST_DOCS = "valid-against-docs-schema"
CANNOT_VALIDATE = "cannot-validate-offline"
INVALID = "invalid"

CRD_FILES = {
    "InferenceEndpointConfig": "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
    "JumpStartModel": "inference.sagemaker.aws.amazon.com_jumpstartmodels.yaml",
}


@functools.cache
def _crd_spec_schema(path: Path) -> dict[str, Any]:
    doc = load_yaml_file(path)
    version = next(v for v in doc["spec"]["versions"] if v["name"] == "v1")
    spec: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def crd_spec_schema(path: Path) -> dict[str, Any]:
    """The raw ``v1`` spec schema of a CRD file (a fresh copy)."""
    return copy.deepcopy(_crd_spec_schema(path))


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` closed against unknown keys, with defaulted fields not required."""
    out = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        if node.pop("x-kubernetes-int-or-string", False):
            node.pop("type", None)
            node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        props = node.get("properties")
        if isinstance(props, dict):
            node.setdefault("additionalProperties", False)
            if "required" in node:
                node["required"] = [r for r in node["required"] if "default" not in props.get(r, {})]
            for sub in props.values():
                walk(sub)
        for key in ("items", "additionalProperties", "anyOf", "allOf", "oneOf"):
            if isinstance(node.get(key), dict | list):
                walk(node[key])

    walk(out)
    return out


def core_schema_of(crds_dir: Path) -> Any:
    """The resolver of an overlay's ``schemaFrom``: the schema at a spec path of the newest published CRD of a kind
    (the core types it embeds, e.g. ``worker.resources``)."""

    def resolve(kind_code: str, path: str) -> dict[str, Any]:
        newest = [r for r in compat.load_compatibility().crd_releases if kind_code in r.files][-1]
        node = crd_overlays.schema_path(crd_spec_schema(crds_dir / newest.files[kind_code]), path)  # type: ignore[index]
        if node is None:
            raise KeyError(f"schemaFrom: no {path} in {newest.files[kind_code]}")  # type: ignore[index]
        return node

    return resolve


def with_overlays(
    spec_schema: dict[str, Any], crds_dir: Path, kind: str, operator_version: str | None
) -> dict[str, Any]:
    """``spec_schema`` plus the overlay fields of ``kind`` up to ``operator_version`` (every release when None)."""
    return crd_overlays.apply(spec_schema, crd_overlays.active_fields(kind, operator_version), core_schema_of(crds_dir))


def crd_path(crds_dir: Path, kind: str, addon_version: str | None = None) -> Path:
    """The CRD file of a kind for the operator the pinned add-on carries (default: the newest published CRD)."""
    if addon_version is None:
        return crds_dir / compat.load_compatibility().crd_releases[-1].files["IEC" if kind == compat.IEC else "JSM"]
    release = compat.crd_release_for(compat.addon(addon_version).operator_version, kind)
    return crds_dir / release.files["IEC" if kind == compat.IEC else "JSM"]


@functools.lru_cache(maxsize=128)
def _validator(
    crds_dir: Path, kind: str, crd_file: str, fields: tuple[tuple[str, str], ...]
) -> jsonschema.Draft7Validator:
    """A Draft 7 validator of ``crd_file``'s spec plus the overlay fields ``(operator, path)`` (built once: the files
    do not change while a process runs, and building one copies and walks the whole CRD schema)."""
    chosen = [(o, f) for o, f in crd_overlays.active_fields(kind) if (o.operator_version, f.path) in fields]
    schema = crd_overlays.apply(crd_spec_schema(crds_dir / crd_file), chosen, core_schema_of(crds_dir))
    return jsonschema.Draft7Validator(strict(schema))


def spec_validator(
    crds_dir: Path, kind: str = "InferenceEndpointConfig", addon_version: str | None = None
) -> jsonschema.Draft7Validator:
    """A Draft 7 validator of a kind's spec for ``addon_version``: its operator's published CRD plus the overlay
    fields the add-on carries or may carry (default: the newest public CRD and every overlay)."""
    path = crd_path(crds_dir, kind, addon_version)
    fields = crd_overlays.active_fields(kind)
    if addon_version is not None:
        fields = [(o, f) for o, f in fields if crd_overlays.carried(f, o, addon_version) is not False]
    key = tuple((o.operator_version, f.path) for o, f in fields)
    return _validator(crds_dir, kind, str(path.relative_to(crds_dir)), key)


@dataclass(frozen=True)
class SchemaVerdict:
    """What a spec's validation rests on: the outcome, the schema (files and sources) and the errors."""

    outcome: str
    schema: str
    errors: list[str] = field(default_factory=list)
    advisories: list[str] = field(default_factory=list)


def classify_spec(
    spec: dict[str, Any], crds_dir: Path, kind: str = "InferenceEndpointConfig", addon_version: str | None = None
) -> SchemaVerdict:
    """The outcome of ``spec`` against the pinned release's schema, saying what it rests on (module docstring)."""
    validator = spec_validator(crds_dir, kind, addon_version)
    found = sorted(validator.iter_errors(spec), key=lambda e: list(map(str, e.absolute_path)))
    errors = [f"spec.{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in found]
    base = str(crd_path(crds_dir, kind, addon_version).relative_to(crds_dir))
    used = crd_overlays.used(spec, crd_overlays.active_fields(kind))
    advisories: list[str] = []
    if addon_version is not None:
        release = compat.addon(addon_version)
        for o, f in used:
            has = crd_overlays.carried(f, o, addon_version)
            if has is False:
                errors.append(
                    f"spec.{f.path}: not in the schema of operator {release.operator_version} (add-on "
                    f"{addon_version}); added by operator {o.operator_version} ({compat.source_urls(f.sources)})"
                )
            elif has is None:
                advisories.append(crd_overlays.unknown_text(o, f, addon_version))
    for o, f in used:
        if f.checklist_id:
            advisories.append(crd_overlays.path_unsourced_text(o, f))
    if not used:
        return SchemaVerdict(INVALID if errors else VALID, base, errors)
    schema = f"{base} + overlay: {crd_overlays.describe(used)}"
    if errors:
        return SchemaVerdict(INVALID, schema, errors, advisories)
    if advisories:
        advisories.append(f"checked by {crd_overlays.VERIFY_TEXT}")
        return SchemaVerdict(CANNOT_VALIDATE, schema, [], advisories)
    return SchemaVerdict(VALID_AGAINST_DOCS, schema, [], advisories)


def validate_spec(
    spec: dict[str, Any], crds_dir: Path, kind: str = "InferenceEndpointConfig", addon_version: str | None = None
) -> list[str]:
    """Every schema error of ``spec`` as ``spec.<path>: <message>`` (empty when valid), including the fields the
    pinned release does not have."""
    return classify_spec(spec, crds_dir, kind, addon_version).errors


def classify_cr(cr: dict[str, Any], crds_dir: Path, addon_version: str | None = None) -> SchemaVerdict:
    """:func:`classify_spec` of a whole custom resource ``{apiVersion, kind, metadata, spec}`` (spec only)."""
    if cr.get("apiVersion") != "inference.sagemaker.aws.amazon.com/v1" or cr.get("kind") not in CRD_FILES:
        return SchemaVerdict(INVALID, "", [f"not an operator v1 resource: {cr.get('apiVersion')}/{cr.get('kind')}"])
    return classify_spec(cr.get("spec") or {}, crds_dir, str(cr["kind"]), addon_version)


def validate_cr(cr: dict[str, Any], crds_dir: Path, addon_version: str | None = None) -> list[str]:
    """Schema errors of a whole custom resource ``{apiVersion, kind, metadata, spec}`` (spec only is checked)."""
    return classify_cr(cr, crds_dir, addon_version).errors


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command(
        "tools.plan.crd_schema",
        "python -m tools.cli.preview --stack <name> --out DIR (writes kubernetes/validation.json)",
    )
