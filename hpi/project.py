"""Which project ``hpi`` works on: like ``pulumi``, the nearest directory at or above the start with a Pulumi.yaml."""

from __future__ import annotations

import os
from pathlib import Path

MARKER = "Pulumi.yaml"


class NoProject(LookupError):
    """No Pulumi.yaml at or above the start directory (or in ``--cwd``)."""


def find_project(start: Path) -> Path:
    """The nearest directory at or above ``start`` that holds a Pulumi.yaml; :class:`NoProject` when none does."""
    start = start.resolve()
    if not start.is_dir():
        raise NoProject(f"--cwd {start}: no such directory")
    for directory in (start, *start.parents):
        if (directory / MARKER).is_file():
            return directory
    raise NoProject(
        f"no {MARKER} in {start} or any directory above it: run hpi inside the hyperpod-inference project, "
        f"or point at one with `hpi --cwd DIR ...`"
    )


def enter(root: Path) -> None:
    """Work in ``root``: the tools read stacks/, policies/ and vendor/ relative to it (they are imported from the
    installed project: ``-e .`` in requirements.txt)."""
    os.chdir(root)
