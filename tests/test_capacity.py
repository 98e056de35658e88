"""Scheduling feasibility: the instance data, allocatable per node, and every capacity check caught alone.

Each check is caught on one change to a reference stack (as a config error, exit 2, at its stack key) and its
nearest valid variant passes; the policy pack reports the same findings on the registered graph. The system
pods (DaemonSets and controllers) are a fixture of the readiness data's shape, so the expected numbers are
literals that do not move when ``policies/readiness.yaml`` gains sources; one test reads the real data.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from components.config import ConfigError, parse_stack_config
from components.config.loader import decode_config_value
from components.config.regions import hyperpod_instance_types, hyperpod_regions
from components.config.stackfile import config_from_mapping
from policies import capacity_rules as cap
from policies.engine import PolicyResult, evaluate
from policies.pack import POLICIES
from tests.conftest import stack_mapping
from tools.plan.capacity_table import capacity_report
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration, unwrap_secrets

EPS = "hyperpod-inference:endpoints"
CLUSTER = "hyperpod-inference:cluster"
IEC_TYPE = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
CAPACITY = set(cap.CAPACITY_RULE_NAMES)

# The readiness data's system-pod shape (name, installed_by, kind, replicas, requests or null, tolerations,
# node_selector, source), with numbers chosen for the test.
FIXTURE_PODS: list[dict[str, Any]] = [
    {
        "name": "aws-node",
        "installed_by": "vpc-cni add-on",
        "kind": "DaemonSet",
        "replicas": None,
        "requests": {"cpu": "25m"},
        "tolerations": [{"operator": "Exists"}],
        "node_selector": {"kubernetes.io/os": ["linux"]},
        "source": "fixture",
    },
    {
        "name": "health-monitoring-agent",
        "installed_by": "HyperPod chart",
        "kind": "DaemonSet",
        "replicas": None,
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "tolerations": [],
        "node_selector": {},
        "source": "fixture",
    },
    {
        "name": "nvidia-device-plugin",
        "installed_by": "HyperPod chart",
        "kind": "DaemonSet",
        "replicas": None,
        "requests": None,
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "node_selector": {},
        "source": "fixture",
    },
    {
        "name": "coredns",
        "installed_by": "coredns add-on",
        "kind": "Deployment",
        "replicas": 2,
        "requests": {"cpu": "100m", "memory": "70Mi"},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "node_selector": {"kubernetes.io/os": ["linux"]},
        "source": "fixture",
    },
    {
        "name": "metrics-server",
        "installed_by": "metrics-server add-on",
        "kind": "Deployment",
        "replicas": 1,
        "requests": {"cpu": "100m", "memory": "200Mi"},
        "tolerations": [],
        "node_selector": {},
        "source": "fixture",
    },
    {
        "name": "keda-operator",
        "installed_by": "inference add-on",
        "kind": "Deployment",
        "replicas": 1,
        "requests": None,
        "tolerations": None,
        "node_selector": {},
        "source": "fixture",
    },
]


def fixture_pods() -> list[cap.SystemPod]:
    return [cap.system_pod(p) for p in FIXTURE_PODS]


@pytest.fixture(autouse=True)
def system_pods(monkeypatch: pytest.MonkeyPatch) -> list[cap.SystemPod]:
    pods = fixture_pods()
    monkeypatch.setattr(cap, "load_system_pods", lambda registrations=None: (pods, None))
    return pods


def before_roll_headroom(m: dict[str, Any]) -> None:
    """prod's shape before issue 45 gave it headroom for a node roll (two p6 nodes, one prefill and one decode
    replica, one qwen-sglang replica): the capacity tests below were written against those numbers."""
    m["hyperpod-inference:cluster"]["instanceGroups"][2]["instanceCount"] = 2
    for e in m[EPS]:
        if e["name"] == "llama-70b-dpd":
            e["spec"]["pdSpec"]["prefillSpec"]["replicas"] = 1
            e["spec"]["pdSpec"]["decodingSpec"]["replicas"] = 1
        if e["name"] == "qwen-sglang":
            e["spec"].pop("replicas", None)


def issues(stack: str, mutate: Callable[[dict[str, Any]], Any] | None = None) -> list[str]:
    """The config errors of a reference stack after ``mutate`` (what tools.cli.preview prints before exit 2).

    prod is taken in its shape before the node-roll headroom (:func:`before_roll_headroom`), and the node-roll rule's
    own issues (``softwareUpdates``: tests/test_node_software.py) are left out: these tests are about capacity."""
    m = stack_mapping(stack)
    if stack == "prod":
        before_roll_headroom(m)
    if mutate is not None:
        mutate(m)
    config, secret = config_from_mapping(m)
    prefix = "hyperpod-inference:"
    values = {k[len(prefix) :]: decode_config_value(v) for k, v in config.items() if k.startswith(prefix)}
    try:
        parse_stack_config(
            values, stack=stack, region=config["aws:region"], secret_keys={k[len(prefix) :] for k in secret}
        )
    except ConfigError as err:
        return [i.render() for i in err.issues if ".softwareUpdates." not in i.path]
    return []


def ep(m: dict[str, Any], i: int) -> dict[str, Any]:
    spec: dict[str, Any] = m[EPS][i]["spec"]
    return spec


def grp(m: dict[str, Any], i: int) -> dict[str, Any]:
    group: dict[str, Any] = m[CLUSTER]["instanceGroups"][i]
    return group


def gpus(n: str) -> dict[str, Any]:
    return {"requests": {"nvidia.com/gpu": n}, "limits": {"nvidia.com/gpu": n}}


# --- instance data -----------------------------------------------------------------------------------------


def test_every_accepted_instance_type_has_an_entry() -> None:
    accepted = set().union(*(hyperpod_instance_types(r) for r in hyperpod_regions()))
    assert len(accepted) > 100
    missing = sorted(t for t in accepted if cap.instance_spec(t) is None)
    assert missing == [], "regenerate: python -m components.config.data.generate_instance_types"


def test_instance_data_records_its_source_and_matches_the_generator() -> None:
    from components.config.data.generate_instance_types import generate

    on_disk = json.loads(cap.INSTANCE_DATA.read_text(encoding="utf-8"))
    assert on_disk["source"]["catalogue"].startswith("moto 5.2.5: moto/ec2/resources/instance_types.json.gz")
    assert "cfn-lint 1.58.0" in on_disk["source"]["types"]
    assert generate() == on_disk  # the committed file is what the generator writes from the pinned moto


def test_instance_data_values() -> None:
    p5 = cap.instance_spec("ml.p5.48xlarge")
    assert p5 is not None
    assert (p5.vcpus, p5.cores, p5.memory_mib, p5.gpus, p5.gpu_model, p5.gpu_memory_mib) == (
        192,
        96,
        2097152,
        8,
        "NVIDIA H100",
        81920,
    )
    assert (p5.efa_supported, p5.max_efa_interfaces, p5.max_network_interfaces, p5.max_pods) == (True, 32, 64, 100)
    assert (p5.cpus(1), p5.cpus(2)) == (96, 192)
    # maxPods as the EKS AMI's eni-max-pods.txt lists them (awslabs/amazon-eks-ami@5e1334f2)
    listed = {"ml.p5en.48xlarge": 198, "ml.m5.2xlarge": 58, "ml.g5.48xlarge": 345, "ml.trn1.32xlarge": 247}
    assert {t: cap.instance_spec(t).max_pods for t in listed} == listed  # type: ignore[union-attr]
    trn = cap.instance_spec("ml.trn1.32xlarge")
    assert trn is not None and (trn.gpus, trn.neuron_devices, trn.neuron_cores) == (0, 16, 32)


# --- quantities and allocatable ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("cpu", "96", 96000),
        ("cpu", "500m", 500),
        ("cpu", 0.5, 500),
        ("cpu", "1.5", 1500),
        ("memory", "1024Gi", 1024 * 2**30),
        ("memory", "512Mi", 512 * 2**20),
        ("memory", "1e9", 10**9),
        ("memory", "2G", 2 * 10**9),
        ("nvidia.com/gpu", "8", 8),
        ("nvidia.com/gpu", 8, 8),
    ],
)
def test_quantities(resource: str, value: Any, expected: int) -> None:
    assert cap.amount(resource, value) == expected


@pytest.mark.parametrize("bad", ["abc", "", "8 GPUs", "1.2.3", True, "--1"])
def test_bad_quantities_raise(bad: Any) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        cap.parse_quantity(bad)


def test_kube_reserved_follows_the_eks_ami_formula() -> None:
    # 6 % of core 1 + 1 % of core 2 + 0.5 % of cores 3-4 + 0.25 % of the rest (deploy-readiness.md trap 8)
    assert [cap.kube_reserved_cpu_m(n) for n in (1, 2, 4, 8, 96, 192)] == [60, 70, 80, 90, 310, 550]
    assert [cap.kube_reserved_memory_mib(n) for n in (58, 100, 198)] == [893, 1355, 2433]


def test_allocatable_of_a_p5_node(system_pods: list[cap.SystemPod]) -> None:
    group = cap.Group("p5", "ml.p5.48xlarge", 4, threads_per_core=1)
    bare = cap.node_allocatable(group)
    assert bare is not None
    assert bare.allocatable[cap.CPU] == 96000 - 310
    assert bare.allocatable[cap.MEMORY] == (2097152 - 1355 - 100) * 2**20
    assert (bare.allocatable[cap.GPU], bare.allocatable[cap.PODS]) == (8, 100)
    two = cap.node_allocatable(cap.Group("p5", "ml.p5.48xlarge", 4, threads_per_core=2))
    assert two is not None and two.allocatable[cap.CPU] == 192000 - 550
    with_ds = cap.node_allocatable(group, system_pods)
    assert with_ds is not None
    assert with_ds.daemonset_names == ("aws-node", "health-monitoring-agent", "nvidia-device-plugin")
    assert with_ds.unknown_daemonsets == ("nvidia-device-plugin",)
    assert with_ds.allocatable[cap.CPU] == 96000 - 310 - 525
    assert with_ds.allocatable[cap.MEMORY] == (2097152 - 1355 - 100 - 512) * 2**20
    assert with_ds.allocatable[cap.PODS] == 97
    tiered = cap.node_allocatable(cap.Group("p5", "ml.p5.48xlarge", 1, tiered_storage_percent=20))
    assert tiered is not None and tiered.tiered_storage[cap.MEMORY] == 2097152 * 2**20 // 5
    assert (
        tiered.allocatable[cap.MEMORY] == bare.allocatable[cap.MEMORY]
    )  # shown, not subtracted: UNCONFIRMED [tiered-storage-memory]


def test_daemonsets_follow_taints_and_selectors(system_pods: list[cap.SystemPod]) -> None:
    tainted = cap.Group("gpu", "ml.p5.48xlarge", 1, taints=(cap.Taint("nvidia.com/gpu", None, "NoSchedule"),))
    names = [p.name for p in cap.daemonsets_on(tainted, system_pods)]
    assert names == ["aws-node", "nvidia-device-plugin"]  # the health agent tolerates nothing
    soft = cap.Group("gpu", "ml.p5.48xlarge", 1, taints=(cap.Taint("dedicated", "x", "PreferNoSchedule"),))
    assert len(cap.daemonsets_on(soft, system_pods)) == 3
    windows = cap.Group("w", "ml.m5.2xlarge", 1, labels={"kubernetes.io/os": "windows"})
    assert [p.name for p in cap.daemonsets_on(windows, system_pods)] == [
        "health-monitoring-agent",
        "nvidia-device-plugin",
    ]


def test_tolerations_and_affinity_matching() -> None:
    taint = cap.Taint("sagemaker.amazonaws.com/node-health-status", "Unschedulable", "NoSchedule")
    assert cap.tolerates([{"operator": "Exists"}], taint)
    assert cap.tolerates([{"key": taint.key, "operator": "Exists"}], taint)
    assert cap.tolerates([{"key": taint.key, "value": "Unschedulable", "effect": "NoSchedule"}], taint)
    assert not cap.tolerates([{"key": taint.key, "value": "Schedulable", "effect": "NoSchedule"}], taint)
    assert not cap.tolerates([{"key": taint.key, "operator": "Exists", "effect": "NoExecute"}], taint)
    assert not cap.tolerates([], taint)
    labels = {"workload": "inference", "node.kubernetes.io/instance-type": "ml.p5.48xlarge", "gen": "5"}

    def aff(*exprs: dict[str, Any]) -> dict[str, Any]:
        return {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": list(exprs)}]}
        }

    assert cap.affinity_matches(None, labels)
    assert cap.affinity_matches(aff({"key": "workload", "operator": "In", "values": ["inference"]}), labels)
    assert not cap.affinity_matches(aff({"key": "workload", "operator": "NotIn", "values": ["inference"]}), labels)
    assert cap.affinity_matches(aff({"key": "gen", "operator": "Gt", "values": ["4"]}), labels)
    assert not cap.affinity_matches(aff({"key": "gen", "operator": "Lt", "values": ["4"]}), labels)
    assert cap.affinity_matches(aff({"key": "zone", "operator": "DoesNotExist"}), labels)
    assert not cap.affinity_matches(
        aff({"key": "workload", "operator": "Exists"}, {"key": "zone", "operator": "Exists"}), labels
    )
    empty_terms = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
    assert not cap.affinity_matches(empty_terms, labels)
    assert cap.affinity_matches({"preferredDuringSchedulingIgnoredDuringExecution": []}, labels)


def test_readiness_system_pod_shapes() -> None:
    pods = {p.name: p for p in fixture_pods()}
    assert pods["aws-node"].requests == {"cpu": 25}
    assert pods["health-monitoring-agent"].requests == {"cpu": 500, "memory": 512 * 2**20}
    assert pods["keda-operator"].requests is None and not pods["keda-operator"].tolerations_known
    assert pods["coredns"].replicas == 2 and pods["aws-node"].replicas == 0
    partly = cap.system_pod({**FIXTURE_PODS[0], "requests": {"cpu": "25m", "memory": None}})
    assert partly.requests is None  # one unknown field makes the total unknown


def test_the_real_readiness_data_loads() -> None:
    from policies.capacity_rules import _requests_of  # noqa: F401 - the loader's helpers exist
    from policies.readiness import load_readiness

    entries = load_readiness().system_pods
    pods = [cap.system_pod(e) for e in entries]
    assert len(pods) == len(entries) > 5
    assert {p.kind for p in pods} == {"Deployment", "DaemonSet"}
    assert any(p.requests is None for p in pods)  # unknowns stay unknown


# --- config checks: each caught alone, nearest valid variant passes ---------------------------------------


def test_reference_stacks_pass() -> None:
    assert issues("dev") == []
    assert issues("prod") == []


def test_a_pod_needing_9_gpus_on_an_8_gpu_type() -> None:
    def nine(m: dict[str, Any]) -> None:
        ep(m, 0)["worker"]["resources"] = {
            "requests": {"cpu": "80", "memory": "1024Gi", "nvidia.com/gpu": "9"},
            "limits": {"nvidia.com/gpu": "9"},
        }

    assert issues("prod", nine) == [
        "hyperpod-inference:endpoints[0].spec.worker.resources.requests.nvidia.com/gpu: endpoints[0] "
        "llama-70b-kvaware: a worker pod requests 9 GPUs, 80 CPU, 1024Gi memory, more than any node it may run "
        "on: one node of group p5-inference (ml.p5.48xlarge, threadsPerCore 1) allocates 8 GPUs, 95.165 CPU, "
        "2046.1Gi memory; GPUs: 8 = 8 GPUs [endpoint-pod-fits-node]"
    ]

    def eight(m: dict[str, Any]) -> None:
        nine(m)
        ep(m, 0)["worker"]["resources"]["requests"]["nvidia.com/gpu"] = "8"
        ep(m, 0)["worker"]["resources"]["limits"]["nvidia.com/gpu"] = "8"

    assert issues("prod", eight) == []


def test_cpu_96_under_threads_per_core_1() -> None:
    def cpu96(m: dict[str, Any]) -> None:
        ep(m, 0)["worker"]["resources"]["requests"]["cpu"] = "96"

    assert issues("prod", cpu96) == [
        "hyperpod-inference:endpoints[0].spec.worker.resources.requests.cpu: endpoints[0] llama-70b-kvaware: a "
        "worker pod requests 8 GPUs, 96 CPU, 1024Gi memory, more than any node it may run on: one node of group "
        "p5-inference (ml.p5.48xlarge, threadsPerCore 1) allocates 8 GPUs, 95.165 CPU, 2046.1Gi memory; CPU: "
        "95.165 = 96 CPU (threadsPerCore 1) - 0.31 kube-reserved - 0.525 requests of 3 DaemonSets (DaemonSets "
        "with unknown requests not subtracted: nvidia-device-plugin) [endpoint-pod-fits-node]"
    ]
    # nearest valid: the same request with hyperthreading on (192 CPUs), or the reference's 80
    assert issues("prod", lambda m: (cpu96(m), grp(m, 1).__setitem__("threadsPerCore", 2))) == []
    assert stack_mapping("prod")[EPS][0]["spec"]["worker"]["resources"]["requests"]["cpu"] == "80"


def test_memory_above_allocatable() -> None:
    def mem(value: str) -> Callable[[dict[str, Any]], None]:
        return lambda m: ep(m, 0)["worker"]["resources"]["requests"].__setitem__("memory", value)

    assert issues("prod", mem("2048Gi")) == [
        "hyperpod-inference:endpoints[0].spec.worker.resources.requests.memory: endpoints[0] llama-70b-kvaware: "
        "a worker pod requests 8 GPUs, 80 CPU, 2048Gi memory, more than any node it may run on: one node of group "
        "p5-inference (ml.p5.48xlarge, threadsPerCore 1) allocates 8 GPUs, 95.165 CPU, 2046.1Gi memory; memory: "
        "2046.1Gi = 2048Gi memory - 1355Mi kube-reserved - 100Mi eviction threshold - 512Mi requests of 3 "
        "DaemonSets (DaemonSets with unknown requests not subtracted: nvidia-device-plugin) [endpoint-pod-fits-node]"
    ]
    assert issues("prod", mem("2046Gi")) == []


def test_two_endpoints_overflowing_a_group() -> None:
    # kvaware 4 x 8 GPUs fills p5-inference's 4 x 8 = 32; qwen-sglang's 1 GPU is left without a node
    assert issues("prod", lambda m: ep(m, 0).__setitem__("replicas", 4)) == [
        "hyperpod-inference:endpoints[2].spec.replicas: endpoints[2] qwen-sglang needs 1 worker pod x 1 GPUs "
        "(12 CPU, 128Gi memory each) on ml.p5.48xlarge; 1 of them fit nowhere: group p5-inference has 4 x 8 = 32 "
        "GPUs, endpoints[0] llama-70b-kvaware already takes 32; free per node: 0, 0, 0, 0 "
        "[endpoint-fits-group-capacity]"
    ]
    assert issues("prod", lambda m: ep(m, 0).__setitem__("replicas", 3)) == []


def test_three_5_gpu_pods_do_not_pack_onto_two_8_gpu_nodes() -> None:
    """15 GPUs of 16 in sum, but no node holds two 5-GPU pods."""

    def five(m: dict[str, Any], n: str = "5") -> None:
        pd = ep(m, 1)["pdSpec"]
        pd["prefillSpec"].update(replicas=2, resources=gpus(n))
        pd["decodingSpec"].update(replicas=1, resources=gpus(n))

    assert issues("prod", five) == [
        "hyperpod-inference:endpoints[1].spec.pdSpec.decodingSpec.replicas: endpoints[1] llama-70b-dpd needs 1 "
        "decode pod x 5 GPUs on ml.p6-b200.48xlarge; 1 of them fit nowhere: group p6-inference has 2 x 8 = 16 "
        "GPUs, its other pods take 10; free per node: 3, 3 [endpoint-fits-group-capacity]"
    ]
    assert issues("prod", lambda m: five(m, "4")) == []  # 4 + 4 fit one node


def test_two_5_gpu_pods_on_one_8_gpu_node() -> None:
    def one_node(m: dict[str, Any], n: str) -> None:
        grp(m, 2).update(instanceCount=1, minInstanceCount=1)  # prod provisions p6 partially: keep min <= count
        ep(m, 1)["pdSpec"]["prefillSpec"]["resources"] = gpus(n)
        ep(m, 1)["pdSpec"]["decodingSpec"]["resources"] = gpus(n)

    assert issues("prod", lambda m: one_node(m, "5")) == [
        "hyperpod-inference:endpoints[1].spec.pdSpec.decodingSpec.replicas: endpoints[1] llama-70b-dpd needs 1 "
        "decode pod x 5 GPUs on ml.p6-b200.48xlarge; 1 of them fit nowhere: group p6-inference has 1 x 8 = 8 "
        "GPUs, its other pods take 5; free per node: 3 [endpoint-fits-group-capacity]"
    ]
    assert issues("prod", lambda m: one_node(m, "4")) == []


def test_dpd_prefill_and_decode_replicas_over_capacity() -> None:
    def replicas(prefill: int) -> Callable[[dict[str, Any]], None]:
        return lambda m: ep(m, 1)["pdSpec"]["prefillSpec"].__setitem__("replicas", prefill)

    assert issues("prod", replicas(2)) == [
        "hyperpod-inference:endpoints[1].spec.pdSpec.decodingSpec.replicas: endpoints[1] llama-70b-dpd needs 1 "
        "decode pod x 8 GPUs on ml.p6-b200.48xlarge; 1 of them fit nowhere: group p6-inference has 2 x 8 = 16 "
        "GPUs, its other pods take 16; free per node: 0, 0 [endpoint-fits-group-capacity]"
    ]
    assert issues("prod", replicas(1)) == []


def test_tainted_gpu_group_and_an_endpoint_that_does_not_tolerate_it() -> None:
    def taint(effect: str) -> Callable[[dict[str, Any]], None]:
        return lambda m: grp(m, 1).__setitem__("taints", [{"key": "dedicated", "value": "inference", "effect": effect}])

    assert issues("dev", taint("NoSchedule")) == [
        "hyperpod-inference:endpoints[0]: endpoints[0] llama-8b: its worker pods may only run on group gpu-p5 "
        "(ml.p5.4xlarge), tainted dedicated=inference:NoSchedule; the endpoint tolerates no taint "
        "(InferenceEndpointConfig/JumpStartModel have no tolerations field before operator 3.7): remove the "
        "taint, make it PreferNoSchedule, or add an untainted group [endpoint-tolerates-group-taints]"
    ]
    assert issues("dev", taint("NoExecute"))[0].endswith("[endpoint-tolerates-group-taints]")
    assert issues("dev", taint("PreferNoSchedule")) == []


def test_gpu_pods_tolerate_the_gpu_taint_through_extended_resource_toleration() -> None:
    """EKS's ExtendedResourceToleration admission adds nvidia.com/gpu:NoSchedule (Exists) to GPU pods."""

    def gpu_taint(effect: str) -> Callable[[dict[str, Any]], None]:
        return lambda m: grp(m, 1).__setitem__("taints", [{"key": "nvidia.com/gpu", "value": "true", "effect": effect}])

    assert issues("dev", gpu_taint("NoSchedule")) == []
    assert issues("dev", gpu_taint("NoExecute")) == [
        "hyperpod-inference:endpoints[0]: endpoints[0] llama-8b: its worker pods may only run on group gpu-p5 "
        "(ml.p5.4xlarge), tainted nvidia.com/gpu=true:NoExecute; the endpoint tolerates no taint "
        "(InferenceEndpointConfig/JumpStartModel have no tolerations field before operator 3.7): remove the "
        "taint, make it PreferNoSchedule, or add an untainted group [endpoint-tolerates-group-taints]"
    ]
    assert cap.extended_resource_tolerations({"cpu": 1000, "nvidia.com/gpu": 1, "vpc.amazonaws.com/efa": 0}) == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_all_groups_tainted_so_no_controller_can_run() -> None:
    def taint_all(m: dict[str, Any], system_effect: str = "NoSchedule") -> None:
        m.pop(EPS)  # no endpoint, so only the controllers are judged
        grp(m, 0)["taints"] = [{"key": "dedicated", "value": "system", "effect": system_effect}]
        grp(m, 1)["taints"] = [{"key": "dedicated", "value": "inference", "effect": "NoSchedule"}]

    assert issues("dev", taint_all) == [
        "hyperpod-inference:cluster.instanceGroups: 3 controller Deployment(s) the stack installs can run on no "
        "instance group: coredns (2), metrics-server (1), keda-operator (1, tolerations unknown) (replicas in brackets): group system "
        "(ml.m5.2xlarge), tainted dedicated=system:NoSchedule (not tolerated); group gpu-p5 (ml.p5.4xlarge), "
        "tainted dedicated=inference:NoSchedule (not tolerated); leave one group untainted (the system group) or "
        "tolerate its taint [controllers-have-a-node]"
    ]
    assert issues("dev", lambda m: taint_all(m, "PreferNoSchedule")) == []


def test_controllers_on_an_empty_or_too_small_cluster(system_pods: list[cap.SystemPod]) -> None:
    empty = cap.plan([cap.Group("system", "ml.m5.2xlarge", 0)], [], system_pods)
    assert [f.rule for f in empty.findings] == ["controllers-have-a-node"]
    assert "group system has instanceCount 0" not in empty.findings[0].message
    assert "system has instanceCount 0" in empty.findings[0].message
    big = cap.SystemPod("big", "Deployment", 1, {"cpu": 8000, "memory": 2**30})
    small = cap.plan([cap.Group("system", "ml.m5.2xlarge", 2)], [], [big])
    assert [f.message for f in small.findings] == [
        "1 controller Deployment(s) the stack installs can run on no instance group: big (1) (replicas in "
        "brackets): one node of system allocates 3.92 CPU, 31.0Gi memory, less than its 8 CPU, 1Gi memory; leave one "
        "group untainted (the system group) or tolerate its taint"
    ]
    assert cap.plan([cap.Group("system", "ml.m5.2xlarge", 2, threads_per_core=2)], [], [big]).findings != []
    fits = cap.SystemPod("ok", "Deployment", 1, {"cpu": 3000, "memory": 1})
    assert cap.plan([cap.Group("system", "ml.m5.2xlarge", 1)], [], [fits]).findings == []
    crowded = cap.plan(
        [cap.Group("system", "ml.m5.2xlarge", 1)], [], [cap.SystemPod("ok", "Deployment", 2, {"cpu": 3000})]
    )
    assert [f.rule for f in crowded.findings] == ["controllers-have-a-node"]
    assert "2 replica(s) of 3 CPU do not fit next to the endpoints on system" in crowded.findings[0].message


def test_limits_below_requests_and_fractional_or_unequal_gpus() -> None:
    def worker(resources: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
        return lambda m: ep(m, 0)["worker"].__setitem__("resources", resources)

    base = {"cpu": "6", "memory": "30Gi"}
    assert issues(
        "dev", worker({"requests": {**base, "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1", "cpu": "4"}})
    ) == [
        "hyperpod-inference:endpoints[0].spec.worker.resources.limits.cpu: endpoints[0] llama-8b: worker "
        "limits.cpu (4) is below requests.cpu (6) [endpoint-resources-valid]"
    ]
    assert (
        issues(
            "dev", worker({"requests": {**base, "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1", "cpu": "6"}})
        )
        == []
    )
    assert issues(
        "dev", worker({"requests": {**base, "nvidia.com/gpu": "0.5"}, "limits": {"nvidia.com/gpu": "0.5"}})
    ) == [
        "hyperpod-inference:endpoints[0].spec.worker.resources.requests.nvidia.com/gpu: endpoints[0] llama-8b: "
        "worker requests.nvidia.com/gpu is 0.5; nvidia.com/gpu is counted in whole devices [endpoint-resources-valid]",
        "hyperpod-inference:endpoints[0].spec.worker.resources.limits.nvidia.com/gpu: endpoints[0] llama-8b: "
        "worker limits.nvidia.com/gpu is 0.5; nvidia.com/gpu is counted in whole devices [endpoint-resources-valid]",
    ]
    assert issues("dev", worker({"requests": {**base, "nvidia.com/gpu": "1"}})) == [
        "hyperpod-inference:endpoints[0].spec.worker.resources.limits.nvidia.com/gpu: endpoints[0] llama-8b: "
        "worker requests.nvidia.com/gpu needs an equal limits.nvidia.com/gpu (extended resources are not "
        "overcommitted) [endpoint-resources-valid]"
    ]
    unequal = issues("dev", worker({"requests": {**base, "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}))
    assert unequal == [
        "hyperpod-inference:endpoints[0].spec.worker.resources.limits.nvidia.com/gpu: endpoints[0] llama-8b: "
        "worker limits.nvidia.com/gpu (2) must equal requests.nvidia.com/gpu (1) for an extended resource "
        "[endpoint-resources-valid]"
    ]
    assert issues(
        "dev", worker({"requests": {**base, "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1", "cpu": "lots"}})
    ) == [
        "hyperpod-inference:endpoints[0].spec.worker.resources.limits.cpu: endpoints[0] llama-8b: worker "
        "limits.cpu 'lots' is not a Kubernetes quantity [endpoint-resources-valid]"
    ]
    # a limit alone is the request (Kubernetes defaulting): 1 GPU, 6 CPU fit
    assert issues("dev", worker({"limits": {**base, "nvidia.com/gpu": "1"}})) == []


def test_autoscaling_min_replicas_is_mandatory_max_replicas_advisory() -> None:
    def scaling(lo: int, hi: int) -> Callable[[dict[str, Any]], None]:
        return lambda m: ep(m, 0).__setitem__("autoScalingSpec", {"minReplicaCount": lo, "maxReplicaCount": hi})

    assert issues("dev", scaling(2, 4)) == [
        "hyperpod-inference:endpoints[0].spec.autoScalingSpec.minReplicaCount: endpoints[0] llama-8b needs 2 "
        "worker pods x 1 GPUs (6 CPU, 30Gi memory each) on ml.p5.4xlarge; 1 of them fit nowhere: group gpu-p5 has "
        "1 x 1 = 1 GPUs, its other pods take 1; free per node: 0 [endpoint-fits-group-capacity]"
    ]
    assert issues("dev", scaling(1, 4)) == []  # maxReplicaCount only advises (pack test below)
    # without autoscaling, replicas is the count
    assert issues("dev", lambda m: ep(m, 0).__setitem__("replicas", 2))[0].endswith("[endpoint-fits-group-capacity]")


def test_node_affinity_that_matches_no_group() -> None:
    def affinity(value: str) -> Callable[[dict[str, Any]], None]:
        def mutate(m: dict[str, Any]) -> None:
            ep(m, 2).pop("instanceType")
            ep(m, 2)["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "workload", "operator": "In", "values": [value]}]}
                    ]
                }
            }

        return mutate

    assert issues("prod", affinity("batch")) == [
        "hyperpod-inference:endpoints[2].spec.nodeAffinity: endpoints[2] qwen-sglang: no instance group matches "
        "the worker pods' node selection (instance types any, nodeAffinity) [endpoint-pod-fits-node]"
    ]
    assert issues("prod", affinity("inference")) == []  # the p5 and p6 groups carry workload=inference


def test_instance_types_list_spreads_over_groups() -> None:
    """instanceTypes lets pods use either group: 3 x 8 GPUs on p5 plus 3 x 8 on p6 still fit 48."""

    def both(replicas: int) -> Callable[[dict[str, Any]], None]:
        def mutate(m: dict[str, Any]) -> None:
            ep(m, 0).pop("instanceType")
            ep(m, 0)["instanceTypes"] = ["ml.p5.48xlarge", "ml.p6-b200.48xlarge"]
            ep(m, 0)["replicas"] = replicas
            m[EPS].pop(1)  # the DPD endpoint would take p6
            m["hyperpod-inference:ingress"]["routes"].pop(1)  # its route

        return mutate

    assert issues("prod", both(5)) == []  # 5 x 8 = 40 GPUs over 4 p5 + 2 p6 nodes; qwen's 1 GPU fits too
    # 6 x 8 = 48 fills both groups; qwen-sglang (p5 only) is left out
    assert issues("prod", both(6)) == [
        "hyperpod-inference:endpoints[1].spec.replicas: endpoints[1] qwen-sglang needs 1 worker pod x 1 GPUs "
        "(12 CPU, 128Gi memory each) on ml.p5.48xlarge; 1 of them fit nowhere: group p5-inference has 4 x 8 = 32 "
        "GPUs, endpoints[0] llama-70b-kvaware already takes 32; free per node: 0, 0, 0, 0 "
        "[endpoint-fits-group-capacity]"
    ]


# --- the policy pack: the same rules on the registered graph ----------------------------------------------


def _capacity_results(regs: list[Registration], env: str) -> list[PolicyResult]:
    return [r for r in evaluate(POLICIES, regs, env) if r.policy in CAPACITY]


def _cr(regs: list[Registration], name: str) -> Registration:
    """The registered custom resource, its inputs unwrapped (the spec may arrive as a Pulumi secret)."""
    found = [r for r in regs if r.type == IEC_TYPE and unwrap_secrets(r.inputs)["metadata"]["name"] == name]
    assert len(found) == 1
    found[0].inputs = unwrap_secrets(found[0].inputs)
    return found[0]


def _cluster(regs: list[Registration]) -> Registration:
    found = [r for r in regs if r.type == "aws-native:sagemaker:Cluster"]
    assert len(found) == 1
    return found[0]


def test_reference_graphs_have_no_capacity_finding(stack_runs: dict[str, StackRun]) -> None:
    for stack in ("dev", "prod"):
        regs = stack_runs[stack].registrations
        assert len(regs) > 20
        assert _capacity_results(regs, stack) == []


def test_pack_catches_cpu_96_on_the_registered_custom_resource(stack_runs: dict[str, StackRun]) -> None:
    regs = copy.deepcopy(stack_runs["prod"].registrations)
    _cr(regs, "llama-70b-kvaware").inputs["spec"]["worker"]["resources"]["requests"]["cpu"] = "96"
    results = _capacity_results(regs, "prod")
    assert [(r.level, r.policy, r.resource_type, r.resource_name) for r in results] == [
        ("mandatory", "endpoint-pod-fits-node", IEC_TYPE, "endpoints-inference-llama-70b-kvaware")
    ]
    assert results[0].message == (
        "spec.worker.resources.requests.cpu: InferenceEndpointConfig inference/llama-70b-kvaware: a worker pod "
        "requests 8 GPUs, 96 CPU, 1024Gi memory, more than any node it may run on: one node of group p5-inference "
        "(ml.p5.48xlarge, threadsPerCore 1) allocates 8 GPUs, 95.165 CPU, 2046.1Gi memory; CPU: 95.165 = 96 CPU "
        "(threadsPerCore 1) - 0.31 kube-reserved - 0.525 requests of 3 DaemonSets (DaemonSets with unknown requests "
        "not subtracted: nvidia-device-plugin)"
    )
    # the config check says the same after its own label (same rule function)
    config = issues("prod", lambda m: ep(m, 0)["worker"]["resources"]["requests"].__setitem__("cpu", "96"))
    assert config[0].split("llama-70b-kvaware: ", 1)[1] == results[0].message.split("llama-70b-kvaware: ", 1)[1] + (
        " [endpoint-pod-fits-node]"
    )
    # the CLI hands numbers as floats and threadsPerCore 2 shows 192 CPUs
    _cluster(regs).inputs["instanceGroups"][1]["threadsPerCore"] = 2.0
    assert _capacity_results(regs, "prod") == []


def test_pack_catches_a_tainted_group_and_stranded_controllers(stack_runs: dict[str, StackRun]) -> None:
    regs = copy.deepcopy(stack_runs["dev"].registrations)
    groups = _cluster(regs).inputs["instanceGroups"]
    groups[1]["kubernetesConfig"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    assert [(r.policy, r.resource_name) for r in _capacity_results(regs, "dev")] == [
        ("endpoint-tolerates-group-taints", "endpoints-inference-llama-8b")
    ]
    groups[0]["kubernetesConfig"] = {"taints": [{"key": "dedicated", "value": "sys", "effect": "NoExecute"}]}
    got = sorted((r.level, r.policy, r.resource_name) for r in _capacity_results(regs, "dev"))
    assert got == [
        ("mandatory", "controllers-have-a-node", "hyperpod-cluster"),
        ("mandatory", "endpoint-tolerates-group-taints", "endpoints-inference-llama-8b"),
    ]


def test_pack_advises_on_max_replicas_and_empty_groups(stack_runs: dict[str, StackRun]) -> None:
    regs = copy.deepcopy(stack_runs["dev"].registrations)
    _cr(regs, "llama-8b").inputs["spec"]["autoScalingSpec"] = {"minReplicaCount": 1, "maxReplicaCount": 3}
    results = _capacity_results(regs, "dev")
    assert [(r.level, r.policy) for r in results] == [("advisory", "endpoint-fits-group-capacity-at-max")]
    assert results[0].message.startswith(
        "spec.autoScalingSpec.maxReplicaCount: InferenceEndpointConfig inference/llama-8b needs 3 worker pods x 1 GPUs (6 CPU, 30Gi memory each) on "
        "ml.p5.4xlarge at autoscaling maxReplicaCount; 2 of them fit nowhere"
    )
    empty = copy.deepcopy(stack_runs["dev"].registrations)
    _cluster(empty).inputs["instanceGroups"][1]["instanceCount"] = 0
    assert [(r.level, r.policy, r.message) for r in _capacity_results(empty, "dev")] == [
        (
            "advisory",
            "endpoint-on-empty-group",
            "InferenceEndpointConfig inference/llama-8b: group gpu-p5 has instanceCount 0; its worker pods stay "
            "Pending until instances are running",
        )
    ]
    assert issues("dev", lambda m: grp(m, 1).__setitem__("instanceCount", 0)) == []  # advisory: no config error


def test_pack_judges_a_hand_written_custom_resource(stack_runs: dict[str, StackRun]) -> None:
    regs = copy.deepcopy(stack_runs["dev"].registrations)
    raw = copy.deepcopy(_cr(regs, "llama-8b"))
    raw.name, raw.urn = "raw", raw.urn.replace("endpoints-inference-llama-8b", "raw")
    raw.inputs["metadata"]["name"] = "raw"
    regs.append(raw)  # a second 1-GPU endpoint on the one 1-GPU node
    results = _capacity_results(regs, "dev")
    assert [(r.policy, r.resource_name) for r in results] == [("endpoint-fits-group-capacity", "raw")]
    assert "InferenceEndpointConfig inference/llama-8b already takes 1; free per node: 0" in results[0].message


def test_pack_without_a_hyperpod_cluster_judges_nothing(stack_runs: dict[str, StackRun]) -> None:
    regs = [r for r in copy.deepcopy(stack_runs["dev"].registrations) if r.type != "aws-native:sagemaker:Cluster"]
    assert any(r.type == IEC_TYPE for r in regs)
    assert _capacity_results(regs, "dev") == []


def test_jumpstart_requests_are_unknown_and_not_counted() -> None:
    jsm = {"kind": "JumpStartModel", "spec": {"server": {"instanceType": "ml.p5.48xlarge"}, "replicas": 3}}
    w = cap.workload_from_cr(jsm, "j", "jsm")
    result = cap.plan([cap.Group("p5", "ml.p5.48xlarge", 1)], [w])
    assert result.findings == [] and result.placements[0].requests is None
    assert w.pods[0].replicas_min == 3


# --- the capacity table -------------------------------------------------------------------------------------


def test_capacity_report_of_prod(stack_runs: dict[str, StackRun]) -> None:
    from rich.console import Console

    report = capacity_report(stack_runs["prod"].registrations)
    groups = {g["name"]: g for g in report.data["groups"]}
    assert list(groups) == ["system", "p5-inference", "p6-inference", "system-b"]
    p5 = groups["p5-inference"]
    assert (p5["nodes"], p5["threadsPerCore"]) == (4, 1)
    assert p5["perNode"]["capacity"]["cpu"] == 96.0 and p5["perNode"]["kubeReserved"] == {
        "cpu": 0.31,
        "memoryMiB": 1355,
    }
    assert p5["perNode"]["allocatable"]["cpu"] == 95.165 and p5["perNode"]["allocatable"]["nvidia.com/gpu"] == 8
    assert p5["unknownDaemonSets"] == ["nvidia-device-plugin"]
    assert p5["used"] == {
        "InferenceEndpointConfig inference/llama-70b-kvaware": {
            "cpu": 160.0,
            "memoryMiB": 2097152,
            "pods": 2,
            "nvidia.com/gpu": 16,
        },
        "InferenceEndpointConfig inference/qwen-sglang": {
            "cpu": 24.0,
            "memoryMiB": 262144,
            "pods": 2,
            "nvidia.com/gpu": 2,
        },
    }
    assert p5["left"]["nvidia.com/gpu"] == 14
    assert groups["p6-inference"]["left"]["nvidia.com/gpu"] == 0
    system = groups["system"]
    assert set(system["used"]) == {"coredns", "metrics-server"}  # keda-operator's requests are unknown
    assert "controllers with unknown requests, not counted: keda-operator" in report.data["notes"]
    assert report.data["findings"] == []
    json.dumps(report.data)  # JSON-able
    console = Console(width=200, record=True)
    console.print(report.renderable)
    text = console.export_text()
    assert "4 x ml.p5.48xlarge, threadsPerCore 1: per node" in text and "llama-70b-kvaware" in text


def test_fit_hook_for_the_rehearsal() -> None:
    """``tools.rehearse``'s FitHook: (readiness SystemPod, NodeGroup, replicas) -> reason or None."""
    from types import SimpleNamespace

    system = SimpleNamespace(name="system", instance_type="ml.m5.2xlarge", count=2, labels={}, taints=())
    small = {**FIXTURE_PODS[4]}  # metrics-server: 100m / 200Mi
    assert cap.fit_hook(small, system, 1) is None
    big = {**small, "name": "big", "requests": {"cpu": "4", "memory": "1Gi"}}
    assert cap.fit_hook(big, system, 1) == (
        "big requests 4 CPU, 1Gi memory; one node of group system (ml.m5.2xlarge, threadsPerCore 1) allocates CPU "
        "3.395 = 4 CPU (threadsPerCore 1) - 0.08 kube-reserved - 0.525 requests of 3 DaemonSets (DaemonSets with "
        "unknown requests not subtracted: nvidia-device-plugin)"
    )
    assert cap.fit_hook(big, SimpleNamespace(**{**system.__dict__, "threads_per_core": 2}), 1) is None
    two_cpu = {**small, "name": "two", "requests": {"cpu": "2"}}
    assert cap.fit_hook(two_cpu, system, 2) is None  # one per node
    assert cap.fit_hook(two_cpu, system, 3) == (
        "3 replicas of two (2 CPU each) need more than 2 node(s) of group system (ml.m5.2xlarge, threadsPerCore 1), "
        "which hold 1 each"
    )
    assert cap.fit_hook({**small, "requests": None}, system, 99) is None  # unknown requests: not judged


def test_training_plan_groups_are_advised_not_refused(stack_runs: dict[str, StackRun]) -> None:
    plan = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-dev"
    assert issues("dev", lambda m: grp(m, 1).__setitem__("trainingPlanArn", plan)) == []
    regs = copy.deepcopy(stack_runs["dev"].registrations)
    _cluster(regs).inputs["instanceGroups"][1]["trainingPlanArn"] = plan
    assert [(r.level, r.policy, r.message) for r in _capacity_results(regs, "dev")] == [
        (
            "advisory",
            "endpoint-on-empty-group",
            f"InferenceEndpointConfig inference/llama-8b: group gpu-p5 takes its instances from training plan {plan}; "
            "its worker pods stay Pending until instances are running (the plan must be Active: python -m "
            "tools.preflight.regional checks it) (cannot be checked offline; checked by tools.preflight.regional (ListTrainingPlans: "
            "the plan must be Active))",
        )
    ]


def test_replica_counts_from_autoscaling_and_dpd_roles() -> None:
    res = {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}
    dpd = {
        "kind": "InferenceEndpointConfig",
        "spec": {
            "instanceType": "ml.p5.48xlarge",
            "worker": {"resources": {"requests": {"cpu": "1"}}},
            "pdSpec": {
                "prefillSpec": {"replicas": 2, "resources": res, "nodeSelector": {"role": "prefill"}},
                "decodingSpec": {"resources": res},
                "autoScalingSpec": {"decodingAutoScaling": {"minReplicaCount": 0, "maxReplicaCount": 3}},
            },
        },
    }
    prefill, decode = cap.workload_from_cr(dpd, "k", "dpd").pods
    assert (prefill.role, prefill.replicas_min, prefill.replicas_max, prefill.replicas_path) == (
        "prefill",
        2,
        2,
        "pdSpec.prefillSpec.replicas",
    )
    assert prefill.node_selector == {"role": "prefill"} and prefill.resources_path == "pdSpec.prefillSpec.resources"
    assert (decode.replicas_min, decode.replicas_max, decode.replicas_path) == (
        0,
        3,
        "pdSpec.autoScalingSpec.decodingAutoScaling.minReplicaCount",
    )
    routed = {
        "kind": "InferenceEndpointConfig",
        "spec": {"replicas": 4, "worker": {"resources": res}, "intelligentRoutingSpec": {"autoScalingSpec": {}}},
    }
    (worker,) = cap.workload_from_cr(routed, "k", "r").pods
    assert (worker.replicas_min, worker.replicas_max, worker.replicas_path, worker.instance_types) == (
        1,
        5,
        "intelligentRoutingSpec.autoScalingSpec.minReplicaCount",
        None,
    )
    # the prefill role's nodeSelector matches no group (one declares `role`, with another value): on its own path
    groups = [cap.Group("p5", "ml.p5.48xlarge", 4, labels={"role": "decode"})]
    result = cap.plan(groups, [cap.workload_from_cr(dpd, "k", "dpd")])
    assert [(f.rule, f.path) for f in result.findings] == [
        ("endpoint-pod-fits-node", "pdSpec.prefillSpec.nodeSelector")
    ]


# --- controllers-span-zones (issue 47 item 5) -------------------------------------------------------------------


def test_prod_refuses_system_nodes_in_one_az_and_accepts_two() -> None:
    """prod's reference spreads its system groups over use1-az2 and use1-az4; putting both in one AZ is refused,
    even though an untainted GPU group in another AZ could take the controllers (a topology rule over the system
    nodes, not a count of them)."""
    assert issues("prod") == []

    def one_az(m: dict[str, Any]) -> None:
        m[CLUSTER]["instanceGroups"][-1]["availabilityZoneId"] = "use1-az2"

    (issue,) = issues("prod", one_az)
    assert issue.startswith("hyperpod-inference:cluster.instanceGroups: ")
    assert "can run only in use1-az2: coredns, metrics-server;" in issue  # this module's fixture system pods
    assert issue.endswith("[controllers-span-zones]")

    def default_az(m: dict[str, Any]) -> None:  # omitted availabilityZoneId: the first network AZ ID (use1-az2)
        del m[CLUSTER]["instanceGroups"][-1]["availabilityZoneId"]

    assert [i.endswith("[controllers-span-zones]") for i in issues("prod", default_az)] == [True]

    def more_nodes_same_az(m: dict[str, Any]) -> None:  # a count does not help
        one_az(m)
        m[CLUSTER]["instanceGroups"][0]["instanceCount"] = 6

    assert [i.endswith("[controllers-span-zones]") for i in issues("prod", more_nodes_same_az)] == [True]


def test_dev_and_staging_may_run_controllers_in_one_az() -> None:
    assert issues("dev") == [] and issues("staging") == []
    one = {g.az_id for g in cap_groups("dev") if g.spec is not None and not g.spec.gpus}
    assert len(one) == 1  # the rule would refuse it in prod: dev is exempt, not unchecked


def cap_groups(stack: str) -> list[cap.Group]:
    from components.config.capacity import groups_of

    m = stack_mapping(stack)
    config, _ = config_from_mapping(m)
    prefix = "hyperpod-inference:"
    values = {k[len(prefix) :]: decode_config_value(v) for k, v in config.items() if k.startswith(prefix)}
    cfg = parse_stack_config(values, stack=stack, region=config["aws:region"], secret_keys=set())
    return groups_of(cfg)


def test_zone_rule_on_groups(system_pods: list[cap.SystemPod]) -> None:
    def rules(*groups: cap.Group) -> list[str]:
        plan = cap.plan(list(groups), [], system_pods)
        assert not [f for f in plan.findings if f.rule == cap.ZONE_RULE]  # config-time only: no pack finding
        return [cap.ZONE_RULE for _ in cap.controllers_in_one_zone(plan)]

    a = cap.Group("system", "ml.m5.2xlarge", 2, az_id="use1-az2")
    b = cap.Group("system-b", "ml.m5.2xlarge", 1, az_id="use1-az4")
    gpu_elsewhere = cap.Group("gpu", "ml.p5.48xlarge", 1, az_id="use1-az6")
    assert rules(a, b) == []
    assert rules(a, gpu_elsewhere) == ["controllers-span-zones"]  # system nodes decide when there are any
    assert rules(cap.Group("gpu-a", "ml.p5.48xlarge", 1, az_id="use1-az2"), gpu_elsewhere) == []  # only GPU groups
    assert rules(a, cap.Group("system-b", "ml.m5.2xlarge", 0, az_id="use1-az4")) == ["controllers-span-zones"]
    tainted = cap.Group("system-b", "ml.m5.2xlarge", 1, taints=(cap.Taint("x", "y", "NoSchedule"),), az_id="use1-az4")
    assert rules(a, tainted) == ["controllers-span-zones"]
    # an AZ not known (the pack: a subnet ID) is not judged here; the stack-config check decides it
    assert rules(a, cap.Group("system-b", "ml.m5.2xlarge", 1)) == []


def test_an_adopted_prod_cluster_in_one_az_is_an_advisory_not_an_error() -> None:
    """The adopted HyperPod cluster's groups are its owner's (attach declares them): said, not refused."""
    from components.config.loader import parse_stack_mapping
    from components.config.validation import run_advisories

    mapping = stack_mapping("attach")
    mapping["hyperpod-inference:environment"] = "prod"
    mapping[CLUSTER]["instanceGroups"][1]["availabilityZoneId"] = mapping[CLUSTER]["instanceGroups"][0][
        "availabilityZoneId"
    ]
    cfg = parse_stack_mapping("attach", mapping)
    (advisory,) = [a for a in run_advisories(cfg) if a.rule == "controllers-span-zones"]
    assert advisory.path == "cluster.instanceGroups" and "can run only in usw2-az1" in advisory.message
