"""``tools.preview --out``: Kubernetes manifests and the CloudFormation template reviewers diff."""

from __future__ import annotations

from pathlib import Path

import yaml

from tools.mocks import unwrap_secrets
from tools.preview import preview

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


def test_unwrap_secrets_removes_only_the_wrapper() -> None:
    wrapped = {"a": {"4dabf18193072939515e22adb298388d": SECRET_SIG, "value": {"b": [1, 2]}}, "c": "d"}
    assert unwrap_secrets(wrapped) == {"a": {"b": [1, 2]}, "c": "d"}
