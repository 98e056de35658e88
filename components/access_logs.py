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
