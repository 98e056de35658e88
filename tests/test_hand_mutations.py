"""The hand-made mutation list (tests/hand_mutations.py) stays applicable: each replaced text occurs exactly
once in its file and each named test exists. Replaying them (``python -m tests.hand_mutations``) takes ~20 s,
so CI runs the cheap half here and docs/mutation-testing.md records the replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hand_mutations import MUTATIONS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.id)
def test_mutation_still_applies(mutation) -> None:
    assert (ROOT / mutation.file).read_text(encoding="utf-8").count(mutation.old) == 1
    assert mutation.old != mutation.new
    for test in mutation.tests:
        path, _, name = test.partition("::")
        source = (ROOT / path).read_text(encoding="utf-8")
        assert not name or f"def {name}(" in source, f"{test} does not exist"
