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
``crdReleases`` in ``policies/compatibility.yaml``), plus the fields AWS documents for later operators that no
public CRD has (``features`` with a ``schema``) when the release includes them. Without a pin: the newest CRD and
every documented field.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema

from policies import compatibility as compat
from policies.yaml_files import load_yaml_file

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


def with_documented_fields(spec_schema: dict[str, Any], kind: str, operator_version: str | None) -> dict[str, Any]:
    """``spec_schema`` plus the fields AWS documents without a public CRD, for operators up to ``operator_version``
    (every one when None): ``features`` with a ``schema`` in ``policies/compatibility.yaml``."""
    out = copy.deepcopy(spec_schema)
    for feature in compat.documented_features(kind, operator_version):
        node = out
        *parents, leaf = feature.path.split(".")
        for part in parents:
            node = node["properties"][part]
        node.setdefault("properties", {})[leaf] = copy.deepcopy(feature.schema_)
    return out


def crd_path(crds_dir: Path, kind: str, addon_version: str | None = None) -> Path:
    """The CRD file of a kind for the operator the pinned add-on carries (default: the newest published CRD)."""
    if addon_version is None:
        return crds_dir / compat.load_compatibility().crd_releases[-1].files["IEC" if kind == compat.IEC else "JSM"]
    release = compat.crd_release_for(compat.addon(addon_version).operator_version, kind)
    return crds_dir / release.files["IEC" if kind == compat.IEC else "JSM"]


@functools.lru_cache(maxsize=64)
def spec_validator(
    crds_dir: Path, kind: str = "InferenceEndpointConfig", addon_version: str | None = None
) -> jsonschema.Draft7Validator:
    """A Draft 7 validator of a kind's spec, for the CRD of ``addon_version`` (default: the newest public CRD).

    Built once per (folder, kind, add-on): the CRD files and policies/compatibility.yaml do not change while a
    process runs, and building one copies and walks the whole CRD schema (every endpoint of every run asks)."""
    schema = crd_spec_schema(crd_path(crds_dir, kind, addon_version))
    operator = compat.addon(addon_version).operator_version if addon_version is not None else None
    return jsonschema.Draft7Validator(strict(with_documented_fields(schema, kind, operator)))


def validate_spec(
    spec: dict[str, Any], crds_dir: Path, kind: str = "InferenceEndpointConfig", addon_version: str | None = None
) -> list[str]:
    """Every schema error of ``spec`` as ``spec.<path>: <message>`` (empty when valid)."""
    validator = spec_validator(crds_dir, kind, addon_version)
    errors = sorted(validator.iter_errors(spec), key=lambda e: list(map(str, e.absolute_path)))
    return [f"spec.{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def validate_cr(cr: dict[str, Any], crds_dir: Path, addon_version: str | None = None) -> list[str]:
    """Schema errors of a whole custom resource ``{apiVersion, kind, metadata, spec}`` (spec only is checked)."""
    if cr.get("apiVersion") != "inference.sagemaker.aws.amazon.com/v1" or cr.get("kind") not in CRD_FILES:
        return [f"not an operator v1 resource: {cr.get('apiVersion')}/{cr.get('kind')}"]
    return validate_spec(cr.get("spec") or {}, crds_dir, str(cr["kind"]), addon_version)


if __name__ == "__main__":
    from tools.cli import not_a_command

    not_a_command(
        "tools.crd_schema", "python -m tools.preview --stack <name> --out DIR (writes kubernetes/validation.json)"
    )
