"""HyperPod nodes: the execution role against AWS's references, and which deep health checks each group runs.

The expected action lists are literals copied from the references (not the module's constants), so removing
e.g. ``ecr:BatchGetImage`` or ``ec2:CreateNetworkInterfacePermission`` from the role fails here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.config.health_checks import supported_checks, unsupported_reason
from tests.conftest import STACKS, registered, stack_mapping
from tests.iam_lint import assert_policy_clean
from tools.plan.harness import StackRun
from tools.plan.mocks import ACCOUNT_ID

HP = "aws-native:sagemaker:Cluster"

# aws/sagemaker-hyperpod-cluster-setup@b920fcf430f1fd3b36c01bb63b63348f95f0b9fb
# :eks/cloudformation/sagemaker-iam-role-template.yaml — every action of ExecutionRole's inline policies and of
# the ConditionalPolicySubnet*/conditionalSecurityGroup* policies, besides the managed
# AmazonSageMakerClusterInstanceRolePolicy.
CLUSTER_SETUP_ACTIONS = {
    "ec2:AttachNetworkInterface",
    "ec2:DescribeInstances",
    "ec2:DescribeTags",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeSubnets",
    "ec2:CreateTags",
    "ec2:AssignPrivateIpAddresses",
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:UnassignPrivateIpAddresses",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSecurityGroups",
    "ec2:DetachNetworkInterface",
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:GetAuthorizationToken",
    "ecr:GetDownloadUrlForLayer",
    "cloudwatch:DescribeAlarms",
    "eks-auth:AssumeRoleForPodIdentity",
    "s3:ListBucket",
    "s3:GetObject",
}
# awslabs/awsome-distributed-ai@95b939cdc5b24ded03a70da21533964f9354b731
# :1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/modules/sagemaker_iam_role/main.tf
# (eks_cni_policy, sagemaker_execution_policy without rig mode, subnet_policy, sg_policy).
ADT_TERRAFORM_ACTIONS = CLUSTER_SETUP_ACTIONS | {"fsx:DescribeFileSystems"}
# Deliberately not granted: the package creates no FSx file system (see components/hyperpod_cluster.py).
LEFT_OUT = {"fsx:DescribeFileSystems"}


def _role(run: StackRun) -> dict[str, Any]:
    return json.loads(run.named("aws:iam/role:Role", "hyperpod-execution-role").inputs["assumeRolePolicy"])


def _inline(run: StackRun) -> dict[str, Any]:
    return json.loads(run.named("aws:iam/rolePolicy:RolePolicy", "hyperpod-execution-inline").inputs["policy"])


def _actions(doc: dict[str, Any]) -> set[str]:
    return {a for s in doc["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}


def _statement_for(doc: dict[str, Any], action: str) -> dict[str, Any]:
    found = [s for s in doc["Statement"] if action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])]
    assert len(found) == 1, f"{action} in {len(found)} statements"
    return found[0]


# --- execution role ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_execution_role_actions_equal_the_cluster_setup_reference(stack: str, stack_runs) -> None:
    assert _actions(_inline(stack_runs[stack])) == CLUSTER_SETUP_ACTIONS
    assert _actions(_inline(stack_runs[stack])) == ADT_TERRAFORM_ACTIONS - LEFT_OUT


def test_reference_comparison_catches_a_removed_action(stack_runs) -> None:
    """Not vacuous: the comparison above fails when one of the actions the issue names goes missing."""
    doc = _inline(stack_runs["prod"])
    for missing in ("ecr:BatchGetImage", "ec2:CreateNetworkInterfacePermission", "ec2:DescribeDhcpOptions"):
        stripped = {
            **doc,
            "Statement": [
                {
                    **s,
                    "Action": [
                        a for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"]) if a != missing
                    ],
                }
                for s in doc["Statement"]
            ],
        }
        assert _actions(stripped) != CLUSTER_SETUP_ACTIONS, missing


def test_execution_role_scopes_pod_identity_tags_and_eni_changes(stack_runs) -> None:
    run = stack_runs["prod"]
    doc = _inline(run)
    eks_arn = run.named(HP, "hyperpod-cluster").inputs["orchestrator"]["eks"]["clusterArn"]
    pod_identity = _statement_for(doc, "eks-auth:AssumeRoleForPodIdentity")
    assert eks_arn.startswith(f"arn:aws:eks:us-east-1:{ACCOUNT_ID}:cluster/")
    assert pod_identity["Resource"] == eks_arn, "scoped to the cluster HyperPod is orchestrated by"
    assert _statement_for(doc, "ec2:CreateTags")["Resource"] == (
        f"arn:aws:ec2:us-east-1:{ACCOUNT_ID}:network-interface/*"
    )
    eni = _statement_for(doc, "ec2:CreateNetworkInterfacePermission")
    vpc = run.named(HP, "hyperpod-cluster").inputs["vpcConfig"]
    subnets = sorted(str(r.id) for r in run.of_type("aws:ec2/subnet:Subnet") if "-private-" in r.name)
    (sg,) = vpc["securityGroupIds"]
    assert len(subnets) == 3, "the three private subnets of prod"
    assert eni["Resource"] == [
        f"arn:aws:ec2:us-east-1:{ACCOUNT_ID}:instance/*",
        f"arn:aws:ec2:us-east-1:{ACCOUNT_ID}:network-interface/*",
        *[f"arn:aws:ec2:us-east-1:{ACCOUNT_ID}:subnet/{s}" for s in subnets],
        f"arn:aws:ec2:us-east-1:{ACCOUNT_ID}:security-group/{sg}",
    ]
    for s in doc["Statement"]:
        if s["Resource"] == "*":
            assert all(
                a.split(":")[1].startswith(("Describe", "Get", "BatchCheck", "BatchGet"))
                for a in _actions({"Statement": [s]})
            ), s


@pytest.mark.parametrize("stack", STACKS)
def test_execution_role_trust_is_aws_templates_without_source_account(stack: str, stack_runs) -> None:
    """AWS's templates (sagemaker-hyperpod-cluster-setup sagemaker-iam-role-template.yaml, awsome-distributed-ai
    sagemaker_iam_role) trust sagemaker.amazonaws.com without conditions; no source shows HyperPod sends
    aws:SourceAccount when nodes take the role, so a condition would make CreateCluster fail late (issue 33 item 1)."""
    trust = _role(stack_runs[stack])
    assert trust["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ]


@pytest.mark.parametrize("stack", STACKS)
def test_execution_role_documents_pass_parliament(stack: str, stack_runs) -> None:
    assert_policy_clean(json.dumps(_inline(stack_runs[stack])), f"{stack} execution inline")
    assert_policy_clean(json.dumps(_role(stack_runs[stack])), f"{stack} execution trust")


# --- deep health checks -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instance_type", "count", "expected"),
    [
        ("ml.p5.48xlarge", 4, ["InstanceStress", "InstanceConnectivity"]),  # GPU + EFA, >= 2
        ("ml.p5.48xlarge", 1, ["InstanceStress"]),  # one instance: nothing to connect to
        ("ml.p5.48xlarge", 2, ["InstanceStress", "InstanceConnectivity"]),  # the boundary
        ("ml.g5.xlarge", 4, ["InstanceStress"]),  # GPU without EFA
        ("ml.trn1.32xlarge", 2, ["InstanceStress", "InstanceConnectivity"]),  # Trainium + EFA
        ("ml.m5.2xlarge", 3, []),  # CPU: no deep health checks
        ("ml.c5n.18xlarge", 4, []),  # EFA but neither GPU nor Trainium
        ("ml.inf2.48xlarge", 2, []),  # Inferentia: not in AWS's GPU/Trainium list (nor the table)
    ],
)
def test_supported_checks_per_instance_type(instance_type: str, count: int, expected: list[str]) -> None:
    assert supported_checks(instance_type, count) == expected


def test_unsupported_reasons_name_the_cause() -> None:
    assert "GPU and Trainium" in str(unsupported_reason("InstanceStress", "ml.m5.2xlarge", 3))
    assert "no EFA" in str(unsupported_reason("InstanceConnectivity", "ml.g5.xlarge", 4))
    assert "has 1" in str(unsupported_reason("InstanceConnectivity", "ml.p5.48xlarge", 1))
    assert "not in the HyperPod instance table" in str(unsupported_reason("InstanceStress", "ml.zz9.large", 1))
    assert unsupported_reason("InstanceConnectivity", "ml.p5.48xlarge", 2) is None


def test_rendered_groups_run_only_supported_checks(stack_runs) -> None:
    groups = {
        g["instanceGroupName"]: g for g in stack_runs["prod"].named(HP, "hyperpod-cluster").inputs["instanceGroups"]
    }
    assert "onStartDeepHealthChecks" not in groups["system"]
    assert groups["p5-inference"]["onStartDeepHealthChecks"] == ["InstanceStress"]  # role inference (health_checks.py)
    dev = {g["instanceGroupName"]: g for g in stack_runs["dev"].named(HP, "hyperpod-cluster").inputs["instanceGroups"]}
    assert dev["gpu-p5"]["onStartDeepHealthChecks"] == ["InstanceStress"]  # one ml.p5.4xlarge


def _issues(result: StackRun) -> dict[str, str]:
    assert result.config_error is not None, "expected a config error"
    return {i.path: i.message for i in result.config_error.issues}


def test_explicit_unsupported_check_is_a_config_error(run) -> None:
    mapping = stack_mapping("dev")
    groups = mapping["hyperpod-inference:cluster"]["instanceGroups"]
    groups[0]["onStartDeepHealthChecks"] = ["InstanceStress"]  # ml.m5.2xlarge
    groups[1]["onStartDeepHealthChecks"] = ["InstanceStress", "InstanceConnectivity"]  # one p5.4xlarge
    issues = _issues(run("dev", mapping))
    assert "GPU and Trainium" in issues["cluster.instanceGroups[0].onStartDeepHealthChecks[0]"]
    assert "the group has 1" in issues["cluster.instanceGroups[1].onStartDeepHealthChecks[1]"]
    assert "cluster.instanceGroups[1].onStartDeepHealthChecks[0]" not in issues


def test_explicit_empty_list_turns_checks_off(run) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:cluster"]["instanceGroups"][1]["onStartDeepHealthChecks"] = []
    groups = registered(run("prod", mapping)).named(HP, "hyperpod-cluster").inputs["instanceGroups"]
    assert "onStartDeepHealthChecks" not in groups[1]
