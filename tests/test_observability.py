"""Issue 17, observability: the HyperPod observability add-on with its AMP workspace and IAM, the CloudWatch
dashboard (one row per endpoint) and the alarms, as prod's and dev's plans register them; config errors name
the key. Values are literals (or the mock outputs of the resources they must point at)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import cached_scope, registered, stack_mapping
from tests.test_ingress import inputs
from tools.plan.harness import StackRun

ADDON = "aws:eks/addon:Addon"
AMP = "aws:amp/workspace:Workspace"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
DASHBOARD = "aws:cloudwatch/dashboard:Dashboard"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
TOPIC = "aws:sns/topic:Topic"
TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
KMS = "aws:kms/key:Key"
ALB = "aws:lb/loadBalancer:LoadBalancer"
TG = "aws:lb/targetGroup:TargetGroup"
HYPERPOD = "aws-native:sagemaker:Cluster"
OBS = "hyperpod-inference:observability"


@pytest.fixture(scope=cached_scope("module"))
def prod(stack_runs: dict[str, StackRun]) -> StackRun:
    return stack_runs["prod"]


def _values(run: StackRun) -> dict[str, Any]:
    return json.loads(inputs(run, ADDON, "observability-addon")["configurationValues"])


def _body(run: StackRun) -> dict[str, Any]:
    return json.loads(inputs(run, DASHBOARD, "dashboards-dashboard")["dashboardBody"])


# --- the add-on, AMP and IAM ----------------------------------------------------------------------------


def test_prod_observability_addon_is_pinned_and_writes_to_its_amp_workspace(prod: StackRun) -> None:
    addon = inputs(prod, ADDON, "observability-addon")
    ws = prod.named(AMP, "observability-amp")
    assert addon["addonName"] == "amazon-sagemaker-hyperpod-observability"
    assert addon["addonVersion"] == "v1.0.5-eksbuild.1"
    assert addon["clusterName"] == "hpi-prod-eks"
    assert addon["resolveConflictsOnCreate"] == "OVERWRITE" and addon["resolveConflictsOnUpdate"] == "OVERWRITE"
    assert ws.inputs["alias"] == "hpi-prod-metrics"
    values = _values(prod)
    assert values["ampWorkspace"] == {
        "arn": ws.outputs["arn"],
        "prometheusEndpoint": ws.outputs["prometheusEndpoint"].rstrip("/"),
    }
    assert values["ampWorkspace"]["prometheusEndpoint"].startswith(
        "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-"
    )
    assert values["logging"] == {"enabled": True}
    assert values["metricsProvider"] == {
        "inferenceMetrics": {"level": "BASIC", "scrapeInterval": 30},
        "acceleratedComputeMetrics": {"level": "BASIC", "scrapeInterval": 30},
        "nodeMetrics": {"level": "BASIC", "scrapeInterval": 30},
        "customMetrics": {"level": "BASIC", "scrapeInterval": 30},
        "networkMetrics": {"level": "BASIC", "scrapeInterval": 30},
        "trainingMetrics": {"level": "DISABLED", "scrapeInterval": 30},
        "taskGovernanceMetrics": {"level": "DISABLED", "scrapeInterval": 30},
        "scalingMetrics": {"level": "BASIC", "scrapeInterval": 30},
    }
    role = prod.named(ROLE, "observability-role")
    assert addon["podIdentityAssociations"] == [
        {"roleArn": role.outputs["arn"], "serviceAccount": "hyperpod-observability-operator-otel-collector"}
    ]


def test_addon_waits_for_hyperpod_nodes_and_the_pod_identity_agent(prod: StackRun) -> None:
    addon = prod.named(ADDON, "observability-addon")
    names = {r.urn: (r.type, r.name) for r in prod.registrations}
    deps = {names[u] for u in addon.dependencies if u in names}
    assert (HYPERPOD, "hyperpod-cluster") in deps
    assert (ADDON, "eks-pod-identity-agent") in deps
    assert (ROLE_POLICY, "observability-policy") in deps
    assert addon.custom_timeouts.get("create") == "30m"


def test_collector_role_trusts_pod_identity_for_this_cluster_and_writes_only_this_workspace(prod: StackRun) -> None:
    trust = json.loads(inputs(prod, ROLE, "observability-role")["assumeRolePolicy"])["Statement"]
    assert trust == [
        {
            "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {
                "StringEquals": {
                    "aws:SourceArn": "arn:aws:eks:us-east-1:123456789012:cluster/hpi-prod-eks",
                    "aws:SourceAccount": "123456789012",
                }
            },
        }
    ]
    policy = json.loads(inputs(prod, ROLE_POLICY, "observability-policy")["policy"])["Statement"]
    by_sid = {s["Sid"]: s for s in policy}
    assert by_sid["PrometheusAccess"]["Action"] == "aps:RemoteWrite"
    assert by_sid["PrometheusAccess"]["Resource"] == prod.named(AMP, "observability-amp").outputs["arn"]
    assert by_sid["CloudwatchLogsAccess"]["Resource"] == [
        "arn:aws:logs:us-east-1:123456789012:log-group:/aws/sagemaker/Clusters/*",
        "arn:aws:logs:us-east-1:123456789012:log-group:/aws/sagemaker/Clusters/*:log-stream:*",
    ]
    assert by_sid["CloudwatchLogsUnscoped"]["Action"] == ["logs:DescribeLogGroups", "logs:StopQuery"]


def test_an_existing_amp_workspace_is_used_and_none_is_created(run) -> None:
    mapping = stack_mapping("dev")
    arn = "arn:aws:aps:us-west-2:123456789012:workspace/ws-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
    endpoint = "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d/"
    mapping[OBS].update(ampWorkspaceArn=arn, ampWorkspaceEndpoint=endpoint, logging=False)
    result = registered(run("dev", mapping))
    assert result.of_type(AMP) == []
    values = _values(result)
    assert values["ampWorkspace"] == {"arn": arn, "prometheusEndpoint": endpoint.rstrip("/")}
    assert values["logging"] == {"enabled": False}
    policy = json.loads(inputs(result, ROLE_POLICY, "observability-policy")["policy"])["Statement"]
    assert policy[0]["Resource"] == arn


def test_observability_off_registers_no_addon_and_no_workspace(run) -> None:
    mapping = stack_mapping("dev")
    mapping[OBS]["enabled"] = False
    result = registered(run("dev", mapping))
    assert [a for a in result.of_type(ADDON) if a.name == "observability-addon"] == []
    assert result.of_type(AMP) == []
    assert len(result.of_type(DASHBOARD)) == 1, "the dashboard reads CloudWatch, not the add-on"


@pytest.mark.parametrize(
    ("change", "path", "text"),
    [
        ({"addonVersion": "v1.0.4-eksbuild.1"}, "observability.addonVersion", "below the minimum"),
        ({"addonVersion": "1.0.5"}, "observability.addonVersion", "pattern"),
        (
            {"ampWorkspaceArn": "arn:aws:aps:us-west-2:123456789012:workspace/ws-abc"},
            "observability.ampWorkspaceEndpoint",
            "go together",
        ),
        (
            {
                "ampWorkspaceArn": "arn:aws:aps:us-west-2:123456789012:workspace/ws-abc",
                "ampWorkspaceEndpoint": "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-other/",
            },
            "observability.ampWorkspaceEndpoint",
            "does not belong",
        ),
        (
            {"alarms": {"snsTopic": True, "snsTopicArn": "arn:aws:sns:us-west-2:123456789012:ops"}},
            "observability.alarms.snsTopic",
            "not both",
        ),
        ({"metrics": {"inferenceMetrics": "FULL"}}, "observability.metrics.inferenceMetrics", "BASIC"),
        ({"scrapeInterval": 5}, "observability.scrapeInterval", "10"),
        ({"dashbord": False}, "observability.dashbord", "unknown key"),
    ],
)
def test_observability_config_errors_name_the_key(run, change: dict[str, Any], path: str, text: str) -> None:
    mapping = stack_mapping("dev")
    mapping[OBS].update(change)
    result = run("dev", mapping)
    assert result.config_error is not None
    issues = {i.path: i.message for i in result.config_error.issues}
    assert path in issues, issues
    assert text in issues[path]
    assert result.registrations == []


# --- the dashboard -----------------------------------------------------------------------------------------


def test_prod_dashboard_has_one_row_per_endpoint_with_its_target_group(prod: StackRun) -> None:
    body = _body(prod)
    assert inputs(prod, DASHBOARD, "dashboards-dashboard")["dashboardName"] == "hpi-prod-inference"
    lb = prod.named(ALB, "front-door-alb").outputs["arnSuffix"]
    tgs = {r.name: r.outputs["arnSuffix"] for r in prod.of_type(TG)}
    rows: dict[int, list[dict[str, Any]]] = {}
    for widget in body["widgets"]:
        rows.setdefault(widget["y"], []).append(widget)
    assert sorted(rows) == [0, 2, 8, 14, 20]
    headings = [rows[y][0]["properties"]["markdown"].split("\n")[0] for y in (2, 8, 14)]
    assert headings == ["## llama-70b-kvaware", "## llama-70b-dpd", "## qwen-sglang"]
    kvaware = rows[2]
    assert [w["properties"].get("title") for w in kvaware[1:]] == [
        "llama-70b-kvaware: requests and errors",
        "llama-70b-kvaware: target response time",
        "llama-70b-kvaware: targets",
    ]
    dims = ["TargetGroup", tgs["front-door-tg-llama-70b-kvaware"], "LoadBalancer", lb]
    assert kvaware[1]["properties"]["metrics"] == [
        ["AWS/ApplicationELB", "RequestCount", *dims],
        ["AWS/ApplicationELB", "HTTPCode_Target_4XX_Count", *dims],
        ["AWS/ApplicationELB", "HTTPCode_Target_5XX_Count", *dims],
    ]
    assert kvaware[3]["properties"]["metrics"] == [
        ["AWS/ApplicationELB", "HealthyHostCount", *dims],
        ["AWS/ApplicationELB", "UnHealthyHostCount", *dims],
    ]
    assert rows[8][1]["properties"]["metrics"][0][3] == tgs["front-door-tg-llama-70b-dpd"]
    # the gateway-served endpoint has no front-door target group
    assert rows[14][1]["properties"]["markdown"] == "`qwen-sglang` is not routed through the front-door ALB."
    text = kvaware[0]["properties"]["markdown"]
    assert (
        'sum(rate(vllm:prefix_cache_hits_total{namespace="inference",pod=~"llama-70b-kvaware.*"}[5m])) / '
        'sum(rate(vllm:prefix_cache_queries_total{namespace="inference",pod=~"llama-70b-kvaware.*"}[5m]))'
    ) in text
    assert "vllm:time_to_first_token_seconds_bucket" in text and "vllm:inter_token_latency_seconds_bucket" in text
    assert 'sum(vllm:num_requests_waiting{namespace="inference",pod=~"llama-70b-kvaware.*"})' in text
    assert "DCGM_FI_DEV_GPU_UTIL" in text
    waf = rows[20]
    assert waf[0]["properties"]["metrics"] == [
        ["AWS/WAFV2", "AllowedRequests", "WebACL", "hpi-prod-front-door", "Rule", "ALL", "Region", "us-east-1"],
        ["AWS/WAFV2", "BlockedRequests", "WebACL", "hpi-prod-front-door", "Rule", "ALL", "Region", "us-east-1"],
    ]
    assert [m[5] for m in waf[1]["properties"]["metrics"]] == [
        "hpi-prod-front-door-rate-limit-caller",
        "hpi-prod-front-door-rate-limit-ip",
    ]


def test_dev_dashboard_rows_without_a_front_door(stack_runs: dict[str, StackRun]) -> None:
    body = _body(stack_runs["dev"])
    assert [w["type"] for w in body["widgets"]] == ["text", "text", "text"]
    assert body["widgets"][1]["properties"]["markdown"].startswith("## llama-8b\nnamespace `inference`")
    assert body["widgets"][2]["properties"]["markdown"] == "`llama-8b` is not routed through the front-door ALB."
    assert stack_runs["dev"].of_type(ALARM) == [] and stack_runs["dev"].of_type(TOPIC) == []


# --- alarms and the topic ----------------------------------------------------------------------------------


def test_prod_alarms_cover_5xx_rate_target_4xx_unhealthy_targets_and_waf_blocks(prod: StackRun) -> None:
    alarms = {r.name: inputs(prod, ALARM, r.name) for r in prod.of_type(ALARM)}
    assert set(alarms) == {
        "dashboards-alb-5xx-rate",
        "dashboards-llama-70b-kvaware-4xx",
        "dashboards-llama-70b-kvaware-unhealthy",
        "dashboards-llama-70b-dpd-4xx",
        "dashboards-llama-70b-dpd-unhealthy",
        "dashboards-waf-blocked",
    }
    topic = prod.named(TOPIC, "dashboards-alarm-topic").outputs["arn"]
    for name, alarm in alarms.items():
        assert alarm["alarmActions"] == [topic] and alarm["okActions"] == [topic], name
        assert alarm["treatMissingData"] == "notBreaching", name
    lb = prod.named(ALB, "front-door-alb").outputs["arnSuffix"]
    rate = alarms["dashboards-alb-5xx-rate"]
    assert rate["threshold"] == 5.0 and rate["comparisonOperator"] == "GreaterThanThreshold"
    queries = {q["id"]: q for q in rate["metricQueries"]}
    assert (
        queries["rate"]["expression"] == "IF(requests > 0, 100 * (FILL(elb5xx, 0) + FILL(target5xx, 0)) / requests, 0)"
    )
    assert queries["rate"]["returnData"] is True
    assert queries["elb5xx"]["metric"] == {
        "namespace": "AWS/ApplicationELB",
        "metricName": "HTTPCode_ELB_5XX_Count",
        "period": 300,
        "stat": "Sum",
        "dimensions": {"LoadBalancer": lb},
    }
    tg = prod.named(TG, "front-door-tg-llama-70b-kvaware").outputs["arnSuffix"]
    four = alarms["dashboards-llama-70b-kvaware-4xx"]
    assert (four["metricName"], four["threshold"], four["period"]) == ("HTTPCode_Target_4XX_Count", 50, 300)
    assert four["dimensions"] == {"LoadBalancer": lb, "TargetGroup": tg}
    unhealthy = alarms["dashboards-llama-70b-kvaware-unhealthy"]
    assert (unhealthy["metricName"], unhealthy["threshold"], unhealthy["evaluationPeriods"]) == (
        "UnHealthyHostCount",
        0,
        3,
    )
    waf = alarms["dashboards-waf-blocked"]
    assert waf["namespace"] == "AWS/WAFV2" and waf["metricName"] == "BlockedRequests"
    assert waf["dimensions"] == {"WebACL": "hpi-prod-front-door", "Rule": "ALL", "Region": "us-east-1"}
    assert waf["threshold"] == 500


def test_alarm_topic_is_encrypted_with_a_key_cloudwatch_may_use(prod: StackRun) -> None:
    key = prod.named(KMS, "dashboards-alarm-topic-key")
    topic = inputs(prod, TOPIC, "dashboards-alarm-topic")
    assert topic["kmsMasterKeyId"] == key.outputs["arn"]
    assert topic["name"] == "hpi-prod-alarms"
    assert key.inputs["enableKeyRotation"] is True
    statements = {s["Sid"]: s for s in json.loads(key.inputs["policy"])["Statement"]}
    assert statements["CloudWatchAlarmsPublish"]["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert statements["CloudWatchAlarmsPublish"]["Action"] == ["kms:Decrypt", "kms:GenerateDataKey*"]
    publish = json.loads(inputs(prod, TOPIC_POLICY, "dashboards-alarm-topic-policy")["policy"])["Statement"][0]
    assert publish["Action"] == "sns:Publish"
    assert publish["Resource"] == prod.named(TOPIC, "dashboards-alarm-topic").outputs["arn"]
    assert publish["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}


def test_an_existing_topic_arn_is_notified_and_alarms_can_be_switched_off(run) -> None:
    mapping = stack_mapping("prod")
    mapping[OBS]["alarms"] = {"snsTopicArn": "arn:aws:sns:us-east-1:123456789012:ops-pager"}
    result = registered(run("prod", mapping))
    assert result.of_type(TOPIC) == []
    assert {tuple(inputs(result, ALARM, a.name)["alarmActions"]) for a in result.of_type(ALARM)} == {
        ("arn:aws:sns:us-east-1:123456789012:ops-pager",)
    }
    mapping[OBS]["alarms"] = {"enabled": False}
    assert registered(run("prod", mapping)).of_type(ALARM) == []


def test_the_addon_workload_catalogue_invents_no_requests() -> None:
    """The rehearsal/capacity data: what AWS documents about the add-on's pods, nothing made up."""
    from components.config.observability import NAMESPACE, OBSERVABILITY_WORKLOADS

    assert NAMESPACE == "hyperpod-observability"
    assert [w.selector for w in OBSERVABILITY_WORKLOADS] == [
        "control-plane=hyperpod-observability-controller-manager",
        "app.kubernetes.io/name=hyperpod-node-collector",
        "central-collector",
    ]
    assert all(w.requests is None for w in OBSERVABILITY_WORKLOADS), "AWS publishes no requests: keep them unknown"
    assert all("hyperpod-observability-addon-troubleshooting" in w.source for w in OBSERVABILITY_WORKLOADS)
