"""Remove what GuardDuty put into a stack's VPC, so that ``pulumi destroy`` can delete the VPC.

    python -m tools.guardduty_cleanup --stack prod [--vpc-id vpc-...] [--dry-run] [--profile NAME]

With GuardDuty Runtime Monitoring for EKS and its *automated agent configuration* on, GuardDuty creates a VPC
endpoint (``com.amazonaws.<region>.guardduty-data``) and a new security group in the VPC of every monitored cluster
(docs.aws.amazon.com/guardduty/latest/ug/how-runtime-monitoring-works-eks.html). Pulumi does not know them: their
network interfaces keep the private subnets in use and the group keeps the VPC in use, so the destroy of the
subnets, the security groups and the VPC fails (awslabs/awsome-distributed-ai@95b939cd
``1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/main.tf:367-385`` runs
``scripts/guardduty-cleanup.sh`` at destroy time for this reason). Run this **after** the cluster layer is gone
(GuardDuty recreates the endpoint while a monitored cluster runs) and before the destroy deletes the network, or
when a destroy has stopped on the subnets.

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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, PartialCredentialsError

from components.config.stackfile import load_stack_file, stack_path
from tools import cli
from tools.preflight_checks import Denied, call

GUARDDUTY_TAG = "GuardDutyManaged"
STACK_TAG = "hyperpod-inference:stack"
POLL_SECONDS = 5.0  # as guardduty-cleanup.sh (sleep 5)
DEFAULT_TIMEOUT_SECONDS = 600.0
EXIT_OK, EXIT_FAIL, EXIT_CONFIG = 0, 1, 2


class CleanupError(Exception):
    """One clear message for a cleanup that could not finish."""


def guardduty_services(region: str) -> list[str]:
    """The endpoint services GuardDuty creates endpoints for (AmazonGuardDutyServiceRolePolicy)."""
    return [f"com.amazonaws.{region}.guardduty-data", f"com.amazonaws.{region}.guardduty-data-fips"]


@dataclass
class CleanupResult:
    vpc_id: str
    endpoints: list[str] = field(default_factory=list)
    security_groups: list[str] = field(default_factory=list)
    dry_run: bool = False


def _tagged(resource: dict[str, Any]) -> bool:
    return any(t.get("Key") == GUARDDUTY_TAG for t in resource.get("Tags") or [])


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


def guardduty_endpoints(ec2: Any, vpc_id: str, region: str) -> list[dict[str, Any]]:
    """GuardDuty's endpoints in the VPC: its services and its tag (every page)."""
    out: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        params: dict[str, Any] = {
            "Filters": [
                {"Name": "vpc-id", "Values": [vpc_id]},
                {"Name": "service-name", "Values": guardduty_services(region)},
                {"Name": "tag-key", "Values": [GUARDDUTY_TAG]},
            ]
        }
        if token:
            params["NextToken"] = token
        page = call(ec2, "describe_vpc_endpoints", **params)
        out.extend(e for e in page.get("VpcEndpoints") or [] if _tagged(e) and e.get("VpcId", vpc_id) == vpc_id)
        token = page.get("NextToken")
        if not token:
            return out


def cleanup(
    ec2: Any,
    vpc_id: str,
    region: str,
    *,
    dry_run: bool = False,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    log: Callable[[str], None] = print,
) -> CleanupResult:
    """Delete GuardDuty's endpoints in ``vpc_id``, wait for their interfaces, delete their tagged security groups."""
    endpoints = guardduty_endpoints(ec2, vpc_id, region)
    ids = sorted(str(e["VpcEndpointId"]) for e in endpoints)
    groups = sorted({str(g["GroupId"]) for e in endpoints for g in e.get("Groups") or []})
    result = CleanupResult(vpc_id, ids, [], dry_run)
    if not ids:
        log(f"{vpc_id}: no GuardDuty-managed VPC endpoint, nothing to do")
        return result
    tagged_groups = []
    if groups:
        described = call(ec2, "describe_security_groups", GroupIds=groups).get("SecurityGroups") or []
        tagged_groups = sorted(str(g["GroupId"]) for g in described if _tagged(g))
    result.security_groups = tagged_groups
    if dry_run:
        log(
            f"{vpc_id}: would delete VPC endpoints {', '.join(ids)} and security groups {', '.join(tagged_groups) or 'none'}"
        )
        return result
    log(f"{vpc_id}: deleting GuardDuty VPC endpoints {', '.join(ids)}")
    failed = call(ec2, "delete_vpc_endpoints", VpcEndpointIds=ids).get("Unsuccessful") or []
    if failed:
        reasons = "; ".join(
            f"{f.get('ResourceId')}: {f.get('Error', {}).get('Code')} {f.get('Error', {}).get('Message', '')}".strip()
            for f in failed
        )
        raise CleanupError(f"DeleteVpcEndpoints refused {reasons}")
    if tagged_groups:
        started = clock()
        while True:
            enis = (
                call(ec2, "describe_network_interfaces", Filters=[{"Name": "group-id", "Values": tagged_groups}]).get(
                    "NetworkInterfaces"
                )
                or []
            )
            if not enis:
                break
            if clock() - started >= timeout:
                raise CleanupError(
                    f"{len(enis)} network interface(s) of {', '.join(tagged_groups)} still exist after {timeout:g}s; "
                    "rerun when they are gone (the endpoints are deleted)"
                )
            log(f"{vpc_id}: {len(enis)} network interface(s) of the endpoints still attached, waiting")
            sleep(POLL_SECONDS)
        for group in tagged_groups:
            log(f"{vpc_id}: deleting GuardDuty security group {group}")
            call(ec2, "delete_security_group", GroupId=group)
    untagged = sorted(set(groups) - set(tagged_groups))
    if untagged:
        log(f"{vpc_id}: left {', '.join(untagged)} alone (no {GUARDDUTY_TAG} tag: not GuardDuty's)")
    return result


def main(argv: list[str] | None = None, *, ec2: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.guardduty_cleanup", description=__doc__.split("\n\n")[0])
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
            ec2 = session.client("ec2", region_name=region)
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
