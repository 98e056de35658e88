"""Cost of the rehearsal next to the preview, on the reference prod stack and generated endpoint stacks.

    python -m tools.cli.bench [--runs 5]

In-process medians after a warm-up run (as ``bench.run`` fits the per-endpoint cost), so interpreter
start-up noise does not swamp milliseconds. Stacks with N endpoints come from :func:`endpoint_stack` (``bench.run`` uses the same).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import io
import statistics
import time
from collections.abc import Callable
from typing import Any

import yaml

from components.config.stackfile import load_stack_file, stack_path
from tools.cli.preview import preview
from tools.plan.harness import run_stack
from tools.rehearse import rehearse
from tools.report import cli


def _median(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs + 1):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times[1:])


def endpoint_stack(n: int) -> dict[str, Any]:
    """The dev stack file with ``n`` copies of its first endpoint (distinct names), and one GPU node per copy so
    that they all fit (the capacity checks stop an overfull stack with a config error)."""
    doc = yaml.safe_load(stack_path("dev").read_text(encoding="utf-8"))
    for group in doc["config"]["hyperpod-inference:cluster"]["instanceGroups"]:
        if group["name"] == "gpu-p5":
            group["instanceCount"] = max(1, n)
    template = doc["config"]["hyperpod-inference:endpoints"][0]
    eps = []
    for i in range(n):
        ep = copy.deepcopy(template)
        ep["name"] = f"model-{i}"
        ep["spec"]["modelName"] = f"model-{i}"
        ep["spec"]["endpointName"] = f"model-{i}"
        eps.append(ep)
    doc["config"]["hyperpod-inference:endpoints"] = eps
    return doc


def rehearsal_table(runs: int) -> tuple[list[str], float]:
    """Markdown rows (preview vs rehearsal time per stack) and the prod rehearsal's share of its preview, in %.

    The preview itself now includes the rehearsal, so the share is of a preview that already pays for it.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 50)  # as tools.cli.preview's main()
    cases: dict[str, tuple[str, dict[str, Any]]] = {"prod": ("prod", load_stack_file(stack_path("prod")))}
    for n in (1, 50, 200):
        cases[f"{n} endpoints"] = ("bench", endpoint_stack(n)["config"])
    rows = ["| stack | resources | preview | rehearsal | share |", "|---|---:|---:|---:|---:|"]
    prod_share = 0.0
    for label, (stack, mapping) in cases.items():

        def quiet_preview(stack: str = stack, mapping: dict[str, Any] = mapping) -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                preview(stack, mapping=mapping, as_json=True)

        t_preview = _median(quiet_preview, max(1, runs // 2))
        run = run_stack(stack, mapping)
        size = rehearse(run, mapping=mapping).resources

        def once(run: Any = run, mapping: dict[str, Any] = mapping) -> None:
            rehearse(run, mapping=mapping).to_json()

        t_rehearse = _median(once, runs)
        share = t_rehearse / t_preview * 100
        prod_share = share if label == "prod" else prod_share
        rows.append(f"| {label} | {size} | {t_preview * 1000:.0f} ms | {t_rehearse * 1000:.1f} ms | {share:.1f} % |")
    return rows, prod_share


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cli.bench")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    rows, _ = rehearsal_table(args.runs)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    cli.run(main)
