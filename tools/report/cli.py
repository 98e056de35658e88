"""The one error path of every command line: the same stack arguments, ``file:line`` messages, exit 2, no traceback.

Every tool that reads a stack takes ``--stack NAME`` and ``--stack-file FILE`` (:func:`add_stack_arguments`) and
resolves them with :func:`stack_file`; a problem with the input (a stack that does not exist, a stack file that is
not one, a JSON input that does not parse) is a :class:`InputError` or a
:class:`~components.config.stackfile.StackFileError`, printed by :func:`print_input_error` and returned as exit 2.
Modules that are libraries call :func:`not_a_command` under ``if __name__ == "__main__"`` so that
``python -m tools.<module>`` says what to run instead and exits 2 rather than printing nothing and exiting 0.

Every command line runs its ``main`` through :func:`run` (``if __name__ == "__main__": cli.run(main)``), so each
survives the same things the same way: a reader that closes the pipe early (``... | head``: a one-line note on
stderr, no ``BrokenPipeError`` traceback), an output path that cannot be written (``--out`` naming a file or a
read-only folder: :func:`output_dir` refuses it before the run, and an ``OSError`` naming a file is the same exit 2
with that file named), an unknown option (argparse's usage line, exit 2). A command that checks a stack ends with
one :func:`verdict` line: ``prod: 184 resources, 0 errors, 3 advisories, converges — exit 0``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if (
    TYPE_CHECKING
):  # imported where used: `cli.run` must not load the config layer (tools.generate.crd_models regenerates it)
    from components.config.stackfile import StackFileError

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
    from components.config.stackfile import list_stacks, stack_path

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
    from components.config.stackfile import StackFileError

    return list(err.problems) if isinstance(err, StackFileError) else [str(err)]


def print_input_error(err: InputError | StackFileError, heading: str = "error") -> int:
    """Print every problem of ``err`` (stdout, like the rest of the tool's output) and return exit 2."""
    print(f"{heading}:")
    for problem in input_problems(err):
        print(f"  {problem}")
    return EXIT_INPUT


def output_dir(path: Path, flag: str = "--out") -> Path:
    """A folder the command may write into: refused (:class:`InputError` naming ``flag``) before any work when it
    is a file, lies under a file, or its nearest existing folder is not writable (probed by creating a temporary
    file there, which also holds for root on a read-only mount)."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{flag} {path}: is a file, not a folder; name a folder (it is created when missing)")
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{flag} {path}: {existing} is a file, so no folder can be created under it")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".hpi-write-probe-")
    except OSError as err:
        raise InputError(
            f"{flag} {path}: cannot write in {existing} ({err.strerror}); name a writable folder"
        ) from None
    os.close(fd)
    os.unlink(probe)
    return path


def verdict(
    stack: str,
    *,
    exit_code: int,
    resources: int | None = None,
    errors: int = 0,
    advisories: int | None = None,
    converges: bool | None = None,
    what: str | None = None,
) -> str:
    """The one closing line: ``prod: 184 resources, 0 errors, 3 advisories, converges — exit 0``."""
    parts = [f"{resources} resources"] if resources is not None else []
    parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    if advisories is not None:
        parts.append(f"{advisories} advisor{'ies' if advisories != 1 else 'y'}")
    if converges is not None:
        parts.append("converges" if converges else "does not converge")
    if what:
        parts.append(what)
    return f"{stack}: {', '.join(parts)} \u2014 exit {exit_code}"


def _quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's final flush does not raise again
    (Python docs, signal module, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a file descriptor (tests capture it)
        pass


def run(main: Callable[[], int]) -> NoReturn:
    """Run a command line's ``main`` and exit with its code; see the module docstring for what it survives."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        print("stdout closed before the output ended (e.g. `| head`); the output is incomplete", file=sys.stderr)
        sys.exit(1)
    except OSError as err:
        if err.filename is None:
            raise
        print(f"error: {err.filename}: {err.strerror or err}", file=sys.stderr)
        sys.exit(EXIT_INPUT)
    sys.exit(code)


def not_a_command(module: str, instead: str) -> NoReturn:
    """For ``python -m <module>`` of a library module: say what to run instead, exit 2."""
    print(f"{module} is a library module, not a command line; run {instead}", file=sys.stderr)
    sys.exit(EXIT_INPUT)


if __name__ == "__main__":
    not_a_command("tools.report.cli", "python -m tools.cli.preview --stack <name> (or another tool under tools/)")
