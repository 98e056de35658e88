"""Every command line README.md and docs/*.md tell a reader to run exists and runs (issue 37, item 6).

The commands are read from the Markdown itself (fenced blocks and inline code alike), never from a list kept
here: a ``python -m MODULE`` / ``venv/bin/python -m MODULE`` / ``python path/to/script.py`` the docs name must
answer ``--help`` with exit 0 and a usage line, and every ``--option`` the docs write after it must appear in
that help, so a renamed or removed option fails here rather than in a reader's shell. ``venv/bin/<tool>``
commands (ruff, mypy, pip) answer ``--help`` too. What cannot run on this machine is left out and named:
``pulumi``, ``aws``, ``kubectl`` and ``git`` (no CLI, no account; docs/first-deploy.md lists them).
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache

import pytest

from hpi.commands import COMMANDS
from tests.cli_runner import run_module
from tools.plan.harness import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PROJECT_PACKAGES = ("tools", "components", "policies", "tests", "bench")

_PLACEHOLDER = re.compile(r"<[^<>\s]*>")  # <stack>, <name>: a placeholder, not a redirection
_PYTHON = re.compile(
    r"(?<![\w/.-])(?:venv/bin/)?python3?[ \t]+(?:-m[ \t]+(?P<module>[A-Za-z_][\w.]*[\w])|(?P<script>[\w/]+\.py))"
    r"(?P<args>[^\n`|&;>#]*)"
)
_VENV_TOOL = re.compile(r"(?<![\w/.-])venv/bin/(?P<tool>(?!python|hpi\b)[a-z][\w-]*)")
# `hpi preview --stack X`, `venv/bin/hpi generate crd-models`: the subcommand is the longest name hpi/commands.py has
_HPI = re.compile(r"(?<![\w/.-])(?:venv/bin/)?hpi(?P<args>(?:[ \t]+[^\s`|&;>#]+)*)")
_HPI_NAMES = sorted((c.name for c in COMMANDS), key=len, reverse=True)
_OPTION = re.compile(r"(?<![\w-])--[a-z][\w-]*")


@cache
def documented() -> dict[str, dict[str, set[str]]]:
    """``{command: {option: {"file:line", ...}}}`` with ``""`` standing for the command itself."""
    found: dict[str, dict[str, set[str]]] = {}
    for doc in DOCS:
        for number, raw in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            line = _PLACEHOLDER.sub("X", raw)
            where = f"{doc.relative_to(ROOT)}:{number}"
            for m in _PYTHON.finditer(line):
                command = m["module"] or m["script"]
                options = found.setdefault(command, {})
                options.setdefault("", set()).add(where)
                for option in _OPTION.findall(m["args"]):
                    options.setdefault(option, set()).add(where)
            for m in _HPI.finditer(line):
                words = m["args"].split()
                name = next((n for n in _HPI_NAMES if words[: len(n.split())] == n.split()), None)
                command = f"hpi {name}" if name else "hpi"
                options = found.setdefault(command, {})
                options.setdefault("", set()).add(where)
                for option in _OPTION.findall(m["args"]):
                    options.setdefault(option, set()).add(where)
            for m in _VENV_TOOL.finditer(line):
                found.setdefault(f"venv/bin/{m['tool']}", {}).setdefault("", set()).add(where)
    return found


def _help(command: str) -> subprocess.CompletedProcess[str]:
    if command == "hpi" or command.startswith("hpi "):
        return run_module("hpi", *command.split()[1:], "--help")  # in this process, as `python -m hpi`
    if command.startswith("venv/bin/"):
        args = [str(ROOT / command), "--help"]
    elif command.endswith(".py"):
        args = [sys.executable, command, "--help"]
    elif command.split(".", maxsplit=1)[0] in PROJECT_PACKAGES:
        return run_module(command, "--help")  # in this process: the same code path as `python -m`
    else:
        args = [sys.executable, "-m", command, "--help"]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False, timeout=120)


def test_the_docs_name_the_commands_a_reader_runs() -> None:
    """The extraction finds what the README's walkthrough uses (else every test below would pass vacuously)."""
    commands = documented()
    for expected in ("hpi preview", "hpi rehearse", "hpi preflight", "hpi verify", "hpi fetch crds", "pytest"):
        assert expected in commands, sorted(commands)
    assert {"--stack", "--json", "--diff", "--out", "--critical-path", "--graph"} <= set(commands["hpi preview"])
    assert "venv/bin/ruff" in commands and "venv/bin/mypy" in commands


SOURCED = {"venv/bin/activate"}  # `source venv/bin/activate`: read by the shell, not run


def test_sourced_files_exist() -> None:
    for command in sorted(SOURCED & set(documented())):
        assert (ROOT / command).is_file(), f"{command} (named in {sorted(documented()[command][''])}) is missing"


@pytest.mark.parametrize("command", sorted(set(documented()) - SOURCED))
def test_documented_command_answers_help_with_every_documented_option(command: str) -> None:
    options = documented()[command]
    result = _help(command)
    both = result.stdout + result.stderr
    where = ", ".join(sorted(options[""]))
    assert result.returncode == 0, f"{command} --help (named in {where}) exited {result.returncode}:\n{both}"
    assert "Traceback (most recent call last)" not in both
    assert re.search(r"usage", both, re.IGNORECASE), f"{command} --help printed no usage ({where}):\n{both}"
    unknown = {o: sorted(w) for o, w in options.items() if o and o not in both}
    assert unknown == {}, f"{command}: options the docs use that its --help does not offer: {unknown}"
