"""Run the real ``__main__.py`` for one stack under Pulumi mocks — no CLI, no plugins, no credentials.

One function, :func:`run_stack`, serves the tests, ``tools.cli.preview`` and the benchmarks: it sets a fresh
event loop, the recording mocks (``preview=False`` so every ``apply`` runs), the stack's config, runs the
program with ``runpy`` (a fresh program per call) and returns the captured graph.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import runpy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import settings
from pulumi.runtime.proto import source_pb2

from components.config import PROJECT, ConfigError
from components.config.stackfile import config_from_mapping, load_stack_file, stack_path
from tools.plan.mocks import DEFAULT_REGION, GraphMonitor, RecordingMocks, Registration

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "__main__.py"


@dataclass
class StackRun:
    """What one mock run of the program produced."""

    stack: str
    monitor: GraphMonitor
    mocks: RecordingMocks
    outputs: dict[str, Any]
    secret_outputs: frozenset[str] = frozenset()
    config_error: ConfigError | None = None

    @property
    def registrations(self) -> list[Registration]:
        return self.monitor.registrations

    def of_type(self, typ: str) -> list[Registration]:
        return self.monitor.of_type(typ)

    def named(self, typ: str, name: str) -> Registration:
        return self.monitor.named(typ, name)


def run_stack(
    stack: str,
    mapping: dict[str, Any] | None = None,
    *,
    main: Path = MAIN,
    stack_outputs: dict[str, dict[str, Any]] | None = None,
    partition: str = "aws",
) -> StackRun:
    """Run the program for ``stack``; ``mapping`` overrides the stack file's ``config:`` mapping.

    ``stack_outputs`` are the outputs ``StackReference``s get, by stack name (a global stack's members:
    ``tools/plan/member_outputs.py``); without it the mocks' test fixtures (``tools.plan.mocks.STACK_OUTPUTS``).
    A :class:`ConfigError` is captured in ``StackRun.config_error`` (nothing is registered then); any
    other exception propagates.
    """
    if mapping is None:
        mapping = load_stack_file(stack_path(stack))
    config, secret_keys = config_from_mapping(mapping)
    region = config.get("aws:region", DEFAULT_REGION)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    mocks = RecordingMocks(region=region, stack_outputs=stack_outputs, partition=partition)
    monitor = GraphMonitor(mocks)
    # set_mocks keeps an existing root Stack resource: without this, every run after the first in one process
    # would parent its top-level resources (and read its exports) under the first run's stack URN.
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(config, secret_keys)

    def program() -> None:
        runpy.run_path(str(main), run_name="__pulumi_main__")

    error: ConfigError | None = None
    outputs: dict[str, Any] = {}
    secrets: set[str] = set()
    try:
        with _without_source_positions(), _pickler_restored():
            pulumi.runtime.test(program)()
        root = settings.get_root_resource()
        for key, value in dict(getattr(root, "outputs", None) or {}).items():
            outputs[key], is_secret = _resolved(value)
            if is_secret:
                secrets.add(key)
    except ConfigError as err:
        error = err
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    return StackRun(stack, monitor, mocks, outputs, frozenset(secrets), error)


@contextlib.contextmanager
def _pickler_restored() -> Iterator[None]:
    """Undo what the SDK's dynamic-provider serialization leaves behind in :mod:`pickle`.

    ``pulumi.dynamic.serialize_provider`` (pulumi 3.x, sdk/python/lib/pulumi/dynamic/dynamic.py) wraps
    ``pickle._Pickler._batch_setitems`` in a sorting wrapper on every call and restores only ``pickle.Pickler``:
    each dynamic resource adds one more wrapper around the last. In ``pulumi up`` the program runs once per process;
    here one process runs many stacks, and after about a thousand dynamic resources every pickled dict nests past
    Python's recursion limit (RecursionError in ``batch_set_items_sorted_before_py14``). Restored after each run.
    """
    original = pickle._Pickler._batch_setitems  # type: ignore[attr-defined]
    try:
        yield
    finally:
        pickle._Pickler._batch_setitems = original  # type: ignore[attr-defined]


@contextlib.contextmanager
def _without_source_positions() -> Iterator[None]:
    """Skip the SDK's per-resource stack capture while the mocks run.

    For every registration the SDK walks the Python stack and re-reads each frame's source line
    (``traceback.extract_stack``: an ``os.stat`` and a linecache lookup per frame), only to attach source
    positions for the engine's diagnostics. The mock monitor discards them, and they were 3 ms of the
    ~10 ms a custom resource costs offline (profiled with 200 endpoints). Restored afterwards.
    """
    original = sdk_resource._get_stack_trace
    sdk_resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        sdk_resource._get_stack_trace = original


def _resolved(value: Any) -> tuple[Any, bool]:
    """The settled value of a stack export (Outputs nested in dicts/lists included) and its secretness."""
    if isinstance(value, pulumi.Output):
        data = value._data  # one future holding value and secretness; settled once the run completed
        if not data.done():
            return None, False
        inner, inner_secret = _resolved(data.result().value)
        return inner, inner_secret or bool(data.result().is_secret)
    if isinstance(value, dict):
        pairs = {k: _resolved(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(s for _, s in pairs.values())
    if isinstance(value, list):
        items = [_resolved(v) for v in value]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command(
        "tools.plan.harness", "python -m tools.cli.preview --stack <name> or python -m tools.rehearse --stack <name>"
    )
