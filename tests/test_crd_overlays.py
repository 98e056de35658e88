"""Operator 3.4-3.7 as overlays on the v3.3 CRD: the data, the validation outcomes, release gating, the typed
fields on endpoints (accepted, refused naming the release, rendered unchanged) and the capacity model's use of
them (sidecar requests counted, tolerations honoured)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.config import ConfigError, StackConfig
from components.config.loader import parse_stack_mapping
from components.config.validation import run_advisories
from policies import capacity_rules as cap
from policies import compatibility as compat
from policies import crd_overlays
from tests.conftest import REGIONAL_STACKS, stack_mapping
from tests.crd_schema import classify_spec, crd_spec_schema, strict
from tools.plan.k8s_schema import validate_manifests
from tools.plan.render import kubernetes_manifests

IEC = "InferenceEndpointConfig"
JSM = "JumpStartModel"
GATEWAY_ADDON = "v2.0.0-eksbuild.2"  # operator 3.6, inferred from prose
D4 = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-inference-gateway.html"
EPS = "hyperpod-inference:endpoints"
OPERATOR = "hyperpod-inference:operator"
Mutation = Callable[[dict[str, Any]], None]


def _spec(**extra: Any) -> dict[str, Any]:
    """A minimal valid InferenceEndpointConfig spec of the v3.3 CRD, plus ``extra``."""
    return {
        "modelName": "m",
        "instanceType": "ml.p5.48xlarge",
        "modelSourceConfig": {"modelSourceType": "s3", "s3Storage": {"bucketName": "b", "region": "us-east-1"}},
        "worker": {
            "image": "lmcache/vllm-openai:v0.4.3",
            "modelInvocationPort": {"containerPort": 8000},
            "modelVolumeMount": {"name": "model-weights"},
            "resources": {},
        },
        **extra,
    }


SIDECAR = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}


# --- the data ---------------------------------------------------------------------------------------------------


def test_one_overlay_per_release_with_its_fields() -> None:
    overlays = crd_overlays.load_overlays()
    assert [(o.operator_version, o.chart, o.base) for o in overlays] == [
        ("3.4", "2.4.0", "3.3"),
        ("3.5", "2.5.0", "3.3"),
        ("3.6", "2.6.0", "3.3"),
        ("3.7", "2.7.0", "3.3"),
    ]
    by = {o.operator_version: {f.path: (f.kinds, f.sources, f.checklist_id) for f in o.fields} for o in overlays}
    unsourced_34 = "operator-34-sidecar-resources-path"
    assert by["3.4"] == {
        "metricsSidecarResources": (("IEC", "JSM"), ("D5", "P448"), unsourced_34),
        "metricsCollectorResources": (("IEC", "JSM"), ("D5", "P448"), unsourced_34),
        "s3UploaderResources": (("IEC", "JSM"), ("D5", "P448"), unsourced_34),
    }
    assert by["3.5"] == {
        "modelCacheConfig.weightsCache.nodeAffinity": (
            ("IEC", "JSM"),
            ("P455",),
            "operator-35-weights-cache-affinity-path",
        )
    }
    assert by["3.6"] == {
        "inferenceGateway": (("IEC", "JSM"), ("D4", "P461"), None),
        "kubernetes.podTemplateAnnotations": (("IEC",), ("P461",), None),
    }
    assert by["3.7"] == {
        "tolerations": (("IEC", "JSM"), ("P464",), "operator-37-spec-paths"),
        "lmcache": (("IEC",), ("P464",), "operator-37-spec-paths"),
    }
    six = {f.path: f for f in overlays[2].fields}
    assert six["inferenceGateway"].minimum_addon == GATEWAY_ADDON
    assert [(s.path, s.schema_["properties"]["state"]["enum"]) for s in overlays[2].status] == [  # type: ignore[index]
        ("inferenceGateway", ["Pending", "Ready", "Failed"])
    ]
    seven = {f.path: f for f in overlays[3].fields}
    assert seven["lmcache"].schema_["properties"]["mode"]["enum"] == ["InProcess", "MultiProcess"]  # type: ignore[index]
    tol = seven["tolerations"].schema_["items"]["properties"]  # type: ignore[index]
    assert tol["operator"]["enum"] == ["Exists", "Equal"]
    assert tol["effect"]["enum"] == ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def test_overlays_add_fields_the_base_crd_lacks(crds_dir: Path) -> None:
    for o in crd_overlays.load_overlays():
        for f in o.fields:
            for code in f.kinds:
                base = compat.crd_release_for(o.base, compat._KIND_CODES[code]).files[code]
                schema = crd_spec_schema(crds_dir / base)
                assert crd_overlays.schema_path(schema, f.path) is None, (o.operator_version, f.path)
                parent = f.path.rpartition(".")[0]
                assert not parent or crd_overlays.schema_path(schema, parent) is not None, f.path


def test_a_broken_overlay_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = yaml.safe_load((crd_overlays.OVERLAY_DIR / "operator-3.6.yaml").read_text(encoding="utf-8"))

    def load(doc: dict[str, Any], name: str = "operator-3.6.yaml") -> None:
        (tmp_path / name).write_text(yaml.safe_dump(doc), encoding="utf-8")
        monkeypatch.setattr(crd_overlays, "OVERLAY_DIR", tmp_path)
        crd_overlays.load_overlays.cache_clear()
        try:
            crd_overlays.load_overlays()
        finally:
            (tmp_path / name).unlink()
            crd_overlays.load_overlays.cache_clear()

    bad = copy.deepcopy(good)
    bad["fields"][0]["sources"] = ["D4", "P999"]
    with pytest.raises(ValueError, match="unknown source keys P999"):
        load(bad)
    bad = copy.deepcopy(good)
    bad["base"] = "3.4"
    with pytest.raises(ValueError, match=r"base 3\.4 is not a crdReleases row"):
        load(bad)
    with pytest.raises(ValueError, match=r"holds operator 3\.6"):
        load(good, "operator-3.5.yaml")
    bad = copy.deepcopy(good)
    bad["fields"][0]["minimumAddon"] = "v9.9.9-eksbuild.1"
    with pytest.raises(ValueError, match=r"unknown add-on v9\.9\.9-eksbuild\.1"):
        load(bad)
    bad = copy.deepcopy(good)
    bad["fields"][0]["schemaFrom"] = {"kind": "IEC", "path": "nodeAffinity"}
    with pytest.raises(ValueError, match="exactly one of schema / schemaFrom"):
        load(bad)


def test_the_gateways_vllm_floor_is_covered_by_the_image_sets() -> None:
    """D4: the gateway needs vLLM >= 0.9.2; every add-on that carries inferenceGateway supports only vLLM images
    at least that new (its imageSet), so image-compatible-with-operator enforces the floor."""
    ((overlay, rule),) = [(o, r) for o in crd_overlays.load_overlays() for r in o.rules if r.covered_by_image_set]
    assert (overlay.operator_version, rule.requires.component, rule.requires.min) == ("3.6", "vllm", "0.9.2")  # type: ignore[union-attr]
    gateway = next(f for f in overlay.fields if f.path == "inferenceGateway")
    carrying = [
        a for a in compat.load_compatibility().addons if crd_overlays.carried(gateway, overlay, a.addon_version)
    ]
    assert [a.addon_version for a in carrying] == [GATEWAY_ADDON, "v2.1.0-eksbuild.1"]
    for a in carrying:
        floor = compat.load_compatibility().image_sets[a.image_set].vllm
        assert floor.min is not None and compat.parse_version(floor.min) >= compat.parse_version("0.9.2")  # type: ignore[operator]
    assert crd_overlays.image_requirements() == [
        (o, r) for o in crd_overlays.load_overlays() for r in o.rules if r.id == "image-meets-release-requirement"
    ]


# --- validation outcomes ------------------------------------------------------------------------------------------


def test_a_spec_of_the_published_crd_is_valid(crds_dir: Path) -> None:
    verdict = classify_spec(_spec(), crds_dir, IEC, "v1.4.0-eksbuild.1")
    assert (verdict.outcome, verdict.schema, verdict.errors) == (
        "valid",
        "v3.3/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
        [],
    )


def test_the_gateway_opt_in_is_valid_against_the_36_overlay_with_its_sources(crds_dir: Path) -> None:
    spec = _spec(inferenceGateway={"enabled": True, "name": "inference-gateway"})
    verdict = classify_spec(spec, crds_dir, IEC, GATEWAY_ADDON)
    assert verdict.outcome == "valid-against-docs-schema"
    assert verdict.schema == (
        "v3.3/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml + overlay: inferenceGateway "
        f"(operator 3.6, policies/crd_overlays/operator-3.6.yaml; {D4}, "
        "https://github.com/aws/sagemaker-hyperpod-cli/pull/461; path as documented)"
    )
    assert verdict.errors == [] and verdict.advisories == []
    # without a pin: the newest CRD and every overlay, still not "valid"
    assert classify_spec(spec, crds_dir, IEC).outcome == "valid-against-docs-schema"
    assert classify_spec(spec, crds_dir, JSM).outcome == "invalid"  # a JSM spec needs model/server: not a pass


def test_a_field_the_pinned_release_lacks_is_invalid_naming_the_release(crds_dir: Path) -> None:
    spec = _spec(inferenceGateway={"enabled": True})
    verdict = classify_spec(spec, crds_dir, IEC, "v1.5.0-eksbuild.1")
    assert verdict.outcome == "invalid"
    assert verdict.errors == [
        "spec.: Additional properties are not allowed ('inferenceGateway' was unexpected)",
        "spec.inferenceGateway: not in the schema of operator 3.4 (add-on v1.5.0-eksbuild.1); added by operator 3.6 "
        f"({D4}, https://github.com/aws/sagemaker-hyperpod-cli/pull/461)",
    ]


def test_an_inferred_mapping_cannot_validate_a_later_field(crds_dir: Path) -> None:
    verdict = classify_spec(_spec(kubernetes={"podTemplateAnnotations": {"a": "b"}}), crds_dir, IEC, GATEWAY_ADDON)
    assert verdict.outcome == "cannot-validate-offline"
    assert verdict.advisories[0].startswith(
        "`kubernetes.podTemplateAnnotations` is added by operator 3.6 (https://github.com/aws/sagemaker-hyperpod-cli/"
        "pull/461); which operator add-on v2.0.0-eksbuild.2 carries is inferred"
    )
    assert (
        verdict.advisories[-1]
        == "checked by `python -m tools.verify` check `operator-crd-fields` (reads the installed CRD)"
    )
    # the shape is still checked: a non-string annotation is invalid, whatever the mapping
    bad = classify_spec(_spec(kubernetes={"podTemplateAnnotations": {"a": 1}}), crds_dir, IEC, GATEWAY_ADDON)
    assert (bad.outcome, bad.errors) == (
        "invalid",
        ["spec.kubernetes.podTemplateAnnotations.a: 1 is not of type 'string'"],
    )


def test_an_unsourced_path_cannot_validate_offline(crds_dir: Path) -> None:
    verdict = classify_spec(_spec(metricsSidecarResources=SIDECAR), crds_dir, IEC, "v1.5.0-eksbuild.1")
    assert verdict.outcome == "cannot-validate-offline"
    assert "checklist `operator-34-sidecar-resources-path`" in verdict.advisories[0]
    assert (
        classify_spec(_spec(metricsSidecarResources=SIDECAR), crds_dir, IEC, "v1.4.0-eksbuild.1").outcome == "invalid"
    )
    # the borrowed core type (worker.resources of the 3.3 CRD) closes the object
    typo = classify_spec(_spec(metricsSidecarResources={"request": {}}), crds_dir, IEC, "v1.5.0-eksbuild.1")
    assert typo.outcome == "invalid" and "'request' was unexpected" in typo.errors[0]


@pytest.mark.parametrize(
    ("tolerations", "outcome"),
    [
        ([{"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}], "cannot-validate-offline"),
        ([{"key": "dedicated", "operator": "In", "effect": "NoSchedule"}], "invalid"),
        ([{"key": "dedicated", "effect": "NoRun"}], "invalid"),
        ([{"key": "dedicated", "tolerationSeconds": "60"}], "invalid"),
    ],
)
def test_tolerations_shape(crds_dir: Path, tolerations: list[dict[str, Any]], outcome: str) -> None:
    assert classify_spec(_spec(tolerations=tolerations), crds_dir, IEC, GATEWAY_ADDON).outcome == outcome


@pytest.mark.parametrize("stack", REGIONAL_STACKS)
def test_no_reference_object_is_valid_against_a_schema_lacking_one_of_its_fields(stack, stack_runs, crds_dir) -> None:
    """An outside check: every operator object reported ``valid`` validates against the bare published CRD, closed
    (jsonschema, unknown fields refused), so no field of it is missing from the schema it was called valid by."""
    run = stack_runs[stack]
    manifests = kubernetes_manifests(run.registrations)
    addon = next(
        r.inputs["addonVersion"]
        for r in run.registrations
        if r.type == "aws:eks/addon:Addon" and r.inputs.get("addonName") == "amazon-sagemaker-hyperpod-inference"
    )
    results, _ = validate_manifests(manifests, crds_dir=crds_dir, addon_version=addon)
    operator_objects = [(m, r) for m, r in zip(manifests, results, strict=True) if r.kind in (IEC, JSM)]
    assert operator_objects, f"{stack} renders no operator custom resource"
    for manifest, result in operator_objects:
        assert result.outcome != "invalid", result.errors
        if result.outcome == "valid":
            release = compat.crd_release_for(compat.addon(addon).operator_version, result.kind)
            schema = strict(crd_spec_schema(crds_dir / release.files["IEC" if result.kind == IEC else "JSM"]))
            assert list(jsonschema.Draft7Validator(schema).iter_errors(manifest["spec"])) == [], result.name


def test_prods_gateway_opt_in_is_checked_against_the_36_overlay(stack_runs, crds_dir) -> None:
    run = stack_runs["prod"]
    results, _ = validate_manifests(
        kubernetes_manifests(run.registrations), crds_dir=crds_dir, addon_version=GATEWAY_ADDON
    )
    outcomes = {r.name: (r.outcome, r.schema) for r in results if r.kind == IEC}
    outcome, schema = outcomes["qwen-sglang"]
    assert outcome == "valid-against-docs-schema"
    assert "policies/crd_overlays/operator-3.6.yaml" in schema and D4 in schema
    assert {n: o for n, (o, _) in outcomes.items() if n != "qwen-sglang"} == {
        "llama-70b-dpd": "valid",
        "llama-70b-kvaware": "valid",
    }


# --- the typed fields on endpoints --------------------------------------------------------------------------------


def _issues(stack: str, mutate: Mutation) -> list[str]:
    mapping = stack_mapping(stack)
    mutate(mapping)
    try:
        parse_stack_mapping(stack, mapping)
    except ConfigError as err:
        return [i.render() for i in err.issues]
    return []


def _advisories(stack: str, mutate: Mutation) -> list[str]:
    mapping = stack_mapping(stack)
    mutate(mapping)
    cfg = parse_stack_mapping(stack, mapping)
    assert isinstance(cfg, StackConfig)
    return [a.render() for a in run_advisories(cfg)]


def _ep(m: dict[str, Any], i: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = m[EPS][i]["spec"]
    return spec


def _pin(version: str) -> Mutation:
    return lambda m: m[OPERATOR].__setitem__("addonVersion", version)


def _both(*ms: Mutation) -> Mutation:
    def apply(m: dict[str, Any]) -> None:
        for f in ms:
            f(m)

    return apply


NEW_FIELDS: dict[str, tuple[Mutation, str]] = {
    # field: (set it on staging's first endpoint, the release that adds it)
    "metricsSidecarResources": (lambda m: _ep(m).__setitem__("metricsSidecarResources", SIDECAR), "3.4"),
    "modelCacheConfig.weightsCache.nodeAffinity": (
        lambda m: _ep(m)["modelCacheConfig"]["weightsCache"].__setitem__(
            "nodeAffinity",
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "node.kubernetes.io/instance-type",
                                    "operator": "In",
                                    "values": ["ml.p5.4xlarge"],
                                }
                            ]
                        }
                    ]
                }
            },
        ),
        "3.5",
    ),
    "kubernetes.podTemplateAnnotations": (
        lambda m: _ep(m).setdefault("kubernetes", {}).__setitem__("podTemplateAnnotations", {"team": "search"}),
        "3.6",
    ),
    "tolerations": (
        lambda m: _ep(m).__setitem__(
            "tolerations", [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        ),
        "3.7",
    ),
    "lmcache": (lambda m: _ep(m).__setitem__("lmcache", {"mode": "InProcess"}), "3.7"),
}


@pytest.mark.parametrize("field", sorted(NEW_FIELDS))
def test_a_new_field_is_refused_on_an_older_operator_naming_the_release(field: str) -> None:
    setter, release = NEW_FIELDS[field]
    (issue,) = _issues("staging", _both(setter, _pin("v1.4.0-eksbuild.1")))
    assert issue.startswith(f"hyperpod-inference:endpoints[0].spec.{field}: `{field}` needs operator {release}+ ("), (
        issue
    )
    assert issue.endswith("operator.addonVersion pins v1.4.0-eksbuild.1 (operator 3.3)"), issue
    if release == "3.4":
        assert "(add-on v1.5.0-eksbuild.1 or later; " in issue
    if release == "3.7":
        assert "(no add-on build of the compatibility table is known to carry it; " in issue


@pytest.mark.parametrize("field", sorted(NEW_FIELDS))
def test_a_new_field_is_accepted_or_advised_where_the_pin_may_have_it(field: str) -> None:
    setter, release = NEW_FIELDS[field]
    pin = "v1.5.0-eksbuild.1" if release == "3.4" else GATEWAY_ADDON  # documented 3.4; inferred 3.6
    mutate = _both(setter, _pin(pin))
    assert _issues("staging", mutate) == []
    advised = [a for a in _advisories("staging", mutate) if "[feature-in-installed-crd;" in a]
    assert advised, f"{field} on {pin} passed silently"
    assert all(a.startswith(f"hyperpod-inference:endpoints[0].spec.{field}: `{field}`") for a in advised), advised
    assert all("operator-crd-fields" in a for a in advised)


def test_the_gateway_opt_in_holds_on_the_add_on_d4_names_without_an_advisory() -> None:
    advisories = _advisories("prod", lambda m: None)
    assert not [a for a in advisories if "inferenceGateway" in a and "feature-in-installed-crd" in a], advisories


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda m: _ep(m).__setitem__("lmcache", {"mode": "multi"}),
            "hyperpod-inference:endpoints[0].spec.lmcache.mode: Input should be 'InProcess' or 'MultiProcess'",
        ),
        (
            lambda m: _ep(m).__setitem__("tolerations", [{"key": "a", "operator": "In"}]),
            "hyperpod-inference:endpoints[0].spec.tolerations[0].operator: Input should be 'Exists' or 'Equal'",
        ),
        (
            lambda m: _ep(m).__setitem__("tolerations", [{"key": "a", "efect": "NoSchedule"}]),
            "hyperpod-inference:endpoints[0].spec.tolerations[0].efect: unknown key",
        ),
        (
            lambda m: _ep(m).setdefault("kubernetes", {}).__setitem__("podTemplateAnnotations", {"a": 1}),
            "hyperpod-inference:endpoints[0].spec.kubernetes.podTemplateAnnotations.a: Input should be a valid string",
        ),
    ],
)
def test_bad_values_of_the_new_fields_name_the_key(mutate: Mutation, expected: str) -> None:
    issues = _issues("staging", _both(mutate, _pin(GATEWAY_ADDON)))
    assert any(i.startswith(expected) for i in issues), issues


def test_new_fields_render_into_the_custom_resource_unchanged(run) -> None:
    mapping = stack_mapping("staging")
    _pin(GATEWAY_ADDON)(mapping)
    for setter, _ in NEW_FIELDS.values():
        setter(mapping)
    _ep(mapping)["lmcache"] = {"mode": "MultiProcess"}
    _ep(mapping)["worker"]["image"] = "lmcache/vllm-openai:v0.5.1"
    want = copy.deepcopy(_ep(mapping))
    result = run("staging", mapping)
    assert result.config_error is None, result.config_error
    name = mapping[EPS][0]["name"]
    (cr,) = [
        r
        for r in result.registrations
        if r.type.endswith(":InferenceEndpointConfig") and r.inputs["metadata"]["name"] == name
    ]
    spec = cr.inputs["spec"]
    for key in ("metricsSidecarResources", "tolerations", "lmcache"):
        assert spec[key] == want[key], key
    assert spec["kubernetes"]["podTemplateAnnotations"] == {"team": "search"}
    assert (
        spec["modelCacheConfig"]["weightsCache"]["nodeAffinity"]
        == want["modelCacheConfig"]["weightsCache"]["nodeAffinity"]
    )


def test_lmcache_multiprocess_needs_lmcache_050() -> None:
    def multi(image: str) -> Mutation:
        return _both(
            _pin(GATEWAY_ADDON),
            lambda m: _ep(m).__setitem__("lmcache", {"mode": "MultiProcess"}),
            lambda m: _ep(m)["worker"].__setitem__("image", image),
        )

    (issue,) = _issues("staging", multi("lmcache/vllm-openai:v0.4.3"))
    assert issue == (
        'hyperpod-inference:endpoints[0].spec.worker.image: `lmcache.mode: "MultiProcess"` needs LMCache >= 0.5.0 in '
        "the worker image (operator 3.7; https://github.com/aws/sagemaker-hyperpod-cli/pull/464); worker.image "
        "lmcache/vllm-openai:v0.4.3 is older: pin one that is LMCache >= 0.5.0 [image-meets-release-requirement]"
    )
    assert _issues("staging", multi("lmcache/vllm-openai:v0.5.0")) == []
    advised = [a for a in _advisories("staging", multi("vllm/vllm-openai:v0.19.1")) if "image-meets-release" in a]
    assert len(advised) == 1 and "does not name its LMCache version" in advised[0], advised
    in_process = _both(_pin(GATEWAY_ADDON), lambda m: _ep(m).__setitem__("lmcache", {"mode": "InProcess"}))
    assert not [a for a in _advisories("staging", in_process) if "image-meets-release" in a]


# --- the capacity model ------------------------------------------------------------------------------------------


def test_sidecar_requests_add_to_the_pod() -> None:
    cr = {
        "kind": IEC,
        "spec": _spec(metricsSidecarResources=SIDECAR, s3UploaderResources={"requests": {"cpu": "250m"}}),
    }
    cr["spec"]["worker"]["resources"] = {
        "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1},
        "limits": {"nvidia.com/gpu": 1},
    }
    (pod,) = cap.workload_from_cr(cr, "k", "l").pods
    assert [p for p, _ in pod.sidecars] == ["metricsSidecarResources", "s3UploaderResources"]
    assert pod.pod_requests() == {"cpu": 2750, "memory": 5 * 1024**3, "nvidia.com/gpu": 1, cap.PODS: 1}
    plain = cap.workload_from_cr(
        {"kind": IEC, "spec": {**cr["spec"], "metricsSidecarResources": None, "s3UploaderResources": None}}, "k", "l"
    )
    assert plain.pods[0].pod_requests() == {"cpu": 2000, "memory": 4 * 1024**3, "nvidia.com/gpu": 1, cap.PODS: 1}
    jsm = cap.workload_from_cr(
        {"kind": JSM, "spec": {"server": {"instanceType": "ml.g5.8xlarge"}, "metricsSidecarResources": SIDECAR}},
        "k",
        "l",
    )
    assert jsm.pods[0].pod_requests() is None  # the server's own requests are unknown: the sum is too


def test_a_bad_sidecar_quantity_is_refused_at_its_key() -> None:
    issues = _issues(
        "staging",
        _both(
            _pin("v1.5.0-eksbuild.1"),
            lambda m: _ep(m).__setitem__("metricsCollectorResources", {"requests": {"cpu": "1", "memory": "lots"}}),
        ),
    )
    assert any(
        i.startswith("hyperpod-inference:endpoints[0].spec.metricsCollectorResources.requests.memory: ")
        and "[endpoint-resources-valid]" in i
        for i in issues
    ), issues


def test_sidecars_count_against_node_allocatable() -> None:
    """prod's kvaware worker asks 2046Gi of a p5 node's 2046.1Gi: a 1Gi metrics sidecar no longer fits."""

    def mem(m: dict[str, Any]) -> None:
        _ep(m)["worker"]["resources"]["requests"]["memory"] = "2046Gi"

    assert _issues("prod", mem) == []
    sidecar = _both(mem, lambda m: _ep(m).__setitem__("metricsSidecarResources", {"requests": {"memory": "1Gi"}}))
    (issue,) = _issues("prod", sidecar)
    assert issue.startswith("hyperpod-inference:endpoints[0].spec.worker.resources.requests.memory: ")
    assert "a worker pod requests 8 GPUs, 80 CPU, 2047Gi memory" in issue
    assert issue.endswith("[endpoint-pod-fits-node]")


def test_tolerations_let_an_endpoint_onto_a_tainted_group() -> None:
    def taint(m: dict[str, Any]) -> None:
        m["hyperpod-inference:cluster"]["instanceGroups"][1]["taints"] = [
            {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}
        ]

    def tolerate(value: str) -> Mutation:
        return lambda m: _ep(m, 0).__setitem__(
            "tolerations", [{"key": "dedicated", "operator": "Equal", "value": value, "effect": "NoSchedule"}]
        )

    def pin(m: dict[str, Any]) -> None:
        m[OPERATOR]["addonVersion"] = GATEWAY_ADDON

    untolerated = _issues("dev", _both(taint, pin))
    assert [i for i in untolerated if i.endswith("[endpoint-tolerates-group-taints]")], untolerated
    assert not [i for i in _issues("dev", _both(taint, pin, tolerate("inference"))) if "tolerat" in i]
    wrong = _issues("dev", _both(taint, pin, tolerate("training")))
    (issue,) = [i for i in wrong if i.endswith("[endpoint-tolerates-group-taints]")]
    assert issue.startswith("hyperpod-inference:endpoints[0].spec.tolerations: ")
    assert "tolerates {'key': 'dedicated', 'operator': 'Equal', 'value': 'training', 'effect': 'NoSchedule'}" in issue


def test_overlay_fields_are_typed_into_the_models() -> None:
    from components.config import crd

    assert crd.OVERLAY_FIELDS["tolerations"] == "3.7"
    tol = crd.Toleration.model_validate(
        {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    )
    assert tol.dump() == {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    assert json.loads(json.dumps(crd.Lmcache.model_json_schema()))["properties"]["mode"]["anyOf"][0]["enum"] == [
        "InProcess",
        "MultiProcess",
    ]


# --- InferenceGatewayConfig: the docs schema and the hand-typed model agree ---------------------------------------


def _gateway_spec() -> dict[str, Any]:
    return {
        "bbr": {"enabled": True},
        "auth": {
            "jwt": {
                "provider": {
                    "name": "idp",
                    "issuer": "https://idp.example.com",
                    "remoteJWKS": {"uri": "https://idp.example.com/jwks"},
                    "audiences": ["a"],
                }
            }
        },
        "schedulers": [{"name": "s0", "modelSelector": {"matchLabels": {"app": "m"}}, "modelName": "m0"}],
    }


def _many(path: str, n: int) -> Callable[[dict[str, Any]], None]:
    def apply(spec: dict[str, Any]) -> None:
        if path == "audiences":
            spec["auth"]["jwt"]["provider"]["audiences"] = [f"a{i}" for i in range(n)]
        elif path == "requiredClaims":
            spec["auth"]["jwt"]["provider"]["requiredClaims"] = [{"name": f"c{i}", "values": ["v"]} for i in range(n)]
        elif path == "schedulers":
            spec["schedulers"] = [
                {"name": f"s{i}", "modelSelector": {"matchLabels": {"app": f"m{i}"}}, "modelName": f"m{i}"}
                for i in range(n)
            ]
        elif path == "loraAdapters":
            spec["schedulers"][0]["loraAdapters"] = [f"l{i}" for i in range(n)]
        elif path == "logLevel":
            spec["schedulers"][0]["logLevel"] = n
        elif path == "maxRequestBodyBytes":
            spec["bbr"]["maxRequestBodyBytes"] = n
        elif path == "targetPort":
            spec["schedulers"][0]["targetPort"] = n
        elif path == "scheduler":
            spec["schedulers"][0]["scheduler"] = ["llm-d", "epp", "vllm"][n]

    return apply


@pytest.mark.parametrize(
    ("path", "at_limit", "over"),
    [
        ("audiences", 8, 9),
        ("requiredClaims", 16, 17),
        ("schedulers", 100, 101),
        ("loraAdapters", 50, 51),
        ("logLevel", 5, 6),
        ("maxRequestBodyBytes", 268435456, 268435457),
        ("targetPort", 65535, 65536),
        ("scheduler", 1, 2),  # epp is allowed, vllm is not a scheduler
    ],
)
def test_gateway_docs_schema_and_model_agree_at_each_limit(path: str, at_limit: int, over: int) -> None:

    from components.config.gateway_spec import InferenceGatewayConfigSpec
    from tools.plan.k8s_schema import _gateway_validator

    docs = crd_overlays.gateway_config_schema()
    assert docs.sources == ("D4",) and docs.minimum_addon == GATEWAY_ADDON
    validator: jsonschema.Draft7Validator = _gateway_validator()
    for n, ok in ((at_limit, True), (over, False)):
        spec = _gateway_spec()
        _many(path, n)(spec)
        docs_ok = not list(validator.iter_errors(spec))
        try:
            InferenceGatewayConfigSpec.model_validate(spec)
            model_ok = True
        except ValueError:
            model_ok = False
        assert (docs_ok, model_ok) == (ok, ok), (path, n)


def test_the_rendered_gateway_config_is_valid_against_the_docs_schema(stack_runs, crds_dir) -> None:
    manifests = [
        m for m in kubernetes_manifests(stack_runs["prod"].registrations) if m["kind"] == "InferenceGatewayConfig"
    ]
    assert len(manifests) == 1
    results, _ = validate_manifests(manifests, crds_dir=crds_dir)
    assert [(r.outcome, r.errors) for r in results] == [("valid-against-docs-schema", [])]
    broken = copy.deepcopy(manifests[0])
    broken["spec"]["schedulers"][0]["enginetype"] = "vllm"  # misspelt: closed objects refuse it
    (result,) = validate_manifests([broken], crds_dir=crds_dir)[0]
    assert result.outcome == "invalid" and "'enginetype' was unexpected" in result.errors[0]


# --- a real CRD of 3.4+: taken when a snapshot has one, and checked against the overlay ---------------------------


def test_the_overlays_agree_with_every_published_crd_of_their_release(crds_dir: Path) -> None:
    from tools.generate.crd_models import real_crd_disagreements

    found = real_crd_disagreements(crds_dir)
    if not found:
        newest = compat.load_compatibility().crd_releases[-1].operator_version
        pytest.skip(
            f"no published CRD of operator 3.4+ in crdReleases (the newest is {newest}; no retrievable snapshot of "
            "aws/sagemaker-hyperpod-cli has one, ../shared/docs/operator-3.4-3.7.md): nothing to compare yet"
        )
    assert found == {release: [] for release in found}


def test_the_comparison_finds_each_kind_of_disagreement(crds_dir: Path) -> None:
    """A made-up 'real' 3.7 CRD: the v3.3 CRD with the overlay's fields (they agree), then with one changed."""
    from tools.generate.crd_models import overlay_disagreements
    from tools.plan.crd_schema import core_schema_of

    core = core_schema_of(crds_dir)
    overlay = crd_overlays.load_overlays()[-1]
    assert overlay.operator_version == "3.7"
    fields = [(overlay, f) for f in overlay.fields]

    def real() -> dict[str, dict[str, Any]]:
        out = {}
        for code, name in (("IEC", "inferenceendpointconfigs"), ("JSM", "jumpstartmodels")):
            base = crd_spec_schema(crds_dir / f"v3.3/inference.sagemaker.aws.amazon.com_{name}.yaml")
            out[code] = crd_overlays.apply(base, [(o, f) for o, f in fields if code in f.kinds], core)
        return out

    assert overlay_disagreements(overlay, real(), core) == []
    changed = real()
    changed["IEC"]["properties"]["lmcache"]["properties"]["mode"]["enum"] = ["InProcess", "MultiProcess", "Remote"]
    assert overlay_disagreements(overlay, changed, core) == [
        "IEC spec.lmcache.mode: the overlay says enum ['InProcess', 'MultiProcess'], the CRD "
        "['InProcess', 'MultiProcess', 'Remote']"
    ]
    moved = real()
    moved["JSM"]["properties"].pop("tolerations")
    assert overlay_disagreements(overlay, moved, core) == [
        "JSM spec.tolerations: in the overlay, not in the CRD (checklist operator-37-spec-paths: the path was a guess)"
    ]
    retyped = real()
    retyped["IEC"]["properties"]["tolerations"]["items"]["properties"]["tolerationSeconds"]["type"] = "string"
    assert overlay_disagreements(overlay, retyped, core) == [
        "IEC spec.tolerations[].tolerationSeconds: the overlay says type 'integer', the CRD 'string'"
    ]


def test_fetch_crds_finds_a_newer_release_in_a_snapshot(tmp_path: Path) -> None:
    import subprocess

    from tools.fetch import crds as fetch_crds

    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=tmp_path,
            env={**env, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    chart = tmp_path / fetch_crds._OPERATOR / "Chart.yaml"
    crd = tmp_path / fetch_crds._CRD / fetch_crds._IEC
    chart.parent.mkdir(parents=True)
    crd.parent.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch", "main")
    commits = []
    for version, app, body in (("2.3.0", "3.3", b"v33\n"), ("2.4.0", "3.4", b"v34\n"), ("2.4.1", "3.4", b"v341\n")):
        chart.write_text(f'apiVersion: v2\nname: inference-operator\nversion: {version}\nappVersion: "{app}"\n')
        crd.write_bytes(body)
        git("add", "-A")
        git("commit", "--quiet", "-m", version)
        commits.append(git("rev-parse", "HEAD"))
    (found,) = fetch_crds.find_newer(tmp_path / ".git", "3.3")
    assert (found.operator, found.chart, found.commit) == ("3.4", "2.4.0", commits[1])
    assert found.blobs == {"IEC": fetch_crds.git_blob_id(b"v34\n")}
    (pin,) = found.pins()
    assert (pin.dest, pin.path, pin.blob) == (
        f"v3.4/{fetch_crds._IEC}",
        f"{fetch_crds._CRD}/{fetch_crds._IEC}",
        fetch_crds.git_blob_id(b"v34\n"),
    )
    assert found.crd_release_row().startswith(
        f'  - {{operator: "3.4", chart: 2.4.0, commit: {commits[1]}, files: {{IEC: v3.4/{fetch_crds._IEC}}}'
    )
    assert fetch_crds.find_newer(tmp_path / ".git", "3.4") == []


def test_a_field_written_as_null_is_not_set() -> None:
    """A key with a null value sets nothing (the API server drops it): it is not gated as a later release's field.
    (Hand mutation ``overlay-null-counts-as-set`` survived every other test.)"""
    from policies import compatibility as compat
    from policies import crd_overlays

    oldest = compat.addon_versions()[0]
    spec: dict[str, Any] = {"tolerations": None, "metricsSidecarResources": None}
    assert crd_overlays.gate(spec, oldest, compat.IEC) == ([], [])
    refused, _ = crd_overlays.gate({"tolerations": [{"key": "k", "operator": "Exists"}]}, oldest, compat.IEC)
    assert [f.path for _, f in refused] == ["tolerations"]
