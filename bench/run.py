"""Benchmarks for the offline path: import floor, preview of dev/prod (and prod --diff), scaling with endpoints.

    venv/bin/python -m bench.run [--runs 5] [--write BENCHMARKS.md]

Every measurement runs in a fresh interpreter (``subprocess``), so imports are paid each time, as they
are for a user. Peak RSS comes from ``resource.getrusage(RUSAGE_CHILDREN)`` of a one-child helper process.
Standard library plus the project's own tools only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from tools.cli.bench import endpoint_stack

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
LIVE_SECTION = Path(__file__).resolve().parent / "live.md"  # the live suites' timings, appended to BENCHMARKS.md

# Targets from the benchmark issue; a miss is reported, never loosened.
TARGET_PREVIEW_OVER_FLOOR = 1.5
TARGET_MS_PER_ENDPOINT = 10.0
TARGET_RSS_MB_AT_200 = 400.0
TARGET_SUITE_SECONDS = 90.0  # pytest alone (the benchmark issue)
TARGET_TEST_COMMAND_SECONDS = 120.0  # the README test command after install, fresh clone (issue 27)

_MEASURE = r"""
import resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
wall = time.perf_counter() - t
rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"{wall} {rss_kb} {rc}")
"""


@dataclass
class Sample:
    wall_s: float
    rss_mb: float


def measure(cmd: list[str], runs: int) -> Sample:
    """Median wall time and max peak RSS of ``cmd`` over ``runs`` fresh processes."""
    walls, rss = [], []
    for _ in range(runs):
        out = subprocess.run([PY, "-c", _MEASURE, *cmd], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        wall, kb, rc = out.split()
        if int(rc) not in (0, 1):
            raise RuntimeError(f"{' '.join(cmd)} exited {rc}")
        walls.append(float(wall))
        rss.append(int(kb) / 1024)
    return Sample(statistics.median(walls), max(rss))


_IN_PROCESS = r"""
import contextlib, gc, io, json, statistics, sys, time, yaml
from tools.cli.preview import preview
mapping = yaml.safe_load(open(sys.argv[1]))["config"]
runs = int(sys.argv[2])
gc.collect(); gc.freeze(); gc.set_threshold(100_000, 50, 50)  # as tools.cli.preview's main() does
times = []
for i in range(runs + 1):
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        preview(f"bench{i}", mapping=mapping, as_json=True)
    times.append(time.perf_counter() - t)
print(json.dumps(statistics.median(times[1:])))  # the first run warms caches
"""


def run_seconds(stack_file: Path, runs: int) -> float:
    """Median in-process time of the preview itself (imports excluded), after one warm-up run.

    Fresh-interpreter wall times carry ~0.5 s of start-up noise, which swamps the per-endpoint cost; the
    marginal cost is therefore fitted on the in-process times.
    """
    out = subprocess.run(
        [PY, "-c", _IN_PROCESS, str(stack_file), str(runs)], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1]))


def sdk_modules_of_prod_preview() -> list[str]:
    """The SDK modules (pulumi*) a real prod preview ends up loading, collected from a real run."""
    code = (
        "import sys, json, contextlib, io\n"
        "from tools.cli.preview import preview\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    preview('prod', as_json=True)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'))))\n"
    )
    out = subprocess.run([PY, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    modules: list[str] = json.loads(out.strip().splitlines()[-1])
    return modules


def test_command() -> list[list[str]]:
    """The steps of the README's test command after the install, read from ``.ci/run`` (its last line; a test keeps
    it identical to the README's): ``[["ruff", "check", "."], ..., ["python", "-m", "pytest"]]``."""
    line = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    steps = [step.split() for step in line.split(" && ")]
    return [[step[0].removeprefix("venv/bin/"), *step[1:]] for step in steps if step[0].startswith("venv/bin/")][1:]


def test_command_seconds(root: Path, venv: Path) -> dict[str, float]:
    """Wall seconds of each step of the README's test command in ``root`` with ``venv``'s tools, without caches
    (mypy on an empty cache directory, ruff with RUFF_NO_CACHE): a fresh clone has none."""
    times: dict[str, float] = {}
    env = {**os.environ, "RUFF_NO_CACHE": "true"}
    with tempfile.TemporaryDirectory() as cache:
        for step in test_command():
            cmd = [str(venv / "bin" / step[0]), *step[1:]]
            if step[0] == "mypy":
                cmd += ["--cache-dir", cache]
            t = time.perf_counter()
            result = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False, env=env)
            times[" ".join(step)] = time.perf_counter() - t
            if result.returncode != 0:
                raise RuntimeError(
                    f"{' '.join(step)} failed in {root}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
                )
    return times


def fresh_clone_seconds() -> tuple[float, dict[str, float]]:
    """Clone the committed tree next to this one (so ../shared is beside it, as in CI), create the venv, install
    requirements-dev.txt, then time the test command. Returns (install seconds, test-command step seconds)."""
    import shutil

    clone = Path(tempfile.mkdtemp(prefix=".hpi-bench-clone-", dir=ROOT.parent))
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(clone / "venv")], check=True)
        subprocess.run(
            [str(clone / "venv" / "bin" / "pip"), "install", "-q", "-r", "requirements-dev.txt"],
            cwd=clone,
            check=True,
            capture_output=True,
        )
        install = time.perf_counter() - t
        return install, test_command_seconds(clone, clone / "venv")
    finally:
        shutil.rmtree(clone, ignore_errors=True)


def machine() -> str:
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.machine()}, {os.cpu_count()} cores, {mem_gb:.0f} GiB, Python {platform.python_version()}, {platform.platform()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", type=Path, help="write the results as Markdown (e.g. BENCHMARKS.md)")
    parser.add_argument("--skip-suite", action="store_true", help="don't time the test command")
    parser.add_argument(
        "--fresh-clone",
        action="store_true",
        help="time the test command on a fresh clone with a new venv (adds ~4 min), instead of in this tree",
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]

    modules = sdk_modules_of_prod_preview()
    floor = measure(
        [PY, "-c", "import importlib,sys\nfor m in sys.argv[1:]: importlib.import_module(m)", *modules], args.runs
    )
    results: dict[str, Sample] = {"import floor": floor}
    for stack in ("dev", "prod"):
        results[f"preview {stack}"] = measure([PY, "-m", "tools.cli.preview", "--stack", stack, "--json"], args.runs)
    in_process: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        # The pull-request path: the prod plan diffed against a saved one (here: itself, every step compared).
        base = Path(tmp) / "prod-plan.json"
        base.write_text(
            subprocess.run(
                [PY, "-m", "tools.cli.preview", "--stack", "prod", "--json"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout,
            encoding="utf-8",
        )
        results["preview prod --diff"] = measure(
            [PY, "-m", "tools.cli.preview", "--stack", "prod", "--diff", str(base), "--json"], args.runs
        )
        for n in (1, 50, 200):
            path = Path(tmp) / f"Pulumi.bench{n}.yaml"
            path.write_text(yaml.safe_dump(endpoint_stack(n)), encoding="utf-8")
            cmd = [PY, "-m", "tools.cli.preview", "--stack", f"bench{n}", "--stack-file", str(path), "--json"]
            results[f"{n} endpoints"] = measure(cmd, args.runs)
            in_process[n] = run_seconds(path, args.runs)
    # Marginal cost: least-squares slope of the in-process run time through the three sizes.
    points = sorted(in_process.items())
    per_endpoint_ms = statistics.linear_regression([x for x, _ in points], [y for _, y in points]).slope * 1000
    ratio = results["preview prod"].wall_s / floor.wall_s
    diff_ratio = results["preview prod --diff"].wall_s / floor.wall_s
    install: float | None = None
    steps: dict[str, float] | None = None
    if args.fresh_clone:
        install, steps = fresh_clone_seconds()
    elif not args.skip_suite:
        steps = test_command_seconds(ROOT, ROOT / "venv")

    checks = [
        (
            "prod preview / import floor",
            f"{ratio:.2f}x",
            f"<= {TARGET_PREVIEW_OVER_FLOOR}x",
            ratio <= TARGET_PREVIEW_OVER_FLOOR,
        ),
        (
            "prod preview --diff / import floor",
            f"{diff_ratio:.2f}x",
            f"<= {TARGET_PREVIEW_OVER_FLOOR}x",
            diff_ratio <= TARGET_PREVIEW_OVER_FLOOR,
        ),
        (
            "marginal cost per endpoint",
            f"{per_endpoint_ms:.1f} ms",
            f"< {TARGET_MS_PER_ENDPOINT} ms",
            per_endpoint_ms < TARGET_MS_PER_ENDPOINT,
        ),
        (
            "peak RSS at 200 endpoints",
            f"{results['200 endpoints'].rss_mb:.0f} MB",
            f"< {TARGET_RSS_MB_AT_200} MB",
            results["200 endpoints"].rss_mb < TARGET_RSS_MB_AT_200,
        ),
    ]
    from tools.cli.bench import rehearsal_table

    rehearsal_rows, prod_share = rehearsal_table(args.runs)
    checks.append(("rehearsal of prod / its preview", f"{prod_share:.1f} %", "<= 10 %", prod_share <= 10))
    if steps is not None:
        suite, command = steps["python -m pytest"], sum(steps.values())
        where = "fresh clone" if install is not None else "this tree, no caches"
        checks.append(("pytest", f"{suite:.0f} s", f"< {TARGET_SUITE_SECONDS} s", suite < TARGET_SUITE_SECONDS))
        checks.append(
            (
                f"README test command after install ({where})",
                f"{command:.0f} s",
                f"<= {TARGET_TEST_COMMAND_SECONDS} s",
                command <= TARGET_TEST_COMMAND_SECONDS,
            )
        )

    lines = [
        "# Benchmarks",
        "",
        f"Machine: {machine()}. Produced by `venv/bin/python -m bench.run --write BENCHMARKS.md` "
        f"({args.runs} runs per measurement, median wall time, max peak RSS; each run a fresh interpreter). "
        f"1-minute load average {load_before:.1f} at the start and {os.getloadavg()[0]:.1f} at the end "
        "(the machine is shared: wall times scale with the load, the ratios less so).",
        "",
        f"The import floor imports exactly the {len(modules)} SDK modules a prod preview loads, collected from a real run.",
        "",
        "| measurement | wall (median) | peak RSS |",
        "|---|---:|---:|",
        *(f"| {k} | {v.wall_s:.2f} s | {v.rss_mb:.0f} MB |" for k, v in results.items()),
        "",
        "In-process preview time (imports excluded, median after a warm-up run), used for the marginal cost: "
        + ", ".join(f"{n} endpoints {t * 1000:.0f} ms" for n, t in sorted(in_process.items()))
        + ".",
        "",
        "Fresh-interpreter times vary by about ±0.5 s from run to run on this machine (an import-floor median",
        "above a preview median is that noise); the in-process times are stable to a few per cent.",
        "",
        "| target | measured | goal | met |",
        "|---|---:|---:|:---:|",
        *(f"| {name} | {got} | {goal} | {'yes' if ok else '**no**'} |" for name, got, goal, ok in checks),
        "",
    ]
    lines += [
        "## The deploy rehearsal next to the preview",
        "",
        "In-process medians after a warm-up (`python -m tools.cli.bench`): the preview (which now runs the",
        "rehearsal and the capacity checks itself) and the rehearsal alone on the same graph.",
        "",
        *rehearsal_rows,
        "",
    ]
    if steps is not None:
        lines += [
            "## The test command",
            "",
            "The README's test command (what `.ci/run` runs after creating the venv and installing "
            "requirements-dev.txt), each step timed with no cache (mypy on an empty cache directory, "
            + ("on a fresh `git clone` with `../shared/crds` beside it" if install is not None else "in this tree")
            + ")"
            + (f"; the venv and the install took {install:.0f} s (pip's download cache warm)." if install else "."),
            "",
            "| step | wall |",
            "|---|---:|",
            *(f"| `{name}` | {sec:.1f} s |" for name, sec in steps.items()),
            f"| total | {sum(steps.values()):.1f} s |",
            "",
            "pytest runs on 2 xdist workers (`-n 2` in pyproject.toml). Each worker runs each reference stack's",
            "program once (session fixtures); command-line tests run `python -m` in-process through runpy",
            "(tests/cli_runner.py), with real-process smoke tests for pipes, hash seeds and the policy server;",
            "botocore's service models are parsed once per worker (tests/conftest.py); stack files are parsed on",
            "libyaml's parser (components/config/stackfile.py) and CRD validators built once per process.",
            "",
        ]
    lines += [
        "## What profiling found and fixed",
        "",
        "- Importing the `cfnlint` package to read its HyperPod instance-type table loaded the whole linter and sympy",
        "  (~1 s); the data file is now located without executing the package (`components/config/regions.py`).",
        "- The SDK's per-resource source-position capture (`traceback.extract_stack` with an `os.stat` per frame,",
        "  ~3 ms a resource) is discarded by the mock monitor; the harness skips it during mock runs.",
        "- Garbage collection re-scanned the ~1M objects of the imported SDK modules: `tools.cli.preview` freezes them",
        "  after import and enlarges the young generation for its short run (9.3 -> 7.2 ms per endpoint).",
        "- The graph monitor deserialized every resource's inputs a second time; the policy engine re-normalised",
        "  every resource's props once per policy. Both now happen once.",
        "- The offline diff reads the create-only properties from cfn-lint's schema files as data (the same way), so",
        "  `--diff` adds only the comparison of the two plans' inputs.",
        "",
    ]
    if LIVE_SECTION.is_file():  # measured by hand (a cold Go build takes tens of minutes): docs/live-tests.md
        lines += [LIVE_SECTION.read_text(encoding="utf-8").rstrip(), ""]
    text = "\n".join(lines)
    print(text)
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
