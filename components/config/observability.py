"""``hyperpod-inference:observability`` — metrics, dashboards, alarms and the network/S3 audit logs.

What this section turns on, and where each fact comes from:

- The ``amazon-sagemaker-hyperpod-observability`` EKS add-on with an Amazon Managed Service for Prometheus
  (AMP) workspace. Its configuration keys (``ampWorkspace.{prometheusEndpoint,arn}``,
  ``metricsProvider.<domain>.{level,scrapeInterval}``, ``logging.enabled``, ``amgWorkspace``) are the ones
  aws-samples/awsome-distributed-training@19ce5e9ce963ef1b3eaa28dace882250eeec2146
  ``1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/modules/observability/eks_addon.tf``
  passes; AWS publishes no configuration schema page for the add-on, so they are UNCONFIRMED [obs-addon-schema] against
  ``aws eks describe-addon-configuration`` (run it in preflight before a first deploy). Levels ``DISABLED`` and
  ``BASIC`` appear there; ``ADVANCED`` is UNCONFIRMED [obs-advanced-level] (console wording).
- The Pod Identity association (namespace ``hyperpod-observability``, service account
  ``hyperpod-observability-operator-otel-collector``) and the role's permissions and trust policy: AWS docs
  "Troubleshooting the Amazon SageMaker HyperPod observability add-on" (hyperpod-observability-addon-troubleshooting),
  section "Verify Pod Identity association".
- VPC flow logs and S3 server access logs: AWS Foundational Security Best Practices EC2.6 and S3.9.

Defaults are secure per environment: everything on everywhere; longer retention in prod.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import Field, field_validator

from .base import ConfigIssue, Model
from .checks import Check
from .ingress import LOG_RETENTION_DAYS
from .operator import EKSBUILD, parse_eks_version


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def is_prod(self) -> bool: ...
    @property
    def observability(self) -> ObservabilityConfig: ...


ADDON_NAME = "amazon-sagemaker-hyperpod-observability"
# The pin and its minimum live here, like the inference add-on's prerequisites (config/operator.py).
# v1.0.5-eksbuild.1: the first build that tolerates Restricted Instance Group taints (AWS docs,
# hyperpod-observability-addon-troubleshooting, "Taint tolerations"). Newer builds: check with
# `aws eks describe-addon-versions --addon-name amazon-sagemaker-hyperpod-observability` (tools.preflight.regional).
ADDON_MINIMUM = "v1.0.5-eksbuild.1"
ADDON_DEFAULT = "v1.0.5-eksbuild.1"
NAMESPACE = "hyperpod-observability"
SERVICE_ACCOUNT = "hyperpod-observability-operator-otel-collector"


@dataclass(frozen=True)
class AddonWorkload:
    """One workload the observability add-on runs, for the deploy-rehearsal and capacity checks.

    ``requests`` is None where AWS publishes none (UNCONFIRMED [obs-workloads] until read from a live cluster with
    ``kubectl -n hyperpod-observability get deploy,ds -o yaml``); ``kind`` is inferred where marked.
    """

    selector: str
    kind: Literal["Deployment", "DaemonSet"]
    placement: str
    source: str
    kind_confirmed: bool = False
    requests: dict[str, str] | None = None


_TROUBLESHOOTING = "AWS docs hyperpod-observability-addon-troubleshooting"
# What AWS documents about the add-on's pods (all in NAMESPACE). Tolerations: from v1.0.5-eksbuild.1 the
# add-on adds the Restricted Instance Group toleration itself (same page, "Taint tolerations").
OBSERVABILITY_WORKLOADS: tuple[AddonWorkload, ...] = (
    AddonWorkload(
        "control-plane=hyperpod-observability-controller-manager",
        "Deployment",
        "any schedulable node (needs nodes: the add-on stays CREATING without them)",
        f"{_TROUBLESHOOTING}, 'Review manager logs'",
    ),
    AddonWorkload(
        "app.kubernetes.io/name=hyperpod-node-collector",
        "DaemonSet",
        "every node (restricted nodes included)",
        f"{_TROUBLESHOOTING}, 'DNS resolution failures' / 'node collector pods are running on restricted nodes'",
    ),
    AddonWorkload(
        "central-collector",
        "Deployment",
        "one per network boundary (clusters with restricted instance groups)",
        f"{_TROUBLESHOOTING}, 'Check the central collector deployments'",
        kind_confirmed=True,
    ),
)

MetricLevel = Literal["DISABLED", "BASIC", "ADVANCED"]
LogRetention = int


def _retention(value: int | None) -> int | None:
    if value is not None and value not in LOG_RETENTION_DAYS:
        raise ValueError(
            f"{value} is not a CloudWatch Logs retention; allowed: {', '.join(map(str, LOG_RETENTION_DAYS))}"
        )
    return value


class MetricLevels(Model):
    """``metricsProvider.<domain>.level`` of the add-on (see the module docstring for the sources)."""

    inference_metrics: MetricLevel = "BASIC"
    accelerated_compute_metrics: MetricLevel = Field(default="BASIC", description="DCGM GPU metrics (GPU utilisation).")
    node_metrics: MetricLevel = "BASIC"
    custom_metrics: MetricLevel = "BASIC"
    network_metrics: MetricLevel = Field(default="BASIC", description="EFA metrics.")
    training_metrics: MetricLevel = "DISABLED"
    task_governance_metrics: MetricLevel = "DISABLED"
    scaling_metrics: MetricLevel = Field(default="BASIC", description="KEDA / autoscaling metrics.")


class FlowLogsConfig(Model):
    """VPC flow logs of the VPC this stack creates (FSBP EC2.6), delivered to CloudWatch Logs."""

    enabled: bool = True
    traffic_type: Literal["ALL", "REJECT", "ACCEPT"] = Field(
        default="ALL", description="ALL (the default, what EC2.6 asks for; REJECT alone also satisfies it)."
    )
    retention_days: LogRetention | None = Field(default=None, description="Default: 365 in prod, 30 elsewhere.")
    _r = field_validator("retention_days")(_retention)


class AlarmsConfig(Model):
    """CloudWatch alarms on the ALB and the WebACL; optionally notifying an SNS topic."""

    enabled: bool = True
    sns_topic: bool = Field(default=False, description="Create an SNS topic (KMS-encrypted) the alarms notify.")
    sns_topic_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$",
        description="An existing SNS topic the alarms notify (instead of snsTopic).",
    )
    alb_5xx_rate_percent: float = Field(
        default=5.0, gt=0, le=100, description="ALB + target 5xx as a percentage of requests, per 5 minutes."
    )
    target_429_per_5min: int = Field(
        default=50, ge=1, description="Target 429s (the operator's request limits rejecting) per 5 minutes."
    )
    waf_blocked_per_5min: int = Field(default=500, ge=1, description="Requests the WebACL blocked per 5 minutes.")


class ObservabilityConfig(Model):
    """Metrics (the HyperPod observability add-on + AMP), dashboards, alarms and audit logs."""

    enabled: bool = Field(default=True, description="The observability add-on, its AMP workspace and the dashboard.")
    addon_version: str = Field(
        default=ADDON_DEFAULT,
        pattern=EKSBUILD,
        description=f"Pinned {ADDON_NAME} add-on version; at least {ADDON_MINIMUM}.",
    )
    amp_workspace_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws[a-z-]*:aps:[a-z0-9-]+:[0-9]{12}:workspace/ws-[a-z0-9-]+$",
        description="An existing AMP workspace to write to; default: the stack creates one.",
    )
    amp_workspace_endpoint: str | None = Field(
        default=None,
        pattern=r"^https://aps-workspaces\.[a-z0-9-]+\.amazonaws\.com/workspaces/ws-[a-z0-9-]+/?$",
        description="The existing workspace's Prometheus endpoint; required with ampWorkspaceArn.",
    )
    scrape_interval: int = Field(default=30, ge=10, le=300, description="Seconds between scrapes, per metric domain.")
    metrics: MetricLevels = Field(default_factory=MetricLevels)
    logging: bool = Field(
        default=True, description="Add-on log collection (Fluent Bit) to CloudWatch Logs /aws/sagemaker/Clusters/*."
    )
    dashboard: bool = Field(default=True, description="A CloudWatch dashboard with one row per endpoint.")
    alarms: AlarmsConfig = Field(default_factory=AlarmsConfig)
    vpc_flow_logs: FlowLogsConfig = Field(default_factory=FlowLogsConfig)
    access_log_retention_days: int | None = Field(
        default=None,
        ge=1,
        le=3650,
        description="S3 server access logs kept this long; default: 365 in prod, 90 elsewhere.",
    )


def flow_log_retention(cfg: StackView) -> int:
    """Days VPC flow logs are kept: the configured value, else 365 in prod and 30 elsewhere."""
    value = cfg.observability.vpc_flow_logs.retention_days
    return value if value is not None else (365 if cfg.is_prod else 30)


def access_log_retention(cfg: StackView) -> int:
    value = cfg.observability.access_log_retention_days
    return value if value is not None else (365 if cfg.is_prod else 90)


def _observability_checks(cfg: StackView) -> Iterable[ConfigIssue]:
    obs = cfg.observability
    if parse_eks_version(obs.addon_version) < parse_eks_version(ADDON_MINIMUM):
        yield ConfigIssue(
            "observability.addonVersion",
            f"{ADDON_NAME} {obs.addon_version} is below the minimum this package supports ({ADDON_MINIMUM}); "
            f"pin {ADDON_MINIMUM} or later",
        )
    if (obs.amp_workspace_arn is None) != (obs.amp_workspace_endpoint is None):
        missing = "ampWorkspaceEndpoint" if obs.amp_workspace_endpoint is None else "ampWorkspaceArn"
        yield ConfigIssue(
            f"observability.{missing}",
            "ampWorkspaceArn and ampWorkspaceEndpoint go together (an existing workspace needs both)",
        )
    elif obs.amp_workspace_arn is not None and obs.amp_workspace_endpoint is not None:
        ws = obs.amp_workspace_arn.rsplit("/", 1)[-1]
        if ws not in obs.amp_workspace_endpoint:
            yield ConfigIssue(
                "observability.ampWorkspaceEndpoint",
                f"does not belong to the workspace {ws} of ampWorkspaceArn; use that workspace's endpoint",
            )
    if obs.alarms.sns_topic and obs.alarms.sns_topic_arn is not None:
        yield ConfigIssue(
            "observability.alarms.snsTopic", "true together with snsTopicArn; create a topic or bring one, not both"
        )


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (_observability_checks,)
