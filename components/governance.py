"""TaskGovernance: HyperPod task governance for the stack's inference endpoints, as one component.

What it creates, in the order AWS's setup needs it (``components/config/governance.py`` has every source):

1. the ``amazon-sagemaker-hyperpod-taskgovernance`` EKS add-on (pinned ``governance.addonVersion``; Kueue and the
   SageMaker-managed Kueue objects), after the HyperPod nodes have joined — its controllers and Kueue's webhook run
   on them, and a Kueue webhook without replicas fails the pod creations behind it (a workshop troubleshooting page,
   ../shared/docs/anchors.md §7);
2. the cluster policy (:class:`~components.cluster_scheduler_config.ClusterSchedulerConfig`, a dynamic resource over
   boto3): priority classes with weights, fair share, idle resource sharing — after the add-on;
3. one ``aws-native`` ``sagemaker.ComputeQuota`` per team (its namespace ``hyperpod-ns-<team>`` and LocalQueue are
   created by task governance) — after the add-on.

:attr:`TaskGovernance.dependencies` is what the endpoints wait on (their Kueue labels name these queues and
classes); on destroy the engine deletes in reverse: endpoints, then quotas and the policy, then the add-on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_aws_native as aws_native
from pulumi_aws_native import sagemaker

from policies.readiness import program_create_timeout

from .cluster_scheduler_config import RESOURCE_KIND as SCHEDULER_KIND
from .cluster_scheduler_config import ClusterSchedulerConfig
from .config.governance import (
    ADDON_NAME,
    GovernanceConfig,
    QuotaResourceConfig,
    TeamConfig,
    compute_quota_name,
    scheduler_config,
    scheduler_config_name,
)
from .dynamic_provider import credential_inputs

# From the entries in policies/readiness.yaml (the one place they are written).
ADDON_TIMEOUT = f"{program_create_timeout('aws:eks/addon:Addon', {'addonName': ADDON_NAME}):g}m"
SCHEDULER_TIMEOUT_MINUTES = program_create_timeout("pulumi-python:dynamic:Resource", {"resourceKind": SCHEDULER_KIND})


@dataclass(frozen=True)
class TaskGovernanceArgs:
    """Inputs of :class:`TaskGovernance`."""

    config: GovernanceConfig = field(metadata={"doc": "The validated governance section."})
    name_prefix: str = field(metadata={"doc": "Prefix of the physical names (hpi-<stack>)."})
    region: str = field(metadata={"doc": "The stack's region (the dynamic resource's API region)."})
    cluster_name: pulumi.Input[str] = field(metadata={"doc": "The EKS cluster the add-on goes on."})
    hyperpod_cluster_arn: pulumi.Input[str] = field(metadata={"doc": "The HyperPod cluster policy and quotas bind to."})
    depends_on: Sequence[pulumi.Resource] = field(
        default=(), metadata={"doc": "What the add-on waits for: the HyperPod cluster and the wait for its nodes."}
    )
    tags: dict[str, str] = field(default_factory=dict, metadata={"doc": "The stack's common tags."})


def quota_resource_args(r: QuotaResourceConfig) -> sagemaker.ComputeQuotaResourceConfigArgs:
    return sagemaker.ComputeQuotaResourceConfigArgs(
        instance_type=r.instance_type,
        accelerators=r.accelerators,
        count=r.count,
        v_cpu=r.v_cpu,
        memory_in_gi_b=r.memory_in_gib,
    )


def quota_config_args(team: TeamConfig) -> sagemaker.ComputeQuotaConfigArgs:
    return sagemaker.ComputeQuotaConfigArgs(
        compute_quota_resources=[quota_resource_args(r) for r in team.resources],
        resource_sharing_config=sagemaker.ComputeQuotaResourceSharingConfigArgs(
            strategy=sagemaker.ComputeQuotaResourceSharingConfigStrategy(team.sharing),
            borrow_limit=team.borrow_limit,
        ),
        preempt_team_tasks=sagemaker.ComputeQuotaConfigPreemptTeamTasks(team.preempt_team_tasks),
    )


class TaskGovernance(pulumi.ComponentResource):
    """The task governance add-on, the cluster policy and one compute quota per team."""

    addon: aws.eks.Addon
    scheduler_config: ClusterSchedulerConfig
    quotas: dict[str, sagemaker.ComputeQuota]

    def __init__(self, name: str, args: TaskGovernanceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:governance:TaskGovernance", name, None, opts)
        cfg = args.config
        self.addon = aws.eks.Addon(
            f"{name}-addon",
            cluster_name=args.cluster_name,
            addon_name=ADDON_NAME,
            addon_version=cfg.addon_version,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(args.depends_on),
                custom_timeouts=pulumi.CustomTimeouts(create=ADDON_TIMEOUT, update=ADDON_TIMEOUT),
            ),
        )
        after_addon = pulumi.ResourceOptions(parent=self, depends_on=[self.addon])
        self.scheduler_config = ClusterSchedulerConfig(
            f"{name}-policy",
            {
                "name": scheduler_config_name(args.name_prefix),
                "clusterArn": args.hyperpod_cluster_arn,
                "region": args.region,
                "schedulerConfig": scheduler_config(cfg),
                "description": "hyperpod-inference cluster policy (components/governance.py)",
                "tags": args.tags,
                "waitTimeoutSeconds": int(SCHEDULER_TIMEOUT_MINUTES * 60),
                **credential_inputs(),
            },
            opts=pulumi.ResourceOptions.merge(
                after_addon,
                pulumi.ResourceOptions(
                    custom_timeouts=pulumi.CustomTimeouts(
                        create=f"{SCHEDULER_TIMEOUT_MINUTES + 5:g}m", update=f"{SCHEDULER_TIMEOUT_MINUTES + 5:g}m"
                    )
                ),
            ),
        )
        self.quotas = {}
        for team in cfg.teams:
            self.quotas[team.name] = sagemaker.ComputeQuota(
                f"{name}-quota-{team.name}",
                name=compute_quota_name(args.name_prefix, team),
                description=f"hyperpod-inference team {team.name} (namespace {team.namespace})",
                cluster_arn=args.hyperpod_cluster_arn,
                compute_quota_config=quota_config_args(team),
                compute_quota_target=sagemaker.ComputeQuotaTargetArgs(
                    team_name=team.name, fair_share_weight=team.fair_share_weight
                ),
                activation_state=sagemaker.ComputeQuotaActivationState.ENABLED,
                tags=[aws_native.TagArgs(key=k, value=v) for k, v in sorted(args.tags.items())],
                opts=after_addon,
            )
        self.register_outputs(
            {
                "addonVersion": cfg.addon_version,
                "schedulerConfigArn": self.scheduler_config.arn,
                "quotaArns": {t: q.compute_quota_arn for t, q in self.quotas.items()},
            }
        )

    @property
    def dependencies(self) -> list[pulumi.Resource]:
        """What an endpoint in a team's queue waits on: the policy (its priority classes) and every quota."""
        return [self.addon, self.scheduler_config, *self.quotas.values()]
