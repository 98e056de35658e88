"""Preflight, optional: fetch the JWKS of ``ingress.jwt`` and judge it by the ALB's documented limits.

    python -m tools.preflight.regional --stack prod --fetch-jwks

The ALB's ``jwt-validation`` action takes the IdP's public keys from ``ingress.jwt.jwksUri``; "the JWKS (JSON Web
Key Set) endpoint must meet the following requirements: maximum response size 150 KB, maximum number of keys 10",
and "only the RS256 algorithm is supported" (ELB user guide, "Verify JWTs using an Application Load Balancer",
"JWT validation limits"). None of it is visible in the stack file, so the config check lists it as an advisory
(``alb-jwks-limits``) and this module is what checks it: one HTTPS GET, made only when the runner is allowed to
(``--fetch-jwks``), because it leaves the account's network. Without the flag it reports SKIP, never PASS.

What the GET cannot show stays a WARN: the guide gives the size in KB without saying 1,000 or 1,024 bytes, and
a runner that cannot reach the endpoint says nothing about whether the ALB can (it needs a public endpoint).
"""

from __future__ import annotations

import http.client
import json
import urllib.request
from collections.abc import Callable
from typing import Any

from components.config import StackConfig
from components.config.ingress import JWKS_MAX_KB, JWKS_MAX_KEYS, JWT_ALGORITHM, authentication_keys
from tools.preflight.checks import CheckResult

TITLE = "JWKS of ingress.jwt"
FETCH_TIMEOUT_SECONDS = 10
# The guide writes "150 KB": above 150 * 1024 bytes it is over either reading, between the two it depends.
MAX_BYTES_LOW, MAX_BYTES_HIGH = JWKS_MAX_KB * 1000, JWKS_MAX_KB * 1024

Fetch = Callable[[str], bytes]


def fetch_url(url: str) -> bytes:
    """GET ``url`` (https only: the config contract refuses other schemes), at most one byte over the limit."""
    if not url.startswith("https://"):
        raise ValueError(f"not an https URL: {url}")
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_SECONDS) as response:
        return bytes(response.read(MAX_BYTES_HIGH + 1))


def judge_jwks(url: str, body: bytes) -> list[CheckResult]:
    """The ALB's limits applied to one JWKS response body (size, key count, key types and algorithms)."""
    size = len(body)
    rows: list[CheckResult] = []
    if size > MAX_BYTES_HIGH:
        rows.append(
            CheckResult(
                TITLE,
                "FAIL",
                f"{url}: the response is over {MAX_BYTES_HIGH} bytes; the ALB takes at most {JWKS_MAX_KB} KB and "
                "then forwards no request",
                "use an IdP (or an authorization server) with a smaller key set, or validate tokens in the gateway",
            )
        )
        return rows
    if size > MAX_BYTES_LOW:
        rows.append(
            CheckResult(
                TITLE,
                "WARN",
                f"{url}: {size} bytes, over {MAX_BYTES_LOW} and under {MAX_BYTES_HIGH}: whether that is within "
                f"{JWKS_MAX_KB} KB the guide does not say",
                "trim the key set, or confirm with a request through the ALB after `up`",
            )
        )
    try:
        document: Any = json.loads(body)
    except ValueError as err:
        return [*rows, CheckResult(TITLE, "FAIL", f"{url}: not JSON ({err})", "point jwksUri at the IdP's JWKS")]
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        return [
            *rows,
            CheckResult(TITLE, "FAIL", f"{url}: no `keys` list (not a JWK Set, RFC 7517)", "point jwksUri at the JWKS"),
        ]
    if len(keys) > JWKS_MAX_KEYS:
        rows.append(
            CheckResult(
                TITLE,
                "FAIL",
                f"{url}: {len(keys)} keys; the ALB takes at most {JWKS_MAX_KEYS} and then forwards no request",
                "use an authorization server with fewer keys, or validate tokens in the gateway",
            )
        )
    usable = [
        k
        for k in keys
        if isinstance(k, dict) and k.get("kty") == "RSA" and k.get("alg", JWT_ALGORITHM) == JWT_ALGORITHM
    ]
    others = sorted({f"{k.get('kty')}/{k.get('alg', '-')}" for k in keys if isinstance(k, dict) and k not in usable})
    if not usable:
        rows.append(
            CheckResult(
                TITLE,
                "FAIL",
                f"{url}: no RSA key for {JWT_ALGORITHM} ({', '.join(others) or 'no keys'}); the ALB verifies "
                f"{JWT_ALGORITHM} signatures only",
                f"have the IdP sign access tokens with {JWT_ALGORITHM}",
            )
        )
    elif others:
        rows.append(
            CheckResult(
                TITLE,
                "WARN",
                f"{url}: keys for other algorithms too ({', '.join(others)}): tokens they sign are refused by the ALB",
                f"make sure the tokens callers send are signed with {JWT_ALGORITHM} (their header's alg)",
            )
        )
    if not any(r.status == "FAIL" for r in rows):
        rows.append(
            CheckResult(
                TITLE,
                "PASS",
                f"{url}: {size} bytes, {len(keys)} key(s), {len(usable)} for {JWT_ALGORITHM}; reached from this runner "
                "(the ALB needs it public)",
            )
        )
    return rows


def check_jwks(cfg: StackConfig, fetch: Fetch | None) -> list[CheckResult]:
    """The rows for the stack's JWKS: none without jwt routes, SKIP without ``--fetch-jwks`` (``fetch`` None)."""
    ing = cfg.ingress
    if not ing.enabled or ing.jwt is None or "jwt" not in authentication_keys(ing):
        return []
    url = ing.jwt.jwks_uri
    if fetch is None:
        return [
            CheckResult(
                TITLE,
                "SKIP",
                f"not fetched: {url} (size <= {JWKS_MAX_KB} KB, <= {JWKS_MAX_KEYS} keys, {JWT_ALGORITHM}) is unknown",
                "rerun with --fetch-jwks where the runner may reach the IdP",
            )
        ]
    try:
        body = fetch(url)
    except (OSError, ValueError, http.client.HTTPException) as err:  # URLError is an OSError
        return [
            CheckResult(
                TITLE,
                "WARN",
                f"could not fetch {url} from this runner: {err}",
                "fetch it from a network that reaches the IdP; the ALB must reach it over the internet",
            )
        ]
    return judge_jwks(url, body)


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.preflight.jwks", "python -m tools.preflight.regional --stack <name> --fetch-jwks")
