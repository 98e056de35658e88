"""InferenceOperatorAddon: the ``amazon-sagemaker-hyperpod-inference`` EKS add-on, pinned and typed.

- ``addon_version`` is always pinned (a floating default broke other IaC when AWS changed the default
  build; anchors pain point 1). Which keys the version understands comes from the compatibility table
  (``policies/compatibility.py``): ``hyperpodClusterArn`` where the row lists it in ``requiredConfiguration``,
  ``inferenceOperator`` / ``inferenceGateway`` only on the v2.x add-on.
- ``configuration_values`` is rendered by the typed model in ``components/addon_values.py``.
- It depends explicitly on every prerequisite (add-ons, roles, policy attachments, TLS bucket, access
  entry) and on the HyperPod cluster: the add-on's install check looks for them, and the operator calls
  ``UpdateClusterInference`` on the HyperPod cluster as soon as it starts.
- Create/update timeout 45 minutes (``program_create_timeout_minutes`` of its entry in ``policies/readiness.yaml``,
  the one place it is written): on a cold P5 cluster the install exceeds the provider's 20-minute default (ADT uses
  40m for this reason; anchors note 6).
- ``resolve_conflicts_on_update = OVERWRITE``: the stack is the single owner of the add-on's configuration;
  PRESERVE would keep out-of-band edits and let the deployed values drift from the reviewed golden files.
  OVERWRITE on create too, so a console "quick install" being adopted does not fail the create.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from policies import compatibility as compat
from policies.readiness import program_create_timeout

from .addon_values import ControllerMode, build_addon_values
from .config.operator import parse_eks_version

ADDON_NAME = "amazon-sagemaker-hyperpod-inference"
CREATE_TIMEOUT = f"{program_create_timeout('aws:eks/addon:Addon', {'addonName': ADDON_NAME}):g}m"


def addon_major(version: str) -> int:
    """``v2.0.0-eksbuild.2`` -> 2: the v2.x add-on adds the inferenceOperator/inferenceGateway keys (D4)."""
    return parse_eks_version(version)[0]


@dataclass(frozen=True)
class InferenceOperatorAddonArgs:
    addon_version: str
    cluster_name: pulumi.Input[str]
    hyperpod_cluster_arn: pulumi.Input[str]
    execution_role_arn: pulumi.Input[str]
    tls_bucket_name: pulumi.Input[str]
    gated_model_role_arn: pulumi.Input[str]
    alb_mode: ControllerMode
    keda_mode: ControllerMode
    alb_role_arn: pulumi.Input[str] | None = None
    keda_role_arn: pulumi.Input[str] | None = None
    gateway_enabled: bool = False
    gateway_role_arn: pulumi.Input[str] | None = None
    depends_on: list[pulumi.Resource] = field(
        default_factory=list, metadata={"doc": "Every prerequisite resource and the HyperPod cluster."}
    )
    tags: dict[str, str] = field(default_factory=dict)


class InferenceOperatorAddon(pulumi.ComponentResource):
    """The HyperPod Inference Operator, installed as its EKS add-on."""

    addon: aws.eks.Addon
    configuration_values: pulumi.Output[str]

    def __init__(self, name: str, args: InferenceOperatorAddonArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:operator:InferenceOperatorAddon", name, None, opts)
        release = compat.addon(args.addon_version)  # KeyError is impossible: config checks the table first
        requires_arn = "hyperpodClusterArn" in release.required_configuration
        v2 = addon_major(args.addon_version) >= 2

        def render(v: list[str | None]) -> str:
            return build_addon_values(
                execution_role_arn=str(v[0]),
                tls_bucket=str(v[1]),
                hyperpod_cluster_arn=str(v[2]),
                gated_model_role_arn=str(v[3]),
                alb_mode=args.alb_mode,
                alb_role_arn=v[4],
                keda_mode=args.keda_mode,
                keda_role_arn=v[5],
                requires_cluster_arn=requires_arn,
                v2_addon=v2,
                gateway_enabled=args.gateway_enabled,
                gateway_role_arn=v[6],
            ).to_json()

        self.configuration_values = pulumi.Output.all(
            args.execution_role_arn,
            args.tls_bucket_name,
            args.hyperpod_cluster_arn,
            args.gated_model_role_arn,
            args.alb_role_arn,
            args.keda_role_arn,
            args.gateway_role_arn,
        ).apply(render)

        self.addon = aws.eks.Addon(
            f"{name}-addon",
            cluster_name=args.cluster_name,
            addon_name=ADDON_NAME,
            addon_version=args.addon_version,
            configuration_values=self.configuration_values,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=args.depends_on,
                custom_timeouts=pulumi.CustomTimeouts(create=CREATE_TIMEOUT, update=CREATE_TIMEOUT),
            ),
        )
        self.register_outputs(
            {
                "addonArn": self.addon.arn,
                "addonVersion": self.addon.addon_version,
                "configurationValues": self.configuration_values,
            }
        )
