"""Shared fixtures.

``run`` runs the real program for a stack under mocks (fresh event loop, ``preview=False``, the stack's
config) through :func:`tools.plan.harness.run_stack`: the same path ``tools.cli.preview`` takes. Tests that inspect
resources must assert that resources were registered — use ``registered(run)``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.stackfile import STACKS_DIR, list_stacks, load_stack_file, stack_path
from tools.fetch.crds import DEST as VENDORED_CRDS
from tools.fetch.crds import SHARED_CRDS, find_crds
from tools.plan.harness import StackRun, run_stack

# The support calendar is an input (policies/cluster_versions.py `today`): every test, and every CLI a test starts
# (they inherit the environment), evaluates on the same day, whatever day the suite runs. Tests of the calendar
# itself pass their dates explicitly.
os.environ["HPI_AS_OF"] = "2026-12-01"

SHARED = SHARED_CRDS.parent


def _parse_botocore_models_once() -> None:
    """Every ``boto3.Session`` parses the service models it uses again (botocore caches per loader, and each
    session has its own): ~0.15 s per client, 3 of every 4 seconds of the preflight tests. One process-wide cache
    of the parsed JSON files leaves the clients exactly as botocore builds them (a loader already hands the same
    parsed model to every client of its session; the extras merged into a model are merged idempotently)."""
    import botocore.loaders

    parsed: dict[str, Any] = {}
    load_file = botocore.loaders.JSONFileLoader.load_file

    def load_file_once(self: botocore.loaders.JSONFileLoader, file_path: str) -> Any:
        if file_path not in parsed:
            parsed[file_path] = load_file(self, file_path)
        return parsed[file_path]

    botocore.loaders.JSONFileLoader.load_file = load_file_once  # type: ignore[method-assign]


_parse_botocore_models_once()

CRDS = find_crds() or SHARED_CRDS
CRDS_MISSING = (
    f"the operator's CRDs are needed: neither ../shared/crds ({SHARED_CRDS}) nor a complete vendor/crds "
    f"({VENDORED_CRDS}) exists; run `python -m tools.fetch.crds` to fetch them at their pinned commits"
)
AWS_DOCS_SAMPLES_MISSING = (
    "samples/aws-docs/ are transcriptions of AWS documentation pages that only ../shared/crds carries "
    "(`python -m tools.fetch.crds` fetches files of git repositories only)"
)


def _config(stack: str) -> dict[str, Any]:
    doc = yaml.safe_load(stack_path(stack).read_text(encoding="utf-8")) or {}
    config = doc.get("config") if isinstance(doc, dict) else None
    return config if isinstance(config, dict) else {}


def _is_global(stack: str) -> bool:
    """A stack file of the global (multi-region) shape: ``hyperpod-inference:role: global``."""
    return _config(stack).get("hyperpod-inference:role") == "global"


def _adopts_cluster(stack: str) -> bool:
    """A regional stack that adopts existing clusters (``cluster.existing``) instead of creating them."""
    cluster = _config(stack).get("hyperpod-inference:cluster")
    return isinstance(cluster, dict) and "existing" in cluster


# Every reference stack in stacks/ (derived, so a new Pulumi.<stack>.yaml is covered without editing tests).
ALL_STACKS: tuple[str, ...] = tuple(list_stacks(STACKS_DIR))
# The regional shape (global stacks have another shape and their own tests).
REGIONAL_STACKS: tuple[str, ...] = tuple(s for s in ALL_STACKS if not _is_global(s))
# The regional stacks that create their own cluster layer: what the per-stack cluster, node and operator
# tests parametrize over (stacks that adopt existing clusters, e.g. `attach`, have their own tests).
STACKS: tuple[str, ...] = tuple(s for s in REGIONAL_STACKS if not _adopts_cluster(s))


def stack_mapping(stack: str) -> dict[str, Any]:
    """A deep copy of a reference stack's ``config:`` mapping, for tests to mutate."""
    return copy.deepcopy(load_stack_file(stack_path(stack)))


def registered(run: StackRun) -> StackRun:
    """Fail unless the run registered resources (guards against vacuous passes)."""
    assert run.config_error is None, f"config error: {run.config_error}"
    assert len(run.registrations) > 0, "the program registered no resources"
    return run


def cached_scope(scope: str) -> Callable[[str, pytest.Config], str]:
    """``scope`` for a fixture that caches program runs, except while mutmut maps tests to the code they run
    (``MUTANT_UNDER_TEST=stats``): a cached fixture's work would then be credited to the first test that asked
    for it only, and every other test reading it would never be run against the mutants it could kill
    (docs/mutation-testing.md). Every fixture that caches a run (or reads ``stack_runs``) uses this."""

    def scope_now(fixture_name: str, config: pytest.Config) -> str:
        return "function" if os.environ.get("MUTANT_UNDER_TEST") == "stats" else scope

    return scope_now


@pytest.fixture(scope=cached_scope("session"))
def stack_runs() -> dict[str, StackRun]:
    """Each reference stack run once per session (tests only read these)."""
    return {s: registered(run_stack(s)) for s in REGIONAL_STACKS}


@pytest.fixture(scope=cached_scope("session"))
def every_stack_run(stack_runs: dict[str, StackRun]) -> dict[str, StackRun]:
    """Every stack in stacks/ run once per session, the global ones included (``stack_runs`` plus those): the
    ordering, deploy-policy, plan-JSON, declared-edge and resource-type tests read it instead of each running
    the stacks again (tests only read these)."""
    runs = dict(stack_runs)
    for stack in ALL_STACKS:
        if stack not in runs:
            runs[stack] = registered(run_stack(stack))
    return runs


@pytest.fixture
def run() -> Callable[..., StackRun]:
    """``run(stack, mapping=None)``: a fresh program run with an optional modified config mapping."""
    return run_stack


@pytest.fixture(scope="session")
def crds_dir() -> Path:
    if not CRDS.is_dir():
        pytest.skip(CRDS_MISSING)
    return CRDS


@pytest.fixture(scope="session")
def aws_docs_samples(crds_dir: Path) -> Path:
    """``samples/aws-docs`` of the CRD folder (only ../shared/crds has it)."""
    folder = crds_dir / "samples" / "aws-docs"
    if not folder.is_dir():
        pytest.skip(AWS_DOCS_SAMPLES_MISSING)
    return folder


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))
