"""Foundation: the config contract, the offline preview's exit codes and the JSON Schema file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.config import ConfigError, StackConfig
from components.config.schema import SCHEMA_PATH, stack_config_schema
from tests.cli_runner import run_module
from tests.conftest import REGIONAL_STACKS, stack_mapping
from tools.cli.preview import preview


@pytest.mark.parametrize("stack", REGIONAL_STACKS)
def test_reference_stacks_preview_clean(stack: str, stack_runs, capsys) -> None:
    run = stack_runs[stack]
    assert len(run.registrations) > 10
    assert preview(stack) == 0
    out = capsys.readouterr().out
    assert "hyperpod:network:Network" in out


def _errors(mapping: dict, capsys) -> tuple[int, str]:
    code = preview("dev", mapping=mapping)
    return code, capsys.readouterr().out


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda m: m.__setitem__("hyperpod-inference:enviroment", "dev"), "hyperpod-inference:enviroment: unknown key"),
        (
            lambda m: m["hyperpod-inference:network"].__setitem__("cidrBlock", "10.0.0.0/16"),
            "hyperpod-inference:network.cidrBlock: unknown key",
        ),
        (
            lambda m: m.__setitem__("hyperpod-inference:environment", "production"),
            "hyperpod-inference:environment: Input should be 'dev', 'staging' or 'prod'",
        ),
        (
            lambda m: m["hyperpod-inference:cluster"]["instanceGroups"][0].__setitem__("instanceCount", -2),
            "hyperpod-inference:cluster.instanceGroups[0].instanceCount",
        ),
        (
            lambda m: m["hyperpod-inference:cluster"]["instanceGroups"][1].pop("instanceType"),
            "hyperpod-inference:cluster.instanceGroups[1].instanceType: required key is missing",
        ),
        (lambda m: m.pop("hyperpod-inference:operator"), "hyperpod-inference:operator: required key is missing"),
        (lambda m: m.pop("aws:region"), "aws:region: not set"),
        (
            lambda m: m["hyperpod-inference:network"].__setitem__("cidr", "10.0.0.0/28"),
            "hyperpod-inference:network.cidr",
        ),
        (
            lambda m: m["hyperpod-inference:cluster"].__setitem__("serviceIpv4Cidr", "10.192.0.0/20"),
            "hyperpod-inference:cluster.serviceIpv4Cidr: 10.192.0.0/20 overlaps",
        ),
    ],
    ids=[
        "misspelt-top-key",
        "misspelt-nested-key",
        "bad-enum",
        "negative-count",
        "missing-field",
        "missing-section",
        "no-region",
        "vpc-too-small",
        "overlapping-cidrs",
    ],
)
def test_config_errors_exit_2_naming_the_key(mutate, expected: str, capsys) -> None:
    mapping = stack_mapping("dev")
    mutate(mapping)
    code, out = _errors(mapping, capsys)
    assert code == 2, out
    assert expected in out
    assert "Traceback" not in out


def test_all_errors_reported_at_once(run) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:enviroment"] = "dev"
    mapping["hyperpod-inference:network"]["natGateway"] = "single"
    result = run("dev", mapping)
    assert isinstance(result.config_error, ConfigError)
    paths = [i.path for i in result.config_error.issues]
    assert "enviroment" in paths and "network.natGateway" in paths
    assert result.registrations == [], "nothing may be registered when the config is invalid"


def test_json_schema_file_is_current() -> None:
    on_disk = json.loads(Path(SCHEMA_PATH).read_text(encoding="utf-8"))
    assert on_disk == stack_config_schema(), (
        "run `python -m components.config.schema --write` to regenerate stacks/schema.json"
    )


def test_schema_names_every_config_key() -> None:
    props = stack_config_schema()["properties"]["config"]["properties"]
    for key in ("hyperpod-inference:environment", "hyperpod-inference:endpoints", "aws:region"):
        assert key in props
    assert StackConfig.model_fields["environment"].description


def test_cli_exit_code_for_misspelt_key_in_stack_file(tmp_path) -> None:
    """End to end through the command line: a stack file with a typo exits 2 and names the key."""

    import yaml

    doc = {"config": stack_mapping("dev")}
    doc["config"]["hyperpod-inference:cluster"]["instanceGroup"] = doc["config"]["hyperpod-inference:cluster"].pop(
        "instanceGroups"
    )
    path = tmp_path / "Pulumi.typo.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = run_module("tools.cli.preview", "--stack", "typo", "--stack-file", str(path))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "hyperpod-inference:cluster.instanceGroup: unknown key" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_stack_exports_are_resolved_mock_values(stack_runs) -> None:
    run = stack_runs["dev"]
    assert run.outputs["environment"] == "dev"
    assert run.outputs["vpcId"].startswith("vpc-")
    assert set(run.outputs["privateSubnetIds"]) == {"usw2-az1", "usw2-az2"}


@pytest.mark.parametrize("stack", REGIONAL_STACKS)
def test_reference_stack_files_validate_against_the_schema(stack: str) -> None:
    """What editors check (stacks/schema.json) accepts every reference stack, the secure form included."""
    import jsonschema

    from components.config.stackfile import read_stack_document, stack_path

    doc = read_stack_document(stack_path(stack))
    jsonschema.Draft202012Validator(stack_config_schema()).validate(doc)


def test_schema_requires_the_secure_form_of_the_client_secret() -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(stack_config_schema())
    doc = {"config": stack_mapping("staging")}
    assert doc["config"]["hyperpod-inference:ingress"]["oidc"]["clientSecret"] == {
        "secure": "AAABAHpiStagingFrontDoorOidcClientSecretCiphertextPlaceholder=="
    }
    assert not list(validator.iter_errors(doc))
    doc["config"]["hyperpod-inference:ingress"]["oidc"]["clientSecret"] = "plain-text"
    errors = list(validator.iter_errors(doc))

    def paths(e: jsonschema.ValidationError) -> list[list[str]]:
        return [[str(p) for p in e.absolute_path], *(q for c in e.context or [] for q in paths(c))]

    assert errors and any("clientSecret" in p for e in errors for p in paths(e))
    doc["config"]["hyperpod-inference:ingress"]["oidc"]["clientSecret"] = {"secure": "x", "extra": 1}
    assert list(validator.iter_errors(doc))


def test_schema_rejects_what_the_program_rejects() -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(stack_config_schema())
    doc = {"config": stack_mapping("dev")}
    doc["config"]["hyperpod-inference:enviroment"] = "dev"
    assert list(validator.iter_errors(doc))
    doc = {"config": stack_mapping("dev")}
    doc["config"]["hyperpod-inference:endpoints"][0]["spec"]["replicas"] = -1
    assert list(validator.iter_errors(doc))


def test_allow_replacement_is_a_list_of_names(run) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:allowReplacement"] = ["hyperpod-cluster"]
    assert run("dev", mapping).config_error is None
    mapping["hyperpod-inference:allowReplacement"] = "hyperpod-cluster"
    result = run("dev", mapping)
    assert result.config_error is not None
    assert [i.path for i in result.config_error.issues] == ["allowReplacement"]
    mapping["hyperpod-inference:allowReplacement"] = [""]
    result = run("dev", mapping)
    assert result.config_error is not None
    assert [i.path for i in result.config_error.issues] == ["allowReplacement[0]"]


def test_configuration_reference_is_current() -> None:
    from tools.generate.config_reference import DOC_PATH, render

    assert DOC_PATH.read_text(encoding="utf-8") == render(), "run `python -m tools.generate.config_reference`"


def test_configuration_reference_names_nested_keys_with_bounds() -> None:
    from tools.generate.config_reference import render

    text = render()
    row = next(
        line
        for line in text.splitlines()
        if line.startswith("| `hyperpod-inference:cluster.instanceGroups[].instanceCount`")
    )
    assert "| integer | yes |" in row and ">= 0" in row
    assert "| `hyperpod-inference:ingress.oidc.clientSecret` | Pulumi secret (`secure:`) |" in text
    assert "| `hyperpod-inference:allowReplacement` | list of string |" in text
    assert "| `aws:region` | string | yes |" in text


def test_policy_doc_lists_every_policy_and_the_plan_level_one() -> None:
    from policies.pack import POLICIES
    from tools.plan.diff import POLICY
    from tools.plan.harness import ROOT

    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    for policy in POLICIES:
        assert f"| `{policy.name}` |" in text, policy.name
    assert f"| `{POLICY}` (plan level, `--diff` only) |" in text
    assert "hyperpod-inference:allowReplacement: [hyperpod-cluster]" in text


def test_readme_is_a_short_user_guide() -> None:
    from tools.plan.harness import ROOT

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert "Python >= 3.11" in text
    for heading in ("## The real workflow", "## Add an environment", "## Configuration", "## Guardrails", "## Limits"):
        assert heading in text
    assert "pulumi stack init" in text
    assert "| issue |" not in text and "tests/test_" not in text


def test_add_an_environment_works_as_written(tmp_path) -> None:
    """The README's steps: copy the staging file to a new stack name, preview it offline."""
    import shutil

    from components.config.stackfile import stack_path
    from tools.plan.harness import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "cp stacks/Pulumi.staging.yaml stacks/Pulumi.qa.yaml" in readme
    target = tmp_path / "Pulumi.qa.yaml"
    shutil.copy(stack_path("staging"), target)
    result = run_module("tools.cli.preview", "--stack", "qa", "--stack-file", str(target))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "aws:eks/addon:Addon inference-operator-addon" in result.stdout
    assert "hpi-qa-eks" in result.stdout


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """`.ci/run` is what lands work; the README's command is what users run. They must be the same line."""
    from tools.plan.harness import ROOT

    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    # the README's command, then only the live suites (docs/live-tests.md), which run after it
    ci_last = next(line for line in lines if line.startswith("python3 -m venv venv"))
    after = [line for line in lines[lines.index(ci_last) + 1 :] if line.strip() and not line.startswith("#")]
    assert [line for line in after if "pytest" in line] == [
        "venv/bin/python -m pytest -n 0 -m live_apiserver tests/live",
        "venv/bin/python -m pytest -n 0 -m live_engine tests/live",
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ci_last.startswith("python3 -m venv venv && venv/bin/pip install -q -r requirements-dev.txt && ")
    assert f"```bash\n{ci_last}\n```" in readme
    for step in (
        "venv/bin/ruff check .",
        "venv/bin/ruff format --check .",
        "venv/bin/mypy",
        "venv/bin/python -m pytest",
    ):
        assert step in ci_last
