"""Write what a mock run registered as files reviewers and external validators understand.

Kubernetes objects become YAML manifests (their inputs are the manifest, camelCase already); aws-native
resources become a CloudFormation-shaped template, since aws-native types *are* CloudFormation types
(``aws-native:sagemaker:Cluster`` is ``AWS::SageMaker::Cluster``).
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from policies.resource_types.tokens import (
    BUCKET_POLICY,
    DASHBOARD,
    ECR_REPOSITORY_POLICY,
    EKS_ADDON,
    EKS_COMPONENT,
    IAM_GROUP_POLICY,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_USER_POLICY,
    KMS_KEY,
)
from tools.plan.mocks import Registration, unwrap_secrets

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


# cfn-lint ships the CloudFormation resource provider schemas as data: ``providers/<region>.json`` maps each
# type to a file in ``resources/``. Importing ``cfnlint.schema`` to get at them loads the whole linter (and
# sympy, ~1 s), so the files are located without executing the package, as ``components/config/regions.py``
# does for the HyperPod instance-type table.
_CFN_LINT_SCHEMAS = ("data", "schemas")


@cache
def _cfn_lint_schemas_dir() -> Path | None:
    spec = importlib.util.find_spec("cfnlint")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - cfn-lint is a runtime dependency
        return None
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*_CFN_LINT_SCHEMAS)


@cache
def _provider_index(region: str) -> dict[str, str]:
    root = _cfn_lint_schemas_dir()
    if root is None:
        return {}
    path = root / "providers" / f"{region}.json"
    if not path.is_file():
        path = root / "providers" / "us-east-1.json"
    index: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    return index


@cache
def _schema_file(name: str) -> dict[str, Any]:
    root = _cfn_lint_schemas_dir()
    assert root is not None
    schema: dict[str, Any] = json.loads((root / "resources" / f"{name}.json").read_text(encoding="utf-8"))
    return schema


def resource_schema(cfn_resource_type: str, region: str) -> dict[str, Any] | None:
    """The CloudFormation resource schema cfn-lint ships for ``cfn_resource_type`` in ``region`` (None when unknown).

    An unknown region falls back to us-east-1's index. Callers must not mutate the returned dict (cached).
    """
    name = _provider_index(region).get(cfn_resource_type)
    return _schema_file(name) if name else None


def _resource_schema(cfn_resource_type: str, region: str) -> dict[str, Any] | None:
    return resource_schema(cfn_resource_type, region)


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


SECRET_DATA_FIELDS = ("data", "stringData")


def redacted_manifests(registrations: list[Registration]) -> list[dict[str, Any]]:
    """The manifests ``--out`` writes: no secret's value in them (issue 33 item 9).

    Secret-wrapped values read ``"[secret]"`` exactly as in the plan (:func:`tools.plan.writer.plain`, with the run's known
    secret values: the stack file's secrets, offline their placeholder, and every output a resource marks secret),
    and every value under a ``Secret``'s ``data`` and ``stringData`` reads ``"[secret]"`` whether wrapped or not: a
    reviewer's directory, a CI artifact, must not carry a credential.
    """
    from components.config.stackfile import OFFLINE_SECRET_PLACEHOLDER
    from tools.plan.mocks import secret_values
    from tools.plan.writer import SECRET, plain

    secrets = secret_values(registrations, (OFFLINE_SECRET_PLACEHOLDER,))
    out = []
    for r in registrations:
        if r.type.startswith("kubernetes:") and r.custom and "kind" in r.inputs:
            manifest = {k: plain(r.inputs[k], secrets) for k in _MANIFEST_FIELDS if k in r.inputs}
            if manifest.get("kind") == "Secret":
                for key in SECRET_DATA_FIELDS:
                    if isinstance(manifest.get(key), dict):
                        manifest[key] = {k: SECRET for k in manifest[key]}
                    elif key in manifest:
                        manifest[key] = SECRET
            out.append(manifest)
    return out


def _document(value: Any) -> Any:
    """A policy document input (a JSON string or an object) as an object; None when absent."""
    value = unwrap_secrets(value)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "unnamed"


# Which input of which type holds an IAM policy document (pulumi-aws input names).
_IAM_DOCUMENT_INPUTS: dict[str, tuple[tuple[str, str], ...]] = {
    IAM_ROLE: (("assumeRolePolicy", "trust"),),
    IAM_POLICY: (("policy", "policy"),),
    IAM_ROLE_POLICY: (("policy", "inline"),),
    IAM_USER_POLICY: (("policy", "inline"),),
    IAM_GROUP_POLICY: (("policy", "inline"),),
    BUCKET_POLICY: (("policy", "bucket-policy"),),
    KMS_KEY: (("policy", "key-policy"),),
    ECR_REPOSITORY_POLICY: (("policy", "resource-policy"),),
}


def _unknown_placeholders(registrations: list[Registration]) -> dict[str, str]:
    """Each computed (mock-made) value -> the placeholder a rendered document carries instead of it."""
    from tools.plan.writer import mock_made

    out: dict[str, str] = {}
    by_urn = {r.urn: r for r in registrations}
    for urn, values in mock_made(registrations).items():
        r = by_urn[urn]
        for value in values:
            key = "id" if value == r.id else next((k for k, v in r.outputs.items() if v == value), "output")
            out[value] = f"<unknown until deploy: {key} of {r.type} {r.name}>"
    return out


def _mark(value: Any, placeholders: dict[str, str], found: list[str], path: str = "") -> Any:
    if isinstance(value, str):
        for made, text in placeholders.items():
            if made in value:
                found.append(f"{path}: {text}")
                return value.replace(made, text) if value != made else text
        return value
    if isinstance(value, dict):
        return {k: _mark(v, placeholders, found, f"{path}.{k}" if path else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark(v, placeholders, found, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def iam_documents_with_unknowns(
    registrations: list[Registration],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """:func:`iam_documents` with every computed value (an ARN no resource has yet) named as unknown, and per file
    the paths that hold one (``Statement[0].Resource[1]: <unknown until deploy: arn of aws:s3/bucket:Bucket ...>``)."""
    placeholders = dict(sorted(_unknown_placeholders(registrations).items(), key=lambda kv: -len(kv[0])))
    docs: dict[str, dict[str, Any]] = {}
    unknowns: dict[str, list[str]] = {}
    for name, doc in iam_documents(registrations).items():
        found: list[str] = []
        docs[name] = _mark(doc, placeholders, found)
        if found:
            unknowns[name] = found
    return docs, unknowns


def iam_documents(registrations: list[Registration]) -> dict[str, dict[str, Any]]:
    """Every IAM document the program creates, as ``{file name: document}``.

    Role trust policies (``<role>.trust.json``), managed policies (``<policy>.policy.json``), inline role
    policies (``<resource>.inline.json``, and ``<role>.inline-<name>.json`` for a role's ``inlinePolicies``),
    bucket and key policies: the inputs of ``_IAM_DOCUMENT_INPUTS`` that hold a document. Names are the
    Pulumi resource names, so ``parliament`` or ``aws accessanalyzer validate-policy`` can run file by file.
    """
    out: dict[str, dict[str, Any]] = {}
    for r in registrations:
        if not r.custom:
            continue
        for key, kind in _IAM_DOCUMENT_INPUTS.get(r.type, ()):
            doc = _document(r.inputs.get(key))
            if doc is not None:
                out[f"{_file_name(r.name)}.{kind}.json"] = doc
        if r.type == IAM_ROLE:
            for inline in unwrap_secrets(r.inputs.get("inlinePolicies")) or []:
                doc = _document(inline.get("policy")) if isinstance(inline, dict) else None
                if doc is not None:
                    out[f"{_file_name(r.name)}.inline-{_file_name(str(inline.get('name') or 'policy'))}.json"] = doc
    return dict(sorted(out.items()))


def dashboards(registrations: list[Registration]) -> dict[str, Any]:
    """Every CloudWatch dashboard body, ``{dashboard name: body}`` (the body parsed from its JSON string)."""
    out: dict[str, Any] = {}
    for r in registrations:
        if r.type == DASHBOARD and r.custom:
            body = _document(r.inputs.get("dashboardBody"))
            out[_file_name(str(r.inputs.get("dashboardName") or r.name))] = body if body is not None else {}
    return dict(sorted(out.items()))


def _write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def validate_written_manifests(registrations: list[Registration], out_dir: Path) -> dict[str, Any]:
    """Each manifest ``--out`` writes, validated against its upstream schema (:mod:`tools.plan.k8s_schema`)."""
    from tools.plan.k8s_schema import validate_manifests

    addon = next(
        (
            r.inputs.get("addonVersion")
            for r in registrations
            if r.type == EKS_ADDON and r.inputs.get("addonName") == "amazon-sagemaker-hyperpod-inference"
        ),
        None,
    )
    k8s_version = next((str(r.inputs.get("version")) for r in registrations if r.type == EKS_COMPONENT), "1.35")
    results, advisories = validate_manifests(
        redacted_manifests(registrations), addon_version=addon, kubernetes_version=k8s_version
    )
    report = {
        "objects": sorted((r.to_json() for r in results), key=lambda r: (r["kind"], str(r["namespace"]), r["name"])),
        "advisories": advisories,
    }
    _write_json(out_dir / "kubernetes" / "validation.json", report)
    return report


def write_outputs(registrations: list[Registration], out_dir: Path, region: str = "us-east-1") -> list[Path]:
    """Write what reviewers and external validators read; return the paths.

    ``kubernetes/<kind>-<namespace>-<name>.yaml``, ``cloudformation.yaml`` (the aws-native resources, property
    names from ``region``'s cfn-lint schemas), ``iam/<resource>.<kind>.json`` (every IAM document) and
    ``dashboards/<name>.json`` (every CloudWatch dashboard body), ``kubernetes/validation.json`` (each manifest
    against its upstream schema: valid, invalid with errors, or cannot be validated offline) and
    ``iam-unknowns.json`` (which IAM document values are computed at deploy: they read
    ``<unknown until deploy: arn of <type> <name>>`` instead of a made-up ARN). ``plan.json`` is written by the
    preview.
    """
    written: list[Path] = []
    out_dir.mkdir(parents=True, exist_ok=True)
    k8s_dir = out_dir / "kubernetes"
    for manifest in redacted_manifests(registrations):
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
    docs, unknowns = iam_documents_with_unknowns(registrations)
    for fname, doc in docs.items():
        written.append(_write_json(out_dir / "iam" / fname, doc))
    if unknowns:
        written.append(_write_json(out_dir / "iam-unknowns.json", unknowns))
    for name, body in dashboards(registrations).items():
        written.append(_write_json(out_dir / "dashboards" / f"{name}.json", body))
    if any(p.parent == k8s_dir for p in written):
        validate_written_manifests(registrations, out_dir)
        written.append(k8s_dir / "validation.json")
    return written


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.plan.render", "python -m tools.cli.preview --stack <name> --out DIR")
