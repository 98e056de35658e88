"""A secret in an endpoint's environment variables (issue 46 item 3): refused in prod with the fix (a Kubernetes
Secret reference), an advisory in staging and dev; by name and by value shape, with the must-not-match cases."""

from __future__ import annotations

from typing import Any

import pytest

from components.config.env_secrets import env_secret_reason, secret_reason, shannon_bits
from components.config.loader import parse_stack_mapping
from components.config.validation import run_advisories
from tests.conftest import stack_mapping
from tools.plan.harness import run_stack

KEY = "hyperpod-inference:endpoints[0].spec.worker.environmentVariables[0].value"
HF = "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"


def _with_env(stack: str, env: list[dict[str, Any]]) -> dict[str, Any]:
    mapping = stack_mapping(stack)
    mapping["hyperpod-inference:endpoints"][0]["spec"]["worker"]["environmentVariables"] = env
    return mapping


def _issues(mapping: dict[str, Any], stack: str = "prod") -> list[str]:
    run = run_stack(stack, mapping)
    return [i.render() for i in run.config_error.issues] if run.config_error else []


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("HF_TOKEN", "anything-at-all", "its name says it holds a secret (TOKEN)"),
        ("OPENAI_API_KEY", "x", "its name says it holds a secret (KEY)"),
        ("DB_PASSWORD", "x", "its name says it holds a secret (PASSWORD)"),
        ("MODEL_ID", HF, "its value is a Hugging Face access token (hf_...)"),
        ("AWS_ID", "AKIAABCDEFGHIJKLMNOP", "its value is an AWS access key ID (AKIA.../ASIA...)"),
    ],
)
def test_prod_refuses_a_plaintext_secret_naming_the_key_and_the_fix(name: str, value: str, why: str) -> None:
    issues = _issues(_with_env("prod", [{"name": name, "value": value}]))
    (issue,) = [i for i in issues if "env-secret-plaintext" in i]
    assert issue.startswith(f"{KEY}: {name} is written in plain text and {why}")
    assert "valueFrom: {secretKeyRef: {name: <secret>, key: <key>}}" in issue


def test_a_secret_reference_and_ordinary_variables_pass() -> None:
    env = [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        {"name": "MAX_NUM_BATCHED_TOKENS", "value": "8192"},
        {"name": "HF_HUB_ENABLE_HF_TRANSFER", "value": "1"},
        {"name": "MODEL_PATH", "value": "/opt/ml/model/meta-llama/Llama-3.1-70B-Instruct"},
    ]
    assert not [i for i in _issues(_with_env("prod", env)) if "env-secret-plaintext" in i]


def test_staging_and_dev_advise_instead() -> None:
    for stack in ("staging", "dev"):
        mapping = _with_env(stack, [{"name": "HF_TOKEN", "value": HF}])
        assert not [i for i in _issues(mapping, stack) if "env-secret-plaintext" in i], stack
        advisories = [
            a for a in run_advisories(parse_stack_mapping(stack, mapping)) if a.rule == "env-secret-plaintext"
        ]
        assert [a.path for a in advisories] == [KEY.removeprefix("hyperpod-inference:")], stack


def test_value_shapes_and_entropy() -> None:
    assert secret_reason("X", "ghp_" + "a" * 36) == "its value is a GitHub token (ghp_...)"
    assert secret_reason("X", "-----BEGIN RSA PRIVATE KEY-----\nMII") == "its value is a private key (PEM)"
    random_like = "Zq8vN3xT1mB7wK5yR2pL9sD4gH6jF0cVa"
    assert shannon_bits(random_like) >= 4.5
    assert (secret_reason("X", random_like) or "").startswith("its value looks random")
    # must not match: long but low-entropy or path-like values, numbers, a name segment inside a longer word
    assert secret_reason("X", "a" * 40) is None
    assert secret_reason("X", "meta-llama/Llama-3.1-70B-Instruct-and-more") is None
    assert secret_reason("KEEPALIVE_SECONDS", "30") is None
    assert secret_reason("MAX_TOKENS", "4096") is None
    assert secret_reason("HF_TOKEN", "") is None  # the omitted value: nothing written
    assert env_secret_reason({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}) is None


# --- control-plane logs (issue 46 item 3) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("types", "missing"),
    [([], "audit and authenticator logs"), (["api", "audit"], "authenticator log"), (["authenticator"], "audit log")],
)
def test_prod_needs_audit_and_authenticator_logs(types: list[str], missing: str) -> None:
    mapping = stack_mapping("prod")
    mapping.setdefault("hyperpod-inference:cluster", {})["controlPlaneLogTypes"] = types
    (issue,) = [i for i in _issues(mapping) if "controlPlaneLogTypes" in i]
    assert issue.startswith(f"hyperpod-inference:cluster.controlPlaneLogTypes: prod needs the {missing}")


def test_the_omitted_log_list_holds_in_prod_and_dev_may_turn_them_off() -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:cluster"].pop("controlPlaneLogTypes", None)  # the default: all five
    assert not [i for i in _issues(mapping) if "controlPlaneLogTypes" in i]
    dev = stack_mapping("dev")
    dev.setdefault("hyperpod-inference:cluster", {})["controlPlaneLogTypes"] = []
    assert not [i for i in _issues(dev, "dev") if "controlPlaneLogTypes" in i]


# --- the front door's baseline in prod (issue 46 item 3) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "key", "text"),
    [
        ({"deletionProtection": False}, "ingress.deletionProtection", "deletion protection on (FSBP ELB.6)"),
        ({"waf": {"ipReputation": False}}, "ingress.waf.ipReputation", "AWSManagedRulesAmazonIpReputationList"),
        ({"waf": {"logRetentionDays": 1}}, "ingress.waf.logRetentionDays", "1 days is below prod's log retention"),
        ({"accessLogRetentionDays": 30}, "ingress.accessLogRetentionDays", "30 days is below prod's log retention"),
    ],
)
def test_prod_refuses_a_weakened_front_door(edit: dict[str, Any], key: str, text: str) -> None:
    mapping = stack_mapping("prod")
    ingress = mapping["hyperpod-inference:ingress"]
    for k, v in edit.items():
        ingress[k] = {**ingress.get(k, {}), **v} if isinstance(v, dict) else v
    issues = [i for i in _issues(mapping) if i.startswith(f"hyperpod-inference:{key}:")]
    assert len(issues) == 1 and text in issues[0], issues


def test_the_omitted_front_door_keys_hold_and_staging_may_differ() -> None:
    mapping = stack_mapping("prod")
    ingress = mapping["hyperpod-inference:ingress"]
    for k in ("deletionProtection", "accessLogRetentionDays"):
        ingress.pop(k, None)
    ingress.get("waf", {}).pop("ipReputation", None)
    assert not [i for i in _issues(mapping) if "deletionProtection" in i or "ipReputation" in i or "Retention" in i]
    staging = stack_mapping("staging")
    staging["hyperpod-inference:ingress"]["deletionProtection"] = False
    assert not [i for i in _issues(staging, "staging") if "deletionProtection" in i]
