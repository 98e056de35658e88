"""Cross-section checks: rules that need more than one key of the stack config.

Each check is a function ``(StackConfig) -> Iterable[ConfigIssue]`` registered with ``@cross_check``.
They run after every section has parsed, so all problems are reported together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .base import ConfigIssue

if TYPE_CHECKING:
    from .stack import StackConfig

Check = Callable[["StackConfig"], Iterable[ConfigIssue]]
CHECKS: list[Check] = []


def cross_check(fn: Check) -> Check:
    """Register ``fn`` as a cross-section check."""
    CHECKS.append(fn)
    return fn


def run_checks(cfg: StackConfig) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for check in CHECKS:
        issues.extend(check(cfg))
    return issues
