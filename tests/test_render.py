"""``tools.cli.preview --out``: Kubernetes manifests and the CloudFormation template reviewers diff."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tools.cli.preview import preview
from tools.fetch.crds import find_crds
from tools.plan.mocks import unwrap_secrets

SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def test_out_writes_manifests_and_template(tmp_path: Path, stack_runs, capsys) -> None:
    assert preview("prod", out=tmp_path) == 0
    capsys.readouterr()
    manifests = sorted((tmp_path / "kubernetes").glob("*.yaml"))
    run = stack_runs["prod"]
    expected = [r for r in run.registrations if r.type.startswith("kubernetes:") and r.custom and "kind" in r.inputs]
    assert expected and len(manifests) == len(expected)
    for path in manifests:
        text = path.read_text()
        assert SECRET_SIG not in text, f"{path.name} still carries a Pulumi secret wrapper"
        doc = yaml.safe_load(text)
        assert list(doc)[:2] == ["apiVersion", "kind"], path.name
    kvaware = yaml.safe_load(
        (tmp_path / "kubernetes" / "inferenceendpointconfig-inference-llama-70b-kvaware.yaml").read_text()
    )
    assert kvaware["apiVersion"] == "inference.sagemaker.aws.amazon.com/v1"
    assert kvaware["spec"]["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"].startswith("rediss://")
    template = yaml.safe_load((tmp_path / "cloudformation.yaml").read_text())
    types = {r["Type"] for r in template["Resources"].values()}
    assert "AWS::SageMaker::Cluster" in types
    plan = json.loads((tmp_path / "plan.json").read_text())
    # the Stack step and one step per registration; the default providers sit in the extension block, as
    # `pulumi preview --json` lists no step for them
    assert len(plan["steps"]) == len(run.registrations) + 1
    assert plan["steps"][0]["newState"]["type"] == "pulumi:pulumi:Stack"
    validation = json.loads((tmp_path / "kubernetes" / "validation.json").read_text())
    outcomes = {(o["kind"], o["outcome"]) for o in validation["objects"]}
    # With the CRDs (../shared/crds or vendor/crds) the binding is judged by the LBC CRD; without them it is
    # unknown, never "valid" (the folder's absence must not turn into a pass).
    tgb = "valid" if find_crds() is not None else "cannot-validate-offline"
    assert {o for o in outcomes if o[0] == "TargetGroupBinding"} == {("TargetGroupBinding", tgb)}
    # no CRD is published: judged by the AWS Inference Gateway page's schema, and saying so
    assert ("InferenceGatewayConfig", "valid-against-docs-schema") in outcomes
    assert not [o for o in validation["objects"] if o["outcome"] == "invalid"]
    unknowns = json.loads((tmp_path / "iam-unknowns.json").read_text())
    policy = json.loads((tmp_path / "iam" / "access-logs-bucket-policy.bucket-policy.json").read_text())
    assert (
        policy["Statement"][0]["Resource"] == "<unknown until deploy: arn of aws:s3/bucket:Bucket access-logs-bucket>/*"
    )
    assert (
        "Statement[0].Resource: <unknown until deploy: arn of aws:s3/bucket:Bucket access-logs-bucket>"
        in (unknowns["access-logs-bucket-policy.bucket-policy.json"])
    )


def test_out_writes_every_iam_document(tmp_path: Path, stack_runs, capsys) -> None:
    assert preview("prod", out=tmp_path) == 0
    capsys.readouterr()
    files = sorted(p.name for p in (tmp_path / "iam").glob("*.json"))
    run = stack_runs["prod"]
    roles = [r for r in run.registrations if r.type == "aws:iam/role:Role"]
    policies = [r for r in run.registrations if r.type == "aws:iam/policy:Policy"]
    inline = [r for r in run.registrations if r.type == "aws:iam/rolePolicy:RolePolicy"]
    bucket_policies = [r for r in run.registrations if r.type == "aws:s3/bucketPolicy:BucketPolicy"]
    assert roles and policies and inline and bucket_policies
    assert sum(f.endswith(".trust.json") for f in files) == len(roles)
    assert sum(f.endswith(".policy.json") for f in files) == len(policies)
    assert sum(f.endswith(".inline.json") for f in files) == len(inline)
    assert sum(f.endswith(".bucket-policy.json") for f in files) == len(bucket_policies)
    trust = json.loads((tmp_path / "iam" / "hyperpod-execution-role.trust.json").read_text())
    assert trust["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert trust["Statement"][0]["Action"] == "sts:AssumeRole"
    tls = json.loads((tmp_path / "iam" / "operator-iam-tls-policy.bucket-policy.json").read_text())
    assert any(s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false" for s in tls["Statement"])
    for f in files:
        assert json.loads((tmp_path / "iam" / f).read_text())["Version"] == "2012-10-17", f
    # the stack's deploy policy (tools/cli/deployer_policy.py; tests/test_deployer_policy.py checks its content)
    assert "deployer-prod.json" in files and "deployer-prod.part1.json" in files
    assert json.loads((tmp_path / "deployer-prod.notes.json").read_text())["complete"] is True


def test_cloudformation_uses_the_stack_region(tmp_path: Path, stack_runs, capsys, monkeypatch) -> None:
    from tools.plan import render

    asked: list[str] = []
    original = render.resource_schema

    def spy(cfn_type: str, region: str):  # type: ignore[no-untyped-def]
        asked.append(region)
        return original(cfn_type, region)

    monkeypatch.setattr(render, "resource_schema", spy)
    assert preview("staging", out=tmp_path) == 0
    capsys.readouterr()
    assert asked and set(asked) == {"eu-west-2"}
    template = yaml.safe_load((tmp_path / "cloudformation.yaml").read_text())
    cluster = next(r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Cluster")
    assert cluster["Properties"]["InstanceGroups"][0]["InstanceStorageConfigs"][0]["EbsVolumeConfig"]["VolumeSizeInGB"]


def test_dashboards_are_written_by_name(tmp_path: Path) -> None:
    from tools.plan.mocks import Registration
    from tools.plan.render import write_outputs

    body = {"widgets": [{"type": "metric", "properties": {"metrics": [["AWS/SageMaker", "GPUUtilization"]]}}]}
    reg = Registration(
        type="aws:cloudwatch/dashboard:Dashboard",
        name="ops-dashboard",
        urn="urn:pulumi:dev::hyperpod-inference::aws:cloudwatch/dashboard:Dashboard::ops-dashboard",
        custom=True,
        parent=None,
        inputs={"dashboardName": "hpi-dev-inference", "dashboardBody": json.dumps(body)},
    )
    written = write_outputs([reg], tmp_path)
    assert written == [tmp_path / "dashboards" / "hpi-dev-inference.json"]
    assert json.loads(written[0].read_text()) == body


def test_unwrap_secrets_removes_only_the_wrapper() -> None:
    wrapped = {"a": {"4dabf18193072939515e22adb298388d": SECRET_SIG, "value": {"b": [1, 2]}}, "c": "d"}
    assert unwrap_secrets(wrapped) == {"a": {"b": [1, 2]}, "c": "d"}


def test_out_holds_no_secret_value(tmp_path: Path, stack_runs, capsys) -> None:
    """Issue 33 item 9: a Secret's stringData reads "[secret]" in --out as in the plan, and no file written holds a
    secret's value (the stack file's secrets, offline their placeholder, nor the generated Redis passwords)."""
    from components.config.stackfile import OFFLINE_SECRET_PLACEHOLDER
    from tools.plan.mocks import secret_values

    assert preview("prod", out=tmp_path) == 0
    capsys.readouterr()
    secret = yaml.safe_load((tmp_path / "kubernetes" / "secret-inference-hpi-kv-cache-credentials.yaml").read_text())
    assert secret["kind"] == "Secret" and secret["type"] == "Opaque"
    assert secret["stringData"] == {"password": "[secret]", "username": "[secret]"}
    values = secret_values(stack_runs["prod"].registrations, (OFFLINE_SECRET_PLACEHOLDER,))
    assert len(values) >= 2, "the run marks no secret values: nothing would be checked"
    reg = next(r for r in stack_runs["prod"].registrations if r.name == "endpoints-inference-kv-cache-credentials")
    assert unwrap_secrets(reg.inputs["stringData"])["password"] in values  # the value the file must not show
    leaked = [
        (p.relative_to(tmp_path).as_posix(), v)
        for p in tmp_path.rglob("*")
        if p.is_file()
        for v in values
        if v in p.read_text(encoding="utf-8")
    ]
    assert leaked == []
