"""Cross-section checks: rules that need more than one key of the stack config.

Each check is a function ``(StackConfig) -> Iterable[ConfigIssue]`` registered with ``@cross_check``.
They run after every section has parsed, so all problems are reported together.

What a check cannot settle offline is its third outcome: a function ``(StackConfig) -> Iterable[ConfigAdvisory]``
registered with ``@advisory_check``, run by the offline tools once the config is valid (:func:`run_advisories`),
never an error and never taken as "holds".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .base import ConfigAdvisory, ConfigIssue

if TYPE_CHECKING:
    from .stack import StackConfig

Check = Callable[["StackConfig"], Iterable[ConfigIssue]]
Advise = Callable[["StackConfig"], Iterable[ConfigAdvisory]]
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


def run_checks(cfg: StackConfig) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for check in CHECKS:
        issues.extend(check(cfg))
    return issues


def run_advisories(cfg: StackConfig) -> list[ConfigAdvisory]:
    """Every advisory of a valid config, in registration order, without repeats."""
    out: list[ConfigAdvisory] = []
    for advise in ADVISORIES:
        out.extend(a for a in advise(cfg) if a not in out)
    return out
