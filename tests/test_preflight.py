"""Preflight checks against moto, and botocore Stubbers where moto lacks the API.

Stubbed (moto 5.2.5 has no SageMaker quotas, no EKS add-on catalogue, no training plans):
Service Quotas ListAWSDefaultServiceQuotas/ListServiceQuotas, EKS DescribeAddonVersions/
DescribeAddonConfiguration, SageMaker DescribeTrainingPlan. Everything else runs against moto.
"""

from __future__ import annotations

import datetime
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from moto import mock_aws
from rich.console import Console

from components.config import StackConfig
from components.config.ingress import RouteConfig
from tests.conftest import stack_mapping
from tools import preflight_checks as pc
from tools.preflight import NO_CREDENTIALS, load_config, main
from tools.preflight_checks import CheckResult, Clients

ACCOUNT = "123456789012"  # moto's default account


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-west-2",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield


def config(stack: str = "dev") -> StackConfig:
    return load_config(stack, stack_mapping(stack))


def clients_for(cfg: StackConfig) -> Clients:
    return Clients(boto3.Session(), cfg.region)


def by_status(results: list[CheckResult], status: str) -> list[CheckResult]:
    return [r for r in results if r.status == status]


def with_group(cfg: StackConfig, index: int, **update: Any) -> StackConfig:
    groups = list(cfg.cluster.instance_groups)
    groups[index] = groups[index].model_copy(update=update)
    return cfg.model_copy(update={"cluster": cfg.cluster.model_copy(update={"instance_groups": groups})})


def with_ingress(cfg: StackConfig, **update: Any) -> StackConfig:
    return cfg.model_copy(update={"ingress": cfg.ingress.model_copy(update={"enabled": True, **update})})


# --- instance type offerings (moto) -----------------------------------------------------------------------


def test_offerings_pass_for_dev(aws: None) -> None:
    cfg = config()
    results = pc.check_instance_offerings(clients_for(cfg), cfg)
    assert [(r.check, r.status) for r in results] == [("offering system", "PASS"), ("offering gpu-p5", "PASS")]
    assert results[1].detail == "p5.4xlarge is offered in usw2-az2"


def test_offerings_fail_names_the_azs_that_offer_the_type(aws: None) -> None:
    # moto's us-west-2 data offers p5e.48xlarge only in usw2-az3.
    cfg = with_group(config(), 1, instance_type="ml.p5e.48xlarge")
    results = pc.check_instance_offerings(clients_for(cfg), cfg)
    fail = by_status(results, "FAIL")
    assert len(fail) == 1 and fail[0].check == "offering gpu-p5"
    assert "p5e.48xlarge is not offered in usw2-az2" in fail[0].detail
    assert "offered in usw2-az3" in fail[0].detail
    assert "cluster.instanceGroups[1].availabilityZoneId" in fail[0].action


def test_offerings_access_denied_names_the_iam_action(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("ec2")) as stub:
        stub.add_client_error(
            "describe_instance_type_offerings", service_error_code="UnauthorizedOperation", http_status_code=403
        )
        results = pc.check_instance_offerings(clients, cfg)
    assert len(results) == 1 and results[0].status == "FAIL"
    assert "ec2:DescribeInstanceTypeOfferings" in results[0].detail
    assert "grant ec2:DescribeInstanceTypeOfferings" in results[0].action


# --- service quotas (Stubber) -----------------------------------------------------------------------------


def quota(name: str, value: float, code: str) -> dict[str, Any]:
    return {"ServiceCode": "sagemaker", "QuotaName": name, "QuotaCode": code, "Value": value}


def stub_quotas(stub: Stubber, defaults: list[dict[str, Any]], applied: list[dict[str, Any]]) -> None:
    stub.add_response("list_aws_default_service_quotas", {"Quotas": defaults}, {"ServiceCode": "sagemaker"})
    stub.add_response("list_service_quotas", {"Quotas": applied}, {"ServiceCode": "sagemaker"})


def test_quotas_pass_when_applied_values_cover_the_counts(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("service-quotas")) as stub:
        stub_quotas(
            stub,
            defaults=[
                quota("ml.m5.2xlarge for cluster usage", 2, "L-M5"),
                quota("ml.p5.4xlarge for cluster usage", 0, "L-P5"),
            ],
            applied=[quota("ml.p5.4xlarge for cluster usage", 1, "L-P5")],
        )
        results = pc.check_quotas(clients, cfg)
        stub.assert_no_pending_responses()
    assert [(r.check, r.status) for r in results] == [("quota ml.m5.2xlarge", "PASS"), ("quota ml.p5.4xlarge", "PASS")]
    assert results[1].detail.startswith("quota 1 covers 1 instance(s)")


def test_quotas_fail_sums_counts_per_type_and_gives_the_increase_command(aws: None) -> None:
    cfg = with_group(config(), 1, instance_type="ml.m5.2xlarge", instance_count=3)  # 2 + 3 m5.2xlarge
    clients = clients_for(cfg)
    with Stubber(clients("service-quotas")) as stub:
        stub_quotas(stub, defaults=[quota("ml.m5.2xlarge for cluster usage", 4, "L-M5")], applied=[])
        results = pc.check_quotas(clients, cfg)
    assert len(results) == 1 and results[0].status == "FAIL"
    assert results[0].detail == '"ml.m5.2xlarge for cluster usage" is 4, the stack needs 5'
    assert "--quota-code L-M5 --desired-value 5 --region us-west-2" in results[0].action


def test_quotas_fail_when_no_quota_exists_for_the_type(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("service-quotas")) as stub:
        stub_quotas(stub, defaults=[quota("ml.m5.2xlarge for cluster usage", 10, "L-M5")], applied=[])
        results = pc.check_quotas(clients, cfg)
    assert [(r.check, r.status) for r in results] == [("quota ml.m5.2xlarge", "PASS"), ("quota ml.p5.4xlarge", "FAIL")]
    assert 'no SageMaker quota named "ml.p5.4xlarge for cluster usage"' in results[1].detail


def test_quotas_access_denied(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("service-quotas")) as stub:
        stub.add_client_error("list_aws_default_service_quotas", "AccessDeniedException", http_status_code=400)
        results = pc.check_quotas(clients, cfg)
    assert results[0].status == "FAIL"
    assert "servicequotas:ListAWSDefaultServiceQuotas" in results[0].detail


# --- EKS add-on versions (Stubber) --------------------------------------------------------------------------

POD_IDENTITY = {
    pc.INFERENCE_ADDON: [
        {
            "serviceAccount": "hyperpod-inference-controller-manager",
            "recommendedManagedPolicies": ["arn:aws:iam::aws:policy/AmazonSageMakerHyperPodInferenceAccess"],
        }
    ],
    "aws-mountpoint-s3-csi-driver": [
        {
            "serviceAccount": "s3-csi-driver-sa",
            "recommendedManagedPolicies": ["arn:aws:iam::aws:policy/AmazonS3FullAccess"],
        }
    ],
}


def stub_addons(
    stub: Stubber, cfg: StackConfig, missing: frozenset[str] = frozenset(), unknown: frozenset[str] = frozenset()
) -> None:
    """DescribeAddonVersions for every pin, then the IAM lookup.

    ``missing`` add-ons lack the pinned version; ``unknown`` ones have no version for the Kubernetes version.
    """
    pins, _ = pc.addon_pins(cfg)
    k8s = cfg.cluster.kubernetes_version
    for addon, version in pins.items():
        if addon in unknown:
            stub.add_response("describe_addon_versions", {"addons": []}, {"addonName": addon, "kubernetesVersion": k8s})
            continue
        listed = ["v9.9.9-eksbuild.1"] + ([] if addon in missing else [version])
        stub.add_response(
            "describe_addon_versions",
            {
                "addons": [
                    {
                        "addonName": addon,
                        "addonVersions": [
                            {"addonVersion": v, "requiresIamPermissions": addon in POD_IDENTITY} for v in listed
                        ],
                    }
                ]
            },
            {"addonName": addon, "kubernetesVersion": k8s},
        )
        if addon not in missing:
            stub.add_response(
                "describe_addon_configuration",
                {"addonName": addon, "addonVersion": version, "podIdentityConfiguration": POD_IDENTITY.get(addon, [])},
                {"addonName": addon, "addonVersion": version},
            )


def test_addon_versions_pass_and_report_iam(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("eks")) as stub:
        stub_addons(stub, cfg)
        results = pc.check_addon_versions(clients, cfg)
        stub.assert_no_pending_responses()
    rows = {r.check: r for r in results}
    inference = rows[f"add-on {pc.INFERENCE_ADDON}"]
    assert inference.status == "PASS"
    assert inference.detail == (
        "v1.3.0-eksbuild.1 exists for Kubernetes 1.35; IAM: pod identity for hyperpod-inference-controller-manager "
        "(arn:aws:iam::aws:policy/AmazonSageMakerHyperPodInferenceAccess)"
    )
    assert rows["add-on cert-manager"].detail.endswith("IAM: none required")
    assert {
        f"add-on {name}"
        for name in (
            "aws-mountpoint-s3-csi-driver",
            "aws-fsx-csi-driver",
            "metrics-server",
            "vpc-cni",
            "kube-proxy",
            "coredns",
            "eks-pod-identity-agent",
        )
    } <= set(rows)
    assert rows["add-on kube-proxy"].detail.startswith(f"{cfg.cluster.addons.kube_proxy} exists for Kubernetes 1.35")
    assert [r.status for r in results] == ["PASS"] * len(results)


def test_addon_versions_fail_lists_available_versions(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("eks")) as stub:
        stub_addons(stub, cfg, missing=frozenset({pc.INFERENCE_ADDON}))
        results = pc.check_addon_versions(clients, cfg)
    fail = by_status(results, "FAIL")
    assert [r.check for r in fail] == [f"add-on {pc.INFERENCE_ADDON}"]
    assert (
        fail[0].detail
        == "v1.3.0-eksbuild.1 is not available for Kubernetes 1.35 in us-west-2; available: v9.9.9-eksbuild.1"
    )


def test_addon_unknown_for_kubernetes_version_fails(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("eks")) as stub:
        stub_addons(stub, cfg, unknown=frozenset({"cert-manager"}))
        results = pc.check_addon_versions(clients, cfg)
        stub.assert_no_pending_responses()
    fail = by_status(results, "FAIL")
    assert [(r.check, r.detail) for r in fail] == [
        ("add-on cert-manager", "cert-manager has no version for Kubernetes 1.35 in us-west-2")
    ]


def test_addon_versions_access_denied(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("eks")) as stub:
        stub.add_client_error("describe_addon_versions", "AccessDeniedException", http_status_code=403)
        results = pc.check_addon_versions(clients, cfg)
    assert results == [
        CheckResult(
            "add-on versions",
            "FAIL",
            "access denied: the caller lacks eks:DescribeAddonVersions, so this could not be checked",
            "grant eks:DescribeAddonVersions to the credentials running preflight (read-only), then rerun",
        )
    ]


# --- name clashes (moto) ------------------------------------------------------------------------------------


def test_planned_names_come_from_the_program_with_the_real_account() -> None:
    dev = pc.planned_names(config("dev"), "210987654321")
    assert dev["EKS cluster"] == ("hpi-dev-eks",)
    assert dev["HyperPod cluster"] == ("hpi-dev-hp",)
    assert "sagemaker-hpi-dev-lifecycle-210987654321" in dev["S3 bucket"]
    assert "hyperpod-tls-dev-210987654321" in dev["S3 bucket"]
    assert {"SageMakerHyperPodInference-dev", "hpi-dev-hyperpod-execution"} <= set(dev["IAM role"])
    assert dev["KMS alias"][0] == "alias/hpi-dev-eks-secrets"
    assert "load balancer" not in dev  # dev has no ingress
    prod = pc.planned_names(config("prod"), "210987654321")
    assert prod["load balancer"] == ("hpi-prod-alb",)
    assert prod["ElastiCache replication group"] == ("hpi-prod-kv",)


def test_stack_mapping_round_trips_to_the_same_config() -> None:
    for stack in ("dev", "prod"):
        cfg = config(stack)
        assert load_config(stack, pc._stack_mapping(cfg)) == cfg


def create_hyperpod_cluster(clients: Clients, name: str) -> None:
    clients("sagemaker").create_cluster(
        ClusterName=name,
        InstanceGroups=[
            {
                "InstanceCount": 1,
                "InstanceGroupName": "g",
                "InstanceType": "ml.m5.2xlarge",
                "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lifecycle/p", "OnCreate": "on_create.sh"},
                "ExecutionRole": f"arn:aws:iam::{ACCOUNT}:role/r",
                "ThreadsPerCore": 1,
            }
        ],
        VpcConfig={"SecurityGroupIds": ["sg-12345678"], "Subnets": ["subnet-12345678"]},
    )


def test_names_pass_on_a_clean_account(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    create_hyperpod_cluster(clients, "hpi-dev-hp-other")  # a name that merely contains ours is no clash
    results = pc.check_names(clients, cfg)
    expected = sum(len(v) for v in pc.planned_names(cfg, ACCOUNT).values())
    assert len(results) == expected > 8
    assert {r.status for r in results} == {"PASS"}
    assert CheckResult("name HyperPod cluster hpi-dev-hp", "PASS", "free in us-west-2") in results


def fail_rows(results: list[CheckResult]) -> dict[str, str]:
    return {r.check: r.detail for r in results if r.status == "FAIL"}


def test_names_fail_when_dev_resources_exist(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    clients("eks").create_cluster(
        name="hpi-dev-eks", roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks", resourcesVpcConfig={"subnetIds": ["subnet-1"]}
    )
    create_hyperpod_cluster(clients, "hpi-dev-hp")
    bucket = f"sagemaker-hpi-dev-lifecycle-{ACCOUNT}"
    clients("s3").create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    iam = clients("iam")
    iam.create_role(RoleName="hpi-dev-hyperpod-execution", AssumeRolePolicyDocument="{}")
    iam.create_policy(
        PolicyName="hpi-dev-s3-csi-driver",
        PolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"*"}]}',
    )
    key = clients("kms").create_key()["KeyMetadata"]["KeyId"]
    clients("kms").create_alias(AliasName="alias/hpi-dev-eks-secrets", TargetKeyId=key)
    fails = fail_rows(pc.check_names(clients, cfg))
    assert set(fails) == {
        "name EKS cluster hpi-dev-eks",
        "name HyperPod cluster hpi-dev-hp",
        f"name S3 bucket {bucket}",
        "name IAM role hpi-dev-hyperpod-execution",
        "name IAM policy hpi-dev-s3-csi-driver",
        "name KMS alias alias/hpi-dev-eks-secrets",
    }
    assert fails["name EKS cluster hpi-dev-eks"] == "EKS cluster hpi-dev-eks already exists: status ACTIVE"
    assert fails[f"name S3 bucket {bucket}"].endswith("already exists: it exists in this account")
    assert "IAM names are global" in fails["name IAM role hpi-dev-hyperpod-execution"]
    assert fails["name KMS alias alias/hpi-dev-eks-secrets"].endswith(f"it points at key {key}")


def test_names_fail_when_prod_alb_and_redis_exist(aws: None) -> None:
    cfg = config("prod")
    clients = clients_for(cfg)
    ec2 = clients("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"us-east-1{z}")["Subnet"]["SubnetId"]
        for i, z in enumerate("ab")
    ]
    clients("elbv2").create_load_balancer(Name="hpi-prod-alb", Subnets=subnets)
    clients("elasticache").create_replication_group(
        ReplicationGroupId="hpi-prod-kv", ReplicationGroupDescription="left over"
    )
    fails = fail_rows(pc.check_names(clients, cfg))
    assert set(fails) == {"name load balancer hpi-prod-alb", "name ElastiCache replication group hpi-prod-kv"}


def test_bucket_owned_by_someone_else_fails(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("s3")) as stub:
        for _ in pc.planned_names(cfg, ACCOUNT)["S3 bucket"]:
            stub.add_client_error("head_bucket", "403", http_status_code=403)
        fails = fail_rows(pc.check_names(clients, cfg))
    assert "bucket names are global" in fails[f"name S3 bucket sagemaker-hpi-dev-lifecycle-{ACCOUNT}"]


def test_names_access_denied_names_the_iam_action(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    with Stubber(clients("iam")) as stub:
        stub.add_client_error("get_role", "AccessDenied", http_status_code=403)
        results = pc.check_names(clients, cfg)
    assert results == [
        CheckResult(
            "names",
            "FAIL",
            "access denied: the caller lacks iam:GetRole, so this could not be checked",
            "grant iam:GetRole to the credentials running preflight (read-only), then rerun",
        )
    ]


# --- ACM certificate (moto) --------------------------------------------------------------------------------


def self_signed(*names: str) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem_key


def import_cert(clients: Clients, *names: str) -> str:
    cert, key = self_signed(*names)
    return str(clients("acm").import_certificate(Certificate=cert, PrivateKey=key)["CertificateArn"])


def test_certificate_pass_with_wildcard(aws: None) -> None:
    base = config()
    clients = clients_for(base)
    arn = import_cert(clients, "*.dev.example.com")
    cfg = with_ingress(base, certificate_arn=arn, domain_name="api.dev.example.com")
    result = pc.check_certificate(clients, cfg)[0]
    assert result.status == "PASS", result
    assert result.detail == "issued in us-west-2 for *.dev.example.com"


def test_certificate_fail_other_region(aws: None) -> None:
    base = config()
    arn = import_cert(Clients(boto3.Session(), "us-east-1"), "api.dev.example.com")
    cfg = with_ingress(base, certificate_arn=arn, domain_name="api.dev.example.com")
    result = pc.check_certificate(clients_for(cfg), cfg)[0]
    assert result.status == "FAIL"
    assert result.detail.endswith("is in us-east-1, the stack is in us-west-2")


def test_certificate_fail_wrong_domain_and_missing(aws: None) -> None:
    base = config()
    clients = clients_for(base)
    arn = import_cert(clients, "other.example.org")
    cfg = with_ingress(base, certificate_arn=arn, domain_name="api.dev.example.com")
    result = pc.check_certificate(clients, cfg)[0]
    assert result.status == "FAIL" and "not api.dev.example.com" in result.detail
    gone = arn.rsplit("/", 1)[0] + "/00000000-0000-0000-0000-000000000000"
    result = pc.check_certificate(clients, with_ingress(base, certificate_arn=gone))[0]
    assert result.status == "FAIL" and result.detail.startswith("no certificate")


def test_certificate_skip_when_unset(aws: None) -> None:
    cfg = config()
    assert pc.check_certificate(clients_for(cfg), cfg)[0].status == "SKIP"


# --- Route 53 hosted zone (moto) -----------------------------------------------------------------------------


def hosted_zone(clients: Clients, name: str, **kwargs: Any) -> str:
    zone = clients("route53").create_hosted_zone(Name=name, CallerReference=name, **kwargs)["HostedZone"]
    return str(zone["Id"]).rsplit("/", 1)[-1]


def test_hosted_zone_pass_and_fail(aws: None) -> None:
    base = config()
    clients = clients_for(base)
    zone_id = hosted_zone(clients, "example.com")
    ok = pc.check_hosted_zone(clients, with_ingress(base, hosted_zone_id=zone_id, domain_name="api.dev.example.com"))
    assert ok[0].status == "PASS" and ok[0].detail == "api.dev.example.com is in example.com"
    bad = pc.check_hosted_zone(clients, with_ingress(base, hosted_zone_id=zone_id, domain_name="api.example.org"))
    assert bad[0].status == "FAIL" and bad[0].detail.startswith("api.example.org is not inside the zone example.com")
    missing = pc.check_hosted_zone(clients, with_ingress(base, hosted_zone_id="ZNOSUCHZONE1", domain_name="a.b.com"))
    assert missing[0].status == "FAIL" and missing[0].detail == "no hosted zone ZNOSUCHZONE1 in this account"


def test_hosted_zone_fails_on_name_mismatch_and_route_host_outside(aws: None) -> None:
    base = config()
    clients = clients_for(base)
    zone_id = hosted_zone(clients, "example.com")
    ok = dict(hosted_zone_id=zone_id, domain_name="api.example.com")
    named = pc.check_hosted_zone(clients, with_ingress(base, hosted_zone_name="example.org", **ok))[0]
    assert named.status == "FAIL"
    assert named.detail == f"ingress.hostedZoneName is example.org but zone {zone_id} is example.com"
    routes = [
        RouteConfig.model_construct(endpoint="llama-8b", host="chat.example.com", path=None),
        RouteConfig.model_construct(endpoint="llama-8b", host="x.other.net", path=None),
    ]
    hosts = pc.check_hosted_zone(clients, with_ingress(base, routes=routes, **ok))[0]
    assert hosts.status == "FAIL" and hosts.detail == f"x.other.net is not inside the zone example.com ({zone_id})"


def test_hosted_zone_private_with_internet_facing_alb_warns(aws: None) -> None:
    base = config()
    clients = clients_for(base)
    vpc = clients("ec2").create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    zone_id = hosted_zone(
        clients,
        "internal.example.com",
        VPC={"VPCRegion": "us-west-2", "VPCId": vpc},
        HostedZoneConfig={"PrivateZone": True, "Comment": "private"},
    )
    cfg = with_ingress(base, hosted_zone_id=zone_id, domain_name="api.internal.example.com", scheme="internet-facing")
    assert pc.check_hosted_zone(clients, cfg)[0].status == "WARN"


# --- training plans (Stubber for SageMaker, moto for EC2) ------------------------------------------------------

PLAN_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:training-plan/p5-dev"


def plan_response(**summary: Any) -> dict[str, Any]:
    return {
        "TrainingPlanArn": PLAN_ARN,
        "TrainingPlanName": "p5-dev",
        "Status": "Active",
        "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [
            {
                "ReservedCapacityArn": f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:reserved-capacity/rc-1",
                "InstanceType": "ml.p5.4xlarge",
                "TotalInstanceCount": 1,
                "Status": "Active",
                **summary,
            }
        ],
    }


def run_plan(cfg: StackConfig, response: dict[str, Any]) -> list[CheckResult]:
    clients = clients_for(cfg)
    with Stubber(clients("sagemaker")) as stub:
        stub.add_response("describe_training_plan", response, {"TrainingPlanName": "p5-dev"})
        return pc.check_training_plans(clients, cfg)


def test_training_plan_pass_by_zone_id_and_by_zone_name(aws: None) -> None:
    cfg = with_group(config(), 1, training_plan_arn=PLAN_ARN)
    by_id = run_plan(cfg, plan_response(AvailabilityZoneId="usw2-az2"))
    assert by_id == [CheckResult("training plan gpu-p5", "PASS", "Active plan reserves ml.p5.4xlarge in usw2-az2")]
    # only the zone name given: mapped to its ID through EC2 DescribeAvailabilityZones (moto)
    zones = clients_for(cfg)("ec2").describe_availability_zones()["AvailabilityZones"]
    name = next(z["ZoneName"] for z in zones if z["ZoneId"] == "usw2-az2")
    assert run_plan(cfg, plan_response(AvailabilityZone=name))[0].status == "PASS"


def test_training_plan_fail_on_az_type_and_target(aws: None) -> None:
    cfg = with_group(config(), 1, training_plan_arn=PLAN_ARN)
    wrong_az = run_plan(cfg, plan_response(AvailabilityZoneId="usw2-az1"))[0]
    assert wrong_az.status == "FAIL"
    assert wrong_az.detail == "its ml.p5.4xlarge capacity is in usw2-az1, the group in usw2-az2"
    wrong_type = run_plan(cfg, plan_response(AvailabilityZoneId="usw2-az2", InstanceType="ml.p5.48xlarge"))[0]
    assert wrong_type.status == "FAIL" and wrong_type.detail == "it reserves ml.p5.48xlarge, not ml.p5.4xlarge"
    training_only = {**plan_response(AvailabilityZoneId="usw2-az2"), "TargetResources": ["training-job"]}
    assert run_plan(cfg, training_only)[0].detail == "it targets training-job, not hyperpod-cluster"
    too_few = with_group(cfg, 1, instance_count=4)
    assert run_plan(too_few, plan_response(AvailabilityZoneId="usw2-az2"))[0].detail == (
        "it reserves 1 instance(s) in usw2-az2, the group wants 4"
    )


def test_training_plan_skip_without_plans(aws: None) -> None:
    cfg = config()
    assert pc.check_training_plans(clients_for(cfg), cfg)[0].status == "SKIP"


# --- main(): exit codes and messages --------------------------------------------------------------------------


def run_main(argv: list[str], clients: Clients | None = None) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, clients=clients, console=Console(file=out, width=250, color_system=None))
    return code, out.getvalue()


def stubbed_clients(cfg: StackConfig, p5_quota: int) -> tuple[Clients, list[Stubber]]:
    """moto for EC2/SageMaker/STS, Stubbers for Service Quotas and EKS (add-ons, then the name check)."""
    clients = clients_for(cfg)
    quotas = Stubber(clients("service-quotas"))
    stub_quotas(
        quotas,
        defaults=[
            quota("ml.m5.2xlarge for cluster usage", 4, "L-M5"),
            quota("ml.p5.4xlarge for cluster usage", p5_quota, "L-P5"),
        ],
        applied=[],
    )
    eks = Stubber(clients("eks"))
    stub_addons(eks, cfg)
    eks.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    for stub in (quotas, eks):
        stub.activate()
    return clients, [quotas, eks]


def test_main_exit_0_when_everything_passes(aws: None) -> None:
    clients, stubs = stubbed_clients(config(), p5_quota=1)
    code, out = run_main(["--stack", "dev"], clients)
    for stub in stubs:
        stub.assert_no_pending_responses()
    assert code == 0, out
    assert "preflight for stack dev in us-west-2 as arn:aws:sts::123456789012:user/moto" in out
    assert "0 FAIL" in out and "offering gpu-p5" in out and "Traceback" not in out


def test_main_exit_1_on_a_failed_check(aws: None) -> None:
    clients, _ = stubbed_clients(config(), p5_quota=0)
    code, out = run_main(["--stack", "dev"], clients)
    assert code == 1
    assert '"ml.p5.4xlarge for cluster usage" is 0, the stack needs 1' in out
    assert "1 FAIL" in out


def test_main_exit_2_on_config_error(tmp_path: Path) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:cluster"]["instanceGroups"][1]["instanceCount"] = -1
    mapping["hyperpod-inference:clutser"] = {}
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": mapping}), encoding="utf-8")
    code, out = run_main(["--stack", "dev", "--file", str(path)])
    assert code == 2
    assert "hyperpod-inference:clutser: unknown key" in out
    assert "hyperpod-inference:cluster.instanceGroups[1].instanceCount" in out


def test_main_missing_stack_file_is_exit_2(tmp_path: Path) -> None:
    code, out = run_main(["--stack", "dev", "--file", str(tmp_path / "nope.yaml")])
    assert code == 2 and "no stack file" in out


def test_main_without_credentials_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    code, out = run_main(["--stack", "dev"])
    assert code == 1
    assert NO_CREDENTIALS.split(":")[0] in out
    assert "Traceback" not in out
