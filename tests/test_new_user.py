"""A new user's afternoon (issue 37): no traceback, no silent accept, output a person reads to the end.

Bounds come from the owners' models (botocore's ``min``/``max``, the CRD's integer formats) and the capacity model
costs what the nodes that exist cost; closed sets come from their sources (botocore's Regions, cfn-lint's ElastiCache
node types, the engine an image's repository names); every command line survives a closed pipe, an unwritable
``--out`` and an unknown option, and ends with one verdict line; piped output is narrow, ordered and says a long
explanation once.
"""

from __future__ import annotations

import copy
import json
import os
import re
import resource
import subprocess
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.loaders import create_loader

from components.config import ConfigError
from components.config.api_bounds import API_BOUNDS
from components.config.closed_sets import _node_type_table, aws_regions, elasticache_node_types
from components.config.loader import parse_stack_mapping
from components.config.schema import SCHEMA_PATH
from policies import capacity_rules as cap
from policies.rules import image_engine
from tests.cli_runner import run_module
from tests.conftest import stack_mapping
from tools.plan.harness import ROOT

VERDICT = re.compile(
    r"^(?P<stack>[\w-]+): (?:(?P<resources>\d+) resources, )?(?P<errors>\d+) errors?, .*— exit (?P<code>\d)$"
)


def _issues(stack: str, mapping: dict[str, Any]) -> dict[str, str]:
    """``{key path: message}`` of the config errors of ``mapping`` (fails when it is valid)."""
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping(stack, mapping)
    return {i.path: i.message for i in err.value.issues}


@cache
def _preview(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m tools.cli.preview ARGS`` in this process, once per argument list (several tests read one output)."""
    return run_module("tools.cli.preview", *args)


def _flat(text: str) -> str:
    """Output with the folding of the 160-column piped console undone (line breaks and runs of spaces: one space)."""
    return " ".join(text.split())


def _write(tmp_path: Path, mapping: dict[str, Any], name: str = "Pulumi.mistake.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"config": mapping}, sort_keys=False), encoding="utf-8")
    return path


# --- 1. bounds from the owners' models ----------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(API_BOUNDS))
def test_api_bounds_are_botocores_figures(key: str) -> None:
    """The figure in components/config/api_bounds.py is the one in botocore's model (the owner), shape by shape."""
    bound = API_BOUNDS[key]
    shape = create_loader().load_service_model(bound.service, "service-2")["shapes"][bound.shape]
    assert (bound.minimum, bound.maximum) == (shape["min"], shape["max"])


def test_schema_bounds_instance_count_by_create_cluster() -> None:
    """The consumer editors read: stacks/schema.json carries CreateCluster's maximum (6758 in botocore 1.44.8)."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    group = schema["$defs"]["InstanceGroup"]["properties"]["instanceCount"]
    assert (group["minimum"], group["maximum"]) == (0, 6758)


@pytest.mark.parametrize("count", [6759, 100000, 10**12])
def test_instance_count_above_create_clusters_maximum_is_refused(count: int) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:cluster"]["instanceGroups"][0]["instanceCount"] = count
    issues = _issues("dev", mapping)
    assert issues["cluster.instanceGroups[0].instanceCount"].startswith("Input should be less than or equal to 6758")


@pytest.mark.parametrize("replicas", [2**31, 10**22, 99999999999999999999999])
def test_replicas_beyond_the_crds_int32_are_refused(replicas: int) -> None:
    """The CRD's ``format: int32`` is the operator's Go field: a larger count cannot even be decoded."""
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:endpoints"][0]["spec"]["replicas"] = replicas
    issues = _issues("dev", mapping)
    assert issues["endpoints[0].spec.replicas"].startswith("Input should be less than or equal to 2147483647")


def test_packing_cost_is_bounded_by_the_nodes() -> None:
    """2**31-1 replicas on 2 nodes: the plan packs no more than the nodes can hold, counts the rest exactly."""
    group = cap.Group("gpu", "ml.p5.48xlarge", 2)
    pod = cap.PodTemplate(
        "worker", "worker.resources", {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
        2**31 - 1, 2**31 - 1, "replicas",
    )  # fmt: skip
    start = time.monotonic()
    plan = cap.plan([group], [cap.Workload("endpoints[0]", "big", (pod,))])
    assert time.monotonic() - start < 5
    assert plan.unplaced == {"endpoints[0]": 2**31 - 1 - 2}  # two 8-GPU nodes take one 8-GPU pod each
    [finding] = plan.by_rule("endpoint-fits-group-capacity")
    assert f"needs {2**31 - 1} worker pods" in finding.message and f"{2**31 - 3} of them fit nowhere" in finding.message


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB of address space, as `ulimit -v 1048576`


def test_the_largest_accepted_input_finishes_in_seconds_under_one_gib(tmp_path: Path) -> None:
    """Every group at CreateCluster's maximum and an endpoint at int32's: refused with the key, quickly, in 1 GiB."""
    mapping = stack_mapping("dev")
    for group in mapping["hyperpod-inference:cluster"]["instanceGroups"]:
        group["instanceCount"] = 6758
    mapping["hyperpod-inference:endpoints"][0]["spec"]["replicas"] = 2**31 - 1
    path = _write(tmp_path, mapping)
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "tools.cli.preview", "--stack", "dev", "--stack-file", str(path)],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=300, preexec_fn=_limit_memory,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 2, result.stdout[-3000:]
    assert "hyperpod-inference:endpoints[0].spec.replicas: endpoints[0] llama-8b needs 2147483647" in result.stdout
    assert "free per node: 0 on 6758 nodes" in result.stdout  # 6758 nodes summarised, not listed one by one
    assert max(len(line) for line in result.stdout.splitlines()) < 2000
    assert elapsed < 120, f"{elapsed:.0f} s"


# --- 2. closed sets from their sources ----------------------------------------------------------------------


def test_regions_and_node_types_come_from_the_installed_data() -> None:
    assert {"us-east-1", "eu-west-2", "ap-southeast-5", "cn-north-1", "us-gov-west-1"} <= aws_regions()
    assert "us-east-9" not in aws_regions()
    assert "cache.r7g.large" in elasticache_node_types("us-east-1")
    assert "cache.r99.huge" not in elasticache_node_types("us-east-1")


@pytest.mark.parametrize("region", ["us-east-9", "us-west-3", "eu-east-1", "useast1"])
def test_model_bucket_in_a_region_that_does_not_exist_is_refused(region: str) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:endpoints"][0]["spec"]["modelSourceConfig"]["s3Storage"]["region"] = region
    message = _issues("prod", mapping)["endpoints[0].spec.modelSourceConfig.s3Storage.region"]
    assert message.startswith(f"{region!r} is not an AWS Region")


def test_model_bucket_in_another_real_region_is_not_an_error() -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:endpoints"][0]["spec"]["modelSourceConfig"]["s3Storage"]["region"] = "eu-west-2"
    parse_stack_mapping("prod", mapping)  # valid: the cross-Region cost stays an advisory


def test_stack_region_that_does_not_exist_is_refused() -> None:
    mapping = stack_mapping("dev")
    mapping["aws:region"] = "us-west-9"
    assert "'us-west-9' is not an AWS Region" in _issues("dev", mapping)["aws:region"]


@pytest.mark.parametrize("node_type", ["cache.r99.huge", "cache.r7g.huge", "cache.x1.large"])
def test_elasticache_node_type_that_does_not_exist_is_refused(node_type: str) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:kvCache"]["redis"]["nodeType"] = node_type
    message = _issues("prod", mapping)["kvCache.redis.nodeType"]
    assert message.startswith(f"{node_type}: no such ElastiCache node type")


def test_elasticache_node_type_offered_elsewhere_names_the_region() -> None:
    table = _node_type_table()
    mapping = stack_mapping("staging")
    assert mapping["aws:region"] == "eu-west-2"
    elsewhere = sorted(set().union(*table.values()) - table["eu-west-2"])
    assert elsewhere, "cfn-lint's table has node types eu-west-2 lacks"
    mapping["hyperpod-inference:kvCache"] = {"l2Backend": "redis", "redis": {"nodeType": elsewhere[0]}}
    message = _issues("staging", mapping)["kvCache.redis.nodeType"]
    assert message.startswith(f"{elsewhere[0]}: ElastiCache offers it elsewhere, not in eu-west-2")


@pytest.mark.parametrize(
    ("image", "engine"),
    [
        ("lmsysorg/sglang:v0.5.2-cu126", "sglang"),
        ("public.ecr.aws/deep-learning-containers/vllm:server-hyperpod-cuda-v1.1", "vllm"),
        ("lmcache/vllm-openai:v0.4.3", "vllm"),
        ("123456789012.dkr.ecr.us-east-1.amazonaws.com/team/model-server:1.0", None),
        ("registry.vllm.example.com/team/server:1", None),  # the registry host names no engine
    ],
)
def test_image_engine_reads_the_repository(image: str, engine: str | None) -> None:
    assert image_engine(image) == engine


def test_vllm_engine_with_an_sglang_image_is_refused_naming_both() -> None:
    mapping = stack_mapping("prod")
    endpoint = mapping["hyperpod-inference:endpoints"][0]
    assert endpoint["engine"] == "vllm"
    endpoint["spec"]["worker"]["image"] = "lmsysorg/sglang:v0.5.2-cu126"
    message = _issues("prod", mapping)["endpoints[0].engine"]
    assert message.startswith("is vllm but the worker image lmsysorg/sglang:v0.5.2-cu126 is a sglang image")


def test_sglang_engine_with_a_vllm_image_is_refused() -> None:
    mapping = stack_mapping("prod")
    index = next(i for i, e in enumerate(mapping["hyperpod-inference:endpoints"]) if e["engine"] == "sglang")
    mapping["hyperpod-inference:endpoints"][index]["spec"]["worker"]["image"] = "vllm/vllm-openai:v0.11.0"
    assert (
        "is sglang but the worker image vllm/vllm-openai:v0.11.0 is a vllm image"
        in _issues("prod", mapping)[f"endpoints[{index}].engine"]
    )


# --- 3. every entry point: closed pipe, --out, unknown option, one verdict line --------------------------------


def test_closed_pipe_is_no_traceback() -> None:
    """`tools.cli.preview --stack dev --json | head -1`: the reader leaves after one line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.cli.preview", "--stack", "dev", "--json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip() == "{"
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait(timeout=300)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert "stdout closed before the output ended" in stderr


@pytest.mark.parametrize("module", ["tools.cli.preview", "tools.cli.deployer_policy"])
def test_out_naming_an_existing_file_is_exit_2(module: str, tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("{}", encoding="utf-8")
    result = run_module(module, "--stack", "dev", "--out", str(target))
    both = result.stdout + result.stderr
    assert result.returncode == 2 and "Traceback" not in both, both
    assert f"--out {target}: is a file, not a folder" in _flat(both)
    assert target.read_text(encoding="utf-8") == "{}"


def test_out_in_a_folder_that_cannot_be_written_is_exit_2(tmp_path: Path) -> None:
    """/sys refuses new files even to root (chmod does not stop root, so a read-only mount stands in)."""
    if not Path("/sys").is_dir():
        pytest.fail("this test needs Linux's /sys (a folder root cannot create files in)")
    result = run_module("tools.cli.preview", "--stack", "dev", "--out", "/sys/hpi-out/prod")
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr
    assert "--out /sys/hpi-out/prod: cannot write in /sys" in _flat(result.stdout)
    under_file = tmp_path / "file"
    under_file.write_text("", encoding="utf-8")
    result = run_module("tools.cli.preview", "--stack", "dev", "--out", str(under_file / "out"))
    assert result.returncode == 2
    assert f"{under_file} is a file, so no folder can be created under it" in _flat(result.stdout)


COMMANDS = [
    "tools.cli.preview", "tools.rehearse", "tools.preflight.regional", "tools.preflight.global_stack", "tools.cli.deployer_policy",
    "tools.preflight.guardduty_cleanup", "tools.fetch.chart", "tools.fetch.crds", "tools.generate.crd_models", "tools.generate.config_reference",
    "tools.generate.replacement_rules", "tools.generate.unconfirmed", "components.config.schema", "tests.hand_mutations",
]  # fmt: skip


@pytest.mark.parametrize("module", COMMANDS)
def test_unknown_option_is_usage_and_exit_2(module: str) -> None:
    needs_stack = module.startswith(("tools.cli.pre", "tools.preflight", "tools.rehearse", "tools.cli.deployer"))
    result = run_module(module, *(["--stack", "dev"] if needs_stack else []), "--no-such-option")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].endswith("unrecognized arguments: --no-such-option")


def test_preview_ends_with_one_verdict_line() -> None:
    result = _preview("--stack", "dev")
    lines = result.stdout.splitlines()
    verdicts = [line for line in lines if VERDICT.match(line)]
    assert verdicts == [lines[-1]], lines[-5:]
    match = VERDICT.match(lines[-1])
    assert match is not None and match["stack"] == "dev" and match["code"] == str(result.returncode) == "0"
    assert re.fullmatch(r"dev: \d+ resources, 0 errors, \d+ advisor(y|ies), converges — exit 0", lines[-1])


def test_json_keeps_stdout_one_document_and_the_verdict_on_stderr() -> None:
    result = _preview("--stack", "dev", "--json")
    json.loads(result.stdout)
    assert re.fullmatch(r"dev: \d+ resources, 0 errors, \d+ advisor(y|ies), converges — exit 0\n", result.stderr)


def test_config_error_ends_with_a_verdict(tmp_path: Path) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:kvCache"] = {"l2Backend": "redis", "redis": {"nodeType": "cache.r99.huge"}}
    result = run_module("tools.cli.preview", "--stack", "dev", "--stack-file", str(_write(tmp_path, mapping)))
    assert result.returncode == 2
    assert result.stdout.splitlines()[-1] == "dev: 1 error, nothing registered — exit 2"


def test_rehearse_ends_with_a_verdict() -> None:
    result = run_module("tools.rehearse", "--stack", "dev", "--destroy")
    last = result.stdout.splitlines()[-1]
    assert re.fullmatch(
        r"dev: \d+ resources, 0 errors, \d+ advisor(y|ies), converges, destroy rehearsed — exit 0", last
    )


def test_hand_mutations_refuses_an_unknown_id_and_has_help() -> None:
    bogus = run_module("tests.hand_mutations", "no-such-mutation")
    assert bogus.returncode == 2 and "unknown mutation id(s): no-such-mutation" in bogus.stderr
    helped = run_module("tests.hand_mutations", "--help")
    assert helped.returncode == 0 and "usage: python -m tests.hand_mutations" in helped.stdout
    listed = run_module("tests.hand_mutations", "--list")
    assert listed.returncode == 0 and len(listed.stdout.split()) >= 10


# --- 4. output a person reads: width, order, said once, no empty tables ---------------------------------------


def test_piped_output_is_at_most_160_columns() -> None:
    result = _preview("--stack", "prod")
    assert result.returncode == 0
    tables = [line for line in result.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert tables and max(len(line) for line in tables) <= 160  # findings and errors stay one line each


def test_plain_output_does_not_depend_on_the_hash_seed() -> None:
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    proc = subprocess.run(
        [sys.executable, "-m", "tools.cli.preview", "--stack", "prod"],
        cwd=ROOT, capture_output=True, text=True, check=False, env={**os.environ, "PYTHONHASHSEED": seed},
    )  # fmt: skip
    here = _preview("--stack", "prod")
    assert proc.returncode == here.returncode == 0
    assert proc.stdout == here.stdout


def test_capacity_rows_are_sorted_and_a_long_list_is_said_once() -> None:
    out = _preview("--stack", "prod").stdout
    system = out[out.index("│ system ") : out.index("│ p5-inference ")]
    rows = re.findall(r"│ {14}│ {3}([\w-]+) ", system)
    assert rows == sorted(rows) and "aws-load-balancer-controller" in rows
    assert out.count("DaemonSets with unknown requests: aws-efa-k8s-device-plugin") == 1
    # said in full once (under system), referred to for each other group (p5, p6 and the second system group)
    assert len(re.findall(r"DaemonSets with unknown requests: the 8 listed under system\b(?!-)", out)) == 3


def test_a_repeated_finding_refers_to_the_first() -> None:
    out = _flat(_preview("--stack", "staging").stdout)
    assert out.count("a stray destroy would delete its state") == 2  # the cluster's and the first bucket's
    assert "aws:s3/bucket:Bucket::front-door-logs: as access-logs-bucket above" in out
    plan = json.loads(_preview("--stack", "staging", "--json").stdout)
    full = [r for r in plan["hyperpodInference"]["policyResults"] if r["resourceName"] == "front-door-logs"]
    assert full and full[0]["message"].endswith("a stray destroy would delete its state")  # --json: in full


def test_global_stack_prints_no_empty_capacity_table_and_the_critical_path_once() -> None:
    out = run_module("tools.cli.preview", "--stack", "global", "--critical-path").stdout
    assert "capacity: no HyperPod instance groups in this stack" in out
    assert "capacity per instance group" not in out
    assert out.count("deploy critical path") == 1
    assert re.search(r"│ 1 │ global-execution-role +│ aws:iam/role:Role +│ +0 │ +unknown │", out)


def test_progress_is_silent_when_piped() -> None:
    result = _preview("--stack", "dev", "--json")
    assert result.stderr.count("\n") == 1  # the verdict only: no spinner, no progress bytes


# --- messages that name what the user wrote ---------------------------------------------------------------------


def test_unquoted_version_says_to_quote_it(tmp_path: Path) -> None:
    mapping = stack_mapping("dev")
    path = _write(tmp_path, mapping)
    text = path.read_text(encoding="utf-8")
    version = mapping["hyperpod-inference:cluster"]["kubernetesVersion"]
    path.write_text(text.replace(f"kubernetesVersion: '{version}'", "kubernetesVersion: 1.30"), encoding="utf-8")
    result = run_module("tools.cli.preview", "--stack", "dev", "--stack-file", str(path))
    assert result.returncode == 2
    assert (
        "hyperpod-inference:cluster.kubernetesVersion: Input should be a valid string (got 1.3); YAML read an "
        'unquoted number: quote the value, e.g. kubernetesVersion: "1.30"'
    ) in _flat(result.stdout)


@pytest.mark.parametrize("cidr", ["10.0.0.0/28", "10.0.0.0/29"])
def test_tiny_vpc_names_the_vpc_not_a_key_the_user_never_set(cidr: str) -> None:
    mapping = copy.deepcopy(stack_mapping("dev"))
    mapping["hyperpod-inference:network"]["cidr"] = cidr
    message = _issues("dev", mapping)["network.cidr"]
    assert message.startswith(f"network.cidr {cidr} is too small for per-AZ subnets")
    assert "privateSubnetPrefixLength" not in message
