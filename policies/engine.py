"""Run the policy pack over a mock-registered graph, with the enforcement the CLI would apply.

The CLI's analyzer sees every registered resource and applies ``--policy-pack-config`` on top of the
policies' own enforcement levels. This module does the same offline: it turns each registration the
offline harness records (``tools.plan.mocks.Registration``, duck-typed: policies never import ``tools``) into the
``ResourceValidationArgs`` / ``PolicyResource`` objects the
pulumi-policy SDK defines, calls the very policy objects ``policies/__main__.py`` packs, and resolves
enforcement from ``policies/config.<environment>.json``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _NotApplicableError

from policies.graph import PlainProps, unwrap_secrets

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class PolicyResult:
    level: str  # "mandatory" | "advisory"
    policy: str
    resource_type: str
    resource_name: str
    message: str

    def render(self) -> str:
        return f"{self.level.upper()} {self.policy} {self.resource_type}::{self.resource_name}: {self.message}"


def policy_pack_config(environment: str) -> dict[str, Any]:
    """The ``--policy-pack-config`` file for an environment (``policies/config.<env>.json``)."""
    path = HERE / f"config.{environment}.json"
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _level(value: Any) -> str | None:
    if isinstance(value, EnforcementLevel):
        return str(value.value)
    if isinstance(value, str):
        return value
    return None


def enforcement_for(
    policy: Policy, pack_config: dict[str, Any], pack_default: str = "advisory"
) -> tuple[str, dict[str, Any]]:
    """(enforcement level, policy config properties) as the engine resolves them."""
    entry = pack_config.get(policy.name)
    props: dict[str, Any] = {}
    level = None
    if isinstance(entry, str):
        level = entry
    elif isinstance(entry, dict):
        level = entry.get("enforcementLevel")
        props = {k: v for k, v in entry.items() if k != "enforcementLevel"}
    if level is None:
        level = _level(pack_config.get("all"))
    if level is None:
        level = _level(policy.enforcement_level) or pack_default
    return level, props


def _opts(reg: Any) -> PolicyResourceOptions:
    def seconds(value: str | None) -> float:
        if not value:
            return 0.0
        units = {"s": 1, "m": 60, "h": 3600}
        return float(value[:-1]) * units.get(value[-1], 1)

    ct = getattr(reg, "custom_timeouts", {}) or {}
    return PolicyResourceOptions(
        protect=reg.protect,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(
            seconds(ct.get("create")), seconds(ct.get("update")), seconds(ct.get("delete"))
        ),
        additional_secret_outputs=[],
        parent=reg.parent,
    )


def _run(result: Any) -> None:
    if inspect.isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(result)
        finally:
            loop.close()


def _policy_resources(registrations: Sequence[Any]) -> list[PolicyResource]:
    by_urn: dict[str, PolicyResource] = {}
    for reg in registrations:
        by_urn[reg.urn] = PolicyResource(
            reg.type, PlainProps(unwrap_secrets(reg.inputs)), reg.urn, reg.name, _opts(reg), None, None, [], {}
        )
    for reg in registrations:
        res = by_urn[reg.urn]
        res.parent = by_urn.get(reg.parent or "")
        res.dependencies = [by_urn[u] for u in reg.dependencies if u in by_urn]
        res.property_dependencies = {
            k: [by_urn[u] for u in v if u in by_urn] for k, v in reg.property_dependencies.items()
        }
    return list(by_urn.values())


def evaluate(
    policies: Iterable[Policy],
    registrations: Sequence[Any],
    environment: str,
    *,
    pack_config: dict[str, Any] | None = None,
) -> list[PolicyResult]:
    """Every violation the pack reports for these registrations, with its resolved enforcement (from
    ``config.<environment>.json`` unless ``pack_config`` is given)."""
    if pack_config is None:
        pack_config = policy_pack_config(environment)
    names = {r.urn: (r.type, r.name) for r in registrations}
    results: list[PolicyResult] = []
    resources = _policy_resources(registrations)
    for policy in policies:
        level, props = enforcement_for(policy, pack_config)
        if level == "disabled":
            continue

        def report(
            message: str,
            urn: str | None = None,
            *,
            _default: tuple[str, str] = ("pulumi:pulumi:Stack", "stack"),
            _level: str = level,
            _name: str = policy.name,
        ) -> None:
            typ, name = names.get(urn or "", _default)
            results.append(PolicyResult(_level, _name, typ, name, message))

        if isinstance(policy, ResourceValidationPolicy):
            for reg, resource in zip(registrations, resources, strict=True):
                args = ResourceValidationArgs(reg.type, resource.props, reg.urn, reg.name, resource.opts, None, props)

                def report_resource(message: str, urn: str | None = None, _urn: str = reg.urn) -> None:
                    report(message, urn or _urn)

                try:
                    _run(policy.validate(args, report_resource))
                except _NotApplicableError:
                    pass
        elif isinstance(policy, StackValidationPolicy):
            try:
                _run(policy.validate(StackValidationArgs(resources, props), report))
            except _NotApplicableError:
                pass
    return results
