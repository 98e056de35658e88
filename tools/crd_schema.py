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

For an add-on pin, the CRD of that operator release is used (``crdHistoryFile`` in
``policies/compatibility.yaml``), plus the fields AWS documents for later operators that no public CRD has
(``LATER_FIELD_SCHEMAS``) when the release includes them.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from policies import compatibility as compat

CRD_FILES = {
    "InferenceEndpointConfig": "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
    "JumpStartModel": "inference.sagemaker.aws.amazon.com_jumpstartmodels.yaml",
}

# Documented fields absent from every public CRD, by the operator version that added them
# (../shared/crds/history/README.md; operator-facts §6-7). Paths are relative to spec.
LATER_FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "3.3": {
        "loadBalancer.idleTimeoutSeconds": {"type": "integer", "minimum": 1, "maximum": 4000},
        "modelCacheConfig": {
            "type": "object",
            "properties": {
                "imageCache": {
                    "type": "object",
                    "required": ["enabled"],
                    "properties": {"enabled": {"type": "boolean"}},
                },
                "weightsCache": {
                    "type": "object",
                    "properties": {
                        "enabled": {"type": "boolean"},
                        "hostPath": {"type": "string", "minLength": 1, "maxLength": 255},
                    },
                },
            },
        },
    },
    "3.6": {
        "inferenceGateway": {
            "type": "object",
            "properties": {"enabled": {"type": "boolean"}, "name": {"type": "string"}},
        },
    },
}


@functools.cache
def _crd_spec_schema(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
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


def with_later_fields(spec_schema: dict[str, Any], operator_versions: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``spec_schema`` plus the documented later fields of the given operator versions."""
    out = copy.deepcopy(spec_schema)
    for version in operator_versions:
        for path, fragment in LATER_FIELD_SCHEMAS[version].items():
            node = out
            *parents, leaf = path.split(".")
            for part in parents:
                node = node["properties"][part]
            node["properties"][leaf] = copy.deepcopy(fragment)
    return out


def crd_path(crds_dir: Path, kind: str, addon_version: str | None = None) -> Path:
    """The CRD file for a kind; for InferenceEndpointConfig and a pinned add-on, that release's history file."""
    if kind == "InferenceEndpointConfig" and addon_version is not None:
        name = compat.addon(addon_version).crd_history_file
        if name != "current":
            return crds_dir / "history" / name
    return crds_dir / CRD_FILES[kind]


def spec_validator(
    crds_dir: Path,
    kind: str = "InferenceEndpointConfig",
    addon_version: str | None = None,
    later: tuple[str, ...] | None = None,
) -> jsonschema.Draft7Validator:
    """A Draft 7 validator of a kind's spec, for the CRD of ``addon_version`` (default: the newest public CRD).

    ``later`` overrides which documented later-operator fields are accepted (default: those of the add-on).
    """
    schema = crd_spec_schema(crd_path(crds_dir, kind, addon_version))
    if later is None:
        later = compat.addon(addon_version).later_fields if addon_version is not None else ()
    return jsonschema.Draft7Validator(strict(with_later_fields(schema, later)))


def validate_spec(
    spec: dict[str, Any],
    crds_dir: Path,
    kind: str = "InferenceEndpointConfig",
    addon_version: str | None = None,
    later: tuple[str, ...] | None = None,
) -> list[str]:
    """Every schema error of ``spec`` as ``spec.<path>: <message>`` (empty when valid)."""
    validator = spec_validator(crds_dir, kind, addon_version, later)
    errors = sorted(validator.iter_errors(spec), key=lambda e: list(map(str, e.absolute_path)))
    return [f"spec.{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def validate_cr(cr: dict[str, Any], crds_dir: Path, addon_version: str | None = None) -> list[str]:
    """Schema errors of a whole custom resource ``{apiVersion, kind, metadata, spec}`` (spec only is checked)."""
    if cr.get("apiVersion") != "inference.sagemaker.aws.amazon.com/v1" or cr.get("kind") not in CRD_FILES:
        return [f"not an operator v1 resource: {cr.get('apiVersion')}/{cr.get('kind')}"]
    return validate_spec(cr.get("spec") or {}, crds_dir, str(cr["kind"]), addon_version)


if __name__ == "__main__":
    from tools.cli import not_a_command

    not_a_command("tools.crd_schema", "python -m tools.preview --stack <name> --out DIR (writes kubernetes/validation.json)")
