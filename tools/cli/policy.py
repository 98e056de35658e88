"""The CrossGuard policy pack (policies/) on its own: its results for one stack under the mocks, or its policies.

    hpi policy --stack prod        # every violation, at the enforcement levels of policies/config.<env>.json
    hpi policy --list              # each policy: name, default enforcement level, description

The same evaluation ``tools.cli.preview`` prints (policies/engine.py), and the pack ``pulumi preview --policy-pack
policies --policy-pack-config policies/config.<env>.json`` runs against the real engine. Exit 1 on a mandatory
violation, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.table import Table

from policies.engine import evaluate
from policies.pack import POLICIES
from tools.cli.mock_run import environment_of, mock_run
from tools.report.console import make_console


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cli.policy", description=(__doc__ or "").split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    what.add_argument("--list", action="store_true", help="list the pack's policies")
    parser.add_argument("--stack-file", type=Path, help="read the config from this file instead")
    args = parser.parse_args(argv)
    console = make_console()
    if args.list:
        table = Table(title=f"{len(POLICIES)} policies")
        for column in ("policy", "level", "description"):
            table.add_column(column)
        for policy in POLICIES:
            level = getattr(policy.enforcement_level, "value", policy.enforcement_level)
            table.add_row(policy.name, str(level), policy.description)
        console.print(table)
        return 0
    started = mock_run(args.stack, args.stack_file, console)
    if isinstance(started, int):
        return started
    run, mapping = started
    environment = environment_of(mapping)
    results = evaluate(POLICIES, run.registrations, environment)
    for result in results:
        console.print(result.render(), style="red" if result.level == "mandatory" else "yellow", markup=False)
    mandatory = sum(r.level == "mandatory" for r in results)
    console.print(
        f"policy pack, stack {args.stack} ({environment}): {len(POLICIES)} policies, "
        f"{mandatory} mandatory and {len(results) - mandatory} advisory violations"
    )
    return 1 if mandatory else 0


if __name__ == "__main__":
    sys.exit(main())
