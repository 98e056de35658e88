"""The endpoint rules of ``policies/rules.py`` as CrossGuard policies over the registered custom resources.

The rule logic lives once, in :data:`policies.rules.RULES`, and the stack-config checks call the same
functions; this module only finds the custom resources the engine sees
(``kubernetes:inference.sagemaker.aws.amazon.com/<version>:InferenceEndpointConfig`` / ``JumpStartModel``,
including hand-written raw ``CustomResource``s) and the stack context a rule needs:

- the pinned add-on version, from the ``aws:eks/addon:Addon`` named ``amazon-sagemaker-hyperpod-inference``
  (``addonVersion`` in the policy config when the stack has no add-on resource);
- the HyperPod instance types, from the ``aws-native:sagemaker:Cluster``'s ``instanceGroups``;
- the environment (``environment`` in the policy config, default ``prod``), for rules that are stricter in prod.

Rules whose record ``needs`` the add-on or the cluster are ``StackValidationPolicy``s; the others are
``ResourceValidationPolicy``s. Levels, severity and description come from the rule's record
(``policies/records/<name>.yaml``; ``policies/pack.py`` builds the policy). A record may escalate some resources
(image-compatible-with-operator: mandatory for kvaware endpoints in prod, advisory otherwise); the engine knows one
level per policy, so the ``reportLevels`` config property says which of the rule's levels the policy reports in that
environment (prod: only the mandatory ones).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from pulumi_policy import (
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from . import records, rules
from .graph import EKS_ADDON, HYPERPOD_CLUSTER, INFERENCE_ADDON, as_list, crd_kind, get, of_type, plain

ENDPOINT_KINDS = ("InferenceEndpointConfig", "JumpStartModel")

# Policy-config default, applied in code (the Python SDK does not apply schema defaults).
DEFAULT_ENVIRONMENT: rules.Environment = "prod"

CONFIG_SCHEMA = PolicyConfigSchema(
    properties={
        "environment": {
            "type": "string",
            "enum": list(rules.ENVIRONMENTS),
            "default": DEFAULT_ENVIRONMENT,
            "description": "The stack's environment (rules stricter in prod read it).",
        },
        "reportLevels": {
            "type": "array",
            "items": {"type": "string", "enum": ["mandatory", "advisory"]},
            "description": "Which of the rule's per-resource levels this policy reports in this environment.",
        },
        "addonVersion": {
            "type": "string",
            "description": "The add-on version to judge against when the stack has no inference add-on resource.",
        },
    }
)


def _settings(config: Mapping[str, Any], rule: rules.Rule) -> tuple[rules.Environment, tuple[str, ...], str | None]:
    env = config.get("environment", DEFAULT_ENVIRONMENT)
    environment = next((e for e in rules.ENVIRONMENTS if e == env), DEFAULT_ENVIRONMENT)
    default = records.RECORDS[rule.name].report_levels(DEFAULT_ENVIRONMENT) or ("mandatory", "advisory")
    levels = tuple(config.get("reportLevels", default))
    addon = config.get("addonVersion")
    return environment, levels, addon if isinstance(addon, str) and addon else None


def _check(
    rule: rules.Rule,
    cr: Mapping[str, Any],
    ctx: rules.RuleContext,
    levels: tuple[str, ...],
    report: ReportViolation,
    *,
    urn: str | None = None,
) -> None:
    violations = rule.check(cr, ctx)
    if violations and rule.level(cr, ctx) in levels:
        for violation in violations:
            where = f"spec.{violation.path}: " if violation.path else ""
            unknown = f" (cannot be checked offline; checked by {violation.checked_by})" if violation.checked_by else ""
            report(f"{where}{violation}{unknown}", urn)


def _validate_resource(rule: rules.Rule, args: ResourceValidationArgs, report: ReportViolation) -> None:
    if crd_kind(args.resource_type) not in ENDPOINT_KINDS:
        return
    environment, levels, addon = _settings(args.get_config(), rule)
    cr = plain(args.props)
    _check(rule, cr, rules.RuleContext(environment=environment, addon_version=addon or ""), levels, report)


def stack_addon_version(args: StackValidationArgs) -> str | None:
    """The pinned ``amazon-sagemaker-hyperpod-inference`` add-on version of the stack, if registered."""
    for addon in of_type(args, EKS_ADDON):
        if get(addon.props, "addonName") == INFERENCE_ADDON and get(addon.props, "addonVersion"):
            return str(get(addon.props, "addonVersion"))
    return None


def stack_instance_types(args: StackValidationArgs) -> frozenset[str] | None:
    """Every HyperPod instance-group instance type of the stack; ``None`` if the stack has no HyperPod cluster."""
    clusters = of_type(args, HYPERPOD_CLUSTER)
    if not clusters:
        return None
    return frozenset(
        str(get(group, "instanceType"))
        for cluster in clusters
        for group in as_list(get(cluster.props, "instanceGroups"))
        if get(group, "instanceType")
    )


def _validate_stack(rule: rules.Rule, args: StackValidationArgs, report: ReportViolation) -> None:
    environment, levels, configured_addon = _settings(args.get_config(), rule)
    addon = stack_addon_version(args) or configured_addon
    if "addon" in records.RECORDS[rule.name].needs and addon is None:
        return  # no pinned add-on to judge against (the operator layer is absent)
    ctx = rules.RuleContext(
        environment=environment, addon_version=addon or "", instance_types=stack_instance_types(args)
    )
    for resource in args.resources:
        if crd_kind(resource.resource_type) in ENDPOINT_KINDS:
            _check(rule, plain(resource.props), ctx, levels, report, urn=resource.urn)


def validator(
    record: records.PolicyRecord,
) -> tuple[type[ResourceValidationPolicy] | type[StackValidationPolicy], Callable[..., None]]:
    """The policy class and validate function the pack wraps an endpoint rule in: a stack policy when the rule
    reads stack context (its record's ``needs``), else a resource policy. Module-level functions bound to the rule,
    not closures (docs/mutation-testing.md)."""
    rule = rules.RULES[record.name]
    if record.needs:
        return StackValidationPolicy, functools.partial(_validate_stack, rule)
    return ResourceValidationPolicy, functools.partial(_validate_resource, rule)
