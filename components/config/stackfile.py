"""Read a ``stacks/Pulumi.<stack>.yaml`` file the way the Pulumi CLI would, refusing what it would not read.

Used by the offline tools (preview, rehearse, preflight, ci_matrix) and the tests. This module needs only PyYAML
and the standard library (``tools/generate/ci_matrix.py`` loads it by path in a job that installs nothing else).

Refused, each with ``file:line``:

* duplicate keys at any depth (PyYAML keeps the last silently; the second one would win unseen): both lines;
* config keys that are not ``<namespace>:<name>`` (Pulumi docs, "Configuration", section "Configuration keys":
  "Configuration keys use the format ``[<namespace>:]<key-name>``"; in a stack file the CLI parses them with
  pulumi/pulumi ``sdk/go/common/resource/config/key.go`` ``ParseKey``, which takes ``<namespace>:<name>`` only);
* namespaces nothing reads: only the project's, ``pulumi:`` and those of the providers the program uses
  (``data/config_namespaces.json``, generated from the SDKs) are read; a misspelt one gets the nearest as a hint;
* in a provider's namespace, keys that provider does not have (``aws:regoin``).

``secure:`` values cannot be decrypted without the stack's secrets provider, so :func:`config_from_mapping`
replaces them by a placeholder and marks their keys secret, exactly the shape the program sees under the CLI
(minus the plaintext, which nothing offline needs).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
STACKS_DIR = ROOT / "stacks"
NAMESPACES_PATH = Path(__file__).resolve().parent / "data" / "config_namespaces.json"
OFFLINE_SECRET_PLACEHOLDER = "offline-preview-secret-placeholder"


def _project_name() -> str:
    """The project's name, from ``Pulumi.yaml``: the namespace of its own config keys."""
    doc = yaml.safe_load((ROOT / "Pulumi.yaml").read_text(encoding="utf-8"))
    return str(doc["name"])


PROJECT = _project_name()


def stack_path(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


class StackFileError(ValueError):
    """A stack file that cannot be used as written; every problem names the file and line."""

    def __init__(self, problems: str | list[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


# --- reading YAML: duplicate keys are errors, key lines are kept ----------------------------------------------


class KeyLines(dict[Any, Any]):
    """A YAML mapping that remembers the (1-based) line of each key."""

    lines: dict[Any, int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lines = {}


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping that repeats a key (YAML 1.2 requires keys to be unique; PyYAML would keep the last)."""


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` whose mappings refuse duplicate keys and record each key's line."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> KeyLines:
    explicit = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
    loader.flatten_mapping(node)  # `<<:` merge keys come first; an explicit key may override a merged one
    out = KeyLines()
    written: dict[Any, int] = {}  # explicit keys only: those may not repeat
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found an unhashable key", key_node.start_mark
            ) from None
        line = key_node.start_mark.line + 1
        if id(key_node) in explicit:
            if key in written:
                raise DuplicateKeyError(
                    problem=f"duplicate key {key!r} (first at line {written[key]}, again at line {line}; YAML keys "
                    "must be unique, and PyYAML would silently keep the second)",
                    problem_mark=key_node.start_mark,
                )
            written[key] = line
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key] = line
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

# The same loader on libyaml's parser when PyYAML was built with it (the wheels are): the mappings are built by
# the same Python constructor above (duplicate keys, key lines), only scanning and parsing run in C (~10x faster;
# every program run reads its stack file). Errors are reported by re-reading with the pure-Python loader, whose
# messages and marks the tests and the docs quote.
_FastStrictLoader: type[Any] | None = None
if hasattr(yaml, "CSafeLoader"):
    _FastStrictLoader = type("_FastStrictLoader", (yaml.CSafeLoader,), {})
    _FastStrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(text: str, source: str) -> Any:
    """YAML text as data, mappings as :class:`KeyLines`; :class:`StackFileError` (``source:line:col``) otherwise."""
    if _FastStrictLoader is not None:
        try:
            return yaml.load(text, Loader=_FastStrictLoader)  # a CSafeLoader subclass
        except yaml.YAMLError:
            pass  # the pure-Python loader below reports it
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        if isinstance(err, DuplicateKeyError):
            raise StackFileError(f"{source}{where}: {err.problem}") from None
        what = " ".join(str(x) for x in (err.context, err.problem) if x)
        raise StackFileError(f"{source}{where}: YAML syntax error: {what}") from None
    except yaml.YAMLError as err:
        raise StackFileError(f"{source}: YAML error: {err}") from None


# --- config keys: namespaces and provider keys ----------------------------------------------------------------


@cache
def namespaces() -> dict[str, Any]:
    """``data/config_namespaces.json``: ``{"pulumiNamespace": ..., "providers": {ns: {"sdk", "keys"}}}``."""
    data: dict[str, Any] = json.loads(NAMESPACES_PATH.read_text(encoding="utf-8"))
    return data


def provider_config_keys() -> dict[str, tuple[str, ...]]:
    """``{provider namespace: its config keys}`` for the providers the program uses."""
    return {ns: tuple(p["keys"]) for ns, p in namespaces()["providers"].items()}


def known_namespaces() -> tuple[str, ...]:
    """Every namespace something reads: the project's, Pulumi's own, and each provider's."""
    return (PROJECT, str(namespaces()["pulumiNamespace"]), *provider_config_keys())


def _nearest(word: str, candidates: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def _provider_key_problem(key: str, namespace: str, name: str) -> str | None:
    keys = provider_config_keys()[namespace]
    if name in keys:
        return None
    sdk = namespaces()["providers"][namespace]["sdk"]
    if not keys:
        return f"{key!r}: the {namespace} provider ({sdk}) has no configuration keys; remove it"
    hint = _nearest(name, keys)
    return f"{key!r}: the {namespace} provider ({sdk}) has no key {name!r}" + (
        f"; did you mean {namespace}:{hint}?" if hint else f"; its keys: {', '.join(keys)}"
    )


def config_key_problem(key: Any) -> str | None:
    """Why a config key is not read by anything (``None`` when it is a key of a known namespace)."""
    parts = key.split(":") if isinstance(key, str) else []
    if len(parts) == 1:
        return (
            f"{key!r} has no namespace: config keys in a stack file are <namespace>:<name> (Pulumi docs, "
            f"'Configuration keys'; the Pulumi CLI refuses this file); write {PROJECT}:{key}"
        )
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return f"{key!r} is not <namespace>:<name> (one colon; Pulumi docs, 'Configuration keys')"
    namespace, name = parts
    if namespace in (PROJECT, namespaces()["pulumiNamespace"]):
        return None  # the project's keys are validated by its config models; Pulumi's own are the CLI's
    if namespace in provider_config_keys():
        return _provider_key_problem(key, namespace, name)
    hint = _nearest(namespace, known_namespaces())
    return (
        f"{key!r}: nothing reads the namespace {namespace!r}"
        + (f"; did you mean {hint}:{name}?" if hint else "")
        + f" (namespaces read by this program: {', '.join(known_namespaces())})"
    )


# --- the stack file ---------------------------------------------------------------------------------------------

# Top-level keys a Pulumi stack file may have besides ``config:`` (Pulumi docs, "Stack settings file reference":
# secretsprovider, encryptedkey, encryptionsalt, config, environment).
_STACK_FILE_KEYS = {"config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment"}


def list_stacks(stacks_dir: Path | None = None) -> list[str]:
    """The stack names that have a ``stacks/Pulumi.<stack>.yaml`` file, sorted."""
    folder = stacks_dir or STACKS_DIR
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def plain(value: Any) -> Any:
    """``value`` with every :class:`KeyLines` turned into a plain ``dict`` (for YAML dumpers and deep copies)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def read_stack_document(path: Path) -> dict[str, Any]:
    """The whole stack file as a plain mapping; :class:`StackFileError` for anything that is not one."""
    doc: dict[str, Any] = plain(_read_document(path))
    return doc


def _read_document(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise StackFileError(f"{path}: no such stack file")
    doc = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    if doc is None:
        raise StackFileError(
            f"{path}: the stack file is empty; it needs a `config:` mapping with `aws:region` and the "
            f"`{PROJECT}:*` keys (see stacks/Pulumi.dev.yaml)"
        )
    if not isinstance(doc, dict):
        raise StackFileError(f"{path}: not a Pulumi stack file (expected a mapping with a `config:` key)")
    return doc


def _line(mapping: Any, key: Any) -> str:
    lines = getattr(mapping, "lines", {})
    return f":{lines[key]}" if key in lines else ""


def load_stack_file(path: Path) -> dict[str, Any]:
    """The ``config:`` mapping of a stack file (:class:`StackFileError` listing every problem otherwise)."""
    doc = _read_document(path)
    stray = [k for k in doc if k not in _STACK_FILE_KEYS]
    if stray:
        namespaced = [k for k in stray if isinstance(k, str) and ":" in k]
        hint = (
            f"; keys such as {namespaced[0]!r} belong under `config:` (indent them below a `config:` line)"
            if namespaced
            else f"; a stack file has only {', '.join(sorted(_STACK_FILE_KEYS))}"
        )
        raise StackFileError(
            f"{path}{_line(doc, stray[0])}: unknown top-level key(s) {', '.join(map(str, stray))}{hint}"
        )
    config = doc.get("config")
    if config is None:
        raise StackFileError(f"{path}: no `config:` mapping (it holds `aws:region` and the `{PROJECT}:*` keys)")
    if not isinstance(config, dict):
        raise StackFileError(
            f"{path}{_line(doc, 'config')}: `config:` must be a mapping of keys to values, not {type(config).__name__}"
        )
    problems = [
        f"{path}{_line(config, key)}: {problem}" for key in config if (problem := config_key_problem(key)) is not None
    ]
    if problems:
        raise StackFileError(problems)
    result: dict[str, Any] = plain(config)
    return result


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
