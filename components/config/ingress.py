"""``hyperpod-inference:ingress`` — the ALB front door with OIDC (or Cognito) authentication.

The HyperPod Inference Operator's own ``loadBalancer`` spec has no authentication fields, so this section
puts an ALB we own in front of the endpoints: TLS 1.2+ only, HTTP redirected to HTTPS, authentication at the
ALB (``authenticate-oidc`` / ``authenticate-cognito``) before any request reaches a GPU, and routes that
forward to one target group per endpoint, bound to the endpoint's Kubernetes Service.

``authentication: none`` is accepted here on purpose: whether an environment may run without it is a
*policy* decision (the mandatory ``alb-requires-authentication`` policy rejects it for prod), not a
syntax error, and the rendered listener shows exactly what was chosen.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from pydantic import Field, HttpUrl, SecretStr, field_validator

from .base import ConfigIssue, Model
from .checks import cross_check

if TYPE_CHECKING:
    from .stack import StackConfig

# ELB security policies whose minimum protocol is TLS 1.2 (TLS 1.0/1.1 policies are not allowed).
# Source: "Security policies for your Application Load Balancer", Elastic Load Balancing user guide.
TLS12_PLUS_POLICIES: tuple[str, ...] = (
    "ELBSecurityPolicy-TLS13-1-2-2021-06",
    "ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
    "ELBSecurityPolicy-TLS13-1-2-Ext1-2021-06",
    "ELBSecurityPolicy-TLS13-1-2-Ext2-2021-06",
    "ELBSecurityPolicy-TLS13-1-3-2021-06",
    "ELBSecurityPolicy-TLS13-1-2-FIPS-2023-04",
    "ELBSecurityPolicy-TLS13-1-2-Res-FIPS-2023-04",
    "ELBSecurityPolicy-TLS13-1-3-FIPS-2023-04",
    "ELBSecurityPolicy-TLS-1-2-2017-01",
    "ELBSecurityPolicy-TLS-1-2-Ext-2018-06",
    "ELBSecurityPolicy-FS-1-2-2019-08",
    "ELBSecurityPolicy-FS-1-2-Res-2019-08",
    "ELBSecurityPolicy-FS-1-2-Res-2020-10",
)
DEFAULT_TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"

Hostname = r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$"
OnUnauthenticated = Literal["deny", "authenticate", "allow"]


def _require_https(value: HttpUrl) -> HttpUrl:
    if value.scheme != "https":
        raise ValueError(f"must be an https:// URL (the ALB only talks to identity providers over TLS), got {value}")
    return value


class OidcConfig(Model):
    """An OpenID Connect provider for ``authenticate-oidc``. All four endpoints must be https."""

    issuer: HttpUrl
    authorization_endpoint: HttpUrl
    token_endpoint: HttpUrl
    user_info_endpoint: HttpUrl
    client_id: str = Field(min_length=1)
    client_secret: SecretStr | None = Field(
        default=None,
        description="Set with `pulumi config set --secret --path 'hyperpod-inference:ingress.oidc.clientSecret' ...`.",
    )
    scope: str = Field(default="openid", min_length=1)
    session_timeout: int = Field(default=3600, ge=1, le=604800, description="Seconds (max 7 days).")
    on_unauthenticated_request: OnUnauthenticated = Field(
        default="deny",
        description="deny (401, for API clients; the default), authenticate (redirect browsers to the IdP) or allow.",
    )

    _https = field_validator("issuer", "authorization_endpoint", "token_endpoint", "user_info_endpoint")(_require_https)


class CognitoConfig(Model):
    """An Amazon Cognito user pool for ``authenticate-cognito``."""

    user_pool_arn: str = Field(pattern=r"^arn:aws[a-z-]*:cognito-idp:[a-z0-9-]+:[0-9]{12}:userpool/[\w-]+$")
    user_pool_client_id: str = Field(min_length=1)
    user_pool_domain: str = Field(min_length=1, description="The user pool's domain prefix (not the full URL).")
    scope: str = Field(default="openid", min_length=1)
    session_timeout: int = Field(default=3600, ge=1, le=604800)
    on_unauthenticated_request: OnUnauthenticated = "deny"


class RouteConfig(Model):
    """One listener rule: requests matching ``host`` and/or ``path`` go to ``endpoint``.

    A route with neither ``host`` nor ``path`` is the catch-all: it becomes the HTTPS listener's default
    action (at most one). Without a catch-all, unmatched requests get a 404 after authentication.
    """

    endpoint: str = Field(description="The `endpoints[].name` this route forwards to.")
    host: str | None = Field(default=None, pattern=Hostname, description="Host header to match (in the zone).")
    path: str | None = Field(default=None, pattern=r"^/[-a-zA-Z0-9_.~/*?]*$", description="Path pattern, e.g. /v1/*.")
    service_name: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
        description="Kubernetes Service to bind; default: the endpoint's name (see README: ingress).",
    )
    service_port: int | None = Field(
        default=None, ge=1, le=65535, description="Service port; default: worker.modelInvocationPort.containerPort."
    )

    @property
    def is_catch_all(self) -> bool:
        return self.host is None and self.path is None


class IngressConfig(Model):
    """The ALB front door. Disabled unless ``enabled: true``."""

    enabled: bool = False
    scheme: Literal["internet-facing", "internal"] = Field(
        default="internal", description="internal (private subnets; the default) or internet-facing (public subnets)."
    )
    allowed_cidrs: list[ipaddress.IPv4Network] | None = Field(
        default=None,
        description="Who may reach 80/443. Default for internal: the VPC CIDR. Required for internet-facing.",
    )
    domain_name: str | None = Field(default=None, pattern=Hostname, description="The name clients use (alias record).")
    hosted_zone_id: str | None = Field(default=None, pattern=r"^Z[A-Z0-9]+$")
    hosted_zone_name: str | None = Field(
        default=None,
        pattern=Hostname,
        description="The Route 53 zone's name; domainName and route hosts must be in it.",
    )
    certificate_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[a-fA-F0-9-]+$",
        description="An existing ACM certificate; default: a new DNS-validated certificate in the hosted zone.",
    )
    ssl_policy: str = Field(
        default=DEFAULT_TLS_POLICY,
        description="ELB security policy of the HTTPS listener (TLS 1.2+ only).",
        json_schema_extra={"enum": list(TLS12_PLUS_POLICIES)},
    )
    idle_timeout: int = Field(
        default=300, ge=1, le=4000, description="Seconds; long enough for streamed LLM responses."
    )
    deletion_protection: bool | None = Field(default=None, description="Default: true in prod, false elsewhere.")
    waf_web_acl_arn: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:wafv2:[a-z0-9-]+:[0-9]{12}:regional/webacl/.+$"
    )
    access_log_retention_days: int = Field(default=90, ge=1, le=3650)
    authentication: Literal["oidc", "cognito", "none"] = "oidc"
    oidc: OidcConfig | None = None
    cognito: CognitoConfig | None = None
    routes: list[RouteConfig] = Field(default_factory=list)

    @field_validator("ssl_policy")
    @classmethod
    def _tls12_plus(cls, value: str) -> str:
        if value not in TLS12_PLUS_POLICIES:
            raise ValueError(
                f"{value!r} is not a TLS 1.2+ ELB security policy; allowed: {', '.join(TLS12_PLUS_POLICIES)}"
            )
        return value

    @property
    def route_hosts(self) -> list[str]:
        """Distinct route host names other than ``domainName``, in route order."""
        seen: list[str] = []
        for route in self.routes:
            if route.host and route.host != self.domain_name and route.host not in seen:
                seen.append(route.host)
        return seen


def _in_zone(name: str, zone: str) -> bool:
    zone = zone.rstrip(".")
    return name == zone or name.endswith("." + zone)


def _ingress_checks(cfg: StackConfig) -> Iterable[ConfigIssue]:
    ing = cfg.ingress
    # Sub-sections that do not match the chosen authentication are typos waiting to happen.
    if ing.authentication != "oidc" and ing.oidc is not None:
        yield ConfigIssue("ingress.oidc", f"set but authentication is {ing.authentication!r}; remove it or use oidc")
    if ing.authentication != "cognito" and ing.cognito is not None:
        yield ConfigIssue(
            "ingress.cognito", f"set but authentication is {ing.authentication!r}; remove it or use cognito"
        )
    if not ing.enabled:
        return
    if ing.authentication == "oidc":
        if ing.oidc is None:
            yield ConfigIssue("ingress.oidc", "required when authentication is oidc (issuer, endpoints, clientId)")
        elif ing.oidc.client_secret is None or not ing.oidc.client_secret.get_secret_value():
            yield ConfigIssue(
                "ingress.oidc.clientSecret",
                "required when authentication is oidc; set it with `pulumi config set --secret --path "
                "'hyperpod-inference:ingress.oidc.clientSecret' <secret>`",
            )
    if ing.authentication == "cognito" and ing.cognito is None:
        yield ConfigIssue("ingress.cognito", "required when authentication is cognito (userPoolArn, clientId, domain)")

    if ing.domain_name is None:
        yield ConfigIssue("ingress.domainName", "required when ingress is enabled (the alias record's name)")
    if ing.hosted_zone_id is None:
        yield ConfigIssue("ingress.hostedZoneId", "required when ingress is enabled (alias and validation records)")
    if ing.hosted_zone_name is None:
        yield ConfigIssue(
            "ingress.hostedZoneName", "required when ingress is enabled (the zone's name, e.g. example.com)"
        )
    elif ing.domain_name is not None and not _in_zone(ing.domain_name, ing.hosted_zone_name):
        yield ConfigIssue(
            "ingress.domainName",
            f"{ing.domain_name} is outside the hosted zone {ing.hosted_zone_name}; use a name in that zone",
        )

    if ing.scheme == "internet-facing":
        if ing.allowed_cidrs is None:
            yield ConfigIssue(
                "ingress.allowedCidrs",
                "required for an internet-facing ALB; list the client CIDRs (write [0.0.0.0/0] to open it to all)",
            )
        if cfg.network.existing is not None and not cfg.network.existing.public_subnets:
            yield ConfigIssue(
                "network.existing.publicSubnets", "an internet-facing ALB needs public subnets in at least two AZs"
            )
    if len(cfg.network.az_ids) < 2:
        yield ConfigIssue("network.availabilityZoneIds", "an ALB needs subnets in at least two availability zones")

    yield from _route_checks(cfg)


def _route_checks(cfg: StackConfig) -> Iterable[ConfigIssue]:
    ing = cfg.ingress
    if not ing.routes:
        yield ConfigIssue("ingress.routes", "at least one route is required when ingress is enabled")
        return
    known = {e.name for e in cfg.endpoints}
    catch_alls = [i for i, r in enumerate(ing.routes) if r.is_catch_all]
    for i in catch_alls[1:]:
        yield ConfigIssue(
            f"ingress.routes[{i}]", "a second catch-all route (no host and no path); only one route may omit both"
        )
    conditions = Counter((r.host, r.path) for r in ing.routes if not r.is_catch_all)
    for i, route in enumerate(ing.routes):
        if route.endpoint not in known:
            allowed = ", ".join(sorted(known)) or "(no endpoints are configured)"
            yield ConfigIssue(f"ingress.routes[{i}].endpoint", f"unknown endpoint {route.endpoint!r}; known: {allowed}")
        if (
            route.host is not None
            and ing.hosted_zone_name is not None
            and not _in_zone(route.host, ing.hosted_zone_name)
        ):
            yield ConfigIssue(
                f"ingress.routes[{i}].host",
                f"{route.host} is outside the hosted zone {ing.hosted_zone_name}; use a name in that zone",
            )
        if not route.is_catch_all and conditions[(route.host, route.path)] > 1:
            yield ConfigIssue(f"ingress.routes[{i}]", "the same host/path is routed twice")
    # One endpoint is one target group: its Service binding must not differ between routes.
    bindings: dict[str, tuple[str | None, int | None]] = {}
    for i, route in enumerate(ing.routes):
        binding = (route.service_name, route.service_port)
        if bindings.setdefault(route.endpoint, binding) != binding:
            yield ConfigIssue(
                f"ingress.routes[{i}]",
                f"endpoint {route.endpoint!r} is routed with a different serviceName/servicePort than an earlier route",
            )


cross_check(_ingress_checks)
