"""The permissions boundary every IAM role of a stack carries (``hpi-<stack>-role-boundary``).

The deploy role may create and change only roles that carry this boundary (its policy requires it with a
condition on ``iam:PermissionsBoundary``, ``tools.cli.deployer_policy``), so whatever the deploy role writes into a
role's policies, the role can never do more than the boundary allows: the deploy role cannot make a role more
powerful than itself and assume it. ``python -m tools.cli.preview --stack S --out DIR`` writes the boundary's document
(``DIR/iam/boundary-S.json``); an administrator creates it once as a customer managed policy of that name before
the first ``pulumi up`` (docs/first-deploy.md).

One helper for every ``aws.iam.Role`` the components create: ``permissions_boundary=role_boundary_arn(tags, self)``.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_aws as aws

# The tag StackConfig.stack_tags puts on every resource of a stack; its value is the stack name.
STACK_TAG = "hyperpod-inference:stack"


def role_boundary_name(stack: str) -> str:
    """The managed policy's name: the stack's name prefix (``hpi-<stack>``, StackConfig.name_prefix) + a suffix."""
    return f"hpi-{stack}-role-boundary"


def role_boundary_arn(tags: Mapping[str, str], parent: pulumi.Resource) -> pulumi.Output[str] | None:
    """The boundary's ARN in the deploying account, for the stack the tags name; ``None`` outside a stack (a
    component built alone in a unit test has no stack tag — the deploy policy refuses such a role)."""
    stack = tags.get(STACK_TAG)
    if not stack:
        return None
    opts = pulumi.InvokeOutputOptions(parent=parent)
    caller = aws.get_caller_identity_output(opts=opts)
    partition = aws.get_partition_output(opts=opts).partition
    return pulumi.Output.concat("arn:", partition, ":iam::", caller.account_id, ":policy/", role_boundary_name(stack))
