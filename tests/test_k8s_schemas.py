"""Every Kubernetes object of every reference stack validates against its upstream schema.

Operator kinds against their CRD (for the pinned add-on), TargetGroupBindings against the LB controller's
CRD (``../shared/crds/third-party``), core kinds against the Kubernetes OpenAPI schemas that kubernetes-validate
ships. Kinds without a public schema are reported as such, never as valid.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import REGIONAL_STACKS
from tools.plan.k8s_schema import kubernetes_validate_version, validate_manifests, validate_object
from tools.plan.render import kubernetes_manifests

TGB_KIND = "TargetGroupBinding"


def _addon_version(run: Any) -> str | None:
    addons = [
        r
        for r in run.of_type("aws:eks/addon:Addon")
        if r.inputs.get("addonName") == "amazon-sagemaker-hyperpod-inference"
    ]
    return addons[0].inputs.get("addonVersion") if addons else None


def _k8s_version(run: Any) -> str:
    eks = run.of_type("eks:index:Cluster")
    return str(eks[0].inputs.get("version")) if eks else "1.35"


@pytest.mark.parametrize("stack", REGIONAL_STACKS)
def test_every_object_validates_against_its_schema(stack, stack_runs, crds_dir) -> None:
    run = stack_runs[stack]
    manifests = kubernetes_manifests(run.registrations)
    assert manifests, f"{stack} registered no Kubernetes objects"
    results, _ = validate_manifests(
        manifests, crds_dir=crds_dir, addon_version=_addon_version(run), kubernetes_version=_k8s_version(run)
    )
    invalid = [(r.kind, r.name, r.errors) for r in results if r.outcome == "invalid"]
    assert invalid == []
    unknown = sorted({r.kind for r in results if r.outcome == "cannot-validate-offline"})
    assert unknown == [], unknown
    assert {r.kind for r in results if r.outcome == "valid"} >= {
        "Role",
        "RoleBinding",
    }  # core kinds every stack has (staging has no Namespace: its teams' come from task governance)


@pytest.mark.parametrize("stack", [s for s in REGIONAL_STACKS if s in ("staging", "prod")])
def test_router_target_bindings_name_their_ports(stack, stack_runs, crds_dir) -> None:
    """The CRD requires ``ports`` in every ingress rule (``required: [from, ports]``); router targets had none."""
    tgbs = [m for m in kubernetes_manifests(stack_runs[stack].registrations) if m["kind"] == TGB_KIND]
    assert tgbs, f"{stack} has no TargetGroupBinding"
    for tgb in tgbs:
        for rule in tgb["spec"]["networking"]["ingress"]:
            assert rule["ports"], tgb["metadata"]["name"]
        result = validate_object(tgb, crds_dir=crds_dir)
        assert (result.outcome, result.errors) == ("valid", []), tgb["metadata"]["name"]


def test_a_binding_without_ports_is_invalid(crds_dir) -> None:
    tgb = {
        "apiVersion": "elbv2.k8s.aws/v1beta1",
        "kind": TGB_KIND,
        "metadata": {"name": "x", "namespace": "y"},
        "spec": {
            "serviceRef": {"name": "svc", "port": 8000},
            "targetGroupARN": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/t/0123456789abcdef",
            "targetType": "ip",
            "networking": {"ingress": [{"from": [{"securityGroup": {"groupID": "sg-0123"}}]}]},
        },
    }
    result = validate_object(tgb, crds_dir=crds_dir)
    assert result.outcome == "invalid"
    assert result.errors == ["spec.networking.ingress.0: 'ports' is a required property"]


def test_a_misspelt_core_field_is_invalid() -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "n"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbz": ["get"]}],
    }
    result = validate_object(role, crds_dir=None)
    assert result.outcome == "invalid" and "verbs" in result.errors[0]


def test_kinds_without_a_public_schema_are_not_called_valid(crds_dir) -> None:
    other = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert validate_object(other, crds_dir=crds_dir).outcome == "cannot-validate-offline"
    # the InferenceGatewayConfig has no CRD: it is judged by the AWS page's schema, and says so
    gw = {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1alpha1",
        "kind": "InferenceGatewayConfig",
        "metadata": {"name": "g"},
    }
    result = validate_object(gw, crds_dir=crds_dir)
    assert (result.outcome, result.errors) == (
        "invalid",
        ["spec.: 'bbr' is a required property", "spec.: 'schedulers' is a required property"],
    )
    gw["spec"] = {"bbr": {"enabled": True}, "schedulers": [{"name": "s", "modelSelector": {}, "modelName": "m"}]}
    result = validate_object(gw, crds_dir=crds_dir)
    assert result.outcome == "valid-against-docs-schema"
    assert result.schema.startswith("policies/crd_overlays/inferencegatewayconfig-v1alpha1.yaml (docs schema; https://")


def test_missing_crds_are_reported_not_passed(tmp_path) -> None:
    tgb = {"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": TGB_KIND, "metadata": {"name": "x"}, "spec": {}}
    result = validate_object(tgb, crds_dir=tmp_path / "absent")
    assert result.outcome == "cannot-validate-offline" and "not found" in result.schema


def test_validator_version_for_the_stack() -> None:
    assert kubernetes_validate_version("1.35") == ("1.35.0", None)
    version, advisory = kubernetes_validate_version("1.99")
    assert advisory is not None and version in advisory and "1.99" in advisory
