"""A recorded Kubernetes API on 127.0.0.1, and stubbed AWS clients, for the tests of ``tools.verify``.

No kube-apiserver (nor etcd, nor kind) can be installed on this machine: only package registries are reachable,
and a binary download is not. So the official ``kubernetes`` client talks HTTP to a local server that answers each
GET path with a recorded API response (the JSON the API server sends: camelCase, ``items`` lists, ``Status`` 404s),
exactly the bytes the client would parse from a real cluster. The server records every request, so a test can also
prove that verify only reads (every method GET). AWS calls go to real botocore clients with a ``Stubber`` attached:
each canned response is validated against botocore's service model.

:func:`staging_cluster` is a healthy cluster for ``stacks/Pulumi.staging.yaml`` (two routed endpoints behind the
operator's router Services, a system and a GPU group, the add-ons' pods); tests break one fact of it at a time.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3
import yaml
from botocore.stub import Stubber
from kubernetes import client as k8s

from components.config.stackfile import load_stack_file, stack_path
from tools.preflight.checks import Clients
from tools.preflight.regional import load_config
from tools.verify.base import Context, HttpAnswer, Kube

ACCOUNT = "111122223333"
TODAY = date(2026, 12, 4)
OP_NS = "hyperpod-inference-system"
# stacks/Pulumi.staging.yaml: each endpoint runs in its team's namespace (task governance, hyperpod-ns-<team>)
STAGING_NAMESPACES = {"llama-8b-prefix": "hyperpod-ns-serving", "llama-8b-kvaware": "hyperpod-ns-research"}
# ... and its pods carry the Kueue labels of its team and priority class (as AWS's task-governance page labels them)
STAGING_KUEUE = {
    "llama-8b-prefix": ("hyperpod-ns-serving-localqueue", "inference-priority"),
    "llama-8b-kvaware": ("hyperpod-ns-research-localqueue", "experimentation-priority"),
}
TG_PREFIX = (
    f"arn:aws:elasticloadbalancing:eu-west-2:{ACCOUNT}:targetgroup/hpi-staging-llama-8b-prefix-8000/0123456789abcdef"
)
TG_KVAWARE = (
    f"arn:aws:elasticloadbalancing:eu-west-2:{ACCOUNT}:targetgroup/hpi-staging-llama-8b-kvawa-8000/fedcba9876543210"
)
ALB_DNS = "internal-hpi-staging-front-door-1234567890.eu-west-2.elb.amazonaws.com"
ALB_ARN = f"arn:aws:elasticloadbalancing:eu-west-2:{ACCOUNT}:loadbalancer/app/hpi-staging-front-door/50dc6c495c0c9188"
VPC = "vpc-0a1b2c3d4e5f60718"


class Recorded:
    """Path -> response: a dict/list is JSON (200), a str is text (200), an int is that status with a ``Status``."""

    def __init__(self, responses: dict[str, Any]) -> None:
        self.responses = responses
        self.requests: list[tuple[str, str]] = []


def _status(code: int, path: str) -> dict[str, Any]:
    reason = {404: "NotFound", 403: "Forbidden", 401: "Unauthorized"}.get(code, "InternalError")
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": f"{path}: {reason}",
        "reason": reason,
        "code": code,
    }


@contextmanager
def kube_server(recorded: Recorded) -> Iterator[Kube]:
    """A :class:`Kube` whose client talks to a local server answering from ``recorded``."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            path = unquote(urlsplit(self.path).path)
            recorded.requests.append((self.command, path))
            found = recorded.responses.get(path, 404) if self.command == "GET" else 405
            if isinstance(found, int):
                body, code, kind = json.dumps(_status(found, path)).encode(), found, "application/json"
            elif isinstance(found, str):
                body, code, kind = found.encode(), 200, "text/plain"
            else:
                body, code, kind = json.dumps(found).encode(), 200, "application/json"
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        conf = k8s.Configuration(host=f"http://127.0.0.1:{server.server_address[1]}")
        conf.retries = 0
        yield Kube(k8s.ApiClient(conf))
    finally:
        server.shutdown()
        server.server_close()


class StubbedClients(Clients):
    """Preflight's :class:`Clients` with a Stubber on every client; ``queue(service, method, response, params)``."""

    def __init__(self, region: str = "eu-west-2") -> None:
        session = boto3.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name=region)
        super().__init__(session, region)
        self.stubbers: dict[str, Stubber] = {}

    def caller(self) -> StubbedClients:
        """The GetCallerIdentity a whole run starts with."""
        self.queue(
            "sts",
            "get_caller_identity",
            {"UserId": "AIDAEXAMPLE", "Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/verifier"},
        )
        return self

    def stubber(self, service: str) -> Stubber:
        if service not in self.stubbers:
            stub = Stubber(self(service))
            stub.activate()
            self.stubbers[service] = stub
        return self.stubbers[service]

    def queue(self, service: str, method: str, response: dict[str, Any], params: dict[str, Any] | None = None) -> None:
        self.stubber(service).add_response(method, response, params)

    def error(self, service: str, method: str, code: str, message: str = "denied") -> None:
        self.stubber(service).add_client_error(
            method, service_error_code=code, service_message=message, http_status_code=403
        )

    def assert_all_used(self) -> None:
        for stub in self.stubbers.values():
            stub.assert_no_pending_responses()


@functools.cache
def staging() -> Any:
    """The validated staging stack (validated once: the checks only read it)."""
    return load_config("staging", load_stack_file(stack_path("staging")))


@functools.cache
def prod() -> Any:
    return load_config("prod", load_stack_file(stack_path("prod")))


def _node(
    name: str, group: str, instance_type: str, allocatable: dict[str, str], ready: str = "True"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "node.kubernetes.io/instance-type": instance_type,
                "sagemaker.amazonaws.com/instance-group-name": group,
                "sagemaker.amazonaws.com/compute-type": "hyperpod",
                "sagemaker.amazonaws.com/node-health-status": "Schedulable",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
            },
        },
        "spec": {},
        "status": {
            "allocatable": dict(allocatable),
            "conditions": [
                {
                    "type": "Ready",
                    "status": ready,
                    "reason": "KubeletReady",
                    "lastTransitionTime": "2026-12-03T07:41:10Z",
                }
            ],
        },
    }


SYSTEM_ALLOC = {"cpu": "3920m", "memory": "32537600Ki", "pods": "58", "ephemeral-storage": "95491281146"}
GPU_ALLOC = {
    "cpu": "7910m",
    "memory": "266742784Ki",
    "pods": "118",
    "nvidia.com/gpu": "1",
    "vpc.amazonaws.com/efa": "1",
    "ephemeral-storage": "95491281146",
}


def _pod(
    namespace: str, name: str, labels: dict[str, str], ports: list[dict[str, Any]], ip: str, **extra: Any
) -> dict[str, Any]:
    container = {"name": extra.pop("container", "main"), "image": "example", "ports": ports, **extra}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [container]},
        "status": {"phase": "Running", "podIP": ip},
    }


def _list(kind: str, items: list[dict[str, Any]], api: str = "v1") -> dict[str, Any]:
    return {"apiVersion": api, "kind": f"{kind}List", "metadata": {"resourceVersion": "48213"}, "items": items}


def crd_list(crds_dir: Path) -> dict[str, Any]:
    """The installed CRDs: the operator's real ones (../shared/crds), as the API server lists them."""
    return copy.deepcopy(_crd_list(crds_dir))


@functools.cache
def _crd_list(crds_dir: Path) -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    items = [
        yaml.load((crds_dir / f"inference.sagemaker.aws.amazon.com_{plural}.yaml").read_text(encoding="utf-8"), loader)
        for plural in ("inferenceendpointconfigs", "jumpstartmodels")
    ]
    return _list("CustomResourceDefinition", items, "apiextensions.k8s.io/v1")


def staging_cluster(crds_dir: Path) -> dict[str, Any]:
    """The recorded responses of a healthy staging cluster, by request path."""
    routers = {
        "llama-8b-prefix": ("10.128.32.11", "10.128.40.21"),
        "llama-8b-kvaware": ("10.128.32.12", "10.128.40.22"),
    }
    pods, services = [], []
    out: dict[str, Any] = {}
    for ep, (router_ip, worker_ip) in routers.items():
        ns = STAGING_NAMESPACES[ep]
        app = f"{ep}-{ns}-router"
        pods.append(
            _pod(OP_NS, f"{app}-7d9f8b6c5-abcde", {"app": app}, [{"containerPort": 8080, "name": "http"}], router_ip)
        )
        worker = _pod(
            ns,
            f"{ep}-6c7d8f9b5-x2x4z",
            {
                "app": ep,
                "sagemaker.amazonaws.com/endpoint": ep,
                "kueue.x-k8s.io/queue-name": STAGING_KUEUE[ep][0],
                "kueue.x-k8s.io/priority-class": STAGING_KUEUE[ep][1],
            },
            [{"containerPort": 8000, "name": "http"}],
            worker_ip,
            container="worker",
        )
        pods.append(worker)
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"{ep}-{ns}-routing-service", "namespace": OP_NS},
            "spec": {
                "selector": {"app": app},
                "ports": [{"name": "http", "port": 8000, "targetPort": 8080, "protocol": "TCP"}],
            },
        }
        services.append(svc)
        services.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": ep, "namespace": ns},
                "spec": {"selector": {"app": ep}, "ports": [{"port": 8000, "targetPort": 8000}]},
            }
        )
        out[f"/api/v1/namespaces/{OP_NS}/services/{ep}-{ns}-routing-service"] = svc
        tg = TG_PREFIX if ep == "llama-8b-prefix" else TG_KVAWARE
        out[f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{OP_NS}/targetgroupbindings/{ep}-front-door"] = {
            "apiVersion": "elbv2.k8s.aws/v1beta1",
            "kind": "TargetGroupBinding",
            "metadata": {"name": f"{ep}-front-door", "namespace": OP_NS, "generation": 1},
            "spec": {
                "serviceRef": {"name": f"{ep}-{ns}-routing-service", "port": 8000},
                "targetGroupARN": tg,
                "targetType": "ip",
            },
            "status": {"observedGeneration": 1},
        }
        out[f"/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/{ns}/inferenceendpointconfigs/{ep}"] = {
            "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
            "kind": "InferenceEndpointConfig",
            "metadata": {"name": ep, "namespace": ns, "generation": 1},
            "status": {
                "state": "DeploymentComplete",
                "conditions": [
                    {
                        "type": "DeploymentComplete",
                        "status": "True",
                        "reason": "Deployed",
                        "lastTransitionTime": "2026-12-03T08:02:00Z",
                    }
                ],
            },
        }
        out[f"/api/v1/namespaces/{ns}/pods/{ep}-6c7d8f9b5-x2x4z:8000/proxy/metrics"] = (
            "# HELP vllm:num_requests_running Number of requests running.\n# TYPE vllm:num_requests_running gauge\n"
            'vllm:num_requests_running{model_name="m"} 0.0\n'
            "# HELP lmcache:num_hit_tokens Tokens hit in the cache.\n# TYPE lmcache:num_hit_tokens counter\n"
            "lmcache:num_hit_tokens 0.0\n"
        )
    fsx = _pod(
        "kube-system",
        "fsx-csi-controller-5b8f9c7d6-q7w8e",
        {"app": "fsx-csi-controller"},
        [],
        "10.128.32.50",
        container="fsx-plugin",
    )
    pods.append(fsx)
    out[f"/api/v1/namespaces/kube-system/pods/{fsx['metadata']['name']}/log"] = (
        "I1203 07:52:01.000000       1 driver.go:93] Driver: fsx.csi.aws.com Version: v1.5.0\n"
        "I1203 07:52:01.100000       1 controller.go:80] Listening for connections on address: unix:///var/lib/csi/sockets/pluginproxy/csi.sock\n"
    )
    nodes = [
        _node("hyperpod-i-0a1b2c3d4e5f60001", "system", "ml.m5.2xlarge", SYSTEM_ALLOC),
        _node("hyperpod-i-0a1b2c3d4e5f60002", "system", "ml.m5.2xlarge", SYSTEM_ALLOC),
        *(_node(f"hyperpod-i-0a1b2c3d4e5f6010{i}", "gpu-p5", "ml.p5.4xlarge", GPU_ALLOC) for i in range(3)),
    ]
    daemonsets = [
        {
            "metadata": {"name": "aws-node", "namespace": "kube-system"},
            "spec": {
                "template": {"spec": {"containers": [{"name": "aws-node", "resources": {"requests": {"cpu": "25m"}}}]}}
            },
        }
    ]
    deployments = [
        {
            "metadata": {"name": "metrics-server", "namespace": "kube-system"},
            "spec": {
                "replicas": 1,
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "metrics-server", "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}}}
                        ]
                    }
                },
            },
        }
    ]
    out.update(
        {
            "/version/": {"major": "1", "minor": "34", "gitVersion": "v1.34.2-eks-3025e55", "platform": "linux/amd64"},
            "/api/v1/pods": _list("Pod", pods),
            "/api/v1/nodes": _list("Node", nodes),
            "/api/v1/services": _list("Service", services),
            f"/api/v1/namespaces/{OP_NS}/services": _list(
                "Service", [s for s in services if s["metadata"]["namespace"] == OP_NS]
            ),
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions": crd_list(crds_dir),
            "/apis/apps/v1/daemonsets": _list("DaemonSet", daemonsets, "apps/v1"),
            "/apis/apps/v1/deployments": _list("Deployment", deployments, "apps/v1"),
            "/apis/networking.k8s.io/v1/ingresses": _list("Ingress", [], "networking.k8s.io/v1"),
            # task governance (stacks/Pulumi.staging.yaml: three priority classes, the add-on's Kueue controller)
            "/apis/kueue.x-k8s.io/v1beta1/workloadpriorityclasses": _list(
                "WorkloadPriorityClass",
                [
                    {"metadata": {"name": f"{n}-priority"}, "value": v}
                    for n, v in (("inference", 100), ("experimentation", 50), ("training", 10))
                ],
                "kueue.x-k8s.io/v1beta1",
            ),
            "/apis/apps/v1/namespaces/kueue-system/deployments/kueue-controller-manager": {
                "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
                "spec": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "manager", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}
                            ],
                            "tolerations": [
                                {"key": "sagemaker.amazonaws.com/node-health-status", "operator": "Exists"}
                            ],
                        }
                    },
                },
                "status": {"readyReplicas": 1},
            },
        }
    )
    return out


def healthy_targets(*ips: str, port: int = 8080) -> dict[str, Any]:
    return {
        "TargetHealthDescriptions": [
            {
                "Target": {"Id": ip, "Port": port, "AvailabilityZone": "eu-west-2b"},
                "HealthCheckPort": str(port),
                "TargetHealth": {"State": "healthy"},
            }
            for ip in ips
        ]
    }


def cluster_nodes(groups: dict[str, int], status: str = "Running") -> dict[str, Any]:
    launch = "2026-12-03T07:20:00Z"
    return {
        "ClusterNodeSummaries": [
            {
                "InstanceGroupName": g,
                "InstanceId": f"i-0a1b2c3d4e5f6{n:02d}{i}",
                "InstanceType": "ml.p5.4xlarge" if g == "gpu-p5" else "ml.m5.2xlarge",
                "LaunchTime": launch,
                "InstanceStatus": {"Status": status},
            }
            for n, (g, count) in enumerate(groups.items())
            for i in range(count)
        ]
    }


def addon(version: str = "v1.5.0-eksbuild.1", status: str = "ACTIVE") -> dict[str, Any]:
    return {
        "addon": {
            "addonName": "amazon-sagemaker-hyperpod-inference",
            "clusterName": "hpi-staging-eks",
            "status": status,
            "addonVersion": version,
        }
    }


def context(cfg: Any, kube: Kube, clients: Clients, **kwargs: Any) -> Context:
    def no_http(url: str, method: str, headers: dict[str, str], body: bytes | None) -> HttpAnswer:
        raise AssertionError(f"unexpected HTTP request {method} {url}")

    kwargs.setdefault("http", no_http)
    kwargs.setdefault("today", TODAY)
    return Context(cfg=cfg, aws=clients, kube=kube, **kwargs)


def mutated(responses: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(responses)


ALB_LOG_BUCKET = "hpi-staging-alb-logs-20261203075512345600000001"
ALB_LOG_OBJECT = "elasticloadbalancing/eu-west-2/2026/12/03/ELBAccessLogTestFile"


def alb_log_attributes(enabled: str = "true") -> dict[str, Any]:
    """DescribeLoadBalancerAttributes of the front door: access logs to the stack's bucket under ``alb``."""
    return {
        "Attributes": [
            {"Key": "access_logs.s3.enabled", "Value": enabled},
            {"Key": "access_logs.s3.bucket", "Value": ALB_LOG_BUCKET},
            {"Key": "access_logs.s3.prefix", "Value": "alb"},
        ]
    }


# The builds EKS lists for staging's prerequisites on Kubernetes 1.34 (check prerequisite-builds): its pins.
STAGING_PREREQUISITE_PINS = {
    "aws-mountpoint-s3-csi-driver": "v1.14.1-eksbuild.1",
    "aws-fsx-csi-driver": "v1.6.0-eksbuild.1",
    "metrics-server": "v0.7.2-eksbuild.4",
    "cert-manager": "v1.18.2-eksbuild.2",
}


def queue_prerequisite_builds(clients: StubbedClients, kubernetes_version: str = "1.34") -> None:
    """DescribeAddonVersions for each of staging's prerequisites, listing its pin."""
    for addon_name, build in STAGING_PREREQUISITE_PINS.items():
        clients.queue(
            "eks",
            "describe_addon_versions",
            {"addons": [{"addonName": addon_name, "addonVersions": [{"addonVersion": build}]}]},
            {"addonName": addon_name, "kubernetesVersion": kubernetes_version},
        )
