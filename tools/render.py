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

from tools.mocks import Registration

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


def to_cfn_properties(value: Any, *, keep_keys: bool = False) -> Any:
    """camelCase aws-native inputs -> PascalCase CloudFormation properties."""
    if isinstance(value, dict):
        return {
            (k if keep_keys else _pascal(k)): to_cfn_properties(v, keep_keys=k in _MAP_PROPERTIES)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [to_cfn_properties(v) for v in value]
    return value


def logical_id(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", name) if part)


def cloudformation_template(registrations: list[Registration]) -> dict[str, Any]:
    resources = {
        logical_id(r.name): {"Type": cfn_type(r.type), "Properties": to_cfn_properties(r.inputs)}
        for r in registrations
        if r.type.startswith("aws-native:") and r.custom
    }
    return {"AWSTemplateFormatVersion": "2010-09-09", "Resources": resources}


def kubernetes_manifests(registrations: list[Registration]) -> list[dict[str, Any]]:
    out = []
    for r in registrations:
        if r.type.startswith("kubernetes:") and r.custom and "kind" in r.inputs:
            out.append(
                {
                    k: v
                    for k, v in r.inputs.items()
                    if k
                    in (
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
                }
            )
    return out


def write_outputs(registrations: list[Registration], out_dir: Path) -> list[Path]:
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
    template = cloudformation_template(registrations)
    if template["Resources"]:
        path = out_dir / "cloudformation.yaml"
        path.write_text(yaml.safe_dump(template, sort_keys=False), encoding="utf-8")
        written.append(path)
    return written
