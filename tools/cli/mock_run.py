"""The common start of a command that runs one stack under the mocks: read the stack file, run the program.

Used by ``hpi capacity`` (tools/cli/capacity.py) and ``hpi policy`` (tools/cli/policy.py); ``tools.cli.preview`` and
``tools.rehearse`` do the same with their own ``--json`` error forms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from components.config import PROJECT
from components.config.stackfile import StackFileError, load_stack_file
from tools.plan.harness import StackRun, run_stack
from tools.report import cli


def environment_of(mapping: dict[str, Any]) -> str:
    env = mapping.get(f"{PROJECT}:environment")
    return env if isinstance(env, str) else "dev"


def mock_run(stack: str, stack_file: Path | None, console: Console) -> tuple[StackRun, dict[str, Any]] | int:
    """The mock run of ``stack`` and its config mapping, or exit 2 after printing what is wrong with the input."""
    try:
        mapping = load_stack_file(cli.stack_file(stack, stack_file))
    except (StackFileError, cli.InputError) as err:
        return cli.print_input_error(err, heading=f"config error in stack {stack}")
    run = run_stack(stack, mapping)
    if run.config_error is not None:
        console.print(f"[bold red]config error[/] in stack {stack}:")
        for issue in run.config_error.issues:
            console.print(f"  {issue.render()}", markup=False)
        return cli.EXIT_INPUT
    return run, mapping


if __name__ == "__main__":
    cli.not_a_command("tools.cli.mock_run", "hpi capacity --stack <name> or hpi policy --stack <name>")
