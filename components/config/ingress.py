"""``hyperpod-inference:ingress`` — the ALB front door with OIDC authentication."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, HttpUrl, SecretStr

from .base import Model


class OidcConfig(Model):
    issuer: HttpUrl
    authorization_endpoint: HttpUrl
    token_endpoint: HttpUrl
    user_info_endpoint: HttpUrl
    client_id: str = Field(min_length=1)
    client_secret: SecretStr | None = Field(
        default=None, description="Set with `pulumi config set --secret --path ingress.oidc.clientSecret ...`."
    )
    scope: str = "openid"
    session_timeout: int = Field(default=3600, ge=1, le=604800)
    on_unauthenticated_request: Literal["deny", "authenticate", "allow"] = "deny"


class RouteConfig(Model):
    endpoint: str = Field(description="The `endpoints[].name` this route forwards to.")
    host: str | None = None
    path: str | None = Field(default=None, pattern=r"^/")


class IngressConfig(Model):
    enabled: bool = False
    scheme: Literal["internet-facing", "internal"] = "internal"
    domain_name: str | None = None
    hosted_zone_id: str | None = Field(default=None, pattern=r"^Z[A-Z0-9]+$")
    certificate_arn: str | None = None
    authentication: Literal["oidc", "cognito", "none"] = "oidc"
    oidc: OidcConfig | None = None
    routes: list[RouteConfig] = Field(default_factory=list)
