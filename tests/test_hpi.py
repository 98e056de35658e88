"""``hpi``, the one command line (hpi/): its help tree, project discovery, the exit-2 path outside a project, and
that each subcommand runs its tool's ``main`` with the tool's own options and the arguments given.

Most run in this process (tests/cli_runner.py, ``python -m hpi``); a few start a real process where the point is
the process: the console script the install gives, and ``--cwd`` from a directory outside the project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from hpi import app
from hpi.commands import BY_PATH, COMMANDS, Command
from hpi.project import NoProject, find_project
from tests.cli_runner import run_module
from tools.plan.harness import ROOT

TOP = [
    "preview",
    "rehearse",
    "capacity",
    "preflight",
    "preflight-global",
    "verify",
    "policy",
    "deployer-policy",
    "guardduty-cleanup",
    "unconfirmed",
    "generate",
    "fetch",
    "completion",
]
GENERATE = [
    "crd-models",
    "replacement-rules",
    "config-reference",
    "config-schema",
    "instance-types",
    "config-namespaces",
    "ci-matrix",
]
FETCH = ["crds", "chart"]


def hpi(*args: str) -> subprocess.CompletedProcess[str]:
    return run_module("hpi", *args)


def _listed(help_text: str) -> list[str]:
    """The subcommand names of an argparse help's command list, in order."""
    lines = help_text.split("COMMAND\n", 2)[-1].splitlines()
    return [line.split()[0] for line in lines if line.startswith("    ") and not line.startswith("     ")]


def test_help_lists_every_subcommand_in_order() -> None:
    done = hpi("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: hpi [-h] [--cwd DIR] COMMAND ...")
    assert _listed(done.stdout) == TOP
    assert _listed(hpi("generate", "--help").stdout) == GENERATE
    assert _listed(hpi("fetch", "--help").stdout) == FETCH


def test_help_needs_no_project(tmp_path: Path) -> None:
    done = hpi("--cwd", str(tmp_path), "--help")
    assert done.returncode == 0
    assert "preview" in done.stdout


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        (["preview"], ["--stack", "--stack-file", "--out", "--json", "--diff", "--critical-path", "--graph"]),
        (["rehearse"], ["--stack", "--json", "--destroy", "--member-outputs"]),
        (["preflight"], ["--stack", "--profile", "--fetch-jwks"]),
        (["preflight-global"], ["--stack", "--member-outputs", "--profile"]),
        (["generate", "config-schema"], ["--write", "--check"]),
        (["capacity"], ["--stack", "--stack-file", "--json"]),
        (["policy"], ["--stack", "--list", "--stack-file"]),
    ],
)
def test_a_subcommand_help_shows_its_tools_options(argv: list[str], options: list[str]) -> None:
    done = hpi(*argv, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: hpi {' '.join(argv)} [-h]")
    for option in options:
        assert f" {option}" in done.stdout, option


def test_every_subcommand_has_exactly_its_tools_options() -> None:
    """The grafted parser is the tool's own: the same option strings, nothing lost, nothing added."""
    tree = app.full_parser()
    for command in COMMANDS:
        if not command.parser or (command.name == "verify" and not _has_verify()):
            continue
        tool = app.tool_parser(app.load_main(command))
        sub = tree
        for word in command.path:
            sub = next(a for a in sub._subparsers._group_actions if a.choices).choices[word]  # type: ignore[union-attr]
        assert set(sub._option_string_actions) == set(tool._option_string_actions), command.name
        assert [a.required for a in sub._actions] == [a.required for a in tool._actions], command.name


def _has_verify() -> bool:
    import importlib.util

    return importlib.util.find_spec("tools.verify") is not None


def test_the_table_names_modules_with_a_main() -> None:
    for command in COMMANDS:
        if command.name == "verify" and not _has_verify():
            continue
        assert callable(app.load_main(command)), command.name


def test_a_table_entry_without_argparse_is_marked() -> None:
    """``parser=False`` is right for the commands marked so, and taking the parser of one would run it."""
    with pytest.raises(TypeError, match="without parsing its arguments"):
        app.tool_parser(lambda argv: 0)
    for command in COMMANDS:
        if not command.parser:
            source = Path(ROOT, *command.module.split(".")).with_suffix(".py").read_text(encoding="utf-8")
            assert "ArgumentParser(" not in source, command.name


# --- project discovery ---------------------------------------------------------------------------------------


def test_find_project_walks_up_to_pulumi_yaml(tmp_path: Path) -> None:
    assert find_project(ROOT / "components" / "config") == ROOT
    (tmp_path / "Pulumi.yaml").write_text("name: x\n", encoding="utf-8")
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert find_project(tmp_path / "a" / "b") == tmp_path
    assert find_project(tmp_path) == tmp_path


def test_find_project_outside_one(tmp_path: Path) -> None:
    with pytest.raises(NoProject, match=r"no Pulumi\.yaml in .* or any directory above it.*hpi --cwd DIR"):
        find_project(tmp_path)
    with pytest.raises(NoProject, match="no such directory"):
        find_project(tmp_path / "missing")


def test_outside_a_project_exits_2_naming_pulumi_yaml(tmp_path: Path) -> None:
    done = hpi("--cwd", str(tmp_path), "preview", "--stack", "dev")
    assert done.returncode == 2
    assert "no Pulumi.yaml in" in done.stderr
    assert "--cwd DIR" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def _process(cwd: Path, *args: str, executable: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # this checkout's hpi (an editable install elsewhere would otherwise win over it)
    env["PYTHONPATH"] = str(ROOT)
    command = executable or [sys.executable, "-m", "hpi"]
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False)


def test_real_process_outside_a_project(tmp_path: Path) -> None:
    done = _process(tmp_path, "preview", "--stack", "dev")
    assert done.returncode == 2
    assert f"no Pulumi.yaml in {tmp_path.resolve()} or any directory above it" in done.stderr


def test_real_process_cwd_from_tmp(tmp_path: Path) -> None:
    """From a directory outside the project, ``--cwd`` runs the project's preview (no "No module named tools")."""
    done = _process(tmp_path, "--cwd", str(ROOT), "rehearse", "--stack", "dev", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout)
    assert data["stack"] == "dev"


def test_real_process_walks_up_from_a_subdirectory() -> None:
    done = _process(ROOT / "stacks", "generate", "config-schema", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_console_script_is_declared_and_installed() -> None:
    """pyproject declares ``hpi``; requirements.txt installs the project (``-e .``, which requirements-dev.txt
    includes through requirements-tools.txt) next to this interpreter."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"] == {"hpi": "hpi.app:main"}
    assert project["build-system"]["requires"] == ["setuptools==84.2.1"]
    assert "-e .\n" in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    script = Path(sys.executable).parent / "hpi"
    assert script.is_file(), f"{script}: run venv/bin/pip install -r requirements-dev.txt"
    done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert _listed(done.stdout) == TOP


# --- dispatch ------------------------------------------------------------------------------------------------


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[list[str] | None] = []

    def __call__(self, argv: list[str] | None = None) -> int:
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--stack", required=True)
        parser.add_argument("--json", action="store_true")
        parser.parse_args(argv)
        self.calls.append(argv)
        return 7


def test_dispatch_hands_the_tool_its_arguments_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder()
    monkeypatch.setattr(app, "load_main", lambda command: recorder)
    done = hpi("--cwd", str(ROOT / "stacks"), "rehearse", "--stack", "dev", "--json")
    assert done.returncode == 7  # the tool's exit code is hpi's
    assert recorder.calls == [["--stack", "dev", "--json"]]
    done = hpi("--cwd=" + str(ROOT), "generate", "crd-models", "--stack", "x")
    assert recorder.calls[-1] == ["--stack", "x"]


def test_dispatch_refuses_bad_options_before_the_tool_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder()
    monkeypatch.setattr(app, "load_main", lambda command: recorder)
    done = hpi("preview", "--stak", "dev")
    assert done.returncode == 2
    assert "usage: hpi preview" in done.stderr
    assert "the following arguments are required: --stack" in done.stderr
    assert recorder.calls == []  # hpi took its parser (stopped at parse_args); the tool never ran


def test_unknown_subcommand_exits_2() -> None:
    done = hpi("previw")
    assert done.returncode == 2
    assert "invalid choice: 'previw'" in done.stderr
    assert hpi("generate").returncode == 2


def test_a_command_line_without_argparse_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(app, "load_main", lambda command: lambda: seen.append(command.name) or 0)
    assert hpi("generate", "ci-matrix").returncode == 0
    assert seen == ["generate ci-matrix"]
    done = hpi("generate", "ci-matrix", "--extra")
    assert done.returncode == 2
    assert "unrecognized arguments: --extra" in done.stderr


def test_a_tool_the_checkout_lacks_is_a_clear_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = Command("verify", "tools.no_such_tool", "post-deploy checks")
    monkeypatch.setitem(BY_PATH, ("verify",), missing)
    done = hpi("verify", "--stack", "dev")
    assert done.returncode == 2
    assert "hpi verify: this checkout of the project has no tools.no_such_tool" in done.stderr
    assert "Traceback" not in done.stderr


def test_real_tools_run_through_hpi() -> None:
    done = hpi("generate", "config-schema", "--check")
    assert (done.returncode, done.stdout) == (0, "")
    done = hpi("preview", "--stack", "nosuch")
    assert done.returncode == 2
    assert "no stack 'nosuch'" in done.stdout


def test_capacity_prints_the_stacks_groups() -> None:
    done = hpi("capacity", "--stack", "dev", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert [g["name"] for g in data["groups"]] == ["system", "gpu-p5"]
    assert data["unplacedPods"] == {}


def test_policy_lists_and_evaluates_the_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    listed = hpi("policy", "--list")
    assert listed.returncode == 0
    assert "kv-cache-requires-vllm" in listed.stdout
    done = hpi("policy", "--stack", "dev")
    assert done.returncode == 0, done.stdout
    assert "mandatory and" in done.stdout
    assert " 0 mandatory and" in done.stdout
    assert hpi("policy").returncode == 2  # --stack or --list

    import tools.cli.policy
    from policies.engine import PolicyResult

    refused = PolicyResult("mandatory", "some-policy", "aws:ec2/vpc:Vpc", "vpc", "why")
    monkeypatch.setattr(tools.cli.policy, "evaluate", lambda *a: [refused])
    done = hpi("policy", "--stack", "dev")
    assert done.returncode == 1
    assert "MANDATORY some-policy aws:ec2/vpc:Vpc::vpc: why" in done.stdout


def test_completion_script_names_the_tree() -> None:
    done = hpi("completion", "bash")
    assert done.returncode == 0, done.stderr
    for word in ("preview", "crd-models", "--critical-path", "--destroy", "chart"):
        assert word in done.stdout, word
    assert hpi("completion", "fish").returncode == 2
