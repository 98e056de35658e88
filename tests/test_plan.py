"""``tools.cli.preview --json`` (the plan) and ``--diff`` (the plan against a saved base)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cached_scope, stack_mapping
from tools.cli.preview import preview
from tools.plan.diff import POLICY, diff_lines, diff_plans, input_diff, property_path
from tools.plan.writer import EXTENSION, UNKNOWN_ID, extension

HP_URN_END = "aws-native:sagemaker:Cluster::hyperpod-cluster"


def _plan(stack: str, mapping: dict[str, Any] | None = None, diff: Path | None = None) -> tuple[int, dict[str, Any]]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = preview(stack, mapping=mapping, as_json=True, diff=diff)
    return code, json.loads(buf.getvalue())


@pytest.fixture(scope=cached_scope("module"))
def prod_plan() -> dict[str, Any]:
    code, plan = _plan("prod")
    assert code == 0
    return plan


def _step(plan: dict[str, Any], urn_end: str) -> dict[str, Any]:
    found = [s for s in plan["steps"] if s["urn"].endswith(urn_end)]
    assert len(found) == 1, f"{len(found)} steps end with {urn_end}"
    return found[0]


def _detail(plan: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    """A diffed step's details (``changes``, ``because``, ``replacementSource``): the extension block's."""
    details: dict[str, Any] = extension(plan)["stepDetails"].get(step["urn"], {})
    return details


STACK_URN = "urn:pulumi:prod::hyperpod-inference::pulumi:pulumi:Stack::hyperpod-inference-prod"
DEFAULT_PROVIDERS = [
    "urn:pulumi:prod::hyperpod-inference::pulumi:providers:aws-native::default_1_84_0",
    "urn:pulumi:prod::hyperpod-inference::pulumi:providers:aws::default_7_51_1",
    "urn:pulumi:prod::hyperpod-inference::pulumi:providers:eks::default_4_4_0",
    # the boto3 dynamic resources (the node wait): the Python SDK's own provider, unversioned
    "urn:pulumi:prod::hyperpod-inference::pulumi:providers:pulumi-python::default",
    "urn:pulumi:prod::hyperpod-inference::pulumi:providers:random::default_4_21_4",
]


def test_stack_step_first_and_default_providers_only_in_the_extension_block(prod_plan) -> None:
    """The root Stack's step comes first; default providers' steps are internal to the engine (pkg/engine/update.go
    isInternalStep), so `pulumi preview --json` does not list them: the extension block keeps them."""
    urns = [s["urn"] for s in prod_plan["steps"]]
    assert urns[0] == STACK_URN
    assert not [u for u in urns if "::pulumi:providers:" in u and u.rsplit("::", 1)[-1].startswith("default")]
    assert prod_plan["steps"][0] == {
        "op": "create",
        "urn": STACK_URN,
        "newState": {"type": "pulumi:pulumi:Stack", "urn": STACK_URN, "custom": False},
        "detailedDiff": None,
    }
    defaults = prod_plan[EXTENSION]["defaultProviders"]
    assert [s["urn"] for s in defaults] == DEFAULT_PROVIDERS
    aws = defaults[1]["newState"]
    assert aws["type"] == "pulumi:providers:aws" and aws["inputs"] == {"region": "us-east-1", "version": "7.51.1"}
    assert "parent" not in aws and "provider" not in aws
    referenced = {
        s["provider"].rsplit("::", 1)[0]
        for s in prod_plan["steps"]
        if re.search(r"::default(_[0-9_]+)?::", s.get("provider", ""))
    }
    assert referenced == set(DEFAULT_PROVIDERS)


def test_one_create_step_with_inputs_per_registration(prod_plan, stack_runs) -> None:
    regs = stack_runs["prod"].registrations
    assert len(regs) > 100
    resource_steps = prod_plan["steps"][1:]
    assert len(resource_steps) == len(regs)
    assert {s["urn"] for s in resource_steps} == {r.urn for r in regs}
    # the Stack and every registration; not the default providers (internal steps)
    assert prod_plan["changeSummary"] == {"create": len(regs) + 1}
    by_urn = {r.urn: r for r in regs}
    for s in resource_steps:
        assert s["op"] == "create" and s["detailedDiff"] is None
        state = s["newState"]
        reg = by_urn[s["urn"]]
        # ResourceV3's omitempty fields appear exactly when they are not empty
        expected = {"type", "urn", "custom", "parent"}
        expected |= {"inputs"} if reg.inputs else set()
        expected |= {"protect"} if reg.protect else set()
        expected |= {"dependencies"} if reg.dependencies else set()
        expected |= {"propertyDependencies"} if reg.property_dependencies else set()
        expected |= {"provider"} if s.get("provider") else set()
        assert set(state) == expected, reg.name
        assert (
            state["type"] == reg.type and state["custom"] == reg.custom and state.get("protect", False) == reg.protect
        )
        assert set(state.get("inputs", {})) == set(reg.inputs), reg.name
        assert state.get("dependencies", []) == sorted(set(reg.dependencies))
    ext = prod_plan[EXTENSION]
    assert ext["stack"] == "prod" and ext["region"] == "us-east-1" and ext["environment"] == "prod"
    assert ext["configErrors"] == []
    # prod's only policy results: 1.35 is accepted though no retrievable HyperPod page lists it, and no offline
    # source lists the prerequisite builds for it (policies/addon_builds.py)
    assert {(r["policyName"], r["enforcementLevel"]) for r in ext["policyResults"]} == {
        ("eks-kubernetes-version-listed", "advisory"),
        ("prerequisite-build-listed-offline", "advisory"),
    }
    assert len(ext["policyResults"]) == 5


@pytest.fixture(scope=cached_scope("module"))
def staging_plan() -> dict[str, Any]:
    code, plan = _plan("staging")
    assert code == 0
    return plan


def test_jwt_routes_carry_the_action_inputs(prod_plan) -> None:
    """prod's API routes: the plan shows the jwt-validation action's issuer, JWKS endpoint and claims, before forward."""
    jwt = {
        "issuer": "https://login.example.com/oauth2/default",
        "jwksEndpoint": "https://login.example.com/oauth2/default/v1/keys",
        "additionalClaims": [
            {"name": "aud", "format": "single-string", "values": ["hpi-prod-inference"]},
            {"name": "scope", "format": "space-separated-values", "values": ["inference.invoke"]},
        ],
    }
    listener = _step(prod_plan, "aws:lb/listener:Listener::front-door-https")
    rule = _step(prod_plan, "aws:lb/listenerRule:ListenerRule::front-door-route-1")
    for actions in (listener["newState"]["inputs"]["defaultActions"], rule["newState"]["inputs"]["actions"]):
        assert [(a["type"], a["order"]) for a in actions] == [("jwt-validation", 1), ("forward", 2)]
        assert actions[0]["jwtValidation"] == jwt
        assert actions[1]["targetGroupArn"] == UNKNOWN_ID  # computed: unknown until deploy


def test_https_listener_actions_in_order_and_secret_blinded(staging_plan) -> None:
    listener = _step(staging_plan, "aws:lb/listener:Listener::front-door-https")
    actions = listener["newState"]["inputs"]["defaultActions"]
    assert [a["type"] for a in actions] == ["authenticate-oidc", "forward"]
    assert [a["order"] for a in actions] == [1, 2]
    oidc = actions[0]["authenticateOidc"]
    assert oidc["clientSecret"] == "[secret]"
    assert oidc["clientId"] == "hpi-staging-front-door" and oidc["onUnauthenticatedRequest"] == "authenticate"
    # the target group's ARN is computed: unknown until deploy, as `pulumi preview --json` shows it
    assert actions[1]["targetGroupArn"] == UNKNOWN_ID
    rule = _step(staging_plan, "aws:lb/listenerRule:ListenerRule::front-door-route-1")
    assert [a["type"] for a in rule["newState"]["inputs"]["actions"]] == ["jwt-validation", "forward"]
    text = json.dumps(staging_plan)
    assert "offline-preview-secret-placeholder" not in text
    assert "1b47061264138c4ac30d75fd1eb44270" not in text, "a Pulumi secret wrapper leaked into the plan"


def test_redis_password_is_blinded_and_absent_from_the_endpoint(prod_plan, stack_runs) -> None:
    password = (
        stack_runs["prod"]
        .named("random:index/randomPassword:RandomPassword", "kv-cache-lmcache-password")
        .outputs["result"]
    )
    assert len(password) == 64
    endpoint = _step(prod_plan, "InferenceEndpointConfig::endpoints-inference-llama-70b-kvaware")
    l2 = endpoint["newState"]["inputs"]["spec"]["kvCacheSpec"]["l2CacheSpec"]
    assert l2["l2CacheBackend"] == "redis"
    # the URL carries the replication group's computed endpoint: unknown until deploy, as `pulumi preview` shows it
    assert l2["l2CacheLocalUrl"] == UNKNOWN_ID
    run_url = (
        stack_runs["prod"]
        .named(
            "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig",
            "endpoints-inference-llama-70b-kvaware",
        )
        .inputs["spec"]
    )
    assert run_url["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"].startswith(
        "rediss://$(HPI_KV_CACHE_USERNAME):$(HPI_KV_CACHE_PASSWORD)@"
    )
    secret = _step(prod_plan, "Secret::endpoints-inference-kv-cache-credentials")
    assert secret["newState"]["inputs"]["stringData"] == {"password": "[secret]", "username": "hpi-prod-kv-lmcache"}
    assert password not in json.dumps(prod_plan)


def test_remote_component_keeps_inputs_and_providers(prod_plan) -> None:
    eks = _step(prod_plan, "eks:index:Cluster::eks-cluster")
    assert eks["newState"]["custom"] is False
    assert eks["newState"]["inputs"]["name"] == "hpi-prod-eks"
    assert eks["newState"]["inputs"]["endpointPublicAccess"] is False
    assert eks["provider"] == f"urn:pulumi:prod::hyperpod-inference::pulumi:providers:eks::default_4_4_0::{UNKNOWN_ID}"
    hp = _step(prod_plan, HP_URN_END)
    assert hp["provider"].startswith(
        "urn:pulumi:prod::hyperpod-inference::pulumi:providers:aws-native::default_1_84_0::"
    )
    assert hp["newState"]["protect"] is True
    assert hp["newState"]["propertyDependencies"]["vpcConfig"], "vpcConfig depends on the subnets and the node SG"
    crd = _step(prod_plan, "InferenceEndpointConfig::endpoints-inference-qwen-sglang")
    assert crd["provider"].split("::")[-2] == "eks-k8s", "Kubernetes objects go through the EKS cluster's provider"
    component = _step(prod_plan, "hyperpod:index:HyperPodInference::hyperpod-inference")
    assert "provider" not in component and component["newState"]["parent"].endswith(
        "pulumi:pulumi:Stack::hyperpod-inference-prod"
    )


def test_plan_is_stable_run_to_run(prod_plan) -> None:
    _, again = _plan("prod")
    assert again.pop("duration") > 0, "duration: the run's nanoseconds (time.Duration)"
    assert json.dumps(again) == json.dumps({k: v for k, v in prod_plan.items() if k != "duration"})
    parents = {s["urn"]: s["newState"].get("parent") for s in prod_plan["steps"]}
    seen: set[str] = set()
    for s in prod_plan["steps"]:
        parent = parents[s["urn"]]
        assert parent not in parents or parent in seen, "a child before its parent"
        seen.add(s["urn"])


def test_preview_plan_carries_the_rehearsal_and_the_capacity_table(capsys) -> None:
    from tools.cli.preview import preview

    assert preview("prod", as_json=True) == 0
    plan = json.loads(capsys.readouterr().out)
    rehearsal = plan[EXTENSION]["rehearsal"]
    assert rehearsal["converges"] is True and rehearsal["mode"] == "create" and rehearsal["findings"] == []
    path = [step["name"] for step in rehearsal["criticalPath"]["steps"]]
    in_order = ["eks-cluster-eksCluster", "hyperpod-cluster", "inference-operator-addon"]
    assert [p for p in path if p in in_order] == in_order, path
    after_addon = path[path.index("inference-operator-addon") + 1 :]
    assert any(p.startswith("endpoints-") for p in after_addon), path
    groups = {g["name"]: g for g in plan[EXTENSION]["capacity"]["groups"]}
    assert set(groups) >= {"p5-inference", "p6-inference"}
    assert groups["p5-inference"]["instanceType"] == "ml.p5.48xlarge"


# --- --diff ------------------------------------------------------------------------------------------------


def _saved(tmp_path: Path, plan: dict[str, Any], name: str = "base.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def test_same_plan_diffs_to_nothing(tmp_path, prod_plan) -> None:
    code, plan = _plan("prod", diff=_saved(tmp_path, prod_plan))
    assert code == 0
    assert plan["changeSummary"] == {"same": len(prod_plan["steps"])}
    # as `pulumi preview --json` without --show-sames: only the root Stack's same step (display.go shouldShow)
    assert [(s["op"], s["urn"]) for s in plan["steps"]] == [("same", STACK_URN)]


def test_one_instance_count_changed_updates_the_cluster_and_its_node_wait(tmp_path, prod_plan) -> None:
    mapping = stack_mapping("prod")
    # the system group: no minInstanceCount, so the node wait's target is its instance count
    group = mapping["hyperpod-inference:cluster"]["instanceGroups"][0]
    assert group["name"] == "system" and group["instanceCount"] == 2 and "minInstanceCount" not in group
    group["instanceCount"] = 3
    code, plan = _plan("prod", mapping, diff=_saved(tmp_path, prod_plan))
    assert code == 0
    assert plan["steps"][0]["urn"] == STACK_URN
    changed = plan["steps"][1:]
    # ... and the wait for the cluster's nodes, whose target count changed with it (components/hyperpod_node_wait.py)
    assert [(s["op"], s["urn"].rsplit("::", 1)[-1]) for s in changed] == [
        ("update", "hyperpod-cluster"),
        ("update", "hyperpod-nodes"),
    ]
    step = changed[0]
    assert step["newState"]["type"] == "aws-native:sagemaker:Cluster"
    assert step["diffReasons"] == ["instanceGroups"] and "replaceReasons" not in step
    assert step["detailedDiff"] == {"instanceGroups[0].instanceCount": {"kind": "update", "inputDiff": True}}
    assert step["oldState"]["inputs"]["instanceGroups"][0]["instanceCount"] == 2
    assert plan["changeSummary"] == {"same": len(prod_plan["steps"]) - 2, "update": 2}
    assert not [r for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY]


def _base_with_other_subnet(plan: dict[str, Any]) -> dict[str, Any]:
    base = copy.deepcopy(plan)
    step = _step(base, HP_URN_END)
    assert step["newState"]["inputs"]["vpcConfig"]["subnets"] == [UNKNOWN_ID]
    step["newState"]["inputs"]["vpcConfig"]["subnets"][0] = "subnet-0aaaaaaaaaaaaaaa0"
    return base


def test_changed_hyperpod_subnet_replaces_and_is_mandatory_in_prod(tmp_path, prod_plan) -> None:
    code, plan = _plan("prod", diff=_saved(tmp_path, _base_with_other_subnet(prod_plan)))
    assert code == 1
    step = _step(plan, HP_URN_END)
    assert step["op"] == "replace"
    assert step["replaceReasons"] == ["vpcConfig"]
    assert step["detailedDiff"] == {"vpcConfig.subnets[0]": {"kind": "update-replace", "inputDiff": True}}
    assert any(
        "createOnlyProperties of AWS::SageMaker::Cluster" in src for src in _detail(plan, step)["replacementSource"]
    )
    assert _detail(plan, step)["changes"] == [
        {
            "path": "vpcConfig.subnets[0]",
            "kind": "update",
            "effect": "replace",
            "old": "subnet-0aaaaaaaaaaaaaaa0",
            "new": UNKNOWN_ID,
        }
    ]
    results = [r for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY]
    assert [(r["enforcementLevel"], r["resourceName"]) for r in results] == [("mandatory", "hyperpod-cluster")]
    assert results[0]["resourceUrn"] == step["urn"]
    assert any(d["severity"] == "error" and POLICY in d["message"] for d in plan["diagnostics"])


def test_allow_replacement_makes_it_advisory_in_prod(tmp_path, prod_plan) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:allowReplacement"] = ["hyperpod-cluster"]
    code, plan = _plan("prod", mapping, diff=_saved(tmp_path, _base_with_other_subnet(prod_plan)))
    assert code == 0
    results = [r for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY]
    assert [(r["enforcementLevel"], r["resourceName"]) for r in results] == [("advisory", "hyperpod-cluster")]
    assert "allowed by hyperpod-inference:allowReplacement" in results[0]["message"]


def test_allow_replacement_of_another_resource_does_not_help(tmp_path, prod_plan) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:allowReplacement"] = ["kv-cache-rg"]
    code, plan = _plan("prod", mapping, diff=_saved(tmp_path, _base_with_other_subnet(prod_plan)))
    assert code == 1
    results = [r for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY]
    assert [(r["enforcementLevel"], r["resourceName"]) for r in results] == [("mandatory", "hyperpod-cluster")]


def test_replacement_is_advisory_outside_prod(tmp_path) -> None:
    _, dev = _plan("dev")
    code, plan = _plan("dev", diff=_saved(tmp_path, _base_with_other_subnet(dev)))
    assert code == 0
    results = [r for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY]
    assert [(r["enforcementLevel"], r["resourceName"]) for r in results] == [("advisory", "hyperpod-cluster")]


def test_deleted_stateful_resource_is_a_delete_and_mandatory(tmp_path, prod_plan) -> None:
    base = copy.deepcopy(prod_plan)
    extra = copy.deepcopy(_step(base, "aws:elasticache/replicationGroup:ReplicationGroup::kv-cache-rg"))
    extra["urn"] = extra["urn"].replace("::kv-cache-rg", "::old-kv-cache-rg")
    extra["newState"]["urn"] = extra["urn"]
    base["steps"].append(extra)
    code, plan = _plan("prod", diff=_saved(tmp_path, base))
    assert code == 1
    deleted = [s for s in plan["steps"] if s["op"] == "delete"]
    assert [s["urn"].rsplit("::", 1)[-1] for s in deleted] == ["old-kv-cache-rg"]
    assert deleted[0]["oldState"]["type"] == "aws:elasticache/replicationGroup:ReplicationGroup"
    assert plan["changeSummary"]["delete"] == 1
    results = [r for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY]
    assert [(r["enforcementLevel"], r["resourceName"]) for r in results] == [("mandatory", "old-kv-cache-rg")]


def test_new_resource_is_a_create(tmp_path, prod_plan) -> None:
    base = copy.deepcopy(prod_plan)
    base["steps"] = [s for s in base["steps"] if not s["urn"].endswith("::front-door-http")]
    _, plan = _plan("prod", diff=_saved(tmp_path, base))
    assert [s["urn"].rsplit("::", 1)[-1] for s in plan["steps"] if s["op"] == "create"] == ["front-door-http"]


def _diff_one(typ: str, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    urn = f"urn:pulumi:prod::hyperpod-inference::{typ}::r"

    def plan(inputs: dict[str, Any]) -> dict[str, Any]:
        return {
            "steps": [{"op": "create", "urn": urn, "newState": {"type": typ, "urn": urn, "inputs": inputs}}],
            EXTENSION: {"format": 3, "project": "hyperpod-inference", "stack": "prod", "environment": "prod"},
        }

    step: dict[str, Any] = diff_plans(plan(old), plan(new))["steps"][0]
    return step


@pytest.mark.parametrize(
    ("typ", "old", "new", "op"),
    [
        (
            "aws:elasticache/replicationGroup:ReplicationGroup",
            {"replicationGroupId": "a"},
            {"replicationGroupId": "b"},
            "replace",
        ),
        (
            "aws:elasticache/replicationGroup:ReplicationGroup",
            {"nodeType": "cache.r7g.large"},
            {"nodeType": "cache.r7g.xlarge"},
            "update",
        ),
        ("eks:index:Cluster", {"name": "a"}, {"name": "b"}, "replace"),
        ("eks:index:Cluster", {"version": "1.32"}, {"version": "1.33"}, "update"),
        ("aws:lb/loadBalancer:LoadBalancer", {"name": "a"}, {"name": "b"}, "replace"),
        ("aws:lb/loadBalancer:LoadBalancer", {"internal": True}, {"internal": False}, "replace"),
        ("aws:lb/loadBalancer:LoadBalancer", {"idleTimeout": 60}, {"idleTimeout": 300}, "update"),
        # iam/role.go: name ForceNew; assume_role_policy is updated (UpdateAssumeRolePolicy)
        ("aws:iam/role:Role", {"name": "a"}, {"name": "b"}, "replace"),
        ("aws:iam/role:Role", {"assumeRolePolicy": '{"Version":"2012-10-17"}'}, {"assumeRolePolicy": "{}"}, "update"),
        ("aws:iam/role:Role", {"tags": {"team": "a"}}, {"tags": {"team": "b"}}, "update"),
        # iam/policy.go: the document is a new policy version; the description is ForceNew
        ("aws:iam/policy:Policy", {"policy": '{"Statement":[]}'}, {"policy": '{"Statement":[{}]}'}, "update"),
        ("aws:iam/policy:Policy", {"description": "a"}, {"description": "b"}, "replace"),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", {"policyArn": "a"}, {"policyArn": "b"}, "replace"),
        # cloudwatch/dashboard.go: the body is put in place, the name is ForceNew
        ("aws:cloudwatch/dashboard:Dashboard", {"dashboardBody": "{}"}, {"dashboardBody": '{"widgets":[]}'}, "update"),
        ("aws:cloudwatch/dashboard:Dashboard", {"dashboardName": "a"}, {"dashboardName": "b"}, "replace"),
        # pulumi-aws renames alarm_name to name
        ("aws:cloudwatch/metricAlarm:MetricAlarm", {"name": "a"}, {"name": "b"}, "replace"),
        ("aws:cloudwatch/metricAlarm:MetricAlarm", {"threshold": 1}, {"threshold": 2}, "update"),
        # elbv2/listener.go: only load_balancer_arn is ForceNew
        (
            "aws:lb/listener:Listener",
            {"defaultActions": [{"type": "forward", "targetGroupArn": "a"}]},
            {"defaultActions": [{"type": "forward", "targetGroupArn": "b"}]},
            "update",
        ),
        ("aws:lb/listener:Listener", {"loadBalancerArn": "a"}, {"loadBalancerArn": "b"}, "replace"),
        # an SDK input newer than the copy read: no source says
        ("aws:lb/listener:Listener", {"tcpIdleTimeoutSeconds": 350}, {"tcpIdleTimeoutSeconds": 600}, "may-replace"),
        ("aws:lb/listenerRule:ListenerRule", {"priority": 10}, {"priority": 20}, "update"),
        # every Region-aware resource: a changed region replaces (TF v6 enhanced region support)
        ("aws:s3/bucket:Bucket", {"region": "us-east-1"}, {"region": "us-west-2"}, "replace"),
        ("aws:s3/bucket:Bucket", {"bucket": "a"}, {"bucket": "b"}, "replace"),
        (
            "aws:s3/bucketPolicy:BucketPolicy",
            {"policy": '{"Statement":[]}'},
            {"policy": '{"Statement":[{}]}'},
            "update",
        ),
        ("aws:eks/addon:Addon", {"addonVersion": "v1.0.0-eksbuild.1"}, {"addonVersion": "v1.1.0-eksbuild.1"}, "update"),
        ("aws:eks/addon:Addon", {"addonName": "a"}, {"addonName": "b"}, "replace"),
        ("aws:wafv2/webAcl:WebAcl", {"rules": [{"priority": 1}]}, {"rules": [{"priority": 2}]}, "update"),
        ("aws:wafv2/webAcl:WebAcl", {"scope": "REGIONAL"}, {"scope": "CLOUDFRONT"}, "replace"),
        ("aws:ec2/vpcEndpoint:VpcEndpoint", {"subnetIds": ["a"]}, {"subnetIds": ["a", "b"]}, "update"),
        ("aws:ec2/vpcEndpoint:VpcEndpoint", {"privateDnsEnabled": False}, {"privateDnsEnabled": True}, "may-replace"),
        (
            "kubernetes:core/v1:Namespace",
            {"kind": "Namespace", "metadata": {"name": "a"}},
            {"kind": "Namespace", "metadata": {"name": "b"}},
            "replace",
        ),
        (
            "kubernetes:core/v1:ConfigMap",
            {"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "1"}},
            {"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "2"}},
            "update",
        ),
        ("aws-native:sagemaker:Cluster", {"clusterName": "a"}, {"clusterName": "b"}, "replace"),
        (
            "aws-native:sagemaker:Cluster",
            {"orchestrator": {"eks": {"clusterArn": "a"}}},
            {"orchestrator": {"eks": {"clusterArn": "b"}}},
            "replace",
        ),
        ("aws-native:sagemaker:Cluster", {"nodeRecovery": "None"}, {"nodeRecovery": "Automatic"}, "update"),
    ],
    ids=[
        "redis-id",
        "redis-node-type",
        "eks-name",
        "eks-version",
        "alb-name",
        "alb-scheme",
        "alb-idle-timeout",
        "iam-role-name",
        "iam-trust-policy",
        "iam-role-tags",
        "iam-policy-document",
        "iam-policy-description",
        "iam-attachment-arn",
        "dashboard-body",
        "dashboard-name",
        "alarm-name",
        "alarm-threshold",
        "listener-default-action",
        "listener-lb",
        "listener-newer-input",
        "listener-rule-priority",
        "bucket-region",
        "bucket-name",
        "bucket-policy-document",
        "addon-version",
        "addon-name",
        "waf-rules",
        "waf-scope",
        "endpoint-subnets",
        "endpoint-private-dns",
        "k8s-name",
        "k8s-data",
        "hp-name",
        "hp-orchestrator",
        "hp-node-recovery",
    ],
)
def test_replacement_rules(typ, old, new, op) -> None:
    step = _diff_one(typ, old, new)
    assert step["op"] == op
    assert bool(step.get("replaceReasons")) == (op in ("replace", "may-replace"))


def test_detailed_diff_paths_and_kinds() -> None:
    changes = input_diff({"a": [1, 2], "b": {"c": 1}, "gone": 1}, {"a": [1, 3, 4], "b": {"c": 1, "d": 2}})
    assert {property_path(p): k for p, k in changes.items()} == {
        "a[1]": "update",
        "a[2]": "add",
        "b.d": "add",
        "gone": "delete",
    }
    assert property_path(("tags", "hyperpod-inference:stack")) == 'tags["hyperpod-inference:stack"]'


def test_human_diff_lists_only_changes(tmp_path, prod_plan, capsys) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:cluster"]["instanceGroups"][0]["instanceCount"] = 4
    assert preview("prod", mapping=mapping, diff=_saved(tmp_path, _base_with_other_subnet(prod_plan))) == 1
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line[:2] in ("+ ", "~ ", "+-", "+?", "- ", "  ")]
    assert lines == [
        "+- replace     aws-native:sagemaker:Cluster hyperpod-cluster: instanceGroups[0].instanceCount, "
        "vpcConfig.subnets[0] (update-replace)",
        "     instanceGroups[0].instanceCount: 2 -> 4",
        "     vpcConfig.subnets[0]: subnet-0aaaaaaaaaaaaaaa0 -> (unknown until deploy)",
        # the node roll and the node wait: their own diffs replace them on a new cluster ARN
        # (components/hyperpod_node_software.py, components/hyperpod_node_wait.py)
        "+- replace     pulumi-python:dynamic:Resource hyperpod-node-software: clusterArn (update-replace)",
        "     replaced because HyperPod cluster hyperpod-cluster is replaced (its clusterArn)",
        "     clusterArn: takes a new value computed by hyperpod-cluster",
        "+- replace     pulumi-python:dynamic:Resource hyperpod-nodes: clusterArn (update-replace), groups.system",
        "     replaced because HyperPod cluster hyperpod-cluster is replaced (its clusterArn)",
        "     clusterArn: takes a new value computed by hyperpod-cluster",
        "     groups.system: 2 -> 4",
        # the add-on's configuration names the cluster's ARN: a new cluster gives it a new value, and
        # eks/addon.go updates configuration_values in place (UpdateAddon; only addon_name and cluster_name
        # are ForceNew)
        "~  update      aws:eks/addon:Addon inference-operator-addon: configurationValues",
        "     updated because HyperPod cluster hyperpod-cluster is replaced (its configurationValues)",
        "     configurationValues: takes a new value computed by hyperpod-cluster",
    ]
    assert "config cluster.instanceGroups[0].instanceCount: 2 -> 4" in out.splitlines()
    summary = (
        f"0 to create, 1 to update, 3 to replace, 0 may replace, 0 to delete, {len(prod_plan['steps']) - 4} unchanged"
    )
    assert summary in out
    assert f"MANDATORY {POLICY} aws-native:sagemaker:Cluster::hyperpod-cluster" in out
    assert "network-vpc" not in out, "unchanged resources are not listed"


def test_diff_lines_symbols() -> None:
    plan = {
        "steps": [
            {"op": "create", "urn": "u::a", "newState": {"type": "t"}},
            {"op": "delete", "urn": "u::b", "oldState": {"type": "t"}},
            {
                "op": "may-replace",
                "urn": "u::c",
                "newState": {"type": "t"},
                "detailedDiff": {"x": {"kind": "update-replace"}},
            },
            {"op": "same", "urn": "u::d", "newState": {"type": "t"}},
        ],
        "changeSummary": {"create": 1, "delete": 1, "may-replace": 1, "same": 1},
        EXTENSION: {"stepDetails": {"u::c": {"changes": [{"path": "x", "old": 1, "new": "[secret]"}]}}},
    }
    lines = diff_lines(plan)
    assert lines[0] == "+  create      t a"
    assert lines[1] == "-  delete      t b"
    assert lines[2] == "+? may-replace t c: x (update-replace)"
    assert lines[3] == "     x: 1 -> [secret]"
    assert lines[4] == "0 to create, 0 to update, 0 to replace, 1 may replace, 1 to delete, 1 unchanged".replace(
        "0 to create", "1 to create"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [("not json", "not JSON"), ('{"resources": []}', "not a plan"), ("[]", "not a plan")],
    ids=["not-json", "old-format", "a-list"],
)
def test_bad_diff_base_exits_2(tmp_path, content, expected, capsys) -> None:
    path = tmp_path / "base.json"
    path.write_text(content)
    assert preview("dev", diff=path) == 2
    out = capsys.readouterr().out
    assert expected in out and "Traceback" not in out


def test_missing_diff_base_exits_2(tmp_path, capsys) -> None:
    assert preview("dev", diff=tmp_path / "nope.json") == 2
    assert "no such file" in capsys.readouterr().out


def test_config_is_shown_with_only_the_secure_leaves_blinded(staging_plan) -> None:
    ingress = json.loads(staging_plan["config"]["hyperpod-inference:ingress"])
    assert ingress["oidc"]["clientSecret"] == "[secret]"
    assert ingress["scheme"] == "internal" and ingress["oidc"]["clientId"] == "hpi-staging-front-door"
    assert ingress["jwt"]["issuer"] == "https://login.example.com/oauth2/default"
    assert staging_plan["config"]["aws:region"] == "eu-west-2"
    assert "AAABAHpiStagingFrontDoor" not in json.dumps(staging_plan)


# --- issue 22: the plan tells the truth ---------------------------------------------------------------------


def _by_name(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The listed steps by logical name, each with its details from the extension block merged in."""
    return {s["urn"].rsplit("::", 1)[-1]: {**s, **_detail(plan, s)} for s in plan["steps"]}


def test_prod_cidr_change_replaces_the_network_and_stops_the_plan(tmp_path, prod_plan) -> None:
    mapping = stack_mapping("prod")
    assert mapping["hyperpod-inference:network"]["cidr"] == "10.64.0.0/16"
    mapping["hyperpod-inference:network"]["cidr"] = "10.80.0.0/16"
    code, plan = _plan("prod", mapping, diff=_saved(tmp_path, prod_plan))
    assert code == 1
    steps = _by_name(plan)
    assert steps["network-vpc"]["op"] == "replace" and steps["network-vpc"]["replaceReasons"] == ["cidrBlock"]
    for az in ("use1-az2", "use1-az4", "use1-az6"):
        assert steps[f"network-private-{az}"]["op"] == "replace"
        assert "replaced because VPC network-vpc is replaced (its vpcId)" in steps[f"network-private-{az}"]["because"]
    hp = steps["hyperpod-cluster"]
    assert hp["op"] == "replace"
    assert "replaced because subnet network-private-use1-az2 is replaced (its vpcConfig)" in hp["because"]
    eks = steps["eks-cluster"]
    assert eks["op"] == "may-replace"
    assert "may be replaced because VPC network-vpc is replaced (its vpcId)" in eks["because"]
    # elasticache/subnet_group.go updates subnet_ids in place (ModifyCacheSubnetGroup) and
    # replication_group.go updates security_group_ids: both take the new network's values as updates; whether
    # AWS accepts another VPC's subnets for a group in use cannot be known offline (docs/policies.md)
    subnet_group = steps["kv-cache-subnets"]
    assert subnet_group["op"] == "update"
    assert [c["path"] for c in subnet_group["changes"]] == ["subnetIds"]
    assert steps["kv-cache-rg"]["op"] == "update"
    assert [c["path"] for c in steps["kv-cache-rg"]["changes"]] == ["securityGroupIds"]
    # the ALB's subnets: the NLB branch of its CustomizeDiff forces new, the ALB branch was not read
    assert steps["front-door-alb"]["op"] == "may-replace"
    assert "subnets" in steps["front-door-alb"]["replaceReasons"]
    # IAM trust policies name the new cluster's OIDC issuer: updated in place (iam/role.go)
    assert steps["operator-iam-keda"]["op"] == "update"
    results = [r for r in plan[EXTENSION]["policyResults"] if r["policyName"] == POLICY]
    assert {(r["enforcementLevel"], r["resourceName"]) for r in results} >= {
        ("mandatory", "hyperpod-cluster"),
        ("mandatory", "eks-cluster"),
    }
    assert all("network.cidr" in r["message"] for r in results)
    assert plan[EXTENSION]["configChanges"] == [
        {"path": "network.cidr", "kind": "update", "old": "10.64.0.0/16", "new": "10.80.0.0/16"}
    ]


def test_endpoint_port_change_replaces_its_target_group_binding(tmp_path, prod_plan) -> None:
    """A routed endpoint's serving port names the target group: a new target group, so a new binding (the LB
    controller's webhook refuses a changed spec.targetGroupARN)."""
    mapping = stack_mapping("prod")
    endpoint = next(e for e in mapping["hyperpod-inference:endpoints"] if e["name"] == "llama-70b-kvaware")
    endpoint["spec"]["worker"]["modelInvocationPort"]["containerPort"] = 8081
    _, plan = _plan("prod", mapping, diff=_saved(tmp_path, prod_plan))
    steps = _by_name(plan)
    assert steps["front-door-tg-llama-70b-kvaware"]["op"] == "replace"
    tgb = steps["front-door-tgb-llama-70b-kvaware"]
    assert tgb["op"] == "replace"
    assert "spec" in tgb["replaceReasons"]
    assert "replaced because target group front-door-tg-llama-70b-kvaware is replaced (its spec)" in tgb["because"]
    assert "front-door-tgb-llama-70b-dpd" not in steps, "unchanged: not listed (no --show-sames)"


def test_service_port_change_updates_the_binding(tmp_path, prod_plan) -> None:
    """``serviceRef.port`` is not among the webhook's immutable fields: the binding is updated in place."""
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:ingress"]["routes"][0]["servicePort"] = 8080
    _, plan = _plan("prod", mapping, diff=_saved(tmp_path, prod_plan))
    tgb = _by_name(plan)["front-door-tgb-llama-70b-kvaware"]
    assert tgb["op"] == "update"
    assert tgb["changes"] == [
        {"path": "spec.serviceRef.port", "kind": "update", "effect": "update", "old": 8000, "new": 8080}
    ]


def test_one_endpoint_replicas_changed_is_one_update_of_its_custom_resource(tmp_path, prod_plan) -> None:
    mapping = stack_mapping("prod")
    endpoint = next(e for e in mapping["hyperpod-inference:endpoints"] if e["name"] == "llama-70b-kvaware")
    assert endpoint["spec"]["replicas"] == 2
    endpoint["spec"]["replicas"] = 3
    code, plan = _plan("prod", mapping, diff=_saved(tmp_path, prod_plan))
    assert code == 0
    changed = [s for s in plan["steps"] if s["op"] != "same"]
    assert [(s["op"], s["urn"].rsplit("::", 1)[-1]) for s in changed] == [
        ("update", "endpoints-inference-llama-70b-kvaware")
    ]
    assert _detail(plan, changed[0])["changes"] == [
        {"path": "spec.replicas", "kind": "update", "effect": "update", "old": 2, "new": 3}
    ]


def test_two_runs_print_identical_bytes() -> None:
    """Two interpreters with different hash seeds (set and dict order of strings differ) print the same plan.

    One run is a fresh process with a fixed seed; the other is this test process (its own seed, random unless
    PYTHONHASHSEED is set, and then the subprocess gets another one), run through tests/cli_runner.py.
    """
    import os
    import subprocess
    import sys

    from tests.cli_runner import run_module

    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    proc = subprocess.run(
        [sys.executable, "-m", "tools.cli.preview", "--stack", "prod", "--json"],
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": seed},
        cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    here = run_module("tools.cli.preview", "--stack", "prod", "--json")
    assert here.returncode == 0, here.stderr[-2000:]
    assert json.loads(proc.stdout)["steps"], "the plan has steps"
    # everything but `duration` (the run's wall time, as the engine's)
    assert re.sub(r'"duration": \d+', "", proc.stdout.decode("utf-8")) == re.sub(r'"duration": \d+', "", here.stdout)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda p: {**p, EXTENSION: {**p[EXTENSION], "stack": "dev"}}, "a plan of stack 'dev', not 'prod'"),
        (lambda p: {**p, EXTENSION: {**p[EXTENSION], "project": "other"}}, "a plan of project 'other'"),
        (lambda p: {**p, EXTENSION: {**p[EXTENSION], "format": 1}}, "plan format 1"),
        # a format-2 plan: our keys at the top, the mocks' URNs
        (lambda p: {"format": 2, "steps": p["steps"]}, "plan format 2: not a plan of this tool"),
    ],
    ids=["other-stack", "other-project", "older-format", "format-2"],
)
def test_base_of_another_stack_project_or_format_exits_2(tmp_path, prod_plan, edit, expected, capsys) -> None:
    path = _saved(tmp_path, edit(copy.deepcopy(prod_plan)))
    assert preview("prod", diff=path) == 2
    out = capsys.readouterr().out
    assert expected in out and "Traceback" not in out
