"""Defaults that sit on a rule's threshold are tested AT the default, not only on either side of it.

A rule like "prod needs at least 1 Redis replica" with a default of 1 has its boundary at the default: a
threshold moved by one makes every stack that omits the key invalid, yet tests that set 0 and 2 still pass.
Two layers guard against that:

- the instance: prod's Redis with the replica count left out (the default, 1) is valid, and 0 is refused;
- the sweep: every numeric or boolean key a reference stack sets is removed in turn (so the model's default
  applies in that stack's environment) and the stack must stay valid, unless the key has no default
  (``required``) or its removal breaks a named cross-field agreement listed below with the key it is reported on.
  A default that a rule refuses in some environment thus fails here, naming the key.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from components.config.errors import ConfigError
from components.config.loader import parse_stack_mapping
from tests.conftest import stack_mapping

KV = "hyperpod-inference:kvCache"
REFERENCE = ("prod", "staging", "dev", "attach")

# Removing these keys breaks an agreement with another key the stack sets (not a default on a threshold): the
# removed key -> the key the refusal is reported on.
AGREEMENTS: dict[tuple[str, str], str] = {
    # prod needs a break-glass access entry (components/config/access.py): the flag off leaves none
    ("prod", "hyperpod-inference:cluster.accessEntries.0.breakGlass"): "hyperpod-inference:cluster.accessEntries",
    # the endpoint opts into the gateway, so the stack's gateway must be on
    ("prod", "hyperpod-inference:gateway.enabled"): "hyperpod-inference:endpoints[2].spec.inferenceGateway.enabled",
    # SGLang serves /metrics on its serving port: the metrics port must equal the container port (8000, not 8080)
    ("prod", "hyperpod-inference:endpoints.2.spec.metrics.modelMetrics.port"): (
        "hyperpod-inference:endpoints[2].spec.metrics.modelMetrics.port"
    ),
    # intelligent routing off: the operator's Service for the endpoint has no sourced name, prod must name it
    ("prod", "hyperpod-inference:endpoints.0.spec.intelligentRoutingSpec.enabled"): (
        "hyperpod-inference:ingress.routes[0].serviceName"
    ),
    ("prod", "hyperpod-inference:endpoints.1.spec.intelligentRoutingSpec.enabled"): (
        "hyperpod-inference:ingress.routes[1].serviceName"
    ),
    # no endpoint opts into the gateway any more: the gateway must say which namespace its models live in
    ("prod", "hyperpod-inference:endpoints.2.spec.inferenceGateway.enabled"): "hyperpod-inference:gateway.namespace",
    # teams and priority classes are set, so governance must be on
    ("staging", "hyperpod-inference:governance.enabled"): "hyperpod-inference:governance.enabled",
    # a quota gives accelerators or a count of whole instances
    ("staging", "hyperpod-inference:governance.teams.0.resources.0.accelerators"): (
        "hyperpod-inference:governance.teams[0].resources[0]"
    ),
    ("staging", "hyperpod-inference:governance.teams.1.resources.0.accelerators"): (
        "hyperpod-inference:governance.teams[1].resources[0]"
    ),
    # the endpoint expects 240 s responses: the ALB's idle timeout (CRD default 60 s) must cover them
    ("staging", "hyperpod-inference:endpoints.0.spec.loadBalancer.idleTimeoutSeconds"): (
        "hyperpod-inference:endpoints[0].expectedMaxResponseSeconds"
    ),
    # the stacks run Kubernetes 1.35, which HyperPod's prerequisites page does not list yet: the version is
    # refused unless the stack acknowledges it (the flag's default, false, is the safe one)
    **{
        (
            stack,
            "hyperpod-inference:cluster.acceptUnlistedKubernetesVersion",
        ): "hyperpod-inference:cluster.kubernetesVersion"
        for stack in ("dev", "staging", "prod")
    },
    # prod: a software update of the group takes one node at a time; one replica (the CRD default) would leave the
    # endpoint with none serving during the roll (policies/node_roll.py), so the group's batch is refused
    ("prod", "hyperpod-inference:endpoints.0.spec.replicas"): (
        "hyperpod-inference:cluster.instanceGroups[1].softwareUpdates.maximumBatchSize"
    ),
    ("prod", "hyperpod-inference:endpoints.2.spec.replicas"): (
        "hyperpod-inference:cluster.instanceGroups[1].softwareUpdates.maximumBatchSize"
    ),
    ("prod", "hyperpod-inference:endpoints.1.spec.pdSpec.prefillSpec.replicas"): (
        "hyperpod-inference:cluster.instanceGroups[2].softwareUpdates.maximumBatchSize"
    ),
    ("prod", "hyperpod-inference:endpoints.1.spec.pdSpec.decodingSpec.replicas"): (
        "hyperpod-inference:cluster.instanceGroups[2].softwareUpdates.maximumBatchSize"
    ),
}


def _parse(stack: str, mapping: dict[str, Any]) -> list[str]:
    """The rendered config issues of a stack mapping ([] when valid)."""
    try:
        parse_stack_mapping(stack, mapping)
    except ConfigError as err:
        return [issue.render() for issue in err.issues]
    return []


def _scalar_leaves(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _scalar_leaves(value, (*path, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _scalar_leaves(value, (*path, index))
    elif isinstance(obj, (bool, int, float)) and path and isinstance(path[-1], str):
        yield path, obj


def _without(mapping: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    changed = copy.deepcopy(mapping)
    node = changed
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return changed


def _issue_key(path: tuple[Any, ...]) -> str:
    """How the loader names a config path: ``ns:key.sub[0].leaf``."""
    head, *rest = path
    text = str(head)
    for part in rest:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


# --- the instance ------------------------------------------------------------------------------------------


def test_prod_redis_with_the_default_replica_count_is_valid() -> None:
    mapping = stack_mapping("prod")
    redis = mapping[KV]["redis"]
    assert mapping[KV]["l2Backend"] == "redis" and redis["replicas"] == 2
    del redis["replicas"]  # the model's default: 1, prod's floor
    assert _parse("prod", mapping) == []


def test_prod_redis_without_a_replica_is_refused_and_staging_accepts_it() -> None:
    mapping = stack_mapping("prod")
    mapping[KV]["redis"]["replicas"] = 0
    issues = _parse("prod", mapping)
    assert len(issues) == 1 and issues[0].startswith(
        "hyperpod-inference:kvCache.redis.replicas: prod needs at least 1 replica"
    ), issues
    # the floor is prod's: the same stack as staging (environment key) takes 0
    mapping["hyperpod-inference:environment"] = "staging"
    assert not any("kvCache.redis.replicas" in i for i in _parse("prod", mapping))


# --- the sweep -------------------------------------------------------------------------------------------------


def _cases() -> Iterator[Any]:
    for stack in REFERENCE:
        mapping = stack_mapping(stack)
        for path, value in _scalar_leaves(mapping):
            if not str(path[0]).startswith("hyperpod-inference:"):
                continue
            key = ".".join(str(p) for p in path)
            yield pytest.param(stack, path, id=f"{stack}:{key}={value}")


@pytest.mark.parametrize(("stack", "path"), list(_cases()))
def test_a_removed_number_or_flag_falls_back_to_a_valid_default(stack: str, path: tuple[Any, ...]) -> None:
    key = ".".join(str(p) for p in path)
    issues = _parse(stack, _without(stack_mapping(stack), path))
    if not issues:
        return
    own = f"{_issue_key(path)}: required"
    if all(i.startswith(own) for i in issues):
        return  # no default (or none in this environment, e.g. prod's unsourced ports): the key must be written
    reported_on = AGREEMENTS.get((stack, key))
    assert reported_on is not None, f"removing {key} from {stack} (its default applies) is refused: {issues}"
    assert any(i.startswith(f"{reported_on}:") for i in issues), issues


def test_the_sweep_covers_every_reference_environment_and_the_agreements_are_real() -> None:
    stacks = {c.values[0] for c in _cases()}
    assert stacks == set(REFERENCE)
    assert sum(1 for _ in _cases()) > 60
    # every listed agreement names a key that a reference stack really sets (a stale entry fails)
    keys = {(c.values[0], ".".join(str(p) for p in c.values[1])) for c in _cases()}
    assert set(AGREEMENTS) <= keys
