"""The policies of the hyperpod-inference pack, built from the policy records; importable by tests and tools.

``policies/__main__.py`` wraps exactly this list in a ``PolicyPack``; never import that file (its
constructor starts a gRPC server and blocks).

Each record (``policies/records/<name>.yaml``) gives a policy its name, description, severity, config schema and
validator; the policy's own enforcement level is the record's prod level, and ``config.<env>.json`` (the
``--policy-pack-config`` file, generated from the same records) carries every environment's. Policy config
defaults are applied in code (``cfg.get(x, default)``), because the Python SDK does not apply schema defaults —
so the offline engine and the CLI resolve the same behaviour.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    Severity,
    StackValidationPolicy,
)

from . import capacity, endpoint_policies
from .records import RECORDS, PolicyRecord

PACK_NAME = "hyperpod-inference"

# The pack-wide fallback for a policy without its own level (every record gives one).
PACK_ENFORCEMENT = EnforcementLevel.ADVISORY


PolicyClass = type[ResourceValidationPolicy] | type[StackValidationPolicy]


def _validator(record: PolicyRecord) -> tuple[PolicyClass, Callable[..., Any], PolicyConfigSchema | None]:
    if record.kind == "endpoint":
        cls, validate = endpoint_policies.validator(record)
        return cls, validate, endpoint_policies.CONFIG_SCHEMA
    schema = PolicyConfigSchema(properties=record.config_schema) if record.config_schema is not None else None
    if record.kind == "capacity":
        return StackValidationPolicy, functools.partial(capacity.validate, record.name), schema
    cls = ResourceValidationPolicy if record.kind == "resource" else StackValidationPolicy
    return cls, record.function(), schema


# Runs only at import (building the policies); tests/test_policy_records.py checks its results, which mutmut
# cannot reach (docs/mutation-testing.md).
def policy(record: PolicyRecord) -> Policy:  # pragma: no mutate block
    """The CrossGuard policy of one record."""
    cls, validate, schema = _validator(record)
    built: Policy = cls(
        name=record.name,
        description=record.description,
        validate=validate,
        enforcement_level=EnforcementLevel(record.pack_level("prod")),
        config_schema=schema,
        severity=Severity(record.severity),
    )
    return built


POLICIES: list[Policy] = [policy(r) for r in RECORDS.values()]
"""Every policy of the pack, in record (file-name) order."""

CAPACITY_POLICIES: list[Policy] = [p for p in POLICIES if RECORDS[p.name].kind == "capacity"]
GLOBAL_POLICIES: list[Policy] = [p for p in POLICIES if "global" in RECORDS[p.name].scope.stacks]
