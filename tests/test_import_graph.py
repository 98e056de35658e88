"""The project's import graph keeps the contracts of pyproject.toml ``[tool.importlinter]`` (import-linter, pinned in
requirements-dev.txt): every import runs downward through the layers the brief fixes (components -> config,
tools -> policies, never policies -> tools; the ``hpi`` command line sits above the tools it runs), the config
sections never import the stack that aggregates them (they read it through their ``StackView`` protocols, which
mypy checks in components/config/validation.py), and no sibling modules or packages import each other in a circle.
``if TYPE_CHECKING:`` imports count."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )


def test_the_project_keeps_its_import_contracts() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 5 kept, 0 broken." in done.stdout, done.stdout  # every contract of pyproject.toml ran


def test_the_contract_types_catch_an_upward_import_and_a_circle(tmp_path: Path) -> None:
    """The same contract types break on a toy project with one upward import (low -> high) and one circle."""
    for name, body in {
        "app/__init__.py": "",
        "app/high.py": "",
        "app/low/__init__.py": "",
        "app/low/a.py": "from app import high\nfrom app.low import b\n",
        "app/low/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app.low import a\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent("""
            [tool.importlinter]
            root_packages = ["app"]
            [[tool.importlinter.contracts]]
            name = "layers"
            type = "layers"
            containers = ["app"]
            layers = ["high", "low"]
            [[tool.importlinter.contracts]]
            name = "no circles"
            type = "acyclic_siblings"
            ancestors = ["app"]
        """),
        encoding="utf-8",
    )
    done = _lint(tmp_path, "--config", "pyproject.toml")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "layers BROKEN" in done.stdout and "no circles BROKEN" in done.stdout, done.stdout
    assert "app.low.a -> app.high" in done.stdout, done.stdout
