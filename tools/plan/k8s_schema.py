"""Validate every Kubernetes object the program creates against its upstream schema, offline.

Four outcomes per object (never "valid" by default), each naming the schema it rests on:

* ``valid`` / ``invalid`` (with the schema's errors) when a public schema exists:
  - the inference operator's kinds (InferenceEndpointConfig, JumpStartModel): their CRD in ``../shared/crds``
    for the pinned add-on (:mod:`tests.crd_schema`'s rules: closed objects, defaulted fields not required); an
    object setting a field of operator 3.4-3.7 (no public CRD) is ``valid-against-docs-schema`` against the
    release's overlay (``policies/crd_overlays``, sources named), ``cannot-validate-offline`` where the overlay
    cannot tell (a path no source states, an add-on whose operator is inferred), and ``invalid`` when the pinned
    release lacks the field: never ``valid`` against a schema lacking one of its fields;
  - TargetGroupBinding: the CRD the AWS Load Balancer Controller v2.13.0 publishes
    (``../shared/crds/third-party/elbv2.k8s.aws_targetgroupbindings.yaml``), the whole object's ``spec``, closed;
  - built-in kinds (Namespace, Secret, Role, RoleBinding, NetworkPolicy: core and `*.k8s.io`): the Kubernetes OpenAPI
    schemas the ``kubernetes-validate`` package ships, strict (unknown fields are errors), for the stack's
    Kubernetes version or, when the pinned release does not ship it, the newest it has (reported as an advisory);
* ``valid-against-docs-schema`` / ``invalid`` for the InferenceGatewayConfig (no CRD is published): its spec
  against the schema the AWS Inference Gateway page documents (``policies/crd_overlays/
  inferencegatewayconfig-v1alpha1.yaml``), closed;
* ``cannot-validate-offline`` for kinds without any schema, and when ``../shared/crds`` is absent: named, never
  counted as valid.
"""

from __future__ import annotations

import copy
import functools
import importlib.metadata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.yaml_files import load_yaml_file

CRDS_DIR = Path(__file__).resolve().parents[3] / "shared" / "crds"
TGB_CRD = Path("third-party") / "elbv2.k8s.aws_targetgroupbindings.yaml"
OPERATOR_KINDS = ("InferenceEndpointConfig", "JumpStartModel")
OPERATOR_GROUP = "inference.sagemaker.aws.amazon.com"


@dataclass(frozen=True)
class Validation:
    kind: str
    name: str
    namespace: str | None
    outcome: str  # "valid" | "valid-against-docs-schema" | "invalid" | "cannot-validate-offline"
    schema: str
    errors: list[str] = field(default_factory=list)
    advisories: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "outcome": self.outcome,
            "schema": self.schema,
            "errors": self.errors,
            "advisories": self.advisories,
        }


def kubernetes_validate_version(wanted: str) -> tuple[str, str | None]:
    """(the schema version to use, an advisory when it is not ``wanted``) from the versions the package ships."""
    import kubernetes_validate.utils as kv_utils

    shipped = sorted(set(kv_utils.all_versions()), key=lambda v: tuple(int(x) for x in v.split(".")))
    major_minor = ".".join(wanted.split(".")[:2])
    exact = [v for v in shipped if v.startswith(major_minor + ".") or v == major_minor]
    if exact:
        return exact[-1], None
    newest = shipped[-1]
    release = importlib.metadata.version("kubernetes-validate")
    return newest, (
        f"kubernetes-validate {release} ships no schemas for Kubernetes {major_minor}; core objects were checked "
        f"against {newest}, the newest it has"
    )


@functools.cache
def _tgb_validator(crds_dir: Path) -> Any:
    import jsonschema

    from tools.plan.crd_schema import strict

    doc = load_yaml_file(crds_dir / TGB_CRD)
    version = next(v for v in doc["spec"]["versions"] if v["name"] == "v1beta1")
    spec = copy.deepcopy(version["schema"]["openAPIV3Schema"]["properties"]["spec"])
    return jsonschema.Draft7Validator(strict(spec))


@functools.cache
def _gateway_validator() -> Any:
    import jsonschema

    from policies import crd_overlays
    from tools.plan.crd_schema import strict

    return jsonschema.Draft7Validator(strict(crd_overlays.gateway_config_schema().spec))


def _errors(validator: Any, value: Any, prefix: str) -> list[str]:
    errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{prefix}{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def validate_object(  # noqa: PLR0911 - one return per schema family and outcome
    obj: dict[str, Any],
    *,
    crds_dir: Path | None = CRDS_DIR,
    addon_version: str | None = None,
    kubernetes_version: str = "1.35",
) -> Validation:
    """The outcome of one manifest ``{apiVersion, kind, metadata, spec|...}`` against its upstream schema."""
    api, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    meta = obj.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), meta.get("namespace")

    def result(
        outcome: str, schema: str, errors: list[str] | None = None, advisories: list[str] | None = None
    ) -> Validation:
        return Validation(kind, name, namespace, outcome, schema, errors or [], advisories or [])

    have_crds = crds_dir is not None and crds_dir.is_dir()
    if api.startswith(f"{OPERATOR_GROUP}/") and kind in OPERATOR_KINDS:
        if not have_crds:
            return result("cannot-validate-offline", f"the operator's CRD (../shared/crds not found at {crds_dir})")
        from tools.plan.crd_schema import classify_cr

        assert crds_dir is not None
        verdict = classify_cr(obj, crds_dir, addon_version)
        return result(verdict.outcome, verdict.schema, verdict.errors, verdict.advisories)
    if api == f"{OPERATOR_GROUP}/v1alpha1" and kind == "InferenceGatewayConfig":
        from policies import crd_overlays

        docs = crd_overlays.gateway_config_schema()
        errs = _errors(_gateway_validator(), obj.get("spec") or {}, "spec.")
        return result("invalid" if errs else "valid-against-docs-schema", docs.describe(), errs)
    if api == "elbv2.k8s.aws/v1beta1" and kind == "TargetGroupBinding":
        if not have_crds:
            return result("cannot-validate-offline", f"{TGB_CRD} (../shared/crds not found at {crds_dir})")
        assert crds_dir is not None
        errs = _errors(_tgb_validator(crds_dir), obj.get("spec") or {}, "spec.")
        return result("invalid" if errs else "valid", f"{TGB_CRD} (LBC v2.13.0)", errs)
    group = api.split("/", maxsplit=1)[0] if "/" in api else ""
    if "." not in group or group.endswith(".k8s.io"):  # the built-in API groups (networking.k8s.io, rbac, ...)
        import kubernetes_validate

        version, _ = kubernetes_validate_version(kubernetes_version)
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            return result("cannot-validate-offline", f"no Kubernetes {version} schema for {api}/{kind}")
        except kubernetes_validate.ValidationError as err:
            where = ".".join(map(str, getattr(err, "path", []) or []))
            message = str(getattr(err, "message", err)).splitlines()[0]
            return result("invalid", f"Kubernetes {version} OpenAPI (kubernetes-validate)", [f"{where}: {message}"])
        return result("valid", f"Kubernetes {version} OpenAPI (kubernetes-validate)")
    return result("cannot-validate-offline", f"no public schema for {api}/{kind}")


def validate_manifests(
    manifests: list[dict[str, Any]],
    *,
    crds_dir: Path | None = CRDS_DIR,
    addon_version: str | None = None,
    kubernetes_version: str = "1.35",
) -> tuple[list[Validation], list[str]]:
    """Every manifest's outcome, and the advisories (a Kubernetes version the validator does not ship)."""
    results = [
        validate_object(m, crds_dir=crds_dir, addon_version=addon_version, kubernetes_version=kubernetes_version)
        for m in manifests
    ]
    advisories = []
    if any(r.schema.startswith("Kubernetes ") for r in results):
        _, advisory = kubernetes_validate_version(kubernetes_version)
        if advisory:
            advisories.append(advisory)
    return results, advisories


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command(
        "tools.plan.k8s_schema",
        "python -m tools.cli.preview --stack <name> --out DIR (writes kubernetes/validation.json)",
    )
