"""Remove what GuardDuty put into a stack's VPC, so that ``pulumi destroy`` can delete the VPC.

    python -m tools.preflight.guardduty_cleanup --stack prod [--vpc-id vpc-...] [--dry-run] [--profile NAME]

With GuardDuty Runtime Monitoring for EKS and its *automated agent configuration* on, GuardDuty creates a VPC
endpoint (``com.amazonaws.<region>.guardduty-data``) and a new security group in the VPC of every monitored cluster
(docs.aws.amazon.com/guardduty/latest/ug/how-runtime-monitoring-works-eks.html). Pulumi does not know them: their
network interfaces keep the private subnets in use and the group keeps the VPC in use, so the destroy of the
subnets, the security groups and the VPC fails (awslabs/awsome-distributed-ai@95b939cd
``1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/main.tf:367-385`` runs
``scripts/guardduty-cleanup.sh`` at destroy time for this reason). Run this **after** the cluster layer is gone
(GuardDuty recreates the endpoint while a monitored cluster runs) and before the destroy deletes the network, or
when a destroy has stopped on the subnets. A stack that creates its VPC runs the same cleanup itself at destroy,
after the EKS cluster and before the subnets (``components/destroy_waits.py``, GuardDutyEndpointCleanup); this
command is for a destroy that stopped, or a VPC the stack does not create.

What it deletes, and only that (read-only with ``--dry-run``):

1. the VPC endpoints of the VPC whose service is ``com.amazonaws.<region>.guardduty-data`` (or ``-fips``) and that
   carry the tag key ``GuardDutyManaged``: GuardDuty's service-linked role may create endpoints only with that tag,
   and only for those services (AWS managed policy AmazonGuardDutyServiceRolePolicy, statement
   ``GuardDutyCreateVpcEndpointPolicy``);
2. after their network interfaces are gone (polled every 5 s, as the AWS script does, up to ``--timeout``), the
   security groups of those endpoints that carry the ``GuardDutyManaged`` tag (statement
   ``GuardDutyCreateSecurityGroupPolicy``). A group without the tag is left alone, unlike the AWS script, which
   deletes every group of the endpoints.

The VPC is ``--vpc-id`` (``pulumi stack output vpcId``), else the one VPC tagged ``hyperpod-inference:stack=<stack>``
and ``managed-by=pulumi`` (the stack's common tags). IAM: ``ec2:DescribeVpcs``, ``ec2:DescribeVpcEndpoints``,
``ec2:DescribeNetworkInterfaces``, ``ec2:DeleteVpcEndpoints``, ``ec2:DeleteSecurityGroup``; a denied call names
its action. Exit codes: 0 done (or nothing to do), 1 a call failed or the wait timed out, 2 no such stack file.
"""

from __future__ import annotations

import argparse
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, PartialCredentialsError

from components import aws_calls
from components.config.stackfile import load_stack_file, stack_path
from components.destroy_waits import (
    DEFAULT_TIMEOUT_SECONDS,
    GUARDDUTY_TAG,
    POLL_SECONDS,
    CleanupError,
    CleanupResult,
    guardduty_endpoints,
    guardduty_services,
)
from components.destroy_waits import cleanup as _cleanup
from tools.preflight.checks import Denied, call, denied_named
from tools.report import cli

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "GUARDDUTY_TAG",
    "POLL_SECONDS",
    "CleanupError",
    "CleanupResult",
    "cleanup",
    "guardduty_endpoints",
    "guardduty_services",
    "stack_vpc",
]

STACK_TAG = "hyperpod-inference:stack"
EXIT_OK, EXIT_FAIL, EXIT_CONFIG = 0, 1, 2


def cleanup(ec2: Any, vpc_id: str, region: str, **kwargs: Any) -> CleanupResult:
    """:func:`components.destroy_waits.cleanup` (what the destroy runs itself), with an
    access-denied error named by its IAM action (:class:`tools.preflight.checks.Denied`)."""
    with denied_named(ec2):
        return _cleanup(ec2, vpc_id, region, **kwargs)


def stack_vpc(ec2: Any, stack: str) -> str:
    """The one VPC this stack created (its common tags)."""
    found = (
        call(
            ec2,
            "describe_vpcs",
            Filters=[{"Name": f"tag:{STACK_TAG}", "Values": [stack]}, {"Name": "tag:managed-by", "Values": ["pulumi"]}],
        ).get("Vpcs")
        or []
    )
    if len(found) != 1:
        raise CleanupError(
            f"{len(found)} VPCs are tagged {STACK_TAG}={stack}, managed-by=pulumi; pass --vpc-id "
            "(`pulumi stack output vpcId`)"
        )
    return str(found[0]["VpcId"])


def main(argv: list[str] | None = None, *, ec2: Any = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.preflight.guardduty_cleanup", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--stack", required=True, help="stack name: stacks/Pulumi.<stack>.yaml (its aws:region)")
    parser.add_argument("--vpc-id", help="the stack's VPC (`pulumi stack output vpcId`); default: found by its tags")
    parser.add_argument("--region", help="override the stack's aws:region")
    parser.add_argument("--profile", help="AWS profile (default: the boto3 credential chain)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="seconds to wait for ENIs")
    args = parser.parse_args(argv)
    path = stack_path(args.stack)
    if not path.exists():
        print(f"no stack file {path}")
        return EXIT_CONFIG
    region = args.region or str(load_stack_file(path).get("aws:region") or "")
    if not region:
        print(f"{path} sets no aws:region; pass --region")
        return EXIT_CONFIG
    return _run(args, region, ec2)


def _run(args: argparse.Namespace, region: str, ec2: Any) -> int:
    """The AWS part: every failure becomes one message and exit 1."""
    try:
        if ec2 is None:
            session = boto3.Session(profile_name=args.profile) if args.profile else boto3.Session()
            ec2 = session.client("ec2", region_name=region, config=aws_calls.TOOL_RETRIES)
        vpc_id = args.vpc_id or stack_vpc(ec2, args.stack)
        cleanup(ec2, vpc_id, region, dry_run=args.dry_run, timeout=args.timeout)
    except Denied as err:
        print(f"access denied: grant {err.action} to the credentials running the cleanup: {err.message}")
    except CleanupError as err:
        print(str(err))
    except (NoCredentialsError, PartialCredentialsError):
        print("no AWS credentials found: configure them or pass --profile, then rerun")
    except (ClientError, BotoCoreError) as err:
        print(f"AWS call failed: {err}")
    else:
        return EXIT_OK
    return EXIT_FAIL


if __name__ == "__main__":
    cli.run(main)
