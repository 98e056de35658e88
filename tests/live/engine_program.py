"""The Kubernetes layer of a reference stack on its own, for the real engine (tests/live/test_live_engine.py).

It composes the project's Kubernetes-side components exactly as ``components/hyperpod_inference.py`` does for the
stack file named by ``live:source`` (namespaces, the endpoints' custom resources, the Redis credentials Secret, the
viewer Role and RoleBinding, the InferenceGatewayConfig), with an explicit Kubernetes provider for the live API
server instead of the EKS cluster's. The same file runs under the mocks (``tools.plan.harness.run_stack``, the
offline plan) and under the real engine (an Automation API inline program), so the two plans can be compared.

``live:change`` set to ``health-path`` changes the last endpoint's ``spec.loadBalancer.healthCheckPath``: the
"change" step of the engine suite.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from components.config.gateway import gateway_namespace
from components.config.loader import parse_stack_mapping
from components.config.stackfile import load_stack_file, stack_path
from components.endpoints import InferenceEndpoints, InferenceEndpointsArgs, RedisConnection
from components.inference_gateway import InferenceGateway, InferenceGatewayArgs

PROJECT_KEY = "hyperpod-inference"
LIVE = pulumi.Config("live")
SOURCE = LIVE.get("source") or "prod"
CHANGE = LIVE.get("change") or ""
TLS_BUCKET = "hpi-live-tls"
REDIS = "rediss://hpi-live-redis.example:6379"


def source_mapping() -> dict[str, object]:
    mapping = copy.deepcopy(load_stack_file(stack_path(SOURCE)))
    if CHANGE == "health-path":
        endpoint = mapping[f"{PROJECT_KEY}:endpoints"][-1]  # type: ignore[index]
        endpoint["spec"].setdefault("loadBalancer", {})["healthCheckPath"] = "/healthz"
    return mapping


cfg = parse_stack_mapping(SOURCE, source_mapping())
provider = k8s.Provider("live", kubeconfig=LIVE.get("kubeconfig") or "{}", enable_server_side_apply=True)
gateway_ns = gateway_namespace(cfg) if cfg.gateway.enabled else None


def make_gateway(namespaces: Mapping[str, pulumi.Resource]) -> InferenceGateway:
    assert gateway_ns is not None
    return InferenceGateway(
        "inference-gateway",
        InferenceGatewayArgs(
            gateway=cfg.gateway,
            namespace=gateway_ns,
            k8s_provider=provider,
            depends_on=[namespaces[gateway_ns]] if gateway_ns in namespaces else [],
        ),
    )


endpoints = InferenceEndpoints(
    "endpoints",
    InferenceEndpointsArgs(
        endpoints=cfg.endpoints,
        tags=cfg.common_tags,
        tls_bucket=TLS_BUCKET,
        redis=RedisConnection(address=REDIS, username="default", password=pulumi.Output.secret("live-password")),
        k8s_provider=provider,
        gateway_factory=make_gateway if cfg.gateway.enabled else None,
        extra_namespaces=[gateway_ns] if gateway_ns else [],
    ),
)
pulumi.export("endpoints", sorted(endpoints.resources))
