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


class StackFileError(ValueError):
    """A stack file that cannot be read as a Pulumi stack file; the message names the file (and line)."""


# Top-level keys a Pulumi stack file may have besides ``config:`` (Pulumi's ProjectStack: the secrets
# provider fields and ``environment`` for Pulumi ESC).
_STACK_FILE_KEYS = {"config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment"}


def list_stacks(stacks_dir: Path | None = None) -> list[str]:
    """The stack names that have a ``stacks/Pulumi.<stack>.yaml`` file, sorted."""
    folder = stacks_dir or STACKS_DIR
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def read_stack_document(path: Path) -> dict[str, Any]:
    """The whole stack file as a mapping; :class:`StackFileError` for anything that is not one."""
    if not path.is_file():
        raise StackFileError(f"{path}: no such stack file")
    try:
        with path.open(encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        what = " ".join(str(x) for x in (err.context, err.problem) if x)
        raise StackFileError(f"{path}{where}: YAML syntax error: {what}") from None
    except yaml.YAMLError as err:
        raise StackFileError(f"{path}: YAML error: {err}") from None
    if doc is None:
        raise StackFileError(
            f"{path}: the stack file is empty; it needs a `config:` mapping with `aws:region` and the "
            "`hyperpod-inference:*` keys (see stacks/Pulumi.dev.yaml)"
        )
    if not isinstance(doc, dict):
        raise StackFileError(f"{path}: not a Pulumi stack file (expected a mapping with a `config:` key)")
    return doc


def load_stack_file(path: Path) -> dict[str, Any]:
    """The ``config:`` mapping of a stack file (:class:`StackFileError` when the file is not usable)."""
    doc = read_stack_document(path)
    stray = [k for k in doc if k not in _STACK_FILE_KEYS]
    if stray:
        namespaced = [k for k in stray if isinstance(k, str) and ":" in k]
        hint = (
            f"; keys such as {namespaced[0]!r} belong under `config:` (indent them below a `config:` line)"
            if namespaced
            else f"; a stack file has only {', '.join(sorted(_STACK_FILE_KEYS))}"
        )
        raise StackFileError(f"{path}: unknown top-level key(s) {', '.join(map(str, stray))}{hint}")
    config = doc.get("config")
    if config is None:
        raise StackFileError(
            f"{path}: no `config:` mapping (it holds `aws:region` and the `hyperpod-inference:*` keys)"
        )
    if not isinstance(config, dict):
        raise StackFileError(f"{path}: `config:` must be a mapping of keys to values, not {type(config).__name__}")
    return dict(config)
