"""Per-route authentication at the ALB, stated with literal expectations (issue 38, items 3 and 4).

The renderer (components/ingress.py) and the config check (components/config/ingress.py) share
``default_authentication`` and ``planned_actions``, so comparing one with the other proves only that they agree.
Here each case is a small made-up change of a reference stack and the expected actions are written out by hand:
the listener's default action follows the catch-all route's own ``authentication`` in both directions (``none`` on
the catch-all under an OIDC ingress; ``oidc`` on the catch-all under an unauthenticated ingress), and Cognito with
``onUnauthenticatedRequest: allow`` is refused in prod exactly like OIDC's, by the config check and by the pack.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.config.ingress import planned_actions
from components.config.loader import parse_stack_mapping
from policies.engine import evaluate
from policies.pack import POLICIES
from tests.conftest import registered, stack_mapping
from tests.test_ingress import plain
from tools.plan.harness import StackRun, run_stack

ING = "hyperpod-inference:ingress"
LISTENER = "aws:lb/listener:Listener"
RULE = "aws:lb/listenerRule:ListenerRule"
TG = "aws:lb/targetGroup:TargetGroup"
ENV = "hyperpod-inference:environment"

COGNITO = {
    "userPoolArn": "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_Example1",
    "userPoolClientId": "hpi-prod-browser-client",
    "userPoolDomain": "hpi-prod-login",
}
# staging's oidc section as the provider receives it (the client secret is the offline placeholder, a secret)
STAGING_OIDC = {
    "issuer": "https://login.example.com/oauth2/default",
    "authorizationEndpoint": "https://login.example.com/oauth2/default/v1/authorize",
    "tokenEndpoint": "https://login.example.com/oauth2/default/v1/token",
    "userInfoEndpoint": "https://login.example.com/oauth2/default/v1/userinfo",
    "clientId": "hpi-staging-front-door",
    "scope": "openid",
    "sessionTimeout": 3600,
    "onUnauthenticatedRequest": "authenticate",
}


def _run(stack: str, mapping: dict[str, Any]) -> StackRun:
    run = run_stack(stack, mapping)
    assert run.config_error is None, [i.render() for i in run.config_error.issues]
    return registered(run)


def _default_actions(run: StackRun) -> list[dict[str, Any]]:
    return plain(run.named(LISTENER, "front-door-https").inputs)["defaultActions"]


def _rule_actions(run: StackRun, index: int) -> list[dict[str, Any]]:
    return plain(run.named(RULE, f"front-door-route-{index}").inputs)["actions"]


def _tg(run: StackRun, endpoint: str) -> str:
    return run.named(TG, f"front-door-tg-{endpoint}").outputs["arn"]


def _without_secret(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(actions)
    for action in out:
        if "authenticateOidc" in action:
            assert action["authenticateOidc"].pop("clientSecret"), "the OIDC action must carry the client secret"
    return out


# --- item 3: the catch-all route's own authentication decides the listener's default action -------------------


def test_catch_all_none_under_an_oidc_ingress_forwards_without_login() -> None:
    """staging, ingress.authentication oidc; the catch-all (a health route) says none: the listener's default
    action is the bare forward, while the host route without its own authentication still logs in with OIDC."""
    mapping = stack_mapping("staging")
    mapping[ING]["routes"][0]["authentication"] = "none"
    del mapping[ING]["routes"][1]["authentication"]  # the host route takes ingress.authentication (oidc)
    del mapping[ING]["jwt"]  # no route validates a JWT any more
    run = _run("staging", mapping)
    assert _default_actions(run) == [{"type": "forward", "targetGroupArn": _tg(run, "llama-8b-prefix")}]
    assert _without_secret(_rule_actions(run, 1)) == [
        {"type": "authenticate-oidc", "order": 1, "authenticateOidc": STAGING_OIDC},
        {"type": "forward", "order": 2, "targetGroupArn": _tg(run, "llama-8b-kvaware")},
    ]


def test_catch_all_oidc_under_an_unauthenticated_ingress_logs_in() -> None:
    """The other direction: ingress.authentication none, the catch-all says oidc: the default action logs in
    first, the host route (no authentication of its own) forwards bare."""
    mapping = stack_mapping("staging")
    mapping[ING]["authentication"] = "none"
    mapping[ING]["routes"][0]["authentication"] = "oidc"
    del mapping[ING]["routes"][1]["authentication"]
    del mapping[ING]["jwt"]
    run = _run("staging", mapping)
    assert _without_secret(_default_actions(run)) == [
        {"type": "authenticate-oidc", "order": 1, "authenticateOidc": STAGING_OIDC},
        {"type": "forward", "order": 2, "targetGroupArn": _tg(run, "llama-8b-prefix")},
    ]
    assert _rule_actions(run, 1) == [{"type": "forward", "targetGroupArn": _tg(run, "llama-8b-kvaware")}]


def test_prod_refuses_a_catch_all_without_authentication_under_a_jwt_ingress() -> None:
    """prod: ingress.authentication jwt, but the catch-all says none: refused at the catch-all's own key."""
    mapping = stack_mapping("prod")
    mapping[ING]["routes"][0]["authentication"] = "none"
    run = run_stack("prod", mapping)
    assert run.config_error is not None
    assert {i.path: i.message for i in run.config_error.issues} == {
        "ingress.routes[0].authentication": "prod: the listener's default action forwards without an "
        "authenticate-oidc, authenticate-cognito or jwt-validation action before it; authenticate it (oidc or "
        "cognito with onUnauthenticatedRequest deny or authenticate, or jwt) [alb-requires-authentication]"
    }


def test_prod_accepts_an_unauthenticated_ingress_default_when_every_route_authenticates() -> None:
    """prod: ingress.authentication none, but both routes (the catch-all included) say jwt: nothing forwards
    without a token, so the stack is accepted and the listener's default action validates the JWT."""
    mapping = stack_mapping("prod")
    mapping[ING]["authentication"] = "none"
    for route in mapping[ING]["routes"]:
        route["authentication"] = "jwt"
    run = _run("prod", mapping)
    actions = _default_actions(run)
    assert [(a["type"], a.get("order")) for a in actions] == [("jwt-validation", 1), ("forward", 2)]
    assert actions[0]["jwtValidation"]["issuer"] == "https://login.example.com/oauth2/default"
    assert actions[1]["targetGroupArn"] == _tg(run, "llama-70b-kvaware")
    assert [r.policy for r in evaluate(POLICIES, run.registrations, "prod") if r.level == "mandatory"] == []


# --- item 4: Cognito's allow is refused in prod like OIDC's ------------------------------------------------


def _prod_cognito(on_unauthenticated: str | None, route_index: int = 1) -> dict[str, Any]:
    mapping = stack_mapping("prod")
    mapping[ING]["routes"][route_index]["authentication"] = "cognito"
    mapping[ING]["cognito"] = dict(COGNITO)
    if on_unauthenticated is not None:
        mapping[ING]["cognito"]["onUnauthenticatedRequest"] = on_unauthenticated
    return mapping


@pytest.mark.parametrize(("route_index", "what"), [(1, "route 1"), (0, "the listener's default action")])
def test_cognito_allow_is_refused_in_prod(route_index: int, what: str) -> None:
    run = run_stack("prod", _prod_cognito("allow", route_index))
    assert run.config_error is not None
    assert {i.path: i.message for i in run.config_error.issues} == {
        "ingress.cognito.onUnauthenticatedRequest": f"prod: {what} forwards after authenticate-cognito with "
        "onUnauthenticatedRequest: allow, which lets requests without a login through; authenticate it (oidc or "
        "cognito with onUnauthenticatedRequest deny or authenticate, or jwt) [alb-requires-authentication]"
    }


@pytest.mark.parametrize(("setting", "rendered"), [("deny", "deny"), ("authenticate", "authenticate"), (None, "deny")])
def test_cognito_that_denies_or_logs_in_is_accepted_in_prod_and_rendered_whole(
    setting: str | None, rendered: str
) -> None:
    run = _run("prod", _prod_cognito(setting))
    assert _rule_actions(run, 1) == [
        {
            "type": "authenticate-cognito",
            "order": 1,
            "authenticateCognito": {
                "userPoolArn": "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_Example1",
                "userPoolClientId": "hpi-prod-browser-client",
                "userPoolDomain": "hpi-prod-login",
                "scope": "openid",
                "sessionTimeout": 3600,
                "onUnauthenticatedRequest": rendered,
            },
        },
        {"type": "forward", "order": 2, "targetGroupArn": _tg(run, "llama-70b-dpd")},
    ]
    assert [r for r in evaluate(POLICIES, run.registrations, "prod") if r.policy == "alb-requires-authentication"] == []


def test_the_pack_refuses_a_rendered_cognito_allow_in_prod_and_advises_elsewhere() -> None:
    """The pack judges what was registered: staging may configure Cognito's allow (advisory there); the same graph
    under prod's enforcement is a mandatory violation on that rule, like OIDC's allow."""
    mapping = stack_mapping("staging")
    mapping[ING]["routes"][1]["authentication"] = "cognito"
    mapping[ING]["cognito"] = {**COGNITO, "onUnauthenticatedRequest": "allow"}
    del mapping[ING]["jwt"]  # route 1 was the only jwt route
    run = _run("staging", mapping)
    assert _rule_actions(run, 1)[0]["authenticateCognito"]["onUnauthenticatedRequest"] == "allow"
    message = (
        "listener rule forwards after authenticate-cognito with onUnauthenticatedRequest: allow, which lets "
        "requests without a login through"
    )
    for environment, level in (("prod", "mandatory"), ("staging", "advisory")):
        found = [
            (r.level, r.resource_name, r.message)
            for r in evaluate(POLICIES, run.registrations, environment)
            if r.policy == "alb-requires-authentication"
        ]
        assert found == [(level, "front-door-route-1", message)], environment


# --- item 4: planned and rendered actions agree on the whole action ----------------------------------------

_PLANNED_SETTINGS = {"authenticateOidc", "authenticateCognito", "jwtValidation"}


def _assert_rendered_is_planned(rendered: list[dict[str, Any]], planned: list[dict[str, Any]]) -> None:
    """Every key of each planned action has the planned value in the rendered one (the settings block: each key
    the outline names); the rendered action has no key beyond those and its target."""
    assert len(rendered) == len(planned), (rendered, planned)
    for got, want in zip(rendered, planned, strict=True):
        extra = set(got) - set(want) - {"targetGroupArn", "fixedResponse"}
        assert extra == set(), (got, want)
        for key, value in want.items():
            if key in _PLANNED_SETTINGS:
                assert {k: got[key].get(k) for k in value} == value, (key, got[key], value)
            else:
                assert got[key] == value, (key, got, want)


CASES = {
    "staging": stack_mapping("staging"),
    "prod": stack_mapping("prod"),
    "prod-cognito-route": _prod_cognito("authenticate"),
    "prod-cognito-catch-all": _prod_cognito("deny", 0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_actions_are_the_planned_ones_whole(case: str) -> None:
    stack = case.split("-", maxsplit=1)[0]
    mapping = CASES[case]
    run = _run(stack, mapping)
    ing = parse_stack_mapping(stack, mapping).ingress
    catch_all = next((r for r in ing.routes if r.is_catch_all), None)
    default_auth = (catch_all.authentication if catch_all is not None else None) or ing.authentication
    _assert_rendered_is_planned(
        _default_actions(run),
        planned_actions(ing, default_auth, "forward" if catch_all is not None else "fixed-response"),
    )
    for i, route in enumerate(ing.routes):
        if not route.is_catch_all:
            _assert_rendered_is_planned(
                _rule_actions(run, i), planned_actions(ing, route.authentication or ing.authentication)
            )


def test_the_whole_action_comparison_fails_on_a_different_setting() -> None:
    planned = [
        {"type": "authenticate-cognito", "order": 1, "authenticateCognito": {"onUnauthenticatedRequest": "deny"}}
    ]
    rendered = [
        {"type": "authenticate-cognito", "order": 1, "authenticateCognito": {"onUnauthenticatedRequest": "allow"}}
    ]
    with pytest.raises(AssertionError):
        _assert_rendered_is_planned(rendered, planned)
    with pytest.raises(AssertionError):
        _assert_rendered_is_planned([{**planned[0], "order": 2}], planned)
    _assert_rendered_is_planned(copy.deepcopy(planned), planned)
