"""GlobalInference: the global stack — one Global Inference Gateway over several regional stacks.

Built when the stack file says ``hyperpod-inference:role: global``. It reads each member stack with
``pulumi.StackReference`` (output ``globalGatewayMember``, exported by every regional stack), checks the
exports with the same rules the policy pack runs (``policies/global_policies.py``), and then registers:

- the execution role the gateway assumes (unless ``executionRoleArn`` is given). AWS's model documents
  only that it "assumes [it] to access your SageMaker HyperPod clusters" and that it must be in the
  gateway's account and partition (botocore ``GlobalInferenceGatewayExecutionRoleArn``). UNCONFIRMED [global-gateway-execution-role], not
  found in AWS docs: the service principal (``sagemaker.amazonaws.com`` assumed) and the permissions
  (``sagemaker:DescribeCluster`` on the member clusters assumed). Verify against the docs page
  sagemaker-hyperpod-model-deployment-global-inference-gateway before the first real deploy.
- the gateway (:class:`~components.global_inference_gateway.GlobalInferenceGateway`, a dynamic resource);
- an IAM managed policy callers attach to invoke it: ``sagemaker:InvokeGlobalInferenceGateway`` and
  ``sagemaker:InvokeGlobalInferenceGatewayWithResponseStream`` on this gateway's ARN only (botocore
  ``sagemaker-gateway-runtime`` AccessDeniedException documentation names exactly these two actions).

Every member problem is raised as a :class:`~components.config.ConfigError` naming
``hyperpod-inference:members[i].stack`` before the role, the gateway or the policy is registered (they all
take their inputs from the checked members).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.role_boundary import role_boundary_arn

from .config import ConfigError, GlobalStackConfig
from .config.global_gateway import MEMBER_EXPORT, duplicate_gateway_issues, member_config_issues
from .dynamic_provider import credential_inputs
from .global_inference_gateway import GlobalInferenceGateway, GlobalInferenceGatewayProvider, members_input

INVOKE_ACTIONS = ("sagemaker:InvokeGlobalInferenceGateway", "sagemaker:InvokeGlobalInferenceGatewayWithResponseStream")

# Outside callers attach the invoke policy (no boundary holds them): the deploy role writes no new version of it
# (tools.cli.deployer_policy), so a changed document replaces the policy; its fixed name needs the old one deleted
# first, which AWS refuses while a caller still has it attached (DeleteConflict) instead of widening their access.
INVOKE_POLICY_REPLACED = pulumi.ResourceOptions(replace_on_changes=["policy"], delete_before_replace=True)


@dataclass(frozen=True)
class GlobalInferenceArgs:
    """The validated global-stack config (``components.config.load_program_config()``)."""

    config: GlobalStackConfig
    provider: GlobalInferenceGatewayProvider | None = None


def checked_members(
    cfg: GlobalStackConfig, exported: list[Any], account_id: str, partition: str
) -> list[dict[str, Any]]:
    """The members' exports, or a ConfigError listing every problem (same rules as the policy pack)."""
    issues = []
    for i, value in enumerate(exported):
        issues.extend(member_config_issues(cfg, i, value, account_id=account_id, partition=partition))
    if not issues:
        issues.extend(duplicate_gateway_issues(cfg, exported))
    if issues:
        raise ConfigError(issues)
    return [{**dict(value), "stack": cfg.members[i].stack} for i, value in enumerate(exported)]


def execution_role_trust(account_id: str) -> dict[str, Any]:
    """Trust policy of the gateway's execution role (service principal UNCONFIRMED [global-gateway-execution-role]).

    Confused-deputy guard as AWS recommends for service roles (IAM User Guide, "The confused deputy
    problem"): only calls on behalf of this account's global inference gateways may assume it.
    """
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            }
        ],
    }


def execution_role_policy(cluster_arns: list[str]) -> dict[str, Any]:
    """Permissions of the execution role: read the member clusters (UNCONFIRMED [global-gateway-execution-role])."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DescribeMemberClustersUnconfirmed",
                "Effect": "Allow",
                "Action": ["sagemaker:DescribeCluster"],
                "Resource": sorted(set(cluster_arns)),
            }
        ],
    }


def invoke_policy(gateway_arn: str) -> dict[str, Any]:
    """What a caller needs to invoke this gateway, and nothing else."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "InvokeGlobalInferenceGateway",
                "Effect": "Allow",
                "Action": list(INVOKE_ACTIONS),
                "Resource": gateway_arn,
            }
        ],
    }


class GlobalInference(pulumi.ComponentResource):
    """The global stack; ``exports`` holds the gateway's id, ARN, endpoint and the invoke policy ARN."""

    exports: dict[str, Any]

    def __init__(self, name: str, args: GlobalInferenceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:index:GlobalInference", name, None, opts)
        cfg = args.config
        child = pulumi.ResourceOptions(parent=self)
        self.exports = {}

        refs = [pulumi.StackReference(f"member-{i}", stack_name=m.stack, opts=child) for i, m in enumerate(cfg.members)]
        identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        members = pulumi.Output.all(identity.account_id, partition, *[r.get_output(MEMBER_EXPORT) for r in refs]).apply(
            lambda xs: checked_members(cfg, list(xs[2:]), xs[0], xs[1])
        )

        if cfg.execution_role_arn is not None:
            role_arn: pulumi.Input[str] = cfg.execution_role_arn
        else:
            role = aws.iam.Role(
                f"{name}-execution-role",
                name=f"{cfg.name_prefix}-global-gateway",
                description="Assumed by the SageMaker Global Inference Gateway to reach its member clusters",
                assume_role_policy=identity.account_id.apply(lambda a: json.dumps(execution_role_trust(a))),
                inline_policies=[
                    aws.iam.RoleInlinePolicyArgs(
                        name="member-clusters",
                        policy=members.apply(
                            lambda ms: json.dumps(execution_role_policy([m["clusterArn"] for m in ms]))
                        ),
                    )
                ],
                tags=cfg.common_tags,
                permissions_boundary=role_boundary_arn(cfg.common_tags, self),
                opts=child,
            )
            role_arn = role.arn

        gateway = GlobalInferenceGateway(
            f"{name}-gateway",
            {
                "name": cfg.name,
                "region": cfg.region,
                "executionRoleArn": role_arn,
                "members": members.apply(members_input),
                "routingWeights": cfg.weights,
                "tags": cfg.common_tags,
                "environment": cfg.environment,
                "accountId": identity.account_id,
                "partition": partition,
                "waitTimeoutSeconds": cfg.wait_timeout_minutes * 60,
                # boto3 in the provider does not see the aws provider's config: pass its credential chain on
                **credential_inputs(),
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=cfg.is_prod,
                custom_timeouts=pulumi.CustomTimeouts(
                    create=f"{cfg.wait_timeout_minutes + 5}m",
                    update=f"{cfg.wait_timeout_minutes + 5}m",
                    delete=f"{cfg.wait_timeout_minutes + 5}m",
                ),
            ),
            provider=args.provider,
        )
        policy = aws.iam.Policy(
            f"{name}-invoke-policy",
            name=f"{cfg.name_prefix}-invoke-global-gateway",
            description=f"Invoke the Global Inference Gateway {cfg.name} (attach to callers)",
            policy=gateway.arn.apply(lambda arn: json.dumps(invoke_policy(arn))),
            tags=cfg.common_tags,
            opts=pulumi.ResourceOptions.merge(child, INVOKE_POLICY_REPLACED),
        )
        self._export("environment", cfg.environment)
        self._export("globalGatewayName", cfg.name)
        self._export("globalGatewayId", gateway.gatewayId)
        self._export("globalGatewayArn", gateway.arn)
        self._export("globalGatewayEndpointUrl", gateway.endpointUrl)
        self._export("globalGatewayRegion", cfg.region)
        self._export("invokePolicyArn", policy.arn)
        self._export("executionRoleArn", role_arn)
        self._export("memberStacks", [m.stack for m in cfg.members])
        self.register_outputs(self.exports)

    def _export(self, key: str, value: Any) -> None:
        self.exports[key] = value
