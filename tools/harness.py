"""Run the real ``__main__.py`` for one stack under Pulumi mocks — no CLI, no plugins, no credentials.

One function, :func:`run_stack`, serves the tests, ``tools.preview`` and the benchmarks: it sets a fresh
event loop, the recording mocks (``preview=False`` so every ``apply`` runs), the stack's config, runs the
program with ``runpy`` (a fresh program per call) and returns the captured graph.
"""

from __future__ import annotations

import asyncio
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import settings

from components.config import PROJECT, ConfigError
from components.config.stackfile import config_from_mapping, load_stack_file, stack_path
from tools.mocks import DEFAULT_REGION, GraphMonitor, RecordingMocks, Registration

ROOT = Path(__file__).resolve().parents[1]
MAIN = ROOT / "__main__.py"


@dataclass
class StackRun:
    """What one mock run of the program produced."""

    stack: str
    monitor: GraphMonitor
    mocks: RecordingMocks
    outputs: dict[str, Any]
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
) -> StackRun:
    """Run the program for ``stack``; ``mapping`` overrides the stack file's ``config:`` mapping.

    A :class:`ConfigError` is captured in ``StackRun.config_error`` (nothing is registered then); any
    other exception propagates.
    """
    if mapping is None:
        mapping = load_stack_file(stack_path(stack))
    config, secret_keys = config_from_mapping(mapping)
    region = config.get("aws:region", DEFAULT_REGION)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    mocks = RecordingMocks(region=region)
    monitor = GraphMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(config, secret_keys)
    outputs: dict[str, Any] = {}

    def program() -> None:
        namespace = runpy.run_path(str(main), run_name="__pulumi_main__")
        outputs.update({k: v for k, v in namespace.items() if k == "__exports__"})

    error: ConfigError | None = None
    try:
        pulumi.runtime.test(program)()
    except ConfigError as err:
        error = err
    finally:
        stack_outputs = _stack_outputs()
        loop.close()
        asyncio.set_event_loop(None)
    return StackRun(stack=stack, monitor=monitor, mocks=mocks, outputs=stack_outputs, config_error=error)


def _stack_outputs() -> dict[str, Any]:
    root = settings.get_root_resource()
    exports = getattr(root, "outputs", None) if root is not None else None
    return dict(exports or {})
