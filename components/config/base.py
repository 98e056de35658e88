"""Shared base for the stack-config contract.

Every model is strict: unknown keys are errors (a misspelt key must fail, never be ignored), keys are
camelCase exactly as they appear in the stack file, and models are frozen once validated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from .stackfile import PROJECT, namespaces, provider_config_keys

__all__ = ["PROJECT", "ConfigAdvisory", "ConfigIssue", "Model", "join_path", "stack_file_schema"]


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
        """``hyperpod-inference:<path>: message``; a key of another namespace (``aws:region``) as it is written."""
        key = self.path if ":" in self.path.split(".", 1)[0] else f"{PROJECT}:{self.path}"
        return f"{key}: {self.message}"


@dataclass(frozen=True)
class ConfigAdvisory:
    """A check the stack file cannot settle offline (or should be looked at), located by its key path.

    The third outcome of every check, next to "holds" and "refused" (:class:`ConfigIssue`): ``checked_by`` names
    what does decide it (``tools.preflight.regional`` with the AWS call, or the cluster with the ``kubectl`` command).
    Advisories never change an exit code; the offline tools list them with the capacity and rehearsal tables.
    """

    path: str
    message: str
    rule: str
    checked_by: str

    def render(self) -> str:
        key = self.path if ":" in self.path.split(".", 1)[0] else f"{PROJECT}:{self.path}"
        return f"{key}: {self.message} [{self.rule}; checked by {self.checked_by}]"


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

    Only keys something reads are allowed, as the loader does (``stackfile.config_key_problem``): ours (closed,
    like the pydantic models), the config keys of the providers the program uses (their values are the
    provider's business) and Pulumi's own ``pulumi:*``. Editors flag a key without a namespace, a misspelt
    namespace or provider key. Shared by the regional (``schema.py``) and the global (``global_gateway.py``)
    stack-file schemas.
    """
    provider_keys = sorted(f"{ns}:{key}" for ns, keys in provider_config_keys().items() for key in keys)
    pulumi_ns = namespaces()["pulumiNamespace"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": props,
                "required": required,
                "propertyNames": {
                    "anyOf": [
                        {"enum": sorted(set(props) | set(provider_keys))},
                        {"pattern": f"^{pulumi_ns}:[^:]+$"},
                    ]
                },
                "additionalProperties": True,
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
            "environment": {"description": "Pulumi ESC environment(s) of the stack."},
        },
        "additionalProperties": False,
        "$defs": defs,
    }
