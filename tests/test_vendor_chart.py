"""``python -m tools.fetch.chart`` against a local bare repository, and the program's check of what it placed.

GitHub is not reachable here, so the tests build a bare repository (``uploadpack.allowReachableSHA1InWant``, which
is what lets GitHub serve a fetch by commit id) with two commits: one with ``helm_chart/HyperPodHelmChart`` and one
without it on a later commit.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.config import ConfigError
from components.config.cluster import HyperPodDependenciesConfig, chart_issues
from components.config.loader import parse_stack_config
from tests.conftest import stack_mapping
from tools.fetch import chart as vendor_chart
from tools.fetch.chart import VendorError, vendor

CHART_YAML = "apiVersion: v2\nname: hyperpod-helm-chart\nversion: 0.1.0\n"


def _git(*args: str, cwd: Path) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def upstream(tmp_path: Path) -> dict[str, Any]:
    """A bare repo with commit ``with_chart`` (the chart) and, on top of it on main, ``without_chart``."""
    work = tmp_path / "work"
    work.mkdir()
    _git("init", "--quiet", "--initial-branch", "main", cwd=work)
    chart = work / "helm_chart" / "HyperPodHelmChart"
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text(CHART_YAML, encoding="utf-8")
    _git("add", "-A", cwd=work)
    _git("commit", "--quiet", "-m", "chart", cwd=work)
    with_chart = _git("rev-parse", "HEAD", cwd=work)
    _git("rm", "--quiet", "-r", "helm_chart", cwd=work)
    (work / "README").write_text("no chart\n", encoding="utf-8")
    _git("add", "-A", cwd=work)
    _git("commit", "--quiet", "-m", "drop chart", cwd=work)
    without_chart = _git("rev-parse", "HEAD", cwd=work)
    bare = tmp_path / "upstream.git"
    _git("clone", "--quiet", "--bare", str(work), str(bare), cwd=tmp_path)
    _git("config", "uploadpack.allowReachableSHA1InWant", "true", cwd=bare)
    return {"url": f"file://{bare}", "with_chart": with_chart, "without_chart": without_chart}


def test_fetches_exactly_the_commit_shallow_and_detached(upstream: dict[str, Any], tmp_path: Path) -> None:
    dest = tmp_path / "vendor" / "sagemaker-hyperpod-cli"
    chart = vendor(upstream["url"], upstream["with_chart"], dest)
    assert chart == dest / "helm_chart" / "HyperPodHelmChart"
    assert (chart / "Chart.yaml").read_text(encoding="utf-8") == CHART_YAML
    assert _git("rev-parse", "HEAD", cwd=dest) == upstream["with_chart"]
    assert _git("rev-parse", "--is-shallow-repository", cwd=dest) == "true"
    assert _git("rev-list", "--count", "HEAD", cwd=dest) == "1"
    assert (dest / ".git" / "HEAD").read_text(encoding="utf-8").strip() == upstream["with_chart"]  # detached
    # The later commit on main was not fetched.
    missing = subprocess.run(["git", "cat-file", "-e", upstream["without_chart"]], cwd=dest, check=False)
    assert missing.returncode != 0


def test_an_existing_checkout_of_the_commit_is_kept(upstream: dict[str, Any], tmp_path: Path) -> None:
    dest = tmp_path / "v"
    vendor(upstream["url"], upstream["with_chart"], dest)
    marker = dest / "helm_chart" / "HyperPodHelmChart" / "marker"
    marker.write_text("kept", encoding="utf-8")
    # an unreachable URL proves nothing is fetched again
    vendor("file:///nonexistent/repo.git", upstream["with_chart"], dest)
    assert marker.read_text(encoding="utf-8") == "kept"


def test_another_commit_replaces_a_stale_checkout(upstream: dict[str, Any], tmp_path: Path) -> None:
    dest = tmp_path / "v"
    (dest / "helm_chart" / "HyperPodHelmChart").mkdir(parents=True)
    (dest / "helm_chart" / "HyperPodHelmChart" / "Chart.yaml").write_text("stale", encoding="utf-8")
    vendor(upstream["url"], upstream["with_chart"], dest)
    assert (dest / "helm_chart" / "HyperPodHelmChart" / "Chart.yaml").read_text(encoding="utf-8") == CHART_YAML


@pytest.mark.parametrize(
    ("commit", "message"),
    [
        ("main", "is not a full commit id"),
        ("0" * 40, "failed"),  # not in the repository
        (None, "has no helm_chart/HyperPodHelmChart/Chart.yaml"),  # the later commit without the chart
    ],
)
def test_failures_leave_nothing_behind(
    upstream: dict[str, Any], tmp_path: Path, commit: str | None, message: str
) -> None:
    dest = tmp_path / "v"
    with pytest.raises(VendorError, match=message):
        vendor(upstream["url"], commit or upstream["without_chart"], dest)
    assert not (dest / "helm_chart").exists()


def test_cli_exit_codes(upstream: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "v"
    assert vendor_chart.main(["--url", upstream["url"], "--commit", upstream["with_chart"], "--dest", str(dest)]) == 0
    assert f"aws/sagemaker-hyperpod-cli@{upstream['with_chart']}" in capsys.readouterr().out
    assert vendor_chart.main(["--url", upstream["url"], "--commit", "0" * 40, "--dest", str(tmp_path / "w")]) == 1
    assert "vendor_chart:" in capsys.readouterr().err


# --- what the program checks before a real preview/up ------------------------------------------------------


def _deps(chart_path: Path, commit: str) -> HyperPodDependenciesConfig:
    # model_construct: the tmp repository's commit is not one of the reviewed pins the validator allows
    return HyperPodDependenciesConfig.model_construct(enabled=True, chart_path=str(chart_path), git_commit=commit)


def test_chart_check_names_the_command_and_the_commit(upstream: dict[str, Any], tmp_path: Path) -> None:
    missing = chart_issues(_deps(tmp_path / "nowhere" / "HyperPodHelmChart", upstream["with_chart"]))
    assert [i.path for i in missing] == ["cluster.hyperpodDependencies.chartPath"]
    assert "run `python -m tools.fetch.chart`" in missing[0].message

    chart = vendor(upstream["url"], upstream["with_chart"], tmp_path / "v")
    assert chart_issues(_deps(chart, upstream["with_chart"])) == []
    other = chart_issues(_deps(chart, "f" * 40))
    assert len(other) == 1
    assert f"is a checkout of {upstream['with_chart']}, not gitCommit {'f' * 40}" in other[0].message
    # a plain directory with a Chart.yaml (e.g. a copy, not a checkout) is not accepted either
    plain = tmp_path / "copy" / "HyperPodHelmChart"
    plain.mkdir(parents=True)
    (plain / "Chart.yaml").write_text(CHART_YAML, encoding="utf-8")
    assert "an unknown commit" in chart_issues(_deps(plain, upstream["with_chart"]))[0].message
    assert chart_issues(HyperPodDependenciesConfig.model_construct(enabled=False, chart_path="x", git_commit="y")) == []


def _values(stack: str) -> dict[str, Any]:
    mapping = stack_mapping(stack)
    prefix = "hyperpod-inference:"
    return {k[len(prefix) :]: v for k, v in mapping.items() if k.startswith(prefix)}


def test_real_run_without_the_chart_stops_with_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not under mocks (a real engine's monitor): a missing chart is a config error before anything registers."""
    from pulumi.runtime import settings

    values = _values("dev")
    values["cluster"]["hyperpodDependencies"] = {"chartPath": "vendor/not-vendored/helm_chart/HyperPodHelmChart"}
    # Under mocks (the harness) or with no Pulumi runtime the same config is fine ...
    parse_stack_config(values, stack="dev", region="us-west-2")
    # ... under a real engine it is not.
    monkeypatch.setattr(settings, "get_monitor", object)  # any non-mock monitor
    with pytest.raises(ConfigError) as err:
        parse_stack_config(values, stack="dev", region="us-west-2")
    rendered = [i.render() for i in err.value.issues]
    assert rendered == [
        "hyperpod-inference:cluster.hyperpodDependencies.chartPath: no Helm chart at "
        "vendor/not-vendored/helm_chart/HyperPodHelmChart; run `python -m tools.fetch.chart` to fetch "
        "aws/sagemaker-hyperpod-cli@b01cf90676553a711ab1a8ac51422adbb09aef6b into vendor/"
    ]
