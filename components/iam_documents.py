"""IAM policy documents the operator layer writes, as plain functions of resolved values.

Kept free of Pulumi so the same functions render the documents the program registers and the documents
the tests lint with parliament (``tests/iam_lint.py``): one source, nothing hand-copied into tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

IAM_DIR = Path(__file__).resolve().parent / "iam"
LBC_POLICY_FILE = IAM_DIR / "aws-load-balancer-controller-v2.13.0.json"
# Where that file comes from, byte for byte (components/iam/README.md):
LBC_POLICY_SOURCE = (
    "kubernetes-sigs/aws-load-balancer-controller@73980cf11d1c79c310f4f14a089554f58b165d7d"
    ":docs/install/iam_policy.json (tag v2.13.0; the same blob at v2.13.1-v2.13.4, chart 1.13.2 included)"
)

Document = dict[str, Any]


def load_lbc_policy(partition: str = "aws") -> Document:
    """The AWS Load Balancer Controller's published policy, verbatim (``LBC_POLICY_SOURCE``) in ``aws``; in another
    partition its ARNs name that partition, as the controller's own ``docs/install/iam_policy_us-gov.json`` names
    ``arn:aws-us-gov:`` where this file names ``arn:aws:``."""
    text = LBC_POLICY_FILE.read_text(encoding="utf-8")
    doc: Document = json.loads(text.replace('"arn:aws:', f'"arn:{partition}:'))
    return doc


def aws_managed_policy_arn(partition: str, name: str) -> str:
    """``arn:<partition>:iam::aws:policy/<name>``: an AWS managed policy in the provider's partition."""
    return f"arn:{partition}:iam::aws:policy/{name}"


def eks_access_policy_arn(partition: str, name: str) -> str:
    """``arn:<partition>:eks::aws:cluster-access-policy/<name>``: an EKS access policy (EKS user guide,
    "Associate access policies with access entries")."""
    return f"arn:{partition}:eks::aws:cluster-access-policy/{name}"


def irsa_statement(oidc_provider_arn: str, oidc_issuer: str, subject: str | Sequence[str]) -> Document:
    """Allow Kubernetes service accounts (``system:serviceaccount:<ns>:<name>``; ``*`` allowed) to assume.

    ``subject`` is one subject or a list of them (any may match). ``aud`` is pinned to STS so a token minted
    for another audience cannot be replayed; wildcards in a subject switch the operator to ``StringLike``
    (exact subjects stay ``StringEquals``).
    """
    subjects = [subject] if isinstance(subject, str) else list(subject)
    op = "StringLike" if any("*" in s for s in subjects) else "StringEquals"
    condition: Document = {op: {f"{oidc_issuer}:sub": subjects[0] if len(subjects) == 1 else subjects}}
    condition.setdefault("StringEquals", {})[f"{oidc_issuer}:aud"] = "sts.amazonaws.com"
    return {
        "Effect": "Allow",
        "Principal": {"Federated": oidc_provider_arn},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": condition,
    }


def irsa_trust(oidc_provider_arn: str, oidc_issuer: str, subjects: list[str]) -> Document:
    return {
        "Version": "2012-10-17",
        "Statement": [irsa_statement(oidc_provider_arn, oidc_issuer, s) for s in subjects],
    }


def sagemaker_and_irsa_trust(oidc_provider_arn: str, oidc_issuer: str, subject: str | Sequence[str]) -> Document:
    """Trust SageMaker and the given service accounts, as AWS documents the operator execution role's trust.

    The SageMaker statement carries no condition, exactly as AWS's page has it (SageMaker developer guide,
    "IAM trust relationship issue", https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-
    deployment-ts-trust.html; the awsome-distributed-training Terraform has none either): no source shows SageMaker
    sends ``aws:SourceAccount`` when it assumes this role, and a condition on a key it does not send fails the
    operator's AssumeRole (issue 47 item 4; the same reasoning as the cluster's execution role, issue 33 item 1).

    With no subjects (an empty list) only SageMaker is trusted: no service account may assume the role.
    """
    subjects = [subject] if isinstance(subject, str) else list(subject)
    statements: list[Document] = [
        {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ]
    if subjects:
        statements.append(irsa_statement(oidc_provider_arn, oidc_issuer, subjects))
    return {"Version": "2012-10-17", "Statement": statements}


GATED_MODEL_SA_PREFIX = "hyperpod-inference-service-account"


def gated_model_subjects(namespaces: Iterable[str]) -> list[str]:
    """The JumpStart gated-model role's service accounts: ``hyperpod-inference-service-account*`` per namespace.

    AWS documents the trust as ``system:serviceaccount:*:hyperpod-inference-service-account*`` (operator-facts
    §10, from the add-on setup page D6): the operator names the model pods' service accounts with that prefix.
    A pod can only run as a service account of its own namespace (Kubernetes: ``spec.serviceAccountName``
    names a ServiceAccount in the pod's namespace), so the namespaces this stack deploys endpoints into bound
    who needs the role; ``*`` would let a pod in any namespace that gets such a service account assume it.
    """
    return [f"system:serviceaccount:{ns}:{GATED_MODEL_SA_PREFIX}*" for ns in sorted(set(namespaces))]


def keda_policy(region: str, account_id: str, partition: str) -> Document:
    """What KEDA's CloudWatch and Amazon Managed Prometheus scalers call (operator-facts §10).

    The CloudWatch read actions support no resource-level scoping, hence ``*``; AMP queries are scoped to
    this account's workspaces in this region.
    """
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "CloudWatchMetricsRead",
                "Effect": "Allow",
                "Action": ["cloudwatch:GetMetricData", "cloudwatch:GetMetricStatistics", "cloudwatch:ListMetrics"],
                "Resource": "*",
            },
            {
                "Sid": "ManagedPrometheusQuery",
                "Effect": "Allow",
                "Action": ["aps:QueryMetrics", "aps:GetLabels", "aps:GetSeries", "aps:GetMetricMetadata"],
                "Resource": f"arn:{partition}:aps:{region}:{account_id}:workspace/*",
            },
        ],
    }


def s3_csi_policy(bucket_names: list[str], partition: str) -> Document:
    """Mountpoint read-only access to the model buckets (weights are read, never written, by inference).

    ``partition`` is the provider's (``aws.get_partition``): ``aws``, ``aws-us-gov`` or ``aws-cn``.

    Follows the Mountpoint for Amazon S3 IAM recommendations, without the write/delete actions.
    """
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "MountpointListModelBuckets",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": [f"arn:{partition}:s3:::{b}" for b in bucket_names],
            },
            {
                "Sid": "MountpointReadModelObjects",
                "Effect": "Allow",
                "Action": "s3:GetObject",
                "Resource": [f"arn:{partition}:s3:::{b}/*" for b in bucket_names],
            },
        ],
    }


def tls_only_statement(bucket_arn: str) -> dict[str, Any]:
    """Deny any request to the bucket that does not use TLS (every bucket of the package carries it)."""
    return {
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [bucket_arn, f"{bucket_arn}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
