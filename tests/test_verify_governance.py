"""The post-up checks of task governance and of what the add-ons run (tools/verify/governance.py) and of the ALB's
access-log delivery (tools/verify/report.py ``alb-access-logs``), against a recorded staging cluster (two teams,
three priority classes: stacks/Pulumi.staging.yaml) and botocore Stubbers."""

# ruff: noqa: F811 - the fixtures `cluster` and `clients` come from tests/test_verify.py
from __future__ import annotations

from typing import Any

import pytest

from tests.test_verify import clients, cluster, rows, run  # noqa: F401 - fixtures
from tests.verify_cluster import ALB_ARN, ALB_DNS, ALB_LOG_BUCKET, StubbedClients, alb_log_attributes, prod
from tools.verify import governance, report

PREFIX_POD = "/api/v1/pods"
WPC = "/apis/kueue.x-k8s.io/v1beta1/workloadpriorityclasses"
KUEUE = "/apis/apps/v1/namespaces/kueue-system/deployments/kueue-controller-manager"


def _worker(cluster: dict[str, Any], endpoint: str) -> dict[str, Any]:
    return next(p for p in cluster[PREFIX_POD]["items"] if p["metadata"]["name"].startswith(f"{endpoint}-6c"))


def test_kueue_labels_on_the_pods_hold(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, _, _ = run(governance.governance_labels, cluster, clients)
    assert rows(results) == [
        (
            "PASS",
            "llama-8b-prefix: pod hyperpod-ns-serving/llama-8b-prefix-6c7d8f9b5-x2x4z carries "
            "kueue.x-k8s.io/queue-name=hyperpod-ns-serving-localqueue, kueue.x-k8s.io/priority-class=inference-priority",
        ),
        (
            "PASS",
            "llama-8b-kvaware: pod hyperpod-ns-research/llama-8b-kvaware-6c7d8f9b5-x2x4z carries "
            "kueue.x-k8s.io/queue-name=hyperpod-ns-research-localqueue, "
            "kueue.x-k8s.io/priority-class=experimentation-priority",
        ),
    ]
    assert all(r.settles == ("governance-labels-propagated",) for r in results)


def test_labels_the_operator_dropped_fail_and_settle(cluster: dict[str, Any], clients: StubbedClients) -> None:
    worker = _worker(cluster, "llama-8b-prefix")
    del worker["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    worker["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "inference"
    results, _, _ = run(governance.governance_labels, cluster, clients)
    assert results[0].status == "FAIL"
    assert (
        "kueue.x-k8s.io/queue-name is missing; kueue.x-k8s.io/priority-class='inference' (want 'inference-priority')"
        in results[0].detail
    )
    assert results[0].settles == ("governance-labels-propagated",)
    assert results[1].status == "PASS"


def test_no_pod_yet_warns_and_settles_nothing(cluster: dict[str, Any], clients: StubbedClients) -> None:
    cluster[PREFIX_POD]["items"] = [p for p in cluster[PREFIX_POD]["items"] if "-6c" not in p["metadata"]["name"]]
    results, _, _ = run(governance.governance_labels, cluster, clients)
    assert [r.status for r in results] == ["WARN", "WARN"]
    assert all(r.settles == () for r in results)


def test_without_governance_the_checks_skip(cluster: dict[str, Any], clients: StubbedClients) -> None:
    for check in (governance.governance_labels, governance.governance_controller):
        results, _, _ = run(check, cluster, clients, cfg=prod())
        assert [r.status for r in results] == ["SKIP"]


def test_priority_class_names_hold_and_are_recorded(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, ctx, _ = run(governance.governance_priority_classes, cluster, clients)
    assert rows(results) == [
        ("PASS", "inference: WorkloadPriorityClass inference-priority exists (value 100)"),
        ("PASS", "experimentation: WorkloadPriorityClass experimentation-priority exists (value 50)"),
        ("PASS", "training: WorkloadPriorityClass training-priority exists (value 10)"),
    ]
    assert ctx.facts["workloadPriorityClasses"] == {
        "inference-priority": 100,
        "experimentation-priority": 50,
        "training-priority": 10,
    }


def test_another_naming_rule_fails_naming_what_exists(cluster: dict[str, Any], clients: StubbedClients) -> None:
    for item in cluster[WPC]["items"]:
        item["metadata"]["name"] = item["metadata"]["name"].removesuffix("-priority")
    results, _, _ = run(governance.governance_priority_classes, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == (
        "inference: no WorkloadPriorityClass inference-priority (there: experimentation, inference, training)"
    )
    assert results[0].fix.endswith("to the name task governance uses (inference)")
    assert results[0].settles == ("governance-priority-class-name",)


def test_kueue_controller_recorded(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, ctx, _ = run(governance.governance_controller, cluster, clients)
    assert rows(results) == [
        (
            "PASS",
            "kueue-system/kueue-controller-manager: 1/1 ready; manager: {'cpu': '500m', 'memory': '512Mi'}; "
            "1 toleration(s)",
        )
    ]
    assert ctx.facts["kueueController"]["requests"] == {"manager": {"cpu": "500m", "memory": "512Mi"}}
    cluster[KUEUE]["status"] = {"readyReplicas": 0}
    not_ready, _, _ = run(governance.governance_controller, cluster, clients)
    assert not_ready[0].status == "FAIL"
    del cluster[KUEUE]
    missing, _, _ = run(governance.governance_controller, cluster, clients)
    assert missing[0].status == "FAIL"
    assert "no Deployment kueue-system/kueue-controller-manager" in missing[0].detail


def test_no_dynamo_operator_and_no_fluent_bit(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, ctx, _ = run(governance.addon_workloads, cluster, clients)
    assert rows(results) == [
        ("PASS", "no Dynamo operator Deployment (app.kubernetes.io/name=dynamo-operator); CRD "
         "dynamographdeployments.nvidia.com absent"),
    ]  # fmt: skip
    assert ctx.facts["dynamoOperator"] == {"deployments": {}, "crd": False}


def test_a_dynamo_operator_and_a_fluent_bit_sidecar_are_reported(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    dynamo = {
        "metadata": {
            "name": "dynamo-operator-controller-manager",
            "namespace": "dynamo-system",
            "labels": {"app.kubernetes.io/name": "dynamo-operator"},
        },
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "manager", "resources": {"requests": {"cpu": "100m"}}}]}},
        },
    }
    cluster["/apis/apps/v1/deployments"]["items"].append(dynamo)
    cluster["/apis/apiextensions.k8s.io/v1/customresourcedefinitions/dynamographdeployments.nvidia.com"] = {
        "metadata": {"name": "dynamographdeployments.nvidia.com"}
    }
    _worker(cluster, "llama-8b-prefix")["spec"]["containers"].append(
        {"name": "fluent-bit", "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}
    )
    results, ctx, _ = run(governance.addon_workloads, cluster, clients)
    assert [r.status for r in results] == ["WARN", "WARN"]
    assert results[0].detail.startswith(
        "the NVIDIA Dynamo operator runs: dynamo-system/dynamo-operator-controller-manager"
    )
    assert results[0].settles == ("addon-dynamo-operator",)
    assert (
        results[1].detail
        == "fluent-bit sidecar in the workers: llama-8b-prefix: {'fluent-bit': {'cpu': '50m', 'memory': '64Mi'}}"
    )
    assert results[1].settles == ("operator-37-fluent-bit-sidecar",)
    assert ctx.facts["dynamoOperator"]["crd"] is True


def _alb(clients: StubbedClients) -> None:
    clients.queue(
        "elbv2",
        "describe_load_balancers",
        {
            "LoadBalancers": [
                {"LoadBalancerArn": ALB_ARN, "DNSName": ALB_DNS, "LoadBalancerName": "hpi-staging-front-door"}
            ]
        },
    )


@pytest.mark.parametrize(
    ("listed", "status"),
    [({"KeyCount": 1, "Contents": [{"Key": "alb/AWSLogs/111122223333/x"}]}, "PASS"), ({"KeyCount": 0}, "WARN")],
)
def test_alb_access_logs_delivered_or_not_yet(
    listed: dict[str, Any], status: str, cluster: dict[str, Any], clients: StubbedClients
) -> None:
    clients.caller()
    _alb(clients)
    clients.queue("elbv2", "describe_load_balancer_attributes", alb_log_attributes(), {"LoadBalancerArn": ALB_ARN})
    clients.queue(
        "s3", "list_objects_v2", listed, {"Bucket": ALB_LOG_BUCKET, "Prefix": "alb/AWSLogs/111122223333/", "MaxKeys": 1}
    )
    results, _, _ = run(report.alb_access_logs, cluster, clients)
    assert [r.status for r in results] == [status]
    assert f"s3://{ALB_LOG_BUCKET}/alb/AWSLogs/111122223333/" in results[0].detail
    assert results[0].settles == ()


def test_alb_access_logs_off_fail(cluster: dict[str, Any], clients: StubbedClients) -> None:
    _alb(clients)
    clients.queue(
        "elbv2", "describe_load_balancer_attributes", alb_log_attributes("false"), {"LoadBalancerArn": ALB_ARN}
    )
    results, _, _ = run(report.alb_access_logs, cluster, clients)
    assert rows(results) == [
        ("FAIL", "hpi-staging-front-door writes no access logs (access_logs.s3.enabled is not true)")
    ]
