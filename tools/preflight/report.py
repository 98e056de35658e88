"""How the preflight tools report (``tools.preflight.regional`` and ``tools.preflight.global_stack`` share it): the result table,
the error path, the exit codes."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from tools.preflight.checks import CheckResult

EXIT_OK, EXIT_FAIL, EXIT_CONFIG = 0, 1, 2
STYLES = {"PASS": "green", "FAIL": "bold red", "WARN": "yellow", "SKIP": "dim"}
NO_CREDENTIALS = (
    "no AWS credentials found: configure them (`aws configure`, `aws sso login`, AWS_PROFILE or "
    "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) or pass --profile, then rerun"
)


def render(results: list[CheckResult], console: Console, title: str) -> None:
    table = Table(title=title, show_lines=False)
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    table.add_column("what to do", overflow="fold")
    for r in results:
        table.add_row(r.check, f"[{STYLES[r.status]}]{r.status}[/]", r.detail, r.action)
    console.print(table)
    counts = {s: sum(r.status == s for r in results) for s in STYLES}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items()), markup=False)


def print_problems(console: Console, heading: str, stack: str, problems: list[str]) -> int:
    """The error path of the preflight tools: every problem on its own line, exit 2."""
    console.print(f"[bold red]{heading}[/] in stack {stack}:")
    for problem in problems:
        console.print(f"  {problem}", markup=False)
    return EXIT_CONFIG


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command(
        "tools.preflight.report", "python -m tools.preflight.regional --stack <name> (or tools.preflight.global_stack)"
    )
