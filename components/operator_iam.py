"""OperatorIam: every IAM role, the TLS certificate bucket and the EKS access entry the inference add-on needs.

Why IRSA (not EKS Pod Identity) for every role here: the operator's execution role trust is documented as
OIDC web identity for ``hyperpod-inference-controller-manager`` (D6, operator-facts §10), the add-on's KEDA
values take ``auth.aws.irsa`` and its ALB values a role ARN annotated on the service account it creates, and
the JumpStart gated-model role must trust a *wildcard* of service accounts (``<ns>:hyperpod-inference-service-
account*``), which Pod Identity associations (one namespace + one service account each) cannot express.
One mechanism for the whole layer keeps the trust policies reviewable in one place.

Roles and the service accounts they trust (operator-facts §10):

=====================  ===============================================================  =====================
role                   service account                                                  permissions
=====================  ===============================================================  =====================
execution (operator)   hyperpod-inference-system:hyperpod-inference-controller-manager  AmazonSageMakerHyper-
                       (+ sagemaker.amazonaws.com)                                      PodInferenceAccess
JumpStart gated model  <endpoint ns>:hyperpod-inference-service-account* (+ SageMaker)   ...GatedModelAccess
gateway certificates   hyperpod-inference-system:inference-gateway-controller           ...InferenceGatewayAccess
ALB controller         <ns>:aws-load-balancer-controller                                LBC iam_policy v2.13.0
KEDA                   <ns>:keda-operator                                               CloudWatch + AMP read
=====================  ===============================================================  =====================

``<ns>`` is ``hyperpod-inference-system`` when the add-on bundles the controller, ``kube-system`` /
``keda`` when this package installs the chart. Nothing is created for ``existing`` controllers.
``<endpoint ns>``: one subject per namespace of ``endpoints[]`` (AWS documents ``*`` for the namespace;
:func:`components.iam_documents.gated_model_subjects` says why the stack's namespaces bound it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_aws as aws

from components.role_boundary import role_boundary_arn

from . import iam_documents as docs
from .private_bucket import PrivateBucket, PrivateBucketArgs

OPERATOR_NAMESPACE = "hyperpod-inference-system"
EXECUTION_ROLE_PREFIX = "SageMakerHyperPodInference"  # required by the add-on's Helm template (isAddOn)
OPERATOR_SA = f"system:serviceaccount:{OPERATOR_NAMESPACE}:hyperpod-inference-controller-manager"
GATEWAY_SA = f"system:serviceaccount:{OPERATOR_NAMESPACE}:inference-gateway-controller"
# Where each controller's service account lives, by install mode (operator-facts §10 for "bundled").
LBC_SERVICE_ACCOUNT = {
    "bundled": (OPERATOR_NAMESPACE, "aws-load-balancer-controller"),
    "helm": ("kube-system", "aws-load-balancer-controller"),
}
KEDA_SERVICE_ACCOUNT = {"bundled": (OPERATOR_NAMESPACE, "keda-operator"), "helm": ("keda", "keda-operator")}

# AWS managed policies, by name: their ARNs take the provider's partition (aws, aws-us-gov, aws-cn).
INFERENCE_ACCESS = "AmazonSageMakerHyperPodInferenceAccess"
GATED_MODEL_ACCESS = "AmazonSageMakerHyperPodGatedModelAccess"
GATEWAY_ACCESS = "AmazonSageMakerHyperPodInferenceGatewayAccess"
# The EKS access policy the operator's managed policy lets it associate (D8); we create the access entry
# it attaches to and the association itself, so the operator's first reconcile does not depend on it.
INFERENCE_MONITORING_ACCESS_POLICY = "AmazonSagemakerHyperpodInferenceMonitoringPolicy"

Mode = Literal["bundled", "helm", "existing"]


@dataclass(frozen=True)
class OperatorIamArgs:
    stack: str
    name_prefix: str
    region: str
    account_id: pulumi.Input[str]
    cluster_name: pulumi.Input[str]
    oidc_provider_arn: pulumi.Input[str]
    oidc_provider_url: pulumi.Input[str] = field(metadata={"doc": "Issuer without https://"})
    alb_mode: Mode = "bundled"
    keda_mode: Mode = "bundled"
    gateway_enabled: bool = False
    gated_model_namespaces: Sequence[str] = field(
        default=(), metadata={"doc": "The endpoints' namespaces: the gated-model role trusts their service accounts."}
    )
    protect_bucket: bool = False
    tags: dict[str, str] = field(default_factory=dict)


class OperatorIam(pulumi.ComponentResource):
    """Roles, TLS bucket and access entry for the HyperPod Inference Operator add-on."""

    execution_role_arn: pulumi.Output[str]
    gated_model_role_arn: pulumi.Output[str]
    gateway_role_arn: pulumi.Output[str] | None
    alb_role_arn: pulumi.Output[str] | None
    keda_role_arn: pulumi.Output[str] | None
    tls_bucket_name: pulumi.Output[str]
    dependencies: list[pulumi.Resource]

    def __init__(self, name: str, args: OperatorIamArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:operator:OperatorIam", name, None, opts)
        self._args = args
        self.dependencies = []
        self._partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        self.execution_role_arn = self._execution_role(name, args)
        self.gated_model_role_arn = self._gated_model_role(name, args)
        self.gateway_role_arn = None
        if args.gateway_enabled:
            # Must exist before the add-on installs the gateway controller (D4).
            self.gateway_role_arn = self._irsa_role(
                f"{name}-gateway", f"{args.name_prefix}-inference-gateway", GATEWAY_SA, [self._managed(GATEWAY_ACCESS)]
            )
        self.alb_role_arn = self._load_balancer_controller_role(name, args) if args.alb_mode != "existing" else None
        self.keda_role_arn = self._keda_role(name, args) if args.keda_mode != "existing" else None
        self.tls_bucket_name = self._tls_bucket(name, args)
        self._execution_access_entry(name, args, self.execution_role_arn)

        self.register_outputs(
            {
                "executionRoleArn": self.execution_role_arn,
                "gatedModelRoleArn": self.gated_model_role_arn,
                "gatewayRoleArn": self.gateway_role_arn,
                "albRoleArn": self.alb_role_arn,
                "kedaRoleArn": self.keda_role_arn,
                "tlsBucketName": self.tls_bucket_name,
            }
        )

    def _execution_role(self, name: str, args: OperatorIamArgs) -> pulumi.Output[str]:
        """The operator's execution role: exact prefix, SageMaker + controller-manager trust, AWS managed policy."""
        return self._role(
            f"{name}-execution",
            f"{EXECUTION_ROLE_PREFIX}-{args.stack}",
            "HyperPod Inference Operator execution role (add-on executionRoleArn).",
            pulumi.Output.all(args.oidc_provider_arn, args.oidc_provider_url).apply(
                lambda v: docs.sagemaker_and_irsa_trust(v[0], v[1], OPERATOR_SA)
            ),
            [self._managed(INFERENCE_ACCESS)],
        )

    def _gated_model_role(self, name: str, args: OperatorIamArgs) -> pulumi.Output[str]:
        """Downloads gated JumpStart models, assumable from the endpoints' namespaces only."""
        return self._role(
            f"{name}-jumpstart-gated",
            f"{args.name_prefix}-jumpstart-gated-models",
            "Downloads gated JumpStart models for inference pods (add-on jumpstartGatedModelDownloadRoleArn).",
            pulumi.Output.all(args.oidc_provider_arn, args.oidc_provider_url).apply(
                lambda v: docs.sagemaker_and_irsa_trust(
                    v[0], v[1], docs.gated_model_subjects(args.gated_model_namespaces)
                )
            ),
            [self._managed(GATED_MODEL_ACCESS)],
        )

    def _load_balancer_controller_role(self, name: str, args: OperatorIamArgs) -> pulumi.Output[str]:
        """The controller's documented policy (components/iam/) on an IRSA role of its service account."""
        ns, sa = LBC_SERVICE_ACCOUNT[args.alb_mode]
        lbc_policy = aws.iam.Policy(
            f"{name}-lbc-policy",
            name=f"{args.name_prefix}-aws-load-balancer-controller",
            description="AWS Load Balancer Controller v2.13.0 documented policy (components/iam/).",
            policy=self._partition.apply(lambda p: json.dumps(docs.load_lbc_policy(p))),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return self._irsa_role(
            f"{name}-lbc",
            f"{args.name_prefix}-aws-load-balancer-controller",
            f"system:serviceaccount:{ns}:{sa}",
            [lbc_policy.arn],
        )

    def _keda_role(self, name: str, args: OperatorIamArgs) -> pulumi.Output[str]:
        """KEDA's CloudWatch and Amazon Managed Prometheus scalers (read only), on an IRSA role."""
        ns, sa = KEDA_SERVICE_ACCOUNT[args.keda_mode]
        keda_policy = aws.iam.Policy(
            f"{name}-keda-policy",
            name=f"{args.name_prefix}-keda-operator",
            description="KEDA CloudWatch and Amazon Managed Prometheus scalers (read only).",
            policy=pulumi.Output.all(args.account_id, self._partition).apply(
                lambda v: json.dumps(docs.keda_policy(args.region, v[0], v[1]))
            ),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return self._irsa_role(
            f"{name}-keda",
            f"{args.name_prefix}-keda-operator",
            f"system:serviceaccount:{ns}:{sa}",
            [keda_policy.arn],
        )

    def _execution_access_entry(self, name: str, args: OperatorIamArgs, execution: pulumi.Output[str]) -> None:
        """EKS access entry for the execution role (HyperPod creates its own entries: ClusterMetadata
        EksRoleAccessEntries / SlrAccessEntry, so none are created for HyperPod here)."""
        entry = aws.eks.AccessEntry(
            f"{name}-execution-access",
            cluster_name=args.cluster_name,
            principal_arn=execution,
            type="STANDARD",
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        assoc = aws.eks.AccessPolicyAssociation(
            f"{name}-execution-monitoring",
            cluster_name=args.cluster_name,
            principal_arn=execution,
            policy_arn=self._partition.apply(
                lambda p: docs.eks_access_policy_arn(p, INFERENCE_MONITORING_ACCESS_POLICY)
            ),
            access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[entry]),
        )
        self.dependencies.extend([entry, assoc])

    def _managed(self, policy_name: str) -> pulumi.Output[str]:
        """An AWS managed policy's ARN in the provider's partition."""
        return self._partition.apply(lambda p: docs.aws_managed_policy_arn(p, policy_name))

    def _role(
        self,
        resource_name: str,
        role_name: str,
        description: str,
        trust: pulumi.Output[docs.Document],
        policy_arns: list[pulumi.Input[str]],
    ) -> pulumi.Output[str]:
        """The role and its policy attachments; returns the role's ARN as an Output that resolves only once
        every attachment exists. Whatever is built from it (the add-on's values, a Helm chart's IRSA
        annotation) then waits for the role's permissions, not only for the role: IAM accepts a user of a
        role created in parallel with its attachments, which then acts without them (issue 28;
        policies/readiness.yaml ordering rule iam-role-grants-before-its-users)."""
        role = aws.iam.Role(
            resource_name,
            name=role_name,
            description=description,
            assume_role_policy=trust.apply(json.dumps),
            max_session_duration=3600,
            tags=self._args.tags,
            permissions_boundary=role_boundary_arn(self._args.tags, self),
            opts=pulumi.ResourceOptions(parent=self),
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{resource_name}-policy-{i}",
                role=role.name,
                policy_arn=arn,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for i, arn in enumerate(policy_arns)
        ]
        self.dependencies.extend(attachments)
        self.dependencies.append(role)
        granted: pulumi.Output[str] = pulumi.Output.all(role.arn, *[a.id for a in attachments]).apply(
            lambda values: str(values[0])
        )
        return granted

    def _irsa_role(
        self, resource_name: str, role_name: str, subject: str, policy_arns: list[pulumi.Input[str]]
    ) -> pulumi.Output[str]:
        a = self._args
        trust = pulumi.Output.all(a.oidc_provider_arn, a.oidc_provider_url).apply(
            lambda v: docs.irsa_trust(v[0], v[1], [subject])
        )
        return self._role(resource_name, role_name, f"IRSA for {subject}", trust, policy_arns)

    def _tls_bucket(self, name: str, args: OperatorIamArgs) -> pulumi.Output[str]:
        """``hyperpod-tls-<stack>-<account>``: the managed policy only covers ``hyperpod-tls*`` buckets (D6/D8).

        Private (public access block, bucket-owner-enforced), SSE-S3 encrypted (SSE-KMS with a customer key
        would need a key policy for the operator role, which its managed policy does not grant), TLS-only,
        versioned (a certificate overwritten by mistake can be restored); protected from deletion in prod.
        """
        tls = PrivateBucket(
            f"{name}-tls",
            PrivateBucketArgs(
                bucket=pulumi.Output.concat("hyperpod-tls-", args.stack, "-", args.account_id),
                protect=args.protect_bucket,
                bucket_key_enabled=True,
                tags={**args.tags, "Purpose": "hyperpod-inference-tls-certificates"},
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.dependencies.append(tls)
        return tls.bucket_name
