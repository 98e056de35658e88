"""Every cross-section rule of the stack config, called explicitly, in the order they report.

The loader runs :func:`config_issues` once the sections have parsed, so every problem is reported together with its
stack key; the offline tools run :func:`run_advisories` on a valid config. Typed by :class:`StackConfig`: mypy checks
here that the stack provides what each section's checks read (their ``StackView`` protocols).
"""

from __future__ import annotations

from . import (
    access,
    capacity,
    closed_sets,
    cluster,
    endpoints,
    gateway,
    governance,
    health_checks,
    ingress,
    kvcache,
    network,
    node_software,
    observability,
    operator,
    stack,
    vpc_endpoints,
)
from .base import ConfigAdvisory, ConfigIssue
from .checks import Advise, Check
from .stack import StackConfig

CHECKS: tuple[Check[StackConfig], ...] = (
    *health_checks.CHECKS,
    *kvcache.CHECKS,
    *vpc_endpoints.CHECKS,
    *network.CHECKS,
    *cluster.CHECKS,
    *node_software.CHECKS,
    *operator.CHECKS,
    *endpoints.CHECKS,
    *gateway.CHECKS,
    *capacity.CHECKS,
    *closed_sets.CHECKS,
    *governance.CHECKS,
    *ingress.CHECKS,
    *observability.CHECKS,
    *stack.CHECKS,
    *access.CHECKS,
)
ADVISORIES: tuple[Advise[StackConfig], ...] = (
    *node_software.ADVISORIES,
    *operator.ADVISORIES,
    *endpoints.ADVISORIES,
    *gateway.ADVISORIES,
    *capacity.ADVISORIES,
    *governance.ADVISORIES,
    *ingress.ADVISORIES,
    *access.ADVISORIES,
)


def config_issues(cfg: StackConfig) -> list[ConfigIssue]:
    """Every cross-section issue of a parsed config."""
    return [issue for check in CHECKS for issue in check(cfg)]


def run_advisories(cfg: StackConfig) -> list[ConfigAdvisory]:
    """Every advisory of a valid config, in order, without repeats."""
    out: list[ConfigAdvisory] = []
    for advise in ADVISORIES:
        out.extend(a for a in advise(cfg) if a not in out)
    return out
