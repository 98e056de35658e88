"""The capacity table of one stack alone: per instance group, what a node allocates, what each endpoint takes.

    hpi capacity --stack prod [--json]

The same table and findings ``tools.cli.preview`` prints (tools/plan/capacity_table.py; how each number is computed:
docs/capacity.md), without the resource tree, the policy pack's other rules and the rehearsal. Exit 1 when one of the pack's
capacity policies is violated at mandatory level in the stack's environment, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from policies.engine import evaluate
from policies.pack import CAPACITY_POLICIES
from tools.cli.mock_run import environment_of, mock_run
from tools.plan.capacity_table import capacity_report
from tools.report import cli
from tools.report.console import make_console


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cli.capacity", description=(__doc__ or "").split("\n\n")[0])
    cli.add_stack_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the table's data (the plan's `capacity` key)")
    args = parser.parse_args(argv)
    console = make_console()
    started = mock_run(args.stack, args.stack_file, console)
    if isinstance(started, int):
        return started
    run, mapping = started
    report = capacity_report(run.registrations)
    if args.json:
        print(json.dumps(report.data, indent=2, sort_keys=True))
    else:
        console.print(report.renderable)
    # the verdict is the pack's capacity policies at the environment's enforcement levels, as in tools.cli.preview
    results = evaluate(CAPACITY_POLICIES, run.registrations, environment_of(mapping))
    for result in results:
        console.print(result.render(), style="red" if result.level == "mandatory" else "yellow", markup=False)
    return 1 if any(r.level == "mandatory" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
