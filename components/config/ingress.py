"""``hyperpod-inference:ingress`` — the ALB front door: OIDC or Cognito for browsers, JWT for programs.

The HyperPod Inference Operator's own ``loadBalancer`` spec has no authentication fields, so this section
puts an ALB we own in front of the endpoints: TLS 1.2+ only, HTTP redirected to HTTPS, authentication at the
ALB before any request reaches a GPU, and routes that forward to one target group per endpoint, bound to the
endpoint's Kubernetes Service. Each route picks how its callers authenticate (``routes[].authentication``,
default ``ingress.authentication``): ``authenticate-oidc`` / ``authenticate-cognito`` send a browser to a login
page; ``jwt-validation`` checks a program's bearer token against the IdP's JWKS (ELB user guide, "Verify JWTs
using an Application Load Balancer"), so one stack serves a browser UI and an API.

``authentication: none`` parses on purpose: whether an environment may run without it is a *policy* decision.
The ``alb-requires-authentication`` rule (``policies/baselines.py`` :func:`unauthenticated_forward`) judges the
actions each route will render (:func:`planned_actions`) at config time where the rule is mandatory (prod: exit
2 naming the key), and the policy pack judges the registered listeners with the same function.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol
from urllib.parse import urlsplit

from pydantic import Field, HttpUrl, SecretStr, StringConstraints, ValidationInfo, field_validator

from policies.baselines import ALB_REQUIRES_AUTHENTICATION, AUTH_ACTIONS, unauthenticated_forward
from policies.security_baselines import ALB_TLS_POLICY_RECOMMENDED, ELB17_POLICIES, elb17_violation

from . import observed
from .api_bounds import API_BOUNDS
from .base import ConfigAdvisory, ConfigIssue, Model
from .checks import Advise, Check
from .context import ValidationContext
from .endpoints import Endpoint, EndpointConfig
from .gateway import GatewayConfig
from .network import NetworkConfig


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def stack(self) -> str: ...
    @property
    def is_prod(self) -> bool: ...
    @property
    def network(self) -> NetworkConfig: ...
    @property
    def ingress(self) -> IngressConfig: ...
    @property
    def gateway(self) -> GatewayConfig: ...
    @property
    def endpoints(self) -> Sequence[Endpoint]: ...
    @property
    def context(self) -> ValidationContext: ...


# ELB security policies whose minimum protocol is TLS 1.2 (TLS 1.0/1.1 policies are not allowed).
# Source: "Security policies for your Application Load Balancer", Elastic Load Balancing user guide; the
# post-quantum (PQ) ones are those FSBP ELB.17 names (policies/security_baselines.py ELB17_POLICIES).
TLS12_PLUS_POLICIES: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
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
            *ELB17_POLICIES,
        )
    )
)
# TLS 1.3 and TLS 1.2 with restricted ciphers: one FSBP ELB.17 recommends (ELBSecurityPolicy-TLS13-1-2-2021-06,
# the default before, is no longer on that list). Prod must use an ELB.17 policy (rule alb-tls-policy-recommended).
DEFAULT_TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-Res-2021-06"

# What the ALB targets per endpoint (TargetGroupBinding ``serviceRef``; the binding lives in the Service's
# namespace because ``serviceRef`` has only name and port: kubernetes-sigs/aws-load-balancer-controller@ac0e1ffc
# (v2.13.2) apis/elbv2/v1beta1/targetgroupbinding_types.go ``ServiceReference``).
# * Intelligent routing on: traffic must go through the operator's router, not straight to worker pods.
#   The operator's own Ingress for such an endpoint is ``alb-<name>-<namespace>`` in hyperpod-inference-system
#   (AWS docs sagemaker-hyperpod-model-deployment-custom-certs; operator-facts §14), and its router Service is
#   ``<name>-<namespace>-routing-service`` there: aws-samples/llm_model_hub@b55374d3
#   backend/inference/hyperpod_deployment.py ("When intelligent routing is enabled, HyperPod operator creates:
#   Service: {endpoint_name}-{namespace}-routing-service"; an AWS sample, not AWS documentation). No source
#   names that Service's port, so prod must set ``servicePort``.
# * Intelligent routing off: no public source names the Service the operator creates for the worker pods,
#   so prod must set ``serviceName`` and ``servicePort`` (read them with ``kubectl get svc -n <namespace>``
#   after the endpoint's first deploy); other environments fall back to ``<name>``:containerPort, a guess.
OPERATOR_NAMESPACE = "hyperpod-inference-system"
ROUTER_SERVICE_SOURCE = (
    "aws-samples/llm_model_hub@b55374d3032e52e062bdcfe674d9546f45759e2a:backend/inference/hyperpod_deployment.py"
)

Hostname = r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$"
OnUnauthenticated = Literal["deny", "authenticate", "allow"]
Authentication = Literal["oidc", "cognito", "jwt", "none"]


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


# --- jwt: the ALB verifies a program's bearer token ------------------------------------------------------
# Facts (ELB user guide, "Verify JWTs using an Application Load Balancer", listener-verify-jwt; botocore 1.44.8
# elbv2 model, shapes JwtValidationActionConfig and JwtValidationActionAdditionalClaim):
# - The ALB checks the signature against the JWKS endpoint, requires `iss` and `exp`, and checks `nbf` and `iat`
#   when present; `exp`, `iss`, `nbf`, `iat` cannot be configured as additional claims (validated by default).
# - Up to 10 additional claims, each in one of three formats (JwtValidationActionAdditionalClaimFormatEnum;
#   tests/test_ingress.py pins the Literal below to the model): single-string, string-array,
#   space-separated-values; at most 10 values per claim, each up to 256 characters, and the values of a
#   space-separated-values claim cannot include spaces.
# - Issuer and JwksEndpoint: at most 256 characters each; the JWKS endpoint "must be a full URL, including the
#   HTTPS protocol, the domain, and the path" and publicly accessible (the guide's console steps).
# - Only RS256 is supported; the JWKS response may be at most 150 KB with at most 10 keys, or the ALB forwards
#   nothing. Neither is visible in the stack file: an advisory names `tools.preflight.regional --fetch-jwks`.
ClaimFormat = Literal["single-string", "string-array", "space-separated-values"]
JWT_DEFAULT_CLAIMS: tuple[str, ...] = ("exp", "iss", "nbf", "iat")
JWT_MAX_CLAIMS = 10
JWT_MAX_CLAIM_VALUES = 10
JWT_MAX_VALUE_LENGTH = 256
JWT_MAX_URL_LENGTH = 256
JWKS_MAX_KEYS = 10
JWKS_MAX_KB = 150
JWT_ALGORITHM = "RS256"


def _https_url(value: str) -> str:
    """An https URL with a host, kept exactly as written (``HttpUrl`` would append a ``/`` to a bare host, and the
    issuer is compared with the token's ``iss`` character for character)."""
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.netloc or any(c.isspace() for c in value):
        raise ValueError("must be an https:// URL with a host (no spaces)")
    return value


class JwtClaimConfig(Model):
    """One claim the token must carry, besides ``iss`` and ``exp`` (the ALB's additional claims)."""

    name: str = Field(min_length=1, description="Claim name, e.g. aud, scope, scp, client_id (not exp, iss, nbf, iat).")
    format: ClaimFormat = Field(
        description='How the token writes the claim: single-string (aud: "api"), string-array '
        '(scp: ["a", "b"]) or space-separated-values (scope: "a b", RFC 9068 section 2.2.3).',
    )
    values: list[str] = Field(
        min_length=1,
        max_length=JWT_MAX_CLAIM_VALUES,
        description="Expected values (1-10, each 1-256 characters; no spaces for space-separated-values).",
    )

    @field_validator("name")
    @classmethod
    def _not_a_default_claim(cls, value: str) -> str:
        if value in JWT_DEFAULT_CLAIMS:
            raise ValueError(
                f"{value!r} is validated by the ALB itself (exp, iss, nbf, iat cannot be configured); use jwt.issuer "
                "for iss, or remove it"
            )
        if value != value.strip() or not value:
            raise ValueError(f"{value!r}: a claim name has no leading or trailing spaces")
        return value

    @field_validator("values")
    @classmethod
    def _values(cls, values: list[str], info: ValidationInfo) -> list[str]:
        for value in values:
            if not 1 <= len(value) <= JWT_MAX_VALUE_LENGTH:
                raise ValueError(f"{value[:40]!r}...: each value is 1-{JWT_MAX_VALUE_LENGTH} characters")
            if info.data.get("format") == "space-separated-values" and any(c.isspace() for c in value):
                raise ValueError(
                    f"{value!r} contains a space; a space-separated-values claim lists each value separately "
                    "(values: [a, b]), without spaces"
                )
        return values


class JwtConfig(Model):
    """The issuer and keys an ``authentication: jwt`` route verifies bearer tokens against (``jwt-validation``)."""

    issuer: str = Field(
        max_length=JWT_MAX_URL_LENGTH,
        description="The exact `iss` of the tokens (https, compared character for character; a trailing / counts). "
        "Must equal gateway.spec.auth.jwt.provider.issuer when both are set.",
    )
    jwks_uri: str = Field(
        max_length=JWT_MAX_URL_LENGTH,
        description="The IdP's JWKS endpoint (https, publicly reachable; at most 150 KB and 10 keys, RS256).",
    )
    required_claims: list[JwtClaimConfig] = Field(
        min_length=1,
        max_length=JWT_MAX_CLAIMS,
        description="Claims every token must carry (1-10), e.g. aud and scope: without one, any token the issuer "
        "signs for any API passes.",
    )

    _https = field_validator("issuer", "jwks_uri")(_https_url)

    @field_validator("required_claims")
    @classmethod
    def _distinct_names(cls, claims: list[JwtClaimConfig]) -> list[JwtClaimConfig]:
        names = [c.name for c in claims]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"claim {repeated[0]!r} is listed twice; list each claim once with all its values")
        return claims


class RouteConfig(Model):
    """One listener rule: requests matching ``host`` and/or ``path`` go to ``endpoint``.

    A route with neither ``host`` nor ``path`` is the catch-all: it becomes the HTTPS listener's default
    action (at most one). Without a catch-all, unmatched requests get a 404 after authentication.
    """

    endpoint: str = Field(description="The `endpoints[].name` this route forwards to.")
    authentication: Authentication | None = Field(
        default=None,
        description="How this route's callers authenticate: oidc or cognito (browsers, a login page), jwt (programs "
        "with a bearer token, ingress.jwt), none. Default: ingress.authentication.",
    )
    host: str | None = Field(default=None, pattern=Hostname, description="Host header to match (in the zone).")
    path: str | None = Field(default=None, pattern=r"^/[-a-zA-Z0-9_.~/*?]*$", description="Path pattern, e.g. /v1/*.")
    service_name: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
        description="Kubernetes Service to bind. Default: the operator's router Service "
        "<name>-<namespace>-routing-service (intelligent routing on), else the endpoint's name (a guess; "
        "required in prod). See docs/operator.md, front door.",
    )
    service_namespace: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
        description="Namespace of that Service (the binding is created there). Default: "
        "hyperpod-inference-system with intelligent routing on, else the endpoint's namespace.",
    )
    service_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="Service port. Default: worker.modelInvocationPort.containerPort (a guess; required in prod).",
    )
    target_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="The port the bound Service's pods listen on (its targetPort): the ALB's health checks and "
        "traffic go there. Default: worker.modelInvocationPort.containerPort for worker targets; unknown for the "
        "router (no source names it: the ALB may then reach, and the binding opens, every TCP port; required in "
        "prod for router targets).",
    )

    @property
    def is_catch_all(self) -> bool:
        return self.host is None and self.path is None


# --- waf ------------------------------------------------------------------------------------------------
# AWS WAF facts the defaults rely on (AWS WAF developer guide):
# - "Rate-based rule high-level settings": evaluation window 60, 120, 300 or 600 seconds (300 default);
#   the lowest rate limit is 10. Max limit 2,000,000,000 (API_RateBasedStatement, Limit).
# - "Rate-based rule aggregation options": with CUSTOM_KEYS, a request that lacks one of the keys (e.g. no
#   Authorization header) is not counted and not rate-limited — hence the always-on per-IP rule.
# - "Baseline rule groups" (aws-managed-rule-groups-baseline): AWSManagedRulesCommonRuleSet's
#   SizeRestrictions_BODY matches request bodies over 8 KB (8,192 bytes); API_Body: for an ALB the body
#   AWS WAF inspects is fixed at 8 KB. LLM prompts are routinely larger, so that rule is set to count.
RATE_WINDOWS: tuple[int, ...] = (60, 120, 300, 600)
WAF_LOG_PREFIX = "aws-waf-logs-"  # AWS WAF "Sending logs to CloudWatch Logs": the group name must start so
# Where prompts arrive (OpenAI-compatible servers, vLLM and SGLang: /v1/chat/completions, /v1/completions,
# /v1/responses, /v1/embeddings; SageMaker's /invocations; SGLang's native /generate): on these paths the body
# rules of AWS's managed groups count instead of blocking (components/web_acl.py, issue 47 item 3).
DEFAULT_INFERENCE_PATHS: tuple[str, ...] = (
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/responses",
    "/v1/embeddings",
    "/invocations",
    "/generate",
)
# Header names a per-caller budget may key on: HTTP token syntax, lower-case (WAF matches header names
# case-insensitively; lower-case keeps the rendered rule stable).
HEADER_NAME = r"^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$"


class RateLimitConfig(Model):
    """One rate-based rule: ``limit`` requests per ``evaluationWindowSec`` per aggregation instance."""

    limit: int = Field(
        **API_BOUNDS["ingress.waf.rateLimit.limit"].field(),
        description="Requests per evaluation window (WAF minimum 10).",
    )
    evaluation_window_sec: int = Field(
        default=300,
        description="Seconds WAF looks back when counting: 60, 120, 300 (default) or 600.",
        json_schema_extra={"enum": list(RATE_WINDOWS)},
    )

    @field_validator("evaluation_window_sec")
    @classmethod
    def _window(cls, value: int) -> int:
        if value not in RATE_WINDOWS:
            raise ValueError(f"{value} is not a WAFv2 evaluation window; allowed: 60, 120, 300, 600 (seconds)")
        return value


class CallerRateLimitConfig(RateLimitConfig):
    """A per-caller budget: requests are counted per (client IP, value of ``header``)."""

    header: str = Field(
        pattern=HEADER_NAME,
        description="Request header identifying the caller, lower-case (e.g. authorization, x-api-key).",
    )


class WafConfig(Model):
    """The WebACL this stack creates for the ALB (``ingress.waf``).

    Default: created for an internet-facing ALB, not for an internal one, and never together with
    ``ingress.wafWebAclArn`` (an ALB is associated with at most one WebACL).
    """

    enabled: bool | None = Field(
        default=None,
        description="Create and associate a WebACL. Default: true for internet-facing (unless wafWebAclArn is "
        "set), false for internal.",
    )
    rate_limit: RateLimitConfig = Field(
        default_factory=lambda: RateLimitConfig(limit=1000, evaluation_window_sec=300),
        description="Per client IP budget; always on (it also covers requests without the caller header).",
    )
    caller_rate_limit: CallerRateLimitConfig | None = Field(
        default=None,
        description="Optional per-caller budget keyed by client IP and a request header; its limit must not "
        "exceed the per-IP limit over the same time.",
    )
    ip_reputation: bool = Field(
        default=True, description="Add AWSManagedRulesAmazonIpReputationList (known malicious sources)."
    )
    inference_paths: list[Annotated[str, StringConstraints(pattern=r"^/[-a-zA-Z0-9_.~/]{0,255}$")]] = Field(
        default_factory=lambda: list(DEFAULT_INFERENCE_PATHS),
        max_length=10,
        description="URI paths (exact, after path normalization) where prompts arrive. On them the managed rules "
        "that inspect the body (CrossSiteScripting_BODY, GenericLFI_BODY, GenericRFI_BODY, EC2MetaDataSSRF_BODY, "
        "Log4JRCE_BODY) count instead of blocking: a prompt may quote <script>, ../, a metadata URL or ${jndi:. "
        "Elsewhere they block. [] blocks them everywhere. Default: the OpenAI-compatible and SageMaker "
        "inference paths.",
    )
    log_retention_days: int = Field(
        default=90,
        description="CloudWatch Logs retention of the aws-waf-logs-* group (a CloudWatch Logs retention value).",
    )

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        return _log_retention(value)


# CloudWatch Logs accepts only these retention values (API_PutRetentionPolicy, retentionInDays).
LOG_RETENTION_DAYS: tuple[int, ...] = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)


def _log_retention(value: int) -> int:
    if value not in LOG_RETENTION_DAYS:
        raise ValueError(
            f"{value} is not a CloudWatch Logs retention; allowed: {', '.join(map(str, LOG_RETENTION_DAYS))}"
        )
    return value


def waf_enabled(ing: IngressConfig) -> bool:
    """Whether the stack creates its own WebACL for the ALB (see :class:`WafConfig`)."""
    if not ing.enabled:
        return False
    if ing.waf.enabled is not None:
        return ing.waf.enabled
    return ing.scheme == "internet-facing" and ing.waf_web_acl_arn is None


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
        description="ELB security policy of the HTTPS listener (TLS 1.2+ only; prod: one FSBP ELB.17 recommends).",
        json_schema_extra={"enum": list(TLS12_PLUS_POLICIES)},
    )
    idle_timeout: int = Field(
        default=300, ge=1, le=4000, description="Seconds; long enough for streamed LLM responses."
    )
    deletion_protection: bool | None = Field(default=None, description="Default: true in prod, false elsewhere.")
    waf_web_acl_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws[a-z-]*:wafv2:[a-z0-9-]+:[0-9]{12}:regional/webacl/.+$",
        description="An existing regional WebACL to associate instead of the one `waf` creates.",
    )
    waf: WafConfig = Field(default_factory=WafConfig, description="The WebACL this stack creates (see waf.enabled).")
    access_log_retention_days: int = Field(default=90, ge=1, le=3650)
    authentication: Authentication = Field(
        default="oidc",
        description="How routes without their own `authentication`, and the listener's default action, "
        "authenticate: oidc, cognito, jwt or none (refused in prod).",
    )
    oidc: OidcConfig | None = None
    cognito: CognitoConfig | None = None
    jwt: JwtConfig | None = Field(default=None, description="The JWT issuer, JWKS and claims of jwt routes.")
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


# --- authentication per route: the actions each listener rule renders -------------------------------------

# The authenticate step runs first, the terminal action (forward or the 404) second: ALB performs actions by
# ``order``, lowest first (ELB API reference, Action.Order).
AUTH_ORDER, FINAL_ORDER = 1, 2
# authentication -> the listener action type it renders (the settings block each takes: policies.baselines).
AUTH_ACTION_TYPE: dict[str, str] = {
    "oidc": "authenticate-oidc",
    "cognito": "authenticate-cognito",
    "jwt": "jwt-validation",
}


def route_authentication(ing: IngressConfig, route: RouteConfig) -> Authentication:
    """How ``route``'s callers authenticate: its own ``authentication``, else ``ingress.authentication``."""
    return route.authentication or ing.authentication


def catch_all_route(ing: IngressConfig) -> RouteConfig | None:
    """The route that becomes the HTTPS listener's default action (no host, no path), if any."""
    return next((r for r in ing.routes if r.is_catch_all), None)


def default_authentication(ing: IngressConfig) -> Authentication:
    """The listener default action's authentication: the catch-all route's, else ``ingress.authentication``."""
    catch_all = catch_all_route(ing)
    return route_authentication(ing, catch_all) if catch_all is not None else ing.authentication


def authentication_keys(ing: IngressConfig) -> dict[str, list[str]]:
    """authentication -> the keys choosing it for a rendered action (the default action first, then the routes)."""
    uses: dict[str, list[str]] = {}
    catch_all = catch_all_route(ing)
    if catch_all is None:
        uses.setdefault(ing.authentication, []).append("ingress.authentication")
    for i, route in enumerate(ing.routes):
        key = f"ingress.routes[{i}].authentication" if route.authentication else "ingress.authentication"
        if key not in uses.setdefault(route_authentication(ing, route), []):
            uses[route_authentication(ing, route)].append(key)
    return uses


def planned_actions(ing: IngressConfig, authentication: Authentication, final: str = "forward") -> list[dict[str, Any]]:
    """The outline of the actions a listener or rule renders, in the provider's input shape (camelCase).

    Type and order of each action and what :func:`policies.baselines.unauthenticated_forward` reads
    (``onUnauthenticatedRequest``): the config check runs that rule on this outline, the pack on the registered
    listener; ``components/ingress.py`` renders the same types and orders (a test compares them).
    """
    actions: list[dict[str, Any]] = []
    if authentication in AUTH_ACTION_TYPE:
        kind = AUTH_ACTION_TYPE[authentication]
        block = AUTH_ACTIONS[kind]
        section = {"oidc": ing.oidc, "cognito": ing.cognito}.get(authentication)
        settings = {"onUnauthenticatedRequest": section.on_unauthenticated_request} if section is not None else {}
        actions.append({"type": kind, "order": AUTH_ORDER, block: settings})
    actions.append({"type": final, **({"order": FINAL_ORDER} if actions else {})})
    return actions


@dataclass(frozen=True)
class ServiceTarget:
    """The Kubernetes Service a route's target group is bound to, and whether each part is configured.

    ``pod_port`` is the port the Service's pods listen on — what the LB controller registers for ``ip`` targets
    and where the ALB's ``traffic-port`` health checks go — or None when no source and no config names it.
    """

    namespace: str
    name: str
    port: int
    router: bool
    name_configured: bool
    port_configured: bool
    pod_port: int | None = None


# When a TargetGroupBinding's networking rule names no port, the LB controller opens 0-65535 TCP from the ALB's
# security group on the pods' (kubernetes-sigs/aws-load-balancer-controller@225f4456
# pkg/networking/networking_manager.go:436-451; CRD: "if port is unspecified, it defaults to all ports").
ALL_TCP: tuple[int, int] = (0, 65535)


def target_port_range(target: ServiceTarget) -> tuple[int, int]:
    """The TCP ports the ALB must reach on the target's pods: its pod port, else every port (ALL_TCP).

    One rule for both sides: the ALB security group's egress (components/ingress.py) and the binding's
    networking rule (:func:`binding_ports`) open the same range, so health checks and traffic pass both.
    """
    return (target.pod_port, target.pod_port) if target.pod_port is not None else ALL_TCP


def binding_ports(target: ServiceTarget) -> list[dict[str, Any]]:
    """``spec.networking.ingress[].ports`` of the binding (required by the CRD): the pod port, or all TCP ports."""
    if target.pod_port is None:
        return [{"protocol": "TCP"}]
    return [{"protocol": "TCP", "port": target.pod_port}]


def service_target(route: RouteConfig, endpoint: EndpointConfig) -> ServiceTarget:
    """Where the binding for ``route`` points (see ``OPERATOR_NAMESPACE`` above for the sources)."""
    router = endpoint.intelligent_routing
    if router:
        namespace = route.service_namespace or OPERATOR_NAMESPACE
        default_name = f"{endpoint.name}-{endpoint.namespace}-routing-service"
    else:
        namespace = route.service_namespace or endpoint.namespace
        default_name = endpoint.name
    return ServiceTarget(
        namespace=namespace,
        name=route.service_name or default_name,
        port=route.service_port or endpoint.port,
        router=router,
        name_configured=route.service_name is not None,
        port_configured=route.service_port is not None,
        # The worker Service targets the container port (CRD: modelInvocationPort "will be referred to by the Load
        # Balancer Service"); the router's pod port is not published anywhere.
        pod_port=route.target_port if route.target_port is not None else (None if router else endpoint.port),
    )


def _in_zone(name: str, zone: str) -> bool:
    zone = zone.rstrip(".")
    return name == zone or name.endswith("." + zone)


SECTION_NEEDS = {
    "oidc": "issuer, endpoints, clientId",
    "cognito": "userPoolArn, clientId, domain",
    "jwt": "issuer, jwksUri, requiredClaims",
}


def _authentication_sections(cfg: StackView) -> Iterable[ConfigIssue]:
    """Each of ``oidc``/``cognito``/``jwt`` is set exactly when a rendered action uses it."""
    ing = cfg.ingress
    uses = authentication_keys(ing)
    sections = {"oidc": ing.oidc, "cognito": ing.cognito, "jwt": ing.jwt}
    # Sub-sections nothing uses are typos waiting to happen.
    for kind, section in sections.items():
        if section is not None and kind not in uses:
            yield ConfigIssue(
                f"ingress.{kind}",
                f"set but no route (nor the listener's default action) authenticates with {kind}; remove it or set "
                f"authentication: {kind} on ingress or a route",
            )
    if not ing.enabled:
        return
    for kind, section in sections.items():
        if kind in uses and section is None:
            yield ConfigIssue(
                f"ingress.{kind}", f"required: {', '.join(uses[kind])} choose {kind} ({SECTION_NEEDS[kind]})"
            )
    if "oidc" in uses and ing.oidc is not None:
        if ing.oidc.client_secret is None or not ing.oidc.client_secret.get_secret_value():
            yield ConfigIssue(
                "ingress.oidc.clientSecret",
                "required when authentication is oidc; set it with `pulumi config set --secret --path "
                "'hyperpod-inference:ingress.oidc.clientSecret' <secret>`",
            )


def _unauthenticated_routes(cfg: StackView) -> Iterable[ConfigIssue]:
    """The ``alb-requires-authentication`` rule on the planned actions, where it is mandatory (prod; dev and
    staging relax it to advisory, ``policies/config.<env>.json``, and the pack reports it there)."""
    ing = cfg.ingress
    if not (ing.enabled and cfg.is_prod):
        return

    def choice(i: int | None) -> str:
        """The key that chose route ``i``'s authentication (None: the listener default without a catch-all)."""
        own = i is not None and ing.routes[i].authentication is not None
        return f"ingress.routes[{i}].authentication" if own else "ingress.authentication"

    catch_all = next((i for i, r in enumerate(ing.routes) if r.is_catch_all), None)
    planned = [
        (
            choice(catch_all),
            default_authentication(ing),
            "forward" if catch_all is not None else "fixed-response",
            "the listener's default action",
        )
    ]
    planned += [(choice(i), route_authentication(ing, r), "forward", f"route {i}") for i, r in enumerate(ing.routes)]
    reported: set[str] = set()
    for chosen_by, kind, final, what in planned:
        reason = unauthenticated_forward(planned_actions(ing, kind, final))
        if reason is None:
            continue
        key = chosen_by if kind == "none" else f"ingress.{kind}.onUnauthenticatedRequest"
        if key in reported:
            continue
        reported.add(key)
        yield ConfigIssue(
            key,
            f"prod: {what} {reason}; authenticate it (oidc or cognito with onUnauthenticatedRequest deny or "
            f"authenticate, or jwt) [{ALB_REQUIRES_AUTHENTICATION}]",
        )


def _jwt_matches_gateway(cfg: StackView) -> Iterable[ConfigIssue]:
    """One IdP for both front doors: a program's token must pass the ALB and the in-cluster gateway alike, and the
    gateway compares ``iss`` exactly as the ALB does (a trailing ``/`` makes another issuer)."""
    ing, gw = cfg.ingress, cfg.gateway
    if not (ing.enabled and ing.jwt is not None and gw.enabled) or "jwt" not in authentication_keys(ing):
        return
    provider = ((gw.spec_dict().get("auth") or {}).get("jwt") or {}).get("provider") or {}
    issuer = provider.get("issuer")
    if issuer and issuer != ing.jwt.issuer:
        yield ConfigIssue(
            "ingress.jwt.issuer",
            f"{ing.jwt.issuer!r}, but gateway.spec.auth.jwt.provider.issuer is {issuer!r}: a token the IdP issues "
            "carries one `iss`, so one of the two front doors would refuse every call; write the same issuer in both",
        )


def _ingress_checks(cfg: StackView) -> Iterable[ConfigIssue]:
    ing = cfg.ingress
    yield from _authentication_sections(cfg)
    if not ing.enabled:
        return
    yield from _unauthenticated_routes(cfg)
    yield from _jwt_matches_gateway(cfg)

    if cfg.is_prod:
        message = elb17_violation(ing.ssl_policy)
        if message:
            yield ConfigIssue("ingress.sslPolicy", f"prod: {message} [{ALB_TLS_POLICY_RECOMMENDED}]")
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

    yield from _waf_checks(cfg)
    yield from _route_checks(cfg)


def _waf_checks(cfg: StackView) -> Iterable[ConfigIssue]:
    ing = cfg.ingress
    if ing.waf.enabled and ing.waf_web_acl_arn is not None:
        yield ConfigIssue(
            "ingress.waf.enabled",
            "true together with ingress.wafWebAclArn; an ALB takes one WebACL: remove one of them",
        )
    caller = ing.waf.caller_rate_limit
    if caller is not None:
        per_ip = ing.waf.rate_limit
        # Compare budgets per second: the caller budget is a subset of the client IP's traffic.
        if caller.limit / caller.evaluation_window_sec > per_ip.limit / per_ip.evaluation_window_sec:
            yield ConfigIssue(
                "ingress.waf.callerRateLimit.limit",
                f"{caller.limit} per {caller.evaluation_window_sec}s exceeds the per-IP budget "
                f"({per_ip.limit} per {per_ip.evaluation_window_sec}s) and would never apply; lower it",
            )


def _route_checks(cfg: StackView) -> Iterable[ConfigIssue]:
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
    # Prod never guesses the Service a binding targets (see OPERATOR_NAMESPACE above).
    by_name = {e.name: e for e in cfg.endpoints}
    if cfg.is_prod:
        for i, route in enumerate(ing.routes):
            endpoint = by_name.get(route.endpoint)
            if endpoint is None:
                continue
            target = service_target(route, endpoint)
            if not target.router and not target.name_configured:
                yield ConfigIssue(
                    f"ingress.routes[{i}].serviceName",
                    f"required in prod: no source names the Service the operator creates for endpoint "
                    f"{endpoint.name!r} (intelligent routing off); set it from `kubectl get svc -n {endpoint.namespace}`",
                )
            if target.router and route.target_port is None:
                yield ConfigIssue(
                    f"ingress.routes[{i}].targetPort",
                    f"required in prod for router targets: no source names the port the router pods behind "
                    f"{target.name} listen on, and without it the ALB security group must allow every TCP port into "
                    f"the VPC; set it from `kubectl get svc -n {target.namespace} {target.name} "
                    "-o jsonpath='{.spec.ports[*].targetPort}'`",
                )
            if not target.port_configured:
                what = f"the router Service {target.name}" if target.router else "that Service"
                yield ConfigIssue(
                    f"ingress.routes[{i}].servicePort",
                    f"required in prod: no source names the port of {what}; "
                    f"set it from `kubectl get svc -n {target.namespace}`",
                )
    # One endpoint is one target group: its Service binding must not differ between routes.
    bindings: dict[str, tuple[str | None, int | None, str | None, int | None]] = {}
    for i, route in enumerate(ing.routes):
        binding = (route.service_name, route.service_port, route.service_namespace, route.target_port)
        if bindings.setdefault(route.endpoint, binding) != binding:
            yield ConfigIssue(
                f"ingress.routes[{i}]",
                f"endpoint {route.endpoint!r} is routed with a different serviceName/servicePort/serviceNamespace/"
                "targetPort than an earlier route",
            )


# The shortest log retention prod keeps (days) for the front door's WAF and access logs: an incident found a
# quarter later still has its requests (a project floor; CloudWatch Logs and S3 take any retention).
PROD_LOG_RETENTION_FLOOR_DAYS = 90


def _front_door_weakening(cfg: StackView) -> Iterable[ConfigIssue]:
    """Prod refuses turning off what the front door's baseline needs (issue 46.3): ALB deletion protection, the
    IP-reputation managed rule group of the WebACL it creates, and log retention below the floor. Each omitted key
    holds (the defaults are on, 90 days)."""
    ing = cfg.ingress
    if not cfg.is_prod or not ing.enabled:
        return
    if ing.deletion_protection is False:
        yield ConfigIssue(
            "ingress.deletionProtection",
            "prod keeps the front door ALB's deletion protection on (FSBP ELB.6); remove the key or set true",
        )
    if waf_enabled(ing) and not ing.waf.ip_reputation:
        yield ConfigIssue(
            "ingress.waf.ipReputation",
            "prod keeps AWSManagedRulesAmazonIpReputationList in the WebACL (known malicious sources, the baseline's "
            "managed rule group); remove the key or set true",
        )
    floor = PROD_LOG_RETENTION_FLOOR_DAYS
    for key, days in (
        ("ingress.waf.logRetentionDays", ing.waf.log_retention_days if waf_enabled(ing) else None),
        ("ingress.accessLogRetentionDays", ing.access_log_retention_days),
    ):
        if days is not None and days < floor:
            yield ConfigIssue(key, f"{days} days is below prod's log retention floor of {floor} days; set >= {floor}")


def _operator_ingresses(cfg: StackView) -> Iterable[ConfigAdvisory]:
    """A second door the stack does not own: for an endpoint with intelligent routing the operator
    reconciles its own ALB Ingress ``alb-<name>-<namespace>`` in hyperpod-inference-system (see ``OPERATOR_NAMESPACE``
    above). It is not behind the front door's authentication, and the CRD gives no field for its scheme
    (v3.3 ``spec.loadBalancer``: healthCheckPath, idleTimeoutSeconds, routingAlgorithm only), so whether it answers
    from the internet is known only on the cluster."""
    routed = [e for e in cfg.endpoints if e.kind == "InferenceEndpointConfig" and e.intelligent_routing]
    if not routed:
        return
    names = ", ".join(f"{OPERATOR_NAMESPACE}/alb-{e.name}-{e.namespace}" for e in routed)
    yield ConfigAdvisory(
        "endpoints",
        f"the operator creates its own ALB Ingress for each endpoint with intelligent routing ({names}), beside the "
        "front door and without its authentication; the CRD has no field for its scheme, so whether that load "
        "balancer is reachable, and by whom, is not known offline",
        "operator-own-ingress",
        f"python -m tools.verify --stack {cfg.stack} (check second-door: any load balancer or Ingress that forwards "
        "to the endpoint pods without authentication)",
    )


def _guessed_services(cfg: StackView) -> Iterable[ConfigAdvisory]:
    """Outside prod a route may leave the bound Service to the defaults, which no source confirms (see
    ``OPERATOR_NAMESPACE`` above): the binding then targets a guess, known only once the endpoint is deployed."""
    if cfg.is_prod or not cfg.ingress.enabled:
        return
    by_name = {e.name: e for e in cfg.endpoints}
    for i, route in enumerate(cfg.ingress.routes):
        endpoint = by_name.get(route.endpoint)
        if endpoint is None:
            continue
        target = service_target(route, endpoint)
        if _observed_service(cfg, route.endpoint, target) is not None:
            continue  # verify saw it: _observed_services / _observed_service_ports say what it saw
        checked_by = f"the cluster, after the endpoint's first deploy: `kubectl get svc -n {target.namespace}`"
        if target.router and not target.port_configured:
            yield ConfigAdvisory(
                f"ingress.routes[{i}].servicePort",
                f"the port of the router Service {target.namespace}/{target.name} is not documented; the binding "
                f"guesses {target.port} (the worker's containerPort)",
                "ingress-service-known",
                checked_by,
            )
        if not target.router and not (target.name_configured and target.port_configured):
            yield ConfigAdvisory(
                f"ingress.routes[{i}].serviceName",
                f"no source names the Service the operator creates for endpoint {endpoint.name!r}; the binding guesses "
                f"{target.namespace}/{target.name}:{target.port}",
                "ingress-service-known",
                checked_by,
            )


def _observed_service(cfg: StackView, endpoint: str, target: ServiceTarget) -> observed.ObservedService | None:
    """What ``tools.verify`` saw of the Service ``target`` (None: never observed, or another Service then)."""
    obs = cfg.context.observations
    seen = obs.services.get(endpoint) if obs else None
    return seen if seen and (seen.namespace, seen.name) == (target.namespace, target.name) else None


def _observed_routes(cfg: StackView) -> Iterable[tuple[int, ServiceTarget, observed.ObservedService, str]]:
    obs = cfg.context.observations  # None also when the file is malformed: _observed_services reports it
    if obs is None or not cfg.ingress.enabled:
        return
    by_name = {e.name: e for e in cfg.endpoints}
    for i, route in enumerate(cfg.ingress.routes):
        endpoint = by_name.get(route.endpoint)
        if endpoint is not None:
            target = service_target(route, endpoint)
            seen = _observed_service(cfg, route.endpoint, target)
            if seen is not None:
                yield i, target, seen, obs.note


def _observed_services(cfg: StackView) -> Iterable[ConfigIssue]:
    """The Service (and port) a route binds, judged by what ``tools.verify`` saw in the cluster
    (``verified/<stack>.json``, components/config/observed.py) instead of the guess (UNCONFIRMED
    [router-service-port]): a Service or port the cluster does not have is refused, naming what it has."""
    if cfg.context.observations_problem is not None:
        yield ConfigIssue("ingress.routes", f"cannot use what verify observed: {cfg.context.observations_problem}")
        return
    for i, target, seen, note in _observed_routes(cfg):
        if not seen.exists:
            yield ConfigIssue(
                f"ingress.routes[{i}].serviceName",
                f"the Service {target.namespace}/{target.name} the binding names does not exist ({note}); set "
                "serviceName/serviceNamespace to the Service the operator created (`kubectl get svc -A`)",
            )
            continue
        ports = [p.port for p in seen.ports]
        if target.port not in ports:
            has = ", ".join(str(p) for p in ports) or "no port"
            fix = f"set ingress.routes[{i}].servicePort: {ports[0]}" if len(ports) == 1 else "set servicePort to one"
            yield ConfigIssue(
                f"ingress.routes[{i}].servicePort",
                f"the Service {target.namespace}/{target.name} listens on {has}, not {target.port} ({note}): {fix}, "
                "the Service listens there",
            )


def _observed_service_ports(cfg: StackView) -> Iterable[ConfigAdvisory]:
    """A guessed port the cluster confirmed is no longer a guess: say where it was seen, and how to pin it."""
    for i, target, seen, note in _observed_routes(cfg):
        if seen.exists and not target.port_configured and target.port in [p.port for p in seen.ports]:
            yield ConfigAdvisory(
                f"ingress.routes[{i}].servicePort",
                f"the Service {target.namespace}/{target.name} listens on {target.port}, the port the binding uses "
                f"({note}); pin it with servicePort: {target.port}",
                "ingress-service-known",
                f"python -m tools.verify --stack {cfg.stack}",
            )


def _jwks_limits(cfg: StackView) -> Iterable[ConfigAdvisory]:
    """What the stack file cannot show about the IdP: the ALB takes a JWKS of at most 150 KB with at most 10 keys
    from a public endpoint and verifies RS256 signatures only (ELB user guide, "JWT validation limits")."""
    ing = cfg.ingress
    if not ing.enabled or ing.jwt is None or "jwt" not in authentication_keys(ing):
        return
    yield ConfigAdvisory(
        "ingress.jwt.jwksUri",
        f"the ALB forwards no request when the JWKS at {ing.jwt.jwks_uri} is not publicly "
        f"reachable, exceeds {JWKS_MAX_KB} KB or {JWKS_MAX_KEYS} keys, or the IdP signs with another algorithm "
        f"than {JWT_ALGORITHM}",
        "alb-jwks-limits",
        f"`python -m tools.preflight.regional --stack {cfg.stack} --fetch-jwks` (fetches the JWKS: size, key count, "
        "key types), and a token of the IdP (its header's alg)",
    )


def _caller_budget_for_jwt_callers(cfg: StackView) -> Iterable[ConfigAdvisory]:
    """A JWT caller sends its token in the Authorization header; a per-caller budget keyed on another header counts
    such callers only if they send that header too (AWS WAF "Rate-based rule aggregation options": a request
    without one of the custom keys is not counted by the rule), which the stack file cannot show."""
    ing = cfg.ingress
    caller = ing.waf.caller_rate_limit
    if not waf_enabled(ing) or caller is None or caller.header == "authorization":
        return
    if "jwt" not in authentication_keys(ing):
        return
    yield ConfigAdvisory(
        "ingress.waf.callerRateLimit.header",
        f"{caller.header}: callers of the jwt routes send their token in `authorization`; those that do not also "
        f"send {caller.header} get no per-caller budget, only the per-IP one",
        "waf-caller-key-jwt",
        "the API's clients (which headers they send); key on `authorization` to budget each token",
    )


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (
    _ingress_checks,
    _observed_services,
    _front_door_weakening,
)
ADVISORIES: tuple[Advise[StackView], ...] = (
    _operator_ingresses,
    _guessed_services,
    _observed_service_ports,
    _jwks_limits,
    _caller_budget_for_jwt_callers,
)
