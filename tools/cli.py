"""The one error path of every command line: the same stack arguments, ``file:line`` messages, exit 2, no traceback.

Every tool that reads a stack takes ``--stack NAME`` and ``--stack-file FILE`` (:func:`add_stack_arguments`) and
resolves them with :func:`stack_file`; a problem with the input (a stack that does not exist, a stack file that is
not one, a JSON input that does not parse) is a :class:`InputError` or a
:class:`~components.config.stackfile.StackFileError`, printed by :func:`print_input_error` and returned as exit 2.
Modules that are libraries call :func:`not_a_command` under ``if __name__ == "__main__"`` so that
``python -m tools.<module>`` says what to run instead and exits 2 rather than printing nothing and exiting 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, NoReturn

from components.config.stackfile import StackFileError, list_stacks, stack_path

EXIT_INPUT = 2


class InputError(ValueError):
    """A command-line input that cannot be used; the message names the argument or ``file:line``."""


def add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    """``--stack`` and ``--stack-file``, the same on every command line."""
    parser.add_argument("--stack", required=True, help="stack name: stacks/Pulumi.<stack>.yaml")
    parser.add_argument(
        "--stack-file", type=Path, help="read the config from this file instead of stacks/Pulumi.<stack>.yaml"
    )


def stack_file(stack: str, given: Path | None) -> Path:
    """The stack file to read: ``given``, else ``stacks/Pulumi.<stack>.yaml`` (which must exist)."""
    if given is not None:
        return given
    path = stack_path(stack)
    if not path.exists():
        known = ", ".join(list_stacks()) or "(none)"
        raise InputError(f"no stack {stack!r}: {path} does not exist; stacks in stacks/: {known}")
    return path


def read_json(path: Path, flag: str) -> Any:
    """A JSON input file; :class:`InputError` naming ``flag``, the file and the line of a syntax error."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{flag} {path}: no such file") from None
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}:{err.colno}: {flag}: not JSON ({err.msg})") from None


def input_problems(err: InputError | StackFileError) -> list[str]:
    return list(err.problems) if isinstance(err, StackFileError) else [str(err)]


def print_input_error(err: InputError | StackFileError, heading: str = "error") -> int:
    """Print every problem of ``err`` (stdout, like the rest of the tool's output) and return exit 2."""
    print(f"{heading}:")
    for problem in input_problems(err):
        print(f"  {problem}")
    return EXIT_INPUT


def not_a_command(module: str, instead: str) -> NoReturn:
    """For ``python -m <module>`` of a library module: say what to run instead, exit 2."""
    print(f"{module} is a library module, not a command line; run {instead}", file=sys.stderr)
    sys.exit(EXIT_INPUT)


if __name__ == "__main__":
    not_a_command("tools.cli", "python -m tools.preview --stack <name> (or another tool under tools/)")
