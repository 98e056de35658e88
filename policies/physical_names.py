"""The physical name a resource gets in AWS, from its registration: one rule, read by the mocks and the deploy policy.

The rule is the ``physical_name`` of the type's record (``policies/resource_types``), with its provider's naming
convention (``naming`` of ``policies/resource_types/index.yaml``). Two readers, two functions over the same rule:

* :func:`physical_name` — the concrete name AWS will give the resource (a deterministic stand-in for the random
  part): ``tools.plan.mocks`` reports it, so every name that flows into other inputs (a bucket policy's ``bucket``) is
  the real one, and the evaluation test checks the deploy policy on those concrete ARNs;
* :func:`name_pattern` — the IAM pattern that covers every name the resource can get (``prefix*``,
  ``<logical>-*``), which ``tools.cli.deployer_policy`` puts in ARNs.

``None`` from either: the type's record has no rule (its name is not known from its inputs).
"""

from __future__ import annotations

import hashlib
from typing import Any

from policies.resource_types import load_resource_types
from policies.resource_types.schema import NameRule, Naming

# The day the stand-in timestamps of prefixed names are made of (terraform-plugin-sdk's PrefixedUniqueId).
_STAND_IN_TIMESTAMP = "202612010000000000"


def name_rule(type_token: str) -> tuple[Naming, NameRule] | None:
    """The type's physical-name rule and its provider's naming convention (None: no rule)."""
    records = load_resource_types()
    record = records.types.get(type_token)
    if record is None or record.physical_name is None:
        return None
    return records.index.naming[type_token.split(":", 1)[0]], record.physical_name


def _given(inputs: dict[str, Any], key: str | None) -> str | None:
    value = inputs.get(key) if key else None
    return value if isinstance(value, str) and value else None


def _stand_in(n: int, *parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


class NameTooLong(ValueError):
    """A name the provider would refuse (longer than the type allows)."""


def physical_name(type_token: str, logical: str, inputs: dict[str, Any]) -> str | None:
    """The concrete physical name (random parts replaced by a hash of the type and logical name)."""
    found = name_rule(type_token)
    if found is None:
        return None
    provider, rule = found
    given = _given(inputs, rule.name)
    if given is not None:
        return given
    prefix = _given(inputs, rule.prefix)
    if prefix is not None and provider.prefix_suffix is not None:
        suffix = provider.prefix_suffix
        return (
            prefix + _STAND_IN_TIMESTAMP[: suffix.timestamp_digits] + _stand_in(suffix.counter_hex, type_token, logical)
        )
    if not rule.autonamed:
        return None
    base = logical.lower() if rule.lower else logical
    name = base + provider.separator + _stand_in(provider.random_hex, type_token, logical)
    if len(name) > rule.max:
        raise NameTooLong(f"{type_token} {logical!r}: the auto-name {name!r} exceeds {rule.max} characters")
    return name


def name_pattern(type_token: str, logical: str, inputs: dict[str, Any]) -> str | None:
    """The IAM pattern covering every name the resource can get: the name, ``<prefix>*`` or ``<logical>-*``."""
    found = name_rule(type_token)
    if found is None:
        return None
    provider, rule = found
    given = _given(inputs, rule.name)
    if given is not None:
        return given
    prefix = _given(inputs, rule.prefix)
    if prefix is not None:
        return prefix + "*"
    if not rule.autonamed:
        return None
    return (logical.lower() if rule.lower else logical) + provider.separator + "*"
