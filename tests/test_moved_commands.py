"""The old ``python -m tools.<name>`` command lines still run for one release, each with one deprecation line on
stderr (written by the tools/ reorganisation script, issue 36 stage 2)."""

from __future__ import annotations

import pytest

from tests.cli_runner import run_module

ALIASES = {
    "tools.capacity": "hpi capacity",
    "tools.ci_matrix": "hpi generate ci-matrix",
    "tools.config_reference": "hpi generate config-reference",
    "tools.crd_models": "hpi generate crd-models",
    "tools.deployer_policy": "hpi deployer-policy",
    "tools.fetch_crds": "hpi fetch crds",
    "tools.guardduty_cleanup": "hpi guardduty-cleanup",
    "tools.policy": "hpi policy",
    "tools.preflight": "hpi preflight",
    "tools.preflight_global": "hpi preflight-global",
    "tools.preview": "hpi preview",
    "tools.rehearse.bench": "python -m tools.cli.bench",
    "tools.replacement_rules": "hpi generate replacement-rules",
    "tools.unconfirmed": "hpi unconfirmed",
    "tools.vendor_chart": "hpi fetch chart",
}


@pytest.mark.parametrize(("old", "instead"), sorted(ALIASES.items()))
def test_an_old_command_line_says_it_moved_and_runs(old: str, instead: str) -> None:
    done = run_module(old, "--help")
    assert done.stderr.splitlines()[0] == f"python -m {old} is deprecated and goes in the next release; run {instead}"
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
