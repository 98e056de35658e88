"""A default provider whose version changes between base and head is an internal step, never a shown one.

The engine names a default provider ``default`` or ``default_<version with underscores>`` (pulumi/pulumi
pkg/resource/deploy/providers/registry.go, ``defaultProviderName`` / ``IsDefaultProvider``: a provider whose name
starts with ``default``) and registers it as an internal step, which ``pulumi preview --json`` does not list.
A bump of the AWS SDK pin (7.50.0 -> 7.51.1) therefore changes no resource step: only the extension block's
``defaultProviders`` shows the new provider created and the old one deleted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import cached_scope
from tests.test_plan import _plan
from tools.plan.diff import diff_plans
from tools.plan.writer import EXTENSION, is_default_provider

AWS_DEFAULT = "default_7_51_1"
OLDER_AWS_DEFAULT = "default_7_50_0"


@pytest.fixture(scope=cached_scope("module"))
def prod_plan() -> dict[str, Any]:
    code, plan = _plan("prod")
    assert code == 0
    return plan


def _with_provider(plan: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    text = json.dumps(plan)
    assert f"::{old}" in text, f"the plan references no provider named {old}"
    changed: dict[str, Any] = json.loads(text.replace(f"::{old}", f"::{new}"))
    return changed


def test_a_default_provider_version_bump_changes_no_shown_step(prod_plan: dict[str, Any]) -> None:
    base = _with_provider(prod_plan, AWS_DEFAULT, OLDER_AWS_DEFAULT)
    diffed = diff_plans(base, prod_plan)
    shown = [(s["op"], s["urn"].rsplit("::", 1)[-1]) for s in diffed["steps"]]
    assert shown == [("same", "hyperpod-inference-prod")]
    assert diffed["changeSummary"] == {"same": len(prod_plan["steps"])}
    internal = {(s["op"], s["urn"].rsplit("::", 1)[-1]) for s in diffed[EXTENSION]["defaultProviders"]}
    assert ("create", AWS_DEFAULT) in internal
    assert ("delete", OLDER_AWS_DEFAULT) in internal
    assert not any("pulumi:providers:" in s["urn"] for s in diffed["steps"])


@pytest.mark.parametrize(
    ("name", "default"),
    [
        ("default", True),
        ("default_7_51_1", True),
        ("default_4_34_2", True),
        # must not match: an explicit provider the program names, even one containing "default"
        ("eks-k8s", False),
        ("k8s-default", False),
        ("my_default_7_51_1", False),
    ],
)
def test_default_provider_names(name: str, default: bool) -> None:
    urn = f"urn:pulumi:prod::hyperpod-inference::pulumi:providers:aws::{name}"
    assert is_default_provider(urn) is default
    # a resource URN whose name starts with "default" is not a provider
    assert not is_default_provider(f"urn:pulumi:prod::hyperpod-inference::aws:ec2/vpc:Vpc::{name}")
