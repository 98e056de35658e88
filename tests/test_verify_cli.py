"""``python -m tools.verify`` end to end: ``--list``, the exit codes (0 holds, 1 a check failed with its fix, 2 cannot
run, never a traceback), ``--json``, and the loop back: what a run writes to ``verified/<stack>.json`` changes the
next offline preview (router port, node allocatable) and the checklist listing.

The cluster is the recorded Kubernetes API of ``tests/verify_cluster.py`` on 127.0.0.1 (no kube-apiserver binary can
be installed here), AWS botocore clients with a Stubber.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from components.config.validation import run_advisories
from tests.cli_runner import run_module
from tests.conftest import CRDS, CRDS_MISSING
from tests.test_verify import KV_HOST, OUTPUTS, ROUTER_PREFIX, Door
from tests.verify_cluster import (
    ALB_ARN,
    ALB_DNS,
    ALB_LOG_BUCKET,
    ALB_LOG_OBJECT,
    TG_KVAWARE,
    TG_PREFIX,
    VPC,
    Recorded,
    StubbedClients,
    addon,
    alb_log_attributes,
    cluster_nodes,
    healthy_targets,
    kube_server,
    queue_prerequisite_builds,
    staging,
    staging_cluster,
)
from tools.verify.__main__ import main, verify

V33 = CRDS / "v3.3"
pytestmark = pytest.mark.skipif(
    not (V33 / "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml").is_file(), reason=CRDS_MISSING
)
DAY = "2026-12-01"  # HPI_AS_OF of the suite (tests/conftest.py): the day verify stamps on what it observed


@pytest.fixture(autouse=True)
def verified_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "verified"
    monkeypatch.setenv("HPI_VERIFIED_DIR", str(folder))
    return folder


def aws_of_a_staging_run() -> StubbedClients:
    """Every AWS call of a whole staging run, in order per client."""
    clients = StubbedClients().caller()
    clients.queue("elbv2", "describe_target_health", healthy_targets("10.128.32.11"), {"TargetGroupArn": TG_PREFIX})
    clients.queue("elbv2", "describe_target_health", healthy_targets("10.128.32.12"), {"TargetGroupArn": TG_KVAWARE})
    clients.queue(
        "route53",
        "list_resource_record_sets",
        {
            "ResourceRecordSets": [
                {
                    "Name": "api.staging.inference.example.internal.",
                    "Type": "A",
                    "AliasTarget": {
                        "HostedZoneId": "ZHURV8PSTC4K8",
                        "DNSName": f"{ALB_DNS}.",
                        "EvaluateTargetHealth": True,
                    },
                }
            ],
            "IsTruncated": False,
            "MaxItems": "1",
        },
    )
    clients.queue("eks", "describe_addon", addon())
    queue_prerequisite_builds(clients)
    clients.queue("sagemaker", "list_cluster_nodes", cluster_nodes({"system": 2, "gpu-p5": 3}))
    clients.queue(
        "elbv2",
        "describe_load_balancers",
        {
            "LoadBalancers": [
                {
                    "LoadBalancerArn": ALB_ARN,
                    "DNSName": ALB_DNS,
                    "LoadBalancerName": "hpi-staging-front-door",
                    "VpcId": VPC,
                }
            ]
        },
    )
    # alb-access-logs: the ALB again, its log attributes, one object under alb/AWSLogs/<account>/
    clients.queue(
        "elbv2",
        "describe_load_balancers",
        {
            "LoadBalancers": [
                {"LoadBalancerArn": ALB_ARN, "DNSName": ALB_DNS, "LoadBalancerName": "hpi-staging-front-door"}
            ]
        },
    )
    clients.queue("elbv2", "describe_load_balancer_attributes", alb_log_attributes(), {"LoadBalancerArn": ALB_ARN})
    clients.queue(
        "s3",
        "list_objects_v2",
        {"KeyCount": 1, "Contents": [{"Key": f"alb/AWSLogs/111122223333/{ALB_LOG_OBJECT}"}]},
        {"Bucket": ALB_LOG_BUCKET, "Prefix": "alb/AWSLogs/111122223333/", "MaxKeys": 1},
    )
    return clients


def run_verify(
    responses: dict[str, Any], *args: str, outputs: dict[str, Any] | None = None, tmp: Path
) -> tuple[int, str, Recorded]:
    out = io.StringIO()
    console = Console(file=out, width=300, highlight=False, soft_wrap=True)
    outputs_file = tmp / "outputs.json"
    outputs_file.write_text(json.dumps(OUTPUTS if outputs is None else outputs), encoding="utf-8")
    recorded = Recorded(responses)
    clients = aws_of_a_staging_run()
    with kube_server(recorded) as kube:
        code = main(
            ["--stack", "staging", "--outputs", str(outputs_file), *args],
            clients=clients,
            kube=kube,
            http=Door({("", False): 302, (KV_HOST, False): 401}),
            console=console,
        )
    clients.assert_all_used()
    return code, out.getvalue(), recorded


def test_list_prints_every_check_as_json() -> None:
    done = run_module("tools.verify", "--list")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert all(set(c) == {"id", "settles", "reads"} for c in listed)
    assert [c["id"] for c in listed][:4] == [
        "router-service",
        "target-group-binding",
        "front-door-dns",
        "front-door-requests",
    ]
    router = next(c for c in listed if c["id"] == "router-service")
    assert router["settles"] == ["router-service-port"]


def test_without_credentials_exit_2_saying_what_to_configure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    done = run_module("tools.verify", "--stack", "staging")
    assert done.returncode == 2
    assert "verify cannot run for stack staging: no AWS credentials found: configure them" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_without_a_kubeconfig_exit_2_with_the_command_that_writes_one(tmp_path: Path) -> None:
    out = io.StringIO()
    code = verify(
        "staging",
        kubeconfig=tmp_path / "missing.yaml",
        clients=StubbedClients().caller(),
        console=Console(file=out, width=300),
    )
    assert code == 2
    assert "no cluster access" in out.getvalue()
    assert (
        "run `aws eks update-kubeconfig --name hpi-staging-eks --region eu-west-2` or pass --kubeconfig"
        in out.getvalue()
    )


def test_an_unreachable_api_server_is_exit_2(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
        encoding="utf-8",
    )
    out = io.StringIO()
    code = verify(
        "staging", kubeconfig=kubeconfig, clients=StubbedClients().caller(), console=Console(file=out, width=300)
    )
    assert code == 2
    assert "cannot reach the cluster's API server" in out.getvalue()


def test_a_config_error_is_exit_2_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "Pulumi.staging.yaml"
    bad.write_text("config:\n  aws:region: eu-west-2\n  hyperpod-inference:environment: stagin\n", encoding="utf-8")
    done = run_module("tools.verify", "--stack", "staging", "--stack-file", str(bad))
    assert done.returncode == 2
    assert "hyperpod-inference:environment" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_healthy_stack_exits_0_and_writes_what_it_observed(tmp_path: Path, verified_dir: Path) -> None:
    code, out, recorded = run_verify(staging_cluster(V33), tmp=tmp_path)
    assert code == 0, out
    assert "0 FAIL" in out
    assert {m for m, _ in recorded.requests} == {"GET"}
    doc = json.loads((verified_dir / "staging.json").read_text(encoding="utf-8"))
    assert doc["observedOn"] == DAY
    assert doc["services"]["llama-8b-prefix"]["ports"] == [{"name": "http", "port": 8000, "targetPort": 8080}]
    assert doc["groups"]["system"]["allocatable"] == {
        "cpu": "3.92",
        "memory": "31.0Gi",
        "pods": "58",
        "nvidia.com/gpu": "0",
    }
    assert "router-service-port" in doc["settled"] and "nodeadm-defaults" in doc["settled"]
    assert doc["facts"]["kubernetesVersion"] == "v1.34.2-eks-3025e55"


def test_json_output_lists_each_result_with_its_fix(tmp_path: Path) -> None:
    cluster = staging_cluster(V33)
    cluster[ROUTER_PREFIX]["spec"]["ports"][0]["port"] = 8080
    code, out, _ = run_verify(cluster, "--json", "--no-write", tmp=tmp_path)
    assert code == 1
    doc = json.loads(out)
    assert doc["exit"] == 1 and doc["verified"] is None
    failed = [r for r in doc["results"] if r["status"] == "FAIL"]
    assert failed == [
        {
            "check": "router-service",
            "status": "FAIL",
            "detail": "llama-8b-prefix: Service hyperpod-inference-system/llama-8b-prefix-hyperpod-ns-serving-routing-service "
            "listens on 8080, the binding uses 8000",
            "fix": "set ingress.routes[0].servicePort: 8080, the router Service listens there",
            "settles": ["router-service-port"],
        }
    ]


def test_the_router_port_verify_saw_changes_the_next_offline_preview(tmp_path: Path, verified_dir: Path) -> None:
    before = run_module("tools.cli.preview", "--stack", "staging")
    assert before.returncode == 0, before.stdout[-2000:]
    cluster = staging_cluster(V33)
    cluster[ROUTER_PREFIX]["spec"]["ports"][0]["port"] = 8080
    code, _, _ = run_verify(cluster, tmp=tmp_path)
    assert code == 1
    after = run_module("tools.cli.preview", "--stack", "staging")
    assert after.returncode == 2
    assert (
        "hyperpod-inference:ingress.routes[0].servicePort: the Service hyperpod-inference-system/"
        f"llama-8b-prefix-hyperpod-ns-serving-routing-service listens on 8080, not 8000 (observed {DAY} by verify): set "
        "ingress.routes[0].servicePort: 8080, the Service listens there"
    ) in after.stdout
    assert "Traceback" not in after.stdout + after.stderr


def _validated_now() -> Any:
    """Staging validated afresh: the loader reads verified/<stack>.json once per validation (``cfg.context``), so a
    config validated before a verify run keeps what was known then."""
    return staging.__wrapped__()


def test_a_confirmed_port_replaces_the_guess_advisory(tmp_path: Path) -> None:
    before = [a for a in run_advisories(_validated_now()) if a.path == "ingress.routes[1].servicePort"]
    assert [a.message.endswith("guesses 8000 (the worker's containerPort)") for a in before] == [True]
    code, _, _ = run_verify(staging_cluster(V33), tmp=tmp_path)
    assert code == 0
    after = [a for a in run_advisories(_validated_now()) if a.path == "ingress.routes[1].servicePort"]
    assert [a.message for a in after] == [
        "the Service hyperpod-inference-system/llama-8b-kvaware-hyperpod-ns-research-routing-service listens on 8000, the port "
        f"the binding uses (observed {DAY} by verify); pin it with servicePort: 8000"
    ]
    assert after[0].checked_by == "python -m tools.verify --stack staging"


def test_the_allocatable_verify_saw_changes_the_capacity_check(tmp_path: Path) -> None:
    from components.config.capacity import capacity_plan
    from components.config.context import read_context

    valid = _validated_now()  # before verify: what the model assumes
    modelled = capacity_plan(valid).allocatable["gpu-p5"]
    assert modelled is not None and modelled.observed == ""
    cluster = staging_cluster(V33)
    for node in cluster["/api/v1/nodes"]["items"][2:]:
        node["status"]["allocatable"]["memory"] = "20Gi"
    code, out, _ = run_verify(cluster, tmp=tmp_path)
    assert code == 1 and "a node offers less than the capacity model assumes" in out
    # the config is now refused (the pods no longer fit): the plan of the valid one, judged with what verify saw
    judged = valid.model_copy()
    judged._context = read_context("staging", judged.region)
    seen = capacity_plan(judged).allocatable["gpu-p5"]
    assert seen is not None and seen.observed == f"observed {DAY} by verify"
    assert seen.allocatable["memory"] == 20 * 2**30 - modelled.daemonsets.get("memory", 0)
    assert seen.allocatable["cpu"] == modelled.allocatable["cpu"]  # the CPU it saw is the model's
    preview = run_module("tools.cli.preview", "--stack", "staging")
    assert preview.returncode == 2
    text = " ".join(preview.stdout.split())
    assert f"(observed {DAY} by verify)" in text
    assert "endpoints[0].spec.worker.resources.requests.memory" in text


def test_a_malformed_observation_file_is_a_config_error_naming_it(verified_dir: Path) -> None:
    verified_dir.mkdir()
    (verified_dir / "staging.json").write_text(
        '{"schema": "hyperpod-inference/verified/v1", "stack": "staging"}', encoding="utf-8"
    )
    done = run_module("tools.cli.preview", "--stack", "staging")
    assert done.returncode == 2
    assert (
        f"cannot use what verify observed: {verified_dir / 'staging.json'}: observedOn: Field required" in done.stdout
    )
    assert "Traceback" not in done.stdout + done.stderr


def test_what_verify_saw_of_another_service_is_not_applied(verified_dir: Path) -> None:
    """The route now binds the router Service, verify saw another one: the observation does not judge the route."""
    verified_dir.mkdir()
    doc = {
        "schema": "hyperpod-inference/verified/v1",
        "stack": "staging",
        "observedOn": "2026-12-04",
        "services": {
            "llama-8b-prefix": {
                "namespace": "inference",
                "name": "llama-8b-prefix",
                "exists": True,
                "ports": [{"port": 9000}],
            }
        },
    }
    (verified_dir / "staging.json").write_text(json.dumps(doc), encoding="utf-8")
    done = run_module("tools.cli.preview", "--stack", "staging")
    assert done.returncode == 0, done.stdout[-2000:]
    guesses = [a for a in run_advisories(staging()) if a.path == "ingress.routes[0].servicePort"]
    assert [a.rule for a in guesses] == ["ingress-service-known"]
    assert "observed" not in guesses[0].message


def test_token_cmd_prints_the_token_and_a_failing_one_cannot_run() -> None:
    from tools.verify.__main__ import _token
    from tools.verify.base import CannotRun

    assert _token(None, "echo eyJ.token") == "eyJ.token"
    assert _token("given", "false") == "given"
    with pytest.raises(CannotRun, match="--token-cmd 'false' failed"):
        _token(None, "false")
    with pytest.raises(CannotRun, match="printed no token"):
        _token(None, "true")
