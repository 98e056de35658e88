"""JSON Schema for ``stacks/Pulumi.<stack>.yaml``, generated from the pydantic contract.

Editors with the YAML language server autocomplete and check stack files against ``stacks/schema.json``
(each reference stack names it in a ``yaml-language-server`` comment). A test keeps the files current:

    python -m components.config.schema            # print the regional schema (writes nothing)
    python -m components.config.schema --write    # regenerate stacks/schema.json and stacks/global.schema.json
    python -m components.config.schema --check    # exit 1 when either file is out of date
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from .base import PROJECT, stack_file_schema
from .loader import SECRET_PATHS
from .stack import CONFIG_KEYS, StackConfig

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "stacks" / "schema.json"

# How a Pulumi secret appears in a stack file: `pulumi config set --secret` writes `{secure: <ciphertext>}`
# (Pulumi docs, "Secrets": "the encrypted value is stored in the stack settings file as `secure: ...`").
SECURE_VALUE: dict[str, Any] = {
    "type": "object",
    "properties": {"secure": {"type": "string", "minLength": 1}},
    "required": ["secure"],
    "additionalProperties": False,
    "description": "A Pulumi secret, as `pulumi config set --secret --path ...` writes it (`{secure: <ciphertext>}`).",
}


def _object_schema(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema behind ``node`` (following ``$ref`` and the non-null branch of ``anyOf``)."""
    for _ in range(10):
        if "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:
            branches = [b for b in node["anyOf"] if b.get("type") != "null"]
            if len(branches) != 1:
                return None
            node = branches[0]
        else:
            return node if "properties" in node else None
    return None


def _require_secure_form(props: dict[str, Any], defs: dict[str, Any]) -> None:
    """Make every key of :data:`SECRET_PATHS` accept exactly what the program accepts: the secure form.

    pydantic describes the decrypted value (a string), but a stack file holds the ciphertext object; plain
    text there is a config error (``loader.parse_stack_config``), so the schema rejects it as well.
    """
    for key, path in SECRET_PATHS.items():
        node: dict[str, Any] | None = props.get(f"{PROJECT}:{key}")
        for part in path[1:-1]:
            node = _object_schema(node, defs) if node is not None else None
            node = (node or {}).get("properties", {}).get(part)
        holder = _object_schema(node, defs) if node is not None else None
        if holder is None or path[-1] not in holder.get("properties", {}):
            raise LookupError(f"schema has no {'.'.join(path)}")
        leaf = holder["properties"][path[-1]]
        holder["properties"][path[-1]] = {
            "anyOf": [SECURE_VALUE, {"type": "null"}],
            "default": None,
            "description": leaf.get("description", ""),
        }


def stack_config_schema() -> dict[str, Any]:
    model = StackConfig.model_json_schema(by_alias=True, mode="validation")
    defs = model.pop("$defs", {})
    props = {f"{PROJECT}:{k}": v for k, v in model["properties"].items() if k in CONFIG_KEYS}
    props["aws:region"] = {
        "type": "string",
        "description": "The AWS region of the stack.",
        "pattern": r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$",
    }
    _require_secure_form(props, defs)
    required = ["aws:region", *(f"{PROJECT}:{k}" for k in model.get("required", []) if k in CONFIG_KEYS)]
    return stack_file_schema(f"{PROJECT} stack file", props, required, defs)


def _rendered() -> dict[Path, str]:
    from .global_gateway import GLOBAL_SCHEMA_PATH, global_stack_schema

    return {
        SCHEMA_PATH: json.dumps(stack_config_schema(), indent=2, sort_keys=True) + "\n",
        GLOBAL_SCHEMA_PATH: json.dumps(global_stack_schema(), indent=2, sort_keys=True) + "\n",
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m components.config.schema", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite stacks/schema.json and stacks/global.schema.json")
    mode.add_argument("--check", action="store_true", help="exit 1 when a schema file is out of date")
    args = parser.parse_args(argv)
    files = _rendered()
    if args.write:
        for path, text in files.items():
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
        return 0
    if args.check:
        stale = [p for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
        for path in stale:
            print(f"{path} is out of date; run `python -m components.config.schema --write`")
        return 1 if stale else 0
    try:
        print(files[SCHEMA_PATH], end="", flush=True)
    except BrokenPipeError:
        # `| head`: the reader has what it wanted. The config layer cannot use tools.report.cli.run (imports run downward);
        # this is the same handling: stdout to /dev/null so the exit's flush does not raise again (Python docs, SIGPIPE)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
