"""``hyperpod-inference:governance`` — HyperPod task governance for inference: add-on, cluster policy, team quotas.

What AWS documents, and where each fact comes from:

- **The add-on** ``amazon-sagemaker-hyperpod-taskgovernance`` installs Kueue and the SageMaker-managed Kueue objects
  (ClusterQueues, LocalQueues, WorkloadPriorityClasses, ResourceFlavors; aws-samples/awsome-distributed-training
  ``1.architectures/7.sagemaker-hyperpod-eks/task-governance/README.md``, which also requires Kubernetes 1.30 or
  later and no other Kueue installation). ``v1.6.0-eksbuild.1`` packages Kueue v0.19.2 and upgrades from v1.5 with
  ``update-addon``; from v1.3.x a direct ``update-addon`` to v1.5+ fails on the Kueue CRDs' ``v1alpha1`` stored
  version (AWS docs "Upgrade the task governance add-on", sagemaker-hyperpod-eks-operate-console-ui-governance-
  upgrade). So the package pins ``v1.6.0-eksbuild.1`` and refuses builds older than v1.5 (their upgrade path needs
  the console's migration, not ``pulumi up``); a build not in :data:`ADDON_BUILDS` is an advisory that
  ``tools.preflight.regional`` (``DescribeAddonVersions``) settles for the cluster's Kubernetes version.
- **The cluster policy** is SageMaker's ``ClusterSchedulerConfig`` (botocore ``sagemaker`` model: ``SchedulerConfig``
  with ``PriorityClasses`` [Name, Weight 0-100, at most 10], ``FairShare`` and ``IdleResourceSharing``
  Enabled|Disabled). No provider has it; ``components/cluster_scheduler_config.py`` drives it with boto3 and
  :func:`scheduler_config_request` builds its request, validated here against botocore's own shapes.
- **A team** is a ``ComputeQuota`` (pulumi-aws-native ``sagemaker.ComputeQuota`` = ``AWS::SageMaker::ComputeQuota``):
  per-instance-type GPUs/vCPU/memory or instance counts, ``ResourceSharingConfig`` (Lend, DontLend, LendAndBorrow;
  BorrowLimit), ``PreemptTeamTasks`` (Never, LowerPriority), ``FairShareWeight``. Its ``TeamName`` "is materialized
  as Kubernetes namespace ``hyperpod-ns-<TeamName>``" (the CloudFormation schema in cfn-lint 1.58 and the SDK's
  docstring), and the team's LocalQueue is ``hyperpod-ns-<team>-localqueue`` (aws/sagemaker-hyperpod-cli@a34f019a
  ``src/hyperpod_cli/constants/command_constants.py``: ``HYPERPOD_NAMESPACE_PREFIX``,
  ``SAGEMAKER_MANAGED_LOCAL_QUEUE_SUFFIX``).
- **For inference** (AWS docs "Task governance for model deployment on HyperPod",
  sagemaker-hyperpod-model-deployment-task-gov): dedicated inference priority classes with a high weight (such as
  100) so inference preempts other work; the team's quota sized for the expected peak; strict control (no lending or
  borrowing) or flexible sharing, where *borrowed pods are preemptible* and may be evicted when the lender reclaims;
  intra-team preemption for mixed workloads.
- **An endpoint** joins its team's queue with the Kueue labels ``kueue.x-k8s.io/queue-name`` and
  ``kueue.x-k8s.io/priority-class`` (the HyperPod CLI's ``KUEUE_QUEUE_NAME_LABEL_KEY`` /
  ``KUEUE_WORKLOAD_PRIORITY_CLASS_LABEL_KEY``, same file). The operator's CRD (operator 3.3,
  aws/sagemaker-hyperpod-cli@0986f2cc, ``python -m tools.fetch.crds`` fetches it) has **no field for pod labels** (``spec.kubernetes`` holds initContainers, schedulerName,
  serviceAccountName and volumes; 3.6 adds ``podTemplateAnnotations``, annotations only), so the labels go on the
  custom resource's ``metadata.labels``; whether the operator copies them onto the Deployment's pods is
  UNCONFIRMED [governance-labels-propagated] and the verify check ``governance-labels`` reads them off the
  pods. The WorkloadPriorityClass that task governance creates for a priority class is named
  ``<name>-priority``: UNCONFIRMED [governance-priority-class-name] (verify check ``governance-priority-classes``).

Checks, each with its three outcomes: an endpoint's peak (autoscaling max replicas x accelerators per pod) within its
team's quota, or, when the team borrows, an advisory that the pods above the quota are preemptible; inference
priority above every other class, else an advisory (AWS's recommendation, not a rule); all teams' quotas within the
instance groups' capacity per instance type (unknown hardware: an advisory); every team and priority class an
endpoint names exists; the botocore shapes of both requests.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any, Literal, Protocol

from pydantic import Field, field_validator

from policies import capacity_rules as cap

from .base import ConfigAdvisory, ConfigIssue, Model, join_path
from .checks import Advise, Check
from .cluster import ClusterConfig
from .endpoints import Endpoint
from .operator import EKSBUILD, parse_eks_version

ADDON_NAME = "amazon-sagemaker-hyperpod-taskgovernance"
# Add-on builds a source names, with what it packages (AWS docs, "Upgrade the task governance add-on").
ADDON_BUILDS: dict[str, str] = {"v1.6.0-eksbuild.1": "Kueue v0.19.2"}
ADDON_DEFAULT = "v1.6.0-eksbuild.1"
ADDON_MINIMUM = "v1.5.0-eksbuild.1"  # from v1.3.x, update-addon to v1.5+ fails (module docstring)
MIN_KUBERNETES = (1, 30)  # awsome-distributed-training task-governance README, Prerequisites
TEAM_NAMESPACE_PREFIX = "hyperpod-ns-"
LOCAL_QUEUE_SUFFIX = "-localqueue"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PRIORITY_CLASS_SUFFIX = "-priority"  # UNCONFIRMED [governance-priority-class-name] (module docstring)
VERIFY_LABELS = "python -m tools.verify (check governance-labels)"
PREFLIGHT_ADDON = f"python -m tools.preflight.regional (aws eks describe-addon-versions --addon-name {ADDON_NAME})"
# botocore sagemaker ClusterSchedulerPriorityClassName / ComputeQuotaTargetTeamName: [a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# A well-formed ARN of the botocore ClusterArn pattern: the request shapes are checked before the cluster exists.
PLACEHOLDER_CLUSTER_ARN = "arn:aws:sagemaker:us-east-1:000000000000:cluster/000000000000"
ACCELERATORS = (cap.GPU, cap.NEURON)


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def name_prefix(self) -> str: ...
    @property
    def common_tags(self) -> dict[str, str]: ...
    @property
    def cluster(self) -> ClusterConfig: ...
    @property
    def endpoints(self) -> Sequence[Endpoint]: ...
    @property
    def governance(self) -> GovernanceConfig: ...


class PriorityClassConfig(Model):
    """One priority class of the cluster policy (SchedulerConfig.PriorityClasses[])."""

    name: str = Field(pattern=NAME_PATTERN, max_length=40, description="Priority class name, e.g. inference.")
    weight: int = Field(ge=0, le=100, description="0-100; higher is admitted first and may preempt lower ones.")


class QuotaResourceConfig(Model):
    """A team's quota on one instance type (ComputeQuotaResourceConfig); give accelerators or whole instances."""

    instance_type: str = Field(pattern=r"^ml\.[a-z0-9-]+\.[a-z0-9]+$", description="A HyperPod instance type.")
    accelerators: int | None = Field(default=None, ge=0, description="GPUs (or Neuron devices) of that type.")
    count: int | None = Field(default=None, ge=0, description="Whole instances of that type (instead of parts).")
    v_cpu: float | None = Field(default=None, ge=0, description="vCPUs; SageMaker fills it in proportion if unset.")
    memory_in_gib: float | None = Field(default=None, ge=0, description="Memory in GiB; filled in proportion.")


class TeamConfig(Model):
    """One team: a ComputeQuota whose TeamName is the namespace ``hyperpod-ns-<name>`` its endpoints run in."""

    name: str = Field(pattern=NAME_PATTERN, max_length=40, description="Team name; namespace hyperpod-ns-<name>.")
    resources: list[QuotaResourceConfig] = Field(min_length=1, max_length=15)
    sharing: Literal["DontLend", "Lend", "LendAndBorrow"] = Field(
        default="DontLend",
        description="Idle resource sharing: DontLend (strict: the quota is always the team's), Lend, or "
        "LendAndBorrow (borrowed pods are preemptible).",
    )
    borrow_limit: int | None = Field(
        default=None, ge=0, le=10000, description="LendAndBorrow: how much above its quota the team may borrow, %."
    )
    preempt_team_tasks: Literal["Never", "LowerPriority"] = Field(
        default="LowerPriority", description="Intra-team preemption: higher-priority tasks preempt lower ones."
    )
    fair_share_weight: int | None = Field(default=None, ge=0, le=100, description="Weight for fair share, 0-100.")

    @property
    def namespace(self) -> str:
        return f"{TEAM_NAMESPACE_PREFIX}{self.name}"

    @property
    def local_queue(self) -> str:
        return f"{self.namespace}{LOCAL_QUEUE_SUFFIX}"


class GovernanceConfig(Model):
    """HyperPod task governance: the add-on, the cluster policy (priority classes, fair share, idle sharing) and one
    compute quota per team; endpoints join a team with ``team`` and ``priorityClass``."""

    enabled: bool = Field(default=False, description="Install task governance and create the policy and quotas.")
    addon_version: str = Field(
        default=ADDON_DEFAULT, pattern=EKSBUILD, description=f"Pinned {ADDON_NAME} version; at least {ADDON_MINIMUM}."
    )
    priority_classes: list[PriorityClassConfig] = Field(default_factory=list, max_length=10)
    fair_share: Literal["Enabled", "Disabled"] = Field(default="Enabled", description="Fair share across teams.")
    idle_resource_sharing: Literal["Enabled", "Disabled"] = Field(
        default="Enabled", description="Whether teams may lend and borrow idle compute at all."
    )
    teams: list[TeamConfig] = Field(default_factory=list)

    @field_validator("teams")
    @classmethod
    def _unique_teams(cls, teams: list[TeamConfig]) -> list[TeamConfig]:
        names = [t.name for t in teams]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"team names must be unique: {', '.join(dupes)}")
        return teams

    @field_validator("priority_classes")
    @classmethod
    def _unique_classes(cls, classes: list[PriorityClassConfig]) -> list[PriorityClassConfig]:
        names = [c.name for c in classes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"priority class names must be unique: {', '.join(dupes)}")
        return classes

    def team(self, name: str | None) -> TeamConfig | None:
        return next((t for t in self.teams if t.name == name), None)

    @property
    def namespaces(self) -> list[str]:
        """The namespaces task governance creates (one per team); nothing else creates them."""
        return [t.namespace for t in self.teams] if self.enabled else []


# --- what the endpoints carry ---------------------------------------------------------------------------------


def kueue_labels(endpoint: Endpoint) -> dict[str, str]:
    """The Kueue labels of an endpoint's custom resource (``metadata.labels``; see the module docstring)."""
    if endpoint.team is None:
        return {}
    labels = {QUEUE_LABEL: f"{TEAM_NAMESPACE_PREFIX}{endpoint.team}{LOCAL_QUEUE_SUFFIX}"}
    if endpoint.priority_class is not None:
        labels[PRIORITY_LABEL] = f"{endpoint.priority_class}{PRIORITY_CLASS_SUFFIX}"
    return labels


# --- the requests, validated against botocore's shapes ---------------------------------------------------------


@cache
def _sagemaker_model() -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model("sagemaker")


def request_problems(operation: str, params: Mapping[str, Any]) -> list[str]:
    """botocore's own validation of ``params`` for ``operation``, completed with what it leaves to the service.

    botocore's ParamValidator checks types, required members and the *minimum* of ranges and lengths; maxima, enums
    and patterns it leaves to the service (they change more often), so they are checked here against the same model
    (a pattern in Java-only syntax, ``\\p{L}``, is skipped)."""
    from botocore.validate import ParamValidator

    shape = _sagemaker_model().operation_model(operation).input_shape
    report = ParamValidator().validate(dict(params), shape)
    problems = [line.strip() for line in report.generate_report().splitlines()[1:] if line.strip()]
    problems.extend(_model_problems(shape, params, operation))
    return problems


def _model_problems(shape: Any, value: Any, path: str) -> Iterator[str]:
    meta = shape.metadata
    if shape.type_name == "structure" and isinstance(value, Mapping):
        for key, member in shape.members.items():
            if key in value:
                yield from _model_problems(member, value[key], f"{path}.{key}")
    elif shape.type_name == "list" and isinstance(value, list):
        if "max" in meta and len(value) > meta["max"]:
            yield f"Invalid length for parameter {path}, length: {len(value)}, valid max length: {meta['max']}"
        for i, item in enumerate(value):
            yield from _model_problems(shape.member, item, f"{path}[{i}]")
    elif shape.type_name in ("integer", "long", "float", "double") and isinstance(value, (int, float)):
        if "max" in meta and value > meta["max"]:
            yield f"Invalid value for parameter {path}, value: {value}, valid max value: {meta['max']}"
    elif shape.type_name == "string" and isinstance(value, str):
        if getattr(shape, "enum", None) and value not in shape.enum:
            yield f"Invalid value for parameter {path}, value: {value!r}, valid values: {', '.join(shape.enum)}"
        if "max" in meta and len(value) > meta["max"]:
            yield f"Invalid length for parameter {path}, length: {len(value)}, valid max length: {meta['max']}"
        pattern = meta.get("pattern")
        if pattern and "\\p{" not in pattern and re.fullmatch(pattern, value) is None:
            yield f"Invalid value for parameter {path}, value: {value!r}, does not match pattern {pattern}"


def scheduler_config_request(cfg: GovernanceConfig, *, name: str, cluster_arn: str) -> dict[str, Any]:
    """``CreateClusterSchedulerConfig`` parameters (without Tags)."""
    return {
        "Name": name,
        "ClusterArn": cluster_arn,
        "SchedulerConfig": scheduler_config(cfg),
    }


def scheduler_config(cfg: GovernanceConfig) -> dict[str, Any]:
    """``SchedulerConfig``: the priority classes, fair share and idle resource sharing."""
    return {
        "PriorityClasses": [{"Name": c.name, "Weight": c.weight} for c in cfg.priority_classes],
        "FairShare": cfg.fair_share,
        "IdleResourceSharing": cfg.idle_resource_sharing,
    }


def quota_resources(team: TeamConfig) -> list[dict[str, Any]]:
    """``ComputeQuotaResources`` of a team (API member names)."""
    out = []
    for r in team.resources:
        item: dict[str, Any] = {"InstanceType": r.instance_type}
        for key, api in (("accelerators", "Accelerators"), ("count", "Count")):
            if getattr(r, key) is not None:
                item[api] = getattr(r, key)
        if r.v_cpu is not None:
            item["VCpu"] = r.v_cpu
        if r.memory_in_gib is not None:
            item["MemoryInGiB"] = r.memory_in_gib
        out.append(item)
    return out


def compute_quota_request(team: TeamConfig, *, name: str, cluster_arn: str) -> dict[str, Any]:
    """``CreateComputeQuota`` parameters: what the aws-native ComputeQuota's handler sends for this team."""
    sharing: dict[str, Any] = {"Strategy": team.sharing}
    if team.borrow_limit is not None:
        sharing["BorrowLimit"] = team.borrow_limit
    target: dict[str, Any] = {"TeamName": team.name}
    if team.fair_share_weight is not None:
        target["FairShareWeight"] = team.fair_share_weight
    return {
        "Name": name,
        "ClusterArn": cluster_arn,
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": quota_resources(team),
            "ResourceSharingConfig": sharing,
            "PreemptTeamTasks": team.preempt_team_tasks,
        },
        "ComputeQuotaTarget": target,
        "ActivationState": "Enabled",
    }


def scheduler_config_name(name_prefix: str) -> str:
    return f"{name_prefix}-policy"


def compute_quota_name(name_prefix: str, team: TeamConfig) -> str:
    return f"{name_prefix}-{team.name}"


# --- checks -------------------------------------------------------------------------------------------------------


def _governance_checks(cfg: StackView) -> Iterator[ConfigIssue]:
    gov = cfg.governance
    if not gov.enabled:
        if gov.teams or gov.priority_classes:
            yield ConfigIssue(
                "governance.enabled",
                "teams or priorityClasses are set but governance is not enabled; set enabled: true or remove them",
            )
        return
    if parse_eks_version(gov.addon_version) < parse_eks_version(ADDON_MINIMUM):
        yield ConfigIssue(
            "governance.addonVersion",
            f"{ADDON_NAME} {gov.addon_version} is below {ADDON_MINIMUM}: an update-addon from v1.3.x to v1.5+ fails "
            "on the Kueue CRDs' stored version (AWS docs, Upgrade the task governance add-on); pin "
            f"{ADDON_DEFAULT}",
        )
    version = tuple(int(p) for p in cfg.cluster.kubernetes_version.split(".")[:2])
    if version < MIN_KUBERNETES:
        yield ConfigIssue(
            "cluster.kubernetesVersion",
            f"task governance needs Kubernetes 1.30 or later (got {cfg.cluster.kubernetes_version})",
        )
    if not gov.teams:
        yield ConfigIssue("governance.teams", "governance is enabled without a team; add at least one team")
    request = scheduler_config_request(
        gov, name=scheduler_config_name(cfg.name_prefix), cluster_arn=PLACEHOLDER_CLUSTER_ARN
    )
    for problem in request_problems("CreateClusterSchedulerConfig", request):
        yield ConfigIssue("governance", f"CreateClusterSchedulerConfig (botocore sagemaker model): {problem}")
    for i, team in enumerate(gov.teams):
        where = join_path("governance", "teams", i)
        quota = compute_quota_request(
            team, name=compute_quota_name(cfg.name_prefix, team), cluster_arn=PLACEHOLDER_CLUSTER_ARN
        )
        for problem in request_problems("CreateComputeQuota", quota):
            yield ConfigIssue(where, f"CreateComputeQuota (botocore sagemaker model): {problem}")
        types = [r.instance_type for r in team.resources]
        for j, r in enumerate(team.resources):
            if types.count(r.instance_type) > 1 and types.index(r.instance_type) != j:
                yield ConfigIssue(
                    join_path(where, "resources", j, "instanceType"), f"{r.instance_type} is listed twice"
                )
            if r.accelerators is None and r.count is None:
                yield ConfigIssue(
                    join_path(where, "resources", j),
                    "give accelerators (GPUs / Neuron devices) or count (whole instances) of this instance type",
                )
        if team.borrow_limit is not None and team.sharing != "LendAndBorrow":
            yield ConfigIssue(f"{where}.borrowLimit", f"applies only with sharing: LendAndBorrow (got {team.sharing})")
        if team.sharing != "DontLend" and gov.idle_resource_sharing == "Disabled":
            yield ConfigIssue(
                f"{where}.sharing",
                f"{team.sharing} needs governance.idleResourceSharing: Enabled (the cluster policy turns sharing off)",
            )


def _endpoint_membership(cfg: StackView) -> Iterator[ConfigIssue]:
    gov = cfg.governance
    classes = [c.name for c in gov.priority_classes]
    for i, ep in enumerate(cfg.endpoints):
        where = join_path("endpoints", i)
        if ep.team is None and ep.priority_class is None:
            continue
        if not gov.enabled:
            key = "team" if ep.team is not None else "priorityClass"
            yield ConfigIssue(f"{where}.{key}", "names task governance, which is not enabled (governance.enabled)")
            continue
        if ep.team is None:
            yield ConfigIssue(
                f"{where}.priorityClass",
                "needs team: Kueue only admits (and prioritizes) a workload that names its team's queue",
            )
            continue
        team = gov.team(ep.team)
        if team is None:
            allowed = ", ".join(t.name for t in gov.teams) or "none declared"
            yield ConfigIssue(f"{where}.team", f"no team {ep.team!r} in governance.teams (allowed: {allowed})")
            continue
        if ep.namespace != team.namespace:
            yield ConfigIssue(
                f"{where}.namespace",
                f"must be {team.namespace}: team {team.name}'s queue ({team.local_queue}) lives in the namespace "
                f"task governance creates for it (got {ep.namespace!r})",
            )
        if ep.priority_class is not None and ep.priority_class not in classes:
            allowed = ", ".join(classes) or "none declared"
            yield ConfigIssue(
                f"{where}.priorityClass",
                f"no priority class {ep.priority_class!r} in governance.priorityClasses (allowed: {allowed})",
            )


@dataclass(frozen=True)
class Peak:
    """What one endpoint may take of one instance type at its autoscaling maximum."""

    endpoint: int
    instance_type: str
    accelerators: int
    replicas: int


def endpoint_peaks(ep: Endpoint, index: int) -> tuple[list[Peak], list[str]]:
    """Accelerators per instance type at the endpoint's maximum replicas, and what cannot be known offline."""
    workload = cap.workload_from_cr(ep.custom_resource(None), str(index), ep.name)
    peaks, unknown = [], []
    for pod in workload.pods:
        if pod.resources is None:
            unknown.append(f"{pod.role} pods: the operator chooses their resources (JumpStartModel)")
            continue
        if not pod.instance_types or len(pod.instance_types) != 1:
            unknown.append(f"{pod.role} pods: more than one instance type, which one serves is decided at runtime")
            continue
        requests, _ = cap.effective_requests(pod.resources)
        per_pod = sum(int(requests.get(r, 0)) for r in ACCELERATORS)
        peaks.append(Peak(index, pod.instance_types[0], per_pod * pod.replicas_max, pod.replicas_max))
    return peaks, unknown


def quota_accelerators(resource: QuotaResourceConfig) -> int | None:
    """The accelerators a quota entry grants (``count`` whole instances, or ``accelerators``); None if unknown."""
    if resource.accelerators is not None:
        return resource.accelerators
    spec = cap.instance_spec(resource.instance_type)
    if resource.count is None or spec is None:
        return None
    return resource.count * (spec.gpus or spec.neuron_devices)


def _peak_findings(cfg: StackView) -> Iterator[ConfigIssue | ConfigAdvisory]:
    gov = cfg.governance
    if not gov.enabled:
        return
    demand: dict[tuple[str, str], list[Peak]] = defaultdict(list)
    for i, ep in enumerate(cfg.endpoints):
        team = gov.team(ep.team)
        if team is None:
            continue
        peaks, unknown = endpoint_peaks(ep, i)
        for what in unknown:
            yield ConfigAdvisory(
                join_path("endpoints", i),
                f"its peak against team {team.name}'s quota cannot be computed offline: {what}",
                "governance-endpoint-peak-fits-quota",
                "the team's ClusterQueue (kubectl get clusterqueue) while the endpoint is at maxReplicaCount",
            )
        for p in peaks:
            demand[(team.name, p.instance_type)].append(p)
    for (team_name, itype), peaks in demand.items():
        team = gov.team(team_name)
        assert team is not None
        t = gov.teams.index(team)
        entry = next((r for r in team.resources if r.instance_type == itype), None)
        granted = 0 if entry is None else quota_accelerators(entry)
        need = sum(p.accelerators for p in peaks)
        names = ", ".join(f"endpoints[{p.endpoint}] {cfg.endpoints[p.endpoint].name} ({p.replicas} x)" for p in peaks)
        quota_key = (
            join_path("governance", "teams", t, "resources", team.resources.index(entry))
            if entry is not None
            else join_path("governance", "teams", t, "resources")
        )
        if granted is None:
            yield ConfigAdvisory(
                quota_key,
                f"team {team_name}'s quota on {itype} is given in instances of a type whose accelerator count is not "
                f"in the instance data; its endpoints need {need} at their peak ({names})",
                "governance-endpoint-peak-fits-quota",
                "aws sagemaker describe-compute-quota",
            )
            continue
        if need <= granted:
            continue
        text = (
            f"team {team_name}'s quota on {itype} is {granted} accelerators but its endpoints need {need} at their "
            f"autoscaling maximum: {names}"
        )
        if team.sharing == "LendAndBorrow" and gov.idle_resource_sharing == "Enabled":
            yield ConfigAdvisory(
                quota_key,
                f"{text}; the {need - granted} above the quota are borrowed, and borrowed pods are preemptible: the "
                "lending team may reclaim them during a traffic peak (AWS docs sagemaker-hyperpod-model-deployment-"
                "task-gov, Flexible Resource Sharing)",
                "governance-borrowed-pods-preemptible",
                "the team's ClusterQueue and the lending teams' usage at peak (kubectl get clusterqueue)",
            )
        else:
            yield ConfigIssue(
                quota_key,
                f"{text}; Kueue admits no pod above the quota ({team.sharing}): raise the quota to {need}, lower "
                f"maxReplicaCount, or set sharing: LendAndBorrow (its borrowed pods are preemptible)",
            )


def _inference_priority(cfg: StackView) -> Iterator[ConfigAdvisory]:
    gov = cfg.governance
    if not gov.enabled:
        return
    named = {ep.priority_class for ep in cfg.endpoints if ep.priority_class is not None}
    weights = {c.name: c.weight for c in gov.priority_classes}
    others = {n: w for n, w in weights.items() if n not in named}
    for i, ep in enumerate(cfg.endpoints):
        if ep.team is None:
            continue
        if ep.priority_class is None:
            yield ConfigAdvisory(
                join_path("endpoints", i, "team"),
                "no priorityClass: the endpoint gets no inference priority and can be preempted by any prioritized "
                "work of its team (AWS recommends dedicated inference classes with a high weight)",
                "governance-inference-priority-highest",
                "this stack file",
            )
            continue
        mine = weights.get(ep.priority_class)
        above = sorted(n for n, w in others.items() if mine is not None and w >= mine)
        if above:
            yield ConfigAdvisory(
                join_path("endpoints", i, "priorityClass"),
                f"priority class {ep.priority_class} (weight {mine}) is not above {', '.join(above)}: AWS recommends "
                "inference classes weighted above every other so inference preempts them (sagemaker-hyperpod-model-"
                "deployment-task-gov, Priority class configuration)",
                "governance-inference-priority-highest",
                "this stack file",
            )


def _quotas_within_capacity(cfg: StackView) -> Iterator[ConfigIssue | ConfigAdvisory]:
    gov = cfg.governance
    if not gov.enabled or not gov.teams:
        return
    groups: dict[str, int] = defaultdict(int)
    for g in cfg.cluster.instance_groups:
        groups[g.instance_type] += g.instance_count
    adopted = cfg.cluster.existing is not None and cfg.cluster.existing.hyperpod_cluster_arn is not None
    allocated: dict[str, Fraction] = defaultdict(Fraction)
    instances: dict[str, int] = defaultdict(int)
    unknown: set[str] = set()
    for team in gov.teams:
        for r in team.resources:
            if r.count is not None:
                instances[r.instance_type] += r.count
            acc = quota_accelerators(r)
            if acc is None:
                unknown.add(r.instance_type)
            else:
                allocated[r.instance_type] += acc
    for itype in sorted({*allocated, *instances, *unknown}):
        teams = ", ".join(t.name for t in gov.teams if any(r.instance_type == itype for r in t.resources))
        if adopted:
            yield ConfigAdvisory(
                "governance.teams",
                f"quotas on {itype} ({teams}) against an adopted HyperPod cluster: its instance groups are its owner's",
                "governance-quotas-within-capacity",
                "python -m tools.preflight.regional (DescribeCluster instance groups)",
            )
            continue
        if itype not in groups:
            yield ConfigIssue(
                "governance.teams",
                f"teams {teams} have quota on {itype}, which no instance group has (cluster.instanceGroups: "
                f"{', '.join(sorted(groups)) or 'none'})",
            )
            continue
        spec = cap.instance_spec(itype)
        if instances[itype] > groups[itype]:
            yield ConfigIssue(
                "governance.teams",
                f"quotas of {teams} on {itype} add up to {instances[itype]} instances; the instance groups have "
                f"{groups[itype]}",
            )
        if itype in unknown or spec is None:
            yield ConfigAdvisory(
                "governance.teams",
                f"{itype}: the instance data has no accelerator count, so the teams' quotas ({teams}) cannot be "
                "compared with the instance groups offline",
                "governance-quotas-within-capacity",
                "aws sagemaker describe-cluster and describe-compute-quota",
            )
            continue
        capacity = groups[itype] * (spec.gpus or spec.neuron_devices)
        if allocated[itype] > capacity:
            yield ConfigIssue(
                "governance.teams",
                f"quotas of {teams} on {itype} add up to {allocated[itype]} accelerators; the instance groups have "
                f"{capacity} ({groups[itype]} x {spec.gpus or spec.neuron_devices})",
            )


def _addon_build_listed(cfg: StackView) -> Iterator[ConfigAdvisory]:
    gov = cfg.governance
    if gov.enabled and gov.addon_version not in ADDON_BUILDS:
        yield ConfigAdvisory(
            "governance.addonVersion",
            f"{ADDON_NAME} {gov.addon_version} is not a build a stored source names ({', '.join(ADDON_BUILDS)}); "
            f"whether it exists for Kubernetes {cfg.cluster.kubernetes_version} cannot be known offline",
            "governance-addon-build-listed",
            PREFLIGHT_ADDON,
        )
    if gov.enabled:
        labelled = [i for i, ep in enumerate(cfg.endpoints) if ep.team is not None]
        if labelled:
            yield ConfigAdvisory(
                "endpoints",
                "the Kueue queue and priority labels go on the custom resources' metadata (the operator's CRD has "
                "no pod-label field); whether the operator copies them onto its pods is not known (see "
                "governance-labels-propagated in docs/first-deploy.md), and pods "
                f"without them bypass the team's quota (endpoints {', '.join(map(str, labelled))})",
                "governance-labels-propagated",
                VERIFY_LABELS,
            )


def _issues_only(fn: Callable[[StackView], Iterable[ConfigIssue | ConfigAdvisory]]) -> Check[StackView]:
    def issues(cfg: StackView) -> Iterator[ConfigIssue]:
        yield from (f for f in fn(cfg) if isinstance(f, ConfigIssue))

    return issues


def _advisories_only(fn: Callable[[StackView], Iterable[ConfigIssue | ConfigAdvisory]]) -> Advise[StackView]:
    def advisories(cfg: StackView) -> Iterator[ConfigAdvisory]:
        yield from (f for f in fn(cfg) if isinstance(f, ConfigAdvisory))

    return advisories


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (
    _governance_checks,
    _endpoint_membership,
    _issues_only(_peak_findings),
    _issues_only(_quotas_within_capacity),
)
ADVISORIES: tuple[Advise[StackView], ...] = (
    _advisories_only(_peak_findings),
    _advisories_only(_quotas_within_capacity),
    _inference_priority,
    _addon_build_listed,
)


def findings(cfg: StackView) -> tuple[list[ConfigIssue], list[ConfigAdvisory]]:
    """Every governance finding of a stack (the tests and the docs page read both outcomes at once)."""
    return [i for check in CHECKS for i in check(cfg)], [a for advise in ADVISORIES for a in advise(cfg)]
