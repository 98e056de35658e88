"""Task governance for inference (issue 39): the config's checks with their three outcomes, the requests against
botocore's sagemaker model, the cluster-policy dynamic provider against botocore's Stubber, what staging registers
(the add-on, the policy and the quotas with their inputs; the endpoints' Kueue labels), and the rehearsal's order
(add-on, then policy and quotas, then endpoints; destroy in reverse) with an edge removed."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from components.cluster_scheduler_config import (
    ClusterSchedulerConfigProvider,
    SchedulerConfigError,
    create_request,
    update_request,
)
from components.config import ConfigError
from components.config.governance import request_problems
from components.config.loader import parse_stack_mapping
from components.config.validation import run_advisories
from tests.conftest import stack_mapping
from tools.plan.mocks import Registration
from tools.rehearse import rehearse

GOV = "hyperpod-inference:governance"
EPS = "hyperpod-inference:endpoints"
ADDON = "aws:eks/addon:Addon"
QUOTA = "aws-native:sagemaker:ComputeQuota"
DYNAMIC = "pulumi-python:dynamic:Resource"
IEC = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
CLUSTER = "arn:aws:sagemaker:eu-west-2:123456789012:cluster/k3x9p2m7q1ab"
CONFIG_ID = "a1b2c3d4e5f6"
POLICY_ARN = f"arn:aws:sagemaker:eu-west-2:123456789012:cluster-scheduler-config/{CONFIG_ID}"


def _issues(mapping: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping("staging", mapping)
    return [i.render() for i in err.value.issues]


def _advisories(mapping: dict[str, Any]) -> list[str]:
    return [a.render() for a in run_advisories(parse_stack_mapping("staging", mapping))]


# --- the checks: each rule's outcomes ---------------------------------------------------------------------------


def test_staging_is_valid_and_advises_what_it_cannot_settle() -> None:
    advisories = _advisories(stack_mapping("staging"))
    borrowed = [a for a in advisories if "governance-borrowed-pods-preemptible" in a]
    assert borrowed == [
        "hyperpod-inference:governance.teams[1].resources[0]: team research's quota on ml.p5.4xlarge is 1 accelerators "
        "but its endpoints need 2 at their autoscaling maximum: endpoints[1] llama-8b-kvaware (2 x); the 1 above the "
        "quota are borrowed, and borrowed pods are preemptible: the lending team may reclaim them during a traffic "
        "peak (AWS docs sagemaker-hyperpod-model-deployment-task-gov, Flexible Resource Sharing) "
        "[governance-borrowed-pods-preemptible; checked by the team's ClusterQueue and the lending teams' usage at "
        "peak (kubectl get clusterqueue)]"
    ]
    assert any("[governance-labels-propagated; checked by python -m tools.verify" in a for a in advisories)
    assert not [a for a in advisories if "governance-addon-build-listed" in a]  # v1.6.0-eksbuild.1 is sourced


def test_a_quota_below_the_peak_is_refused_naming_both() -> None:
    mapping = stack_mapping("staging")
    mapping[GOV]["teams"][1]["sharing"] = "DontLend"
    del mapping[GOV]["teams"][1]["borrowLimit"]
    assert _issues(mapping) == [
        "hyperpod-inference:governance.teams[1].resources[0]: team research's quota on ml.p5.4xlarge is 1 "
        "accelerators but its endpoints need 2 at their autoscaling maximum: endpoints[1] llama-8b-kvaware (2 x); "
        "Kueue admits no pod above the quota (DontLend): raise the quota to 2, lower maxReplicaCount, or set "
        "sharing: LendAndBorrow (its borrowed pods are preemptible)"
    ]


def test_borrowing_needs_idle_resource_sharing_on() -> None:
    mapping = stack_mapping("staging")
    mapping[GOV]["idleResourceSharing"] = "Disabled"
    issues = _issues(mapping)
    assert (
        "hyperpod-inference:governance.teams[1].sharing: LendAndBorrow needs governance.idleResourceSharing: Enabled "
        "(the cluster policy turns sharing off)" in issues
    )
    # and without sharing the peak above the quota is refused, not advised
    assert any(i.startswith("hyperpod-inference:governance.teams[1].resources[0]: team research") for i in issues)


def test_the_peak_counts_autoscaling_max_replicas() -> None:
    mapping = stack_mapping("staging")
    spec = mapping[EPS][0]["spec"]
    spec["autoScalingSpec"] = {"minReplicaCount": 1, "maxReplicaCount": 3}
    issues = _issues(mapping)
    assert [i for i in issues if "team serving" in i] == [
        "hyperpod-inference:governance.teams[0].resources[0]: team serving's quota on ml.p5.4xlarge is 2 "
        "accelerators but its endpoints need 3 at their autoscaling maximum: endpoints[0] llama-8b-prefix (3 x); "
        "Kueue admits no pod above the quota (DontLend): raise the quota to 3, lower maxReplicaCount, or set "
        "sharing: LendAndBorrow (its borrowed pods are preemptible)"
    ]


def test_a_team_without_quota_on_the_endpoints_type_has_quota_zero() -> None:
    mapping = stack_mapping("staging")
    mapping[GOV]["teams"][0]["resources"] = [{"instanceType": "ml.m5.2xlarge", "count": 1}]
    issues = _issues(mapping)
    assert any(
        i.startswith("hyperpod-inference:governance.teams[0].resources: team serving's quota on ml.p5.4xlarge is 0")
        for i in issues
    ), issues


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda m: m[EPS][0].__setitem__("team", "platform"),
            "hyperpod-inference:endpoints[0].team: no team 'platform' in governance.teams (allowed: serving, research)",
        ),
        (
            lambda m: m[EPS][0].__setitem__("priorityClass", "urgent"),
            "hyperpod-inference:endpoints[0].priorityClass: no priority class 'urgent' in governance.priorityClasses "
            "(allowed: inference, experimentation, training)",
        ),
        (
            lambda m: m[EPS][0].__setitem__("namespace", "inference"),
            "hyperpod-inference:endpoints[0].namespace: must be hyperpod-ns-serving: team serving's queue "
            "(hyperpod-ns-serving-localqueue) lives in the namespace task governance creates for it (got 'inference')",
        ),
        (
            lambda m: m[EPS][0].pop("team"),
            "hyperpod-inference:endpoints[0].priorityClass: needs team: Kueue only admits (and prioritizes) a workload "
            "that names its team's queue",
        ),
        (
            lambda m: m[GOV].__setitem__("enabled", False),
            "hyperpod-inference:governance.enabled: teams or priorityClasses are set but governance is not enabled; "
            "set enabled: true or remove them",
        ),
        (
            lambda m: m[GOV].__setitem__("addonVersion", "v1.3.0-eksbuild.1"),
            "hyperpod-inference:governance.addonVersion: amazon-sagemaker-hyperpod-taskgovernance v1.3.0-eksbuild.1 is "
            "below v1.5.0-eksbuild.1: an update-addon from v1.3.x to v1.5+ fails on the Kueue CRDs' stored version "
            "(AWS docs, Upgrade the task governance add-on); pin v1.6.0-eksbuild.1",
        ),
        (
            lambda m: m[GOV]["teams"][0]["resources"][0].__setitem__("accelerators", 3),
            "hyperpod-inference:governance.teams: quotas of serving, research on ml.p5.4xlarge add up to 4 "
            "accelerators; the instance groups have 3 (3 x 1)",
        ),
        (
            lambda m: m[GOV]["teams"][1]["resources"].append({"instanceType": "ml.g5.12xlarge", "accelerators": 4}),
            "hyperpod-inference:governance.teams: teams research have quota on ml.g5.12xlarge, which no instance group "
            "has (cluster.instanceGroups: ml.m5.2xlarge, ml.p5.4xlarge)",
        ),
        (
            lambda m: m[GOV]["teams"][0].__setitem__("borrowLimit", 20),
            "hyperpod-inference:governance.teams[0].borrowLimit: applies only with sharing: LendAndBorrow (got DontLend)",
        ),
        (
            lambda m: m[GOV]["teams"][0]["resources"][0].pop("accelerators"),
            "hyperpod-inference:governance.teams[0].resources[0]: give accelerators (GPUs / Neuron devices) or count "
            "(whole instances) of this instance type",
        ),
    ],
)
def test_refusals_name_the_key(mutate: Any, expected: str) -> None:
    mapping = stack_mapping("staging")
    mutate(mapping)
    assert expected in _issues(mapping)


def test_names_task_governance_without_it() -> None:
    mapping = stack_mapping("staging")
    del mapping[GOV]
    assert "hyperpod-inference:endpoints[0].team: names task governance, which is not enabled (governance.enabled)" in (
        _issues(mapping)
    )


def test_inference_priority_below_another_class_is_an_advisory() -> None:
    mapping = stack_mapping("staging")
    mapping[GOV]["priorityClasses"][2]["weight"] = 100  # training as high as inference
    advisories = [a for a in _advisories(mapping) if "governance-inference-priority-highest" in a]
    assert advisories == [
        "hyperpod-inference:endpoints[0].priorityClass: priority class inference (weight 100) is not above training: "
        "AWS recommends inference classes weighted above every other so inference preempts them (sagemaker-hyperpod-"
        "model-deployment-task-gov, Priority class configuration) [governance-inference-priority-highest; checked by "
        "this stack file]",
        "hyperpod-inference:endpoints[1].priorityClass: priority class experimentation (weight 50) is not above "
        "training: AWS recommends inference classes weighted above every other so inference preempts them "
        "(sagemaker-hyperpod-model-deployment-task-gov, Priority class configuration) "
        "[governance-inference-priority-highest; checked by this stack file]",
    ]
    assert not [a for a in _advisories(stack_mapping("staging")) if "governance-inference-priority-highest" in a]


def test_an_unlisted_addon_build_is_an_advisory_for_preflight() -> None:
    mapping = stack_mapping("staging")
    mapping[GOV]["addonVersion"] = "v1.7.0-eksbuild.1"
    (advisory,) = [a for a in _advisories(mapping) if "governance-addon-build-listed" in a]
    assert "checked by python -m tools.preflight.regional (aws eks describe-addon-versions" in advisory


def test_quota_in_whole_instances_of_unknown_hardware_is_an_advisory(monkeypatch: pytest.MonkeyPatch) -> None:
    from policies import capacity_rules as cap

    mapping = stack_mapping("staging")
    mapping[GOV]["teams"][0]["resources"] = [{"instanceType": "ml.p5.4xlarge", "count": 2}]
    real = cap.instance_spec
    monkeypatch.setattr(cap, "instance_spec", lambda t: None if t == "ml.p5.4xlarge" else real(t))
    advisories = _advisories(mapping)
    assert any("governance-quotas-within-capacity" in a and "no accelerator count" in a for a in advisories)
    assert any("governance-endpoint-peak-fits-quota" in a and "team serving" in a for a in advisories)


# --- the requests against botocore's model ---------------------------------------------------------------------


def test_botocore_validates_the_requests() -> None:
    good = {
        "Name": "hpi-staging-policy",
        "ClusterArn": CLUSTER,
        "SchedulerConfig": {"PriorityClasses": [{"Name": "inference", "Weight": 100}], "FairShare": "Enabled"},
    }
    assert request_problems("CreateClusterSchedulerConfig", good) == []
    bad = copy.deepcopy(good)
    bad["SchedulerConfig"]["PriorityClasses"][0]["Weight"] = 101
    bad["SchedulerConfig"]["FairShare"] = "On"
    problems = request_problems("CreateClusterSchedulerConfig", bad)
    assert any("Weight" in p and "101" in p for p in problems), problems
    assert any("FairShare" in p and "'On'" in p for p in problems), problems
    quota = {
        "Name": "q",
        "ClusterArn": CLUSTER,
        "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.p9.huge", "Accelerators": 1}]},
        "ComputeQuotaTarget": {"TeamName": "serving"},
    }
    assert any("InstanceType" in p and "ml.p9.huge" in p for p in request_problems("CreateComputeQuota", quota))


def test_an_instance_type_botocore_does_not_list_is_refused_by_the_config() -> None:
    mapping = stack_mapping("staging")
    mapping[GOV]["teams"][0]["resources"].append({"instanceType": "ml.p9.huge", "accelerators": 1})
    assert any(
        i.startswith(
            "hyperpod-inference:governance.teams[0]: CreateComputeQuota (botocore sagemaker model): Invalid "
            "value for parameter CreateComputeQuota.ComputeQuotaConfig.ComputeQuotaResources[1].InstanceType"
        )
        for i in _issues(mapping)
    )


# --- the cluster-policy provider with botocore's Stubber -------------------------------------------------------


PROPS: dict[str, Any] = {
    "resourceKind": "hyperpod:ClusterSchedulerConfig",
    "name": "hpi-staging-policy",
    "clusterArn": CLUSTER,
    "region": "eu-west-2",
    "schedulerConfig": {
        "PriorityClasses": [{"Name": "inference", "Weight": 100}, {"Name": "training", "Weight": 10}],
        "FairShare": "Enabled",
        "IdleResourceSharing": "Enabled",
    },
    "description": "policy",
    "tags": {"team": "ml"},
    "waitTimeoutSeconds": 60,
}


class Rig:
    def __init__(self) -> None:
        self.client = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b").client(
            "sagemaker", region_name="eu-west-2"
        )
        self.stub = Stubber(self.client)
        self.now = 0.0
        self.logs: list[str] = []

        def sleep(seconds: float) -> None:
            self.now += seconds

        self.provider = ClusterSchedulerConfigProvider(
            client_factory=lambda _s, region: self.client, sleep=sleep, clock=lambda: self.now, log=self.logs.append
        )

    def describe(self, status: str, version: int = 1, **extra: Any) -> None:
        self.stub.add_response(
            "describe_cluster_scheduler_config",
            {
                "ClusterSchedulerConfigArn": POLICY_ARN,
                "ClusterSchedulerConfigId": CONFIG_ID,
                "Name": "hpi-staging-policy",
                "ClusterSchedulerConfigVersion": version,
                "Status": status,
                "ClusterArn": CLUSTER,
                "SchedulerConfig": PROPS["schedulerConfig"],
                "CreationTime": "2026-12-01T00:00:00Z",
                **extra,
            },
            {"ClusterSchedulerConfigId": CONFIG_ID},
        )


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = Rig()
    r.stub.activate()
    yield r
    r.stub.assert_no_pending_responses()


def test_create_sends_the_validated_request_and_waits_for_created(rig: Rig) -> None:
    request = create_request(PROPS)
    assert request["Tags"] == [{"Key": "team", "Value": "ml"}]
    rig.stub.add_response(
        "create_cluster_scheduler_config",
        {"ClusterSchedulerConfigArn": POLICY_ARN, "ClusterSchedulerConfigId": CONFIG_ID},
        request,
    )
    rig.describe("Creating")
    rig.describe("Created")
    result = rig.provider.create(dict(PROPS))
    assert result.id == CONFIG_ID
    assert result.outs["arn"] == POLICY_ARN and result.outs["version"] == 1 and result.outs["status"] == "Created"
    assert rig.now == 10.0  # one poll


def test_create_failed_is_one_error_with_the_reason(rig: Rig) -> None:
    rig.stub.add_response(
        "create_cluster_scheduler_config",
        {"ClusterSchedulerConfigArn": POLICY_ARN, "ClusterSchedulerConfigId": CONFIG_ID},
        create_request(PROPS),
    )
    rig.describe("CreateFailed", FailureReason="a cluster policy already exists for this cluster")
    with pytest.raises(SchedulerConfigError, match="CreateFailed: a cluster policy already exists"):
        rig.provider.create(dict(PROPS))


def test_a_request_botocore_refuses_never_leaves(rig: Rig) -> None:
    bad = copy.deepcopy(PROPS)
    bad["schedulerConfig"]["PriorityClasses"][0]["Weight"] = 500
    with pytest.raises(SchedulerConfigError, match="does not match botocore's model"):
        rig.provider.create(bad)


def test_update_sends_the_current_version_and_waits(rig: Rig) -> None:
    news = copy.deepcopy(PROPS)
    news["schedulerConfig"]["PriorityClasses"][1]["Weight"] = 20
    news["tags"] = {"team": "ml", "cost": "inference"}
    rig.describe("Created", version=3)
    rig.stub.add_response(
        "update_cluster_scheduler_config",
        {"ClusterSchedulerConfigArn": POLICY_ARN, "ClusterSchedulerConfigVersion": 4},
        update_request(CONFIG_ID, 3, news),
    )
    rig.describe("Updated", version=4)
    rig.stub.add_response(
        "add_tags", {"Tags": []}, {"ResourceArn": POLICY_ARN, "Tags": [{"Key": "cost", "Value": "inference"}]}
    )
    result = rig.provider.update(CONFIG_ID, dict(PROPS), news)
    assert result.outs["version"] == 4
    assert update_request(CONFIG_ID, 3, news)["TargetVersion"] == 3


def test_delete_waits_until_gone(rig: Rig) -> None:
    rig.stub.add_response("delete_cluster_scheduler_config", {}, {"ClusterSchedulerConfigId": CONFIG_ID})
    rig.describe("Deleting")
    rig.stub.add_client_error(
        "describe_cluster_scheduler_config",
        service_error_code="ResourceNotFound",
        expected_params={"ClusterSchedulerConfigId": CONFIG_ID},
    )
    rig.provider.delete(CONFIG_ID, dict(PROPS))


def test_access_denied_names_the_actions(rig: Rig) -> None:
    rig.stub.add_client_error("create_cluster_scheduler_config", service_error_code="AccessDeniedException")
    with pytest.raises(
        SchedulerConfigError, match=r"sagemaker:CreateClusterSchedulerConfig.*eks:AssociateAccessPolicy"
    ):
        rig.provider.create(dict(PROPS))


def test_diff_replaces_on_name_and_cluster_updates_the_policy() -> None:
    provider = ClusterSchedulerConfigProvider()
    assert provider.diff(CONFIG_ID, PROPS, {**PROPS, "clusterArn": CLUSTER.replace("k3x9", "zzzz")}).replaces == [
        "clusterArn"
    ]
    changed = provider.diff(CONFIG_ID, PROPS, {**PROPS, "schedulerConfig": {"FairShare": "Disabled"}})
    assert changed.changes is True and not changed.replaces
    assert provider.diff(CONFIG_ID, PROPS, dict(PROPS)).changes is False


# --- what staging registers ------------------------------------------------------------------------------------


def _one(regs: list[Registration], name: str) -> Registration:
    found = [r for r in regs if r.name == name]
    assert len(found) == 1, f"{name} is not registered once"
    return found[0]


def test_staging_registers_the_addon_policy_and_quotas_with_their_inputs(stack_runs: Any) -> None:
    run = stack_runs["staging"]
    addon = run.named(ADDON, "governance-addon")
    assert addon.inputs["addonName"] == "amazon-sagemaker-hyperpod-taskgovernance"
    assert addon.inputs["addonVersion"] == "v1.6.0-eksbuild.1"
    assert addon.custom_timeouts.get("create") == "30m"
    policy = run.named(DYNAMIC, "governance-policy")
    assert policy.inputs["resourceKind"] == "hyperpod:ClusterSchedulerConfig"
    assert policy.inputs["name"] == "hpi-staging-policy"
    assert policy.inputs["region"] == "eu-west-2"
    assert policy.inputs["schedulerConfig"] == {
        "PriorityClasses": [
            {"Name": "inference", "Weight": 100},
            {"Name": "experimentation", "Weight": 50},
            {"Name": "training", "Weight": 10},
        ],
        "FairShare": "Enabled",
        "IdleResourceSharing": "Enabled",
    }
    assert (
        request_problems("CreateClusterSchedulerConfig", create_request({**policy.inputs, "clusterArn": CLUSTER})) == []
    )
    serving = run.named(QUOTA, "governance-quota-serving").inputs
    assert serving["name"] == "hpi-staging-serving"
    assert serving["computeQuotaTarget"] == {"teamName": "serving", "fairShareWeight": 100}
    assert serving["computeQuotaConfig"] == {
        "computeQuotaResources": [{"instanceType": "ml.p5.4xlarge", "accelerators": 2}],
        "resourceSharingConfig": {"strategy": "DontLend"},
        "preemptTeamTasks": "LowerPriority",
    }
    research = run.named(QUOTA, "governance-quota-research").inputs
    assert research["computeQuotaConfig"]["resourceSharingConfig"] == {"strategy": "LendAndBorrow", "borrowLimit": 100}
    assert research["activationState"] == "Enabled"
    assert run.outputs["taskGovernanceAddonVersion"] == "v1.6.0-eksbuild.1"


def test_endpoints_carry_their_queue_and_priority_labels(stack_runs: Any) -> None:
    run = stack_runs["staging"]
    prefix = run.named(IEC, "endpoints-hyperpod-ns-serving-llama-8b-prefix").inputs["metadata"]
    assert prefix["namespace"] == "hyperpod-ns-serving"
    assert prefix["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-serving-localqueue"
    assert prefix["labels"]["kueue.x-k8s.io/priority-class"] == "inference-priority"
    kv = run.named(IEC, "endpoints-hyperpod-ns-research-llama-8b-kvaware").inputs["metadata"]
    assert kv["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-research-localqueue"
    # dev has no governance: no Kueue labels
    dev = stack_runs["dev"].of_type(IEC)
    assert dev and not [r for r in dev if "kueue.x-k8s.io/queue-name" in (r.inputs["metadata"].get("labels") or {})]


def test_team_namespaces_are_task_governances_not_the_stacks(stack_runs: Any) -> None:
    run = stack_runs["staging"]
    names = {r.inputs["metadata"]["name"] for r in run.of_type("kubernetes:core/v1:Namespace")}
    assert not {"hyperpod-ns-serving", "hyperpod-ns-research"} & names
    quotas = {r.urn for r in run.of_type(QUOTA)}
    role = _one(run.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role"), "endpoints-hyperpod-ns-serving-viewer")
    assert quotas <= set(role.dependencies)  # the Role waits for the namespace's creator


def test_the_program_orders_addon_then_policy_and_quotas_then_endpoints(stack_runs: Any) -> None:
    run = stack_runs["staging"]
    addon = run.named(ADDON, "governance-addon").urn
    policy = run.named(DYNAMIC, "governance-policy")
    assert addon in policy.dependencies
    for quota in run.of_type(QUOTA):
        assert addon in quota.dependencies
    operator = run.named(ADDON, "inference-operator-addon")
    assert addon in operator.dependencies  # Kueue's webhook serves before the operator's pods are created
    for ep in run.of_type(IEC):
        assert policy.urn in ep.dependencies
        assert {q.urn for q in run.of_type(QUOTA)} <= set(ep.dependencies)
    nodes = run.named(DYNAMIC, "hyperpod-nodes").urn
    assert nodes in run.named(ADDON, "governance-addon").dependencies


def test_the_rehearsal_converges_both_ways(stack_runs: Any) -> None:
    for destroy in (False, True):
        result = rehearse(stack_runs["staging"], mapping=stack_mapping("staging"), destroy=destroy)
        assert result.exit_code == 0, [f.render() for f in result.findings]


def _drop_deps(regs: list[Registration], of_type: str, drop: set[str]) -> list[Registration]:
    hit = False
    for r in regs:
        if r.type == of_type:
            before = len(r.dependencies)
            r.dependencies = [d for d in r.dependencies if d not in drop]
            r.property_dependencies = {k: [d for d in v if d not in drop] for k, v in r.property_dependencies.items()}
            hit = hit or len(r.dependencies) < before
    assert hit, f"no {of_type} depended on {drop}"
    return regs


def test_endpoints_not_after_their_quotas_are_a_race(stack_runs: Any) -> None:
    regs = copy.deepcopy(stack_runs["staging"].registrations)
    quotas = {r.urn for r in regs if r.type == QUOTA}
    policy = {r.urn for r in regs if r.inputs.get("resourceKind") == "hyperpod:ClusterSchedulerConfig"}
    result = rehearse(_drop_deps(regs, IEC, quotas | policy), mapping=stack_mapping("staging"))
    found = {(name, f.kind, f.waits_for) for f in result.findings for name in (f.resource, *f.also)}
    quota_wait = "its team's compute quota: the namespace hyperpod-ns-<team> and its LocalQueue come from it"
    policy_wait = "the cluster policy: the priority class it names comes from it"
    for endpoint in (
        "endpoints-hyperpod-ns-serving-llama-8b-prefix",
        "endpoints-hyperpod-ns-research-llama-8b-kvaware",
    ):
        assert (endpoint, "race", quota_wait) in found, found
        assert (endpoint, "race", policy_wait) in found, found
    assert result.exit_code == 1


def test_quotas_not_after_the_addon_race_and_outlive_it_on_destroy(stack_runs: Any) -> None:
    regs = copy.deepcopy(stack_runs["staging"].registrations)
    addon = {r.urn for r in regs if r.type == ADDON and r.name == "governance-addon"}
    regs = _drop_deps(regs, QUOTA, addon)
    created = rehearse(copy.deepcopy(regs), mapping=stack_mapping("staging"))
    assert {
        (n, f.kind) for f in created.findings for n in (f.resource, *f.also) if n.startswith("governance-quota")
    } == {
        ("governance-quota-serving", "race"),
        ("governance-quota-research", "race"),
    }
    destroyed = rehearse(regs, mapping=stack_mapping("staging"), destroy=True)
    assert {
        (n, f.kind) for f in destroyed.findings for n in (f.resource, *f.also) if n.startswith("governance-quota")
    } == {
        ("governance-quota-serving", "served-deleted-first"),
        ("governance-quota-research", "served-deleted-first"),
    }
