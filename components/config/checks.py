"""The shape of a cross-section check: a pure function of the validated stack config.

A check ``(cfg) -> Iterable[ConfigIssue]`` reads the stack through its module's ``StackView`` protocol: the attributes
it reads, typed by the sections below it, so a section never imports the stack that aggregates it (no import circle:
the import contracts of pyproject.toml). Each section lists its checks in ``CHECKS`` and what it cannot settle
offline (the third outcome, never an error and never "holds") in ``ADVISORIES``; ``components/config/validation.py``
calls them all, typed by ``StackConfig``, so mypy proves there that the stack provides every view.

What a check knows besides the stack file (today's date, what ``tools.verify`` observed) is ``cfg.context``
(``components/config/context.py``), read once by the loader.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from .base import ConfigAdvisory, ConfigIssue

View = TypeVar("View")

Check = Callable[[View], Iterable[ConfigIssue]]
Advise = Callable[[View], Iterable[ConfigAdvisory]]
