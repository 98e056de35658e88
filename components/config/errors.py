"""The error a stack config raises when it is invalid (its own module: the loaders of both stack shapes raise it)."""

from __future__ import annotations

from collections.abc import Iterable

import pulumi

from .base import ConfigIssue


class ConfigError(pulumi.RunError):
    """The stack config is invalid. Raised before any resource is registered.

    A ``RunError`` is printed by the Pulumi CLI without a stack trace; ``issues`` keeps the
    individual problems for tools and tests.
    """

    def __init__(self, issues: Iterable[ConfigIssue]) -> None:
        self.issues = list(issues)
        lines = "\n".join(f"  {issue.render()}" for issue in self.issues)
        super().__init__(f"invalid stack config ({len(self.issues)} problem(s)):\n{lines}")
