"""``cluster.instanceGroups[].imageReleaseVersion`` and ``softwareUpdates``: the node software lifecycle of a group.

A HyperPod node's image is chosen when the node is created; only a software update moves existing nodes
(UpdateClusterSoftware; AWS::SageMaker::Cluster ``ImageReleaseVersion``: "Changing this value on an existing
instance group triggers a software update via UpdateClusterSoftware", cfn-lint 1.58 schema). So each group says
which image it runs:

* ``imageReleaseVersion: X.Y.Z`` pins the HyperPod AMI release (schema pattern ``^[0-9]+\\.[0-9]+\\.[0-9]+$``); a node
  that auto-recovery replaces comes back on the same release as the rest of the group;
* ``imageReleaseVersion: latest`` leaves it unset, so each new node gets the newest release of its day: allowed,
  an advisory in prod (DescribeCluster ``InstanceGroups[].CurrentImageReleaseVersion`` is what tells which release
  each group runs). Omitted is ``latest`` outside prod and a config error in prod: prod says which it means.

``softwareUpdates`` is the group's rolling ``DeploymentConfig`` (``RollingUpdatePolicy.MaximumBatchSize``,
``WaitIntervalInSeconds``, ``AutoRollbackConfiguration`` alarm names), used by every roll of the group: a
Kubernetes upgrade (``components/hyperpod_node_software.py``), its ``ScheduledUpdateConfig`` (``schedule``, a cron
expression of the schema's pattern) and its ``AutoPatchConfig`` (``autoPatch``: ``WhenIdle`` / ``WhenAllIdle``).
The default is one node at a time with a 5-minute wait: a group without the key never loses every node at once.

In prod a roll that would leave an endpoint with no serving replica even when its replicas are spread over the nodes
(``policies/node_roll.py``) is refused, naming the endpoint, the group and the fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field, model_validator

from .base import ConfigAdvisory, ConfigIssue, Model
from .checks import Advise, Check

LATEST = "latest"
IMAGE_RELEASE_PATTERN = r"^(latest|[0-9]+\.[0-9]+\.[0-9]+)$"
# AWS::SageMaker::Cluster ScheduledUpdateConfig.ScheduleExpression, copied from the schema (cfn-lint 1.58); a test
# compares it with the schema cfn-lint ships, so a drift fails.
SCHEDULE_PATTERN = (
    r"cron\((?:[0-5][0-9]|[0-9]|) (?:[01][0-9]|2[0-3]|[0-9]) (?:[1-9]|0[1-9]|[12][0-9]|3[01]|\?) "
    r"(?:[1-9]|0[1-9]|1[0-2]|\*|\*/(?:[1-9]|1[0-2])|) (?:MON|TUE|WED|THU|FRI|SAT|SUN|[1-7]|\?|L|(?:[1-7]#[1-5])|"
    r"(?:[1-7]L)) (?:20[2-9][0-9]|\*|)\)"
)
DEFAULT_WAIT_SECONDS = 300
AlarmName = Annotated[str, Field(min_length=1, max_length=256, pattern=r"\S")]  # schema: (?!\s*$).+ (not blank)


class BatchSize(Model):
    """``CapacitySizeConfig``: ``INSTANCE_COUNT`` nodes or ``CAPACITY_PERCENTAGE`` per cent of the group."""

    type: Literal["INSTANCE_COUNT", "CAPACITY_PERCENTAGE"] = "INSTANCE_COUNT"
    value: int = Field(default=1, ge=1, description="Nodes, or per cent of the group (1-100), updated at a time.")

    @model_validator(mode="after")
    def _percentage(self) -> BatchSize:
        if self.type == "CAPACITY_PERCENTAGE" and self.value > 100:
            raise ValueError(f"value {self.value}: a CAPACITY_PERCENTAGE batch is at most 100 (per cent)")
        return self

    def args(self) -> dict[str, Any]:
        return {"Type": self.type, "Value": self.value}


class SoftwareUpdates(Model):
    """The group's rolling deployment config, and when HyperPod may roll it on its own."""

    schedule: str | None = Field(
        default=None,
        pattern=SCHEDULE_PATTERN,
        max_length=256,
        description="ScheduledUpdateConfig.ScheduleExpression, e.g. cron(0 3 ? * SUN *); unset: no scheduled update.",
    )
    auto_patch: Literal["WhenIdle", "WhenAllIdle"] | None = Field(
        default=None, description="AutoPatchConfig.PatchingStrategy; unset: no automatic patching."
    )
    maximum_batch_size: BatchSize = Field(default_factory=BatchSize)
    rollback_maximum_batch_size: BatchSize | None = None
    wait_interval_seconds: int = Field(default=DEFAULT_WAIT_SECONDS, ge=0, le=3600)
    rollback_alarms: list[AlarmName] = Field(
        default_factory=list, description="CloudWatch alarms whose ALARM state rolls the update back."
    )

    def deployment_config(self) -> dict[str, Any]:
        """The API's ``DeploymentConfiguration`` (UpdateClusterSoftware; botocore validates it in the tests)."""
        policy: dict[str, Any] = {"MaximumBatchSize": self.maximum_batch_size.args()}
        if self.rollback_maximum_batch_size is not None:
            policy["RollbackMaximumBatchSize"] = self.rollback_maximum_batch_size.args()
        out: dict[str, Any] = {"RollingUpdatePolicy": policy, "WaitIntervalInSeconds": self.wait_interval_seconds}
        if self.rollback_alarms:
            out["AutoRollbackConfiguration"] = [{"AlarmName": a} for a in self.rollback_alarms]
        return out


# --- checks -------------------------------------------------------------------------------------------------


class _Group(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def instance_type(self) -> str: ...
    @property
    def instance_count(self) -> int: ...
    @property
    def image_release_version(self) -> str | None: ...
    @property
    def software_updates(self) -> SoftwareUpdates: ...


class _Existing(Protocol):
    @property
    def adopts_hyperpod(self) -> bool: ...


class _Cluster(Protocol):
    @property
    def instance_groups(self) -> Sequence[_Group]: ...
    @property
    def existing(self) -> _Existing | None: ...


def _creates_groups(cfg: StackView) -> bool:
    """This stack creates the HyperPod cluster (an adopted one's groups are not this stack's to roll)."""
    existing = cfg.cluster.existing
    return existing is None or not existing.adopts_hyperpod


class _Endpoint(Protocol):
    @property
    def name(self) -> str: ...
    def custom_resource(self, stack_redis_url: str | None = None) -> dict[str, Any]: ...


class StackView(Protocol):
    @property
    def is_prod(self) -> bool: ...
    @property
    def cluster(self) -> _Cluster: ...
    @property
    def endpoints(self) -> Sequence[_Endpoint]: ...


def _key(i: int, leaf: str) -> str:
    return f"cluster.instanceGroups[{i}].{leaf}"


def image_release_issues(cfg: StackView) -> Iterable[ConfigIssue]:
    """Prod names each group's image: a pinned release or ``latest``, never nothing."""
    if not cfg.is_prod or not _creates_groups(cfg):
        return
    for i, g in enumerate(cfg.cluster.instance_groups):
        if g.image_release_version is None:
            yield ConfigIssue(
                _key(i, "imageReleaseVersion"),
                f"prod must say which HyperPod AMI release group {g.name} runs: a pinned MAJOR.MINOR.PATCH (the "
                "release `aws sagemaker describe-cluster` shows as CurrentImageReleaseVersion), or `latest` to let "
                "each new node take the newest release",
            )


def image_release_advisories(cfg: StackView) -> Iterable[ConfigAdvisory]:
    if not cfg.is_prod or not _creates_groups(cfg):
        return
    for i, g in enumerate(cfg.cluster.instance_groups):
        if g.image_release_version == LATEST:
            yield ConfigAdvisory(
                _key(i, "imageReleaseVersion"),
                f"group {g.name} runs the newest HyperPod AMI release of the day each node is created: a node that "
                "auto-recovery replaces may come up on a newer release than the rest; pin the release the group "
                "runs once it is known",
                "image-release-pinned",
                "aws sagemaker describe-cluster (InstanceGroups[].CurrentImageReleaseVersion)",
            )


def roll_impacts_of(cfg: StackView) -> list[Any]:
    """:func:`policies.node_roll.roll_impacts` of the stack's groups and endpoints."""
    from policies.capacity_rules import workload_from_cr
    from policies.node_roll import RollingGroup, roll_impacts

    groups = [
        RollingGroup(
            g.name,
            g.instance_type,
            g.instance_count,
            g.software_updates.maximum_batch_size.type,
            g.software_updates.maximum_batch_size.value,
        )
        for g in cfg.cluster.instance_groups
    ]
    workloads = [workload_from_cr(e.custom_resource(), e.name, e.name) for e in cfg.endpoints]
    return roll_impacts(groups, workloads)


def roll_issues(cfg: StackView) -> Iterable[ConfigIssue]:
    """Prod: no roll may empty an endpoint even at its best spread."""
    if not cfg.is_prod or not _creates_groups(cfg):
        return
    index = {g.name: i for i, g in enumerate(cfg.cluster.instance_groups)}
    for impact in roll_impacts_of(cfg):
        if impact.left_spread == 0:
            yield ConfigIssue(
                _key(index[impact.group], "softwareUpdates.maximumBatchSize"),
                f"a software update of group {impact.group} takes {impact.batch_nodes} node(s) at a time and would "
                f"leave endpoint {impact.describe()}: raise the endpoint's replicas (and the group's instanceCount "
                "to hold them) so that a batch cannot hold them all"
                + (", or lower the batch (type INSTANCE_COUNT, value 1)" if impact.batch_nodes > 1 else ""),
            )


def roll_advisories(cfg: StackView) -> Iterable[ConfigAdvisory]:
    if not _creates_groups(cfg):
        return
    index = {g.name: i for i, g in enumerate(cfg.cluster.instance_groups)}
    for impact in roll_impacts_of(cfg):
        if impact.left_packed == 0 and (impact.left_spread > 0 or not cfg.is_prod):
            yield ConfigAdvisory(
                _key(index[impact.group], "softwareUpdates.maximumBatchSize"),
                f"during a software update {impact.describe()}: with the replicas on the same node(s) the endpoint "
                "stops serving for a batch",
                "node-roll-keeps-serving",
                "kubectl get pods -o wide (which nodes the replicas run on) before the roll",
            )


CHECKS: tuple[Check[StackView], ...] = (image_release_issues, roll_issues)
ADVISORIES: tuple[Advise[StackView], ...] = (image_release_advisories, roll_advisories)
