"""Generate ``docs/configuration.md``, the per-key reference of the stack config, from the pydantic models.

    python -m tools.generate.config_reference            # rewrite docs/configuration.md
    python -m tools.generate.config_reference --check    # exit 1 when the file is out of date (tests do this too)

It walks the same JSON Schema editors use (:func:`components.config.schema.stack_config_schema`, generated
from the models), so every key, type, default, bound and description comes from the code; nothing here is
written by hand except the page's short introduction.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from components.config.global_gateway import global_stack_schema
from components.config.schema import stack_config_schema
from tools.report import cli

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
MAX_DEPTH = 12

INTRO = """# Configuration reference

Every key a stack file (`stacks/Pulumi.<stack>.yaml`) may set, generated from the pydantic models in
`components/config/` by `python -m tools.generate.config_reference` (a test fails when this page is out of date).
Keys are written under `config:` with the `hyperpod-inference:` prefix, e.g.
`hyperpod-inference:cluster.instanceGroups[].instanceType`. Unknown keys are errors; so are values outside
the listed types, enums and bounds. Endpoint and gateway `spec` keys are typed from the operator's CRDs
(`components/config/crd.py`); the policies that also apply are in [policies.md](policies.md).
"""


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in node and seen < 20:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node


def _branches(node: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("anyOf", "oneOf"):
        if key in node:
            return [b for b in node[key] if b.get("type") != "null"]
    return [node]


def _object_type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    if "properties" in node:
        return "Pulumi secret (`secure:`)" if set(node["properties"]) == {"secure"} else "mapping"
    extra = node.get("additionalProperties")
    return f"map of {_type(extra, defs)}" if isinstance(extra, dict) and extra else "mapping (free-form)"


def _type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    node = _resolve(node, defs)
    branches = _branches(node)
    if len(branches) > 1:
        return " \\| ".join(_type(b, defs) for b in branches)
    node = _resolve(branches[0], defs)
    if "enum" in node or "const" in node:
        return " \\| ".join(f"`{v}`" for v in node.get("enum", [node.get("const")]))
    typ = node.get("type")
    if typ == "array":
        return f"list of {_type(node.get('items') or {}, defs)}"
    if typ == "object":
        return _object_type(node, defs)
    return str(typ or "any")


def _constraints(node: dict[str, Any], defs: dict[str, Any]) -> str:
    node = _resolve(node, defs)
    parts = []
    for branch in _branches(node):
        b = _resolve(branch, defs)
        for key, label in (
            ("minimum", ">="),
            ("exclusiveMinimum", ">"),
            ("maximum", "<="),
            ("exclusiveMaximum", "<"),
            ("minLength", "min length"),
            ("maxLength", "max length"),
            ("minItems", "min items"),
            ("maxItems", "max items"),
        ):
            if key in b:
                parts.append(f"{label} {b[key]}")
        if "pattern" in b:
            parts.append(f"pattern `{b['pattern']}`")
    return ", ".join(parts)


def _default(node: dict[str, Any]) -> str:
    if "default" not in node or node["default"] is None:
        return ""
    value = node["default"]
    if value in ([], {}):
        return f"`{value}`"
    return f"`{str(value).lower() if isinstance(value, bool) else value}`"


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _object(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any] | None:
    node = _resolve(node, defs)
    objects = [b for b in (_resolve(x, defs) for x in _branches(node)) if "properties" in b]
    if len(objects) == 1 and set(objects[0]["properties"]) != {"secure"}:
        return objects[0]
    return None


def _items(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any] | None:
    node = _resolve(node, defs)
    for branch in _branches(node):
        b = _resolve(branch, defs)
        if b.get("type") == "array" and isinstance(b.get("items"), dict):
            return b["items"]
    return None


def _rows(path: str, node: dict[str, Any], required: bool, defs: dict[str, Any], depth: int) -> list[str]:
    node = _resolve(node, defs)
    description = node.get("description") or ""
    row = (
        f"| `{path}` | {_type(node, defs)} | {'yes' if required else ''} | {_default(node)} | "
        f"{_cell(_constraints(node, defs))} | {_cell(description)} |"
    )
    out = [row]
    if depth >= MAX_DEPTH:
        return out
    items = _items(node, defs)
    if items is not None:
        members = [_resolve(b, defs) for b in _branches(_resolve(items, defs))]
        objects = [m for m in members if "properties" in m]
        for member in objects:
            tag = member.get("title") if len(objects) > 1 else None
            prefix = f"{path}[]" + (f" ({tag})" if tag else "")
            if tag is None:
                out += _children(prefix, member, defs, depth)
                continue
            # one table per kind, headed by it and led by the key that selects it: two kinds' keys in one table
            # read as one mapping
            rows = _children(prefix, member, defs, depth)
            selector = [r for r in rows if r.startswith(f"| `{path}[].kind` ")]
            out += ["", f"### `{path}[]` with `kind: {_kind_value(member, tag)}`", "", *TABLE_HEAD]
            out += selector + [r for r in rows if r not in selector]
        return out
    obj = _object(node, defs)
    if obj is not None:
        out += _children(path, obj, defs, depth)
    return out


TABLE_HEAD = ("| key | type | required | default | bounds | description |", "|---|---|---|---|---|---|")


def _kind_value(member: dict[str, Any], title: str) -> str:
    kind = (member.get("properties") or {}).get("kind") or {}
    return str(kind.get("const") or (kind.get("enum") or [title])[0])


def _children(path: str, obj: dict[str, Any], defs: dict[str, Any], depth: int) -> list[str]:
    required = set(obj.get("required") or [])
    out = []
    base = path.split(" (", maxsplit=1)[0]
    for key, child in obj["properties"].items():
        out += _rows(f"{base}.{key}", child, key in required, defs, depth + 1)
    return out


GLOBAL_INTRO = """
# Global stack (`hyperpod-inference:role: global`)

A stack file whose `hyperpod-inference:role` is `global` builds the Global Inference Gateway over regional
stacks instead of a regional environment (docs/multi-region.md); it takes only these keys.
"""


def render() -> str:
    lines = [INTRO, *_sections(stack_config_schema(), "##"), GLOBAL_INTRO, *_sections(global_stack_schema(), "##")]
    return "\n".join(lines).rstrip() + "\n"


def _sections(schema: dict[str, Any], heading: str) -> list[str]:
    defs = schema.get("$defs", {})
    config = schema["properties"]["config"]
    required = set(config.get("required") or [])
    lines: list[str] = []
    for key, node in config["properties"].items():
        lines += ["", f"{heading} `{key}`", ""]
        top = _resolve(node, defs)
        if top.get("description"):
            lines += [_cell(top["description"]), ""]
        lines += [*TABLE_HEAD, *_rows(key, node, key in required, defs, 0)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.generate.config_reference", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/configuration.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.exists() else ""
        if current != text:
            print(f"{DOC_PATH} is out of date; run `python -m tools.generate.config_reference`")
            return 1
        return 0
    try:
        DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
        DOC_PATH.write_text(text, encoding="utf-8")
    except OSError as err:
        print(f"{DOC_PATH}: cannot write: {err.strerror}")
        return 2
    print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":
    cli.run(main)
