"""Values that must come from a closed set, checked against the set's owner rather than a pattern.

* ``endpoints[].spec.modelSourceConfig.s3Storage.region`` (and every other Region a stack names): one of the AWS
  Regions botocore's endpoint data lists (``botocore/data/endpoints.json``, ``partitions[].regions``): a Region
  that does not exist is refused, not taken for a cross-Region bucket.
* ``kvCache.redis.nodeType``: a node type ElastiCache offers in the stack's Region, from the per-Region table
  cfn-lint ships (``aws_elasticache_cachecluster/cachenodetype_enum.json``, the data cfn-lint lints
  ``AWS::ElastiCache::*`` ``CacheNodeType`` with); the pattern alone let ``cache.r99.huge`` through.
* ``endpoints[].engine`` against the worker image: an image whose repository names another engine
  (``lmsysorg/sglang`` under ``engine: vllm``) is refused with both named, since every engine-specific rule
  (the KV cache and kvaware routing need vLLM) reads ``engine``.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from policies.rules import engine_image_mismatch

from .base import ConfigIssue, join_path
from .checks import Check
from .kvcache import KvCacheConfig

_CFN_LINT_NODE_TYPES = ("data", "schemas", "extensions", "aws_elasticache_cachecluster", "cachenodetype_enum.json")


def _package_file(package: str, *parts: str) -> Path:
    """A data file of an installed package, located without importing it (cfn-lint's import loads its linter)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{package} is not installed; it is a runtime dependency (requirements.txt)")
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*parts)


@cache
def aws_regions() -> frozenset[str]:
    """Every Region of every partition in botocore's endpoint data."""
    doc = json.loads(_package_file("botocore", "data", "endpoints.json").read_text(encoding="utf-8"))
    return frozenset(region for partition in doc["partitions"] for region in partition.get("regions", {}))


@cache
def _node_type_table() -> dict[str, frozenset[str]]:
    raw = json.loads(_package_file("cfnlint", *_CFN_LINT_NODE_TYPES).read_text(encoding="utf-8"))
    return {region: frozenset(v["enum"]) for region, v in raw.items() if isinstance(v, dict) and "enum" in v}


def elasticache_node_types(region: str) -> frozenset[str]:
    """Node types ElastiCache offers in ``region`` (empty when cfn-lint's table does not know the Region)."""
    return _node_type_table().get(region, frozenset())


def region_problem(value: str) -> str | None:
    """Why ``value`` is not an AWS Region (with the nearest Regions), or None."""
    if value in aws_regions():
        return None
    near = difflib.get_close_matches(value, sorted(aws_regions()), n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(near)}?)" if near else ""
    return f"{value!r} is not an AWS Region{hint}; botocore's endpoint data lists {len(aws_regions())} Regions"


class _S3Storage(Protocol):
    @property
    def region(self) -> str: ...


class StackView(Protocol):
    """What these checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def region(self) -> str: ...
    @property
    def kv_cache(self) -> KvCacheConfig: ...
    @property
    def endpoints(self) -> Sequence[Any]: ...


def _regions_exist(cfg: StackView) -> Iterator[ConfigIssue]:
    if (problem := region_problem(cfg.region)) is not None:
        yield ConfigIssue("aws:region", problem)
    for i, ep in enumerate(cfg.endpoints):
        spec = ep.spec_dict()
        region = ((spec.get("modelSourceConfig") or {}).get("s3Storage") or {}).get("region")
        if isinstance(region, str) and (problem := region_problem(region)) is not None:
            yield ConfigIssue(join_path("endpoints", i, "spec", "modelSourceConfig", "s3Storage", "region"), problem)


def _node_type_offered(cfg: StackView) -> Iterator[ConfigIssue]:
    kv = cfg.kv_cache
    if not kv.creates_redis:
        return
    offered = elasticache_node_types(cfg.region)
    node_type = kv.redis.node_type
    if not offered or node_type in offered:
        return  # a Region cfn-lint has no table for is refused by _regions_exist or is cfn-lint's gap, not ours
    anywhere = node_type in frozenset().union(*_node_type_table().values())
    near = difflib.get_close_matches(node_type, sorted(offered), n=3, cutoff=0.7)
    why = f"ElastiCache offers it elsewhere, not in {cfg.region}" if anywhere else "no such ElastiCache node type"
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    yield ConfigIssue(
        "kvCache.redis.nodeType",
        f"{node_type}: {why}{hint} ({len(offered)} node types in {cfg.region}, e.g. "
        f"{', '.join(sorted(t for t in offered if t.startswith('cache.r7g.'))[:3]) or sorted(offered)[0]}; "
        "cfn-lint's ElastiCache node-type table)",
    )


def _engine_matches_image(cfg: StackView) -> Iterator[ConfigIssue]:
    for i, ep in enumerate(cfg.endpoints):
        image = ((ep.spec_dict().get("worker") or {}).get("image")) if ep.kind == "InferenceEndpointConfig" else None
        if not isinstance(image, str):
            continue
        why = engine_image_mismatch(ep.engine, image)
        if why:
            yield ConfigIssue(join_path("endpoints", i, "engine"), why)


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (
    _regions_exist,
    _node_type_offered,
    _engine_matches_image,
)
