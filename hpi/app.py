"""The ``hpi`` parser tree and dispatch: find the project, then run the chosen tool's ``main(argv)``.

Each subcommand's options are the tool's own: hpi calls the tool's ``main`` once with argparse's ``parse_args``
stopped at its first call, takes the parser the tool built, and grafts it under ``hpi <name>`` (argparse
``parents=``) — so ``hpi preview --help`` and the completion scripts show exactly the options of the tool's own
parser, and no option is written twice. hpi then validates the whole command line with that tree and hands the
subcommand's arguments to the tool's ``main`` unchanged; the tool's exit code (0 holds, 1 refused, 2 bad input)
is hpi's. Only the chosen tool is imported (``hpi --help`` imports none; ``hpi completion`` imports them all).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console

from hpi.commands import BY_PATH, COMMANDS, GROUPS, Command
from hpi.project import NoProject, enter, find_project

EXIT_INPUT = 2  # as tools.report.cli.EXIT_INPUT: hpi cannot import the project's tools before it has found the project
SHELLS = ("bash", "zsh", "tcsh")
COMPLETION = ("completion",)

Main = Callable[..., Any]


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


class _Parsed(Exception):
    """Raised from a tool's parse_args with the parser it was called on."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def tool_parser(main: Main) -> argparse.ArgumentParser:
    """The parser ``main`` builds, taken at its ``parse_args`` call (so the tool itself never runs)."""

    def stop(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        raise _Parsed(self)

    saved = {name: getattr(argparse.ArgumentParser, name) for name in ("parse_args", "parse_known_args")}
    for name in saved:
        setattr(argparse.ArgumentParser, name, stop)
    try:
        main([])
    except _Parsed as parsed:
        return parsed.parser
    finally:
        for name, method in saved.items():
            setattr(argparse.ArgumentParser, name, method)
    raise TypeError(f"{main.__module__}.main returned without parsing its arguments (mark it parser=False)")


class MissingTool(LookupError):
    """The project checkout has no module for this subcommand (e.g. an older clone without tools/verify)."""


def load_main(command: Command) -> Main:
    """``command.module``'s ``main`` (a package's from the package, else from its ``__main__``)."""
    if importlib.util.find_spec(command.module) is None:
        raise MissingTool(
            f"hpi {command.name}: this checkout of the project has no {command.module} "
            f"({command.module.replace('.', '/')}/ or .py); update the clone to a version that has it"
        )
    module = importlib.import_module(command.module)
    main = getattr(module, "main", None)
    if main is None and importlib.util.find_spec(f"{command.module}.__main__") is not None:
        main = getattr(importlib.import_module(f"{command.module}.__main__"), "main", None)
    if main is None:
        raise MissingTool(f"hpi {command.name}: {command.module} has no main(argv)")
    return main


def build_parser(options: dict[tuple[str, ...], argparse.ArgumentParser] | None = None) -> argparse.ArgumentParser:
    """The whole tree; a subcommand in ``options`` gets that tool parser's options, the others only their help."""
    options = options or {}
    top = argparse.ArgumentParser(
        prog="hpi",
        description="hyperpod-inference: LLM inference on SageMaker HyperPod, one command for every tool.",
        epilog="Run inside the project (hpi walks up to Pulumi.yaml) or pass --cwd DIR. Exit codes: 0 holds, "
        "1 a check refused, 2 bad input. `hpi <command> --help` shows the command's options.",
    )
    top.add_argument(
        "--cwd", metavar="DIR", help="run in the project at DIR (default: walk up from here to Pulumi.yaml)"
    )
    commands = top.add_subparsers(title="commands", metavar="COMMAND", dest="hpi_command", required=True)
    groups: dict[str, argparse._SubParsersAction[argparse.ArgumentParser]] = {}
    for command in COMMANDS:
        where = commands
        if len(command.path) == 2:
            group = command.path[0]
            if group not in groups:
                parent = commands.add_parser(group, help=GROUPS[group], description=GROUPS[group])
                groups[group] = parent.add_subparsers(
                    title=f"{group} commands", metavar="COMMAND", dest=f"hpi_{group}", required=True
                )
            where = groups[group]
        _add(where, command, options.get(command.path))
    completion = commands.add_parser(
        "completion", help='print a shell completion script (bash: eval "$(hpi completion bash)")'
    )
    completion.add_argument("shell", choices=SHELLS)
    return top


def _add(
    where: argparse._SubParsersAction[argparse.ArgumentParser],
    command: Command,
    tool: argparse.ArgumentParser | None,
) -> None:
    name = command.path[-1]
    if tool is None:
        where.add_parser(name, help=command.help, description=command.help)
        return
    where.add_parser(
        name,
        help=command.help,
        parents=[tool],
        add_help=False,  # the tool's parser brings its own -h
        description=tool.description,
        epilog=tool.epilog,
        formatter_class=tool.formatter_class,
    )


def _select(argv: Sequence[str]) -> tuple[str | None, tuple[str, ...], int]:
    """(--cwd, the subcommand's path, index of its first argument) read ahead of argparse."""
    cwd: str | None = None
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "--cwd" and i + 1 < len(argv):
            cwd, i = argv[i + 1], i + 2
        elif argv[i].startswith("--cwd="):
            cwd, i = argv[i].partition("=")[2], i + 1
        else:
            return cwd, (), i  # -h / an unknown option: argparse answers it
    path: tuple[str, ...] = ()
    while i < len(argv) and not argv[i].startswith("-"):
        path += (argv[i],)
        i += 1
        if path in BY_PATH or path == COMPLETION or path[0] not in GROUPS:
            break
    return cwd, path, i


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cwd, path, start = _select(argv)
    command = BY_PATH.get(path)
    if command is None and path != COMPLETION:
        build_parser().parse_args(argv)  # help, or argparse's error naming the choices (exit 2)
        return EXIT_INPUT  # unreachable: a known command needs a subcommand argparse would have asked for
    try:
        enter(find_project(Path(cwd) if cwd else Path(os.getcwd())))
    except NoProject as err:
        _stderr().print(f"[bold red]hpi:[/] {err}", markup=True)
        return EXIT_INPUT
    if command is None:
        return _completion(argv)
    try:
        tool = load_main(command)
    except MissingTool as err:
        _stderr().print(f"[bold red]error:[/] {err}")
        return EXIT_INPUT
    options = {command.path: tool_parser(tool)} if command.parser else {}
    build_parser(options).parse_args(argv)  # --help and bad options, named as `hpi <command>`
    rest = argv[start:]
    code = tool(rest) if command.argv else tool()
    return int(code or 0)


def full_parser() -> argparse.ArgumentParser:
    """Every subcommand with its tool's options (imports every tool the checkout has)."""
    options = {}
    for command in COMMANDS:
        if not command.parser:
            continue
        try:
            options[command.path] = tool_parser(load_main(command))
        except MissingTool:
            continue
    return build_parser(options)


def _completion(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    import shtab

    print(shtab.complete(full_parser(), shell=args.shell))
    return 0
