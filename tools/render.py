"""Write what a mock run registered as files reviewers and external validators understand.

Kubernetes objects become YAML manifests (their inputs are the manifest, camelCase already); aws-native
resources become a CloudFormation-shaped template, since aws-native types *are* CloudFormation types
(``aws-native:sagemaker:Cluster`` is ``AWS::SageMaker::Cluster``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tools.mocks import Registration, unwrap_secrets

# aws-native type token -> CloudFormation type, for the services this package uses.
_CFN_SERVICE_NAMES = {
    "sagemaker": "SageMaker",
    "ec2": "EC2",
    "iam": "IAM",
    "s3": "S3",
    "eks": "EKS",
    "elasticache": "ElastiCache",
}
# Property names whose values are free-form maps (their keys must not be re-cased).
_MAP_PROPERTIES = {"labels", "Labels"}


def cfn_type(token: str) -> str:
    _, service, name = token.split(":")
    return f"AWS::{_CFN_SERVICE_NAMES.get(service, service.capitalize())}::{name}"


def _pascal(key: str) -> str:
    return key[:1].upper() + key[1:]


def _resource_schema(cfn_resource_type: str, region: str) -> dict[str, Any] | None:
    """The CloudFormation resource schema cfn-lint ships for ``cfn_resource_type`` (None when unknown)."""
    try:
        from cfnlint.schema import PROVIDER_SCHEMA_MANAGER
    except ImportError:  # pragma: no cover - cfn-lint is a runtime dependency
        return None
    try:
        return dict(PROVIDER_SCHEMA_MANAGER.get_resource_schema(region, cfn_resource_type).schema)
    except Exception:  # noqa: BLE001 - unknown type/region: fall back to plain PascalCase
        return None


class _SchemaWalker:
    """Renames aws-native camelCase keys to the exact CloudFormation property names of a resource schema.

    aws-native derives its names from CloudFormation's by camel-casing, which loses acronyms
    (``VolumeSizeInGB`` -> ``volumeSizeInGb``, ``FSxLustreConfig`` -> ``fSxLustreConfig``); plain
    PascalCase therefore does not round-trip. The walker matches keys case-insensitively against the schema
    at each level and keeps the keys of free-form maps (``patternProperties``, e.g. Kubernetes labels).
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while "$ref" in node and seen < 20:
            ref = node["$ref"]
            target: Any = self.schema
            for part in ref.lstrip("#/").split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            seen += 1
        return node

    def _object_props(self, node: dict[str, Any], keys: set[str]) -> tuple[dict[str, Any], bool]:
        """(properties, free_form) of an object schema, choosing the oneOf/anyOf branch that fits ``keys``."""
        node = self._resolve(node)
        props: dict[str, Any] = dict(node.get("properties") or {})
        free_form = not props and bool(node.get("patternProperties") or node.get("additionalProperties"))
        best: dict[str, Any] = {}
        for combo in ("oneOf", "anyOf", "allOf"):
            for branch in node.get(combo) or []:
                bprops, _ = self._object_props(branch, keys)
                lowered = {k.lower() for k in bprops}
                if combo == "allOf" or {k.lower() for k in keys} <= lowered:
                    best.update(bprops)
        props.update(best)
        return props, free_form

    def convert(self, value: Any, node: dict[str, Any] | None) -> Any:
        if node is None:
            return to_cfn_properties(value)
        node = self._resolve(node)
        if isinstance(value, dict):
            props, free_form = self._object_props(node, set(value))
            if free_form:
                return dict(value)
            by_lower = {k.lower(): k for k in props}
            out = {}
            for k, v in value.items():
                cfn_key = by_lower.get(k.lower(), _pascal(k))
                out[cfn_key] = self.convert(v, props.get(cfn_key))
            return out
        if isinstance(value, list):
            items = node.get("items")
            return [self.convert(v, items if isinstance(items, dict) else None) for v in value]
        return value


def to_cfn_properties(value: Any, *, keep_keys: bool = False) -> Any:
    """camelCase aws-native inputs -> PascalCase CloudFormation properties (no schema at hand)."""
    if isinstance(value, dict):
        return {
            (k if keep_keys else _pascal(k)): to_cfn_properties(v, keep_keys=k in _MAP_PROPERTIES)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [to_cfn_properties(v) for v in value]
    return value


def cfn_resource_properties(token: str, inputs: dict[str, Any], region: str = "us-east-1") -> dict[str, Any]:
    """The CloudFormation ``Properties`` of an aws-native resource, property names taken from its schema."""
    schema = _resource_schema(cfn_type(token), region)
    if schema is None:
        return to_cfn_properties(inputs)
    walker = _SchemaWalker(schema)
    props = walker.convert(inputs, {"properties": schema.get("properties") or {}})
    # Read-only properties (outputs echoed back by the mocks) are not template input.
    read_only = {p.split("/")[-1] for p in schema.get("readOnlyProperties") or []}
    return {k: v for k, v in props.items() if k not in read_only}


def logical_id(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", name) if part)


def cloudformation_template(registrations: list[Registration], region: str = "us-east-1") -> dict[str, Any]:
    """A CloudFormation template of the run's aws-native resources; ``region`` picks the cfn-lint schema."""
    resources = {
        logical_id(r.name): {
            "Type": cfn_type(r.type),
            "Properties": cfn_resource_properties(r.type, unwrap_secrets(r.inputs), region),
        }
        for r in registrations
        if r.type.startswith("aws-native:") and r.custom
    }
    return {"AWSTemplateFormatVersion": "2010-09-09", "Resources": resources}


# Manifest fields in the order kubectl prints them; everything else a provider input carries is dropped.
_MANIFEST_FIELDS = (
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "data",
    "stringData",
    "rules",
    "roleRef",
    "subjects",
    "type",
)


def kubernetes_manifests(registrations: list[Registration]) -> list[dict[str, Any]]:
    """Each Kubernetes object's manifest, secrets unwrapped (offline they are mocks or placeholders)."""
    out = []
    for r in registrations:
        if r.type.startswith("kubernetes:") and r.custom and "kind" in r.inputs:
            inputs = unwrap_secrets(r.inputs)
            out.append({k: inputs[k] for k in _MANIFEST_FIELDS if k in inputs})
    return out


def write_outputs(registrations: list[Registration], out_dir: Path, region: str = "us-east-1") -> list[Path]:
    """Write ``kubernetes/<kind>-<namespace>-<name>.yaml`` and ``cloudformation.yaml``; return the paths."""
    written: list[Path] = []
    out_dir.mkdir(parents=True, exist_ok=True)
    k8s_dir = out_dir / "kubernetes"
    for manifest in kubernetes_manifests(registrations):
        meta = manifest.get("metadata") or {}
        fname = f"{manifest['kind']}-{meta.get('namespace', 'cluster')}-{meta.get('name', 'unnamed')}.yaml".lower()
        k8s_dir.mkdir(exist_ok=True)
        path = k8s_dir / fname
        path.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        written.append(path)
    template = cloudformation_template(registrations, region)
    if template["Resources"]:
        path = out_dir / "cloudformation.yaml"
        path.write_text(yaml.safe_dump(template, sort_keys=False), encoding="utf-8")
        written.append(path)
    return written
