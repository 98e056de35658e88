"""Write what the policy records determine: ``policies/config.<env>.json`` and the policy tables of ``docs/policies.md``.

    python -m tools.generate.policy_docs            # exit 1 and name every file that differs from the records
    python -m tools.generate.policy_docs --write    # rewrite them

Each policy is one record (``policies/records/<name>.yaml``); its level per environment, its config values and
waiver, and its line in the docs are written there once. ``tests/test_policy_records.py`` fails when a generated
file drifts from the records.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path

from policies.records import ENVIRONMENTS, RECORDS, Environment, PolicyRecord
from tools.report import cli

ROOT = Path(__file__).resolve().parents[2]
DOC = Path("docs/policies.md")
HEADER = (
    "| policy | violation (refused: the key and why) | prod | dev / staging | cannot be checked offline (decided by) |\n"
    "|---|---|---|---|---|\n"
)
BEGIN = "<!-- BEGIN generated {table}: python -m tools.generate.policy_docs --write (from policies/records/) -->\n"
END = "<!-- END generated {table} -->\n"
TABLES = {"regional": "policy table", "global": "global policy table"}


def config_path(environment: Environment) -> Path:
    return Path(f"policies/config.{environment}.json")


def pack_config(environment: Environment, records: Iterable[PolicyRecord]) -> str:
    """The ``--policy-pack-config`` file of an environment: every policy's entry, in record order."""
    data = {r.name: r.pack_config(environment) for r in records}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _level_cell(record: PolicyRecord, environment: Environment) -> str:
    level = record.pack_level(environment)
    up = record.escalate
    return f"{level} ({up.when})" if up is not None and environment in up.environments else level


def row(record: PolicyRecord) -> str:
    dev, staging = _level_cell(record, "dev"), _level_cell(record, "staging")
    outside_prod = dev if dev == staging else f"dev: {dev}, staging: {staging}"
    cells = (f"`{record.name}`", record.doc, _level_cell(record, "prod"), outside_prod, record.checked_by)
    return "| " + " | ".join(cells) + " |\n"


def table(stack: str, records: Iterable[PolicyRecord]) -> str:
    return HEADER + "".join(row(r) for r in records if stack in r.scope.stacks)


def with_tables(text: str, records: Iterable[PolicyRecord]) -> str:
    """``text`` (docs/policies.md) with each generated table replaced by the records' rows."""
    listed = list(records)
    for stack, name in TABLES.items():
        begin, end = BEGIN.format(table=name), END.format(table=name)
        head, found, rest = text.partition(begin)
        if not found or end not in rest:
            raise SystemExit(f"{DOC}: the markers of the {name} are missing ({begin.strip()})")
        text = head + begin + table(stack, listed) + end + rest.partition(end)[2]
    return text


def expected(root: Path = ROOT) -> dict[Path, str]:
    """Every generated file and the text the records give it."""
    records = list(RECORDS.values())
    out = {config_path(env): pack_config(env, records) for env in ENVIRONMENTS}
    out[DOC] = with_tables((root / DOC).read_text(encoding="utf-8"), records)
    return out


def drifted(root: Path = ROOT) -> list[Path]:
    return [path for path, text in expected(root).items() if (root / path).read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.generate.policy_docs",
        description="Check (or with --write, rewrite) policies/config.<env>.json and the policy tables of "
        f"{DOC} from the policy records (policies/records/); exit 1 when a file differs.",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the generated files from the records")
    args = parser.parse_args(argv)
    if args.write:
        for path, text in expected().items():
            (ROOT / path).write_text(text, encoding="utf-8")
            print(f"wrote {path}")
        return 0
    stale = drifted()
    for path in stale:
        print(f"{path} differs from policies/records/: run python -m tools.generate.policy_docs --write")
    return 1 if stale else 0


if __name__ == "__main__":
    cli.run(main)
