"""The stack-file loader refuses every key it would not read (issue 25, point 1).

Duplicate keys at any depth (PyYAML keeps the last silently), keys without a namespace, namespaces nothing reads
(a misspelt project namespace gets the nearest as a hint), provider keys the provider does not have — each with
``file:line``, exit 2, before anything runs; the same in the JSON Schema editors use and in ``tools.generate.ci_matrix``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.config.data import generate_config_namespaces as gen
from components.config.schema import stack_config_schema
from components.config.stackfile import StackFileError, load_stack_file, parse_yaml, stack_path
from tests.cli_runner import run_module
from tests.conftest import stack_mapping
from tools.cli.preview import preview
from tools.generate.ci_matrix import matrix
from tools.plan.harness import ROOT

DEV = stack_path("dev").read_text(encoding="utf-8")


def _preview_cli(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m tools.cli.preview`` for this file, in this process (tests/cli_runner.py)."""
    return run_module("tools.cli.preview", "--stack", "x", "--stack-file", str(path), *extra)


def _line_of(text: str, needle: str, nth: int = 1) -> int:
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    return lines[nth - 1]


# --- duplicate keys ---------------------------------------------------------------------------------------------


def test_duplicate_top_level_key_names_both_lines(tmp_path: Path) -> None:
    """The second `hyperpod-inference:endpoints` used to win silently: the first endpoint vanished."""
    second = "  hyperpod-inference:endpoints: []\n"
    path = tmp_path / "Pulumi.dup.yaml"
    path.write_text(DEV + second, encoding="utf-8")
    first = _line_of(DEV, "hyperpod-inference:endpoints:")
    again = len(DEV.splitlines()) + 1
    result = _preview_cli(path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        f"{path}:{again}:3: duplicate key 'hyperpod-inference:endpoints' (first at line {first}, again at line {again}"
        in result.stdout
    )
    assert "Traceback" not in result.stdout + result.stderr


def test_duplicate_nested_key_names_both_lines(tmp_path: Path) -> None:
    text = DEV.replace("        instanceCount: 2\n", "        instanceCount: 2\n        instanceCount: 0\n", 1)
    path = tmp_path / "Pulumi.dup.yaml"
    path.write_text(text, encoding="utf-8")
    first = _line_of(text, "instanceCount: 2")
    with pytest.raises(StackFileError) as err:
        load_stack_file(path)
    assert str(err.value) == (
        f"{path}:{first + 1}:9: duplicate key 'instanceCount' (first at line {first}, again at line {first + 1}; "
        "YAML keys must be unique, and PyYAML would silently keep the second)"
    )


def test_duplicate_key_inside_a_list_entry() -> None:
    with pytest.raises(StackFileError, match=r"s:3:5: duplicate key 'name' \(first at line 2, again at line 3"):
        parse_yaml("a:\n  - name: x\n    name: y\n", "s")


def test_merge_keys_may_be_overridden_once() -> None:
    assert parse_yaml("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  x: 3\n", "s") == {
        "base": {"x": 1, "y": 2},
        "use": {"x": 3, "y": 2},
    }


# --- namespaces ----------------------------------------------------------------------------------------------


def _with_key(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "Pulumi.k.yaml"
    path.write_text(DEV.replace("  aws:region: us-west-2\n", f"  aws:region: us-west-2\n{line}\n", 1), "utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "  endpoints: []",
            "'endpoints' has no namespace: config keys in a stack file are <namespace>:<name> (Pulumi docs, "
            "'Configuration keys'; the Pulumi CLI refuses this file); write hyperpod-inference:endpoints",
        ),
        (
            "  hyperpod-inferance:endpoints: []",
            "'hyperpod-inferance:endpoints': nothing reads the namespace 'hyperpod-inferance'; did you mean "
            "hyperpod-inference:endpoints?",
        ),
        (
            "  aws:regoin: us-east-1",
            "'aws:regoin': the aws provider (pulumi-aws 7.51.1) has no key 'regoin'; did you mean aws:region?",
        ),
        ("  eks:version: '1.35'", "'eks:version': the eks provider (pulumi-eks 4.4.0) has no configuration keys"),
        ("  aws:config:region: us-east-1", "'aws:config:region' is not <namespace>:<name> (one colon"),
    ],
    ids=["no-namespace", "misspelt-namespace", "misspelt-provider-key", "provider-without-keys", "two-colons"],
)
def test_keys_nothing_reads_exit_2_with_file_line(tmp_path: Path, line: str, expected: str) -> None:
    path = _with_key(tmp_path, line)
    result = _preview_cli(path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{path}:6: {expected}" in result.stdout, result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    path = _with_key(tmp_path, "  endpoints: []\n  hyperpod-inferance:gateway: {}")
    with pytest.raises(StackFileError) as err:
        load_stack_file(path)
    assert [p.split(": ", 1)[0] for p in err.value.problems] == [f"{path}:6", f"{path}:7"]


@pytest.mark.parametrize("line", ["  aws:profile: deploy", "  pulumi:tags: {team: ml}", "  kubernetes:context: x"])
def test_keys_of_read_namespaces_are_accepted(tmp_path: Path, line: str) -> None:
    config = load_stack_file(_with_key(tmp_path, line))
    assert line.split(":", 2)[0].strip() + ":" + line.split(":", 2)[1] in config


def test_the_program_refuses_them_too(capsys) -> None:
    """Under the CLI the engine hands the program every config key: a misspelt namespace reaches the loader."""
    mapping = stack_mapping("dev")
    mapping["hyperpod-inferance:gateway"] = {"enabled": True}
    assert preview("dev", mapping=mapping) == 2
    out = capsys.readouterr().out
    assert (
        "hyperpod-inferance:gateway: 'hyperpod-inferance:gateway': nothing reads the namespace 'hyperpod-inferance'; "
        "did you mean hyperpod-inference:gateway?" in out
    )


def test_namespace_data_is_what_the_generator_writes() -> None:
    from components.config.stackfile import NAMESPACES_PATH

    assert NAMESPACES_PATH.read_text(encoding="utf-8") == gen.render(gen.generate()), (
        "regenerate: python -m components.config.data.generate_config_namespaces"
    )


def test_providers_are_the_sdks_the_program_imports() -> None:
    assert gen.imported_sdks() == [
        "pulumi_aws",
        "pulumi_aws_native",
        "pulumi_eks",
        "pulumi_kubernetes",
        "pulumi_random",
    ]
    doc = gen.generate()
    assert sorted(doc["providers"]) == ["aws", "aws-native", "eks", "kubernetes", "random"]
    assert "region" in doc["providers"]["aws"]["keys"] and "kubeconfig" in doc["providers"]["kubernetes"]["keys"]


# --- the JSON Schema flags the same keys --------------------------------------------------------------------


@pytest.mark.parametrize("key", ["endpoints", "hyperpod-inferance:endpoints", "aws:regoin", "eks:version"])
def test_schema_flags_keys_nothing_reads(key: str) -> None:
    validator = jsonschema.Draft202012Validator(stack_config_schema())
    doc = {"config": {**stack_mapping("dev"), key: []}}
    errors = list(validator.iter_errors(doc))
    assert errors and all(list(e.absolute_path) == ["config"] for e in errors), errors
    assert any(key in e.message for e in errors)


@pytest.mark.parametrize("key", ["aws:profile", "pulumi:tags", "kubernetes:context"])
def test_schema_accepts_keys_something_reads(key: str) -> None:
    validator = jsonschema.Draft202012Validator(stack_config_schema())
    assert not list(validator.iter_errors({"config": {**stack_mapping("dev"), key: "x"}}))


def test_schema_refuses_unknown_top_level_keys() -> None:
    validator = jsonschema.Draft202012Validator(stack_config_schema())
    assert list(validator.iter_errors({"config": stack_mapping("dev"), "configs": {}}))


# --- tools.generate.ci_matrix: one broken stack file is that stack's problem only -------------------------------------


def test_ci_matrix_reports_a_broken_stack_and_keeps_the_others(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.a.yaml").write_text(
        "config:\n  aws:region: us-west-2\n  hyperpod-inference:environment: prod\n"
    )
    (tmp_path / "Pulumi.b.yaml").write_text("config:\n  aws:region: us-west-2\n  aws:region: us-east-1\n")
    (tmp_path / "Pulumi.c.yaml").write_text("config:\n  hyperpod-inferance:environment: dev\n")
    (tmp_path / "Pulumi.d.yaml").write_text("config: [\n")
    include = matrix(tmp_path)["include"]
    assert include[0] == {"stack": "a", "environment": "prod", "region": "us-west-2", "role": "regional"}
    errors = {e["stack"]: e["error"] for e in include if "error" in e}
    assert sorted(errors) == ["b", "c", "d"]
    assert errors["b"].startswith(f"{tmp_path / 'Pulumi.b.yaml'}:3:3: duplicate key 'aws:region' (first at line 2")
    assert errors["c"].startswith(f"{tmp_path / 'Pulumi.c.yaml'}:2: 'hyperpod-inferance:environment': nothing reads")
    assert errors["d"].startswith(f"{tmp_path / 'Pulumi.d.yaml'}:2:1: YAML syntax error")


def test_ci_matrix_script_annotates_the_broken_stack(tmp_path: Path) -> None:
    """The script run as the workflow runs it, on a copy of the project with one broken stack file."""
    import shutil

    copy = tmp_path / "repo"
    for part in ("Pulumi.yaml", "tools", "components/config/stackfile.py", "components/config/data"):
        src = ROOT / part
        dst = copy / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    (copy / "stacks").mkdir()
    shutil.copy(stack_path("dev"), copy / "stacks" / "Pulumi.dev.yaml")
    (copy / "stacks" / "Pulumi.bad.yaml").write_text("config:\n  endpoints: []\n")
    result = subprocess.run(
        [sys.executable, "tools/generate/ci_matrix.py"], cwd=copy, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    key, _, value = result.stdout.strip().partition("=")
    assert key == "matrix"
    entries = {e["stack"]: e for e in json.loads(value)["include"]}
    assert entries["dev"] == {"stack": "dev", "environment": "dev", "region": "us-west-2", "role": "regional"}
    assert "has no namespace" in entries["bad"]["error"]
    assert result.stderr.startswith("::error file=stacks/Pulumi.bad.yaml,line=2::bad: 'endpoints' has no namespace")


def test_reference_stacks_load_cleanly() -> None:
    for stack in ("dev", "staging", "prod", "attach", "global"):
        assert yaml.safe_load(stack_path(stack).read_text(encoding="utf-8"))["config"] == load_stack_file(
            stack_path(stack)
        )


def test_libyaml_and_pure_python_loaders_read_every_stack_file_identically() -> None:
    """parse_yaml reads with libyaml's parser when it can: same data, same key lines as the pure-Python loader."""
    from components.config import stackfile

    assert stackfile._FastStrictLoader is not None, "PyYAML without libyaml: the fast path is not exercised"

    def lines(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (getattr(node, "lines", {}).get(k), lines(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [lines(v) for v in node]
        return node

    for path in sorted(stack_path("dev").parent.glob("Pulumi.*.yaml")):
        text = path.read_text(encoding="utf-8")
        fast = yaml.load(text, Loader=stackfile._FastStrictLoader)
        slow = yaml.load(text, Loader=stackfile._StrictLoader)
        assert fast == slow and lines(fast) == lines(slow), path.name
    dup = "config:\n  a: 1\n  a: 2\n"
    with pytest.raises(StackFileError, match=r"^x\.yaml:3:3: duplicate key 'a' \(first at line 2, again at line 3"):
        parse_yaml(dup, "x.yaml")
