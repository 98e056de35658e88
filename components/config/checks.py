"""Cross-section checks: rules that need more than one key of the stack config.

Each check is a function ``(cfg) -> Iterable[ConfigIssue]`` registered with ``@cross_check``; they run after every
section has parsed, so all problems are reported together. ``cfg`` is typed by the module that defines the check as
its own ``StackView`` protocol: the attributes of the stack it reads, typed by the sections below it (or by smaller
protocols of the shapes it reads). So a section module never imports the stack that aggregates it, and the config
layer has no import circle (``tests/test_import_graph.py``); ``components/config/stack.py`` has mypy prove that
``StackConfig`` provides every view.

What a check cannot settle offline is its third outcome: a function ``(cfg) -> Iterable[ConfigAdvisory]`` registered
with ``@advisory_check``, run by the offline tools once the config is valid (:func:`run_advisories`), never an
error and never taken as "holds".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .base import ConfigAdvisory, ConfigIssue

Check = Callable[..., Iterable[ConfigIssue]]
Advise = Callable[..., Iterable[ConfigAdvisory]]
CHECKS: list[Check] = []
ADVISORIES: list[Advise] = []


def cross_check(fn: Check) -> Check:
    """Register ``fn`` as a cross-section check."""
    CHECKS.append(fn)
    return fn


def advisory_check(fn: Advise) -> Advise:
    """Register ``fn`` as a source of advisories (what cannot be known offline)."""
    ADVISORIES.append(fn)
    return fn


def run_checks(cfg: Any) -> list[ConfigIssue]:
    """Every issue of a parsed ``StackConfig`` (typed ``Any``: the registry sits below the stack)."""
    issues: list[ConfigIssue] = []
    for check in CHECKS:
        issues.extend(check(cfg))
    return issues


def run_advisories(cfg: Any) -> list[ConfigAdvisory]:
    """Every advisory of a valid config, in registration order, without repeats."""
    out: list[ConfigAdvisory] = []
    for advise in ADVISORIES:
        out.extend(a for a in advise(cfg) if a not in out)
    return out
