"""Preflight checks against moto, and botocore Stubbers where moto lacks the API.

Stubbed (moto 5.2.5 has no SageMaker quotas, no EKS add-on catalogue, no training plans):
Service Quotas ListAWSDefaultServiceQuotas/ListServiceQuotas, EKS DescribeAddonVersions/
DescribeAddonConfiguration, SageMaker DescribeTrainingPlan. The adoption checks stub EKS DescribeCluster/
DescribeAddon, SageMaker DescribeCluster/ListClusterNodes and IAM ListOpenIDConnectProviders (botocore's
Stubber validates every request and response against the service model). Everything else runs against moto.
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
from tools.preflight import checks as pc
from tools.preflight.checks import CheckResult, Clients
from tools.preflight.regional import NO_CREDENTIALS, load_config, main

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
    # the add-ons-not-installed check: the cluster the stack creates does not exist yet
    eks.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    # SageMaker (moto has no training plans): the name check's ListClusters, then the capacity levers' plans
    sagemaker = Stubber(clients("sagemaker"))
    sagemaker.add_response("list_clusters", {"ClusterSummaries": []}, {"NameContains": "hpi-dev-hp"})
    sagemaker.add_response("list_training_plans", {"TrainingPlanSummaries": []}, {})
    for stub in (quotas, eks, sagemaker):
        stub.activate()
    for ep in cfg.endpoints:  # the model buckets the endpoints read (the model-buckets check), in moto
        s3 = ep.spec_dict()["modelSourceConfig"]["s3Storage"]
        clients("s3").create_bucket(
            Bucket=s3["bucketName"], CreateBucketConfiguration={"LocationConstraint": s3["region"]}
        )
    return clients, [quotas, eks, sagemaker]


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
    code, out = run_main(["--stack", "dev", "--stack-file", str(path)])
    assert code == 2
    assert "hyperpod-inference:clutser: unknown key" in out
    assert "hyperpod-inference:cluster.instanceGroups[1].instanceCount" in out


def test_main_missing_stack_file_is_exit_2(tmp_path: Path) -> None:
    code, out = run_main(["--stack", "dev", "--stack-file", str(tmp_path / "nope.yaml")])
    assert code == 2 and "no such stack file" in out


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


# --- adoption: existing EKS / HyperPod clusters, prerequisites, installed add-ons (Stubber) -------------------

ATTACH_EKS = "ml-platform"
ATTACH_HP = "arn:aws:sagemaker:us-west-2:123456789012:cluster/a1b2c3d4e5f6"
ATTACH_EKS_ARN = "arn:aws:eks:us-west-2:123456789012:cluster/ml-platform"
ISSUER = "https://oidc.eks.us-west-2.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"


def eks_cluster(**update: Any) -> dict[str, Any]:
    cluster: dict[str, Any] = {
        "name": ATTACH_EKS,
        "arn": ATTACH_EKS_ARN,
        "status": "ACTIVE",
        "version": "1.33",
        "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"},
        "resourcesVpcConfig": {"vpcId": "vpc-0a1b2c3d4e5f60718", "clusterSecurityGroupId": "sg-0123456789abcdef0"},
        "identity": {"oidc": {"issuer": ISSUER}},
    }
    cluster.update(update)
    return {"cluster": cluster}


def attach(**cluster_update: Any) -> StackConfig:
    cfg = config("attach")
    if cluster_update:
        existing = cfg.cluster.existing
        assert existing is not None
        cfg = cfg.model_copy(
            update={"cluster": cfg.cluster.model_copy(update={"existing": existing.model_copy(update=cluster_update)})}
        )
    return cfg


def run_eks_check(cfg: StackConfig, response: dict[str, Any] | None, fn: Any = None) -> list[CheckResult]:
    clients = clients_for(cfg)
    with Stubber(clients("eks")) as stub:
        if response is None:
            stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
        else:
            stub.add_response("describe_cluster", response, {"name": ATTACH_EKS})
        out: list[CheckResult] = (fn or pc.check_existing_eks)(clients, cfg)
        stub.assert_no_pending_responses()
    return out


def test_existing_eks_passes_when_active_and_compatible(aws: None) -> None:
    [result] = run_eks_check(attach(), eks_cluster())
    assert result == CheckResult(
        "existing EKS cluster ml-platform",
        "PASS",
        "ACTIVE, authentication mode API_AND_CONFIG_MAP, Kubernetes 1.33, in vpc-0a1b2c3d4e5f60718",
    )


def test_existing_eks_fails_on_mode_status_version_and_vpc(aws: None) -> None:
    [mode] = run_eks_check(attach(), eks_cluster(accessConfig={"authenticationMode": "CONFIG_MAP"}))
    assert mode.status == "FAIL" and "uses authentication mode CONFIG_MAP; HyperPod supports API and" in mode.detail
    [other] = run_eks_check(
        attach(), eks_cluster(status="UPDATING", version="1.27", resourcesVpcConfig={"vpcId": "vpc-0fffffffffffffff0"})
    )
    assert other.status == "FAIL"
    assert "its status is UPDATING, not ACTIVE" in other.detail
    assert "runs Kubernetes 1.27" in other.detail
    assert "it runs in vpc-0fffffffffffffff0, network.existing.vpcId is vpc-0a1b2c3d4e5f60718" in other.detail
    [missing] = run_eks_check(attach(), None)
    assert missing.status == "FAIL" and missing.detail == "no EKS cluster ml-platform in us-west-2"


def test_existing_checks_skip_when_the_stack_creates_its_clusters(aws: None) -> None:
    cfg = config()
    clients = clients_for(cfg)
    for fn in (
        pc.check_existing_eks,
        pc.check_oidc_provider,
        pc.check_existing_hyperpod,
        pc.check_existing_prerequisites,
    ):
        assert [r.status for r in fn(clients, cfg)] == ["SKIP"]


def oidc_check(cfg: StackConfig, providers: list[str]) -> CheckResult:
    clients = clients_for(cfg)
    with Stubber(clients("eks")) as eks, Stubber(clients("iam")) as iam:
        eks.add_response("describe_cluster", eks_cluster(), {"name": ATTACH_EKS})
        iam.add_response(
            "list_open_id_connect_providers", {"OpenIDConnectProviderList": [{"Arn": a} for a in providers]}, {}
        )
        [result] = pc.check_oidc_provider(clients, cfg)
    return result


def test_oidc_provider_pass_and_fail(aws: None) -> None:
    arn = "arn:aws:iam::123456789012:oidc-provider/" + ISSUER.removeprefix("https://")
    other = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/FFFF"
    assert oidc_check(attach(), [other, arn]).status == "PASS"
    missing = oidc_check(attach(), [other])
    assert missing.status == "FAIL" and "no IAM OIDC provider for " + ISSUER in missing.detail
    assert missing.action.startswith("set cluster.existing.createOidcProvider: true")
    assert oidc_check(attach(create_oidc_provider=True), [other]).status == "PASS"
    twice = oidc_check(attach(create_oidc_provider=True), [arn])
    assert twice.status == "FAIL" and twice.action == "set cluster.existing.createOidcProvider: false"


def hp_group(
    name: str, itype: str, count: int, labels: dict[str, str] | None = None, taints: Any = None
) -> dict[str, Any]:
    return {
        "InstanceGroupName": name,
        "InstanceType": itype,
        "CurrentCount": count,
        "TargetCount": count,
        "ExecutionRole": "arn:aws:iam::123456789012:role/hp-exec",
        "ThreadsPerCore": 1,
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lifecycle/x", "OnCreate": "on_create.sh"},
        "KubernetesConfig": {"CurrentLabels": labels or {}, "CurrentTaints": taints or []},
    }


ATTACH_GROUPS_K8S = ({"workload": "inference"}, [{"Key": "nvidia.com/gpu", "Effect": "NoSchedule"}])
ATTACH_GROUPS = [hp_group("system", "ml.m5.2xlarge", 2), hp_group("gpu-p5", "ml.p5.48xlarge", 2, *ATTACH_GROUPS_K8S)]


def describe_hp(**update: Any) -> dict[str, Any]:
    response: dict[str, Any] = {
        "ClusterArn": ATTACH_HP,
        "ClusterName": "ml-hp",
        "ClusterStatus": "InService",
        "InstanceGroups": ATTACH_GROUPS,
        "Orchestrator": {"Eks": {"ClusterArn": ATTACH_EKS_ARN}},
    }
    response.update(update)
    return response


def nodes(**per_group: int) -> dict[str, Any]:
    launched = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
    return {
        "ClusterNodeSummaries": [
            {"InstanceGroupName": g, "InstanceId": f"i-{g}-{i}", "InstanceType": "ml.m5.2xlarge", "LaunchTime": launched,
             "InstanceStatus": {"Status": "Running"}}
            for g, n in per_group.items()
            for i in range(n)
        ]
    }  # fmt: skip


def hp_check(cfg: StackConfig, response: dict[str, Any], running: dict[str, Any]) -> list[CheckResult]:
    clients = clients_for(cfg)
    with Stubber(clients("sagemaker")) as stub:
        stub.add_response("describe_cluster", response, {"ClusterName": ATTACH_HP})
        stub.add_response("list_cluster_nodes", running, {"ClusterName": ATTACH_HP})
        out = pc.check_existing_hyperpod(clients, cfg)
        stub.assert_no_pending_responses()
    return out


def test_existing_hyperpod_passes_when_in_service_and_as_declared(aws: None) -> None:
    results = hp_check(attach(), describe_hp(), nodes(system=2, **{"gpu-p5": 2}))
    assert [(r.check, r.status) for r in results] == [
        ("existing HyperPod cluster ml-hp", "PASS"),
        ("declared group system", "PASS"),
        ("declared group gpu-p5", "PASS"),
    ]
    assert results[2].detail == "2 x ml.p5.48xlarge, as declared"


def test_existing_hyperpod_fails_on_status_orchestrator_and_groups(aws: None) -> None:
    other = "arn:aws:eks:us-west-2:123456789012:cluster/other"
    wrong = [hp_group("system", "ml.m5.4xlarge", 3), hp_group("spare", "ml.g5.8xlarge", 1)]
    results = {r.check: r for r in hp_check(
        attach(), describe_hp(ClusterStatus="Updating", Orchestrator={"Eks": {"ClusterArn": other}}, InstanceGroups=wrong),
        nodes(system=3),
    )}  # fmt: skip
    head = results["existing HyperPod cluster ml-hp"]
    assert head.status == "FAIL"
    assert "its status is Updating, not InService" in head.detail
    assert f"it is orchestrated by {other}, not {ATTACH_EKS_ARN}" in head.detail
    system = results["declared group system"]
    assert system.status == "FAIL"
    assert "its type is ml.m5.4xlarge, cluster.instanceGroups[0] declares ml.m5.2xlarge" in system.detail
    assert "it targets 3 instance(s), cluster.instanceGroups[0] declares 2" in system.detail
    gpu = results["declared group gpu-p5"]
    assert gpu.status == "FAIL" and gpu.detail.startswith("the cluster has no group gpu-p5")
    assert results["declared group spare"].status == "WARN"


def test_existing_hyperpod_orchestrated_by_no_eks_cluster(aws: None) -> None:
    """A cluster without an EKS orchestrator (Slurm) is named as orchestrated by none, not as 'None'."""
    response = describe_hp()
    del response["Orchestrator"]
    [head, system, gpu] = hp_check(attach(), response, nodes(system=2, **{"gpu-p5": 2}))
    assert (head.check, head.status, head.detail) == (
        "existing HyperPod cluster ml-hp",
        "FAIL",
        f"it is orchestrated by no EKS cluster, not {ATTACH_EKS_ARN}",
    )
    assert (system.status, gpu.status) == ("PASS", "PASS")


def test_scaling_group_is_judged_by_its_target_count(aws: None) -> None:
    """A group that is scaling (TargetCount differs from CurrentCount) is compared by where it is going."""
    growing = hp_group("system", "ml.m5.2xlarge", 2)
    growing["CurrentCount"] = 1  # scaling up to the declared 2: not a mismatch, one node still to come
    shrinking = hp_group("gpu-p5", "ml.p5.48xlarge", 2, *ATTACH_GROUPS_K8S)
    shrinking["TargetCount"] = 1  # scaling down from the declared 2: a mismatch, although 2 are there now
    results = {r.check: r for r in hp_check(attach(), describe_hp(InstanceGroups=[growing, shrinking]), nodes(system=1, **{"gpu-p5": 2}))}  # fmt: skip
    assert [(r.check, r.status, r.detail) for r in results.values()] == [
        ("existing HyperPod cluster ml-hp", "PASS", "InService, orchestrated by ml-platform"),
        ("declared group system", "WARN", "1 of 2 node(s) are Running"),
        ("declared group gpu-p5", "FAIL", "it targets 1 instance(s), cluster.instanceGroups[1] declares 2"),
    ]


def test_existing_hyperpod_labels_taints_and_running_nodes(aws: None) -> None:
    relabelled = [ATTACH_GROUPS[0], hp_group("gpu-p5", "ml.p5.48xlarge", 2, {"workload": "training"})]
    results = {
        r.check: r for r in hp_check(attach(), describe_hp(InstanceGroups=relabelled), nodes(system=1, **{"gpu-p5": 2}))
    }
    assert results["declared group system"].status == "WARN"
    assert results["declared group system"].detail == "1 of 2 node(s) are Running"
    gpu = results["declared group gpu-p5"]
    assert gpu.status == "FAIL" and "its labels are {'workload': 'training'}" in gpu.detail
    assert "its taints differ" in gpu.detail


def test_existing_hyperpod_not_found_and_tiered_storage(aws: None) -> None:
    cfg = attach()
    clients = clients_for(cfg)
    with Stubber(clients("sagemaker")) as stub:
        stub.add_client_error("describe_cluster", "ResourceNotFound", http_status_code=400)
        [missing] = pc.check_existing_hyperpod(clients, cfg)
    assert missing.status == "FAIL" and missing.detail == f"no HyperPod cluster {ATTACH_HP}"
    tiered = cfg.model_copy(update={"kv_cache": cfg.kv_cache.model_copy(update={"l2_backend": "tieredstorage"})})
    head = hp_check(tiered, describe_hp(), nodes(system=2, **{"gpu-p5": 2}))[0]
    assert head.status == "FAIL" and "TieredStorageConfig is not enabled" in head.detail
    enabled = describe_hp(TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20})
    assert hp_check(tiered, enabled, nodes(system=2, **{"gpu-p5": 2}))[0].status == "PASS"


def test_creation_checks_skip_on_an_adopted_hyperpod_cluster(aws: None) -> None:
    cfg = attach()
    clients = clients_for(cfg)
    for fn in (pc.check_instance_offerings, pc.check_quotas, pc.check_training_plans):
        [result] = fn(clients, cfg)
        assert result.status == "SKIP" and "is adopted" in result.detail


def addon(name: str, version: str, status: str = "ACTIVE", tags: dict[str, str] | None = None) -> dict[str, Any]:
    return {"addon": {"addonName": name, "clusterName": ATTACH_EKS, "addonVersion": version, "status": status,
                      "tags": tags or {}}}  # fmt: skip


def test_existing_prerequisites_pass_fail_and_unverifiable(aws: None) -> None:
    cfg = attach()  # cert-manager and metrics-server are existing
    clients = clients_for(cfg)
    with Stubber(clients("eks")) as stub:
        stub.add_response("describe_cluster", eks_cluster(), {"name": ATTACH_EKS})
        stub.add_response("describe_addon", addon("cert-manager", "v1.18.2-eksbuild.3"),
                          {"clusterName": ATTACH_EKS, "addonName": "cert-manager"})  # fmt: skip
        stub.add_client_error("describe_addon", "ResourceNotFoundException", http_status_code=404)
        stub.add_response("describe_addon", addon("eks-pod-identity-agent", "v1.3.7-eksbuild.2"),
                          {"clusterName": ATTACH_EKS, "addonName": "eks-pod-identity-agent"})  # fmt: skip
        results = pc.check_existing_prerequisites(clients, cfg)
        stub.assert_no_pending_responses()
    assert [(r.check, r.status) for r in results] == [
        ("existing cert-manager", "PASS"),
        ("existing metrics-server", "WARN"),
        ("existing eks-pod-identity-agent", "PASS"),  # the observability add-on's credentials on an adopted cluster
    ]
    assert "kubectl get deployment metrics-server -n kube-system" in results[1].action
    with Stubber(clients("eks")) as stub:
        stub.add_response("describe_cluster", eks_cluster(), {"name": ATTACH_EKS})
        stub.add_response("describe_addon", addon("cert-manager", "v1.17.1-eksbuild.1"),
                          {"clusterName": ATTACH_EKS, "addonName": "cert-manager"})  # fmt: skip
        stub.add_response("describe_addon", addon("metrics-server", "v0.7.2-eksbuild.4", status="DEGRADED"),
                          {"clusterName": ATTACH_EKS, "addonName": "metrics-server"})  # fmt: skip
        stub.add_client_error("describe_addon", "ResourceNotFoundException", http_status_code=404)
        old, degraded, agent = pc.check_existing_prerequisites(clients, cfg)
    assert old.status == "FAIL" and "below the minimum the inference add-on requires (v1.18.2-eksbuild.2)" in old.detail
    assert degraded.status == "FAIL" and degraded.detail == "the EKS add-on is DEGRADED, not ACTIVE"
    assert agent.status == "WARN" and "kubectl get daemonset eks-pod-identity-agent -n kube-system" in agent.action


EXPECTED_IMPORT = (
    "pulumi import --stack attach aws:eks/addon:Addon inference-operator-addon "
    "ml-platform:amazon-sagemaker-hyperpod-inference --parent 'inference-operator=urn:pulumi:attach::"
    "hyperpod-inference::hyperpod:index:HyperPodInference$hyperpod:operator:InferenceOperatorAddon::"
    "inference-operator' --protect=false"
)


def test_inference_addon_already_installed_says_how_to_import_it(aws: None) -> None:
    cfg = attach()
    clients = clients_for(cfg)
    with Stubber(clients("eks")) as stub:
        stub.add_response("describe_cluster", eks_cluster(), {"name": ATTACH_EKS})
        stub.add_response("describe_addon", addon("amazon-sagemaker-hyperpod-inference", "v1.5.0-eksbuild.1"),
                          {"clusterName": ATTACH_EKS, "addonName": "amazon-sagemaker-hyperpod-inference"})  # fmt: skip
        for name in ("amazon-sagemaker-hyperpod-observability", "aws-fsx-csi-driver", "aws-mountpoint-s3-csi-driver"):
            stub.add_client_error("describe_addon", "ResourceNotFoundException", http_status_code=404,
                                  expected_params={"clusterName": ATTACH_EKS, "addonName": name})  # fmt: skip
        results = pc.check_addons_not_installed(clients, cfg)
        assert len(results) == 4, results
        stub.assert_no_pending_responses()
    first = results[0]
    assert first.check == "add-on amazon-sagemaker-hyperpod-inference absent" and first.status == "FAIL", results
    assert first.action == f"adopt it into this stack: {EXPECTED_IMPORT}"
    assert [r.status for r in results[1:]] == ["PASS", "PASS", "PASS"]


def test_addons_absent_or_owned_by_this_stack_pass(aws: None) -> None:
    cfg = attach()
    clients = clients_for(cfg)
    with Stubber(clients("eks")) as stub:
        stub.add_response("describe_cluster", eks_cluster(), {"name": ATTACH_EKS})
        stub.add_response("describe_addon", addon("amazon-sagemaker-hyperpod-inference", "v1.5.0-eksbuild.1",
                                                  tags={"hyperpod-inference:stack": "attach"}),
                          {"clusterName": ATTACH_EKS, "addonName": "amazon-sagemaker-hyperpod-inference"})  # fmt: skip
        for absent in ("amazon-sagemaker-hyperpod-observability", "aws-fsx-csi-driver"):
            stub.add_client_error(
                "describe_addon",
                "ResourceNotFoundException",
                http_status_code=404,
                expected_params={"clusterName": ATTACH_EKS, "addonName": absent},
            )
        stub.add_response("describe_addon", addon("aws-mountpoint-s3-csi-driver", "v1.14.1-eksbuild.1"),
                          {"clusterName": ATTACH_EKS, "addonName": "aws-mountpoint-s3-csi-driver"})  # fmt: skip
        results = pc.check_addons_not_installed(clients, cfg)
    assert [r.status for r in results] == ["PASS", "PASS", "PASS", "FAIL"], results
    assert results[0].detail == "installed by this stack (v1.5.0-eksbuild.1)"
    assert results[3].action.endswith("; or list it in operator.existingPrerequisites")
    with Stubber(clients("eks")) as stub:
        stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
        [fresh] = pc.check_addons_not_installed(clients, config())
    assert fresh.status == "PASS" and fresh.detail == "the EKS cluster hpi-dev-eks does not exist yet"


def test_addon_versions_use_the_adopted_clusters_kubernetes_version(aws: None) -> None:
    cfg = attach()
    clients = clients_for(cfg)
    pins, note = pc.addon_pins(cfg)
    assert note == "" and set(pins) == {
        "amazon-sagemaker-hyperpod-inference", "aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver"
    }, "no core add-on of an adopted cluster and no existing prerequisite is this stack's to pin"  # fmt: skip
    with Stubber(clients("eks")) as stub:
        stub.add_response("describe_cluster", eks_cluster(version="1.32"), {"name": ATTACH_EKS})
        for name in pins:
            stub.add_response(
                "describe_addon_versions", {"addons": []}, {"addonName": name, "kubernetesVersion": "1.32"}
            )
        results = pc.check_addon_versions(clients, cfg)
        stub.assert_no_pending_responses()
    assert all(r.status == "FAIL" and "Kubernetes 1.32" in r.detail for r in results)


# --- the way back from the cluster's subnets to the runner (Stubber) ---------------------------------------

EXISTING_VPC = {
    "existing": {
        "vpcId": "vpc-0a1b2c3d4e5f60718",
        "cidr": "10.64.0.0/16",
        "privateSubnets": {"use1-az2": "subnet-0a1b2c3d4e5f60712", "use1-az4": "subnet-0a1b2c3d4e5f60714"},
        "publicSubnets": {"use1-az2": "subnet-0a1b2c3d4e5f60722"},
    }
}


def _prod_in_existing_vpc() -> StackConfig:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:network"] = EXISTING_VPC
    mapping["hyperpod-inference:cluster"]["deployerAccess"].pop("routes")
    for group in mapping["hyperpod-inference:cluster"]["instanceGroups"]:
        group["availabilityZoneId"] = "use1-az2"
    # the second system group stays in the other AZ (prod's controllers-span-zones)
    mapping["hyperpod-inference:cluster"]["instanceGroups"][-1]["availabilityZoneId"] = "use1-az4"
    return load_config("prod", mapping)


def _table(table_id: str, *routes: dict[str, Any]) -> dict[str, Any]:
    local = {"DestinationCidrBlock": "10.64.0.0/16", "GatewayId": "local", "State": "active"}
    return {"RouteTables": [{"RouteTableId": table_id, "VpcId": "vpc-0a1b2c3d4e5f60718", "Routes": [local, *routes]}]}


NAT_DEFAULT = {"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-0a1b2c3d4e5f60718", "State": "active"}


def _by_subnet(subnet: str) -> dict[str, Any]:
    return {"Filters": [{"Name": "association.subnet-id", "Values": [subnet]}]}


def test_existing_vpc_route_tables_must_send_the_runner_back(aws: None) -> None:
    cfg = _prod_in_existing_vpc()
    clients = clients_for(cfg)
    tgw = {"DestinationCidrBlock": "10.0.0.0/16", "TransitGatewayId": "tgw-0a1b2c3d4e5f60718", "State": "active"}
    with Stubber(clients("ec2")) as stub:
        stub.add_response(
            "describe_route_tables",
            _table("rtb-0a1b2c3d4e5f60712", NAT_DEFAULT, tgw),
            _by_subnet("subnet-0a1b2c3d4e5f60712"),
        )
        # the second subnet has no explicit association: its VPC's main route table applies
        stub.add_response("describe_route_tables", {"RouteTables": []}, _by_subnet("subnet-0a1b2c3d4e5f60714"))
        stub.add_response(
            "describe_route_tables",
            _table("rtb-0a1b2c3d4e5f6main", NAT_DEFAULT),
            {
                "Filters": [
                    {"Name": "vpc-id", "Values": ["vpc-0a1b2c3d4e5f60718"]},
                    {"Name": "association.main", "Values": ["true"]},
                ]
            },
        )
        results = pc.check_deployer_routes(clients, cfg)
        stub.assert_no_pending_responses()
    assert [(r.check, r.status, r.detail) for r in results] == [
        (
            "route back from subnet-0a1b2c3d4e5f60712 (use1-az2)",
            "PASS",
            "rtb-0a1b2c3d4e5f60712 sends 10.0.8.0/24 to 10.0.0.0/16 via tgw-0a1b2c3d4e5f60718",
        ),
        (
            "route back from subnet-0a1b2c3d4e5f60714 (use1-az4)",
            "FAIL",
            "rtb-0a1b2c3d4e5f6main sends 10.0.8.0/24 to 0.0.0.0/0 via NatGatewayId nat-0a1b2c3d4e5f60718: the control "
            "plane's replies to the runner cannot come back (a NAT or internet gateway cannot carry them to a private "
            "network)",
        ),
    ]
    assert results[1].action.startswith("add a route for 10.0.8.0/24 to your transit gateway")


def test_new_vpc_routes_need_an_available_transit_gateway(aws: None) -> None:
    cfg = config("prod")
    clients = clients_for(cfg)
    with Stubber(clients("ec2")) as stub:
        stub.add_response(
            "describe_transit_gateways",
            {"TransitGateways": [{"TransitGatewayId": "tgw-0a1b2c3d4e5f60718", "State": "available"}]},
            {"TransitGatewayIds": ["tgw-0a1b2c3d4e5f60718"]},
        )
        stub.add_response(
            "describe_transit_gateways",
            {"TransitGateways": [{"TransitGatewayId": "tgw-0a1b2c3d4e5f60718", "State": "pending"}]},
            {"TransitGatewayIds": ["tgw-0a1b2c3d4e5f60718"]},
        )
        ok = pc.check_deployer_routes(clients, cfg)
        pending = pc.check_deployer_routes(clients, cfg)
        stub.assert_no_pending_responses()
    assert [(r.status, r.detail) for r in ok] == [
        ("PASS", "transit gateway tgw-0a1b2c3d4e5f60718 is available"),
        (
            "WARN",
            "the far side (the transit gateway's route tables, the peer VPC's routes back to 10.64.0.0/16) is not this "
            "stack's and was not checked",
        ),
    ]
    assert (pending[0].status, pending[0].detail) == ("FAIL", "transit gateway tgw-0a1b2c3d4e5f60718 is pending")


def test_runner_cidr_no_route_covers_fails_without_an_aws_call(aws: None) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:cluster"]["deployerAccess"].pop("routes")
    cfg = load_config("prod", mapping)
    clients = clients_for(cfg)
    with Stubber(clients("ec2")):  # no response queued: a call would fail the test
        results = pc.check_deployer_routes(clients, cfg)
    assert [(r.status, r.detail) for r in results] == [
        (
            "FAIL",
            "the runner's 10.0.8.0/24 is outside the new VPC 10.64.0.0/16 and no cluster.deployerAccess.routes entry "
            "covers it: the control plane's replies would go to the NAT gateway",
        )
    ]


def test_route_table_read_denied_names_the_iam_action(aws: None) -> None:
    cfg = _prod_in_existing_vpc()
    clients = clients_for(cfg)
    with Stubber(clients("ec2")) as stub:
        stub.add_client_error("describe_route_tables", service_error_code="UnauthorizedOperation", http_status_code=403)
        results = pc.check_deployer_routes(clients, cfg)
    assert [(r.status, r.action) for r in results] == [
        ("FAIL", "grant ec2:DescribeRouteTables to the credentials running preflight (read-only), then rerun")
    ]


# --- capacity levers (issue 47 item 10; Stubber: moto has no training plans) ------------------------------------


def _summary(name: str, status: str = "Active", instance_type: str = "ml.p5.4xlarge") -> dict[str, Any]:
    return {
        "TrainingPlanArn": f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:training-plan/{name}",
        "TrainingPlanName": name,
        "Status": status,
        "AvailableInstanceCount": 2,
        "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [
            {
                "ReservedCapacityArn": f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:reserved-capacity/rc-{name}",
                "InstanceType": instance_type,
                "TotalInstanceCount": 2,
                "Status": status,
            }
        ],
    }


def run_levers(cfg: StackConfig, *pages: list[dict[str, Any]]) -> list[CheckResult]:
    clients = clients_for(cfg)
    with Stubber(clients("sagemaker")) as stub:
        for n, page in enumerate(pages):
            response: dict[str, Any] = {"TrainingPlanSummaries": page}
            if n + 1 < len(pages):
                response["NextToken"] = f"t{n + 1}"
            stub.add_response("list_training_plans", response, {"NextToken": f"t{n}"} if n else {})
        out = pc.check_capacity_levers(clients, cfg)
        stub.assert_no_pending_responses()
    return out


def test_capacity_levers_name_a_plan_of_the_account_across_pages(aws: None) -> None:
    cfg = config()  # dev: gpu-p5, 1 x ml.p5.4xlarge on demand
    (row,) = run_levers(cfg, [_summary("other", instance_type="ml.p5.48xlarge")], [_summary("p5-dev")])
    assert (row.check, row.status) == ("capacity gpu-p5", "WARN")
    assert "training plan(s) reserving it: p5-dev (Active, 2 available)" in row.detail
    assert row.action.startswith("set cluster.instanceGroups[1].trainingPlanArn")


def test_capacity_levers_without_a_plan_suggest_the_levers_or_pass_with_them(aws: None) -> None:
    cfg = config()
    expired = [_summary("old", status="Expired"), {**_summary("jobs"), "TargetResources": ["training-job"]}]
    (bare,) = run_levers(cfg, expired)
    assert bare.status == "WARN" and "no Active or Scheduled training plan" in bare.detail
    assert "minInstanceCount (partial provisioning), cluster.nodeProvisioningMode: Continuous" in bare.action
    (partial,) = run_levers(with_group(cfg, 1, min_instance_count=0), [])
    assert partial.status == "PASS" and partial.detail.endswith("the stack uses minInstanceCount 0")


def test_capacity_levers_skip_when_every_group_has_a_plan(aws: None) -> None:
    cfg = with_group(config(), 1, training_plan_arn=PLAN_ARN)
    assert pc.check_capacity_levers(clients_for(cfg), cfg)[0].status == "SKIP"
