"""InferenceEndpoints: every ``endpoints[]`` entry as the operator's custom resource.

The user writes the spec field for field as in the AWS docs; the package adds only what it owns and can
know better than the user:

- ``tlsConfig.tlsCertificateOutputS3Uri`` — where the operator writes the endpoint's TLS certificate: a
  per-endpoint prefix in the operator's TLS bucket (the bucket the add-on's execution role may write to),
  unless the user set a URI;
- ``kvCacheSpec.l2CacheSpec.l2CacheLocalUrl`` — the stack's ElastiCache URL (with its AUTH token) for
  endpoints that ask for ``l2CacheBackend: redis`` without a URL. Only those endpoints receive it, and
  their whole custom resource becomes a Pulumi secret because the URL carries the token;
- ``tags`` (InferenceEndpointConfig only; JumpStartModel has no ``tags``) — the stack's common tags, so the
  SageMaker objects the operator creates are attributable, with the user's own tags kept on top.

``tieredstorage`` endpoints need no URL: the HyperPod cluster provides the tier.

Rendering is a pure function (:func:`render_endpoint`) so tests validate specs against the real CRDs
without Outputs; the component only resolves the owned values and registers the resources.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .config.endpoints import EndpointConfig, endpoint_spec, l2_spec, opts_into_gateway, wants_stack_redis

API_VERSION = "inference.sagemaker.aws.amazon.com/v1"
ENGINE_LABEL = "hyperpod-inference/engine"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
# Namespaces that exist on every cluster running the add-on; never created (nor deleted) by this package.
SYSTEM_NAMESPACES = frozenset({"default", "hyperpod-inference-system"})


@dataclass(frozen=True)
class OwnedValues:
    """Plain values the package fills into a spec (resolved Outputs, or test fixtures)."""

    tls_bucket: str | None = None
    redis_url: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


def tls_output_uri(bucket: str, endpoint: EndpointConfig) -> str:
    """The S3 URI an endpoint's certificate is written to: one prefix per endpoint in the TLS bucket."""
    return f"s3://{bucket}/endpoints/{endpoint.namespace}/{endpoint.name}"


def labels(endpoint: EndpointConfig) -> dict[str, str]:
    return {
        ENGINE_LABEL: endpoint.engine,
        MANAGED_BY_LABEL: "pulumi",
        "app.kubernetes.io/part-of": "hyperpod-inference",
    }


def render_endpoint(endpoint: EndpointConfig, owned: OwnedValues) -> dict[str, Any]:
    """The full custom resource (apiVersion, kind, metadata, spec) for one ``endpoints[]`` entry.

    Raises ``ValueError`` when the endpoint needs the Redis URL and none is given (the config checks make
    that unreachable from a valid stack).
    """
    spec = copy.deepcopy(endpoint_spec(endpoint))
    if owned.tls_bucket:
        tls = spec.setdefault("tlsConfig", {})
        tls.setdefault("tlsCertificateOutputS3Uri", tls_output_uri(owned.tls_bucket, endpoint))
    if wants_stack_redis(endpoint):
        if not owned.redis_url:
            raise ValueError(f"endpoint {endpoint.name} asks for the redis L2 backend but the stack has no Redis URL")
        l2 = l2_spec(spec)
        assert l2 is not None
        l2["l2CacheLocalUrl"] = owned.redis_url
    if endpoint.kind == "InferenceEndpointConfig" and owned.tags:
        user_tags = [t for t in spec.get("tags", []) if isinstance(t, dict)]
        user_names = {t.get("name") for t in user_tags}
        spec["tags"] = [{"name": k, "value": v} for k, v in owned.tags.items() if k not in user_names] + user_tags
    return {
        "apiVersion": API_VERSION,
        "kind": endpoint.kind,
        "metadata": {"name": endpoint.name, "namespace": endpoint.namespace, "labels": labels(endpoint)},
        "spec": spec,
    }


@dataclass(frozen=True)
class InferenceEndpointsArgs:
    endpoints: Sequence[EndpointConfig]
    tags: dict[str, str] = field(default_factory=dict, metadata={"doc": "The stack's common tags (spec.tags)."})
    tls_bucket: pulumi.Input[str] | None = field(default=None, metadata={"doc": "The operator's TLS bucket name."})
    redis_url: pulumi.Input[str] | None = field(
        default=None, metadata={"doc": "The L2 cache connection URL (secret: it carries the AUTH token)."}
    )
    k8s_provider: pulumi.ProviderResource | None = None
    depends_on: Sequence[pulumi.Resource] = field(
        default_factory=list, metadata={"doc": "The inference add-on: its CRDs and webhooks must exist first."}
    )
    gateway: pulumi.Resource | None = field(
        default=None, metadata={"doc": "The InferenceGateway; endpoints that opt in are created after it."}
    )
    gateway_factory: Callable[[Mapping[str, k8s.core.v1.Namespace]], pulumi.Resource] | None = field(
        default=None,
        metadata={
            "doc": "Builds the InferenceGateway once the Namespaces exist (it lives in its endpoints' namespace and "
            "waits for it); used instead of ``gateway``."
        },
    )
    extra_namespaces: Sequence[str] = field(
        default=(), metadata={"doc": "Namespaces to create besides the endpoints' (the gateway's, when set apart)."}
    )


class InferenceEndpoints(pulumi.ComponentResource):
    """The endpoints' namespaces and custom resources, created after the inference add-on."""

    resources: dict[str, k8s.apiextensions.CustomResource]
    namespaces: dict[str, k8s.core.v1.Namespace]
    gateway: pulumi.Resource | None
    names: dict[str, str]

    def __init__(self, name: str, args: InferenceEndpointsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:endpoints:InferenceEndpoints", name, None, opts)
        base = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)

        self.namespaces = {}
        for ns in dict.fromkeys([*(e.namespace for e in args.endpoints), *args.extra_namespaces]):
            if ns in SYSTEM_NAMESPACES:
                continue
            self.namespaces[ns] = k8s.core.v1.Namespace(
                f"{name}-ns-{ns}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=ns, labels={MANAGED_BY_LABEL: "pulumi", "app.kubernetes.io/part-of": "hyperpod-inference"}
                ),
                opts=base,
            )

        gateway = args.gateway_factory(self.namespaces) if args.gateway_factory is not None else args.gateway
        self.gateway = gateway
        self.resources = {}
        for endpoint in args.endpoints:
            needs_redis = wants_stack_redis(endpoint)
            tls = pulumi.Output.from_input(args.tls_bucket) if args.tls_bucket is not None else None
            redis = pulumi.Output.from_input(args.redis_url) if needs_redis and args.redis_url is not None else None

            def _spec(values: list[Any], ep: EndpointConfig = endpoint) -> dict[str, Any]:
                owned = OwnedValues(tls_bucket=values[0], redis_url=values[1], tags=args.tags)
                spec: dict[str, Any] = render_endpoint(ep, owned)["spec"]
                return spec

            spec: pulumi.Input[dict[str, Any]]
            if tls is None and redis is None:
                spec = _spec([None, None])
            else:
                spec = pulumi.Output.all(tls, redis).apply(_spec)
            depends: list[pulumi.Resource] = list(args.depends_on)
            if endpoint.namespace in self.namespaces:
                depends.append(self.namespaces[endpoint.namespace])
            if gateway is not None and opts_into_gateway(endpoint):
                depends.append(gateway)
            self.resources[endpoint.name] = k8s.apiextensions.CustomResource(
                f"{name}-{endpoint.namespace}-{endpoint.name}",
                api_version=API_VERSION,
                kind=endpoint.kind,
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=endpoint.name, namespace=endpoint.namespace, labels=labels(endpoint)
                ),
                spec=spec,
                opts=pulumi.ResourceOptions.merge(
                    base,
                    pulumi.ResourceOptions(
                        depends_on=depends,
                        additional_secret_outputs=["spec"] if redis is not None else None,
                    ),
                ),
            )
        self.names = {e.name: f"{e.namespace}/{e.name}" for e in args.endpoints}
        self.register_outputs({"endpoints": self.names})
