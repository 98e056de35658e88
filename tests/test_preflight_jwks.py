"""Preflight's optional JWKS fetch (``--fetch-jwks``): the ALB's documented JWKS limits judged on a response body,
SKIP (never PASS) without the flag, a WARN when the runner cannot reach the IdP, and the wiring into preflight."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console

import tools.preflight.regional as preflight_mod
from components.config.loader import parse_stack_mapping
from tests.conftest import stack_mapping
from tools.preflight.jwks import check_jwks, judge_jwks

URL = "https://login.example.com/oauth2/default/v1/keys"


def rsa(kid: str, alg: str | None = "RS256") -> dict[str, Any]:
    key = {"kty": "RSA", "kid": kid, "use": "sig", "n": "0vx7agoebGcQSuuPiLJXZpt", "e": "AQAB"}
    return {**key, "alg": alg} if alg else key


def body(keys: list[dict[str, Any]], pad: int = 0) -> bytes:
    return json.dumps({"keys": keys, **({"x-pad": "a" * pad} if pad else {})}).encode()


def statuses(rows: list[Any]) -> list[tuple[str, str]]:
    return [(r.status, r.detail) for r in rows]


def test_a_small_rs256_key_set_passes() -> None:
    raw = body([rsa("k1"), rsa("k2", alg=None)])  # alg is optional in a JWK (RFC 7517 section 4.4)
    assert statuses(judge_jwks(URL, raw)) == [
        ("PASS", f"{URL}: {len(raw)} bytes, 2 key(s), 2 for RS256; reached from this runner (the ALB needs it public)")
    ]


def test_eleven_keys_fail() -> None:
    rows = judge_jwks(URL, body([rsa(f"k{i}") for i in range(11)]))
    assert [r.status for r in rows] == ["FAIL"]
    assert rows[0].detail == f"{URL}: 11 keys; the ALB takes at most 10 and then forwards no request"


def test_ten_keys_pass() -> None:
    assert [r.status for r in judge_jwks(URL, body([rsa(f"k{i}") for i in range(10)]))] == ["PASS"]


@pytest.mark.parametrize(
    ("size", "expected"),
    [(150_000, ["PASS"]), (150_001, ["WARN", "PASS"]), (153_600, ["WARN", "PASS"]), (153_601, ["FAIL"])],
    ids=["150000", "150001", "153600", "153601"],
)
def test_the_150_kb_limit_either_way(size: int, expected: list[str]) -> None:
    """150 KB is 150,000 or 153,600 bytes: over both fails, between them is a warning, never a silent pass."""
    base = body([rsa("k1")])
    raw = body([rsa("k1")], pad=size - len(base) - len(', "x-pad": ""'))
    assert len(raw) == size
    assert [r.status for r in judge_jwks(URL, raw)] == expected


def test_no_rs256_key_fails_and_mixed_algorithms_warn() -> None:
    ec = {"kty": "EC", "kid": "e1", "crv": "P-256", "alg": "ES256", "x": "f83O", "y": "x_FE"}
    rows = judge_jwks(URL, body([ec, rsa("p1", alg="PS256")]))
    assert statuses(rows) == [
        (
            "FAIL",
            f"{URL}: no RSA key for RS256 (EC/ES256, RSA/PS256); the ALB verifies RS256 signatures only",
        )
    ]
    rows = judge_jwks(URL, body([rsa("k1"), ec]))
    assert [r.status for r in rows] == ["WARN", "PASS"]
    assert rows[0].detail == f"{URL}: keys for other algorithms too (EC/ES256): tokens they sign are refused by the ALB"


@pytest.mark.parametrize(
    ("raw", "detail"),
    [(b"<html>", "not JSON"), (b'{"jwks": []}', "no `keys` list"), (b"[]", "no `keys` list")],
    ids=["html", "no-keys", "a-list"],
)
def test_not_a_key_set_fails(raw: bytes, detail: str) -> None:
    (row,) = judge_jwks(URL, raw)
    assert row.status == "FAIL" and detail in row.detail


def prod_config() -> Any:
    return parse_stack_mapping("prod", stack_mapping("prod"))


def test_without_the_flag_the_jwks_stays_unknown() -> None:
    (row,) = check_jwks(prod_config(), None)
    assert row.status == "SKIP"
    assert row.detail == f"not fetched: {URL} (size <= 150 KB, <= 10 keys, RS256) is unknown"
    assert row.action == "rerun with --fetch-jwks where the runner may reach the IdP"


def test_fetch_is_given_the_configured_uri() -> None:
    seen: list[str] = []

    def fetch(url: str) -> bytes:
        seen.append(url)
        return body([rsa("k1")])

    assert [r.status for r in check_jwks(prod_config(), fetch)] == ["PASS"]
    assert seen == [URL]


def test_an_unreachable_idp_is_a_warning_not_a_pass() -> None:
    def fetch(url: str) -> bytes:
        raise OSError("timed out")

    (row,) = check_jwks(prod_config(), fetch)
    assert (row.status, row.detail) == ("WARN", f"could not fetch {URL} from this runner: timed out")


def test_stacks_without_jwt_routes_have_no_row() -> None:
    mapping = stack_mapping("staging")
    mapping["hyperpod-inference:ingress"]["routes"][1]["authentication"] = "oidc"
    del mapping["hyperpod-inference:ingress"]["jwt"]
    assert check_jwks(parse_stack_mapping("staging", mapping), lambda url: b"") == []
    assert check_jwks(parse_stack_mapping("dev", stack_mapping("dev")), None) == []


def test_preflight_appends_the_jwks_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The AWS checks' rows, then the JWKS row; the fetch runs only when preflight is given one."""
    monkeypatch.setattr(preflight_mod, "_run_checks", lambda cfg, clients, console: [])
    out = io.StringIO()
    console = Console(file=out, width=300, color_system=None)
    code = preflight_mod.preflight("prod", clients=object(), console=console, fetch_jwks=lambda url: b"[]")  # type: ignore[arg-type]
    assert code == 1 and f"{URL}: no `keys` list" in out.getvalue()
    out.truncate(0)
    assert preflight_mod.preflight("prod", clients=object(), console=console) == 0  # type: ignore[arg-type]
    assert "not fetched" in out.getvalue()


def test_the_flag_chooses_the_real_fetch(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(preflight_mod, "preflight", lambda stack, **kwargs: calls.append(kwargs) or 0)
    assert preflight_mod.main(["--stack", "prod", "--fetch-jwks"]) == 0
    assert preflight_mod.main(["--stack", "prod"]) == 0
    assert [c["fetch_jwks"] for c in calls] == [preflight_mod.fetch_url, None]


def test_fetch_url_refuses_anything_but_https() -> None:
    from tools.preflight.jwks import fetch_url

    with pytest.raises(ValueError, match="not an https URL"):
        fetch_url("http://login.example.com/keys")
