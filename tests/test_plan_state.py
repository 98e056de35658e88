"""``tools.cli.preview --diff-state EXPORT.json``: the plan against a deployed stack's ``pulumi stack export`` (issue 35).

The export is built here the way the engine writes one (apitype ``UntypedDeployment`` around ``DeploymentV3``,
``ResourceV3`` resources: pulumi/pulumi@0ac56e876614aedf12771d73ef7e80959b8a6fd4 sdk/go/common/apitype/core.go)
from a mock run of prod: every value a resource computed is *known* there (``vpc-...``), secrets are
``4dabf18193072939515e22adb298388d`` envelopes, provider references carry real IDs, and the remote EKS
component's children exist. The preview reads it as the consumer it is written for.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cached_scope, registered, stack_mapping
from tools.cli.preview import preview
from tools.plan.diff import POLICY
from tools.plan.harness import StackRun, run_stack
from tools.plan.state import state_value
from tools.plan.writer import EXTENSION, UNKNOWN_ID, provider_reference
from tools.rehearse.model import expand

SIG = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
CIPHERTEXT = "v1:AAAAAAAAAAAAAAAAAAAAAAAAxIYXr2bQ4cGrC5ObE1hN2Q=="
PROVIDER_ID = "2c3f8a7e-61f0-4d4e-9b0a-5f7a1c2b9e44"
STACK_URN = "urn:pulumi:prod::hyperpod-inference::pulumi:pulumi:Stack::hyperpod-inference-prod"


def _recorded(value: Any) -> Any:
    """An input as the state records it: a secret-wrapped value in its ciphertext envelope."""
    if isinstance(value, dict):
        if value.get(SIG) == SECRET_SIG:
            return {SIG: SECRET_SIG, "ciphertext": CIPHERTEXT}
        return {k: _recorded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_recorded(v) for v in value]
    return value


def export_of(run: StackRun, plan: dict[str, Any]) -> dict[str, Any]:
    """What `pulumi stack export` prints after `pulumi up` of this run (values as the mocks made them)."""
    resources: list[dict[str, Any]] = [
        {"urn": STACK_URN, "custom": False, "type": "pulumi:pulumi:Stack", "outputs": {"clusterName": "x"}}
    ]
    for step in plan[EXTENSION]["defaultProviders"]:
        state = step["newState"]
        resources.append({**state, "id": PROVIDER_ID, "outputs": state.get("inputs", {})})
    for reg in expand(run.registrations):
        provider = provider_reference(reg, "prod").replace(UNKNOWN_ID, PROVIDER_ID)
        resource = {
            "urn": reg.urn,
            "custom": reg.custom,
            "id": reg.id or "",
            "type": reg.type,
            "inputs": _recorded(reg.inputs),
            "outputs": _recorded(reg.outputs),
            "parent": reg.parent or "",
            "protect": reg.protect,
            "dependencies": sorted(set(reg.dependencies)),
            "provider": provider,
            "propertyDependencies": reg.property_dependencies,
            "created": "2026-11-02T09:31:44.502913Z",
        }
        resources.append({k: v for k, v in resource.items() if v not in ("", [], {}, None, False) or k == "custom"})
    return {
        "version": 3,
        "deployment": {
            "manifest": {"time": "2026-11-20T16:40:51Z", "magic": "0" * 64, "version": "v3.272.0"},
            "secrets_providers": {"type": "passphrase", "state": {"salt": "v1:abc"}},
            "resources": resources,
        },
    }


def _preview(tmp_path: Path, export: dict[str, Any], mapping: dict[str, Any] | None = None) -> tuple[int, Any, str]:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = preview("prod", mapping=mapping, as_json=True, diff_state=path)
    return code, json.loads(buf.getvalue()), buf.getvalue()


@pytest.fixture(scope=cached_scope("module"))
def prod_export() -> dict[str, Any]:
    run = registered(run_stack("prod"))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert preview("prod", as_json=True) == 0
    export = export_of(run, json.loads(buf.getvalue()))
    assert len(export["deployment"]["resources"]) > 200
    return export


def _resource(export: dict[str, Any], urn_end: str) -> dict[str, Any]:
    (found,) = [r for r in export["deployment"]["resources"] if r["urn"].endswith(urn_end)]
    return found


def test_the_deployed_stack_itself_is_all_same(tmp_path, prod_export) -> None:
    code, plan, text = _preview(tmp_path, prod_export)
    assert code == 0
    n = len(prod_export["deployment"]["resources"])
    ext = plan[EXTENSION]
    children = ext["notComparedOffline"]
    # pulumi-eks's children (control plane, its Kubernetes provider, ...): in the state, not under mocks
    assert children and all("$eks:index:Cluster$" in u for u in children)
    assert plan["steps"] == [plan["steps"][0]] and plan["steps"][0]["op"] == "same"
    assert plan["steps"][0]["urn"] == STACK_URN
    assert plan["changeSummary"] == {"same": n - len(children) - len(ext["defaultProviders"])}
    assert ext["base"]["source"] == "stack export"
    assert ext["secretsNotCompared"] > 0
    assert CIPHERTEXT not in text, "a recorded secret is never printed"


def test_one_addon_version_changed_is_exactly_one_update(tmp_path, prod_export) -> None:
    export = copy.deepcopy(prod_export)
    addon = _resource(export, "aws:eks/addon:Addon::inference-operator-addon")
    deployed = addon["inputs"]["addonVersion"]
    assert deployed.startswith("v") and "-eksbuild." in deployed
    addon["inputs"]["addonVersion"] = "v1.1.0-eksbuild.1"
    code, plan, _ = _preview(tmp_path, export)
    assert code == 0
    changed = [s for s in plan["steps"] if s["op"] != "same"]
    assert [s["urn"] for s in plan["steps"] if s["op"] == "same"] == [STACK_URN]
    assert len(changed) == 1
    (step,) = changed
    assert step["op"] == "update" and step["urn"] == addon["urn"]
    assert step["diffReasons"] == ["addonVersion"] and "replaceReasons" not in step
    assert step["detailedDiff"] == {"addonVersion": {"kind": "update", "inputDiff": True}}
    assert step["oldState"]["inputs"]["addonVersion"] == "v1.1.0-eksbuild.1"
    assert step["newState"]["inputs"]["addonVersion"] == deployed
    assert step["provider"].endswith(f"::{UNKNOWN_ID}") and step["oldState"]["provider"].endswith(PROVIDER_ID)
    assert plan["changeSummary"]["update"] == 1 and set(plan["changeSummary"]) == {"same", "update"}


def test_one_resource_missing_from_the_export_is_one_create(tmp_path, prod_export) -> None:
    export = copy.deepcopy(prod_export)
    rule = _resource(export, "aws:lb/listener:Listener::front-door-http")
    export["deployment"]["resources"].remove(rule)
    code, plan, _ = _preview(tmp_path, export)
    assert code == 0
    changed = [s for s in plan["steps"] if s["op"] != "same"]
    assert [(s["op"], s["urn"]) for s in changed] == [("create", rule["urn"])]
    assert changed[0]["detailedDiff"] is None and "oldState" not in changed[0]


def test_a_copy_pending_deletion_is_not_the_live_resource(tmp_path, prod_export) -> None:
    """After an interrupted replacement the state holds the old copy with ``delete: true`` next to the live one
    (same URN): the old copy is deleted by the engine either way and must not be compared."""
    export = copy.deepcopy(prod_export)
    addon = _resource(export, "aws:eks/addon:Addon::inference-operator-addon")
    old = copy.deepcopy(addon)
    old["inputs"]["addonVersion"] = "v0.9.0-eksbuild.1"
    old["delete"] = True
    export["deployment"]["resources"].append(old)
    code, plan, _ = _preview(tmp_path, export)
    assert code == 0
    assert [s["op"] for s in plan["steps"]] == ["same"]


def test_a_stateful_resource_only_in_the_state_is_a_mandatory_delete(tmp_path, prod_export) -> None:
    export = copy.deepcopy(prod_export)
    old = copy.deepcopy(_resource(export, "aws:elasticache/replicationGroup:ReplicationGroup::kv-cache-rg"))
    old["urn"] = old["urn"].replace("::kv-cache-rg", "::old-kv-cache-rg")
    export["deployment"]["resources"].append(old)
    code, plan, _ = _preview(tmp_path, export)
    assert code == 1
    assert [(s["op"], s["urn"]) for s in plan["steps"] if s["op"] != "same"] == [("delete", old["urn"])]
    results = [r for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY]
    assert [(r["enforcementLevel"], r["resourceName"]) for r in results] == [("mandatory", "old-kv-cache-rg")]


def test_a_new_cidr_against_the_state_replaces_the_network_and_the_guard_stops_it(tmp_path, prod_export) -> None:
    """The recorded subnet IDs are known in the state; the new ones are computed by a replaced VPC."""
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:network"]["cidr"] = "10.80.0.0/16"
    code, plan, _ = _preview(tmp_path, prod_export, mapping)
    assert code == 1
    ops = {s["urn"].rsplit("::", 1)[-1]: s["op"] for s in plan["steps"]}
    assert ops["network-vpc"] == "replace" and ops["network-private-use1-az2"] == "replace"
    assert ops["hyperpod-cluster"] == "replace" and ops["eks-cluster"] == "may-replace"
    results = {
        r["resourceName"]: r["enforcementLevel"] for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY
    }
    assert results["hyperpod-cluster"] == "mandatory" and results["eks-cluster"] == "mandatory"


def test_a_changed_plain_value_recorded_as_a_secret_is_an_update(tmp_path, prod_export) -> None:
    export = copy.deepcopy(prod_export)
    addon = _resource(export, "aws:eks/addon:Addon::inference-operator-addon")
    addon["inputs"]["addonVersion"] = {SIG: SECRET_SIG, "plaintext": '"v0.0.1-recorded-secret"'}
    _, plan, text = _preview(tmp_path, export)
    (step,) = [s for s in plan["steps"] if s["op"] != "same"]
    assert step["op"] == "update" and step["detailedDiff"] == {"addonVersion": {"kind": "update", "inputDiff": True}}
    assert step["oldState"]["inputs"]["addonVersion"] == "[secret]"
    assert "v0.0.1-recorded-secret" not in text


def test_state_values_as_the_plan_writes_them() -> None:
    ref = {
        SIG: "5cf8f73096256a8f31e491e813e4eb8e",
        "urn": "urn:pulumi:prod::hyperpod-inference::hyperpod:index:HyperPodInference$aws:ec2/securityGroup:SecurityGroup::sg",
        "id": "sg-1",
    }
    assert state_value({"b": [ref], "a": {SIG: SECRET_SIG, "ciphertext": "x"}}) == {
        "a": "[secret]",
        "b": [{"resourceReference": "aws:ec2/securityGroup:SecurityGroup"}],
    }


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda e: {"resources": e["deployment"]["resources"]}, "not a stack export (no `deployment`"),
        (lambda e: {**e, "version": 2}, "deployment schema version 2"),
        (
            lambda e: json.loads(json.dumps(e).replace("urn:pulumi:prod::", "urn:pulumi:staging::")),
            "an export of 'staging::hyperpod-inference'",
        ),
    ],
    ids=["no-deployment", "old-schema", "other-stack"],
)
def test_an_unusable_export_exits_2(tmp_path, prod_export, edit, expected, capsys) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(edit(copy.deepcopy(prod_export))), encoding="utf-8")
    assert preview("prod", diff_state=path) == 2
    out = capsys.readouterr().out
    assert expected in out and "Traceback" not in out


def test_diff_and_diff_state_together_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "x.json"
    path.write_text("{}", encoding="utf-8")
    assert preview("prod", diff=path, diff_state=path) == 2
    assert "give one base" in capsys.readouterr().out
