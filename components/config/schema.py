"""JSON Schema for ``stacks/Pulumi.<stack>.yaml``, generated from the pydantic contract.

Editors with the YAML language server autocomplete and check stack files against ``stacks/schema.json``
(each reference stack names it in a ``yaml-language-server`` comment). A test keeps the file current;
regenerate it with ``python -m components.config.schema``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .base import PROJECT
from .stack import CONFIG_KEYS, StackConfig

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "stacks" / "schema.json"


def stack_config_schema() -> dict[str, Any]:
    model = StackConfig.model_json_schema(by_alias=True, mode="validation")
    defs = model.pop("$defs", {})
    props = {f"{PROJECT}:{k}": v for k, v in model["properties"].items() if k in CONFIG_KEYS}
    props["aws:region"] = {
        "type": "string",
        "description": "The AWS region of the stack.",
        "pattern": r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$",
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{PROJECT} stack file",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": props,
                "required": ["aws:region", *(f"{PROJECT}:{k}" for k in model.get("required", []) if k in CONFIG_KEYS)],
                # Other namespaces (aws:, kubernetes:) are free; ours is closed, like the pydantic model.
                "propertyNames": {"anyOf": [{"enum": sorted(props)}, {"not": {"pattern": f"^{PROJECT}:"}}]},
                "additionalProperties": True,
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
        },
        "$defs": defs,
    }


def main() -> None:
    SCHEMA_PATH.write_text(json.dumps(stack_config_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")


if __name__ == "__main__":
    main()
