"""PrivateBucket: an S3 bucket that is private, encrypted and TLS-only — the package's one bucket recipe.

The lifecycle-script bucket, the operator's TLS certificate bucket and the ALB access-log bucket all need
the same baseline (what the ``s3-bucket-private-encrypted`` policy checks): every public-access block
on, bucket-owner-enforced ownership (no ACLs), SSE-S3 by default, and a bucket policy denying any request
not made over TLS. Callers add their own policy statements (e.g. ELB log delivery) and options.

Two more baselines (AWS Foundational Security Best Practices):

- S3.13 "S3 general purpose buckets should have Lifecycle configurations": a versioned bucket, or one with
  ``expiration_days``, gets a lifecycle configuration — incomplete multipart uploads aborted after 7 days,
  noncurrent versions expired after ``noncurrent_version_days`` (TLS certificates and lifecycle scripts are
  rewritten on every deploy; old versions are only a rollback window), current objects expired after
  ``expiration_days`` (log buckets). A bucket has exactly one lifecycle configuration
  (PutBucketLifecycleConfiguration replaces it), so an unversioned bucket without ``expiration_days`` is left
  to its caller (the ALB log bucket's expiry lives in components/ingress.py).
- S3.9 "S3 general purpose bucket server access logging should be enabled": the stack's buckets log into one
  destination, components/access_logs.py (``AccessLogBucket``), which registers the ``aws.s3.BucketLogging`` of
  each bucket by name — the buckets are created inside other components, so the logging lives next to the
  destination rather than in every caller.

``force_destroy`` is the inverse of ``protect``: outside prod a ``pulumi destroy`` empties the bucket (the TLS
and lifecycle buckets get objects written by the operator and by this package), in prod the bucket is
protected and keeps its objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from .iam_documents import tls_only_statement

Statement = dict[str, Any]


@dataclass(frozen=True)
class PrivateBucketArgs:
    bucket: pulumi.Input[str] | None = field(
        default=None, metadata={"doc": "Exact bucket name (or use bucket_prefix)."}
    )
    bucket_prefix: str | None = None
    protect: bool = field(default=False, metadata={"doc": "Protect the bucket from deletion (prod)."})
    versioned: bool = True
    bucket_key_enabled: bool = False
    extra_statements: Callable[[str], pulumi.Input[Sequence[Statement]]] | None = field(
        default=None, metadata={"doc": "Given the bucket ARN, further bucket-policy statements."}
    )
    noncurrent_version_days: int = field(
        default=30, metadata={"doc": "Days a noncurrent object version is kept (versioned buckets)."}
    )
    expiration_days: int | None = field(default=None, metadata={"doc": "Expire current objects (log buckets)."})
    tags: dict[str, str] = field(default_factory=dict)


class PrivateBucket(pulumi.ComponentResource):
    """A private, SSE-S3 encrypted, TLS-only S3 bucket (versioned unless told otherwise)."""

    bucket: aws.s3.Bucket
    bucket_name: pulumi.Output[str]
    arn: pulumi.Output[str]

    def __init__(self, name: str, args: PrivateBucketArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:storage:PrivateBucket", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        bucket = aws.s3.Bucket(
            name,
            bucket=args.bucket,
            bucket_prefix=args.bucket_prefix,
            force_destroy=not args.protect,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        public_access = aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        aws.s3.BucketOwnershipControls(
            f"{name}-ownership",
            bucket=bucket.id,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
            opts=child,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-sse",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="AES256"
                    ),
                    bucket_key_enabled=args.bucket_key_enabled or None,
                )
            ],
            opts=child,
        )
        if args.versioned:
            aws.s3.BucketVersioning(
                f"{name}-versioning",
                bucket=bucket.id,
                versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
                opts=child,
            )

        if args.versioned or args.expiration_days is not None:
            self._lifecycle(name, args, bucket)

        def policy_document(arn: str) -> pulumi.Input[str]:
            extra = args.extra_statements(arn) if args.extra_statements is not None else []
            return pulumi.Output.from_input(extra).apply(
                lambda statements: json.dumps(
                    {"Version": "2012-10-17", "Statement": [*statements, tls_only_statement(arn)]}
                )
            )

        aws.s3.BucketPolicy(
            f"{name}-policy",
            bucket=bucket.id,
            policy=bucket.arn.apply(policy_document),
            # S3 rejects a bucket policy while the public-access block is still being applied.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[public_access]),
        )
        self.bucket = bucket
        self.bucket_name = bucket.bucket
        self.arn = bucket.arn
        self.register_outputs({"bucketName": self.bucket_name, "arn": self.arn})

    def _lifecycle(self, name: str, args: PrivateBucketArgs, bucket: aws.s3.Bucket) -> None:
        lc = aws.s3
        rules = [
            lc.BucketLifecycleConfigurationRuleArgs(
                id="abort-incomplete-multipart-uploads",
                status="Enabled",
                filter=lc.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                abort_incomplete_multipart_upload=lc.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                    days_after_initiation=7
                ),
            )
        ]
        if args.versioned:
            rules.append(
                lc.BucketLifecycleConfigurationRuleArgs(
                    id="expire-noncurrent-versions",
                    status="Enabled",
                    filter=lc.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    noncurrent_version_expiration=lc.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                        noncurrent_days=args.noncurrent_version_days
                    ),
                )
            )
        if args.expiration_days is not None:
            rules.append(
                lc.BucketLifecycleConfigurationRuleArgs(
                    id="expire-objects",
                    status="Enabled",
                    filter=lc.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    expiration=lc.BucketLifecycleConfigurationRuleExpirationArgs(days=args.expiration_days),
                )
            )
        lc.BucketLifecycleConfiguration(
            f"{name}-lifecycle-rules", bucket=bucket.id, rules=rules, opts=pulumi.ResourceOptions(parent=self)
        )
