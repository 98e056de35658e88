"""The inference operator layer: prerequisites, IAM, TLS bucket, the add-on and its configuration values."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from components import iam_documents as docs
from components.addon_values import AddonValues, build_addon_values
from components.config.operator import PREREQUISITES
from components.inference_operator import ADDON_NAME
from components.operator_prerequisites import HYPERPOD_HEALTH_TAINT
from tests.conftest import STACKS, registered, stack_mapping
from tests.iam_lint import assert_policy_clean, findings_above, policy_documents
from tools.plan.harness import StackRun
from tools.plan.mocks import ACCOUNT_ID

# What AWS's chart gives its controllers and device plugins (aws/sagemaker-hyperpod-cli@011ca927
# helm_chart/HyperPodHelmChart/values.yaml:206-209, helm_chart/readme.md:78-84): Equal, not Exists.
UNSCHEDULABLE_TOLERATION = {
    "key": "sagemaker.amazonaws.com/node-health-status",
    "operator": "Equal",
    "value": "Unschedulable",
    "effect": "NoSchedule",
}
GOLDEN = Path(__file__).resolve().parent / "golden"
ADDON = "aws:eks/addon:Addon"
ROLE = "aws:iam/role:Role"
OPERATOR_TYPES = (
    "hyperpod:operator:OperatorIam",
    "hyperpod:operator:OperatorPrerequisites",
    "hyperpod:operator:InferenceOperatorAddon",
)


def _addon(run: StackRun):
    regs = [r for r in run.of_type(ADDON) if r.inputs.get("addonName") == ADDON_NAME]
    assert len(regs) == 1, f"expected one {ADDON_NAME} add-on, got {len(regs)}"
    return regs[0]


def _values(run: StackRun) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(_addon(run).inputs["configurationValues"])
    return parsed


def _operator_regs(run: StackRun):
    """Registrations under one of this layer's components (children and their descendants)."""
    parents = {r.urn for r in run.registrations if r.type in OPERATOR_TYPES}
    assert len(parents) == 3
    found: list = []
    frontier = set(parents)
    while frontier:
        children = [r for r in run.registrations if r.parent in frontier]
        found.extend(children)
        frontier = {r.urn for r in children}
    return found


def _with_operator(stack: str, **operator: Any) -> dict[str, Any]:
    mapping = stack_mapping(stack)
    mapping["hyperpod-inference:operator"] = {**mapping["hyperpod-inference:operator"], **operator}
    return mapping


# --- the add-on ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_addon_values_equal_reviewed_golden_file(stack: str, stack_runs) -> None:
    golden = json.loads((GOLDEN / f"addon-values.{stack}.json").read_text(encoding="utf-8"))
    assert _values(stack_runs[stack]) == golden
    # and the model accepts what was rendered (closed schema, role prefix, bucket prefix)
    AddonValues.model_validate(golden)


@pytest.mark.parametrize("stack", STACKS)
def test_addon_pinned_with_long_timeout_and_overwrite(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    addon = _addon(run)
    pinned = stack_mapping(stack)["hyperpod-inference:operator"]["addonVersion"]
    assert addon.inputs["addonVersion"] == pinned
    assert addon.custom_timeouts["create"] == "45m"
    assert int(addon.custom_timeouts["create"].removesuffix("m")) >= 40
    assert addon.inputs["resolveConflictsOnCreate"] == "OVERWRITE"
    assert addon.inputs["resolveConflictsOnUpdate"] == "OVERWRITE"
    assert addon.inputs["clusterName"] == f"hpi-{stack}-eks"


@pytest.mark.parametrize("stack", STACKS)
def test_addon_depends_on_every_prerequisite_and_the_hyperpod_cluster(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    deps = set(_addon(run).dependencies)
    by_urn = {r.urn: r for r in run.registrations}
    dep_addons = {by_urn[u].inputs.get("addonName") for u in deps if u in by_urn and by_urn[u].type == ADDON}
    assert dep_addons >= {p.addon_name for p in PREREQUISITES}
    hyperpod = run.of_type("aws-native:sagemaker:Cluster")
    assert len(hyperpod) == 1 and hyperpod[0].urn in deps
    # the roles, the TLS bucket and the access entry are dependencies as well
    dep_types = {by_urn[u].type for u in deps if u in by_urn}
    assert {ROLE, "aws:s3/bucket:Bucket", "aws:eks/accessEntry:AccessEntry"} <= dep_types


def test_every_update_sends_the_whole_configuration(run) -> None:
    """Issue 47 item 8: the add-on's schema requires executionRoleArn and tlsCertificateS3Bucket, and
    --configuration-values replaces the whole configuration (ai-on-sagemaker-hyperpod@e53295231ea5). So both keys,
    and inferenceGateway.enabled even when off (its default depends on the add-on version), are in every render:
    turning the gateway off sends enabled: false, not a configuration without the key."""
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:operator"]["addonVersion"] = "v2.1.0-eksbuild.1"
    on = _values(registered(run("prod", mapping)))
    mapping["hyperpod-inference:gateway"] = {"enabled": False}
    for ep in mapping["hyperpod-inference:endpoints"]:
        ep["spec"].pop("inferenceGateway", None)
    off = _values(registered(run("prod", mapping)))
    for values in (on, off):
        assert values["executionRoleArn"].endswith(":role/SageMakerHyperPodInference-prod")
        assert values["tlsCertificateS3Bucket"].startswith("hyperpod-tls-prod-")
        assert values["inferenceOperator"] == {"enabled": True}
    assert on["inferenceGateway"]["enabled"] is True and off["inferenceGateway"] == {"enabled": False}
    assert set(on) - {"inferenceGateway"} == set(off) - {"inferenceGateway"}


def test_v1_addon_omits_v2_only_keys_and_v2_sets_them(stack_runs) -> None:
    dev, prod = _values(stack_runs["dev"]), _values(stack_runs["prod"])
    assert "inferenceOperator" not in dev and "inferenceGateway" not in dev
    assert prod["inferenceOperator"] == {"enabled": True}
    assert prod["inferenceGateway"]["enabled"] is True
    assert prod["inferenceGateway"]["serviceAccount"]["roleArn"].endswith(":role/hpi-prod-inference-gateway")


def test_build_addon_values_rejects_bad_role_name_and_gateway_on_v1() -> None:
    common: dict[str, Any] = {
        "tls_bucket": "hyperpod-tls-dev-1",
        "hyperpod_cluster_arn": f"arn:aws:sagemaker:us-west-2:{ACCOUNT_ID}:cluster/abc",
        "gated_model_role_arn": f"arn:aws:iam::{ACCOUNT_ID}:role/g",
        "alb_mode": "existing",
        "alb_role_arn": None,
        "keda_mode": "existing",
        "keda_role_arn": None,
        "requires_cluster_arn": True,
        "gateway_role_arn": None,
    }
    with pytest.raises(ValueError, match="SageMakerHyperPodInference"):
        build_addon_values(
            execution_role_arn=f"arn:aws:iam::{ACCOUNT_ID}:role/other", v2_addon=False, gateway_enabled=False, **common
        )
    with pytest.raises(ValueError, match=r"v2\.x"):
        build_addon_values(
            execution_role_arn=f"arn:aws:iam::{ACCOUNT_ID}:role/SageMakerHyperPodInference-x",
            v2_addon=False,
            gateway_enabled=True,
            **common,
        )


# --- IAM -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_execution_role_name_trust_and_managed_policy(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    role = run.named(ROLE, "operator-iam-execution")
    assert role.inputs["name"] == f"SageMakerHyperPodInference-{stack}"
    assert role.inputs["name"].startswith("SageMakerHyperPodInference")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    services = [s for s in trust["Statement"] if "Service" in s["Principal"]]
    assert services[0]["Principal"]["Service"] == "sagemaker.amazonaws.com"
    # AWS's documented trust (sagemaker-hyperpod-model-deployment-ts-trust) has no condition on SageMaker (47.4).
    assert "Condition" not in services[0] and services[0]["Action"] == "sts:AssumeRole"
    web = [s for s in trust["Statement"] if "Federated" in s["Principal"]]
    assert len(web) == 1 and web[0]["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert ":oidc-provider/oidc.eks." in web[0]["Principal"]["Federated"]
    cond = web[0]["Condition"]["StringEquals"]
    subs = [v for k, v in cond.items() if k.endswith(":sub")]
    auds = [v for k, v in cond.items() if k.endswith(":aud")]
    assert subs == ["system:serviceaccount:hyperpod-inference-system:hyperpod-inference-controller-manager"]
    assert auds == ["sts.amazonaws.com"]
    attached = [
        r.inputs["policyArn"]
        for r in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("operator-iam-execution-policy")
    ]
    assert attached == ["arn:aws:iam::aws:policy/AmazonSageMakerHyperPodInferenceAccess"]


def _gated_trust(run: StackRun) -> dict[str, Any]:
    trust: dict[str, Any] = json.loads(run.named(ROLE, "operator-iam-jumpstart-gated").inputs["assumeRolePolicy"])
    return trust


def test_gated_model_role_trusts_only_the_endpoint_namespaces(stack_runs) -> None:
    """Scoped to the namespaces the stack deploys endpoints into (AWS documents `*` for the namespace)."""
    run = stack_runs["dev"]
    web = next(s for s in _gated_trust(run)["Statement"] if "Federated" in s["Principal"])
    assert list(web["Condition"]["StringLike"].values()) == [
        "system:serviceaccount:inference:hyperpod-inference-service-account*"
    ]
    assert list(web["Condition"]["StringEquals"].values()) == ["sts.amazonaws.com"]
    attached = {
        r.inputs["policyArn"]
        for r in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("operator-iam-jumpstart-gated-policy")
    }
    assert attached == {"arn:aws:iam::aws:policy/AmazonSageMakerHyperPodGatedModelAccess"}


def test_gated_model_role_lists_each_endpoint_namespace_once(run) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:cluster"]["instanceGroups"][1]["instanceCount"] = 3  # room for three endpoints
    first = mapping["hyperpod-inference:endpoints"][0]
    mapping["hyperpod-inference:endpoints"] = [
        first,
        {**copy.deepcopy(first), "name": "second", "namespace": "team-b"},
        {**copy.deepcopy(first), "name": "third", "namespace": "default"},
    ]
    trust = _gated_trust(registered(run("dev", mapping)))
    web = next(s for s in trust["Statement"] if "Federated" in s["Principal"])
    assert list(web["Condition"]["StringLike"].values()) == [
        [
            "system:serviceaccount:default:hyperpod-inference-service-account*",
            "system:serviceaccount:inference:hyperpod-inference-service-account*",
            "system:serviceaccount:team-b:hyperpod-inference-service-account*",
        ]
    ]


def test_gated_model_role_without_endpoints_trusts_only_sagemaker(run) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:endpoints"] = []
    trust = _gated_trust(registered(run("dev", mapping)))
    assert [s["Principal"] for s in trust["Statement"]] == [{"Service": "sagemaker.amazonaws.com"}]


def test_gateway_role_only_when_gateway_enabled(stack_runs) -> None:
    assert not [r for r in stack_runs["dev"].of_type(ROLE) if r.name == "operator-iam-gateway"]
    role = stack_runs["prod"].named(ROLE, "operator-iam-gateway")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    subs = [v for k, v in trust["Statement"][0]["Condition"]["StringEquals"].items() if k.endswith(":sub")]
    assert subs == ["system:serviceaccount:hyperpod-inference-system:inference-gateway-controller"]
    attached = {
        r.inputs["policyArn"]
        for r in stack_runs["prod"].of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("operator-iam-gateway-policy")
    }
    assert attached == {"arn:aws:iam::aws:policy/AmazonSageMakerHyperPodInferenceGatewayAccess"}


def test_bundled_controllers_roles_trust_operator_namespace(stack_runs) -> None:
    run = stack_runs["dev"]
    for role_name, sa in (
        ("operator-iam-lbc", "hyperpod-inference-system:aws-load-balancer-controller"),
        ("operator-iam-keda", "hyperpod-inference-system:keda-operator"),
    ):
        trust = json.loads(run.named(ROLE, role_name).inputs["assumeRolePolicy"])
        subs = [v for k, v in trust["Statement"][0]["Condition"]["StringEquals"].items() if k.endswith(":sub")]
        assert subs == [f"system:serviceaccount:{sa}"]
    lbc = json.loads(run.named("aws:iam/policy:Policy", "operator-iam-lbc-policy").inputs["policy"])
    assert lbc == docs.load_lbc_policy()
    keda = json.loads(run.named("aws:iam/policy:Policy", "operator-iam-keda-policy").inputs["policy"])
    actions = sorted(a for s in keda["Statement"] for a in s["Action"])
    assert actions == sorted(
        [
            "cloudwatch:GetMetricData",
            "cloudwatch:GetMetricStatistics",
            "cloudwatch:ListMetrics",
            "aps:QueryMetrics",
            "aps:GetLabels",
            "aps:GetSeries",
            "aps:GetMetricMetadata",
        ]
    )
    assert keda["Statement"][1]["Resource"] == f"arn:aws:aps:us-west-2:{ACCOUNT_ID}:workspace/*"


@pytest.mark.parametrize("stack", STACKS)
def test_every_operator_policy_document_passes_parliament(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    mine = _operator_regs(run)
    found = list(policy_documents(type("Run", (), {"registrations": mine})()))
    # trust policies of >= 5 roles (the FSx CSI driver has none), the LBC/KEDA/S3-CSI policies and the
    # TLS bucket policy
    assert len(found) >= 9
    for where, text in found:
        assert_policy_clean(text, where)


@pytest.mark.parametrize("stack", STACKS)
def test_every_policy_document_of_the_package_passes_parliament(stack: str, stack_runs) -> None:
    """Issue 4's verify item covers the whole package: every layer's roles, policies and bucket policies."""
    found = list(policy_documents(stack_runs[stack]))
    assert len(found) > len(
        list(policy_documents(type("Run", (), {"registrations": _operator_regs(stack_runs[stack])})()))
    )
    for where, text in found:
        assert_policy_clean(text, where)


def test_iam_lint_is_not_vacuous() -> None:
    wildcard_admin = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b"},
            {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"},
        ],
    }
    assert findings_above(wildcard_admin), "parliament should flag iam:PassRole on *"
    trust_without_oidc = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": "arn:aws:iam::123456789012:oidc-provider/evil.example.com"},
                "Action": "sts:AssumeRoleWithWebIdentity",
            }
        ],
    }
    assert any(f.issue == "UNKNOWN_FEDERATION_SOURCE" for f in findings_above(trust_without_oidc))


def test_access_entry_for_execution_role(stack_runs) -> None:
    run = stack_runs["dev"]
    entry = run.named("aws:eks/accessEntry:AccessEntry", "operator-iam-execution-access")
    assert entry.inputs["principalArn"] == f"arn:aws:iam::{ACCOUNT_ID}:role/SageMakerHyperPodInference-dev"
    assert entry.inputs["type"] == "STANDARD"
    assoc = run.named("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "operator-iam-execution-monitoring")
    assert assoc.inputs["policyArn"].endswith(":cluster-access-policy/AmazonSagemakerHyperpodInferenceMonitoringPolicy")
    assert assoc.inputs["accessScope"] == {"type": "cluster"}
    assert entry.urn in assoc.dependencies


# --- TLS bucket ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_tls_bucket_private_encrypted_tls_only_versioned(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    bucket = run.named("aws:s3/bucket:Bucket", "operator-iam-tls")
    assert bucket.inputs["bucket"] == f"hyperpod-tls-{stack}-{ACCOUNT_ID}"
    assert bucket.protect is (stack == "prod")
    pab = run.named("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "operator-iam-tls-public-access")
    assert all(
        pab.inputs[k] is True
        for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    sse = run.named(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration", "operator-iam-tls-sse"
    )
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
    ver = run.named("aws:s3/bucketVersioning:BucketVersioning", "operator-iam-tls-versioning")
    assert ver.inputs["versioningConfiguration"]["status"] == "Enabled"
    own = run.named("aws:s3/bucketOwnershipControls:BucketOwnershipControls", "operator-iam-tls-ownership")
    assert own.inputs["rule"]["objectOwnership"] == "BucketOwnerEnforced"
    policy = json.loads(run.named("aws:s3/bucketPolicy:BucketPolicy", "operator-iam-tls-policy").inputs["policy"])
    deny = policy["Statement"][0]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny["Resource"] == [
        f"arn:aws:s3:::hyperpod-tls-{stack}-{ACCOUNT_ID}",
        f"arn:aws:s3:::hyperpod-tls-{stack}-{ACCOUNT_ID}/*",
    ]


# --- prerequisites ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_prerequisite_addons_pinned_tolerate_hyperpod_and_use_irsa(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    by_name = {r.inputs["addonName"]: r for r in run.of_type(ADDON)}
    for pre in PREREQUISITES:
        addon = by_name[pre.addon_name]
        assert addon.inputs["addonVersion"] == pre.default
        assert addon.inputs["resolveConflictsOnUpdate"] == "OVERWRITE"
        values = json.loads(addon.inputs["configurationValues"])
        text = json.dumps(values)
        assert HYPERPOD_HEALTH_TAINT in text or values.get("node", {}).get("tolerateAllTaints") is True, pre.addon_name
    assert json.loads(by_name["metrics-server"].inputs["configurationValues"])["tolerations"] == [
        UNSCHEDULABLE_TOLERATION
    ]
    cm = json.loads(by_name["cert-manager"].inputs["configurationValues"])
    for part in (cm, cm["webhook"], cm["cainjector"]):
        assert part["tolerations"] == [UNSCHEDULABLE_TOLERATION]
    fsx = json.loads(by_name["aws-fsx-csi-driver"].inputs["configurationValues"])
    assert fsx["controller"]["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"effect": "NoExecute", "operator": "Exists", "tolerationSeconds": 300},
        UNSCHEDULABLE_TOLERATION,
    ]
    assert (
        by_name["aws-mountpoint-s3-csi-driver"]
        .inputs["serviceAccountRoleArn"]
        .endswith(f":role/hpi-{stack}-s3-csi-driver")
    )
    # No FSx file system is created by the stack: the FSx CSI driver gets no role (no AmazonFSxFullAccess).
    assert by_name["aws-fsx-csi-driver"].inputs.get("serviceAccountRoleArn") is None
    attached = {r.inputs["policyArn"] for r in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")}
    assert "arn:aws:iam::aws:policy/AmazonFSxFullAccess" not in attached
    assert not [r for r in run.of_type("aws:iam/role:Role") if "fsx" in r.name]
    s3_policy = json.loads(run.named("aws:iam/policy:Policy", "operator-prereqs-s3-csi-policy").inputs["policy"])
    assert s3_policy["Statement"][0]["Resource"] == [f"arn:aws:s3:::hpi-{stack}-models-{ACCOUNT_ID}"]
    assert {s["Action"] for s in s3_policy["Statement"]} == {"s3:ListBucket", "s3:GetObject"}


def test_helm_mode_installs_pinned_charts_and_disables_bundled_copies(run) -> None:
    mapping = _with_operator(
        "dev",
        loadBalancerController={"mode": "helm", "chartVersion": "1.13.2"},
        keda={"mode": "helm", "chartVersion": "2.17.1"},
    )
    result = registered(run("dev", mapping))
    releases = {r.inputs["chart"]: r for r in result.of_type("kubernetes:helm.sh/v3:Release")}
    lbc, keda = releases["aws-load-balancer-controller"], releases["keda"]
    assert lbc.inputs["version"] == "1.13.2"
    assert lbc.inputs["repositoryOpts"]["repo"] == "https://aws.github.io/eks-charts"
    assert lbc.inputs["namespace"] == "kube-system"
    assert lbc.inputs["values"]["tolerations"] == [UNSCHEDULABLE_TOLERATION]
    assert lbc.inputs["values"]["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"].endswith(
        ":role/hpi-dev-aws-load-balancer-controller"
    )
    assert lbc.inputs["values"]["clusterName"] == "hpi-dev-eks"
    assert keda.inputs["version"] == "2.17.1"
    assert keda.inputs["repositoryOpts"]["repo"] == "https://kedacore.github.io/charts"
    assert keda.inputs["values"]["podIdentity"]["aws"]["irsa"]["roleArn"].endswith(":role/hpi-dev-keda-operator")
    assert keda.inputs["values"]["tolerations"] == [UNSCHEDULABLE_TOLERATION]
    assert lbc.provider is not None and keda.provider is not None
    values = _values(result)
    assert values["alb"] == {"enabled": False} and values["keda"] == {"enabled": False}
    trust = json.loads(result.named(ROLE, "operator-iam-lbc").inputs["assumeRolePolicy"])
    subs = [v for k, v in trust["Statement"][0]["Condition"]["StringEquals"].items() if k.endswith(":sub")]
    assert subs == ["system:serviceaccount:kube-system:aws-load-balancer-controller"]


def test_existing_mode_creates_no_controller_role_or_chart(run) -> None:
    mapping = _with_operator("dev", loadBalancerController={"mode": "existing"}, keda={"mode": "existing"})
    result = registered(run("dev", mapping))
    names = {r.name for r in result.of_type(ROLE)}
    assert "operator-iam-lbc" not in names and "operator-iam-keda" not in names
    assert "operator-iam-execution" in names
    assert not result.of_type("kubernetes:helm.sh/v3:Release") or all(
        r.inputs.get("chart") not in ("aws-load-balancer-controller", "keda")
        for r in result.of_type("kubernetes:helm.sh/v3:Release")
    )
    values = _values(result)
    assert values["alb"] == {"enabled": False} and values["keda"] == {"enabled": False}


# --- bad input ---------------------------------------------------------------------------------------------


def _issues(result: StackRun) -> dict[str, str]:
    assert result.config_error is not None, "expected a config error"
    assert result.registrations == [], "nothing may be registered when the config is invalid"
    return {i.path: i.message for i in result.config_error.issues}


def test_addon_version_not_in_table_is_a_config_error(run) -> None:
    issues = _issues(run("dev", _with_operator("dev", addonVersion="v1.1.0-eksbuild.1")))
    assert "operator.addonVersion" in issues
    assert "v1.1.0-eksbuild.1" in issues["operator.addonVersion"]
    assert "compatibility table" in issues["operator.addonVersion"]


@pytest.mark.parametrize(
    ("key", "version", "minimum"),
    [
        ("s3CsiDriverVersion", "v1.13.0-eksbuild.1", "v1.14.1-eksbuild.1"),
        ("fsxCsiDriverVersion", "v1.5.9-eksbuild.3", "v1.6.0-eksbuild.1"),
        ("metricsServerVersion", "v0.7.2-eksbuild.3", "v0.7.2-eksbuild.4"),
        ("certManagerVersion", "v1.17.0-eksbuild.1", "v1.18.2-eksbuild.2"),
    ],
)
def test_prerequisite_pin_below_minimum_is_a_config_error(run, key: str, version: str, minimum: str) -> None:
    issues = _issues(run("dev", _with_operator("dev", **{key: version})))
    message = issues[f"operator.{key}"]
    assert version in message and minimum in message


def test_helm_mode_needs_chart_version_and_others_forbid_it(run) -> None:
    issues = _issues(
        run(
            "dev",
            _with_operator(
                "dev", loadBalancerController={"mode": "helm"}, keda={"mode": "bundled", "chartVersion": "2.17.1"}
            ),
        )
    )
    assert "required when mode is helm" in issues["operator.loadBalancerController.chartVersion"]
    assert "only allowed when mode is helm" in issues["operator.keda.chartVersion"]


# The 80 actions of kubernetes-sigs/aws-load-balancer-controller@73980cf1 (tag v2.13.0)
# :docs/install/iam_policy.json, copied from the tag (the same blob at v2.13.1-v2.13.4).
LBC_V2_13_ACTIONS = {
    "acm:DescribeCertificate",
    "acm:ListCertificates",
    "cognito-idp:DescribeUserPoolClient",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:CreateSecurityGroup",
    "ec2:CreateTags",
    "ec2:DeleteSecurityGroup",
    "ec2:DeleteTags",
    "ec2:DescribeAccountAttributes",
    "ec2:DescribeAddresses",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeCoipPools",
    "ec2:DescribeInstances",
    "ec2:DescribeInternetGateways",
    "ec2:DescribeIpamPools",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeRouteTables",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeTags",
    "ec2:DescribeVpcPeeringConnections",
    "ec2:DescribeVpcs",
    "ec2:GetCoipPoolUsage",
    "ec2:GetSecurityGroupsForVpc",
    "ec2:RevokeSecurityGroupIngress",
    "elasticloadbalancing:AddListenerCertificates",
    "elasticloadbalancing:AddTags",
    "elasticloadbalancing:CreateListener",
    "elasticloadbalancing:CreateLoadBalancer",
    "elasticloadbalancing:CreateRule",
    "elasticloadbalancing:CreateTargetGroup",
    "elasticloadbalancing:DeleteListener",
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:DeleteRule",
    "elasticloadbalancing:DeleteTargetGroup",
    "elasticloadbalancing:DeregisterTargets",
    "elasticloadbalancing:DescribeCapacityReservation",
    "elasticloadbalancing:DescribeListenerAttributes",
    "elasticloadbalancing:DescribeListenerCertificates",
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeLoadBalancerAttributes",
    "elasticloadbalancing:DescribeLoadBalancers",
    "elasticloadbalancing:DescribeRules",
    "elasticloadbalancing:DescribeSSLPolicies",
    "elasticloadbalancing:DescribeTags",
    "elasticloadbalancing:DescribeTargetGroupAttributes",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTargetHealth",
    "elasticloadbalancing:DescribeTrustStores",
    "elasticloadbalancing:ModifyCapacityReservation",
    "elasticloadbalancing:ModifyIpPools",
    "elasticloadbalancing:ModifyListener",
    "elasticloadbalancing:ModifyListenerAttributes",
    "elasticloadbalancing:ModifyLoadBalancerAttributes",
    "elasticloadbalancing:ModifyRule",
    "elasticloadbalancing:ModifyTargetGroup",
    "elasticloadbalancing:ModifyTargetGroupAttributes",
    "elasticloadbalancing:RegisterTargets",
    "elasticloadbalancing:RemoveListenerCertificates",
    "elasticloadbalancing:RemoveTags",
    "elasticloadbalancing:SetIpAddressType",
    "elasticloadbalancing:SetRulePriorities",
    "elasticloadbalancing:SetSecurityGroups",
    "elasticloadbalancing:SetSubnets",
    "elasticloadbalancing:SetWebAcl",
    "iam:CreateServiceLinkedRole",
    "iam:GetServerCertificate",
    "iam:ListServerCertificates",
    "shield:CreateProtection",
    "shield:DeleteProtection",
    "shield:DescribeProtection",
    "shield:GetSubscriptionState",
    "waf-regional:AssociateWebACL",
    "waf-regional:DisassociateWebACL",
    "waf-regional:GetWebACL",
    "waf-regional:GetWebACLForResource",
    "wafv2:AssociateWebACL",
    "wafv2:DisassociateWebACL",
    "wafv2:GetWebACL",
    "wafv2:GetWebACLForResource",
}
LBC_V2_13_BLOB = "761d0e733c41089c91ea009dd29faf71918085e5"


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_lbc_policy_file_is_the_published_v2_13_policy_verbatim() -> None:
    data = docs.LBC_POLICY_FILE.read_bytes()
    assert _git_blob_id(data) == LBC_V2_13_BLOB, "the file differs from the tag's iam_policy.json"
    doc = docs.load_lbc_policy()
    actions = {a for s in doc["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert actions == LBC_V2_13_ACTIONS
    assert "elasticloadbalancing:SetRulePriorities" in actions  # rule reordering (was missing)
    assert_policy_clean(doc, "components/iam/aws-load-balancer-controller-v2.13.0.json")


@pytest.mark.parametrize("stack", STACKS)
def test_registered_lbc_policy_is_the_file(stack: str, stack_runs) -> None:
    policy = stack_runs[stack].named("aws:iam/policy:Policy", "operator-iam-lbc-policy")
    assert json.loads(policy.inputs["policy"]) == json.loads(docs.LBC_POLICY_FILE.read_text(encoding="utf-8"))
