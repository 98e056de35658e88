"""The terminal every command-line tool prints to: full width when piped, folding on a terminal."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from rich.console import Console

# Piped output (CI logs, `| less`, the job summary) gets this width instead of rich's 80 columns: wide enough
# for the tables' numbers on one line, narrow enough to read; longer cells and lines wrap (tables fold their
# cells; a policy finding or a plan diff line stays one line, so grep finds it whole), and ``--json`` carries
# every text in full. On a terminal, the terminal's width.
PIPED_WIDTH = 160


def make_console() -> Console:
    piped = not sys.stdout.isatty()
    return Console(highlight=False, soft_wrap=False, width=PIPED_WIDTH if piped else None)


@contextlib.contextmanager
def progress(first: str) -> Iterator[Callable[[str], None]]:
    """A spinner with what the command is doing, on stderr and only when stderr is a terminal: long work (a large
    stack runs for minutes) shows it is alive, while piped or captured output (CI logs, ``--json | jq``) carries
    not one byte of it. Yields ``step(text)`` to say what comes next."""
    if not sys.stderr.isatty():
        yield lambda _text: None
        return
    status = Console(stderr=True).status(first)
    with status:
        yield status.update


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.report.console", "any tool under tools/ (python -m tools.cli.preview --stack <name>)")
