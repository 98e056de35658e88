"""The typed ``configuration_values`` of the ``amazon-sagemaker-hyperpod-inference`` EKS add-on.

AWS publishes no JSON schema for this add-on's configuration (operator-facts §13), so the keys here are
exactly those the official docs and the operator's own migration script use (operator-facts §9: D4, D5,
D6 and ``migration/helm_to_addon.sh`` in aws/sagemaker-hyperpod-cli). The model is closed (unknown keys are
a programming error) so a typo cannot silently reach the add-on, and the JSON is rendered in one place.

Version-dependent keys:
- ``hyperpodClusterArn`` is required from add-on v1.2.0-eksbuild.1 (D5); older versions do not know it.
- ``inferenceOperator`` and ``inferenceGateway`` exist only in the v2.x add-on (D4).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

ControllerMode = Literal["bundled", "helm", "existing"]


class _Values(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class AlbServiceAccount(_Values):
    create: bool
    role_arn: str = Field(pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$")


class AlbValues(_Values):
    enabled: bool
    service_account: AlbServiceAccount | None = None


class KedaIrsa(_Values):
    enabled: bool
    role_arn: str = Field(pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$")


class KedaAws(_Values):
    irsa: KedaIrsa


class KedaAuth(_Values):
    aws: KedaAws


class KedaValues(_Values):
    enabled: bool
    auth: KedaAuth | None = None


class GatewayServiceAccount(_Values):
    role_arn: str = Field(pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$")


class InferenceGatewayValues(_Values):
    enabled: bool
    service_account: GatewayServiceAccount | None = None


class InferenceOperatorValues(_Values):
    enabled: bool


class AddonValues(_Values):
    """The add-on's configuration values, field for field as the add-on reads them."""

    execution_role_arn: str = Field(
        pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/SageMakerHyperPodInference.*$",
        description="The add-on's Helm template rejects a role name not prefixed SageMakerHyperPodInference.",
    )
    tls_certificate_s3_bucket: str = Field(
        pattern=r"^hyperpod-tls",
        description="AmazonSageMakerHyperPodInferenceAccess only covers hyperpod-tls* buckets.",
    )
    hyperpod_cluster_arn: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:cluster/.+$"
    )
    jumpstart_gated_model_download_role_arn: str | None = None
    alb: AlbValues
    keda: KedaValues
    inference_gateway: InferenceGatewayValues | None = None
    inference_operator: InferenceOperatorValues | None = None

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, unset optionals left out) for ``aws.eks.Addon.configuration_values``."""
        return json.dumps(self.model_dump(by_alias=True, exclude_none=True), sort_keys=True, separators=(",", ":"))


def build_addon_values(
    *,
    execution_role_arn: str,
    tls_bucket: str,
    hyperpod_cluster_arn: str,
    gated_model_role_arn: str,
    alb_mode: ControllerMode,
    alb_role_arn: str | None,
    keda_mode: ControllerMode,
    keda_role_arn: str | None,
    requires_cluster_arn: bool,
    v2_addon: bool,
    gateway_enabled: bool,
    gateway_role_arn: str | None,
) -> AddonValues:
    """Assemble the values from resolved ARNs and the config's choices.

    ALB controller and KEDA are enabled in the add-on only when ``bundled``: with ``helm`` or ``existing``
    another copy owns the same webhooks and CRDs, and two controllers would fight over them.
    """
    if alb_mode == "bundled":
        if alb_role_arn is None:
            raise ValueError("bundled ALB controller needs its IRSA role ARN")
        alb = AlbValues(enabled=True, service_account=AlbServiceAccount(create=True, role_arn=alb_role_arn))
    else:
        alb = AlbValues(enabled=False)
    if keda_mode == "bundled":
        if keda_role_arn is None:
            raise ValueError("bundled KEDA needs its IRSA role ARN")
        keda = KedaValues(enabled=True, auth=KedaAuth(aws=KedaAws(irsa=KedaIrsa(enabled=True, role_arn=keda_role_arn))))
    else:
        keda = KedaValues(enabled=False)
    gateway = None
    operator = None
    if v2_addon:
        operator = InferenceOperatorValues(enabled=True)
        if gateway_enabled:
            if gateway_role_arn is None:
                raise ValueError("the inference gateway needs its certificate role ARN")
            gateway = InferenceGatewayValues(
                enabled=True, service_account=GatewayServiceAccount(role_arn=gateway_role_arn)
            )
        else:
            gateway = InferenceGatewayValues(enabled=False)
    elif gateway_enabled:
        raise ValueError("the inference gateway needs a v2.x add-on")
    return AddonValues(
        execution_role_arn=execution_role_arn,
        tls_certificate_s3_bucket=tls_bucket,
        hyperpod_cluster_arn=hyperpod_cluster_arn if requires_cluster_arn else None,
        jumpstart_gated_model_download_role_arn=gated_model_role_arn,
        alb=alb,
        keda=keda,
        inference_gateway=gateway,
        inference_operator=operator,
    )
