"""Cluster-layer config errors: each bad input exits the preview with 2 and names its stack key path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.config.cluster import is_accelerated
from components.config.regions import az_id_in_region, az_id_prefix, hyperpod_instance_types
from tests.conftest import stack_mapping
from tools.cli.preview import preview

CLUSTER = "hyperpod-inference:cluster"
NETWORK = "hyperpod-inference:network"


def _group(m: dict[str, Any], i: int) -> dict[str, Any]:
    return m[CLUSTER]["instanceGroups"][i]


CASES: list[tuple[str, str, Callable[[dict[str, Any]], None], str]] = [
    (
        "instance-type-not-in-region",
        "dev",
        lambda m: _group(m, 1).__setitem__("instanceType", "ml.m6i.4xlarge"),
        "hyperpod-inference:cluster.instanceGroups[1].instanceType: ml.m6i.4xlarge is not a HyperPod instance "
        "type in us-west-2",
    ),
    (
        "instance-type-not-offered-anywhere",
        "prod",
        lambda m: _group(m, 1).__setitem__("instanceType", "ml.p5e.48xlarge"),
        "hyperpod-inference:cluster.instanceGroups[1].instanceType: ml.p5e.48xlarge is not a HyperPod instance "
        "type in us-east-1",
    ),
    (
        "negative-count",
        "dev",
        lambda m: _group(m, 1).__setitem__("instanceCount", -1),
        "hyperpod-inference:cluster.instanceGroups[1].instanceCount: Input should be greater than or equal to 0",
    ),
    (
        "duplicate-group-names",
        "prod",
        lambda m: _group(m, 2).__setitem__("name", "p5-inference"),
        "hyperpod-inference:cluster.instanceGroups[2].name: instance group name 'p5-inference' is already used by "
        "cluster.instanceGroups[1]",
    ),
    (
        "group-az-outside-region",
        "dev",
        lambda m: _group(m, 0).__setitem__("availabilityZoneId", "use1-az1"),
        "hyperpod-inference:cluster.instanceGroups[0].availabilityZoneId: AZ ID use1-az1 is not in us-west-2; "
        "AZ IDs there look like usw2-az1",
    ),
    (
        "group-az-without-subnet",
        "dev",
        lambda m: _group(m, 1).__setitem__("availabilityZoneId", "usw2-az3"),
        "hyperpod-inference:cluster.instanceGroups[1].availabilityZoneId: AZ ID usw2-az3 has no private subnet "
        "in this stack; allowed: usw2-az1, usw2-az2",
    ),
    (
        "network-az-outside-region",
        "prod",
        lambda m: m[NETWORK].__setitem__("availabilityZoneIds", ["use1-az2", "use1-az4", "usw2-az1"]),
        "hyperpod-inference:network.availabilityZoneIds[2]: AZ ID usw2-az1 is not in us-east-1",
    ),
    (
        "open-endpoint-in-prod",
        "prod",
        lambda m: m[CLUSTER].__setitem__("endpointPublicAccessCidrs", ["0.0.0.0/0"]),
        "hyperpod-inference:cluster.endpointPublicAccessCidrs[0]: 0.0.0.0/0 opens the EKS API endpoint to the internet",
    ),
    (
        "any-public-endpoint-in-prod",
        "prod",
        lambda m: m[CLUSTER].__setitem__("endpointPublicAccessCidrs", ["198.51.100.0/24"]),
        "hyperpod-inference:cluster.endpointPublicAccessCidrs[0]: prod keeps the EKS API endpoint private",
    ),
    (
        "open-endpoint-in-dev",
        "dev",
        lambda m: m[CLUSTER].__setitem__("endpointPublicAccessCidrs", ["203.0.113.0/24", "0.0.0.0/0"]),
        "hyperpod-inference:cluster.endpointPublicAccessCidrs[1]: 0.0.0.0/0 opens the EKS API endpoint",
    ),
    (
        "kube-proxy-minor-mismatch",
        "dev",
        lambda m: m[CLUSTER].__setitem__("addons", {"kubeProxy": "v1.32.6-eksbuild.2"}),
        "hyperpod-inference:cluster.addons.kubeProxy: kube-proxy v1.32.6-eksbuild.2 does not match "
        "kubernetesVersion 1.35",
    ),
    # --- how `pulumi up` reaches the API (cluster.deployerAccess) ---
    (
        "no-deployer-path-in-prod",
        "prod",
        lambda m: m[CLUSTER].pop("deployerAccess"),
        "hyperpod-inference:cluster.deployerAccess: no way for `pulumi up` to reach the EKS API: Pulumi itself "
        "creates Kubernetes objects (pulumi-eks's aws-auth ConfigMap, the HyperPod dependencies chart, the "
        "endpoints), so declare the runner: securityGroupIds or cidrs of a runner inside the VPC (docs/cluster.md",
    ),
    (
        "empty-deployer-access-in-dev",
        "dev",
        lambda m: m[CLUSTER].__setitem__("deployerAccess", {}),
        "hyperpod-inference:cluster.deployerAccess: no way for `pulumi up` to reach the EKS API",
    ),
    (
        "operator-cidrs-are-not-a-deployer-path",
        "dev",
        lambda m: m[CLUSTER].pop("deployerAccess"),
        "securityGroupIds or cidrs of a runner inside the VPC, or publicCidrs of the deploy principal",
    ),
    (
        "public-deployer-in-prod",
        "prod",
        lambda m: m[CLUSTER]["deployerAccess"].__setitem__("publicCidrs", ["198.51.100.7/32"]),
        "hyperpod-inference:cluster.deployerAccess.publicCidrs[0]: prod keeps the EKS API endpoint private",
    ),
    (
        "deployer-open-to-the-internet",
        "dev",
        lambda m: m[CLUSTER]["deployerAccess"].__setitem__("publicCidrs", ["198.51.100.7/32", "0.0.0.0/0"]),
        "hyperpod-inference:cluster.deployerAccess.publicCidrs[1]: 0.0.0.0/0 opens the EKS API endpoint to the "
        "internet",
    ),
    (
        "private-range-as-public-cidr",
        "dev",
        lambda m: m[CLUSTER]["deployerAccess"].__setitem__("publicCidrs", ["10.0.8.0/24"]),
        "hyperpod-inference:cluster.deployerAccess.publicCidrs[0]: 10.0.8.0/24 is not a public range",
    ),
    # --- routes back to the runner's network (cluster.deployerAccess.routes) ---
    (
        "route-with-two-targets",
        "prod",
        lambda m: m[CLUSTER]["deployerAccess"]["routes"][0].__setitem__("peerVpcId", "vpc-0fedcba9876543210"),
        "hyperpod-inference:cluster.deployerAccess.routes[0]: set exactly one of transitGatewayId or peerVpcId (got "
        "transitGatewayId, peerVpcId); a NAT or internet gateway cannot carry the control plane's replies to a "
        "private network",
    ),
    (
        "route-without-target",
        "prod",
        lambda m: m[CLUSTER]["deployerAccess"].__setitem__("routes", [{"cidr": "10.0.8.0/24"}]),
        "hyperpod-inference:cluster.deployerAccess.routes[0]: set exactly one of transitGatewayId or peerVpcId "
        "(got neither)",
    ),
    (
        "route-into-the-vpc-itself",
        "prod",
        lambda m: m[CLUSTER]["deployerAccess"]["routes"][0].__setitem__("cidr", "10.64.8.0/24"),
        "hyperpod-inference:cluster.deployerAccess.routes[0].cidr: 10.64.8.0/24 overlaps the VPC CIDR 10.64.0.0/16; "
        "the VPC's own range needs no route (the local route covers it)",
    ),
    (
        "route-to-a-public-range",
        "prod",
        lambda m: m[CLUSTER]["deployerAccess"]["routes"][0].__setitem__("cidr", "203.0.113.0/24"),
        "hyperpod-inference:cluster.deployerAccess.routes[0].cidr: 203.0.113.0/24 is not a private range",
    ),
    (
        "route-with-a-malformed-transit-gateway",
        "prod",
        lambda m: m[CLUSTER]["deployerAccess"]["routes"][0].__setitem__("transitGatewayId", "tgw-XYZ"),
        "hyperpod-inference:cluster.deployerAccess.routes[0].transitGatewayId",
    ),
    (
        "routes-in-an-existing-vpc",
        "prod",
        lambda m: m.__setitem__(
            "hyperpod-inference:network",
            {
                "existing": {
                    "vpcId": "vpc-0a1b2c3d4e5f60718",
                    "cidr": "10.64.0.0/16",
                    "privateSubnets": {
                        "use1-az2": "subnet-0a1b2c3d4e5f60712",
                        "use1-az4": "subnet-0a1b2c3d4e5f60714",
                        "use1-az6": "subnet-0a1b2c3d4e5f60716",
                    },
                    "publicSubnets": {"use1-az2": "subnet-0a1b2c3d4e5f60722", "use1-az4": "subnet-0a1b2c3d4e5f60724"},
                }
            },
        ),
        "hyperpod-inference:cluster.deployerAccess.routes[0]: routes are created in the route tables of a VPC this "
        "stack creates; with network.existing the VPC's route tables are its owner's: remove routes",
    ),
    (
        "public-range-as-runner-cidr",
        "prod",
        lambda m: m[CLUSTER]["deployerAccess"].__setitem__("cidrs", ["203.0.113.0/24"]),
        "hyperpod-inference:cluster.deployerAccess.cidrs[0]: 203.0.113.0/24 is not a private range",
    ),
    (
        "runner-cidr-in-service-range",
        "prod",
        lambda m: m[CLUSTER]["deployerAccess"].__setitem__("cidrs", ["172.20.4.0/24"]),
        "hyperpod-inference:cluster.deployerAccess.cidrs[0]: 172.20.4.0/24 overlaps the Kubernetes service CIDR",
    ),
    (
        "malformed-runner-sg",
        "prod",
        lambda m: m[CLUSTER]["deployerAccess"].__setitem__("securityGroupIds", ["runner-sg"]),
        "hyperpod-inference:cluster.deployerAccess.securityGroupIds[0]: String should match pattern",
    ),
    # --- the chart pin and the Kubernetes version ---
    (
        "chart-pin-not-on-main",
        "dev",
        lambda m: m[CLUSTER].__setitem__(
            "hyperpodDependencies", {"gitCommit": "1504d53b28a6de4449c0fcdf9d56b8c87f28283f"}
        ),
        "hyperpod-inference:cluster.hyperpodDependencies.gitCommit: 1504d53b28a6de4449c0fcdf9d56b8c87f28283f is "
        "not a reviewed aws/sagemaker-hyperpod-cli commit on main or a release tag",
    ),
    (
        "kubernetes-not-supported-by-hyperpod",
        "dev",
        lambda m: (
            m[CLUSTER].__setitem__("kubernetesVersion", "1.29"),
            m[CLUSTER].__setitem__("addons", {"kubeProxy": "v1.29.0-eksbuild.1"}),
        ),
        "hyperpod-inference:cluster.kubernetesVersion: SageMaker HyperPod does not support Kubernetes 1.29 "
        "(sagemaker-hyperpod-eks-prerequisites); accepted on ",
    ),
    (
        "kubernetes-past-extended-support",
        "prod",
        lambda m: (
            m[CLUSTER].__setitem__("kubernetesVersion", "1.31"),
            m[CLUSTER].__setitem__("addons", {"kubeProxy": "v1.31.3-eksbuild.2"}),
        ),
        "hyperpod-inference:cluster.kubernetesVersion: Kubernetes 1.31 left EKS extended support on 2026-11-26",
    ),
    (
        "misspelt-addon-key",
        "dev",
        lambda m: m[CLUSTER].__setitem__("addons", {"vpcCNI": "v1.20.0-eksbuild.1"}),
        "hyperpod-inference:cluster.addons.vpcCNI: unknown key",
    ),
    (
        "region-without-hyperpod",
        "dev",
        lambda m: m.__setitem__("aws:region", "af-south-1"),
        "aws:region: SageMaker HyperPod is not offered in af-south-1",
    ),
    (
        "training-plan-other-region",
        "dev",
        lambda m: _group(m, 1).__setitem__(
            "trainingPlanArn", "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-plan"
        ),
        "hyperpod-inference:cluster.instanceGroups[1].trainingPlanArn: the training plan must be in the stack's "
        "region us-west-2",
    ),
    (
        "overlapping-service-cidr",
        "prod",
        lambda m: m[CLUSTER].__setitem__("serviceIpv4Cidr", "10.64.128.0/20"),
        "hyperpod-inference:cluster.serviceIpv4Cidr: 10.64.128.0/20 overlaps the VPC CIDR 10.64.0.0/16",
    ),
]


@pytest.mark.parametrize(("stack", "mutate", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_cluster_input_is_a_config_error(stack: str, mutate, expected: str, capsys) -> None:
    mapping = stack_mapping(stack)
    mutate(mapping)
    code = preview(stack, mapping=mapping)
    out = capsys.readouterr().out
    assert code == 2, out
    assert expected in " ".join(out.split()), out
    assert "Traceback" not in out


def test_config_error_registers_nothing(run) -> None:
    mapping = stack_mapping("dev")
    mapping[CLUSTER]["instanceGroups"][1]["name"] = "system"
    result = run("dev", mapping)
    assert result.config_error is not None
    assert [i.path for i in result.config_error.issues] == ["cluster.instanceGroups[1].name"]
    assert result.registrations == []


def test_region_tables() -> None:
    assert az_id_prefix("us-west-2") == "usw2"
    assert az_id_prefix("ap-southeast-2") == "apse2"
    assert az_id_in_region("use1-az6", "us-east-1")
    assert not az_id_in_region("use1-az6", "us-east-2")
    assert not az_id_in_region("usw2-az1", "mars-north-1")
    # cfn-lint's per-region HyperPod data: p5 everywhere HyperPod runs in the US, nothing where it does not run.
    assert "ml.p5.48xlarge" in hyperpod_instance_types("us-east-1")
    assert "ml.m6i.4xlarge" in hyperpod_instance_types("us-east-1")
    assert "ml.m6i.4xlarge" not in hyperpod_instance_types("us-west-2")
    assert hyperpod_instance_types("af-south-1") == frozenset()


@pytest.mark.parametrize(
    ("instance_type", "accelerated"),
    [
        ("ml.p5.48xlarge", True),
        ("ml.p6-b200.48xlarge", True),
        ("ml.g6e.12xlarge", True),
        ("ml.trn2.48xlarge", True),
        ("ml.m5.2xlarge", False),
        ("ml.c5.large", False),
    ],
)
def test_accelerated_families(instance_type: str, accelerated: bool) -> None:
    assert is_accelerated(instance_type) is accelerated


def test_extended_support_is_allowed_with_an_advisory(run, monkeypatch: pytest.MonkeyPatch) -> None:
    """1.33 (EKS extended support since 2026-07-29) deploys; the policy pack reports it as advisory only."""
    import datetime as dt

    from policies import cluster_versions
    from policies.engine import evaluate
    from policies.pack import POLICIES

    monkeypatch.setattr(cluster_versions, "today", lambda: dt.date(2026, 12, 1))
    mapping = stack_mapping("prod")
    mapping[CLUSTER]["kubernetesVersion"] = "1.33"
    mapping[CLUSTER]["addons"] = {"kubeProxy": "v1.33.0-eksbuild.2"}
    result = run("prod", mapping)
    assert result.config_error is None and result.registrations
    found = [
        r for r in evaluate(POLICIES, result.registrations, "prod") if r.policy == "eks-kubernetes-standard-support"
    ]
    assert [(r.level, r.resource_type) for r in found] == [("advisory", "eks:index:Cluster")]
    assert found[0].message.endswith(
        "Kubernetes 1.33 left EKS standard support on 2026-07-29 and is billed as extended support until 2027-07-29: "
        "$0.60 per cluster hour (about $438 a month per EKS cluster); on 2027-07-29 EKS upgrades the cluster to the "
        "oldest version still in extended support; Security Hub FSBP EKS.2 fails meanwhile. Versions HyperPod "
        "supports that are in standard support: 1.34"
    )
    # a 1.34 stack gets no such result on 2026-12-01, and gets it from 2026-12-02 (the reference stacks run 1.35)
    on_134 = stack_mapping("prod")
    on_134[CLUSTER]["kubernetesVersion"] = "1.34"
    on_134[CLUSTER]["addons"] = {"kubeProxy": "v1.34.0-eksbuild.2"}
    del on_134[CLUSTER]["acceptUnlistedKubernetesVersion"]
    reference = run("prod", on_134)
    assert not [r for r in evaluate(POLICIES, reference.registrations, "prod") if r.policy == found[0].policy]
    monkeypatch.setattr(cluster_versions, "today", lambda: dt.date(2026, 12, 2))
    later = [r for r in evaluate(POLICIES, reference.registrations, "prod") if r.policy == found[0].policy]
    assert [r.level for r in later] == ["advisory"]
    assert later[0].message.endswith(
        "Kubernetes 1.34 left EKS standard support on 2026-12-02 and is billed as extended support until 2027-12-02: "
        "$0.60 per cluster hour (about $438 a month per EKS cluster); on 2027-12-02 EKS upgrades the cluster to the "
        "oldest version still in extended support; Security Hub FSBP EKS.2 fails meanwhile. Versions HyperPod "
        "supports that are in standard support: none (1.35 is in standard support but listed by no retrievable "
        "HyperPod page: only with cluster.acceptUnlistedKubernetesVersion: true)"
    )


@pytest.mark.parametrize(
    ("version", "on", "status"),
    [
        ("1.35", "2026-12-01", "standard"),
        ("1.35", "2027-03-27", "extended"),  # billed from the first day of the end date (UTC)
        ("1.34", "2026-12-01", "standard"),
        ("1.34", "2026-12-02", "extended"),
        ("1.33", "2026-07-28", "standard"),
        ("1.33", "2026-12-01", "extended"),
        ("1.31", "2026-12-01", "ended"),
        ("1.36", "2026-12-01", "unknown"),
    ],
)
def test_eks_support_calendar(version: str, on: str, status: str) -> None:
    import datetime as dt

    from policies.cluster_versions import support_status

    assert support_status(version, dt.date.fromisoformat(on)) == status


def test_default_kubernetes_version_is_the_newest_a_retrievable_page_lists() -> None:
    """Issue 23 item 4: the default is the newest version a retrievable AWS page lists (1.34, docs.amazonaws.cn's
    copy of sagemaker-hyperpod-eks-prerequisites); 1.35 is listed by none and sits behind an explicit key."""
    import datetime as dt

    from components.config.cluster import AddonVersions, ClusterConfig
    from policies.cluster_versions import (
        HYPERPOD_SUPPORTED_VERSIONS,
        HYPERPOD_UNLISTED_VERSIONS,
        HYPERPOD_VERSIONS_SOURCE,
        extended_support_note,
        support_status,
    )

    default = ClusterConfig.model_fields["kubernetes_version"].default
    assert default == "1.34"
    assert HYPERPOD_SUPPORTED_VERSIONS == ("1.30", "1.31", "1.32", "1.33", "1.34")
    assert HYPERPOD_UNLISTED_VERSIONS == ("1.35",)
    assert HYPERPOD_VERSIONS_SOURCE == (
        "https://docs.amazonaws.cn/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md"
    )
    assert AddonVersions().kube_proxy == "v1.34.0-eksbuild.2"
    assert support_status(default, dt.date(2026, 12, 1)) == "standard"
    assert extended_support_note(default, dt.date(2026, 12, 1)) is None
    assert extended_support_note("1.33", dt.date(2026, 12, 1)) is not None


def test_unlisted_kubernetes_version_needs_the_explicit_key(run) -> None:
    from policies.engine import evaluate
    from policies.pack import POLICIES

    mapping = stack_mapping("prod")
    assert mapping[CLUSTER]["kubernetesVersion"] == "1.35"
    del mapping[CLUSTER]["acceptUnlistedKubernetesVersion"]
    refused = run("prod", mapping)
    assert refused.config_error is not None and not refused.registrations
    assert [i.render() for i in refused.config_error.issues] == [
        "hyperpod-inference:cluster.kubernetesVersion: Kubernetes 1.35 is in no retrievable copy of SageMaker "
        "HyperPod's EKS prerequisites page (the newest lists 1.30, 1.31, 1.32, 1.33, 1.34: "
        "https://docs.amazonaws.cn/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md); use one of those, or "
        "set cluster.acceptUnlistedKubernetesVersion: true to use 1.35 anyway (the policy eks-kubernetes-version-listed "
        "then reports it as advisory)"
    ]
    mapping[CLUSTER]["acceptUnlistedKubernetesVersion"] = True
    accepted = run("prod", mapping)
    assert accepted.config_error is None and accepted.registrations
    found = [
        r for r in evaluate(POLICIES, accepted.registrations, "prod") if r.policy == "eks-kubernetes-version-listed"
    ]
    assert [(r.level, r.resource_type) for r in found] == [("advisory", "eks:index:Cluster")]
    assert found[0].message.endswith(
        "Kubernetes 1.35 is not listed by any retrievable copy of SageMaker HyperPod's EKS prerequisites page (newest "
        "listed: 1.34, https://docs.amazonaws.cn/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md); it was "
        "allowed by cluster.acceptUnlistedKubernetesVersion. Confirm with AWS that HyperPod supports it before relying "
        "on it"
    )
    on_134 = stack_mapping("prod")
    on_134[CLUSTER]["kubernetesVersion"] = "1.34"
    on_134[CLUSTER]["addons"] = {"kubeProxy": "v1.34.0-eksbuild.2"}
    del on_134[CLUSTER]["acceptUnlistedKubernetesVersion"]
    listed = run("prod", on_134)
    assert not [r for r in evaluate(POLICIES, listed.registrations, "prod") if r.policy == found[0].policy]


def test_adopted_unlisted_version_follows_the_same_key() -> None:
    from components.config.cluster import eks_compatibility_issues

    refused = eks_compatibility_issues("ml-platform", "API", "1.35")
    assert [i.message for i in refused] == [
        "EKS cluster ml-platform runs Kubernetes 1.35; HyperPod supports 1.30, 1.31, 1.32, 1.33, 1.34 (and, listed by "
        "no retrievable AWS page, 1.35 with cluster.acceptUnlistedKubernetesVersion: true)"
    ]
    assert eks_compatibility_issues("ml-platform", "API", "1.35", accept_unlisted=True) == []
    assert len(eks_compatibility_issues("ml-platform", "API", "1.29", accept_unlisted=True)) == 1


def test_hpi_as_of_sets_the_evaluation_day_and_a_malformed_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """HPI_AS_OF is the one date input of the support calendar: the config check and the policy read it."""
    import datetime as dt

    from policies import cluster_versions

    monkeypatch.setenv("HPI_AS_OF", "2027-03-27")
    assert cluster_versions.today() == dt.date(2027, 3, 27)
    monkeypatch.delenv("HPI_AS_OF")
    assert cluster_versions.today() == dt.datetime.now(dt.UTC).date()
    monkeypatch.setenv("HPI_AS_OF", "27/03/2027")
    with pytest.raises(ValueError, match=r"HPI_AS_OF='27/03/2027': expected a date as YYYY-MM-DD"):
        cluster_versions.today()


def test_the_config_check_uses_the_pinned_day(run, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference stacks' 1.35 passes the config check on 2028-03-26 (extended support) and is a config error from
    2028-03-27."""
    monkeypatch.setenv("HPI_AS_OF", "2028-03-26")
    assert run("prod").config_error is None
    monkeypatch.setenv("HPI_AS_OF", "2028-03-27")
    error = run("prod").config_error
    assert error is not None and "Kubernetes 1.35 left EKS extended support on 2028-03-27" in str(error)


def test_a_malformed_hpi_as_of_is_a_config_error_not_a_traceback(run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPI_AS_OF", "27/03/2027")
    error = run("prod").config_error
    assert error is not None
    assert (
        "hyperpod-inference:cluster.kubernetesVersion: cannot be checked against the support calendar: "
        "HPI_AS_OF='27/03/2027': expected a date as YYYY-MM-DD"
    ) in str(error)
