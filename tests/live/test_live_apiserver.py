"""Every reference stack's Kubernetes objects against a real kube-apiserver (``pytest -m live_apiserver``).

For each stack the server holds the CRDs of the operator release the stack pins, built from the same files the
offline checks read (:mod:`tools.live.crds`: the published CRD plus the overlay fields the pinned add-on carries),
the LB controller's TargetGroupBinding CRD and the InferenceGatewayConfig CRD of the AWS page. Every object is
applied with server-side apply, ``dryRun=All`` first and then for real, and the server's verdict is compared with
the offline one (:func:`tools.plan.k8s_schema.validate_object`, the check ``hpi preview --out`` writes):

- the server refuses (an error status, or a field it prunes: a pruned field is *refused*, not valid) exactly when
  the offline check says ``invalid``;
- an object the server keeps whole is never ``invalid`` offline.

The 3.6 ``inferenceGateway`` field against the published 3.3 CRD is watched being pruned, and the offline check for
the 3.3 operator refuses it too; defaulting, NetworkPolicy and RBAC validity are checked the same way.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REGIONAL_STACKS
from tools.live.cluster import ApiClient, ApplyResult
from tools.live.crds import gateway_crd, operator_crds, tgb_crd
from tools.plan.k8s_schema import Validation, validate_object
from tools.plan.render import kubernetes_manifests

pytestmark = pytest.mark.live_apiserver

# The add-on whose operator is exactly the published 3.3 CRD's release (policies/compatibility.yaml).
ADDON_OF_33 = "v1.4.0-eksbuild.1"
CRD_API = "apiextensions.k8s.io/v1"


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


def install_crds(api: ApiClient, crds: list[dict[str, Any]]) -> list[ApplyResult]:
    """Replace each CRD with ``crds`` (delete, wait until gone, create, wait Established); the results of creating."""
    results = []
    for crd in crds:
        ref = {"apiVersion": CRD_API, "kind": "CustomResourceDefinition", "metadata": {"name": crd["metadata"]["name"]}}
        if api.delete(ref) in (200, 202):
            api.wait_gone(ref)
        result = api.apply(crd, dry_run=False, field_validation="Strict")
        results.append(result)
        if result.status < 400:
            api.wait_established(crd["metadata"]["name"])
    group_versions = {f"{c['spec']['group']}/{v['name']}" for c in crds for v in c["spec"]["versions"]}
    for gv in group_versions:
        api.resources(gv, refresh=True)
    return results


def ensure_namespace(api: ApiClient, name: str) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    result = api.apply(ns, dry_run=False)
    assert result.status < 400, result.errors


@dataclass
class Verdict:
    """One object: what the offline check said and what the server did (dry-run and real apply)."""

    manifest: dict[str, Any]
    offline: Validation
    dry_run: ApplyResult
    real: ApplyResult

    @property
    def label(self) -> str:
        meta = self.manifest["metadata"]
        return f"{self.manifest['kind']}/{meta.get('namespace') or '-'}/{meta['name']}"

    def disagreement(self) -> str | None:
        server_refuses = self.dry_run.refused
        offline_refuses = self.offline.outcome == "invalid"
        if server_refuses == offline_refuses:
            return None
        return (
            f"{self.label}: server {'refuses' if server_refuses else 'keeps it whole'} "
            f"({self.dry_run.errors or 'no errors'}), offline {self.offline.outcome} ({self.offline.errors}) "
            f"against {self.offline.schema}"
        )


def apply_stack(api: ApiClient, crds_dir: Path, run: Any) -> tuple[list[Verdict], list[ApplyResult]]:
    """Install the stack's CRDs, apply every object (dry-run, then for real), then delete what was created."""
    addon = _addon_version(run)
    crd_results = install_crds(api, [*operator_crds(crds_dir, addon, overlays=True), tgb_crd(crds_dir), gateway_crd()])
    manifests = kubernetes_manifests(run.registrations)
    for ns in sorted({m["metadata"]["namespace"] for m in manifests if m["metadata"].get("namespace")}):
        ensure_namespace(api, ns)  # namespaces made outside the stack (task governance, the add-on) exist first
    verdicts = []
    for manifest in manifests:
        offline = validate_object(
            manifest, crds_dir=crds_dir, addon_version=addon, kubernetes_version=_k8s_version(run)
        )
        dry = api.apply(manifest, dry_run=True)
        real = api.apply(manifest, dry_run=False)
        verdicts.append(Verdict(manifest, offline, dry, real))
    for v in reversed(verdicts):
        if v.manifest["kind"] != "Namespace" and v.real.status < 400:
            api.delete(v.manifest)
    return verdicts, crd_results


@pytest.fixture(scope="session")
def stack_verdicts(api: ApiClient, crds_dir: Path, stack_runs: dict[str, Any]) -> dict[str, list[Verdict]]:
    out = {}
    for stack in REGIONAL_STACKS:
        verdicts, crd_results = apply_stack(api, crds_dir, stack_runs[stack])
        refused = [(r.body.get("message"), r.errors) for r in crd_results if r.status >= 400]
        assert refused == [], f"{stack}: the server refused a CRD: {refused}"
        out[stack] = verdicts
    return out


def test_the_server_is_the_pinned_kubernetes(api: ApiClient) -> None:
    version = api.request("GET", "/version").json()
    assert (version["major"], version["minor"]) == ("1", "35"), version


@pytest.mark.parametrize("stack", REGIONAL_STACKS)
def test_every_object_is_accepted_whole_by_the_server(stack: str, stack_verdicts: dict[str, list[Verdict]]) -> None:
    verdicts = stack_verdicts[stack]
    assert verdicts, f"{stack} renders no Kubernetes object"
    problems = [
        (v.label, stage, r.status, r.errors, r.warnings)
        for v in verdicts
        for stage, r in (("dry-run", v.dry_run), ("apply", v.real))
        if r.refused
    ]
    assert problems == []
    for v in verdicts:  # a real apply stores what the dry run promised
        assert (v.real.pruned, v.real.defaulted) == (v.dry_run.pruned, v.dry_run.defaulted), v.label


@pytest.mark.parametrize("stack", REGIONAL_STACKS)
def test_offline_verdicts_agree_with_the_server(stack: str, stack_verdicts: dict[str, list[Verdict]]) -> None:
    disagreements = [d for v in stack_verdicts[stack] if (d := v.disagreement())]
    assert disagreements == []
    assert {v.offline.outcome for v in stack_verdicts[stack]} <= {"valid", "valid-against-docs-schema"}


def test_every_rendered_kind_reached_the_server(stack_verdicts: dict[str, list[Verdict]]) -> None:
    kinds = {v.manifest["kind"] for vs in stack_verdicts.values() for v in vs if v.real.status in (200, 201)}
    assert kinds >= {
        "Namespace",
        "Role",
        "RoleBinding",
        "Secret",
        "InferenceEndpointConfig",
        "InferenceGatewayConfig",
        "TargetGroupBinding",
    }


# --- the pruning question: the 3.6 field against the published 3.3 CRD --------------------------------------------


def _gateway_endpoint(stack_runs: dict[str, Any]) -> dict[str, Any]:
    iecs = [m for m in kubernetes_manifests(stack_runs["prod"].registrations) if m["kind"] == "InferenceEndpointConfig"]
    found = [m for m in iecs if (m.get("spec") or {}).get("inferenceGateway")]
    assert found, "prod renders no InferenceEndpointConfig with spec.inferenceGateway"
    return copy.deepcopy(found[0])


@pytest.fixture(scope="session")
def published_33(api: ApiClient, crds_dir: Path) -> None:
    """The server holds the published 3.3 CRDs exactly (no overlay)."""
    results = install_crds(api, operator_crds(crds_dir, ADDON_OF_33, overlays=False))
    assert [r.status for r in results if r.status >= 400] == []


def test_inference_gateway_against_the_33_crd_is_refused_by_the_server_and_offline(
    api: ApiClient, crds_dir: Path, stack_runs: dict[str, Any], published_33: None, stack_verdicts: Any
) -> None:
    """The answer, watched: the field is never kept. A server-side apply (the Kubernetes provider's default, and
    this suite's) is refused outright; a plain create with the server's default field validation (``Warn``:
    ``kubectl create``, client-side apply, the provider with server-side apply off) stores the object *without* the
    field and says so in a warning; ``Strict`` (kubectl's default) refuses it. Offline, the check for the same
    schema (operator 3.3) refuses it, naming the release that adds the field."""
    iec = _gateway_endpoint(stack_runs)
    ensure_namespace(api, iec["metadata"]["namespace"])
    ssa = api.apply(iec, dry_run=True)
    assert ssa.status == 500 and ssa.refused
    assert ".spec.inferenceGateway: field not declared in schema" in str(ssa.body.get("message")), ssa.body

    created = api.create(iec, dry_run=False)
    assert created.status == 201, created.errors
    assert created.pruned == ["spec.inferenceGateway"] and created.refused
    assert any("unknown field" in w and "spec.inferenceGateway" in w for w in created.warnings), created.warnings
    stored = api.get(iec)
    assert stored is not None and "inferenceGateway" not in stored["spec"]
    assert stored["spec"]["modelName"] == iec["spec"]["modelName"]  # the rest was kept
    api.delete(iec)
    api.wait_gone(iec)

    strict = api.create(iec, dry_run=True, field_validation="Strict")
    assert strict.status == 400 and 'unknown field "spec.inferenceGateway"' in str(strict.body.get("message"))

    offline = validate_object(iec, crds_dir=crds_dir, addon_version=ADDON_OF_33)
    assert offline.outcome == "invalid"
    assert [e for e in offline.errors if e.startswith("spec.inferenceGateway: not in the schema of operator 3.3")]


def test_without_the_field_the_33_crd_keeps_the_endpoint_whole(
    api: ApiClient, crds_dir: Path, stack_runs: dict[str, Any], published_33: None, stack_verdicts: Any
) -> None:
    """The must-not-match case: the same endpoint without ``inferenceGateway`` (and with intelligent routing, its
    3.3 equivalent) is kept whole by the server and valid offline."""
    iec = _gateway_endpoint(stack_runs)
    del iec["spec"]["inferenceGateway"]
    ensure_namespace(api, iec["metadata"]["namespace"])
    dry = api.apply(iec, dry_run=True, field_validation="Strict")
    assert (dry.status, dry.pruned) == (200, []) or (dry.status, dry.pruned) == (201, []), dry.errors
    assert validate_object(iec, crds_dir=crds_dir, addon_version=ADDON_OF_33).outcome in ("valid",)


# --- mutations: each is refused by the server and by the offline check, or by neither ---------------------------


def _first(stack_runs: dict[str, Any], stack: str, kind: str) -> dict[str, Any]:
    found = [m for m in kubernetes_manifests(stack_runs[stack].registrations) if m["kind"] == kind]
    assert found, f"{stack} renders no {kind}"
    return copy.deepcopy(found[0])


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    node = obj
    *parents, leaf = path.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if value is _DELETE:
        del node[leaf]
    else:
        node[leaf] = value
    return obj


_DELETE = object()

NETWORK_POLICY = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {"name": "hpi-live-np", "namespace": "inference"},
    "spec": {
        "podSelector": {"matchLabels": {"app": "x"}},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"namespaceSelector": {}}], "ports": [{"port": 8000, "protocol": "TCP"}]}],
    },
}

# (id, stack, kind or a literal object, path, value, server refuses?)
MUTATIONS: list[tuple[str, str, Any, str, Any, bool]] = [
    ("iec-misspelt-field", "dev", "InferenceEndpointConfig", "spec.replicaz", 2, True),
    ("iec-wrong-type", "dev", "InferenceEndpointConfig", "spec.replicas", "two", True),
    ("tgb-without-ports", "prod", "TargetGroupBinding", "spec.networking.ingress.0.ports", _DELETE, True),
    ("tgb-unknown-field", "prod", "TargetGroupBinding", "spec.targetGroupArn", "x", True),
    ("igwc-unknown-field", "prod", "InferenceGatewayConfig", "spec.routing", {"x": 1}, True),
    ("igwc-without-schedulers", "prod", "InferenceGatewayConfig", "spec.schedulers", _DELETE, True),
    ("role-unknown-field", "dev", "Role", "rules.0.verb", ["get"], True),
    ("rolebinding-unknown-field", "dev", "RoleBinding", "roleRef.namespace", "x", True),
    ("networkpolicy-whole", "dev", NETWORK_POLICY, "metadata.labels", {"app": "x"}, False),
    ("networkpolicy-unknown-field", "dev", NETWORK_POLICY, "spec.ingress.0.port", 8000, True),
    ("networkpolicy-wrong-type", "dev", NETWORK_POLICY, "spec.podSelector", "app=x", True),
    ("role-whole", "dev", "Role", "metadata.labels", {"team": "x"}, False),
]


@pytest.mark.parametrize(
    ("case", "stack", "kind", "path", "value", "refused"), MUTATIONS, ids=[m[0] for m in MUTATIONS]
)
def test_mutation_verdicts_agree(
    case: str,
    stack: str,
    kind: Any,
    path: str,
    value: Any,
    refused: bool,
    api: ApiClient,
    crds_dir: Path,
    stack_runs: dict[str, Any],
    stack_verdicts: Any,
) -> None:
    run = stack_runs[stack]
    addon = _addon_version(run)
    install_crds(api, [*operator_crds(crds_dir, addon, overlays=True), tgb_crd(crds_dir), gateway_crd()])
    obj = copy.deepcopy(kind) if isinstance(kind, dict) else _first(stack_runs, stack, kind)
    _set(obj, path, value)
    ensure_namespace(api, obj["metadata"]["namespace"])
    server = api.apply(obj, dry_run=True)
    offline = validate_object(obj, crds_dir=crds_dir, addon_version=addon, kubernetes_version=_k8s_version(run))
    assert server.refused is refused, (server.status, server.errors, server.warnings)
    assert (offline.outcome == "invalid") is refused, (offline.outcome, offline.errors)


def _schema_default(schema: dict[str, Any], path: str) -> Any:
    """The ``default`` the CRD's spec schema declares at a dotted path (list indexes skipped), or None."""
    node: Any = schema
    for part in path.removeprefix("spec.").split("."):
        name = part.split("[")[0]
        node = (node.get("properties") or {}).get(name) if isinstance(node, dict) else None
        if node is None:
            return None
        if "[" in part:
            node = node.get("items")
    return node.get("default") if isinstance(node, dict) else None


def test_the_server_defaults_exactly_what_the_schemas_default(
    stack_verdicts: dict[str, list[Verdict]], crds_dir: Path, stack_runs: dict[str, Any]
) -> None:
    """Defaulting: every field the server filled into an operator object is one whose CRD declares a ``default``
    (the offline check reads the same: a required field with a default is not required); a Namespace gets only its
    name label and the ``kubernetes`` finalizer."""
    from tools.plan.crd_schema import crd_path, crd_spec_schema

    seen = 0
    for stack, verdicts in stack_verdicts.items():
        addon = _addon_version(stack_runs[stack])
        for v in verdicts:
            if v.manifest["kind"] == "Namespace":
                assert v.real.defaulted == ["metadata.labels.kubernetes.io/metadata.name", "spec.finalizers[0]"]
            elif v.manifest["kind"] in ("InferenceEndpointConfig", "JumpStartModel"):
                schema = crd_spec_schema(crd_path(crds_dir, v.manifest["kind"], addon))
                for path in v.real.defaulted:
                    assert _schema_default(schema, path) is not None, (stack, v.label, path)
                    seen += 1
    assert seen > 0, "the server defaulted no field of any operator object"
