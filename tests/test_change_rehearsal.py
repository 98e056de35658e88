"""The change rehearsal (issue 45 item 2): each changed step judged by its owner's update rules, three outcomes;
and a Kubernetes upgrade walked in the documented order with the capacity left during the node roll (item 1)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from components.config.loader import parse_stack_mapping
from components.config.node_software import roll_impacts_of
from tests.conftest import stack_mapping
from tools.plan.diff import diff_plans
from tools.plan.harness import StackRun, run_stack
from tools.plan.writer import build_plan
from tools.rehearse.__main__ import main as rehearse_main
from tools.rehearse.change import ChangeRehearsal, Judgement, rehearse_change

KV = "hyperpod-inference:kvCache"
CLUSTER = "hyperpod-inference:cluster"
NETWORK = "hyperpod-inference:network"


def _plan(stack: str, mapping: dict[str, Any]) -> tuple[dict[str, Any], StackRun]:
    run = run_stack(stack, mapping)
    assert run.config_error is None, run.config_error
    env = mapping["hyperpod-inference:environment"]
    return build_plan(run, [], environment=env, region=mapping["aws:region"], mapping=mapping), run


def _change(stack: str, base: dict[str, Any], head: dict[str, Any]) -> ChangeRehearsal:
    base_plan, _ = _plan(stack, base)
    head_plan, run = _plan(stack, head)
    plan = diff_plans(base_plan, head_plan)
    impacts = roll_impacts_of(parse_stack_mapping(stack, head))  # type: ignore[arg-type]
    return rehearse_change(stack, plan, run.registrations, impacts, "base")


def _by_rule(result: ChangeRehearsal, rule: str) -> list[Judgement]:
    return [j for j in result.judgements if j.rule == rule]


@pytest.fixture(scope="module")
def prod() -> dict[str, Any]:
    return copy.deepcopy(stack_mapping("prod"))


def _with(m: dict[str, Any], section: str, *path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(m)
    node = out[section]
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return out


# --- ElastiCache engine transitions ----------------------------------------------------------------------------


def test_valkey_to_redis_is_refused_with_the_fix(prod: dict[str, Any]) -> None:
    head = _with(prod, KV, "redis", "engine", value="redis")
    head = _with(head, KV, "redis", "engineVersion", value="7.1")
    result = _change("prod", prod, head)
    (j,) = _by_rule(result, "elasticache-engine-transition")
    assert j.outcome == "refused" and "never Valkey back to Redis OSS" in j.message
    assert "keep kvCache.redis.engine valkey" in j.fix
    assert not result.converges and result.exit_code == 1


def test_redis_to_valkey_holds(prod: dict[str, Any]) -> None:
    base = _with(prod, KV, "redis", "engine", value="redis")
    base = _with(base, KV, "redis", "engineVersion", value="7.1")
    (j,) = _by_rule(_change("prod", base, prod), "elasticache-engine-transition")
    assert j.outcome == "holds" and "cross-engine upgrade" in j.message


def test_an_engine_version_downgrade_is_refused_and_an_upgrade_holds(prod: dict[str, Any]) -> None:
    older = _with(prod, KV, "redis", "engineVersion", value="7.2")
    (down,) = _by_rule(_change("prod", prod, older), "elasticache-engine-transition")
    assert down.outcome == "refused" and "does not downgrade" in down.message
    (up,) = _by_rule(_change("prod", older, prod), "elasticache-engine-transition")
    assert up.outcome == "holds"


# --- fixed physical names under replacement --------------------------------------------------------------------


def test_an_az_reorder_replaces_the_cluster_under_its_fixed_name_and_is_refused(prod: dict[str, Any]) -> None:
    head = _with(prod, NETWORK, "availabilityZoneIds", value=["use1-az4", "use1-az2", "use1-az6"])
    result = _change("prod", prod, head)
    refused = {j.resource: j for j in _by_rule(result, "fixed-name-replacement") if j.outcome == "refused"}
    assert "hyperpod-cluster" in refused, [(j.resource, j.outcome) for j in _by_rule(result, "fixed-name-replacement")]
    j = refused["hyperpod-cluster"]
    assert "fixed clusterName hpi-prod-hp" in j.message and "network.availabilityZoneIds" in j.message
    assert "keep the old order" in j.fix
    assert result.exit_code == 1


def test_appending_an_az_does_not_replace_the_cluster(prod: dict[str, Any]) -> None:
    base = _with(prod, NETWORK, "availabilityZoneIds", value=["use1-az2", "use1-az4"])
    base[CLUSTER]["instanceGroups"][2]["availabilityZoneId"] = "use1-az4"
    result = _change("prod", base, prod)
    assert not [j for j in _by_rule(result, "fixed-name-replacement") if j.resource == "hyperpod-cluster"]


# --- an instance-count change -------------------------------------------------------------------------------------


def test_an_instance_count_change_converges_and_reruns_only_the_nodes(prod: dict[str, Any]) -> None:
    # prod's GPU groups provision partially (minInstanceCount): the node wait waits for the minimum, so growing a
    # group is the count and its minimum together (below: the count alone is refused)
    head = copy.deepcopy(prod)
    head[CLUSTER]["instanceGroups"][1]["instanceCount"] = 5
    head[CLUSTER]["instanceGroups"][1]["minInstanceCount"] = 3
    result = _change("prod", prod, head)
    assert result.converges, result.lines()
    changed = {j.resource for j in result.judgements}
    assert changed == {"hyperpod-cluster", "hyperpod-nodes"}, changed
    (dhc,) = _by_rule(result, "deep-health-checks-during-update")
    assert dhc.outcome == "holds" and "p5-inference" in dhc.message
    assert result.upgrade == []


def test_growing_a_partially_provisioned_group_alone_is_refused(prod: dict[str, Any]) -> None:
    """The count without its minimum: the node wait (which waits for the minimum) does not run again, so the new
    nodes' deep health checks are waited for by nothing and a later update could land while they run."""
    head = copy.deepcopy(prod)
    assert head[CLUSTER]["instanceGroups"][1]["minInstanceCount"] == 2
    head[CLUSTER]["instanceGroups"][1]["instanceCount"] = 5
    result = _change("prod", prod, head)
    (dhc,) = _by_rule(result, "deep-health-checks-during-update")
    assert dhc.outcome == "refused" and "p5-inference" in dhc.message
    assert "keep the node wait" in dhc.fix


# --- add-ons and the control plane ---------------------------------------------------------------------------------


def test_an_operator_add_on_downgrade_is_refused(prod: dict[str, Any]) -> None:
    head = _with(prod, "hyperpod-inference:operator", "addonVersion", value="v1.3.0-eksbuild.1")
    base = _with(prod, "hyperpod-inference:gateway", "enabled", value=False)
    head = _with(head, "hyperpod-inference:gateway", "enabled", value=False)
    head["hyperpod-inference:endpoints"] = [
        e for e in head["hyperpod-inference:endpoints"] if e["name"] != "qwen-sglang"
    ]
    base["hyperpod-inference:endpoints"] = copy.deepcopy(head["hyperpod-inference:endpoints"])
    (j,) = [
        j for j in _by_rule(_change("prod", base, head), "eks-addon-downgrade") if "hyperpod-inference" in j.message
    ]
    assert j.outcome == "refused" and "v2.0.0-eksbuild.2 -> v1.3.0-eksbuild.1" in j.message


def test_the_134_to_135_upgrade_walks_the_documented_order(prod: dict[str, Any]) -> None:
    base = copy.deepcopy(prod)
    base[CLUSTER]["kubernetesVersion"] = "1.34"
    base[CLUSTER]["addons"] = {"kubeProxy": "v1.34.0-eksbuild.2"}
    del base[CLUSTER]["acceptUnlistedKubernetesVersion"]
    result = _change("prod", base, prod)
    assert result.converges
    assert [s.order for s in result.upgrade] == [1, 2, 3, 4]
    control, core, nodes, _operator = result.upgrade
    assert control.name == "control plane 1.34 -> 1.35" and control.resources == ["eks-cluster"]
    assert core.resources == ["eks-cluster kube-proxy (v1.35.0-eksbuild.2)"]
    assert nodes.resources == ["hyperpod-node-software"]
    kvaware = next(t for t in nodes.takes_away if "llama-70b-kvaware" in t)
    assert "p5-inference: 1 node(s) at a time" in kvaware and "leaves 1 serving" in kvaware
    versions = {j.rule: j.outcome for j in result.judgements if j.resource == "eks-cluster"}
    assert versions == {"eks-version-step": "holds", "eks-addon-downgrade": "holds"}
    timeouts = _by_rule(result, "update-timeout")
    assert {j.outcome for j in timeouts} == {"advisory"} and len(timeouts) == 4  # system, system-b, p5, p6


def test_a_two_minor_jump_is_refused(prod: dict[str, Any]) -> None:
    base = copy.deepcopy(prod)
    base[CLUSTER]["kubernetesVersion"] = "1.33"
    base[CLUSTER]["addons"] = {"kubeProxy": "v1.33.0-eksbuild.1"}
    del base[CLUSTER]["acceptUnlistedKubernetesVersion"]
    (j,) = _by_rule(_change("prod", base, prod), "eks-version-step")
    assert j.outcome == "refused" and "set cluster.kubernetesVersion 1.34 first" in j.fix


# --- the command --------------------------------------------------------------------------------------------------


def test_the_command_refuses_valkey_to_redis(prod: dict[str, Any], tmp_path: Path, capsys: Any) -> None:
    base_plan, _ = _plan("prod", prod)
    base_file = tmp_path / "base.json"
    base_file.write_text(json.dumps(base_plan), encoding="utf-8")
    head = _with(prod, KV, "redis", "engine", value="redis")
    head = _with(head, KV, "redis", "engineVersion", value="7.1")
    import yaml

    stack_file = tmp_path / "Pulumi.prod.yaml"
    stack_file.write_text(yaml.safe_dump({"config": head}), encoding="utf-8")
    code = rehearse_main(["--stack", "prod", "--stack-file", str(stack_file), "--diff", str(base_file), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["converges"] is False
    assert [j["rule"] for j in out["judgements"] if j["outcome"] == "refused"] == ["elasticache-engine-transition"]


def test_diff_and_destroy_together_are_an_input_error(tmp_path: Path, capsys: Any) -> None:
    assert rehearse_main(["--stack", "dev", "--diff", str(tmp_path / "x.json"), "--destroy"]) == 2
    assert rehearse_main(["--stack", "dev", "--diff", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().out
