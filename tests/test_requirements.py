"""requirements.txt is what `pulumi up`'s venv installs: exactly what the Pulumi program and the policy pack import.

A fresh interpreter runs the program of every reference stack under the mocks, imports the policy pack, and lists
``sys.modules``; every distribution those modules come from must be a runtime pin or a dependency of one, no pin of
requirements-tools.txt may be among them, and every runtime pin must be imported (or be named below with the reason
a preview does not import it).
"""

from __future__ import annotations

import functools
import importlib.metadata as md
import json
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = {"components", "policies", "tools", "hpi", "bench", "tests"}
# Runtime pins an offline preview does not import, and why they are runtime pins all the same.
NOT_IMPORTED_IN_A_PREVIEW = {
    "boto3": "the dynamic providers import it inside create/delete, which only a real `pulumi up` calls",
    "cfn-lint": "data, not code: the config reads its HyperPod instance-type schema extension from the wheel",
}

PROGRAM = """
import json, sys
from tools.plan.harness import run_stack
for stack in ("dev", "staging", "prod", "attach", "global"):
    assert run_stack(stack).config_error is None, stack
import policies.pack
print(json.dumps(sorted(sys.modules)))
"""


def _pins(name: str) -> set[str]:
    out = set()
    for raw in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            out.add(canonicalize_name(Requirement(line).name))
    return out


def _closure(names: set[str]) -> set[str]:
    """``names`` and everything their installed metadata requires (markers evaluated, no extras)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for spec in md.requires(name) or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return seen


@functools.cache
def _imported_distributions() -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    modules = json.loads(done.stdout.splitlines()[-1])
    tops = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names) - PROJECT_PACKAGES
    dists = md.packages_distributions()
    return {canonicalize_name(d) for top in tops for d in dists.get(top, [])}


def test_the_program_imports_only_runtime_pins_and_their_dependencies() -> None:
    runtime = _pins("requirements.txt")
    imported = _imported_distributions()
    assert imported - _closure(runtime) - {"hyperpod-inference"} == set()


def test_no_tool_dependency_is_imported_by_the_program() -> None:
    tools_only = _pins("requirements-tools.txt") - _pins("requirements.txt")
    assert {"kubernetes", "jsonschema", "kubernetes-validate", "parliament"} <= tools_only
    # jsonschema comes with cfn-lint (a runtime pin): being installed is not being imported
    assert _imported_distributions() & tools_only == set()


def test_every_runtime_pin_is_imported_or_says_why_not() -> None:
    runtime = _pins("requirements.txt")
    assert set(NOT_IMPORTED_IN_A_PREVIEW) <= runtime
    assert runtime - _imported_distributions() == set(NOT_IMPORTED_IN_A_PREVIEW)
