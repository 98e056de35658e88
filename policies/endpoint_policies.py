"""The endpoint rules of ``policies/rules.py`` as CrossGuard policies over the registered custom resources.

The rule logic lives once, in :data:`policies.rules.RULES`, and the stack-config checks call the same
functions; this module only finds the custom resources the engine sees
(``kubernetes:inference.sagemaker.aws.amazon.com/<version>:InferenceEndpointConfig`` / ``JumpStartModel``,
including hand-written raw ``CustomResource``s) and the stack context a rule needs:

- the pinned add-on version, from the ``aws:eks/addon:Addon`` named ``amazon-sagemaker-hyperpod-inference``
  (``addonVersion`` in the policy config when the stack has no add-on resource);
- the HyperPod instance types, from the ``aws-native:sagemaker:Cluster``'s ``instanceGroups``;
- the environment (``environment`` in the policy config, default ``prod``), for rules that are stricter in prod.

Rules that need the add-on or the cluster are ``StackValidationPolicy``s; the others are
``ResourceValidationPolicy``s. A policy's enforcement is the rule's prod level; ``config.<env>.json``
carries the other environments' levels. One policy has a per-resource level in the catalogue
(image-compatible-with-operator: mandatory for kvaware endpoints in prod, advisory otherwise); the engine
knows one level per policy, so the ``reportLevels`` config property says which of the rule's levels the
policy reports in that environment (prod: only the mandatory ones).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from . import rules
from .graph import EKS_ADDON, HYPERPOD_CLUSTER, INFERENCE_ADDON, as_list, crd_kind, get, of_type, plain

ENDPOINT_KINDS = ("InferenceEndpointConfig", "JumpStartModel")

# Rules that need stack context (the pinned add-on or the cluster's instance groups).
STACK_RULES = frozenset(
    {
        "endpoint-instance-type-in-cluster",
        "feature-in-installed-crd",
        "feature-supported-by-addon-version",
        "image-compatible-with-operator",
        "known-addon-defect",
        "kv-cache-requires-vllm",  # operators before 3.3 ignore enableL1Cache: false (release notes)
        "weights-cache-nvme-offline",  # nodeAffinity-only endpoints: the cluster's instance groups
    }
)
NEEDS_ADDON = STACK_RULES - {
    "endpoint-instance-type-in-cluster",
    "kv-cache-requires-vllm",
    "weights-cache-nvme-offline",
}

# Policy-config defaults, applied in code (the Python SDK does not apply schema defaults).
DEFAULT_ENVIRONMENT: rules.Environment = "prod"
DEFAULT_REPORT_LEVELS: Mapping[str, tuple[str, ...]] = {"image-compatible-with-operator": ("mandatory",)}

SEVERITY: Mapping[str, Severity] = {
    "kvaware-requires-vllm-completions": Severity.HIGH,
    "engine-matches-image": Severity.HIGH,
    "kv-cache-requires-vllm": Severity.HIGH,
    "gateway-excludes-intelligent-routing": Severity.HIGH,
    "request-limits-require-metrics": Severity.MEDIUM,
    "dpd-requires-efa-instances": Severity.HIGH,
    "endpoint-instance-type-in-cluster": Severity.HIGH,
    "instance-selection-exclusive": Severity.MEDIUM,
    "router-metrics-port-matches-worker": Severity.LOW,
    "sglang-metrics-served": Severity.MEDIUM,
    "feature-supported-by-addon-version": Severity.HIGH,
    "feature-in-installed-crd": Severity.MEDIUM,
    "image-compatible-with-operator": Severity.HIGH,
    "image-meets-release-requirement": Severity.HIGH,
    "image-meets-release-requirement-offline": Severity.LOW,
    "l2-redis-wired": Severity.HIGH,
    "known-addon-defect": Severity.MEDIUM,
    "tieredstorage-on-non-p-instance": Severity.LOW,
    "s3-locations-valid": Severity.HIGH,
    "endpoint-tags-valid": Severity.MEDIUM,
    "weights-cache-needs-local-nvme": Severity.HIGH,
    "weights-cache-nvme-offline": Severity.LOW,
}

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


# Runs only at import (building the policies); tests/test_policies.py test_prod_levels_in_code_match_the_table
# checks its results, which mutmut cannot reach (docs/mutation-testing.md).
def _prod_level(rule: rules.Rule) -> EnforcementLevel:  # pragma: no mutate block
    """The policy's own (prod) level: mandatory if the rule can be mandatory for some resource in prod."""
    if rule.enforcement["prod"] == "mandatory" or rule.name in DEFAULT_REPORT_LEVELS:
        return EnforcementLevel.MANDATORY
    return EnforcementLevel(rule.enforcement["prod"])


def _settings(config: Mapping[str, Any], rule: rules.Rule) -> tuple[rules.Environment, tuple[str, ...], str | None]:
    env = config.get("environment", DEFAULT_ENVIRONMENT)
    environment = next((e for e in rules.ENVIRONMENTS if e == env), DEFAULT_ENVIRONMENT)
    levels = tuple(config.get("reportLevels", DEFAULT_REPORT_LEVELS.get(rule.name, ("mandatory", "advisory"))))
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


# The validators are module-level functions bound to their rule (not closures built inside the policy
# factories): the factories run once at import, so a closure's logic would be out of reach of mutation
# testing (docs/mutation-testing.md), while these run on every call.
def _resource_policy(rule: rules.Rule) -> ResourceValidationPolicy:  # pragma: no mutate block
    return ResourceValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=functools.partial(_validate_resource, rule),
        enforcement_level=_prod_level(rule),
        config_schema=CONFIG_SCHEMA,
        severity=SEVERITY[rule.name],
    )


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
    if rule.name in NEEDS_ADDON and addon is None:
        return  # no pinned add-on to judge against (the operator layer is absent)
    ctx = rules.RuleContext(
        environment=environment, addon_version=addon or "", instance_types=stack_instance_types(args)
    )
    for resource in args.resources:
        if crd_kind(resource.resource_type) in ENDPOINT_KINDS:
            _check(rule, plain(resource.props), ctx, levels, report, urn=resource.urn)


def _stack_policy(rule: rules.Rule) -> StackValidationPolicy:  # pragma: no mutate block
    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=functools.partial(_validate_stack, rule),
        enforcement_level=_prod_level(rule),
        config_schema=CONFIG_SCHEMA,
        severity=SEVERITY[rule.name],
    )


ENDPOINT_POLICIES: list[Policy] = [
    _stack_policy(rule) if name in STACK_RULES else _resource_policy(rule) for name, rule in rules.RULES.items()
]
