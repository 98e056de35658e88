"""``python -m tools.cli.preview`` as a new user meets it: bad input, terminal output, ``--graph``, the CI wiring."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_runner import run_module
from tests.conftest import ALL_STACKS, REGIONAL_STACKS, stack_mapping
from tools.cli.preview import key_properties, preview
from tools.generate.ci_matrix import matrix
from tools.plan.harness import ROOT


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m tools.cli.preview args`` in this process (tests/cli_runner.py)."""
    return run_module("tools.cli.preview", *args)


def _unwrap_tree(text: str) -> str:
    """The tree with each wrapped row joined again: a continuation row is the tree's guides (``│``, spaces), then
    text that is no new node (no ``├──``/``└──``)."""
    rows: list[str] = []
    for line in text.splitlines():
        guides = len(line) - len(line.lstrip("│ "))
        rest = line[guides:]
        if (
            rows
            and guides
            and rest
            and not rest.startswith(("├", "└"))
            and rows[-1].lstrip("│ ").startswith(("├", "└"))
        ):
            rows[-1] = f"{rows[-1].rstrip()} {rest}"
        else:
            rows.append(line)
    return "\n".join(rows)


def _piped(*args: str) -> subprocess.CompletedProcess[str]:
    """A real process whose stdout is a pipe: what a CI log or `| less` gets."""
    return subprocess.run(
        [sys.executable, "-m", "tools.cli.preview", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def _assert_clean_exit_2(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    both = result.stdout + result.stderr
    assert result.returncode == 2, both
    assert "Traceback" not in both
    for text in expected:
        assert text in result.stdout, result.stdout


# --- point 6: bad input is a clear error, exit 2, no traceback ------------------------------------------------


def test_yaml_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text("config:\n  aws:region: us-west-2\n  hyperpod-inference:environment: [dev\n", encoding="utf-8")
    result = _cli("--stack", "broken", "--stack-file", str(path))
    _assert_clean_exit_2(result, f"{path}:4:1: YAML syntax error", "while parsing a flow sequence")


def test_stack_file_that_does_not_exist(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.nope.yaml"
    result = _cli("--stack", "nope", "--stack-file", str(path))
    _assert_clean_exit_2(result, f"{path}: no such stack file")


def test_config_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.list.yaml"
    path.write_text("config:\n  - aws:region: us-west-2\n", encoding="utf-8")
    result = _cli("--stack", "list", "--stack-file", str(path))
    _assert_clean_exit_2(result, "`config:` must be a mapping of keys to values, not list")


def test_empty_stack_file(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.empty.yaml"
    path.write_text("# nothing yet\n", encoding="utf-8")
    result = _cli("--stack", "empty", "--stack-file", str(path))
    _assert_clean_exit_2(result, f"{path}: the stack file is empty")
    assert "unset-region" not in result.stdout


def test_empty_config_reports_the_region_once(capsys) -> None:
    assert preview("empty", mapping={}) == 2
    out = capsys.readouterr().out
    assert sum("aws:region:" in line for line in out.splitlines()) == 1, out
    assert "unset-region" not in out
    assert "hyperpod-inference:environment: required key is missing" in out


def test_keys_without_the_config_wrapper(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.flat.yaml"
    path.write_text(yaml.safe_dump(stack_mapping("dev")), encoding="utf-8")
    result = _cli("--stack", "flat", "--stack-file", str(path))
    _assert_clean_exit_2(result, "unknown top-level key(s)", "belong under `config:`")


def test_unknown_stack_lists_the_stacks() -> None:
    result = _cli("--stack", "prdo")
    _assert_clean_exit_2(result, "no stack 'prdo'", "stacks in stacks/: " + ", ".join(sorted(ALL_STACKS)))


def test_json_on_a_config_error_prints_json(tmp_path: Path) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:enviroment"] = "dev"
    path = tmp_path / "Pulumi.typo.yaml"
    path.write_text(yaml.safe_dump({"config": mapping}), encoding="utf-8")
    result = _cli("--stack", "typo", "--stack-file", str(path), "--json")
    assert result.returncode == 2, result.stdout + result.stderr
    plan = json.loads(result.stdout)
    ext = plan["hyperpodInference"]
    assert "steps" not in plan and ext["policyResults"] == []  # no steps: omitted, as the engine's omitempty
    assert ext["configErrors"][0]["path"] == "enviroment"
    assert ext["configErrors"][0]["text"].startswith("hyperpod-inference:enviroment: unknown key")
    assert plan["diagnostics"][0] == {"message": "error: " + ext["configErrors"][0]["text"], "severity": "error"}


def test_json_on_a_stack_file_error_prints_json(tmp_path: Path) -> None:
    result = _cli("--stack", "x", "--stack-file", str(tmp_path / "missing.yaml"), "--json")
    assert result.returncode == 2
    errors = json.loads(result.stdout)["hyperpodInference"]["configErrors"]
    assert errors[0]["path"] == "" and "no such stack file" in errors[0]["message"]


def test_unknown_stack_with_json_prints_json() -> None:
    result = _cli("--stack", "prdo", "--json")
    assert result.returncode == 2
    assert "no stack 'prdo'" in json.loads(result.stdout)["hyperpodInference"]["configErrors"][0]["message"]


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_graph_image_without_graphviz_exits_2(tmp_path: Path, suffix: str, monkeypatch, capsys) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    target = tmp_path / f"graph{suffix}"
    assert preview("dev", graph=target) == 2
    out = capsys.readouterr().out
    assert "needs Graphviz `dot`" in out
    assert not target.exists() and not target.with_suffix(".dot").exists(), "nothing may be written under that name"


def test_graph_with_unknown_suffix_exits_2(tmp_path: Path, capsys) -> None:
    assert preview("dev", graph=tmp_path / "graph.pdf") == 2
    assert "unknown format .pdf" in capsys.readouterr().out


def test_graph_dot_is_written(tmp_path: Path, capsys) -> None:
    target = tmp_path / "g.dot"
    assert preview("dev", graph=target) == 0
    assert target.read_text().startswith("digraph")


def test_negative_replicas_rejected(capsys) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:endpoints"][0]["spec"]["replicas"] = -1
    assert preview("prod", mapping=mapping) == 2
    out = capsys.readouterr().out
    assert "hyperpod-inference:endpoints[0].spec.replicas: Input should be greater than or equal to 0 (got -1)" in out


@pytest.mark.parametrize(
    ("stage", "field"),
    [("spec", "InitialReplicaCount"), ("pd", "prefillSpec")],
    ids=["initial-replica-count", "pd-prefill-replicas"],
)
def test_other_negative_counts_rejected(stage: str, field: str, capsys) -> None:
    mapping = stack_mapping("prod")
    endpoints = mapping["hyperpod-inference:endpoints"]
    if stage == "spec":
        endpoints[0]["spec"][field] = -3
        path = f"endpoints[0].spec.{field}"
    else:
        endpoints[1]["spec"]["pdSpec"][field]["replicas"] = -1
        path = f"endpoints[1].spec.pdSpec.{field}.replicas"
    assert preview("prod", mapping=mapping) == 2
    assert f"hyperpod-inference:{path}: Input should be greater than or equal to" in capsys.readouterr().out


def test_zero_replicas_still_accepted() -> None:
    from components.config.crd import InferenceEndpointConfigSpec

    spec = dict(stack_mapping("prod")["hyperpod-inference:endpoints"][0]["spec"], replicas=0)
    assert InferenceEndpointConfigSpec.model_validate(spec).replicas == 0


# --- point 4: the terminal output ---------------------------------------------------------------------------


def test_piped_output_is_not_truncated_and_shows_key_properties() -> None:
    result = _piped("--stack", "prod")
    assert result.returncode == 0, result.stdout + result.stderr
    # A long line wraps onto a continuation line (the tree's guides, then the rest): never cut off.
    # A policy finding stays one line (tools/cli/preview.py: grep finds it whole); it starts with its level.
    findings = [line for line in result.stdout.splitlines() if line.startswith(("ADVISORY ", "MANDATORY "))]
    # prod: the prerequisite builds no offline source lists (policies/addon_builds.py), and 1.35 is unlisted
    assert len(findings) == 5
    assert all(len(line) <= 170 for line in result.stdout.splitlines() if line not in findings)
    out = _unwrap_tree(result.stdout)
    # Long names that used to be cut at 80 columns when piped.
    assert "aws:ec2/routeTableAssociation:RouteTableAssociation network-public-use1-az2-rta" in out
    assert (
        "aws-native:sagemaker:Cluster hyperpod-cluster  [system: ml.m5.2xlarge x2, p5-inference: ml.p5.48xlarge x4, "
        "p6-inference: ml.p6-b200.48xlarge x4, system-b: ml.m5.2xlarge x1] (protected)" in out
    )
    assert "endpoints-inference-llama-70b-kvaware  [vllm, routing: kvaware, replicas 2, ml.p5.48xlarge]" in out
    assert (
        "endpoints-inference-llama-70b-dpd  [vllm, routing: prefixaware, prefill x2 + decode x2, ml.p6-b200.48xlarge]"
        in out
    )
    assert "endpoints-inference-qwen-sglang  [sglang, routing: inference gateway, replicas 2, ml.p5.48xlarge]" in out
    assert "inference-operator-addon  [amazon-sagemaker-hyperpod-inference v2.0.0-eksbuild.2]" in out
    assert "front-door-alb  [internet-facing]" in out
    assert "kv-cache-rg  [valkey 8.0, cache.r7g.xlarge x3 (1 primary + 2 replicas)] (protected)" in out
    assert (
        "eks-cluster  [Kubernetes 1.35, API endpoint private; vpc-cni v1.20.0-eksbuild.1, kube-proxy v1.35.0-eksbuild.2]"
        in out
    )


def test_tree_order_is_stable_and_sorted(capsys) -> None:
    assert preview("prod") == 0
    first = capsys.readouterr().out
    assert preview("prod") == 0
    assert capsys.readouterr().out == first
    network = [line.split()[-1] for line in first.splitlines() if "aws:ec2/subnet:Subnet network-" in line]
    # 3 private, 3 public and (deployer routes, issue 33 item 5) 3 control-plane subnets
    assert network == sorted(network) and len(network) == 9


def test_staging_alb_is_internal(stack_runs) -> None:
    alb = stack_runs["staging"].named("aws:lb/loadBalancer:LoadBalancer", "front-door-alb")
    assert key_properties(alb) == "internal"
    routing = sorted(
        r.inputs["spec"]["intelligentRoutingSpec"]["routingStrategy"]
        for r in stack_runs["staging"].registrations
        if r.type.endswith(":InferenceEndpointConfig")
    )
    assert routing == ["kvaware", "prefixaware"]
    hp = stack_runs["staging"].named("aws-native:sagemaker:Cluster", "hyperpod-cluster")
    assert hp.outputs["clusterArn"].startswith("arn:aws:sagemaker:eu-west-2:")


def test_preview_prints_the_rehearsal_and_capacity_and_fails_when_the_deploy_would_not_converge(
    monkeypatch, capsys
) -> None:
    """The same graph, judged with readiness data in which the HyperPod cluster brings no nodes: every
    controller add-on then waits forever, so the preview must exit 1 (not 0) and say why."""
    from policies.readiness import load_readiness
    from tools.cli import preview as module
    from tools.rehearse import rehearse

    assert preview("dev") == 0
    out = capsys.readouterr().out
    assert "rehearsal (deploy) of dev: converges" in out
    assert "gpu-p5" in out and "ml.p5.4xlarge" in out  # the capacity table's group row

    real = load_readiness()
    no_nodes = real.model_copy(
        update={
            "resources": [
                e.model_copy(update={"provides": []}) if e.type == "aws-native:sagemaker:Cluster" else e
                for e in real.resources
            ]
        }
    )
    monkeypatch.setattr(module, "rehearse", lambda run, **kw: rehearse(run, readiness=no_nodes, **kw))
    assert preview("dev") == 1
    out = capsys.readouterr().out
    assert "does not converge" in out and "DEADLOCK" in out and "nothing in the stack provides nodes" in out


# --- point 5: the pull-request workflow -----------------------------------------------------------------------


def _workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / "pull-request.yml").read_text("utf-8"))
    return data


def test_ci_matrix_is_every_stack_with_its_environment_region_and_role() -> None:
    include = matrix()["include"]
    assert [e["stack"] for e in include] == sorted(ALL_STACKS)
    assert {"dev", "prod", "staging"} <= {e["stack"] for e in include}
    for entry in include:
        mapping = stack_mapping(entry["stack"])
        assert entry["environment"] == mapping["hyperpod-inference:environment"]
        assert entry["region"] == mapping["aws:region"]
        assert entry["role"] == ("regional" if entry["stack"] in REGIONAL_STACKS else "global")
        assert (ROOT / "policies" / f"config.{entry['environment']}.json").is_file()


def test_ci_matrix_names_the_role(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.a.yaml").write_text("config:\n  aws:region: us-west-2\n  hyperpod-inference:environment: dev\n")
    (tmp_path / "Pulumi.g.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  hyperpod-inference:role: global\n  hyperpod-inference:environment: prod\n"
    )
    assert matrix(tmp_path) == {
        "include": [
            {"stack": "a", "environment": "dev", "region": "us-west-2", "role": "regional"},
            {"stack": "g", "environment": "prod", "region": "us-east-1", "role": "global"},
        ]
    }


def test_ci_matrix_script_prints_a_github_output_line() -> None:
    out = subprocess.run(
        [sys.executable, "tools/generate/ci_matrix.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    key, _, value = out.strip().partition("=")
    assert key == "matrix" and json.loads(value) == matrix()


def test_workflow_previews_the_derived_matrix_and_diffs_against_the_base() -> None:
    jobs = _workflow()["jobs"]
    assert "python tools/generate/ci_matrix.py" in jobs["stacks"]["steps"][-1]["run"]
    for name in ("offline-preview", "pulumi-preview"):
        assert jobs[name]["strategy"]["matrix"] == "${{ fromJSON(needs.stacks.outputs.matrix) }}", name
        assert "stacks" in jobs[name]["needs"]
    offline = jobs["offline-preview"]
    runs = "\n".join(s.get("run", "") for s in offline["steps"])
    assert "github.event.pull_request.base.sha" in json.dumps(offline["steps"])
    assert '--stack "$STACK" --json' in runs
    assert '--diff "$RUNNER_TEMP/base-plan.json"' in runs
    assert "GITHUB_STEP_SUMMARY" in runs
    assert offline["permissions"]["pull-requests"] == "write"
    comment = next(s for s in offline["steps"] if s.get("uses", "").startswith("actions/github-script@"))
    assert "comment.md" in comment["with"]["script"] and comment.get("continue-on-error") is True
    assert offline["steps"][-2]["run"] == 'exit "$PREVIEW_EXIT"'
    # every stack of the matrix is rehearsed both ways (the preview itself already rehearses the create)
    rehearse = offline["steps"][-1]["run"].splitlines()
    assert rehearse == [
        'venv/bin/python -m tools.rehearse --stack "$STACK"',
        'venv/bin/python -m tools.rehearse --stack "$STACK" --destroy',
    ]


def test_workflow_real_preview_runs_the_pack_with_the_env_config() -> None:
    real = _workflow()["jobs"]["pulumi-preview"]
    steps = {s.get("uses", "").split("@")[0]: s for s in real["steps"]}
    action = steps["pulumi/actions"]
    assert action["with"]["policyPacks"] == "policies"
    assert action["with"]["policyPackConfigs"] == "policies/config.${{ matrix.environment }}.json"
    assert action["with"]["command"] == "preview" and action["if"] == "env.HAS_CLOUD_CREDENTIALS == 'true'"


def test_workflow_actions_are_pinned() -> None:
    for job in _workflow()["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), (
                    f"not pinned by commit: {step['uses']}"
                )
