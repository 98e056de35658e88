"""No silent drops, no false refusals (issue 25, points 2, 4 and 5, and its mistake list).

Each check has three outcomes: it holds; it refuses (exit 2 with the key, before anything is registered); or it
cannot be checked offline (an advisory naming what decides it, listed with the capacity and rehearsal tables,
exit 0 or 1). The mistakes a new user made are here with the exit code and the key they must get.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from components.config import ConfigError, StackConfig
from components.config.loader import parse_stack_mapping
from components.config.validation import run_advisories
from policies.cluster_versions import accepted_versions, version_problem
from tests.conftest import stack_mapping
from tools.cli.preview import preview
from tools.plan.harness import ROOT
from tools.preflight import checks as pc

Mutation = Callable[[dict[str, Any]], None]
CLUSTER, ENDPOINTS, GATEWAY = "hyperpod-inference:cluster", "hyperpod-inference:endpoints", "hyperpod-inference:gateway"


def _ep(m: dict[str, Any], i: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = m[ENDPOINTS][i]["spec"]
    return spec


def _issues(stack: str, mutate: Mutation) -> list[str]:
    mapping = stack_mapping(stack)
    mutate(mapping)
    try:
        parse_stack_mapping(stack, mapping)
    except ConfigError as err:
        return [i.render() for i in err.issues]
    return []


def _advisories(stack: str, mutate: Mutation) -> list[str]:
    mapping = stack_mapping(stack)
    mutate(mapping)
    cfg = parse_stack_mapping(stack, mapping)
    assert isinstance(cfg, StackConfig)
    return [a.render() for a in run_advisories(cfg)]


def _hostname(m: dict[str, Any]) -> None:
    spec = _ep(m)
    spec.pop("instanceType")
    spec["nodeAffinity"] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["hyperpod-i-0a"]}]}
            ]
        }
    }


def _g6e_seven(m: dict[str, Any]) -> None:
    """replicas 7 on two ml.g6e.12xlarge nodes (4 GPUs, 24 cores each): CPU binds, not the GPUs."""
    m[CLUSTER]["instanceGroups"][1] = {
        "name": "gpu",
        "instanceType": "ml.g6e.12xlarge",
        "instanceCount": 2,
        "availabilityZoneId": "usw2-az2",
    }
    _ep(m).update(instanceType="ml.g6e.12xlarge", replicas=7)


# --- the issue's mistake list ------------------------------------------------------------------------------------

REFUSED: list[tuple[str, str, Mutation, str]] = [
    # (id, stack, mistake, the rendered error it must give: exit 2)
    (
        "bucket-as-s3-uri",
        "dev",
        lambda m: _ep(m)["modelSourceConfig"]["s3Storage"].update(bucketName="s3://my-models/"),
        "hyperpod-inference:endpoints[0].spec.modelSourceConfig.s3Storage.bucketName: 's3://my-models/' is an S3 "
        "URI, not a bucket name: write the bucket name only ('my-models') (S3 User Guide, 'General purpose bucket "
        "naming rules') [s3-locations-valid]",
    ),
    (
        "bucket-uppercase-underscore",
        "dev",
        lambda m: _ep(m)["modelSourceConfig"]["s3Storage"].update(bucketName="My_Models"),
        "hyperpod-inference:endpoints[0].spec.modelSourceConfig.s3Storage.bucketName: 'My_Models' contains 'M' '_'; "
        "only lowercase letters, numbers, '.' and '-'",
    ),
    (
        "model-location-as-s3-uri",
        "dev",
        lambda m: _ep(m)["modelSourceConfig"].update(modelLocation="s3://hpi-dev-models-123456789012/llama31_8b"),
        "hyperpod-inference:endpoints[0].spec.modelSourceConfig.modelLocation: 's3://hpi-dev-models-123456789012/"
        "llama31_8b' is an S3 URI; modelLocation is the key prefix inside s3Storage.bucketName: write 'llama31_8b'",
    ),
    (
        "stack-tag-aws-prefix",
        "dev",
        lambda m: m.__setitem__("hyperpod-inference:tags", {"aws:owner": "ml"}),
        "hyperpod-inference:tags.aws:owner: tag key 'aws:owner': the aws: prefix is reserved for AWS and cannot be "
        "used (Tag Editor user guide, 'Tag naming limits and requirements')",
    ),
    (
        "stack-tag-overwritten-by-the-stack",
        "dev",
        lambda m: m.__setitem__("hyperpod-inference:tags", {"managed-by": "terraform"}),
        "hyperpod-inference:tags.managed-by: tag key 'managed-by' is set by the stack itself (value 'pulumi'); use "
        "another key",
    ),
    (
        "too-many-tags",
        "dev",
        lambda m: m.__setitem__("hyperpod-inference:tags", {f"t{i}": "x" for i in range(48)}),
        "hyperpod-inference:tags: 51 tags (3 set by the stack); AWS allows at most 50 per resource",
    ),
    (
        "endpoint-tag-aws-prefix",
        "dev",
        lambda m: _ep(m).update(tags=[{"name": "AWS:team", "value": "ml"}]),
        "hyperpod-inference:endpoints[0].spec.tags[0].name: tag key 'AWS:team': the aws: prefix is reserved",
    ),
    (
        "gateway-name-not-the-stacks",
        "prod",
        lambda m: _ep(m, 2)["inferenceGateway"].update(name="my-gateway"),
        "hyperpod-inference:endpoints[2].spec.inferenceGateway.name: names 'my-gateway'; this stack's gateway is "
        "'inference-gateway': any other name makes the operator create a gateway without this stack's spec (no JWT "
        "authentication); set name: inference-gateway",
    ),
    (
        "scheduler-model-served-by-no-endpoint",
        "prod",
        lambda m: m[GATEWAY]["spec"]["schedulers"][0].update(modelName="Qwen2.5-7B"),
        "hyperpod-inference:gateway.spec.schedulers[0].modelName: 'Qwen2.5-7B' is served by no endpoint of this "
        "stack that opts into the gateway; served: Qwen2.5-7B-Instruct",
    ),
    (
        "latest-image-kvaware-prod",
        "prod",
        lambda m: _ep(m)["worker"].update(image="lmcache/vllm-openai:latest"),
        "hyperpod-inference:endpoints[0].spec.worker.image: image lmcache/vllm-openai:latest names no version (tag "
        "'latest' is mutable), so whether it is LMCache >= 0.4.3 (what add-on v2.0.0-eksbuild.2 needs) cannot be "
        "known offline; pin lmcache/vllm-openai:<a version tag that is LMCache >= 0.4.3> "
        "[image-compatible-with-operator]",
    ),
    (
        "untagged-image-kvaware-prod",
        "prod",
        lambda m: _ep(m)["worker"].update(image="lmcache/vllm-openai"),
        "names no version (no tag: Kubernetes pulls :latest, which is mutable)",
    ),
    (
        "sglang-without-metrics-flag-prod",
        "prod",
        lambda m: _ep(m, 2)["worker"].update(args=["--model-path", "/opt/ml/model", "--port", "8000"]),
        # prod's qwen-sglang opts into the managed gateway, which needs the flag (issue 47 item 8)
        "hyperpod-inference:endpoints[2].spec.worker.args: the managed Inference Gateway routes on SGLang's metrics "
        "but worker.command/args do not start the SGLang server with --enable-metrics",
    ),
    (
        "zone-of-another-region",
        "dev",
        lambda m: (
            _hostname(m),
            _ep(m)["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
                "matchExpressions"
            ].__setitem__(0, {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-2a"]}),
        ),
        "matchExpressions[0].values[0]: zone 'us-east-2a' is not in the stack's Region us-west-2",
    ),
    (
        "gpu-request-below-limit",
        "dev",
        lambda m: _ep(m)["worker"]["resources"].update(
            requests={"cpu": "6", "memory": "30Gi", "nvidia.com/gpu": "1"}, limits={"nvidia.com/gpu": "2"}
        ),
        "hyperpod-inference:endpoints[0].spec.worker.resources.limits.nvidia.com/gpu: endpoints[0] llama-8b: worker "
        "limits.nvidia.com/gpu (2) must equal requests.nvidia.com/gpu (1) for an extended resource "
        "[endpoint-resources-valid]",
    ),
    (
        "cpu-binds-not-gpu",
        "dev",
        _g6e_seven,
        "hyperpod-inference:endpoints[0].spec.replicas: endpoints[0] llama-8b needs 7 worker pods x 1 GPUs (6 CPU, "
        "30Gi memory each) on ml.g6e.12xlarge; 1 of them fit nowhere: group gpu has 2 x 23.345 = 46.69 CPU "
        "(threadsPerCore 1: 24 of the 48 vCPUs; threadsPerCore: 2 shows all 48), its other pods take 36; free per "
        "node: 5.345, 5.345; CPU binds (a pod needs 6); GPUs free per node: 1, 1 [endpoint-fits-group-capacity]",
    ),
]


@pytest.mark.parametrize(("stack", "mutate", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_wrong_input_exits_2_with_the_key(stack: str, mutate: Mutation, expected: str, capsys) -> None:
    mapping = stack_mapping(stack)
    mutate(mapping)
    assert preview(stack, mapping=mapping) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert expected in out, out[-4000:]
    assert "Traceback" not in out


ADVISED: list[tuple[str, str, Mutation, str, str]] = [
    # (id, stack, input that cannot be judged offline, the advisory's key, what checks it)
    (
        "node-name-affinity",
        "dev",
        _hostname,
        "hyperpod-inference:endpoints[0].spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms[0].matchExpressions[0]",
        "the cluster: node names exist once the nodes join",
    ),
    (
        "latest-image-dev",
        "dev",
        lambda m: _ep(m)["worker"].update(image="lmcache/vllm-openai:latest"),
        "hyperpod-inference:endpoints[0].spec.worker.image",
        "the cluster: the version the worker pod runs",
    ),
    (
        "model-bucket-in-another-region",
        "dev",
        lambda m: _ep(m)["modelSourceConfig"]["s3Storage"].update(region="us-east-1"),
        "hyperpod-inference:endpoints[0].spec.modelSourceConfig.s3Storage.region",
        "tools.preflight.regional (GetBucketLocation: the bucket's real Region)",
    ),
    (
        "label-no-group-declares",
        "dev",
        lambda m: (
            _hostname(m),
            _ep(m)["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
                "matchExpressions"
            ].__setitem__(0, {"key": "example.com/pool", "operator": "In", "values": ["gpu"]}),
        ),
        "hyperpod-inference:endpoints[0].spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms[0].matchExpressions[0]",
        "the cluster: `kubectl get nodes -L example.com/pool` (no instance group declares the label example.com/pool)",
    ),
    (
        "allow-replacement-without-diff",
        "dev",
        lambda m: m.__setitem__("hyperpod-inference:allowReplacement", ["hyperpod-clster"]),
        "hyperpod-inference:allowReplacement[0]",
        "python -m tools.cli.preview --diff BASE.json (the base plan's resources)",
    ),
    (
        "router-service-port-outside-prod",
        "staging",
        lambda m: None,
        "hyperpod-inference:ingress.routes[0].servicePort",
        "the cluster, after the endpoint's first deploy: `kubectl get svc -n hyperpod-inference-system`",
    ),
]


@pytest.mark.parametrize(
    ("stack", "mutate", "key", "checked_by"), [c[1:] for c in ADVISED], ids=[c[0] for c in ADVISED]
)
def test_what_cannot_be_known_offline_is_an_advisory_not_an_error(
    stack: str, mutate: Mutation, key: str, checked_by: str, capsys
) -> None:
    mapping = stack_mapping(stack)
    mutate(mapping)
    assert preview(stack, mapping=mapping, as_json=True) in (0, 1)
    plan = json.loads(capsys.readouterr().out)["hyperpodInference"]
    assert not plan.get("configErrors")
    found = [a for a in plan["advisories"] if f"hyperpod-inference:{a['key']}" == key]
    assert found, plan["advisories"]
    assert found[0]["checkedBy"].startswith(checked_by)


def test_advisories_are_printed_with_the_capacity_and_rehearsal_tables(capsys) -> None:
    mapping = stack_mapping("dev")
    _hostname(mapping)
    assert preview("dev", mapping=mapping) == 0
    out = capsys.readouterr().out
    capacity, advisories, rehearsal = (
        out.index("capacity per instance group"),
        # dev's 6 and access-entries-viewer-group (no entry joins hpi-endpoint-viewers)
        out.index("cannot be checked offline: 7 advisories (the exit code does not depend on them)"),
        out.index("rehearsal (deploy) of dev"),
    )
    assert capacity < advisories < rehearsal
    assert "hyperpod-inference:endpoints[0].spec.nodeAffinity" in out[advisories:rehearsal]
    # dev's endpoint routes: the operator's own Ingress is a second door (the advisory operator-own-ingress)
    assert "(hyperpod-inference-system/alb-llama-8b-inference)" in out[advisories:rehearsal]


def test_sglang_metrics_are_advisory_in_dev_and_staging_mandatory_in_prod(stack_runs) -> None:
    from policies import rules

    rule = rules.RULES["sglang-metrics-served"]
    assert {env: rule.enforcement[env] for env in rules.ENVIRONMENTS} == {
        "dev": "advisory",
        "staging": "advisory",
        "prod": "mandatory",
    }
    for env in ("dev", "staging", "prod"):
        config = json.loads((ROOT / "policies" / f"config.{env}.json").read_text(encoding="utf-8"))
        assert config["sglang-metrics-served"]["enforcementLevel"] == rule.enforcement[env]


def test_scheduler_model_on_an_adopted_cluster_is_an_advisory() -> None:
    """On an adopted cluster another stack may serve the model: not refused, not taken as fine."""

    def adopt(m: dict[str, Any]) -> None:
        prod = stack_mapping("prod")
        m[GATEWAY] = copy.deepcopy(prod[GATEWAY])
        m[GATEWAY]["spec"].pop("auth")
        m[GATEWAY]["namespace"] = "inference"  # no endpoint of this stack opts in: the gateway's namespace is given
        m[GATEWAY]["spec"]["schedulers"][0]["modelName"] = "served-elsewhere"
        m["hyperpod-inference:operator"]["addonVersion"] = "v2.0.0-eksbuild.2"

    assert _issues("attach", adopt) == []
    (advisory,) = [a for a in _advisories("attach", adopt) if "schedulers" in a]
    assert advisory.startswith("hyperpod-inference:gateway.spec.schedulers[0].modelName: 'served-elsewhere' is served")
    assert advisory.endswith(
        "[scheduler-model-served; checked by the cluster: `kubectl get inferenceendpointconfigs,jumpstartmodels -A` (spec.modelName)]"
    )


def test_allow_replacement_is_checked_against_the_base_plan_with_diff(tmp_path: Path, capsys) -> None:
    assert preview("dev", as_json=True) == 0
    base = tmp_path / "base.json"
    base.write_text(capsys.readouterr().out, encoding="utf-8")
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:allowReplacement"] = ["hyperpod-clster"]
    assert preview("dev", mapping=mapping, diff=base) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "hyperpod-inference:allowReplacement[0]: 'hyperpod-clster' names no stateful resource of this stack; its "
        "stateful resources: access-logs-bucket, eks-cluster, hyperpod-cluster, hyperpod-lifecycle, operator-iam-tls "
        "(did you mean hyperpod-cluster?)"
    ) in out
    mapping["hyperpod-inference:allowReplacement"] = ["hyperpod-cluster"]
    assert preview("dev", mapping=mapping, diff=base) == 0


# --- version messages -------------------------------------------------------------------------------------------

ON = dt.date(2026, 12, 1)


def test_version_messages_list_what_is_accepted_that_day() -> None:
    accepted = (
        "accepted on 2026-12-01: 1.32 (extended support, billed extra), 1.33 (extended support, billed extra), 1.34; "
        "1.35 only with cluster.acceptUnlistedKubernetesVersion: true"
    )
    assert version_problem("1.29", ON) == (
        f"SageMaker HyperPod does not support Kubernetes 1.29 (sagemaker-hyperpod-eks-prerequisites); {accepted}"
    )
    assert version_problem("1.30", ON) == f"Kubernetes 1.30 left EKS extended support on 2026-07-23; {accepted}"
    assert version_problem("1.32", ON) is None
    assert accepted_versions(dt.date(2027, 3, 28)) == ["1.33", "1.34"]  # 1.35 is unlisted (acceptUnlisted...)


@pytest.mark.parametrize("version", ["1.29", "1.30"])
def test_a_version_error_adds_no_error_about_kube_proxy(version: str) -> None:
    """1.29 and 1.30 used to add `cluster.addons.kubeProxy ... does not match` although the user never wrote it."""
    found = _issues("dev", lambda m: m[CLUSTER].__setitem__("kubernetesVersion", version))
    assert [i.split(":", 2)[1] for i in found] == ["cluster.kubernetesVersion"], found
    assert "kube-proxy" not in found[0]


def test_a_supported_version_with_the_default_kube_proxy_is_reported_at_the_version() -> None:
    def to_133(m: dict[str, Any]) -> None:
        m[CLUSTER].pop("addons", None)  # dev writes the 1.35 build; the default is what this test is about
        m[CLUSTER].pop("acceptUnlistedKubernetesVersion", None)
        m[CLUSTER]["kubernetesVersion"] = "1.33"

    found = _issues("dev", to_133)
    assert found == [
        "hyperpod-inference:cluster.kubernetesVersion: Kubernetes 1.33 needs a kube-proxy v1.33.x-eksbuild.N; the "
        "default (v1.34.0-eksbuild.2) is for 1.34: set cluster.addons.kubeProxy (and coredns) to builds for 1.33 "
        "(python -m tools.preflight.regional lists them)"
    ]


# --- the documentation names the three outcomes of every rule ----------------------------------------------


def _doc_rows(doc: str) -> dict[str, str]:
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            rows[line.split("`")[1]] = line
    return rows


def test_policies_doc_gives_each_policy_its_offline_outcome() -> None:
    from policies.pack import POLICIES

    rows = _doc_rows("policies.md")
    for policy in POLICIES:
        cells = [c.strip() for c in rows[policy.name].strip("|").split("|")]
        assert len(cells) == 5 and cells[4], f"{policy.name}: the 'cannot be checked offline' column is empty"


def test_config_time_advisories_and_checks_are_documented() -> None:
    rows = _doc_rows("policies.md")
    for rule in (
        "model-bucket-region",
        "env-secret-plaintext",
        "scheduler-model-served",
        "ingress-service-known",
        "allow-replacement-names",
        "ingress-jwt",
        "alb-jwks-limits",
        "waf-caller-key-jwt",
    ):
        assert rule in rows, rule


def test_capacity_doc_gives_each_rule_three_outcomes() -> None:
    from policies.capacity_rules import CAPACITY_RULE_NAMES

    rows = _doc_rows("capacity.md")
    for name in CAPACITY_RULE_NAMES:
        cells = [c.strip() for c in rows[name].strip("|").split("|")]
        assert len(cells) == 5 and all(cells), name


# --- preflight decides what the stack file cannot ------------------------------------------------------------


def _zone_cfg(zones: list[str]) -> StackConfig:
    mapping = stack_mapping("dev")
    _hostname(mapping)
    _ep(mapping)["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"
    ] = [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": zones}]
    cfg = parse_stack_mapping("dev", mapping)
    assert isinstance(cfg, StackConfig)
    return cfg


def _zones_client(cfg: StackConfig) -> tuple[pc.Clients, Stubber]:
    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=cfg.region)
    clients = pc.Clients(session, cfg.region)
    stub = Stubber(clients("ec2"))
    # this account's mapping: us-west-2a is usw2-az2 (the gpu-p5 group's AZ ID), us-west-2b is usw2-az3
    stub.add_response(
        "describe_availability_zones",
        {
            "AvailabilityZones": [
                {"ZoneName": "us-west-2a", "ZoneId": "usw2-az2", "RegionName": "us-west-2", "State": "available"},
                {"ZoneName": "us-west-2b", "ZoneId": "usw2-az3", "RegionName": "us-west-2", "State": "available"},
                {"ZoneName": "us-west-2c", "ZoneId": "usw2-az1", "RegionName": "us-west-2", "State": "available"},
            ]
        },
        {},
    )
    stub.activate()
    return clients, stub


def test_preflight_maps_zone_names_to_the_groups_az_ids() -> None:
    cfg = _zone_cfg(["us-west-2a"])
    clients, stub = _zones_client(cfg)
    (row,) = pc.check_endpoint_zones(clients, cfg)
    stub.assert_no_pending_responses()
    assert (row.status, row.detail) == ("PASS", "us-west-2a = usw2-az2 (group gpu-p5)")


def test_preflight_fails_zone_names_no_group_is_in() -> None:
    cfg = _zone_cfg(["us-west-2b", "us-west-2z"])
    clients, _ = _zones_client(cfg)
    (row,) = pc.check_endpoint_zones(clients, cfg)
    assert row.status == "FAIL"
    assert row.detail == (
        "in this account the zone names map to us-west-2b = usw2-az3 (us-west-2z are not zones of us-west-2); the "
        "endpoint's groups are in usw2-az1, usw2-az2: its pods would stay Pending"
    )
    assert row.action == (
        "select the zone names of usw2-az1, usw2-az2 (us-west-2a, us-west-2c) in endpoints[0].spec.nodeAffinity"
    )


@pytest.fixture
def s3_account(monkeypatch: pytest.MonkeyPatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        yield


@pytest.mark.parametrize(
    ("created_in", "said", "status", "detail"),
    [
        ("us-west-2", "us-west-2", "PASS", "bucket hpi-dev-models-123456789012 is in us-west-2"),
        (
            "eu-west-1",
            "us-west-2",
            "FAIL",
            "bucket hpi-dev-models-123456789012 is in eu-west-1, s3Storage.region says us-west-2",
        ),
        (
            "eu-west-1",
            "eu-west-1",
            "WARN",
            "bucket hpi-dev-models-123456789012 is in eu-west-1, the stack in us-west-2: model downloads cross Regions",
        ),
        (None, "us-west-2", "FAIL", "bucket hpi-dev-models-123456789012 does not exist"),
    ],
    ids=["same-region", "region-says-wrong", "cross-region", "missing"],
)
def test_preflight_reads_the_model_buckets_region(
    s3_account: None, created_in: str | None, said: str, status: str, detail: str
) -> None:
    mapping = stack_mapping("dev")
    _ep(mapping)["modelSourceConfig"]["s3Storage"]["region"] = said
    cfg = parse_stack_mapping("dev", mapping)
    assert isinstance(cfg, StackConfig)
    clients = pc.Clients(boto3.Session(region_name="us-west-2"), cfg.region)
    if created_in is not None:
        boto3.client("s3", region_name=created_in).create_bucket(
            Bucket="hpi-dev-models-123456789012", CreateBucketConfiguration={"LocationConstraint": created_in}
        )
    (row,) = pc.check_model_buckets(clients, cfg)
    assert (row.status, row.detail) == (status, detail)


def test_the_gateway_needs_sglang_metrics_even_with_metrics_off() -> None:
    """Issue 47 item 8: the managed gateway needs SGLang started with --enable-metrics (ai-on-sagemaker-hyperpod
    @e53295231ea5), so metrics.enabled: false no longer exempts an endpoint that opts into the gateway."""
    from policies import rules

    def cr(gateway: bool, args: list[str]) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "metrics": {"enabled": False},
            "worker": {
                "image": "lmsysorg/sglang:v0.5.2-cu126",
                "args": args,
                "modelInvocationPort": {"containerPort": 8080},
            },
        }
        if gateway:
            spec["inferenceGateway"] = {"enabled": True, "name": "inference-gateway"}
        return {"kind": "InferenceEndpointConfig", "spec": spec}

    ctx = rules.RuleContext(environment="prod", addon_version="v2.1.0-eksbuild.1")  # type: ignore[call-arg]
    (v,) = rules.sglang_metrics_served(cr(True, ["--port", "8080"]), ctx)
    assert v.path == "worker.args" and v.startswith("the managed Inference Gateway routes on SGLang's metrics")
    assert rules.sglang_metrics_served(cr(True, ["--enable-metrics"]), ctx) == []
    assert rules.sglang_metrics_served(cr(False, ["--port", "8080"]), ctx) == []  # metrics off, no gateway
