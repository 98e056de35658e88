"""The third outcome of the checks, as the offline tools print it: what cannot be checked offline.

Every check either holds, refuses (a config error, exit 2, or a mandatory policy result, exit 1), or cannot be
decided offline: an advisory naming what decides it (``tools.preflight.regional``, the cluster). ``tools.cli.preview`` prints
the advisories next to the capacity table and the rehearsal, ``tools.rehearse`` after its result; both carry them
in their JSON as ``advisories``. They never change an exit code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from components.config import StackConfig
from components.config.base import ConfigAdvisory
from components.config.validation import run_advisories


@dataclass(frozen=True)
class AdvisoryReport:
    renderable: RenderableType
    data: list[dict[str, Any]]


def advisories_of(cfg: StackConfig) -> list[ConfigAdvisory]:
    """Every advisory of a valid regional config (``components.config.validation.run_advisories``)."""
    return run_advisories(cfg)


def advisory_report(advisories: Sequence[ConfigAdvisory]) -> AdvisoryReport:
    data = [{"key": a.path, "rule": a.rule, "message": a.message, "checkedBy": a.checked_by} for a in advisories]
    if not advisories:
        return AdvisoryReport(Text("advisories: every check was decided offline", style="green"), data)
    table = Table(
        title=f"cannot be checked offline: {len(advisories)} advisor{'y' if len(advisories) == 1 else 'ies'} "
        "(the exit code does not depend on them)"
    )
    table.add_column("key", overflow="fold")
    table.add_column("why", overflow="fold")
    table.add_column("checked by", overflow="fold")
    for a in advisories:
        table.add_row(a.render().split(": ", 1)[0], f"{a.message} [{a.rule}]", a.checked_by)
    return AdvisoryReport(table, data)


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.report.advisories", "python -m tools.cli.preview --stack <name> (it prints the advisories)")
