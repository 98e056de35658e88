"""Place the pinned HyperPod dependencies chart where the program reads it: ``python -m tools.fetch.chart``.

AWS does not publish ``helm_chart/HyperPodHelmChart`` to a Helm repository; it is installed from a checkout of
aws/sagemaker-hyperpod-cli. This tool makes that checkout reproducible: it shallow-fetches **exactly** the
commit ``cluster.hyperpodDependencies.gitCommit`` defaults to (``HYPERPOD_CLI_COMMIT``, reviewed to be on
``main``/a release tag, see ``REVIEWED_CHART_COMMITS``) into ``vendor/sagemaker-hyperpod-cli`` (gitignored),
checks it out detached, and verifies that ``HEAD`` is that commit and that the chart is there. A branch name is
never fetched, so the result cannot drift.

Run it once per clone (and again after the pin changes); a real ``pulumi preview``/``up`` stops with a config
error naming this command while the chart is missing or is another commit. The pull-request workflow runs it
before ``pulumi preview``. ``--url`` points at a mirror (the tests use a local bare repository).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from components.config.cluster import HYPERPOD_CLI_COMMIT, HYPERPOD_CLI_REPO_URL, PROJECT_ROOT, vendored_commit
from tools.report import cli

DEST = PROJECT_ROOT / "vendor" / "sagemaker-hyperpod-cli"
CHART = Path("helm_chart") / "HyperPodHelmChart"


class VendorError(RuntimeError):
    """The checkout could not be made or is not the pinned commit."""


def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise VendorError(f"git {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def vendor(url: str = HYPERPOD_CLI_REPO_URL, commit: str = HYPERPOD_CLI_COMMIT, dest: Path = DEST) -> Path:
    """Fetch ``commit`` of ``url`` (depth 1) into ``dest`` and return the chart directory.

    An existing ``dest`` that already is a checkout of ``commit`` is kept; any other content of ``dest`` is
    replaced (it is a cache under the gitignored ``vendor/``).
    """
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise VendorError(f"{commit!r} is not a full commit id; pin a 40-hex-digit commit, never a branch")
    chart = dest / CHART
    if vendored_commit(chart if chart.exists() else dest) == commit and (chart / "Chart.yaml").is_file():
        return chart
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    try:
        _git("init", "--quiet", str(dest))
        _git("fetch", "--quiet", "--depth", "1", "--no-tags", url, commit, cwd=dest)
        _git("checkout", "--quiet", "--detach", "FETCH_HEAD", cwd=dest)
        head = _git("rev-parse", "HEAD", cwd=dest)
        if head != commit:
            raise VendorError(f"fetched {head}, expected {commit}")
        if not (chart / "Chart.yaml").is_file():
            raise VendorError(f"{url}@{commit} has no {CHART}/Chart.yaml")
    except VendorError:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return chart


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fetch.chart", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=HYPERPOD_CLI_REPO_URL, help="git URL of aws/sagemaker-hyperpod-cli")
    parser.add_argument("--commit", default=HYPERPOD_CLI_COMMIT, help="commit to fetch (default: the pin)")
    parser.add_argument("--dest", type=Path, default=DEST, help="checkout directory (default: vendor/...)")
    ns = parser.parse_args(argv)
    try:
        chart = vendor(ns.url, ns.commit, ns.dest)
    except VendorError as err:
        print(f"vendor_chart: {err}", file=sys.stderr)
        return 1
    print(f"{chart} is aws/sagemaker-hyperpod-cli@{ns.commit}")
    return 0


if __name__ == "__main__":
    cli.run(main)
