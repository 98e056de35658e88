"""Replacement rules: what replaces a resource, per type, from ``policies/replacement_rules.json``.

The data is written by ``python -m tools.generate.replacement_rules --write`` (the generator documents where each
type's rules come from) and read here, once per process, lazily. ``tools.plan.diff`` judges every changed
property with :func:`rules_for`; components read the paths they must mirror in ``replace_on_changes``.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from policies.resource_types import DYNAMIC

RULES_FILE = Path(__file__).with_name("replacement_rules.json")

Path_ = tuple[str, ...]

# --- evaluation -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rules:
    """The replacement rules of one type: ``replace`` and ``may_replace`` paths, what any other change is."""

    key: str
    source: str
    replace: tuple[Path_, ...]
    may_replace: tuple[tuple[Path_, str], ...]
    update: tuple[Path_, ...]
    ignore: tuple[Path_, ...]
    other: str  # "update" | "may-replace" | "ignore"

    def classify(self, path: tuple[str | int, ...]) -> tuple[str, str]:
        """(``replace`` | ``may-replace`` | ``update`` | ``ignore``, why) for a changed property path."""
        parts = tuple(str(p) for p in path if not isinstance(p, int))
        for rule in self.replace:
            if _covers(rule, parts):
                return "replace", self.source
        for rule, why in self.may_replace:
            if _covers(rule, parts):
                return "may-replace", why
        for rule in self.ignore:
            if _covers(rule, parts):
                return "ignore", self.source
        for rule in self.update:
            if _covers(rule, parts):
                return "update", self.source
        if self.other == "may-replace":
            return "may-replace", f"no source lists how a change of this property is applied ({self.source})"
        return self.other, self.source


def _covers(rule: Path_, path: Path_) -> bool:
    """A rule path covers ``path`` when one is a prefix of the other (case-insensitively, ``*`` any key).

    Prefix both ways: a changed ``vpcConfig.subnets`` is inside create-only ``vpcConfig``, and a changed
    ``orchestrator`` object contains create-only ``orchestrator.eks``.
    """
    return all(r == "*" or r.lower() == p.lower() for r, p in zip(rule, path, strict=False))


def _split(path: str) -> Path_:
    return tuple(p for p in path.split(".") if p)


@cache
def load_rules() -> dict[str, Any]:
    """The rule data (read once per process)."""
    data: dict[str, Any] = json.loads(RULES_FILE.read_text(encoding="utf-8"))
    return data


@cache
def _compiled(key: str) -> Rules | None:
    entry = load_rules()["types"].get(key)
    if entry is None:
        return None
    return Rules(
        key=key,
        source=entry["source"],
        replace=tuple(_split(p) for p in entry.get("replace", [])),
        may_replace=tuple((_split(m["path"]), m["why"]) for m in entry.get("mayReplace", [])),
        update=tuple(_split(p) for p in entry.get("update", [])),
        ignore=tuple(_split(p) for p in entry.get("ignore", [])),
        other=entry["other"],
    )


def rule_key(typ: str, inputs: dict[str, Any] | None = None) -> str:
    """The data's key of a registration: its type token; a dynamic resource adds ``#<resourceKind>``."""
    if typ == DYNAMIC:
        return f"{typ}#{(inputs or {}).get('resourceKind') or '?'}"
    return typ


def rules_for(typ: str, inputs: dict[str, Any] | None = None) -> Rules | None:
    """The rules of a type (None when the data has none: every change then *may replace*)."""
    key = rule_key(typ, inputs)
    found = _compiled(key)
    if found is not None:
        return found
    for pattern in load_rules().get("globs", {}):
        if fnmatch.fnmatchcase(key, pattern):
            return _compiled_glob(pattern)
    return None


@cache
def _compiled_glob(pattern: str) -> Rules:
    entry = load_rules()["globs"][pattern]
    return Rules(pattern, entry["source"], (), (), (), (), entry["other"])


def has_rules(typ: str, inputs: dict[str, Any] | None = None) -> bool:
    return rules_for(typ, inputs) is not None


def replace_paths(token: str) -> list[str]:
    """The property paths the data lists as replacing ``token`` beyond a Kubernetes object's name and namespace."""
    replace: list[str] = load_rules()["types"][token]["replace"]
    return [p for p in replace if p not in ("metadata.name", "metadata.namespace")]
