"""InferenceGateway: the managed Inference Gateway's ``InferenceGatewayConfig`` (add-on v2.0.0-eksbuild.2+).

One ``InferenceGatewayConfig`` (``inference.sagemaker.aws.amazon.com/v1alpha1``) describes one gateway: the
body-based router, TLS, request authentication and one scheduler (endpoint picker) per model. The add-on's
``inference-gateway-controller`` reconciles it; that controller's certificate role (IRSA) belongs to the
operator layer and must exist before the add-on, so this resource only ``depends_on`` the add-on.

It lives in the namespace of the endpoints it fronts (``components/config/gateway.py`` gives the sources: an
InferencePool selects pods in its own namespace only), so it waits for that Namespace when this package creates
it. Endpoints opt in with ``spec.inferenceGateway.enabled: true`` and ``name``: this gateway's. Gateway endpoints have no request
authentication unless ``spec.auth.jwt`` is set (AWS docs), which is why the config contract requires JWT
(issuer, remote JWKS URI, audiences or required claims) in prod.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .config.gateway import GatewayConfig

API_VERSION = "inference.sagemaker.aws.amazon.com/v1alpha1"
KIND = "InferenceGatewayConfig"


def gateway_spec(gateway: GatewayConfig) -> dict[str, Any]:
    """The gateway's spec as the camelCase mapping the user wrote (typed or free-form)."""
    if hasattr(gateway, "spec_dict"):
        typed: dict[str, Any] = copy.deepcopy(gateway.spec_dict())
        return typed
    return copy.deepcopy(dict(gateway.spec or {}))


def render_gateway(gateway: GatewayConfig, namespace: str) -> dict[str, Any]:
    """The full ``InferenceGatewayConfig`` custom resource, in ``namespace`` (config.gateway.gateway_namespace)."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": gateway.name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "hyperpod-inference"},
        },
        "spec": gateway_spec(gateway),
    }


@dataclass(frozen=True)
class InferenceGatewayArgs:
    gateway: GatewayConfig
    namespace: str = field(metadata={"doc": "The endpoints' namespace (config.gateway.gateway_namespace)."})
    k8s_provider: pulumi.ProviderResource | None = None
    depends_on: Sequence[pulumi.Resource] = field(
        default_factory=list,
        metadata={"doc": "The inference add-on (its CRD and gateway controller) and the Namespace, if created."},
    )


class InferenceGateway(pulumi.ComponentResource):
    """The ``InferenceGatewayConfig`` custom resource."""

    resource: k8s.apiextensions.CustomResource
    name: pulumi.Output[str]
    namespace: str

    def __init__(self, name: str, args: InferenceGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:inference_gateway:InferenceGateway", name, None, opts)
        body = render_gateway(args.gateway, args.namespace)
        self.resource = k8s.apiextensions.CustomResource(
            f"{name}-config",
            api_version=body["apiVersion"],
            kind=body["kind"],
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=body["metadata"]["name"],
                namespace=body["metadata"]["namespace"],
                labels=body["metadata"]["labels"],
            ),
            spec=body["spec"],
            opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=list(args.depends_on)),
        )
        self.name = pulumi.Output.from_input(args.gateway.name)
        self.namespace = args.namespace
        self.register_outputs({"name": self.name, "namespace": args.namespace})
