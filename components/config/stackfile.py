"""Turn a ``stacks/Pulumi.<stack>.yaml`` file into Pulumi runtime config, the way the CLI passes it.

Used by the offline preview and the tests. ``secure:`` values cannot be decrypted without the stack's
secrets provider, so they are replaced by a placeholder and their keys are marked secret, exactly the
shape the program sees under the CLI (minus the plaintext, which nothing offline needs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

OFFLINE_SECRET_PLACEHOLDER = "offline-preview-secret-placeholder"
STACKS_DIR = Path(__file__).resolve().parents[2] / "stacks"


def stack_path(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


def _strip_secure(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return OFFLINE_SECRET_PLACEHOLDER, True
        found = False
        out = {}
        for k, v in value.items():
            out[k], s = _strip_secure(v)
            found = found or s
        return out, found
    if isinstance(value, list):
        items = [_strip_secure(v) for v in value]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False


def config_from_mapping(mapping: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """``{"ns:key": value}`` as written in a stack file -> (runtime config strings, secret keys)."""
    config: dict[str, str] = {}
    secrets: list[str] = []
    for key, value in (mapping or {}).items():
        plain, is_secret = _strip_secure(value)
        if is_secret:
            secrets.append(key)
        if isinstance(plain, (dict, list)):
            config[key] = json.dumps(plain)
        elif isinstance(plain, bool):
            config[key] = "true" if plain else "false"
        else:
            config[key] = str(plain)
    return config, secrets


def load_stack_file(path: Path) -> dict[str, Any]:
    """The ``config:`` mapping of a stack file."""
    with path.open(encoding="utf-8") as fh:
        doc = yaml.safe_load(fh) or {}
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a Pulumi stack file (expected a mapping with a `config:` key)")
    return dict(doc.get("config") or {})
