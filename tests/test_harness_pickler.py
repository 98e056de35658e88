"""The offline harness leaves :mod:`pickle` as it found it (tools/plan/harness.py, ``_pickler_restored``).

The SDK's dynamic-provider serialization wraps ``pickle._Pickler._batch_setitems`` once per dynamic resource and
never unwraps it; without the restore, a session that runs many stacks ends in RecursionError.
"""

from __future__ import annotations

import pickle

from tests.conftest import stack_mapping
from tools.plan.harness import run_stack


def test_a_stack_run_with_dynamic_resources_leaves_the_pickler_unwrapped() -> None:
    before = pickle._Pickler._batch_setitems  # type: ignore[attr-defined]
    run = run_stack("prod", stack_mapping("prod"))
    assert run.config_error is None
    assert any(r.type == "pulumi-python:dynamic:Resource" for r in run.registrations)  # the SDK did serialize
    assert pickle._Pickler._batch_setitems is before  # type: ignore[attr-defined]
