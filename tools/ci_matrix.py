"""The pull-request workflow's stack matrix, derived from ``stacks/Pulumi.*.yaml`` (never a hard-coded list).

    python tools/ci_matrix.py            # prints  matrix={"include": [{"stack": ..., "environment": ..., "region": ...}]}

Needs only PyYAML (the workflow's matrix job installs nothing else), so it reads the stack files directly
instead of importing ``components.config`` (which imports the Pulumi SDK). Every stack is listed, the
global one (``hyperpod-inference:role: global``) included: ``tools.preview`` runs both shapes; ``role`` says
which it is.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

STACKS_DIR = Path(__file__).resolve().parents[1] / "stacks"


def matrix(stacks_dir: Path = STACKS_DIR) -> dict[str, list[dict[str, Any]]]:
    include = []
    for path in sorted(stacks_dir.glob("Pulumi.*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        config = doc.get("config") if isinstance(doc, dict) else None
        config = config if isinstance(config, dict) else {}
        include.append(
            {
                "stack": path.name[len("Pulumi.") : -len(".yaml")],
                "environment": config.get("hyperpod-inference:environment", "dev"),
                "region": config.get("aws:region", ""),
                "role": config.get("hyperpod-inference:role", "regional"),
            }
        )
    return {"include": include}


def main() -> int:
    print(f"matrix={json.dumps(matrix(), separators=(',', ':'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
