"""AccessLogBucket: the destination of S3 server access logs, and the logging of the stack's buckets into it.

FSBP S3.9 asks every general purpose bucket to log its requests. The TLS-certificate bucket (written by the
operator) and the lifecycle-script bucket are created inside other components, so this component takes their
names and registers one ``aws.s3.BucketLogging`` per bucket, each under its own key prefix.

The log bucket is a :class:`~components.private_bucket.PrivateBucket` (private, SSE-S3, TLS-only) whose policy
lets only the S3 logging service write, and only for buckets of this account (Amazon S3 user guide, "Enabling
Amazon S3 server access logging" → "Grant permissions to the logging service principal using a bucket
policy": ``logging.s3.amazonaws.com``, ``s3:PutObject``, ``aws:SourceAccount``; ACL grants are impossible with
BucketOwnerEnforced ownership). Destination buckets must not use SSE-KMS for server access logs (same page):
PrivateBucket's SSE-S3 fits. The log bucket itself does not log (a loop), and expires logs after the
configured retention.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from .private_bucket import PrivateBucket, PrivateBucketArgs

# Elastic Load Balancing's access-log writers (ELB user guide, "Enable access logs for your Application Load
# Balancer", step 2 "Attach a policy to your S3 bucket",
# https://docs.aws.amazon.com/elasticloadbalancing/latest/application/enable-access-logging.html): in Regions
# available before August 2022 the bucket policy names the Region's ELB account (``arn:<partition>:iam::<id>:root``);
# in Regions available as of August 2022 or later, the log delivery service principal. Neither documented policy
# carries a condition. The IDs are the page's table (the same as terraform-provider-aws's ``aws_elb_service_account``).
ELB_LOG_ACCOUNTS: dict[str, str] = {
    "us-east-1": "127311923021",
    "us-east-2": "033677994240",
    "us-west-1": "027434742980",
    "us-west-2": "797873946194",
    "af-south-1": "098369216593",
    "ap-east-1": "754344448648",
    "ap-southeast-3": "589379963580",
    "ap-south-1": "718504428378",
    "ap-northeast-3": "383597477331",
    "ap-northeast-2": "600734575887",
    "ap-southeast-1": "114774131450",
    "ap-southeast-2": "783225319266",
    "ap-northeast-1": "582318560864",
    "ca-central-1": "985666609251",
    "eu-central-1": "054676820928",
    "eu-west-1": "156460612806",
    "eu-west-2": "652711504416",
    "eu-south-1": "635631232127",
    "eu-west-3": "009996457667",
    "eu-north-1": "897822967062",
    "me-south-1": "076674570225",
    "sa-east-1": "507241528517",
    "us-gov-west-1": "048591011584",
    "us-gov-east-1": "190560391635",
    "cn-north-1": "638102146993",
    "cn-northwest-1": "037604701340",
}
ELB_LOG_DELIVERY_SERVICE = "logdelivery.elasticloadbalancing.amazonaws.com"


def alb_log_delivery_statement(
    bucket_arn: str, prefix: str, account_id: str, region: str, partition: str
) -> dict[str, Any]:
    """Let ELB write a load balancer's access logs under ``<prefix>/AWSLogs/<account>/``: the documented policy of
    ``region`` (its ELB account before August 2022, the service principal after), with no condition.

    Why no ``aws:SourceAccount`` (issue 47 item 4): neither documented policy has one, and ELB writes a test object
    when access logs are turned on, so a key it does not send fails the load balancer's create. The resource path
    keeps the grant to this account's logs.
    """
    elb_account = ELB_LOG_ACCOUNTS.get(region)
    principal = (
        {"AWS": f"arn:{partition}:iam::{elb_account}:root"}
        if elb_account is not None
        else {"Service": ELB_LOG_DELIVERY_SERVICE}
    )
    return {
        "Sid": "AlbLogDeliveryWrite",
        "Effect": "Allow",
        "Principal": principal,
        "Action": "s3:PutObject",
        "Resource": f"{bucket_arn}/{prefix}/AWSLogs/{account_id}/*",
    }


def log_delivery_statement(bucket_arn: str, account_id: str) -> dict[str, Any]:
    """S3 server access log delivery into ``bucket_arn``, for source buckets of ``account_id`` only."""
    return {
        "Sid": "S3ServerAccessLogsPolicy",
        "Effect": "Allow",
        "Principal": {"Service": "logging.s3.amazonaws.com"},
        "Action": "s3:PutObject",
        "Resource": f"{bucket_arn}/*",
        "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
    }


@dataclass(frozen=True)
class AccessLogBucketArgs:
    name_prefix: str
    sources: dict[str, pulumi.Input[str]] = field(
        metadata={"doc": "Key prefix -> name of a bucket whose server access logs go here."}
    )
    retention_days: int = 365
    protect: bool = False
    tags: dict[str, str] = field(default_factory=dict)


class AccessLogBucket(pulumi.ComponentResource):
    """The S3 server access log bucket and the ``BucketLogging`` of each source bucket."""

    bucket_name: pulumi.Output[str]

    def __init__(self, name: str, args: AccessLogBucketArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:storage:AccessLogBucket", name, None, opts)
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        logs = PrivateBucket(
            f"{name}-bucket",
            PrivateBucketArgs(
                bucket_prefix=f"{args.name_prefix}-s3-access-logs-",
                protect=args.protect,
                versioned=False,
                expiration_days=args.retention_days,
                extra_statements=lambda arn: account_id.apply(lambda acct: [log_delivery_statement(arn, acct)]),
                tags=args.tags,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        for prefix, source in args.sources.items():
            aws.s3.BucketLogging(
                f"{name}-{prefix}",
                bucket=source,
                target_bucket=logs.bucket_name,
                target_prefix=f"{prefix}/",
                # Delivery needs the bucket policy above in place.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[logs]),
            )
        self.bucket_name = logs.bucket_name
        self.register_outputs({"bucketName": self.bucket_name})
