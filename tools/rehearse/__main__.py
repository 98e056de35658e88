"""Deploy rehearsal CLI: run the program for a stack under mocks and rehearse its create or destroy.

    python -m tools.rehearse --stack X [--stack-file FILE] [--json] [--destroy] [--member-outputs FILE]
    python -m tools.rehearse --stack X --diff BASE.json | --diff-state EXPORT.json   (the change: tools.rehearse.change)

Prints the rehearsal, then what cannot be checked offline (:mod:`tools.report.advisories`); ``--json`` carries both
(``advisories``). A global stack's members come from ``--member-outputs FILE``, their stack files or mock
values, and the rehearsal says when mock values were used (:mod:`tools.plan.member_outputs`).

Exit codes: 0 converges, 1 at least one finding, 2 config error or unusable input (``file:line``, no traceback).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path
from typing import Any

from components.config import StackConfig
from components.config.loader import parse_stack_mapping
from components.config.node_software import roll_impacts_of
from components.config.stackfile import StackFileError, load_stack_file
from tools.plan import member_outputs
from tools.plan.diff import BasePlanError, check_base, diff_plans
from tools.plan.harness import run_stack
from tools.plan.state import load_export, remote_component_children, state_plan
from tools.plan.writer import build_plan
from tools.rehearse import EXIT_CONFIG, rehearse
from tools.rehearse.change import rehearse_change
from tools.report import cli
from tools.report.advisories import advisories_of, advisory_report
from tools.report.console import make_console, progress


def _config_error(stack: str, issues: list[str], as_json: bool) -> int:
    if as_json:
        print(json.dumps({"stack": stack, "configErrors": issues}, indent=2))
    else:
        make_console().print(f"[bold red]config error[/] in stack {stack}:")
        for issue in issues:
            make_console().print(f"  {issue}", markup=False)
    line = cli.verdict(stack, exit_code=EXIT_CONFIG, errors=len(issues), what="nothing registered")
    if as_json:
        print(line, file=sys.stderr)  # stdout stays one JSON document
    else:
        make_console().print(line, markup=False, style="bold red")
    return EXIT_CONFIG


def change_base(stack: str, diff: Path | None, diff_state: Path | None, destroy: bool) -> dict[str, Any] | None:
    """The base plan of a change rehearsal (``--diff`` a saved plan, ``--diff-state`` a stack export), or None."""
    if diff is None and diff_state is None:
        return None
    if diff is not None and diff_state is not None:
        raise cli.InputError("--diff and --diff-state: give one base, a saved plan or a stack export")
    if destroy:
        raise cli.InputError("--destroy rehearses the destroy of the stack; a change needs no --destroy")
    if diff_state is not None:
        return state_plan(load_export(diff_state), f"--diff-state {diff_state}", stack=stack)
    assert diff is not None
    try:
        raw = json.loads(diff.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BasePlanError(f"--diff {diff}: no such file") from None
    except json.JSONDecodeError as err:
        raise BasePlanError(f"--diff {diff}: not JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    return check_base(raw, f"--diff {diff}", stack=stack)


def _change(args: argparse.Namespace, mapping: dict[str, Any], run: Any, base: dict[str, Any], console: Any) -> int:
    """The change rehearsal: the head plan diffed against the base, each change judged (tools.rehearse.change)."""
    environment = str(mapping.get("hyperpod-inference:environment") or "dev")
    region = mapping.get("aws:region")
    plan = build_plan(
        run, [], environment=environment, region=region if isinstance(region, str) else None, mapping=mapping
    )
    allowed = mapping.get("hyperpod-inference:allowReplacement") or []
    if args.diff_state is not None:
        plan = diff_plans(
            base, plan, allow_replacement=allowed, known_base=True, not_compared=remote_component_children(base, plan)
        )
    else:
        plan = diff_plans(base, plan, allow_replacement=allowed)
    cfg = parse_stack_mapping(args.stack, mapping)
    impacts = roll_impacts_of(cfg) if isinstance(cfg, StackConfig) else []
    result = rehearse_change(args.stack, plan, run.registrations, impacts, str(args.diff or args.diff_state))
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        for line in result.lines():
            console.print(line, markup=False, soft_wrap=True)
    line = cli.verdict(
        args.stack,
        exit_code=result.exit_code,
        resources=len(run.registrations),
        errors=len(result.refused),
        advisories=sum(1 for j in result.judgements if j.outcome == "advisory"),
        converges=result.converges,
        what="change rehearsed",
    )
    if args.json:
        print(line, file=sys.stderr)
    else:
        console.print(line, markup=False)
    return result.exit_code


def main(argv: list[str] | None = None) -> int:
    gc.collect()
    gc.freeze()  # as tools.cli.preview: the SDK's long-lived objects need no re-scanning
    parser = argparse.ArgumentParser(prog="python -m tools.rehearse", description=__doc__.split("\n\n")[0])
    cli.add_stack_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--destroy", action="store_true", help="rehearse pulumi destroy (the reverse walk)")
    parser.add_argument(
        "--diff", type=Path, metavar="BASE.json", help="rehearse the change from a saved plan (hpi preview --json)"
    )
    parser.add_argument(
        "--diff-state", type=Path, metavar="EXPORT.json", help="rehearse the change from a `pulumi stack export`"
    )
    parser.add_argument(
        member_outputs.FLAG,
        type=Path,
        metavar="FILE",
        help='a global stack\'s members: JSON {"<member stack>": <its globalGatewayMember>}',
    )
    args = parser.parse_args(argv)
    console = make_console()
    try:
        mapping = load_stack_file(cli.stack_file(args.stack, args.stack_file))
        members = member_outputs.for_stack(args.stack, mapping, args.member_outputs)
        base = change_base(args.stack, args.diff, args.diff_state, args.destroy)
    except (StackFileError, cli.InputError) as err:
        return _config_error(args.stack, cli.input_problems(err), args.json)
    except BasePlanError as err:
        return _config_error(args.stack, [str(err)], args.json)
    with progress(f"{args.stack}: running the program under Pulumi mocks"):
        run = run_stack(args.stack, mapping, stack_outputs=member_outputs.stack_outputs(members) if members else None)
    notice = member_outputs.notice(members) if members else None
    if run.config_error is not None:
        return _config_error(
            args.stack, [i.render() for i in run.config_error.issues] + ([notice] if notice else []), args.json
        )
    if base is not None:
        return _change(args, mapping, run, base, console)
    result = rehearse(run, mapping=mapping, destroy=args.destroy)
    cfg = parse_stack_mapping(args.stack, mapping)
    advisories = advisory_report(advisories_of(cfg) if isinstance(cfg, StackConfig) else [])
    if args.json:
        data: dict[str, Any] = {**result.to_json(), "advisories": advisories.data}
        if members:
            data["memberOutputs"] = [{"stack": m.stack, "source": m.source, "mock": m.mock} for m in members]
        print(json.dumps(data, indent=2, default=str))
    else:
        if notice:
            console.print(notice, style="bold yellow", soft_wrap=True, markup=False)
        console.print(result)
        console.print(advisories.renderable)
    line = cli.verdict(
        args.stack,
        exit_code=result.exit_code,
        resources=len(run.registrations),
        errors=len(result.findings),
        advisories=len(advisories.data),
        converges=result.converges,
        what="destroy rehearsed" if args.destroy else None,
    )
    if args.json:
        print(line, file=sys.stderr)
    else:
        console.print(line, markup=False)
    return result.exit_code


if __name__ == "__main__":
    cli.run(main)
