"""Every place that sends a user to a verify check names a check ``python -m tools.verify`` really runs.

Last round the pack, the overlays and the checklist sent users to ``operator-crd-fields`` while the check was
registered as ``crd-fields``, and the governance docs named a checklist id (``governance-labels-propagated``) as the
check. The registry (``tools.verify.__main__.listing``) is the consumer of these names, so the test reads it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.config import governance
from policies import crd_overlays, rules
from tools.verify.__main__ import listing

ROOT = Path(__file__).resolve().parent.parent
# "check `x-y`", "check **`x-y`**", "check ``x-y``", "(check x-y)", "check x-y:" on a line that mentions verify.
# The name ends at a backtick or punctuation: "check `add-on versions`" (a preflight check) is not a verify name.
REFERENCE = re.compile(r"\bcheck\s+\*{0,2}`{0,2}([a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?=[`*):;,.]|$)")
SCANNED = ("README.md", "docs", "policies", "components", "tools")
SUFFIXES = {".md", ".py", ".yaml", ".yml", ".json"}


def _registered() -> set[str]:
    return {str(c["id"]) for c in listing()}


def _references() -> list[tuple[str, int, str]]:
    found = []
    for top in SCANNED:
        base = ROOT / top
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.suffix in SUFFIXES)
        for path in files:
            if "__pycache__" in path.parts:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if "verify" not in line:
                    continue
                for name in REFERENCE.findall(line):
                    found.append((str(path.relative_to(ROOT)), n, name))
    return found


def test_the_scan_finds_the_references_it_guards() -> None:
    names = {name for _, _, name in _references()}
    # If the pattern stops matching, this test fails instead of the next one passing over nothing.
    assert {"operator-crd-fields", "second-door", "governance-labels", "deploy-role-denials"} <= names


def test_every_referenced_verify_check_is_registered() -> None:
    registered = _registered()
    unknown = [f"{where}:{n}: {name}" for where, n, name in _references() if name not in registered]
    assert unknown == []


@pytest.mark.parametrize(
    "text",
    [
        crd_overlays.VERIFY_TEXT,
        governance.VERIFY_LABELS,
        rules.RULES["feature-in-installed-crd"].description,
    ],
)
def test_the_checker_texts_the_advisories_print_name_a_registered_check(text: str) -> None:
    names = REFERENCE.findall(text)
    assert names, text
    assert set(names) <= _registered()


def test_the_crd_check_is_registered_as_operator_crd_fields() -> None:
    assert "operator-crd-fields" in _registered()
    assert "crd-fields" not in _registered()
