"""InferenceEndpoints: every ``endpoints[]`` entry as the operator's custom resource.

The user writes the spec field for field as in the AWS docs; the package adds only what it owns and can
know better than the user:

- ``tlsConfig.tlsCertificateOutputS3Uri`` — where the operator writes the endpoint's TLS certificate: a
  per-endpoint prefix in the operator's TLS bucket (the bucket the add-on's execution role may write to),
  unless the user set a URI;
- ``kvCacheSpec.l2CacheSpec.l2CacheLocalUrl`` — the stack's Redis URL for endpoints that ask for
  ``l2CacheBackend: redis`` without a URL. When the Redis needs credentials the URL names them only as
  ``$(HPI_KV_CACHE_USERNAME)``/``$(HPI_KV_CACHE_PASSWORD)``; the worker's environment (``worker.
  environmentVariables``, ``spec.environmentVariables`` on a JumpStartModel) gets those two from the Secret
  ``hpi-kv-cache-credentials`` in the endpoint's namespace, the same URL as ``LMCACHE_REMOTE_URL``, and
  ``LMCACHE_LOG_LEVEL=WARNING`` unless set (LMCache logs the expanded URL at INFO). The kubelet expands the
  references when the container starts; the custom resource carries no credential
  (``components/config/kvcache.py`` has the LMCache sources and why the order covers the operator's own
  ``LMCACHE_REMOTE_URL``);
- ``tags`` (InferenceEndpointConfig only; JumpStartModel has no ``tags``) — the stack's common tags, so the
  SageMaker objects the operator creates are attributable, with the user's own tags kept on top.

``tieredstorage`` endpoints need no URL: the HyperPod cluster provides the tier.

Who may read what: in each namespace it creates endpoints in (not ``hyperpod-inference-system``, which the add-on
owns) the package also creates the Role ``hpi-endpoint-viewer`` — read the operator's custom resources, pods,
services and events; no Secrets, no ``pods/log``, no ``pods/exec`` — bound to the Kubernetes group
``hpi-endpoint-viewers``: map the people who need to look at endpoints to that group (EKS access entry
``kubernetesGroups``) instead of ``edit``/``admin``, which can read the credentials Secret.

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

from policies.readiness import await_annotations, custom_timeouts

from .config.endpoints import EndpointConfig
from .config.governance import kueue_labels
from .config.kvcache import CREDENTIALS_SECRET, credential_env, credential_url

API_VERSION = "inference.sagemaker.aws.amazon.com/v1"
ENGINE_LABEL = "hyperpod-inference/engine"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
# Namespaces that exist on every cluster running the add-on; never created (nor deleted) by this package.
SYSTEM_NAMESPACES = frozenset({"default", "hyperpod-inference-system"})
OPERATOR_NAMESPACE = "hyperpod-inference-system"
VIEWER_ROLE = "hpi-endpoint-viewer"
VIEWER_GROUP = "hpi-endpoint-viewers"
# Read-only on what an endpoint is made of; deliberately no secrets, pods/log (LMCache logs its Redis URL at INFO)
# or pods/exec (the worker's environment holds the expanded URL).
VIEWER_RULES: tuple[dict[str, list[str]], ...] = (
    {
        "apiGroups": ["inference.sagemaker.aws.amazon.com"],
        "resources": [
            "inferenceendpointconfigs",
            "inferenceendpointconfigs/status",
            "jumpstartmodels",
            "jumpstartmodels/status",
        ],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": [""], "resources": ["pods", "services", "events"], "verbs": ["get", "list", "watch"]},
)


@dataclass(frozen=True)
class RedisWiring:
    """What an endpoint asking for the stack's Redis gets: ``url`` for ``l2CacheLocalUrl``, and whether the URL
    references the credentials Secret (then the worker's environment is extended, see the module docstring)."""

    url: str
    credentials: bool = False


@dataclass(frozen=True)
class RedisConnection:
    """The stack's Redis as the endpoints layer needs it.

    ``address`` is ``redis(s)://host:port`` without credentials; ``password`` None means the Redis takes none.
    """

    address: pulumi.Input[str]
    username: pulumi.Input[str] = ""
    password: pulumi.Input[str] | None = None


@dataclass(frozen=True)
class OwnedValues:
    """Plain values the package fills into a spec (resolved Outputs, or test fixtures)."""

    tls_bucket: str | None = None
    redis: RedisWiring | None = None
    tags: dict[str, str] = field(default_factory=dict)


def _env_list(spec: dict[str, Any], kind: str) -> list[Any]:
    """The container environment list of the spec (created if absent): IEC worker.environmentVariables, JSM
    spec.environmentVariables (both core EnvVar lists in the CRDs)."""
    holder = spec.setdefault("worker", {}) if kind == "InferenceEndpointConfig" else spec
    env: list[Any] = holder.setdefault("environmentVariables", [])
    return env


def tls_output_uri(bucket: str, endpoint: EndpointConfig) -> str:
    """The S3 URI an endpoint's certificate is written to: one prefix per endpoint in the TLS bucket."""
    return f"s3://{bucket}/endpoints/{endpoint.namespace}/{endpoint.name}"


def labels(endpoint: EndpointConfig) -> dict[str, str]:
    """The custom resource's labels; an endpoint of a task governance team also carries its Kueue queue and
    priority class (``config/governance.py`` kueue_labels: the CRD has no pod-label field)."""
    return {
        ENGINE_LABEL: endpoint.engine,
        MANAGED_BY_LABEL: "pulumi",
        "app.kubernetes.io/part-of": "hyperpod-inference",
        **kueue_labels(endpoint),
    }


def render_endpoint(endpoint: EndpointConfig, owned: OwnedValues) -> dict[str, Any]:
    """The full custom resource (apiVersion, kind, metadata, spec) for one ``endpoints[]`` entry.

    Raises ``ValueError`` when the endpoint needs the Redis URL and none is given (the config checks make
    that unreachable from a valid stack).
    """
    spec = copy.deepcopy(endpoint.spec_dict())
    if owned.tls_bucket:
        tls = spec.setdefault("tlsConfig", {})
        tls.setdefault("tlsCertificateOutputS3Uri", tls_output_uri(owned.tls_bucket, endpoint))
    if endpoint.wants_stack_redis:
        if owned.redis is None or not owned.redis.url:
            raise ValueError(f"endpoint {endpoint.name} asks for the redis L2 backend but the stack has no Redis URL")
        spec["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"] = owned.redis.url
        if owned.redis.credentials:
            env = _env_list(spec, endpoint.kind)
            env.extend(credential_env(env, owned.redis.url))
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
    redis: RedisConnection | None = field(
        default=None, metadata={"doc": "The stack's L2 Redis: address, and the credentials the Secret carries."}
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
    external_namespaces: Mapping[str, Sequence[pulumi.Resource]] = field(
        default_factory=dict,
        metadata={
            "doc": "Namespaces another component creates, with what creates them (task governance's "
            "hyperpod-ns-<team>, components/governance.py): never created here; their objects wait on those."
        },
    )


class InferenceEndpoints(pulumi.ComponentResource):
    """The endpoints' namespaces and custom resources, created after the inference add-on."""

    resources: dict[str, k8s.apiextensions.CustomResource]
    namespaces: dict[str, k8s.core.v1.Namespace]
    secrets: dict[str, k8s.core.v1.Secret]
    viewer_roles: dict[str, k8s.rbac.v1.Role]
    gateway: pulumi.Resource | None
    names: dict[str, str]

    def __init__(self, name: str, args: InferenceEndpointsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:endpoints:InferenceEndpoints", name, None, opts)
        base = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)

        self.namespaces = {}
        self._external = dict(args.external_namespaces)
        for ns in dict.fromkeys([*(e.namespace for e in args.endpoints), *args.extra_namespaces]):
            if ns in SYSTEM_NAMESPACES or ns in args.external_namespaces:
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
        self.secrets = self._credentials(name, args, base)
        self.viewer_roles = self._viewer_rbac(name, args, base)
        self.resources = {}
        for endpoint in args.endpoints:
            needs_redis = endpoint.wants_stack_redis
            tls = pulumi.Output.from_input(args.tls_bucket) if args.tls_bucket is not None else None
            redis = args.redis if needs_redis else None
            address = pulumi.Output.from_input(redis.address) if redis is not None else None
            with_credentials = redis is not None and redis.password is not None

            def _spec(
                values: list[Any], ep: EndpointConfig = endpoint, creds: bool = with_credentials
            ) -> dict[str, Any]:
                wiring = None
                if values[1] is not None:
                    wiring = RedisWiring(url=credential_url(values[1]) if creds else values[1], credentials=creds)
                owned = OwnedValues(tls_bucket=values[0], redis=wiring, tags=args.tags)
                spec: dict[str, Any] = render_endpoint(ep, owned)["spec"]
                return spec

            spec: pulumi.Input[dict[str, Any]]
            if tls is None and address is None:
                spec = _spec([None, None])
            else:
                spec = pulumi.Output.all(tls, address).apply(_spec)
            depends: list[pulumi.Resource] = list(args.depends_on)
            if endpoint.namespace in self.namespaces:
                depends.append(self.namespaces[endpoint.namespace])
            depends.extend(self._external.get(endpoint.namespace, ()))  # task governance's team namespaces
            if with_credentials:
                # the kubelet resolves the worker's secretKeyRef when the pod starts: the Secret goes first
                depends.append(self.secrets[endpoint.namespace])
            if gateway is not None and endpoint.opts_into_gateway:
                depends.append(gateway)
            # `up` returns once the operator reports the model deployed (pulumi.com/waitFor on status.state, and on
            # status.inferenceGateway.state for a gateway endpoint), within the readiness data's timeout.
            typ = f"kubernetes:{API_VERSION}:{endpoint.kind}"
            known = {"spec": endpoint.spec_dict()}  # the configured spec (the rendered one may be an Output)
            annotations = await_annotations(typ, known)
            timeout = custom_timeouts(typ, known) if annotations else None
            self.resources[endpoint.name] = k8s.apiextensions.CustomResource(
                f"{name}-{endpoint.namespace}-{endpoint.name}",
                api_version=API_VERSION,
                kind=endpoint.kind,
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=endpoint.name,
                    namespace=endpoint.namespace,
                    labels=labels(endpoint),
                    annotations=annotations or None,
                ),
                spec=spec,
                opts=pulumi.ResourceOptions.merge(
                    base, pulumi.ResourceOptions(depends_on=depends, custom_timeouts=timeout)
                ),
            )
        self.names = {e.name: f"{e.namespace}/{e.name}" for e in args.endpoints}
        self.register_outputs({"endpoints": self.names})

    def _namespace_deps(self, namespace: str) -> list[pulumi.Resource]:
        if namespace in self._external:
            return list(self._external[namespace])
        return [self.namespaces[namespace]] if namespace in self.namespaces else []

    def _credentials(
        self, name: str, args: InferenceEndpointsArgs, base: pulumi.ResourceOptions
    ) -> dict[str, k8s.core.v1.Secret]:
        """The Redis credentials, one Secret per namespace whose endpoints get the stack's Redis with credentials."""
        redis = args.redis
        if redis is None or redis.password is None:
            return {}
        secrets: dict[str, k8s.core.v1.Secret] = {}
        for ns in dict.fromkeys(e.namespace for e in args.endpoints if e.wants_stack_redis):
            secrets[ns] = k8s.core.v1.Secret(
                f"{name}-{ns}-kv-cache-credentials",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=CREDENTIALS_SECRET,
                    namespace=ns,
                    labels={MANAGED_BY_LABEL: "pulumi", "app.kubernetes.io/part-of": "hyperpod-inference"},
                ),
                type="Opaque",
                string_data={
                    "username": pulumi.Output.secret(redis.username),
                    "password": pulumi.Output.secret(redis.password),
                },
                opts=pulumi.ResourceOptions.merge(
                    base,
                    pulumi.ResourceOptions(
                        depends_on=self._namespace_deps(ns), additional_secret_outputs=["stringData"]
                    ),
                ),
            )
        return secrets

    def _viewer_rbac(
        self, name: str, args: InferenceEndpointsArgs, base: pulumi.ResourceOptions
    ) -> dict[str, k8s.rbac.v1.Role]:
        """A read-only Role on the endpoints (no Secrets, logs or exec) and its binding to ``hpi-endpoint-viewers``."""
        roles: dict[str, k8s.rbac.v1.Role] = {}
        for ns in dict.fromkeys(e.namespace for e in args.endpoints):
            if ns == OPERATOR_NAMESPACE:
                continue
            meta_labels = {MANAGED_BY_LABEL: "pulumi", "app.kubernetes.io/part-of": "hyperpod-inference"}
            role = k8s.rbac.v1.Role(
                f"{name}-{ns}-viewer",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=VIEWER_ROLE, namespace=ns, labels=meta_labels),
                rules=[
                    k8s.rbac.v1.PolicyRuleArgs(api_groups=r["apiGroups"], resources=r["resources"], verbs=r["verbs"])
                    for r in VIEWER_RULES
                ],
                opts=pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=self._namespace_deps(ns))),
            )
            k8s.rbac.v1.RoleBinding(
                f"{name}-{ns}-viewer-binding",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=VIEWER_ROLE, namespace=ns, labels=meta_labels),
                role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=VIEWER_ROLE),
                subjects=[
                    k8s.rbac.v1.SubjectArgs(api_group="rbac.authorization.k8s.io", kind="Group", name=VIEWER_GROUP)
                ],
                opts=pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[role])),
            )
            roles[ns] = role
        return roles
