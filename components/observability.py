"""ObservabilityAddon: the ``amazon-sagemaker-hyperpod-observability`` EKS add-on, its AMP workspace and IAM.

The add-on deploys, in namespace ``hyperpod-observability``, a controller manager, an OpenTelemetry collector
and node-level exporters (node, DCGM GPU, EFA, kube-state), scrapes them and the inference workloads, and
remote-writes to Amazon Managed Service for Prometheus (AWS docs "Troubleshooting the Amazon SageMaker
HyperPod observability add-on": namespace, ``control-plane=hyperpod-observability-controller-manager``,
node collectors; the exporter list is UNCONFIRMED [obs-workloads], named by community IaC only). The inference metrics it collects
(``model_invocations_total``, ``model_errors_total``, ``model_concurrent_requests``,
``model_latency_milliseconds``, ``model_ttfb_milliseconds``) and the KVCache / Intelligent Router dashboards
come from the endpoints' ``metrics`` spec (AWS docs sagemaker-hyperpod-model-deployment-observability; the
troubleshooting page: those dashboards appear when the feature is on and ``modelMetrics.port`` is set), so
no extra scrape configuration is needed here — the ``router-metrics-port-matches-worker`` policy keeps the
port right.

- **AMP workspace**: created (alias ``<prefix>-metrics``) unless ``observability.ampWorkspaceArn`` is given.
- **IAM**: one role for EKS Pod Identity (``pods.eks.amazonaws.com``, ``sts:AssumeRole`` + ``sts:TagSession``,
  ``aws:SourceArn`` = the EKS cluster, ``aws:SourceAccount``) with ``aps:RemoteWrite`` on this workspace only and
  CloudWatch Logs write/read on ``/aws/sagemaker/Clusters/*`` — exactly the troubleshooting page's
  "Verify Pod Identity association" documents, scoped to the one workspace.
- **Add-on**: pinned (``observability.addonVersion``), ``resolve_conflicts`` OVERWRITE like the inference
  add-on, Pod Identity association for ``hyperpod-observability-operator-otel-collector``. Configuration keys:
  see components/config/observability.py (UNCONFIRMED [obs-addon-schema] against describe-addon-configuration).

Create waits for: the add-on's pods to run (ACTIVE) — so it depends on the HyperPod cluster (the only nodes)
and on the eks-pod-identity-agent add-on (credentials; troubleshooting page, "Check health probe status").
Timeout 30 minutes (the provider's default is 20).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
from pydantic import BaseModel, ConfigDict, Field

from components.role_boundary import role_boundary_arn
from policies.readiness import program_create_timeout

from .config.observability import ADDON_NAME, SERVICE_ACCOUNT, ObservabilityConfig

# From the add-on's entry in policies/readiness.yaml (the one place it is written): its pods need joined nodes.
CREATE_TIMEOUT = f"{program_create_timeout('aws:eks/addon:Addon', {'addonName': ADDON_NAME}):g}m"
CLUSTER_LOG_GROUPS = "/aws/sagemaker/Clusters/*"


class _Values(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AmpWorkspaceValues(_Values):
    prometheus_endpoint: str = Field(alias="prometheusEndpoint")
    arn: str


class MetricDomain(_Values):
    level: str
    scrape_interval: int = Field(alias="scrapeInterval")


class LoggingValues(_Values):
    enabled: bool


class ObservabilityAddonValues(_Values):
    """``configuration_values`` of the add-on (keys from the ADT-TF sample; see config/observability.py)."""

    amp_workspace: AmpWorkspaceValues = Field(alias="ampWorkspace")
    metrics_provider: dict[str, MetricDomain] = Field(alias="metricsProvider")
    logging: LoggingValues

    def to_json(self) -> str:
        return json.dumps(self.model_dump(by_alias=True), sort_keys=True)


def addon_values(cfg: ObservabilityConfig, prometheus_endpoint: str, workspace_arn: str) -> ObservabilityAddonValues:
    levels = cfg.metrics.model_dump(by_alias=True)
    return ObservabilityAddonValues(
        amp_workspace=AmpWorkspaceValues(prometheus_endpoint=prometheus_endpoint.rstrip("/"), arn=workspace_arn),
        metrics_provider={k: MetricDomain(level=v, scrape_interval=cfg.scrape_interval) for k, v in levels.items()},
        logging=LoggingValues(enabled=cfg.logging),
    )


def pod_identity_trust(cluster_arn: str, account_id: str) -> dict[str, Any]:
    """Only EKS Pod Identity, for this cluster of this account, may assume the role."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {"StringEquals": {"aws:SourceArn": cluster_arn, "aws:SourceAccount": account_id}},
            }
        ],
    }


def collector_policy(workspace_arn: str, region: str, account_id: str, partition: str = "aws") -> dict[str, Any]:
    logs = f"arn:{partition}:logs:{region}:{account_id}:log-group:{CLUSTER_LOG_GROUPS}"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "PrometheusAccess", "Effect": "Allow", "Action": "aps:RemoteWrite", "Resource": workspace_arn},
            {
                "Sid": "CloudwatchLogsAccess",
                "Effect": "Allow",
                "Action": [
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:DescribeLogStreams",
                    "logs:PutLogEvents",
                    "logs:GetLogEvents",
                    "logs:FilterLogEvents",
                    "logs:GetLogRecord",
                    "logs:StartQuery",
                    "logs:GetQueryResults",
                ],
                "Resource": [logs, f"{logs}:log-stream:*"],
            },
            # The AWS page scopes these two to the log groups too, but they take no resource-level scope
            # (Service Authorization Reference, CloudWatch Logs: Resource "*"; parliament RESOURCE_MISMATCH).
            {
                "Sid": "CloudwatchLogsUnscoped",
                "Effect": "Allow",
                "Action": ["logs:DescribeLogGroups", "logs:StopQuery"],
                "Resource": "*",
            },
        ],
    }


@dataclass(frozen=True)
class ObservabilityAddonArgs:
    config: ObservabilityConfig
    cluster_name: pulumi.Input[str]
    cluster_arn: pulumi.Input[str]
    region: str
    name_prefix: str
    depends_on: list[pulumi.Resource] = field(
        default_factory=list, metadata={"doc": "The HyperPod cluster (nodes) and the EKS cluster (pod identity agent)."}
    )
    protect: bool = field(default=False, metadata={"doc": "Protect the AMP workspace (prod: its metrics are state)."})
    tags: dict[str, str] = field(default_factory=dict)


class ObservabilityAddon(pulumi.ComponentResource):
    """The HyperPod observability add-on writing to an AMP workspace."""

    addon: aws.eks.Addon
    workspace_arn: pulumi.Output[str]
    prometheus_endpoint: pulumi.Output[str]
    configuration_values: pulumi.Output[str]

    def __init__(self, name: str, args: ObservabilityAddonArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:observability:ObservabilityAddon", name, None, opts)
        cfg = args.config
        child = pulumi.ResourceOptions(parent=self)
        caller = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition

        if cfg.amp_workspace_arn is not None and cfg.amp_workspace_endpoint is not None:
            workspace_arn: pulumi.Output[str] = pulumi.Output.from_input(cfg.amp_workspace_arn)
            endpoint: pulumi.Output[str] = pulumi.Output.from_input(cfg.amp_workspace_endpoint)
        else:
            workspace = aws.amp.Workspace(
                f"{name}-amp",
                alias=f"{args.name_prefix}-metrics",
                tags=args.tags,
                # deleting a workspace deletes its metrics (readiness data), so prod protects it
                opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
            )
            workspace_arn = workspace.arn
            endpoint = workspace.prometheus_endpoint

        role = aws.iam.Role(
            f"{name}-role",
            name=f"{args.name_prefix}-hp-observability",
            description="HyperPod observability add-on collector (EKS Pod Identity)",
            assume_role_policy=pulumi.Output.all(args.cluster_arn, caller.account_id).apply(
                lambda v: json.dumps(pod_identity_trust(str(v[0]), str(v[1])))
            ),
            tags=args.tags,
            permissions_boundary=role_boundary_arn(args.tags, self),
            opts=child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-policy",
            role=role.id,
            policy=pulumi.Output.all(workspace_arn, caller.account_id, partition).apply(
                lambda v: json.dumps(collector_policy(str(v[0]), args.region, str(v[1]), str(v[2])))
            ),
            opts=child,
        )
        self.configuration_values = pulumi.Output.all(endpoint, workspace_arn).apply(
            lambda v: addon_values(cfg, str(v[0]), str(v[1])).to_json()
        )
        self.addon = aws.eks.Addon(
            f"{name}-addon",
            cluster_name=args.cluster_name,
            addon_name=ADDON_NAME,
            addon_version=cfg.addon_version,
            configuration_values=self.configuration_values,
            pod_identity_associations=[
                aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=SERVICE_ACCOUNT)
            ],
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[policy, *args.depends_on],
                custom_timeouts=pulumi.CustomTimeouts(create=CREATE_TIMEOUT, update=CREATE_TIMEOUT),
            ),
        )
        self.workspace_arn = workspace_arn
        self.prometheus_endpoint = endpoint
        self.register_outputs(
            {
                "addonArn": self.addon.arn,
                "workspaceArn": self.workspace_arn,
                "prometheusEndpoint": self.prometheus_endpoint,
                "configurationValues": self.configuration_values,
            }
        )
