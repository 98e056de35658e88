"""Helpers the policies share: reading camelCase props and following the resource graph.

The analyzer hands policies the engine's inputs: camelCase keys, numbers as floats (the offline engine
gives ints), nested objects as dicts. Stack policies join resources the way the engine knows them — by
``property_dependencies`` (which resource an input came from) first, and by equal literal values second
(for ids written by hand or resources outside the stack).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pulumi.runtime import rpc
from pulumi_policy import PolicyResource, StackValidationArgs

# Re-exported: the policies import the tokens they select by from here.
from policies.resource_types.tokens import (  # noqa: F401
    ALB_LISTENER,
    ALB_LISTENER_RULE,
    BUCKET,
    BUCKET_POLICY,
    BUCKET_V2,
    EKS_ADDON,
    EKS_CLUSTER,
    EKS_COMPONENT,
    HYPERPOD_CLUSTER,
    IAM_ROLE,
    LISTENER,
    LISTENER_RULE,
    PUBLIC_ACCESS_BLOCK,
    REPLICATION_GROUP,
    SECURITY_GROUP,
    SG_EGRESS_RULE,
    SG_INGRESS_RULE,
    SG_RULE,
    SNS_TOPIC,
    SSE_CONFIG,
    SSE_CONFIG_V2,
)

CRD_GROUP = "inference.sagemaker.aws.amazon.com"

# Provider type tokens come from the resource-type records (policies/resource_types/tokens.py); the SDK's
# aliases of one AWS resource are judged together.
BUCKETS = (BUCKET, BUCKET_V2)
SSE_CONFIGS = (SSE_CONFIG, SSE_CONFIG_V2)
LISTENERS = (LISTENER, ALB_LISTENER)
LISTENER_RULES = (LISTENER_RULE, ALB_LISTENER_RULE)

INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference"


def get(data: Any, *path: str, default: Any = None) -> Any:
    """``data[path[0]][path[1]]...`` through dicts, or ``default`` when any step is missing."""
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return default
        data = data[key]
    return default if data is None else data


def truthy(value: Any) -> bool:
    """A boolean input, also when it arrived as a string (``"true"``)."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def is_list(value: Any) -> bool:
    """A list input: a ``list`` offline, a read-only ``Sequence`` proxy under the CLI's analyzer."""
    if type(value) is list:  # the common case first: ABC isinstance checks are slow on large graphs
        return True
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if is_list(value) else [value]


class PlainProps(dict[str, Any]):
    """Props that are already plain dicts, lists and ints (the offline engine hands these over).

    :func:`plain` returns them untouched instead of rebuilding them for every policy that reads them.
    """


def plain(value: Any) -> Any:  # noqa: PLR0911 - one early return per input shape, fastest first
    """Props as plain dicts, lists and ints.

    Under the CLI, props arrive as the analyzer's read-only ``Mapping``/``Sequence`` proxies (which raise on
    values unknown during preview) with numbers as floats (8000.0); the rule functions expect ``dict``,
    ``list`` and the CRDs' integers.
    """
    kind = type(value)
    if kind is PlainProps:
        return value
    if kind is str or kind is bool or kind is int or value is None:
        return value
    if kind is float:
        return int(value) if value.is_integer() else value
    if kind is dict:
        return {k: plain(v) for k, v in value.items()}
    if kind is list:
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if is_list(value):
        return [plain(v) for v in value]
    return value


def as_json(value: Any) -> Any:
    """A JSON document input (IAM policy, add-on configurationValues) as data; ``None`` if unparseable."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def crd_kind(resource_type: str) -> str | None:
    """``kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig`` → the kind, else None.

    ``pulumi_kubernetes.apiextensions.CustomResource`` registers as ``kubernetes:<apiVersion>:<kind>``; any
    served version of the operator's group counts, so a hand-written v1alpha1 resource is checked too.
    """
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes" or not parts[1].startswith(CRD_GROUP + "/"):
        return None
    return parts[2]


def of_type(args: StackValidationArgs, *types: str) -> list[PolicyResource]:
    return [r for r in args.resources if r.resource_type in types]


def deps(resource: PolicyResource, key: str, *types: str) -> list[PolicyResource]:
    """The resources input ``key`` of ``resource`` came from (optionally only of ``types``)."""
    found = (resource.property_dependencies or {}).get(key) or []
    return [d for d in found if not types or d.resource_type in types]


def depends_on(resource: PolicyResource, key: str, target: PolicyResource, *, literal: Any = None) -> bool:
    """Whether input ``key`` of ``resource`` refers to ``target``: by property dependency, or by value."""
    if any(d.urn == target.urn for d in deps(resource, key)):
        return True
    value = get(resource.props, key)
    return literal is not None and value is not None and value == literal


def names(resources: Iterable[PolicyResource]) -> str:
    return ", ".join(sorted(r.name for r in resources))


def unwrap_secrets(value: Any) -> Any:
    """Inputs with Pulumi's secret wrappers removed, as the CLI's analyzer and a rendered manifest see them.

    The mock monitor keeps a secret input as ``{SPECIAL_SIG_KEY: SPECIAL_SECRET_SIG, "value": ...}``.
    Offline, every secret value is a mock or a placeholder, so unwrapping writes nothing real anywhere.
    """
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return unwrap_secrets(value.get("value"))
        return {k: unwrap_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap_secrets(v) for v in value]
    return value
