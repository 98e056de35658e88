"""PrivateBucket: an S3 bucket that is private, encrypted and TLS-only — the package's one bucket recipe.

The lifecycle-script bucket, the operator's TLS certificate bucket and the ALB access-log bucket all need
the same baseline (what the ``s3-bucket-private-encrypted`` policy checks): every public-access block
on, bucket-owner-enforced ownership (no ACLs), SSE-S3 by default, and a bucket policy denying any request
not made over TLS. Callers add their own policy statements (e.g. ELB log delivery) and options.
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
