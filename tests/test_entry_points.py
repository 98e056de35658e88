"""One error path for every entry point (issue 25, points 6 and 7).

Every command line takes ``--stack`` / ``--stack-file``, reports bad input as ``file:line`` with exit 2 and no
traceback; modules that are not command lines say so and exit 2; ``python -m components.config.schema`` writes
nothing unless asked. The global stack previews and rehearses offline for any organisation with
``--member-outputs FILE``, and says when mock member outputs were used.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.config.schema import SCHEMA_PATH
from tests.cli_runner import run_module
from tests.conftest import stack_mapping
from tools.plan.harness import ROOT
from tools.plan.mocks import hyperpod_cluster_arn

BROKEN = "config:\n  aws:region: us-west-2\n  hyperpod-inference:environment: [dev\n"


def _process(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """A real ``python -m``: for the smoke tests below that prove the in-process runner tells the truth."""
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=timeout
    )


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` in this process (tests/cli_runner.py)."""
    return run_module(module, *args)


def _clean_exit_2(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    both = result.stdout + result.stderr
    assert result.returncode == 2, both
    assert "Traceback" not in both
    for text in expected:
        assert text in both, both
    return both


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "module",
    ["tools.cli.preview", "tools.rehearse", "tools.preflight.regional", "tools.preflight.global_stack"],
    ids=lambda m: m,
)
def test_yaml_error_is_file_line_exit_2(module: str, broken: Path) -> None:
    """tools.rehearse and tools.preflight.regional printed a traceback and exited 1 on a YAML error."""
    _clean_exit_2(_run(module, "--stack", "broken", "--stack-file", str(broken)), f"{broken}:4:1: YAML syntax error")


@pytest.mark.parametrize(
    "module",
    ["tools.cli.preview", "tools.rehearse", "tools.preflight.regional", "tools.preflight.global_stack"],
    ids=lambda m: m,
)
def test_unknown_stack_lists_the_stacks(module: str) -> None:
    """tools.preflight.global_stack --stack nosuch gave a traceback."""
    _clean_exit_2(
        _run(module, "--stack", "nosuch"),
        "no stack 'nosuch'",
        "stacks in stacks/: attach, dev, global, prod, staging",
    )


@pytest.mark.parametrize("module", ["tools.preflight.regional", "tools.preflight.global_stack"])
def test_one_flag_name_for_the_stack_file(module: str, broken: Path) -> None:
    """preflight took --file while preview and rehearse take --stack-file; --file is gone everywhere."""
    result = _run(module, "--stack", "broken", "--file", str(broken))
    assert result.returncode == 2 and "unrecognized arguments: --file" in result.stderr


@pytest.mark.parametrize(
    ("module", "instead"),
    [
        ("tools.plan.writer", "python -m tools.cli.preview --stack <name> --json"),
        ("tools.plan.diff", "--diff BASE.json"),
        ("tools.plan.render", "--out DIR"),
        ("tools.rehearse.graph", "--graph FILE.dot"),
        ("tools.plan.mocks", "python -m tools.cli.preview --stack <name>"),
        ("tools.plan.harness", "python -m tools.rehearse --stack <name>"),
        ("tools.plan.capacity_table", "capacity table"),
        ("tools.preflight.checks", "python -m tools.preflight.regional --stack <name>"),
        ("tools.rehearse.create", "python -m tools.rehearse --stack <name>"),
        ("tools.plan.member_outputs", "--member-outputs FILE"),
        ("tools.report.cli", "python -m tools.cli.preview"),
    ],
)
def test_library_modules_say_they_are_not_command_lines(module: str, instead: str) -> None:
    """They printed nothing and exited 0, even for a stack that does not exist."""
    result = _run(module, "--stack", "nosuch")
    assert result.returncode == 2
    last = result.stderr.splitlines()[-1]  # (a package's submodule may add a runpy RuntimeWarning first)
    assert last.startswith(f"{module} is a library module, not a command line; run ")
    assert instead in last and result.stdout == ""


def test_every_tools_module_is_a_command_line_or_says_it_is_not() -> None:
    """A guard for modules added later: each tools/*.py has a `__main__` branch."""
    missing = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "tools").rglob("*.py"))
        if p.name != "__init__.py" and 'if __name__ == "__main__":' not in p.read_text(encoding="utf-8")
    ]
    assert missing == []


def test_schema_module_writes_nothing_unless_asked() -> None:
    before = SCHEMA_PATH.stat().st_mtime_ns
    result = _run("components.config.schema")
    assert result.returncode == 0
    assert json.loads(result.stdout)["title"] == "hyperpod-inference stack file"
    assert SCHEMA_PATH.stat().st_mtime_ns == before, "printing the schema must not rewrite stacks/schema.json"
    check = _run("components.config.schema", "--check")
    assert check.returncode == 0, check.stdout
    bad = _run("components.config.schema", "--wirte")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_config_reference_bad_argument_is_exit_2() -> None:
    result = _run("tools.generate.config_reference", "--chek")
    _clean_exit_2(result, "unrecognized arguments: --chek")


def test_bad_member_outputs_json_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "members.json"
    path.write_text('{\n  "acme/hyperpod-inference/prod": {\n', encoding="utf-8")
    for module in ("tools.cli.preview", "tools.rehearse", "tools.preflight.global_stack"):
        _clean_exit_2(_run(module, "--stack", "global", "--member-outputs", str(path)), f"{path}:3:1: --member-outputs")


def test_member_outputs_only_for_a_global_stack(tmp_path: Path) -> None:
    path = tmp_path / "members.json"
    path.write_text("{}", encoding="utf-8")
    _clean_exit_2(
        _run("tools.cli.preview", "--stack", "dev", "--member-outputs", str(path)),
        "only a global stack (hyperpod-inference:role: global) has members; stack dev is regional",
    )


# --- point 7: the global stack of any organisation, offline --------------------------------------------------

BIGCO = {
    "bigco/llm/prod-euw1": {
        "gatewayEnabled": True,
        "name": "inference-gateway",
        "namespace": "hyperpod-inference-system",
        "region": "eu-west-1",
        "jwtRequired": True,
        "environment": "prod",
        "clusterArn": "arn:aws:sagemaker:eu-west-1:123456789012:cluster/a1b2c3d4e5f6",
    },
    "bigco/llm/prod-use2": {
        "gatewayEnabled": True,
        "name": "inference-gateway",
        "namespace": "hyperpod-inference-system",
        "region": "us-east-2",
        "jwtRequired": True,
        "environment": "prod",
        "clusterArn": "arn:aws:sagemaker:us-east-2:123456789012:cluster/f6e5d4c3b2a1",
    },
}


def _bigco(tmp_path: Path) -> tuple[Path, Path]:
    import yaml

    mapping = stack_mapping("global")
    mapping["hyperpod-inference:members"] = [{"stack": s} for s in BIGCO]
    stack = tmp_path / "Pulumi.global.yaml"
    stack.write_text(yaml.safe_dump({"config": mapping}), encoding="utf-8")
    members = tmp_path / "members.json"
    members.write_text(json.dumps(BIGCO), encoding="utf-8")
    return stack, members


def test_preview_of_another_organisations_global_stack_with_member_outputs(tmp_path: Path) -> None:
    stack, members = _bigco(tmp_path)
    result = _run(
        "tools.cli.preview", "--stack", "global", "--stack-file", str(stack), "--member-outputs", str(members), "--json"
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    plan = json.loads(result.stdout)
    assert plan["hyperpodInference"]["memberOutputs"] == [
        {"stack": s, "source": f"--member-outputs {members}", "mock": False} for s in BIGCO
    ]
    (gateway,) = [s for s in plan["steps"] if s["newState"]["type"] == "pulumi-python:dynamic:Resource"]
    assert [m["clusterArn"] for m in gateway["newState"]["inputs"]["members"]] == [
        m["clusterArn"] for m in BIGCO.values()
    ]


def test_preview_without_member_outputs_says_mock_outputs_were_used(tmp_path: Path) -> None:
    """A real organisation's global stack used to fail offline with a message that read like a real lookup."""
    stack, _ = _bigco(tmp_path)
    result = _run("tools.cli.preview", "--stack", "global", "--stack-file", str(stack))
    assert result.returncode == 0, result.stdout[-3000:]
    assert (
        "member outputs: MOCK values were used for 2 of 2 member(s) — bigco/llm/prod-euw1: mock outputs (no "
        "--member-outputs entry, no Pulumi.prod-euw1.yaml here): a JWT-protected prod gateway in us-east-1"
    ) in result.stdout
    assert "Pass --member-outputs FILE with each member's `pulumi stack output globalGatewayMember --json`" in (
        result.stdout
    )


def test_rehearse_takes_member_outputs_too(tmp_path: Path) -> None:
    stack, members = _bigco(tmp_path)
    result = _run(
        "tools.rehearse", "--stack", "global", "--stack-file", str(stack), "--member-outputs", str(members), "--json"
    )
    assert result.returncode == 0, result.stdout[-3000:]
    data = json.loads(result.stdout)
    assert [m["mock"] for m in data["memberOutputs"]] == [False, False]
    assert data["advisories"] == []


def test_reference_global_stack_derives_a_member_from_its_stack_file(stack_runs) -> None:
    """acme/hyperpod-inference/prod has stacks/Pulumi.prod.yaml here: its export is what that stack exports."""
    from components.config import GlobalStackConfig
    from components.config.loader import parse_stack_mapping
    from tools.plan.member_outputs import resolve

    cfg = parse_stack_mapping("global", stack_mapping("global"))
    assert isinstance(cfg, GlobalStackConfig)
    prod, usw2 = resolve(cfg)
    assert prod.export == stack_runs["prod"].outputs["globalGatewayMember"]
    assert prod.source == "derived from stacks/Pulumi.prod.yaml (clusterArn is a mock value)" and prod.mock
    assert usw2.export["clusterArn"] == hyperpod_cluster_arn("us-east-1", "hpi-prod-usw2-hp") and usw2.mock


# --- the in-process runner against real processes ----------------------------------------------------------------


def test_real_process_agrees_with_the_in_process_runner_on_a_yaml_error(broken: Path) -> None:
    """The same command in a fresh interpreter and in tests/cli_runner.py: same exit status and message."""
    args = ("tools.rehearse", "--stack", "broken", "--stack-file", str(broken))
    real, in_process = _process(*args), _run(*args)
    assert (real.returncode, real.stdout, real.stderr) == (in_process.returncode, in_process.stdout, in_process.stderr)
    _clean_exit_2(real, f"{broken}:4:1: YAML syntax error")


def test_real_process_of_a_library_module_says_it_is_not_a_command_line() -> None:
    real = _process("tools.plan.harness", "--stack", "nosuch", timeout=120)
    assert real.returncode == 2 and real.stdout == ""
    assert real.stderr.splitlines()[-1].startswith("tools.plan.harness is a library module, not a command line; run ")


def test_in_process_runner_reports_an_escaping_exception_as_a_traceback(tmp_path: Path) -> None:
    """A crash must not look like success: exit 1 and a Traceback on stderr, as the interpreter reports it."""
    (tmp_path / "hpi_crashing_module.py").write_text('raise RuntimeError("boom")\n', encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        result = run_module("hpi_crashing_module")
    finally:
        sys.path.remove(str(tmp_path))
    assert result.returncode == 1 and "Traceback" in result.stderr and "RuntimeError: boom" in result.stderr
