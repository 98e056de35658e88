"""Shared base for the stack-config contract.

Every model is strict: unknown keys are errors (a misspelt key must fail, never be ignored), keys are
camelCase exactly as they appear in the stack file, and models are frozen once validated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

PROJECT = "hyperpod-inference"


class Model(BaseModel):
    """Base for every config model: camelCase keys, unknown keys forbidden, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        validate_default=True,
        use_enum_values=True,
    )


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in the stack config, located by its key path (``cluster.instanceGroups[0].name``)."""

    path: str
    message: str

    def render(self) -> str:
        return f"{PROJECT}:{self.path}: {self.message}"


def join_path(*parts: Any) -> str:
    """Join key parts into a stack-file path: strings become ``.key``, ints become ``[i]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}"
        else:
            out = str(part)
    return out


def stack_file_schema(title: str, props: dict[str, Any], required: list[str], defs: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema of a ``stacks/Pulumi.<stack>.yaml`` file whose ``config:`` holds ``props``.

    Other namespaces (``aws:``, ``kubernetes:``) are free; ours is closed, like the pydantic models. Shared by
    the regional (``schema.py``) and the global (``global_gateway.py``) stack-file schemas.
    """
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": props,
                "required": required,
                "propertyNames": {"anyOf": [{"enum": sorted(props)}, {"not": {"pattern": f"^{PROJECT}:"}}]},
                "additionalProperties": True,
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
        },
        "$defs": defs,
    }
