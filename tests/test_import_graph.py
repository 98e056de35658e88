"""The project's import graph (grimp, pinned in requirements-dev.txt): no import circle among its modules, and
every import runs downward through the layers the brief fixes (components -> config, tools -> policies, never
policies -> tools; the ``hpi`` command line sits above the tools it runs). ``if TYPE_CHECKING:`` imports count: a
circle that only the type checker follows is still a circle in the design (the config sections read the stack
through their own ``StackView`` protocols instead)."""

from __future__ import annotations

import functools

import grimp
import pytest

from components.config import StackConfig
from components.config.validation import ADVISORIES, CHECKS

PACKAGES = ("tests", "bench", "hpi", "tools", "components", "policies")
# Highest first: a module may import its own layer and those below it, never one above.
LAYERS = (
    "tests",
    "bench",
    "hpi",
    "tools",
    "tools.cli",
    "tools.verify",
    "tools.preflight",
    "tools.generate",
    "tools.fetch",
    "tools.rehearse",
    "tools.plan",
    "tools.report",
    "components",
    "components.config",
    "policies",
)


@functools.cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)


def _layer(module: str) -> int:
    best = max((name for name in LAYERS if module == name or module.startswith(name + ".")), key=len)
    return LAYERS.index(best)


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.find_modules_directly_imported_by(v)):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return out


def test_no_import_circle() -> None:
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_one() -> None:
    graph = grimp.ImportGraph()
    for m in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(m)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert _circles(graph) == [["a.x", "a.y"]]


def test_no_upward_import() -> None:
    graph = _graph()
    upward = sorted(
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if _layer(imported) < _layer(importer)
    )
    assert upward == []


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("policies.rules", "policies"),
        ("components.config.crd", "components.config"),
        ("components.endpoints", "components"),
        ("tools.plan.harness", "tools.plan"),
        ("tools.rehearse.graph", "tools.rehearse"),
        ("tools.generate.replacement_rules", "tools.generate"),
        ("tools.fetch.crds", "tools.fetch"),
        ("tools.preflight.regional", "tools.preflight"),
        ("tools.report.cli", "tools.report"),
        ("tools.cli.preview", "tools.cli"),
        ("tools.capacity", "tools"),  # a deprecated alias at the path of an old command line
        ("bench.run", "bench"),
        ("hpi.app", "hpi"),
    ],
)
def test_layer_of(module: str, layer: str) -> None:
    assert LAYERS[_layer(module)] == layer


def test_config_sections_do_not_import_the_stack() -> None:
    """Only what sits above the stack model (its loaders, the schema writer, the global shape) imports it."""
    graph = _graph()
    importers = graph.find_modules_that_directly_import("components.config.stack")
    config = {m for m in importers if m == "components.config" or m.startswith("components.config.")}
    assert config == {
        "components.config",
        "components.config.global_gateway",
        "components.config.loader",
        "components.config.schema",
        "components.config.validation",
    }


def test_every_check_reads_the_stack_through_a_view_the_stack_provides() -> None:
    """Each registered check takes one ``cfg`` typed by its module's ``StackView``; every attribute of that view is
    one of StackConfig's (mypy proves the types in components/config/stack.py)."""
    attributes = set(StackConfig.model_fields) | {n for n in dir(StackConfig) if not n.startswith("_")}
    for check in (*CHECKS, *ADVISORIES):
        module = __import__(check.__module__, fromlist=["StackView"])
        view = getattr(module, "StackView", None) if check.__module__ != "components.config.stack" else StackConfig
        assert view is not None, check.__module__
        assert list(check.__annotations__)[:1] == ["cfg"], check.__qualname__
        wanted = {n for n in dir(view) if not n.startswith("_")} - set(dir(object)) - {"model_config"}
        assert wanted <= attributes, (check.__module__, wanted - attributes)
