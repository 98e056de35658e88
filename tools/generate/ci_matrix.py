"""The pull-request workflow's stack matrix, derived from ``stacks/Pulumi.*.yaml`` (never a hard-coded list).

    python tools/generate/ci_matrix.py            # prints  matrix={"include": [{"stack": ..., "environment": ..., "region": ...}]}

Needs only PyYAML (the workflow's matrix job installs nothing else): it loads ``components/config/stackfile.py``
by its path (importing ``components.config`` would import the Pulumi SDK), so every stack file is read with the
program's own rules (duplicate keys, namespaces, ``file:line``). Every stack is listed, the global one
(``hyperpod-inference:role: global``) included: ``tools.cli.preview`` runs both shapes; ``role`` says which it is.

One broken stack file does not break the matrix: its entry carries ``error`` (``file:line: ...``), the problem is
printed as a GitHub ``::error`` annotation on stderr, and that stack's preview job fails with the same message
(exit 2) while the other stacks are previewed as usual.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STACKS_DIR = ROOT / "stacks"
STACKFILE = ROOT / "components" / "config" / "stackfile.py"


def _stackfile() -> ModuleType:
    """``components/config/stackfile.py`` loaded by path (it imports only PyYAML and the standard library)."""
    spec = importlib.util.spec_from_file_location("hyperpod_inference_stackfile", STACKFILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _entry(stack: str, config: dict[str, Any], project: str) -> dict[str, Any]:
    return {
        "stack": stack,
        "environment": config.get(f"{project}:environment", "dev"),
        "region": config.get("aws:region", ""),
        "role": config.get(f"{project}:role", "regional"),
    }


def matrix(stacks_dir: Path = STACKS_DIR) -> dict[str, list[dict[str, Any]]]:
    sf = _stackfile()
    include = []
    for path in sorted(stacks_dir.glob("Pulumi.*.yaml")):
        stack = path.name[len("Pulumi.") : -len(".yaml")]
        try:
            include.append(_entry(stack, sf.load_stack_file(path), sf.PROJECT))
        except sf.StackFileError as err:
            include.append({**_entry(stack, {}, sf.PROJECT), "error": str(err)})
    return {"include": include}


def main() -> int:
    result = matrix()
    for entry in result["include"]:
        for problem in str(entry.get("error", "")).splitlines():
            where, _, message = problem.partition(": ")
            file, _, line = where.partition(":")
            path = Path(file)
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            location = f"file={shown}" + (f",line={line.split(':')[0]}" if line else "")
            print(f"::error {location}::{entry['stack']}: {message}", file=sys.stderr)
    print(f"matrix={json.dumps(result, separators=(',', ':'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
