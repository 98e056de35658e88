"""``python -m tools.verify``: every check both ways (holds / fails with its fix), the command line's exit codes,
the event-log parser, and what a run writes to ``verified/<stack>.json``.

The Kubernetes side is the official client against a local HTTP server on 127.0.0.1 serving recorded API
responses (``tests/verify_cluster.py``: no kube-apiserver binary can be installed on this machine); the AWS side is
botocore clients with a Stubber (responses validated against botocore's models).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CRDS, CRDS_MISSING
from tests.verify_cluster import (
    ALB_ARN,
    ALB_DNS,
    GPU_ALLOC,
    OP_NS,
    STAGING_NAMESPACES,
    TG_KVAWARE,
    TG_PREFIX,
    VPC,
    Recorded,
    StubbedClients,
    addon,
    cluster_nodes,
    context,
    healthy_targets,
    kube_server,
    prod,
    staging,
    staging_cluster,
)
from tools.verify import nodes, operator, report, second_door, traffic
from tools.verify.__main__ import listing, run_checks
from tools.verify.base import HttpAnswer, Result

V33 = CRDS / "v3.3"
pytestmark = pytest.mark.skipif(
    not (V33 / "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml").is_file(), reason=CRDS_MISSING
)

OUTPUTS = {
    "frontDoorAlbDnsName": ALB_DNS,
    "frontDoorUrl": "https://api.staging.inference.example.internal",
    "vpcId": VPC,
}
ROUTER_PREFIX = f"/api/v1/namespaces/{OP_NS}/services/llama-8b-prefix-hyperpod-ns-serving-routing-service"


@pytest.fixture
def cluster() -> dict[str, Any]:
    return staging_cluster(V33)


@pytest.fixture
def clients() -> Iterator[StubbedClients]:
    c = StubbedClients()
    yield c


def run(
    check: Any, responses: dict[str, Any], clients: StubbedClients, cfg: Any = None, **kwargs: Any
) -> tuple[list[Result], Any, Recorded]:
    recorded = Recorded(responses)
    with kube_server(recorded) as kube:
        ctx = context(cfg or staging(), kube, clients, outputs=kwargs.pop("outputs", OUTPUTS), **kwargs)
        results = check(ctx)
    clients.assert_all_used()
    assert {method for method, _ in recorded.requests} <= {"GET"}, "verify only reads"
    return results, ctx, recorded


def rows(results: list[Result]) -> list[tuple[str, str]]:
    return [(r.status, r.detail) for r in results]


# --- 1. traffic ----------------------------------------------------------------------------------------------


def test_router_service_holds_and_records_the_ports(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, ctx, _ = run(traffic.router_service, cluster, clients)
    assert [r.status for r in results] == ["PASS", "PASS"]
    assert results[0].detail == (
        "llama-8b-prefix: hyperpod-inference-system/llama-8b-prefix-hyperpod-ns-serving-routing-service:8000 -> targetPort 8080, 1 pod(s)"
    )
    assert results[0].fix == "pin it: ingress.routes[0].servicePort: 8000"
    assert results[0].settles == ("router-service-port",)
    assert ctx.services["llama-8b-prefix"] == {
        "namespace": OP_NS,
        "name": "llama-8b-prefix-hyperpod-ns-serving-routing-service",
        "exists": True,
        "ports": [{"port": 8000, "targetPort": 8080, "name": "http"}],
    }


def test_router_service_on_another_port_fails_with_the_port_to_set(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    cluster[ROUTER_PREFIX]["spec"]["ports"][0]["port"] = 8080
    results, ctx, _ = run(traffic.router_service, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == (
        "llama-8b-prefix: Service hyperpod-inference-system/llama-8b-prefix-hyperpod-ns-serving-routing-service listens on 8080, "
        "the binding uses 8000"
    )
    assert results[0].fix == "set ingress.routes[0].servicePort: 8080, the router Service listens there"
    assert results[1].status == "PASS"
    assert ctx.services["llama-8b-prefix"]["ports"] == [{"port": 8080, "targetPort": 8080, "name": "http"}]


def test_a_missing_router_service_fails_naming_the_services_there(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    del cluster[ROUTER_PREFIX]
    listed = cluster[f"/api/v1/namespaces/{OP_NS}/services"]["items"]
    listed[0]["metadata"]["name"] = "llama-8b-prefix-router"
    results, ctx, _ = run(traffic.router_service, cluster, clients)
    assert results[0].status == "FAIL"
    assert (
        "which does not exist (Services there: llama-8b-prefix-router, llama-8b-kvaware-hyperpod-ns-research-routing-service)"
        in results[0].detail
    )
    assert (
        results[0].fix
        == "set ingress.routes[0].serviceName: llama-8b-prefix-router and serviceNamespace: hyperpod-inference-system"
    )
    assert ctx.services["llama-8b-prefix"] == {
        "namespace": OP_NS,
        "name": "llama-8b-prefix-hyperpod-ns-serving-routing-service",
        "exists": False,
    }


def test_a_target_port_no_pod_exposes_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    cluster[ROUTER_PREFIX]["spec"]["ports"][0]["targetPort"] = 9000
    results, _, _ = run(traffic.router_service, cluster, clients)
    assert results[0].status == "FAIL"
    assert (
        "targetPort 9000 of hyperpod-inference-system/llama-8b-prefix-hyperpod-ns-serving-routing-service is a port no pod it selects exposes (they expose 8080, http)"
        in results[0].detail
    )


def test_a_service_selecting_no_pod_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    cluster[ROUTER_PREFIX]["spec"]["selector"] = {"app": "nothing"}
    results, _, _ = run(traffic.router_service, cluster, clients)
    assert results[0].status == "FAIL"
    assert "selects no pod" in results[0].detail


def test_binding_bound_with_healthy_targets_holds(cluster: dict[str, Any], clients: StubbedClients) -> None:
    clients.queue("elbv2", "describe_target_health", healthy_targets("10.128.32.11"), {"TargetGroupArn": TG_PREFIX})
    clients.queue("elbv2", "describe_target_health", healthy_targets("10.128.32.12"), {"TargetGroupArn": TG_KVAWARE})
    results, _, _ = run(traffic.target_group_binding, cluster, clients)
    assert rows(results) == [
        ("PASS", "llama-8b-prefix: bound (generation 1), 1 healthy target(s)"),
        ("PASS", "llama-8b-kvaware: bound (generation 1), 1 healthy target(s)"),
    ]


def test_binding_not_reconciled_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    path = f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{OP_NS}/targetgroupbindings/llama-8b-prefix-front-door"
    cluster[path]["metadata"]["generation"] = 2
    clients.queue("elbv2", "describe_target_health", healthy_targets("10.128.32.12"), {"TargetGroupArn": TG_KVAWARE})
    results, _, _ = run(traffic.target_group_binding, cluster, clients)
    assert results[0].status == "FAIL"
    assert "not reconciled by the LB controller (observedGeneration 1, generation 2)" in results[0].detail
    assert results[1].status == "PASS"


def test_no_healthy_target_fails_with_aws_reasons(cluster: dict[str, Any], clients: StubbedClients) -> None:
    unhealthy = {
        "TargetHealthDescriptions": [
            {
                "Target": {"Id": "10.128.32.11", "Port": 8080},
                "TargetHealth": {
                    "State": "unhealthy",
                    "Reason": "Target.FailedHealthChecks",
                    "Description": "Health checks failed",
                },
            }
        ]
    }
    clients.queue("elbv2", "describe_target_health", unhealthy, {"TargetGroupArn": TG_PREFIX})
    clients.queue("elbv2", "describe_target_health", {"TargetHealthDescriptions": []}, {"TargetGroupArn": TG_KVAWARE})
    results, _, _ = run(traffic.target_group_binding, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == (
        f"llama-8b-prefix: no healthy target in {TG_PREFIX}: 10.128.32.11:8080 unhealthy "
        "(Target.FailedHealthChecks: Health checks failed)"
    )
    assert results[0].fix.startswith("the health check (/health on the pods' port) must answer 200")
    assert results[1].detail.endswith("no target registered")


def test_binding_missing_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    del cluster[f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{OP_NS}/targetgroupbindings/llama-8b-kvaware-front-door"]
    clients.queue("elbv2", "describe_target_health", healthy_targets("10.128.32.11"), {"TargetGroupArn": TG_PREFIX})
    results, _, _ = run(traffic.target_group_binding, cluster, clients)
    assert results[1] == Result(
        "target-group-binding",
        "FAIL",
        f"llama-8b-kvaware: no TargetGroupBinding {OP_NS}/llama-8b-kvaware-front-door",
        results[1].fix,
    )


def _record(alias: str) -> dict[str, Any]:
    return {
        "ResourceRecordSets": [
            {
                "Name": "api.staging.inference.example.internal.",
                "Type": "A",
                "AliasTarget": {"HostedZoneId": "ZHURV8PSTC4K8", "DNSName": alias, "EvaluateTargetHealth": True},
            }
        ],
        "IsTruncated": False,
        "MaxItems": "1",
    }


DNS_PARAMS = {
    "HostedZoneId": "Z0EXAMPLE2HPISTAGE",
    "StartRecordName": "api.staging.inference.example.internal.",
    "StartRecordType": "A",
    "MaxItems": "1",
}


def test_dns_alias_to_the_alb_holds(cluster: dict[str, Any], clients: StubbedClients) -> None:
    clients.queue("route53", "list_resource_record_sets", _record(f"dualstack.{ALB_DNS}."), DNS_PARAMS)
    results, _, _ = run(traffic.front_door_dns, cluster, clients)
    assert rows(results) == [("PASS", f"api.staging.inference.example.internal. -> {ALB_DNS}")]


def test_dns_alias_elsewhere_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    clients.queue("route53", "list_resource_record_sets", _record("other-alb.eu-west-2.elb.amazonaws.com."), DNS_PARAMS)
    results, _, _ = run(traffic.front_door_dns, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == (
        f"api.staging.inference.example.internal. points at other-alb.eu-west-2.elb.amazonaws.com, not the stack's ALB {ALB_DNS}"
    )


def test_dns_without_the_record_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    clients.queue(
        "route53",
        "list_resource_record_sets",
        {"ResourceRecordSets": [], "IsTruncated": False, "MaxItems": "1"},
        DNS_PARAMS,
    )
    results, _, _ = run(traffic.front_door_dns, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == "no A record api.staging.inference.example.internal. in hosted zone Z0EXAMPLE2HPISTAGE"


def test_dns_without_outputs_is_skipped_not_passed(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, _, _ = run(traffic.front_door_dns, cluster, clients, outputs={})
    assert results[0].status == "SKIP"
    assert "pass --outputs FILE" in results[0].fix


class Door:
    """The front door's answers: ``status[(host or '', with token?)]``; records what it was sent."""

    def __init__(self, answers: dict[tuple[str, bool], int]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str, dict[str, str], bytes | None]] = []

    def __call__(self, url: str, method: str, headers: dict[str, str], body: bytes | None) -> HttpAnswer:
        self.sent.append((url, method, headers, body))
        key = (headers.get("Host", ""), "Authorization" in headers)
        return HttpAnswer(self.answers[key], 42)


KV_HOST = "kvaware.staging.inference.example.internal"


def test_unauthenticated_requests_are_refused_as_each_route_authenticates(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    door = Door({("", False): 302, (KV_HOST, False): 401})
    results, ctx, _ = run(traffic.front_door_requests, cluster, clients, http=door)
    assert [r.status for r in results] == ["PASS", "PASS"]
    assert results[1].detail == (
        "llama-8b-kvaware: POST https://api.staging.inference.example.internal/v1/completions without a token -> 401 "
        "(jwt-validation answers 401 without a bearer token)"
    )
    assert results[1].settles == ("alb-jwt-responses",)
    assert results[0].settles == ()  # a browser route's redirect says nothing about JWT
    assert json.loads(door.sent[1][3] or b"") == {"model": "Llama-3.1-8B", "max_tokens": 1, "prompt": "ping"}
    assert json.loads(door.sent[0][3] or b"")["messages"] == [{"role": "user", "content": "ping"}]
    assert ctx.facts["frontDoorResponses"] == {
        "llama-8b-prefix": {"withoutToken": 302},
        "llama-8b-kvaware": {"withoutToken": 401},
    }


def test_an_unauthenticated_request_that_gets_through_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    door = Door({("", False): 302, (KV_HOST, False): 200})
    results, _, _ = run(traffic.front_door_requests, cluster, clients, http=door)
    assert results[1].status == "FAIL"
    assert results[1].detail.endswith(
        "without a token -> 200, expected 401 (jwt-validation answers 401 without a bearer token)"
    )
    assert "lets unauthenticated requests through" in results[1].fix


def test_with_a_token_one_completion_goes_through(cluster: dict[str, Any], clients: StubbedClients) -> None:
    door = Door({("", True): 200, (KV_HOST, True): 403})
    results, _, _ = run(traffic.front_door_requests, cluster, clients, http=door, token="eyJ.test.token")
    assert results[0].status == "PASS"
    assert results[0].detail == (
        "llama-8b-prefix: POST https://api.staging.inference.example.internal/v1/chat/completions with the token -> 200, "
        "first byte after 42 ms"
    )
    assert results[1].status == "FAIL"
    assert results[1].fix.startswith("401/403: the token does not satisfy ingress.jwt")
    assert door.sent[0][2]["Authorization"] == "Bearer eyJ.test.token"


def test_http_request_measures_a_real_answer_and_a_refused_connection() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Alb(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            code = 200 if self.headers.get("Authorization") == "Bearer ok" else 401
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Alb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/completions"
    try:
        ok = traffic.http_request(url, "POST", {"Authorization": "Bearer ok"}, b"{}")
        denied = traffic.http_request(url, "POST", {}, b"{}")
    finally:
        server.shutdown()
        server.server_close()
    refused = traffic.http_request(url, "POST", {}, b"{}")
    assert (ok.status, denied.status, refused.status) == (200, 401, None)
    assert ok.ttfb_ms is not None and ok.ttfb_ms >= 0
    assert refused.error


# --- 2. operator and CRDs ---------------------------------------------------------------------------------------


def test_operator_addon_active_at_the_pinned_version_holds(cluster: dict[str, Any], clients: StubbedClients) -> None:
    clients.queue(
        "eks",
        "describe_addon",
        addon(),
        {"clusterName": "hpi-staging-eks", "addonName": "amazon-sagemaker-hyperpod-inference"},
    )
    results, ctx, _ = run(operator.operator_addon, cluster, clients)
    assert rows(results) == [("PASS", "amazon-sagemaker-hyperpod-inference v1.5.0-eksbuild.1 ACTIVE")]
    assert ctx.facts["operatorAddon"] == {"version": "v1.5.0-eksbuild.1", "status": "ACTIVE"}


def test_operator_addon_at_another_version_fails_with_the_version_to_set(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    clients.queue("eks", "describe_addon", addon("v1.4.0-eksbuild.1"))
    results, _, _ = run(operator.operator_addon, cluster, clients)
    assert results[0].status == "FAIL"
    assert (
        results[0].fix == "set operator.addonVersion: v1.4.0-eksbuild.1, or run pulumi up to install v1.5.0-eksbuild.1"
    )


def test_operator_addon_degraded_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    clients.queue("eks", "describe_addon", addon(status="DEGRADED"))
    results, _, _ = run(operator.operator_addon, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == "amazon-sagemaker-hyperpod-inference is DEGRADED"


def test_denied_addon_read_names_the_iam_action(cluster: dict[str, Any], clients: StubbedClients) -> None:
    clients.error("eks", "describe_addon", "AccessDeniedException")
    results, _, _ = run(operator.operator_addon, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].fix == "grant eks:DescribeAddon to the credentials running verify (read-only), then rerun"


def test_every_field_staging_sets_is_in_the_installed_crd(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, ctx, _ = run(operator.crd_fields, cluster, clients)
    assert [r.status for r in results] == ["PASS", "PASS"]
    assert ctx.facts["crdVersions"] == {
        "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com": ["v1", "v1alpha1"],
        "jumpstartmodels.inference.sagemaker.aws.amazon.com": ["v1", "v1alpha1"],
    }


def test_a_field_an_older_crd_lacks_is_reported_as_pruned(cluster: dict[str, Any], clients: StubbedClients) -> None:
    crds = cluster["/apis/apiextensions.k8s.io/v1/customresourcedefinitions"]["items"]
    iec = next(c for c in crds if c["spec"]["names"]["kind"] == "InferenceEndpointConfig")
    v1 = next(v for v in iec["spec"]["versions"] if v["name"] == "v1")
    del v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["intelligentRoutingSpec"]["properties"][
        "routingStrategy"
    ]
    results, _, _ = run(operator.crd_fields, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == (
        "llama-8b-prefix: the installed inferenceendpointconfigs.inference.sagemaker.aws.amazon.com has no "
        "spec.intelligentRoutingSpec.routingStrategy: the API server prunes it"
    )
    assert results[0].fix.startswith(
        "raise operator.addonVersion to a release whose CRD has spec.intelligentRoutingSpec.routingStrategy"
    )


def test_the_gateway_opt_in_against_a_3_3_crd_is_pruned(clients: StubbedClients) -> None:
    responses = {
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions": staging_cluster(V33)[
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        ]
    }
    results, _, _ = run(operator.crd_fields, responses, clients, cfg=prod())
    qwen = next(r for r in results if r.detail.startswith("qwen-sglang"))
    assert qwen.status == "FAIL"
    assert "spec.inferenceGateway" in qwen.detail and qwen.detail.endswith("(the model never joins the gateway)")
    assert next(r for r in results if "InferenceGatewayConfig CRD" in r.detail).status == "FAIL"


def test_pruned_paths_walks_lists_maps_and_preserved_fields() -> None:
    schema = {
        "properties": {
            "a": {"type": "array", "items": {"properties": {"x": {}}}},
            "m": {"additionalProperties": {"properties": {"y": {}}}},
            "free": {"x-kubernetes-preserve-unknown-fields": True},
        }
    }
    value = {"a": [{"x": 1, "z": 2}], "m": {"k": {"y": 1, "w": 2}}, "free": {"anything": 1}, "gone": 1}
    assert list(operator.pruned_paths(value, schema, "spec")) == ["spec.a[0].z", "spec.m.k.w", "spec.gone"]


IEC = "/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/hyperpod-ns-serving/inferenceendpointconfigs/llama-8b-prefix"


def test_endpoint_status_complete_holds_and_failed_fails_with_the_condition(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    results, _, _ = run(operator.endpoint_status, cluster, clients)
    assert rows(results) == [
        ("PASS", "llama-8b-prefix: DeploymentComplete"),
        ("PASS", "llama-8b-kvaware: DeploymentComplete"),
    ]
    cluster[IEC]["status"] = {
        "state": "DeploymentFailed",
        "conditions": [
            {
                "type": "DeploymentComplete",
                "status": "False",
                "reason": "InsufficientCapacity",
                "message": "0/5 nodes are available",
            }
        ],
    }
    failed, _, _ = run(operator.endpoint_status, cluster, clients)
    assert failed[0].status == "FAIL"
    assert (
        failed[0].detail
        == "llama-8b-prefix: state DeploymentFailed; DeploymentComplete: InsufficientCapacity 0/5 nodes are available"
    )


def test_endpoint_still_in_progress_asks_to_wait(cluster: dict[str, Any], clients: StubbedClients) -> None:
    cluster[IEC]["status"] = {"state": "DeploymentInProgress"}
    results, _, _ = run(operator.endpoint_status, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].fix == "a fresh endpoint takes a while: rerun with --wait 20"


def test_tiered_storage_on_a_cluster_with_it_on_p_nodes_settles_neither_question(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    results, _, _ = run(operator.endpoint_status, cluster, clients)
    assert results[0].settles == ()  # staging: TieredStorageConfig on, P5 nodes: neither open question is asked


def test_endpoint_pods_recorded_and_a_missing_pod_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, ctx, _ = run(operator.endpoint_pods_check, cluster, clients)
    assert [r.status for r in results] == ["PASS", "PASS"]
    assert ctx.facts["podLabels"]["llama-8b-prefix"] == {
        "app": "llama-8b-prefix",
        "sagemaker.amazonaws.com/endpoint": "llama-8b-prefix",
        "kueue.x-k8s.io/queue-name": "hyperpod-ns-serving-localqueue",
        "kueue.x-k8s.io/priority-class": "inference-priority",
    }
    pods = cluster["/api/v1/pods"]["items"]
    cluster["/api/v1/pods"]["items"] = [p for p in pods if not p["metadata"]["name"].startswith("llama-8b-kvaware-6c")]
    missing, _, _ = run(operator.endpoint_pods_check, cluster, clients)
    assert missing[1].status == "FAIL"
    assert missing[1].detail == "llama-8b-kvaware: no pod named llama-8b-kvaware-* in hyperpod-ns-research"


def _prod_worker(env: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "llama-70b-kvaware-5f6d7c8b9-r4t5y",
            "namespace": "inference",
            "labels": {"app": "llama-70b-kvaware"},
        },
        "spec": {"containers": [{"name": "worker", "env": env, "ports": [{"containerPort": 8000}]}]},
        "status": {"phase": "Running", "podIP": "10.0.40.5"},
    }


LOG = "/api/v1/namespaces/inference/pods/llama-70b-kvaware-5f6d7c8b9-r4t5y/log"


def test_redis_endpoint_needs_the_remote_url_and_a_clean_log(clients: StubbedClients) -> None:
    env = [{"name": "LMCACHE_REMOTE_URL", "valueFrom": {"secretKeyRef": {"name": "kv", "key": "url"}}}]
    responses = {"/api/v1/pods": {"items": [_prod_worker(env)]}, LOG: "INFO lmcache: connected to remote backend\n"}
    results, _, _ = run(operator.endpoint_pods_check, responses, clients, cfg=prod())
    kv = results[0]
    assert (kv.status, kv.settles) == (
        "PASS",
        ("operator-env-valuefrom", "gateway-model-selector", "lmcache-redis-url"),
    )
    responses[LOG] = "ERROR lmcache: redis connection refused (rediss://master.hpi-prod-kv:6379)\n"
    broken, _, _ = run(operator.endpoint_pods_check, responses, clients, cfg=prod())
    assert broken[0].status == "FAIL"
    assert "its log says 'lmcache: redis connection refused'" in broken[0].detail
    # a command outside the cache user's ACL (an LMCache release the table has not read)
    responses[LOG] = "WARNING NOPERM User hpi-prod-kv-lmcache has no permissions to run the 'mget' command\n"
    noperm, _, _ = run(operator.endpoint_pods_check, responses, clients, cfg=prod())
    assert noperm[0].status == "FAIL" and "NOPERM User hpi-prod-kv-lmcache has no permissions" in noperm[0].detail
    responses["/api/v1/pods"] = {"items": [_prod_worker([])]}
    responses[LOG] = ""
    unset, _, _ = run(operator.endpoint_pods_check, responses, clients, cfg=prod())
    assert "LMCACHE_REMOTE_URL is not set (l2CacheLocalUrl was not copied)" in unset[0].detail


def test_metric_names_are_recorded_and_no_metrics_warns(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, ctx, _ = run(operator.endpoint_metrics, cluster, clients)
    assert results[0].status == "PASS"
    assert ctx.facts["metricNames"]["llama-8b-prefix"] == ["lmcache:num_hit_tokens", "vllm:num_requests_running"]
    assert results[0].settles == ("lmcache-metrics", "request-limit-metrics")
    del cluster["/api/v1/namespaces/hyperpod-ns-serving/pods/llama-8b-prefix-6c7d8f9b5-x2x4z:8000/proxy/metrics"]
    silent, _, _ = run(operator.endpoint_metrics, cluster, clients)
    assert silent[0].status == "WARN"


GATEWAY = (
    "/apis/inference.sagemaker.aws.amazon.com/v1alpha1/namespaces/inference/inferencegatewayconfigs/inference-gateway"
)


def _gateway(ready: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "inference-gateway", "namespace": "inference"},
        "spec": {"schedulers": [{"name": "qwen", "modelSelector": {"matchLabels": selector}}]},
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "Reconciled"}], "address": "10.0.50.10"},
    }


def test_gateway_ready_and_selecting_the_pods_holds_then_fails_both_ways(clients: StubbedClients) -> None:
    qwen = {
        "metadata": {"name": "qwen-sglang-7c8d9e-a1b2c", "namespace": "inference", "labels": {"app": "qwen-sglang"}},
        "spec": {"containers": [{"name": "worker", "ports": [{"containerPort": 8000}]}]},
        "status": {"phase": "Running"},
    }
    responses = {"/api/v1/pods": {"items": [qwen]}, GATEWAY: _gateway("True", {"app": "qwen-sglang"})}
    door = Door({("", False): 401})
    results, ctx, _ = run(operator.gateway, responses, clients, cfg=prod(), http=door)
    assert rows(results) == [
        ("PASS", "gateway inference/inference-gateway Ready, serving on 10.0.50.10"),
        ("PASS", "qwen-sglang: scheduler qwen selects its pods"),
        (
            "PASS",
            "qwen-sglang: POST https://10.0.50.10/v1/chat/completions without a token -> 401, first byte after 42 ms",
        ),
    ]
    assert results[2].settles == ("gateway-jwt-responses",)
    assert ctx.facts["gateway"]["address"] == "10.0.50.10"
    responses[GATEWAY] = _gateway("False", {"app": "qwen"})
    door = Door({("", False): 200})
    broken, _, _ = run(operator.gateway, responses, clients, cfg=prod(), http=door)
    assert [r.status for r in broken] == ["FAIL", "FAIL", "FAIL"]
    assert (
        broken[1].detail == "qwen-sglang: no scheduler's modelSelector matches its pods' labels {'app': 'qwen-sglang'}"
    )
    assert broken[2].fix == "the gateway serves without a token: set gateway.spec.auth.jwt"


# --- 3. cluster -----------------------------------------------------------------------------------------------


def test_nodes_running_and_ready_hold(cluster: dict[str, Any], clients: StubbedClients) -> None:
    clients.queue(
        "sagemaker", "list_cluster_nodes", cluster_nodes({"system": 2, "gpu-p5": 3}), {"ClusterName": "hpi-staging-hp"}
    )
    results, ctx, _ = run(nodes.hyperpod_nodes, cluster, clients)
    assert rows(results) == [
        ("PASS", "system: 2 Running, 2 Ready, labels and taints as configured"),
        ("PASS", "gpu-p5: 3 Running, 3 Ready, labels and taints as configured"),
    ]
    assert ctx.groups["gpu-p5"]["labels"]["sagemaker.amazonaws.com/compute-type"] == "hyperpod"


def test_a_node_running_in_hyperpod_but_not_ready_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    cluster["/api/v1/nodes"]["items"][2]["status"]["conditions"][0]["status"] = "False"
    clients.queue("sagemaker", "list_cluster_nodes", cluster_nodes({"system": 2, "gpu-p5": 3}))
    results, _, _ = run(nodes.hyperpod_nodes, cluster, clients)
    assert results[1].status == "FAIL"
    assert results[1].detail == "gpu-p5: 2 Ready in Kubernetes of 3 Running (node-running-means-ready)"


def test_nodes_not_yet_running_fail(cluster: dict[str, Any], clients: StubbedClients) -> None:
    listed = cluster_nodes({"system": 2, "gpu-p5": 3})
    listed["ClusterNodeSummaries"][4]["InstanceStatus"]["Status"] = "Pending"
    clients.queue("sagemaker", "list_cluster_nodes", listed)
    results, _, _ = run(nodes.hyperpod_nodes, cluster, clients)
    assert results[1].status == "FAIL"
    assert results[1].detail.startswith("gpu-p5: 2 of 3 Running in ListClusterNodes (i-0a1b2c3d4e5f6012 Pending)")


def test_a_node_with_other_labels_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    cluster["/api/v1/nodes"]["items"][0]["metadata"]["labels"]["sagemaker.amazonaws.com/compute-type"] = "ec2"
    clients.queue("sagemaker", "list_cluster_nodes", cluster_nodes({"system": 2, "gpu-p5": 3}))
    results, _, _ = run(nodes.hyperpod_nodes, cluster, clients)
    assert results[0].status == "FAIL"
    assert (
        "labels {'sagemaker.amazonaws.com/compute-type': 'ec2'}, expected {'sagemaker.amazonaws.com/compute-type': 'hyperpod'}"
        in results[0].detail
    )


def test_allocatable_at_the_model_holds_and_is_recorded(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, ctx, _ = run(nodes.node_allocatable, cluster, clients)
    assert [r.status for r in results] == ["PASS", "PASS"]
    assert (
        results[1].detail
        == "gpu-p5: CPU 7.91 (model 7.91), memory 254.4Gi (model 254.4Gi), pods 118 (model 118), GPUs 1 (model 1)"
    )
    assert results[1].settles == ("hyperpod-max-pods", "nodeadm-defaults", "threads-per-core", "tiered-storage-memory")
    assert ctx.groups["gpu-p5"]["allocatable"] == {
        "cpu": "7.91",
        "memory": "254.4Gi",
        "pods": "118",
        "nvidia.com/gpu": "1",
        "vpc.amazonaws.com/efa": "1",
    }


def test_allocatable_below_the_model_fails_with_the_fix(cluster: dict[str, Any], clients: StubbedClients) -> None:
    small = {**GPU_ALLOC, "memory": "240Gi", "pods": "110"}
    cluster["/api/v1/nodes"]["items"][4]["status"]["allocatable"] = small
    results, ctx, _ = run(nodes.node_allocatable, cluster, clients)
    assert results[1].status == "FAIL"
    assert "memory 240Gi (model 254.4Gi), pods 110 (model 118)" in results[1].detail
    assert results[1].fix.startswith("commit verified/staging.json (this run wrote it)")
    assert ctx.groups["gpu-p5"]["allocatable"]["memory"] == "240Gi"  # the smallest node of the group


def test_system_pods_as_the_readiness_data_hold_and_differences_fail(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    results, _, _ = run(nodes.system_pods, cluster, clients)
    assert rows(results) == [("PASS", "2 workloads as the readiness data says")]
    deploy = cluster["/apis/apps/v1/deployments"]["items"][0]
    deploy["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = "300Mi"
    cluster["/apis/apps/v1/daemonsets"]["items"].append(
        {
            "metadata": {"name": "hyperpod-node-collector", "namespace": "hyperpod-observability"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "50m"}}}]}}},
        }
    )
    results, ctx, _ = run(nodes.system_pods, cluster, clients)
    assert rows(results) == [
        ("FAIL", "metrics-server: requests 0.1 CPU, 300Mi memory, readiness.yaml says 0.1 CPU, 200Mi memory"),
        ("WARN", "requests the readiness data leaves unknown, now observed: hyperpod-node-collector (0.05 CPU)"),
    ]
    assert ctx.facts["systemPods"]["hyperpod-observability/hyperpod-node-collector"]["requests"] == {"cpu": "0.05"}


def test_a_pending_pod_fails(cluster: dict[str, Any], clients: StubbedClients) -> None:
    cluster["/api/v1/pods"]["items"][0]["status"]["phase"] = "Pending"
    results, _, _ = run(nodes.system_pods, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == f"1 pod(s) Pending: {OP_NS}/llama-8b-prefix-hyperpod-ns-serving-router-7d9f8b6c5-abcde"


# --- 4. a second door -------------------------------------------------------------------------------------------

OPERATOR_ALB = (
    "arn:aws:elasticloadbalancing:eu-west-2:111122223333:loadbalancer/app/k8s-hyperpod-albllama/0a1b2c3d4e5f6071"
)
LISTENER = "arn:aws:elasticloadbalancing:eu-west-2:111122223333:listener/app/k8s-hyperpod-albllama/0a1b2c3d4e5f6071/1a2b3c4d5e6f7081"
OPERATOR_TG = "arn:aws:elasticloadbalancing:eu-west-2:111122223333:targetgroup/k8s-hyperpod-llama8bpr/9a8b7c6d5e4f3021"


def _load_balancers() -> dict[str, Any]:
    return {
        "LoadBalancers": [
            {
                "LoadBalancerArn": ALB_ARN,
                "DNSName": ALB_DNS,
                "LoadBalancerName": "hpi-staging-front-door",
                "VpcId": VPC,
            },
            {
                "LoadBalancerArn": OPERATOR_ALB,
                "DNSName": "internal-k8s-hyperpod-albllama-1122334455.eu-west-2.elb.amazonaws.com",
                "LoadBalancerName": "k8s-hyperpod-albllama",
                "VpcId": VPC,
            },
        ]
    }


def _second_door(clients: StubbedClients, actions: list[dict[str, Any]]) -> None:
    clients.queue("elbv2", "describe_load_balancers", _load_balancers())
    clients.queue(
        "elbv2",
        "describe_listeners",
        {"Listeners": [{"ListenerArn": LISTENER, "Port": 443, "Protocol": "HTTPS"}]},
        {"LoadBalancerArn": OPERATOR_ALB},
    )
    clients.queue(
        "elbv2",
        "describe_rules",
        {
            "Rules": [
                {
                    "RuleArn": LISTENER.replace("listener", "listener-rule") + "/1",
                    "Priority": "default",
                    "IsDefault": True,
                    "Actions": actions,
                }
            ]
        },
        {"ListenerArn": LISTENER},
    )


def test_the_operators_own_alb_forwarding_without_authentication_is_a_second_door(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    _second_door(clients, [{"Type": "forward", "TargetGroupArn": OPERATOR_TG, "Order": 1}])
    clients.queue("elbv2", "describe_target_health", healthy_targets("10.128.32.11"), {"TargetGroupArn": OPERATOR_TG})
    results, _, _ = run(second_door.second_door, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == (
        "k8s-hyperpod-albllama (internal-k8s-hyperpod-albllama-1122334455.eu-west-2.elb.amazonaws.com) port 443 "
        "forwards to the pods of llama-8b-prefix without authentication"
    )


def test_a_load_balancer_that_authenticates_first_is_not_a_second_door(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    _second_door(
        clients,
        [
            {"Type": "forward", "TargetGroupArn": OPERATOR_TG, "Order": 2},
            {
                "Type": "authenticate-oidc",
                "Order": 1,
                "AuthenticateOidcConfig": {
                    "Issuer": "https://login.example.com",
                    "AuthorizationEndpoint": "https://login.example.com/a",
                    "TokenEndpoint": "https://login.example.com/t",
                    "UserInfoEndpoint": "https://login.example.com/u",
                    "ClientId": "c",
                },
            },
        ],
    )
    results, _, _ = run(second_door.second_door, cluster, clients)
    assert rows(results) == [
        ("PASS", "1 other load balancer(s) in the VPC, none reaches an endpoint's pods; no Ingress does")
    ]


def test_an_ingress_to_the_router_service_is_a_second_door(cluster: dict[str, Any], clients: StubbedClients) -> None:
    clients.queue("elbv2", "describe_load_balancers", {"LoadBalancers": []})
    cluster["/apis/networking.k8s.io/v1/ingresses"]["items"] = [
        {
            "metadata": {"name": "alb-llama-8b-prefix-hyperpod-ns-serving", "namespace": OP_NS},
            "spec": {
                "rules": [
                    {
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "pathType": "Prefix",
                                    "backend": {
                                        "service": {
                                            "name": "llama-8b-prefix-hyperpod-ns-serving-routing-service",
                                            "port": {"number": 8000},
                                        }
                                    },
                                }
                            ]
                        }
                    }
                ]
            },
        }
    ]
    results, _, _ = run(second_door.second_door, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail == (
        f"Ingress {OP_NS}/alb-llama-8b-prefix-hyperpod-ns-serving routes to Service {OP_NS}/llama-8b-prefix-hyperpod-ns-serving-routing-service, "
        "which selects the pods of llama-8b-prefix"
    )


# --- 5. what a run observed ---------------------------------------------------------------------------------------

HP = "urn:pulumi:staging::hyperpod-inference::hyperpod:index:HyperPodInference$aws-native:sagemaker:Cluster::hyperpod-cluster"
AMP = "urn:pulumi:staging::hyperpod-inference::hyperpod:index:HyperPodInference$aws:amp/workspace:Workspace::amp"
IEC_URN = (
    "urn:pulumi:staging::hyperpod-inference::hyperpod:index:HyperPodInference$"
    "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig::endpoint-llama-8b-prefix"
)


T0 = 1796277600  # 2026-12-03T06:00:00Z


def _event(seq: int, at: int, **body: Any) -> str:
    return json.dumps({"sequence": seq, "timestamp": at, **body})


def _step(kind: str, urn: str, typ: str, op: str = "create", **extra: Any) -> dict[str, Any]:
    return {kind: {"metadata": {"op": op, "urn": urn, "type": typ, "old": None, "new": None, "provider": ""}, **extra}}


def event_log(hyperpod_fails: bool = False) -> list[str]:
    """Engine events as `pulumi up --event-log` writes them (sdk/go/common/apitype/events.go)."""
    end = (
        [
            _event(
                7,
                T0 + 6099,
                diagnosticEvent={
                    "urn": HP,
                    "message": "lifecycle script on_create.sh exited 1",
                    "color": "never",
                    "severity": "error",
                },
            ),
            _event(8, T0 + 6100, **_step("resOpFailedEvent", HP, "aws-native:sagemaker:Cluster", status=1, steps=1)),
        ]
        if hyperpod_fails
        else [_event(8, T0 + 6100, **_step("resOutputsEvent", HP, "aws-native:sagemaker:Cluster"))]
    )
    return [
        _event(1, T0 + 0, preludeEvent={"config": {}}),
        _event(2, T0 + 1, **_step("resourcePreEvent", AMP, "aws:amp/workspace:Workspace", planning=True)),
        _event(3, T0 + 10, **_step("resourcePreEvent", AMP, "aws:amp/workspace:Workspace")),
        _event(4, T0 + 72, **_step("resOutputsEvent", AMP, "aws:amp/workspace:Workspace")),
        _event(5, T0 + 100, **_step("resourcePreEvent", HP, "aws-native:sagemaker:Cluster")),
        _event(6, T0 + 101, stdoutEvent={"message": "...", "color": "never"}),
        *end,
        _event(
            9,
            T0 + 6200,
            **_step(
                "resourcePreEvent", IEC_URN, "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
            ),
        ),
        _event(
            10,
            T0 + 6203,
            **_step(
                "resOutputsEvent", IEC_URN, "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
            ),
        ),
        _event(
            11,
            T0 + 6204,
            summaryEvent={
                "maybeCorrupt": False,
                "durationSeconds": 5004,
                "resourceChanges": {"create": 3},
                "PolicyPacks": {},
            },
        ),
    ]


def test_event_log_parser_times_each_step_and_ignores_preview_steps() -> None:
    steps = report.parse_event_log(event_log())
    assert [(s.name, s.op, s.seconds, s.failed) for s in steps] == [
        ("amp", "create", 62, False),
        ("hyperpod-cluster", "create", 6000, False),
        ("endpoint-llama-8b-prefix", "create", 3, False),
    ]


def test_event_log_parser_keeps_the_diagnostic_of_a_failed_create() -> None:
    steps = report.parse_event_log(event_log(hyperpod_fails=True))
    hp = steps[1]
    assert (hp.failed, hp.seconds, hp.messages) == (True, 6000, ("lifecycle script on_create.sh exited 1",))


def test_event_log_parser_names_the_line_that_is_not_an_event() -> None:
    with pytest.raises(report.EventLogError, match=r"^up.json:2: not an engine event"):
        report.parse_event_log([_event(1, 1, preludeEvent={}), "{oops"], "up.json")


def test_create_times_records_and_settles(cluster: dict[str, Any], clients: StubbedClients, tmp_path: Path) -> None:
    log = tmp_path / "up.json"
    log.write_text("\n".join(event_log()) + "\n", encoding="utf-8")
    results, ctx, _ = run(report.create_times, cluster, clients, event_log=log)
    assert results[-1].status == "PASS"
    assert (
        results[-1].detail
        == "3 creates recorded: amp 62 s; every node was Ready when the HyperPod create (6000 s) returned"
    )
    assert set(results[-1].settles) == {"amp-create-time", "operator-webhook-ready", "hyperpod-create-completion"}
    assert ctx.facts["createTimes"]["amp"] == {"type": "aws:amp/workspace:Workspace", "seconds": 62, "failed": False}


def test_create_times_reports_a_failed_lifecycle_script(
    cluster: dict[str, Any], clients: StubbedClients, tmp_path: Path
) -> None:
    log = tmp_path / "up.json"
    log.write_text("\n".join(event_log(hyperpod_fails=True)), encoding="utf-8")
    results, _, _ = run(report.create_times, cluster, clients, event_log=log)
    assert results[0].status == "FAIL"
    assert (
        results[0].detail
        == "hyperpod-cluster (aws-native:sagemaker:Cluster) failed to create: lifecycle script on_create.sh exited 1"
    )
    assert "lifecycle-failure-visibility" in results[0].settles


def test_nodes_ready_after_the_hyperpod_create_returned_are_counted(
    cluster: dict[str, Any], clients: StubbedClients, tmp_path: Path
) -> None:
    cluster["/api/v1/nodes"]["items"][3]["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-04T09:00:00Z"
    log = tmp_path / "up.json"
    log.write_text("\n".join(event_log()), encoding="utf-8")
    results, ctx, _ = run(report.create_times, cluster, clients, event_log=log)
    assert results[-1].detail.endswith("the HyperPod create (6000 s) returned before 1 node(s) were Ready")
    assert ctx.facts["hyperpodCreate"] == {"seconds": 6000, "nodesReadyAfterIt": ["hyperpod-i-0a1b2c3d4e5f60101"]}


def _trail(error: str | None) -> dict[str, Any]:
    body = {
        "eventSource": "elasticloadbalancing.amazonaws.com",
        "eventName": "AddTags",
        **({"errorCode": error} if error else {}),
    }
    return {
        "Events": [
            {
                "EventId": "e1",
                "EventName": "AddTags",
                "Username": "hpi-staging-deploy",
                "CloudTrailEvent": json.dumps(body),
            }
        ]
    }


def test_deploy_role_denials_fail_with_the_actions_and_none_hold(
    cluster: dict[str, Any], clients: StubbedClients
) -> None:
    params = {
        "LookupAttributes": [{"AttributeKey": "Username", "AttributeValue": "hpi-staging-deploy"}],
        "MaxResults": 50,
    }
    clients.queue("cloudtrail", "lookup_events", _trail("AccessDenied"), params)
    results, ctx, _ = run(report.deploy_role_denials, cluster, clients, deploy_session="hpi-staging-deploy")
    assert rows(results) == [("FAIL", "denied: elasticloadbalancing:AddTags (1x)")]
    assert ctx.facts["deployRoleDenied"] == {"elasticloadbalancing:AddTags": 1}
    clients.queue("cloudtrail", "lookup_events", _trail(None), params)
    clean, _, _ = run(report.deploy_role_denials, cluster, clients, deploy_session="hpi-staging-deploy")
    assert clean[0].status == "PASS"


def test_web_acl_association_and_log_policy(clients: StubbedClients) -> None:
    prod_alb = {"LoadBalancerArn": ALB_ARN, "DNSName": ALB_DNS, "LoadBalancerName": "hpi-prod-front-door"}
    clients.queue("elbv2", "describe_load_balancers", {"LoadBalancers": [prod_alb]})
    clients.queue(
        "wafv2",
        "get_web_acl_for_resource",
        {
            "WebACL": {
                "Name": "hpi-prod-front-door",
                "Id": "a1",
                "ARN": "arn:aws:wafv2:us-east-1:111122223333:regional/webacl/hpi-prod-front-door/a1",
                "DefaultAction": {"Allow": {}},
                "VisibilityConfig": {
                    "SampledRequestsEnabled": True,
                    "CloudWatchMetricsEnabled": True,
                    "MetricName": "m",
                },
            }
        },
        {"ResourceArn": ALB_ARN},
    )
    clients.queue(
        "logs",
        "describe_resource_policies",
        {
            "resourcePolicies": [
                {
                    "policyName": "AWSWAF-LOGS",
                    "policyDocument": '{"Statement":[{"Principal":{"Service":"delivery.logs.amazonaws.com"}}]}',
                }
            ]
        },
    )
    results, _, _ = run(report.web_acl, {}, clients, cfg=prod())
    assert rows(results) == [
        ("PASS", "hpi-prod-front-door protects hpi-prod-front-door"),
        ("PASS", "log delivery resource policy: AWSWAF-LOGS"),
    ]
    clients.queue("elbv2", "describe_load_balancers", {"LoadBalancers": [prod_alb]})
    clients.queue("wafv2", "get_web_acl_for_resource", {})
    clients.queue("logs", "describe_resource_policies", {"resourcePolicies": []})
    broken, _, _ = run(report.web_acl, {}, clients, cfg=prod())
    assert [r.status for r in broken] == ["FAIL", "FAIL"]


def test_fsx_driver_denied_calls_fail(cluster: dict[str, Any], clients: StubbedClients) -> None:
    results, _, _ = run(report.addon_logs, cluster, clients)
    assert results[0].status == "PASS"
    cluster["/api/v1/namespaces/kube-system/pods/fsx-csi-controller-5b8f9c7d6-q7w8e/log"] += (
        "E1203 07:53:00 cloud.go:120] AccessDeniedException: User is not authorized to perform: fsx:DescribeFileSystems\n"
    )
    denied, _, _ = run(report.addon_logs, cluster, clients)
    assert denied[0].status == "FAIL"
    assert "fsx:DescribeFileSystems" in denied[0].detail


def test_a_forbidden_read_names_the_access_to_grant(cluster: dict[str, Any], clients: StubbedClients) -> None:
    cluster["/apis/apps/v1/daemonsets"] = 403
    results, _, _ = run(nodes.system_pods, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail.startswith("the cluster refused a read (403)")
    assert "AmazonEKSViewPolicy" in results[0].fix


# --- --list and the checklist ---------------------------------------------------------------------------------------


def _checklist() -> str:
    text = (Path(__file__).resolve().parents[1] / "docs" / "first-deploy.md").read_text(encoding="utf-8")
    return text[text.index("## Unverified facts: the checklist") :]


def _rows() -> set[str]:
    return set(re.findall(r"^\| `([a-z0-9-]+)` \|", _checklist(), re.MULTILINE))


def _after_rows() -> set[str]:
    return set(re.findall(r"^\| `([a-z0-9-]+)` \| [^|]+\| after", _checklist(), re.MULTILINE))


def test_list_settles_three_quarters_of_the_after_rows_and_says_why_of_the_rest() -> None:
    after = _after_rows()
    assert len(after) >= 39
    listed = listing()
    ids = [c["id"] for c in listed]
    assert len(ids) == len(set(ids))
    settled = {s for c in listed for s in c["settles"]}
    every_row = _rows()
    assert settled <= every_row, settled - every_row
    assert len(settled & after) * 4 >= len(after) * 3, sorted(after - settled)
    assert after - settled == set(report.BY_HAND), (
        "every after: row is settled by a check or says why only a person can"
    )
    assert all(c["reads"] for c in listed)


def test_results_settle_only_what_their_check_lists(cluster: dict[str, Any], clients: StubbedClients) -> None:
    from tools.verify.base import CHECKS

    declared = {c.id: set(c.settles) for c in CHECKS}
    results, _, _ = run(nodes.node_allocatable, cluster, clients)
    for r in results:
        assert set(r.settles) <= declared[r.check]


def test_observations_round_trip_through_the_reading_side(cluster: dict[str, Any], clients: StubbedClients) -> None:
    from components.config import observed

    results, ctx, _ = run(lambda c: traffic.router_service(c) + nodes.node_allocatable(c), cluster, clients)
    doc = report.observations(ctx, results)
    parsed = observed.Observations.model_validate(doc)
    assert parsed.note == "observed 2026-12-04 by verify"
    assert parsed.services["llama-8b-kvaware"].ports[0].port == 8000
    assert parsed.groups["gpu-p5"].allocatable["memory"] == "254.4Gi"
    assert doc["settled"] == [
        "hyperpod-max-pods",
        "nodeadm-defaults",
        "router-service-port",
        "threads-per-core",
        "tiered-storage-memory",
    ]


def test_wait_retries_the_traffic_checks_until_they_hold(cluster: dict[str, Any], clients: StubbedClients) -> None:
    """A fresh endpoint: the first look finds it in progress, the retry 30 s later finds it complete."""
    cluster[IEC]["status"] = {"state": "DeploymentInProgress"}
    sleeps: list[float] = []
    recorded = Recorded(cluster)

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        recorded.responses[IEC] = copy.deepcopy(cluster[IEC]) | {"status": {"state": "DeploymentComplete"}}

    only = [c for c in __import__("tools.verify.base", fromlist=["CHECKS"]).CHECKS if c.id == "endpoint-status"]
    with kube_server(recorded) as kube:
        ctx = context(staging(), kube, clients, outputs=OUTPUTS)
        import tools.verify.__main__ as main_module

        saved = main_module.ordered
        main_module.ordered = lambda: only  # type: ignore[assignment]
        try:
            results = run_checks(ctx, wait_minutes=5, sleep=sleep)
        finally:
            main_module.ordered = saved  # type: ignore[assignment]
    assert sleeps == [30]
    assert [r.status for r in results] == ["PASS", "PASS"]


AMP_ENDPOINT = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9/"


def _amp(labels: dict[str, str]) -> Any:
    sent: list[tuple[str, dict[str, str]]] = []
    body = {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": labels, "value": [1796280000, "12"]}]},
    }

    def http(url: str, method: str, headers: dict[str, str], _body: bytes | None) -> HttpAnswer:
        sent.append((url, headers))
        return HttpAnswer(200, 30, body=json.dumps(body).encode())

    return http, sent


def test_promql_labels_are_read_with_a_signed_query(clients: StubbedClients) -> None:
    http, sent = _amp(
        {"__name__": "model_invocations_total", "namespace": "inference", "pod": "qwen-1", "model": "qwen"}
    )
    results, _ctx, _ = run(
        report.promql_labels, {}, clients, cfg=prod(), http=http, outputs={"prometheusEndpoint": AMP_ENDPOINT}
    )
    assert rows(results) == [("PASS", "model_invocations_total labels: __name__, model, namespace, pod")]
    url, headers = sent[0]
    assert url == AMP_ENDPOINT + "api/v1/query?query=model_invocations_total"
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/aps/aws4_request" in headers["Authorization"]
    other, _ = _amp({"__name__": "model_invocations_total", "exported_namespace": "inference", "pod_name": "qwen-1"})
    broken, _, _ = run(
        report.promql_labels, {}, clients, cfg=prod(), http=other, outputs={"prometheusEndpoint": AMP_ENDPOINT}
    )
    assert broken[0].status == "FAIL"
    assert (
        broken[0].detail
        == "model_invocations_total has the labels __name__, exported_namespace, pod_name, not namespace, pod"
    )


def test_the_post_up_section_lists_exactly_the_checks_and_the_by_hand_rows() -> None:
    """docs/first-deploy.md's post-up section is this command: its tables are --list and BY_HAND, in step."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "first-deploy.md").read_text(encoding="utf-8")
    section = text[text.index("## After `up`: what to look at") : text.index("## Unverified facts: the checklist")]
    assert "hpi verify --stack prod" in section
    documented = re.findall(r"^\| `([a-z0-9-]+)` \| (.+?) \| (.+?) \|$", section, re.MULTILINE)
    checks = [(c["id"], ", ".join(f"`{s}`" for s in c["settles"]) or "—", "; ".join(c["reads"])) for c in listing()]
    assert documented == checks
    hand = re.findall(r"^\| `([a-z0-9-]+)` \| ([^|]+) \|$", section, re.MULTILINE)
    assert hand == list(report.BY_HAND.items())


def test_a_target_still_initial_is_not_healthy(cluster: dict[str, Any], clients: StubbedClients) -> None:
    """A target the ALB is still checking (``initial``) or taking out (``draining``) serves no request yet."""
    starting = {
        "TargetHealthDescriptions": [
            {
                "Target": {"Id": "10.128.32.11", "Port": 8080},
                "TargetHealth": {
                    "State": "initial",
                    "Reason": "Elb.RegistrationInProgress",
                    "Description": "Target registration is in progress",
                },
            },
            {
                "Target": {"Id": "10.128.32.13", "Port": 8080},
                "TargetHealth": {"State": "draining", "Reason": "Target.DeregistrationInProgress"},
            },
        ]
    }
    clients.queue("elbv2", "describe_target_health", starting, {"TargetGroupArn": TG_PREFIX})
    clients.queue("elbv2", "describe_target_health", healthy_targets("10.128.32.12"), {"TargetGroupArn": TG_KVAWARE})
    results, _, _ = run(traffic.target_group_binding, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail.startswith(f"llama-8b-prefix: no healthy target in {TG_PREFIX}: 10.128.32.11:8080 initial")


def test_a_weighted_forward_to_the_pods_is_a_second_door(cluster: dict[str, Any], clients: StubbedClients) -> None:
    """A forward with ``ForwardConfig.TargetGroups`` (weighted target groups) and no ``TargetGroupArn``."""
    weighted = {
        "Type": "forward",
        "Order": 1,
        "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": OPERATOR_TG, "Weight": 1}]},
    }
    _second_door(clients, [weighted])
    clients.queue("elbv2", "describe_target_health", healthy_targets("10.128.32.11"), {"TargetGroupArn": OPERATOR_TG})
    results, _, _ = run(second_door.second_door, cluster, clients)
    assert results[0].status == "FAIL"
    assert results[0].detail.endswith("forwards to the pods of llama-8b-prefix without authentication")


def test_a_failing_row_settles_its_fact_too(cluster: dict[str, Any], clients: StubbedClients) -> None:
    """The router Service on another port is a FAIL, and the port is known now: the id is settled."""
    for endpoint, namespace in STAGING_NAMESPACES.items():
        cluster[f"/api/v1/namespaces/{OP_NS}/services/{endpoint}-{namespace}-routing-service"]["spec"]["ports"][0][
            "port"
        ] = 8080
    results, ctx, _ = run(traffic.router_service, cluster, clients)
    assert [r.status for r in results] == ["FAIL", "FAIL"]
    assert report.observations(ctx, results)["settled"] == ["router-service-port"]
