"""Keep the unverified facts of the code and docs and the pre-deploy checklist in step: ``python -m tools.generate.unconfirmed``.

Whatever the code or the docs state without a source that confirms it is marked where it is stated, in exactly
one form: the word in capitals followed by an id in brackets, e.g. ``... the label names are UNCONFIRMED
[promql-labels]``. Every id has one row in the checklist of ``docs/first-deploy.md`` (``| `promql-labels` | what
to verify | how |``), and every row is marked somewhere. Any other spelling (lower case, "not confirmed", no id) is
an error, so a new unverified fact cannot miss the checklist.

The command lists every marker by id and exits 1 with one line per problem (file, line, and what to change);
``tests/test_unconfirmed.py`` runs the same check.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tools.report import cli

ROOT = Path(__file__).resolve().parents[2]
CHECKLIST = Path("docs/first-deploy.md")
CHECKLIST_HEADING = "## Unverified facts: the checklist"
# Files that talk about the markers rather than carry them.
EXEMPT = frozenset(
    {
        CHECKLIST.as_posix(),
        "tools/generate/unconfirmed.py",
        "tests/test_unconfirmed.py",
        "tools/unconfirmed.py",
        "tests/test_moved_commands.py",
        "hpi/commands.py",
        "tests/test_hpi.py",
    }
)
TEXT_SUFFIXES = frozenset({".md", ".py", ".yaml", ".yml", ".json", ".sh", ".toml", ".txt", ".cfg", ""})

# Every spelling that claims something is not verified (words split over a line break included); a module or file
# name (`tools.generate.unconfirmed`, `tools/generate/unconfirmed.py`) names this tool and claims nothing.
WORD = re.compile(r"(?<![./])\b(?:un|not\s+)confirmed\b", re.IGNORECASE)
MARKER = re.compile(r"UNCONFIRMED\s+\[([a-z0-9]+(?:-[a-z0-9]+)*)\]")  # a line break may sit between
ROW = re.compile(r"^\| `([a-z0-9]+(?:-[a-z0-9]+)*)` \|", re.MULTILINE)
HOW_TO = (
    "mark it `UNCONFIRMED [<id>]` (capitals, then a lower-case id in brackets) and give <id> a row "
    f"`| `<id>` | what to verify | how |` in the table under '{CHECKLIST_HEADING}' of {CHECKLIST}"
)


@dataclass(frozen=True)
class Marker:
    path: str
    line: int
    id: str | None  # None: a spelling without an id
    text: str  # the marker's line, stripped

    def where(self) -> str:
        return f"{self.path}:{self.line}"


_NOT_SOURCES = frozenset({".git", "venv", "vendor", "mutants", "__pycache__", ".mypy_cache", ".ruff_cache"})


def repository_files(root: Path = ROOT) -> list[str]:
    """Tracked and new (not ignored) files, as git sees them; outside a git checkout, every file but the venv,
    vendored data and caches."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return sorted(
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and not _NOT_SOURCES.intersection(p.relative_to(root).parts)
        )
    return sorted(set(done.stdout.splitlines()))


def scan_text(path: str, text: str) -> list[Marker]:
    """Every marker (with its id) and every other spelling of the words (id None) in one file's text."""
    out = []
    for m in WORD.finditer(text):
        tag = MARKER.match(text, m.start())
        line_no = text.count("\n", 0, m.start()) + 1
        line = text.splitlines()[line_no - 1].strip()
        out.append(Marker(path, line_no, tag.group(1) if tag else None, line))
    return out


def scan(root: Path = ROOT, files: Iterable[str] | None = None) -> list[Marker]:
    markers: list[Marker] = []
    for name in repository_files(root) if files is None else files:
        if name in EXEMPT or Path(name).suffix not in TEXT_SUFFIXES:
            continue
        path = root / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        markers.extend(scan_text(name, text))
    return markers


def checklist_ids(text: str) -> list[str]:
    """The ids of the checklist table (the rows under CHECKLIST_HEADING, up to the next ``## `` heading)."""
    start = text.find(CHECKLIST_HEADING)
    if start < 0:
        return []
    end = text.find("\n## ", start + len(CHECKLIST_HEADING))
    return ROW.findall(text[start : end if end >= 0 else len(text)])


def problems(markers: list[Marker], ids: list[str]) -> list[str]:
    """One line per problem, each saying what to change."""
    out: list[str] = []
    known = set(ids)
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        out.append(f"{CHECKLIST}: the checklist has `{dup}` more than once; keep one row per id")
    for m in markers:
        if m.id is None:
            out.append(f"{m.where()}: {m.text!r} states something unverified without an id: {HOW_TO}")
        elif m.id not in known:
            out.append(
                f"{m.where()}: UNCONFIRMED [{m.id}] has no checklist entry: add a row "
                f"`| `{m.id}` | what to verify | how |` under '{CHECKLIST_HEADING}' in {CHECKLIST}"
            )
    used = {m.id for m in markers if m.id}
    for stale in sorted(known - used):
        out.append(
            f"{CHECKLIST}: checklist entry `{stale}` is marked nowhere: delete its row, or mark the fact "
            f"UNCONFIRMED [{stale}] where the code or a doc states it"
        )
    return out


def check(root: Path = ROOT) -> tuple[list[Marker], list[str], list[str]]:
    """(markers, checklist ids, problems) of the repository at ``root``."""
    markers = scan(root)
    ids = checklist_ids((root / CHECKLIST).read_text(encoding="utf-8")) if (root / CHECKLIST).is_file() else []
    return markers, ids, problems(markers, ids)


def settled_ids() -> dict[str, list[tuple[str, str]]]:
    """Which checklist ids ``python -m tools.verify`` settled for which stack (``verified/*.json``)."""
    from components.config.observed import ObservationsError, settled_by_stack

    try:
        return settled_by_stack()
    except ObservationsError as err:
        print(f"{err}", file=sys.stderr)
        return {}


def _stacks(seen: list[tuple[str, str]]) -> str:
    return ", ".join(f"{stack} (observed {day} by verify)" for stack, day in seen)


def main(argv: list[str] | None = None) -> int:
    import argparse

    argparse.ArgumentParser(
        prog="python -m tools.generate.unconfirmed",
        description="List every UNCONFIRMED [id] marker with where it is, and check each has a row in "
        f"{CHECKLIST}'s checklist (exit 1 when not).",
    ).parse_args(argv)
    markers, ids, found = check()
    by_id: dict[str, list[Marker]] = {}
    for m in markers:
        by_id.setdefault(m.id or "(no id)", []).append(m)
    settled = settled_ids()
    for key in sorted(by_id):
        where = ", ".join(m.where() for m in by_id[key])
        seen = settled.get(key)
        print(f"{key}: {where}" + (f"; settled for {_stacks(seen)}" if seen else ""))
    print(f"{len(markers)} markers, {len(by_id)} ids, {len(ids)} checklist rows, {len(settled)} settled by verify")
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    cli.run(main)
