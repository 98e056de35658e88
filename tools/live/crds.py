"""The CustomResourceDefinitions the live API server gets, built from the same files the offline checks read.

- The operator's InferenceEndpointConfig and JumpStartModel CRDs of one release (``policies/compatibility.yaml``
  ``crdReleases``: the files in ``../shared/crds``), as published, with two changes an API server without the
  operator needs: ``spec.conversion`` becomes ``None`` (the published conversion webhook's service name is a Helm
  placeholder, and no webhook runs here; the objects are created at ``v1``, the storage version, so nothing
  converts), and the Helm-templated ``cert-manager.io/inject-ca-from`` annotation is dropped.
- :func:`operator_crds` with ``addon_version``: the CRD of that add-on's operator release *plus the overlay fields
  it carries* (``policies/crd_overlays``, the fields AWS documents for releases without a public CRD): the
  "docs-shaped" CRD the offline verdict ``valid-against-docs-schema`` stands on, so the server says whether those
  overlays are structural schemas at all and what it keeps of an object that uses them.
- The AWS Load Balancer Controller's TargetGroupBinding CRD (``third-party/``), as published.
- InferenceGatewayConfig: no CRD is published; :func:`gateway_crd` wraps the spec schema the AWS Inference Gateway
  page documents (``policies/crd_overlays/inferencegatewayconfig-v1alpha1.yaml``) in a CRD of the documented
  group, version, names and status subresource.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from policies import compatibility as compat
from policies import crd_overlays
from policies.yaml_files import load_yaml_file
from tools.plan.crd_schema import core_schema_of, crd_path
from tools.plan.k8s_schema import TGB_CRD

OPERATOR_KINDS = {"InferenceEndpointConfig": "IEC", "JumpStartModel": "JSM"}
HELM_ANNOTATION = "cert-manager.io/inject-ca-from"


def _servable(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out.pop("status", None)
    out["spec"]["conversion"] = {"strategy": "None"}
    annotations = out.get("metadata", {}).get("annotations") or {}
    annotations.pop(HELM_ANNOTATION, None)
    return out


def operator_crds(crds_dir: Path, addon_version: str | None, *, overlays: bool) -> list[dict[str, Any]]:
    """IEC and JSM CRDs for ``addon_version`` (None: the newest published), with its overlay fields when ``overlays``."""
    out = []
    for kind in OPERATOR_KINDS:
        path = crd_path(crds_dir, kind, addon_version)
        doc = _servable(load_yaml_file(path))
        if overlays:
            operator = compat.addon(addon_version).operator_version if addon_version else None
            fields = crd_overlays.active_fields(kind, operator)
            if addon_version is not None:
                fields = [(o, f) for o, f in fields if crd_overlays.carried(f, o, addon_version) is not False]
            version = next(v for v in doc["spec"]["versions"] if v["name"] == "v1")
            props = version["schema"]["openAPIV3Schema"]["properties"]
            props["spec"] = crd_overlays.apply(props["spec"], fields, core_schema_of(crds_dir))
        out.append(doc)
    return out


def tgb_crd(crds_dir: Path) -> dict[str, Any]:
    return _servable(load_yaml_file(crds_dir / TGB_CRD))


def gateway_crd() -> dict[str, Any]:
    """The InferenceGatewayConfig CRD as the AWS page documents it (group, v1alpha1, ``igwc``, status subresource)."""
    docs = crd_overlays.gateway_config_schema()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "inferencegatewayconfigs.inference.sagemaker.aws.amazon.com"},
        "spec": {
            "group": "inference.sagemaker.aws.amazon.com",
            "names": {
                "kind": "InferenceGatewayConfig",
                "listKind": "InferenceGatewayConfigList",
                "plural": "inferencegatewayconfigs",
                "singular": "inferencegatewayconfig",
                "shortNames": ["igwc"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": copy.deepcopy(docs.spec),
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            },
                        }
                    },
                }
            ],
        },
    }


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.live.crds", "python -m tools.live.build, then pytest -n 0 -m live_apiserver tests/live")
