"""Deploy rehearsal CLI: run the program for a stack under mocks and rehearse its create or destroy.

    python -m tools.rehearse --stack X [--stack-file FILE] [--json] [--destroy]

Exit codes: 0 converges, 1 at least one finding, 2 config error.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

from components.config.stackfile import load_stack_file, stack_path
from tools.console import make_console
from tools.harness import run_stack
from tools.rehearse import EXIT_CONFIG, rehearse


def main(argv: list[str] | None = None) -> int:
    gc.collect()
    gc.freeze()  # as tools.preview: the SDK's long-lived objects need no re-scanning
    parser = argparse.ArgumentParser(prog="python -m tools.rehearse", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="stack name: stacks/Pulumi.<stack>.yaml")
    parser.add_argument("--stack-file", type=Path, help="read the config from this file instead")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--destroy", action="store_true", help="rehearse pulumi destroy (the reverse walk)")
    args = parser.parse_args(argv)
    console = make_console()
    path = args.stack_file or stack_path(args.stack)
    if not path.exists():
        console.print(f"[red]no stack file {path}[/]")
        return EXIT_CONFIG
    mapping = load_stack_file(path)
    run = run_stack(args.stack, mapping)
    if run.config_error is not None:
        issues = [i.render() for i in run.config_error.issues]
        if args.json:
            print(json.dumps({"stack": args.stack, "configErrors": issues}, indent=2))
        else:
            console.print(f"[bold red]config error[/] in stack {args.stack}:")
            for issue in issues:
                console.print(f"  {issue}", markup=False)
        return EXIT_CONFIG
    result = rehearse(run, mapping=mapping, destroy=args.destroy)
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        console.print(result)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
