"""Scheduling feasibility: do the endpoints' pods fit the HyperPod instance groups? Pure functions, one place.

Two callers use exactly these functions, as with ``policies/rules.py``: the stack-config cross-checks
(``components/config/capacity.py``, exit 2 before anything is registered) and the policy pack
(``policies/capacity.py``, over the registered ``aws-native:sagemaker:Cluster`` and the operator's custom
resources). ``tools/plan/capacity_table.py`` renders the same :class:`Plan` as a table.

How a node's allocatable is computed (every number cited; see docs/capacity.md for where it can be wrong):

* capacity: the instance type's vCPUs, memory, GPUs / Neuron devices, EFA interfaces (``instance_types.json``,
  generated from EC2's DescribeInstanceTypes records as moto ships them). ``threadsPerCore: 1`` shows one CPU
  per physical core, i.e. half the vCPUs of a 2-thread type (HyperPod ``ThreadsPerCore``: "1 for disabling
  multithreading"; EC2 CpuOptionsRequest; deploy-readiness.md trap 9). One Kubernetes CPU is one vCPU.
* kube-reserved, the EKS AMI formula (awslabs/amazon-eks-ami@e48b98ad ``nodeadm/internal/kubelet/config.go``
  ``getCPUMillicoresToReserve``: 6 % of the first core, 1 % of the second, 0.5 % of the third and fourth,
  0.25 % of every further core; ``getMemoryMebibytesToReserve``: ``11 x maxPods + 255`` MiB), with
  ``maxPods`` from the AMI's ``eni-max-pods.txt`` formula (``instance_types.json``); eviction threshold
  ``memory.available=100Mi`` (same file, ``defaultKubeletSubConfig``). Whether HyperPod's AMI applies
  nodeadm's defaults is UNCONFIRMED [nodeadm-defaults].
* HyperPod tiered storage: with ``TieredStorageConfig`` on, ``InstanceMemoryAllocationPercentage`` of the
  instance memory goes to the tiered-storage daemon; whether that comes out of pod-allocatable memory is
  UNCONFIRMED [tiered-storage-memory], so it is reported (``NodeAllocatable.tiered_storage``) but not subtracted.
* the requests of the DaemonSets the stack puts on the node (system-pod data of ``policies/readiness.yaml``);
  a DaemonSet counts on a group when its node selector matches the group's labels and it tolerates the
  group's taints. DaemonSets whose requests are unknown are listed, never guessed.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any, Literal

from . import crd_overlays, records
from .readiness import Toleration

Level = Literal["mandatory", "advisory"]

INSTANCE_DATA = Path(__file__).resolve().parents[1] / "components" / "config" / "data" / "instance_types.json"

CPU, MEMORY, PODS = "cpu", "memory", "pods"
GPU = "nvidia.com/gpu"  # NVIDIA device plugin resource
NEURON = "aws.amazon.com/neuron"  # Neuron device plugin: devices
NEURONCORE = "aws.amazon.com/neuroncore"  # Neuron device plugin: cores
EFA = "vpc.amazonaws.com/efa"  # EFA device plugin
EXTENDED = (GPU, NEURON, NEURONCORE, EFA)
"""Extended resources a node advertises through the device plugins the HyperPod dependencies chart installs."""

# Well-known node labels the scheduler can match. node.kubernetes.io/instance-type carries the ml.* type on
# HyperPod nodes (the operator selects nodes by it; HyperPod Karpenter NodePool docs use it);
# sagemaker.amazonaws.com/instance-group-name and compute-type=hyperpod are set by HyperPod (public manifests
# select on them; not in an AWS reference page: UNCONFIRMED [hyperpod-node-labels]); node-health-status is Schedulable on a healthy
# node (docs: sagemaker-hyperpod-eks-resiliency-node-labels).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
COMPUTE_TYPE_LABEL = "sagemaker.amazonaws.com/compute-type"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
_ARCH = {"x86_64": "amd64", "arm64": "arm64"}

NODE_SELECTION_OFFLINE = "endpoint-node-selection-offline"
EVICTION_MEMORY_MIB = 100  # evictionHard memory.available=100Mi (nodeadm defaultKubeletSubConfig)
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})  # PreferNoSchedule only steers


# --- instance data ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InstanceSpec:
    """One instance type's hardware (a row of ``instance_types.json``)."""

    name: str
    vcpus: int
    cores: int
    default_threads_per_core: int
    memory_mib: int
    architectures: tuple[str, ...]
    gpus: int
    gpu_model: str | None
    gpu_memory_mib: int | None
    neuron_devices: int
    neuron_cores: int
    efa_supported: bool
    max_efa_interfaces: int
    max_network_interfaces: int
    max_pods: int
    instance_store_gb: int = 0
    instance_store_nvme: str | None = None  # DescribeInstanceTypes NvmeSupport: required | supported | unsupported

    @property
    def local_nvme(self) -> bool:
        """The type has instance-store volumes that are NVMe (what weights caching needs)."""
        return self.instance_store_gb > 0 and self.instance_store_nvme in ("required", "supported")

    def cpus(self, threads_per_core: int) -> int:
        """CPUs the node shows: cores x threads (1 thread per core halves a 2-thread type's vCPUs)."""
        return self.cores * max(1, min(threads_per_core, self.default_threads_per_core))


@cache
def catalogue() -> dict[str, InstanceSpec]:
    doc = json.loads(INSTANCE_DATA.read_text(encoding="utf-8"))
    out = {}
    for name, e in doc["instanceTypes"].items():
        out[name] = InstanceSpec(
            name=name,
            vcpus=e["vcpus"],
            cores=e["cores"],
            default_threads_per_core=e["defaultThreadsPerCore"],
            memory_mib=e["memoryMiB"],
            architectures=tuple(e["architectures"]),
            gpus=e["gpus"],
            gpu_model=e["gpuModel"],
            gpu_memory_mib=e["gpuMemoryMiB"],
            neuron_devices=e["neuronDevices"],
            neuron_cores=e["neuronCores"],
            efa_supported=e["efaSupported"],
            max_efa_interfaces=e["maxEfaInterfaces"],
            max_network_interfaces=e["maxNetworkInterfaces"],
            max_pods=e["maxPods"],
            instance_store_gb=e["instanceStoreGB"],
            instance_store_nvme=e["instanceStoreNvme"],
        )
    return out


def instance_spec(instance_type: str) -> InstanceSpec | None:
    return catalogue().get(instance_type)


# --- quantities ------------------------------------------------------------------------------------------

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}


@cache
def _parse_text(text: str) -> Fraction:
    for suffix, mult in _BINARY.items():
        if text.endswith(suffix):
            return _number(text[: -len(suffix)], text) * mult
    lower = text.lower()
    if "e" in lower and not lower.endswith("e"):
        mantissa, _, exponent = lower.partition("e")
        if exponent.lstrip("+-").isdigit():
            return _number(mantissa, text) * Fraction(10) ** int(exponent)
    suffix = text[-1] if text and text[-1] in "numkMGTPE" else ""
    return _number(text[: len(text) - len(suffix)], text) * _DECIMAL[suffix]


def parse_quantity(value: Any) -> Fraction:
    """A Kubernetes resource quantity (``"96"``, ``"500m"``, ``"1024Gi"``, ``"1e9"``, ``8``) as an exact number.

    Suffixes as in k8s.io/apimachinery ``resource.Quantity``; raises ``ValueError`` for anything else.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    return _parse_text(str(value).strip())


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")


def _number(text: str, original: Any) -> Fraction:
    if not _NUMBER.match(text):
        raise ValueError(f"not a quantity: {original!r}")
    return Fraction(text)


def amount(resource: str, value: Any) -> int:
    """A quantity in the unit the checks count in: CPU in millicores, memory in bytes, others as counts."""
    q = parse_quantity(value)
    if resource == CPU:
        return math.ceil(q * 1000)
    return math.ceil(q)


def show(resource: str, value: int) -> str:
    """``96`` / ``0.31`` CPU, ``1024Gi`` / ``2046.6Gi`` memory, ``8`` GPUs."""
    if resource == CPU:
        return f"{value / 1000:.3f}".rstrip("0").rstrip(".")
    if resource == MEMORY:
        if value == 0:
            return "0"
        gib = value / 2**30
        return f"{gib:.0f}Gi" if gib == int(gib) else (f"{gib:.1f}Gi" if gib >= 10 else f"{value / 2**20:.0f}Mi")
    return str(value)


NOUN = {
    CPU: "CPU",
    MEMORY: "memory",
    GPU: "GPUs",
    NEURON: "Neuron devices",
    NEURONCORE: "NeuronCores",
    EFA: "EFA interfaces",
    PODS: "pods",
}


def describe(amounts: Mapping[str, int], order: Sequence[str] = (GPU, NEURON, NEURONCORE, EFA, CPU, MEMORY)) -> str:
    return ", ".join(f"{show(r, amounts[r])} {NOUN[r]}" for r in order if amounts.get(r))


# --- the cluster: groups, nodes, allocatable -------------------------------------------------------------


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class Group:
    """One HyperPod instance group as the scheduler sees it. ``path`` locates it in the stack config."""

    name: str
    instance_type: str
    count: int
    threads_per_core: int = 1
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    training_plan_arn: str | None = None
    tiered_storage_percent: int | None = None
    path: str = ""
    az_id: str | None = None  # the AZ ID of the group's subnet; None: not known (an unresolved subnet)

    @property
    def spec(self) -> InstanceSpec | None:
        return instance_spec(self.instance_type)

    def node_labels(self) -> dict[str, str]:
        spec = self.spec
        arch = _ARCH.get(spec.architectures[0], spec.architectures[0]) if spec and spec.architectures else "amd64"
        return {
            INSTANCE_TYPE_LABEL: self.instance_type,
            GROUP_LABEL: self.name,
            COMPUTE_TYPE_LABEL: "hyperpod",
            HEALTH_LABEL: "Schedulable",
            ARCH_LABEL: arch,
            OS_LABEL: "linux",
            **self.labels,
        }

    def describe(self) -> str:
        return f"group {self.name} ({self.instance_type}, threadsPerCore {self.threads_per_core})"


@dataclass(frozen=True)
class SystemPod:
    """A pod the stack's add-ons and charts run (``policies/readiness.yaml`` system pods).

    ``requests`` is ``None`` when no source gives them (counted as unknown, never guessed).
    """

    name: str
    kind: Literal["Deployment", "DaemonSet"]
    replicas: int = 1
    requests: Mapping[str, int] | None = None
    tolerations: tuple[Mapping[str, Any], ...] = ()
    tolerations_known: bool = True
    node_selector: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    installed_by: str = ""
    source: str = ""
    node_affinity: Mapping[str, Any] | None = None  # required node affinity (DaemonSets on an endpoint's nodes)


def kube_reserved_cpu_m(cpus: int) -> int:
    """EKS AMI kube-reserved CPU (nodeadm ``getCPUMillicoresToReserve``), in millicores, integer arithmetic."""
    total = cpus * 1000
    reserved = 0
    for start, end, basis_points in ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, total, 25)):
        if total > start:
            reserved += (min(total, end) - start) * basis_points // 10000
    return reserved


def kube_reserved_memory_mib(max_pods: int) -> int:
    """EKS AMI kube-reserved memory (nodeadm ``getMemoryMebibytesToReserve``): 11 MiB per pod + 255 MiB."""
    return 11 * max_pods + 255


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Taint) -> bool:
    """Kubernetes toleration matching (core/v1 ``Toleration.ToleratesTaint``), one implementation for the
    capacity checks and the rehearsal: :meth:`policies.readiness.Toleration.tolerates`."""
    return any(Toleration.model_validate(dict(t)).tolerates(taint.key, taint.value, taint.effect) for t in tolerations)


def extended_resource_tolerations(requests: Mapping[str, int]) -> list[dict[str, str]]:
    """What EKS's ExtendedResourceToleration admission controller adds to a pod requesting an extended resource:
    ``{key: <resource>, operator: Exists, effect: NoSchedule}`` (enabled on every EKS platform version since 1.19:
    docs.aws.amazon.com/eks/latest/userguide/platform-versions.html; aws/containers-roadmap#739), so a GPU pod
    tolerates the usual ``nvidia.com/gpu:NoSchedule`` taint of GPU nodes."""
    return [
        {"key": r, "operator": "Exists", "effect": "NoSchedule"}
        for r, v in requests.items()
        if v and (r in EXTENDED or "/" in r)
    ]


def blocking_taints(tolerations: Iterable[Mapping[str, Any]], group: Group) -> list[Taint]:
    tols = list(tolerations)
    return [t for t in group.taints if t.effect in BLOCKING_EFFECTS and not tolerates(tols, t)]


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), [str(v) for v in expr.get("values") or []]
    have = labels.get(key)
    if op in ("Gt", "Lt"):
        try:
            number, bound = int(have or ""), int(values[0])
        except (ValueError, IndexError):
            return False
        return number > bound if op == "Gt" else number < bound
    checks = {
        "In": have is not None and have in values,
        "NotIn": have is None or have not in values,
        "Exists": have is not None,
        "DoesNotExist": have is None,
    }
    return checks.get(op, False)


def affinity_matches(node_affinity: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """``requiredDuringSchedulingIgnoredDuringExecution`` against node labels (terms ORed, expressions ANDed).

    ``matchFields`` (node name) cannot be known before the nodes exist; a term using it counts as matching.
    """
    if not node_affinity:
        return True
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    for term in terms:
        exprs = term.get("matchExpressions") or []
        if all(_expression_matches(e, labels) for e in exprs):
            return True
    return False


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """nodeSelector (``label: value``) or the readiness data's ``label: [allowed values]``."""
    return all(
        labels.get(k) == v if isinstance(v, str) else labels.get(k) in tuple(str(x) for x in v)
        for k, v in selector.items()
    )


# --- what node selection cannot be known offline ----------------------------------------------------------------
#
# Node labels whose values exist only on real nodes: the node name (``kubernetes.io/hostname``: a well-known label
# the kubelet sets to the node's name, kubernetes.io docs "Well-Known Labels, Annotations and Taints"), zone names
# (``topology.kubernetes.io/zone``: AWS maps zone *names* to zone *IDs* differently in each account, EC2 User Guide
# "Availability Zone IDs"; the stack file knows only AZ IDs, tools.preflight.regional maps them with
# DescribeAvailabilityZones), and any label no instance group of the stack declares (set by someone else, or
# nowhere). An expression on such a label is neither true nor false offline: the group stays a candidate, and the
# expression is reported as cannot-be-checked-offline (rule ``endpoint-node-selection-offline``).

HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
AFFINITY_TERMS = "nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


@dataclass(frozen=True)
class OfflineUnknown:
    """One node-selection expression whose truth is not known offline; ``checked_by`` names what decides it."""

    path: str
    what: str
    checked_by: str


def unknowable_label(key: str, declared: Iterable[str]) -> str | None:
    """What decides an expression on label ``key`` (``None``: the stack's groups say whether it holds)."""
    if key == HOSTNAME_LABEL:
        return "the cluster: node names exist once the nodes join (`kubectl get nodes -L kubernetes.io/hostname`)"
    if key in ZONE_LABELS:
        return "tools.preflight.regional (DescribeAvailabilityZones maps the zone names to this account's AZ IDs)"
    if key not in set(declared):
        return f"the cluster: `kubectl get nodes -L {key}` (no instance group declares the label {key})"
    return None


def _expression_text(expr: Mapping[str, Any]) -> str:
    values = expr.get("values")
    shown = f" [{', '.join(str(v) for v in values)}]" if values else ""
    return f"{expr.get('key', '')} {expr.get('operator', '')}{shown}"


def _why(key: str) -> str:
    if key == HOSTNAME_LABEL:
        return "node names exist only once the nodes have joined"
    if key in ZONE_LABELS:
        return "zone names map to AZ IDs differently in each account"
    return "no instance group declares this label"


def affinity_offline(
    node_affinity: Mapping[str, Any] | None, labels: Mapping[str, str], declared: Iterable[str]
) -> tuple[bool | None, list[OfflineUnknown]]:
    """:func:`affinity_matches` with a third outcome: ``None`` when the answer rests on labels unknown offline.

    Terms are ORed, expressions ANDed (core/v1 NodeSelector); an expression on an unknowable label
    (:func:`unknowable_label`) is unknown, a term with ``matchFields`` (node fields) too. Returns the unknown
    expressions of the terms that are not already false.
    """
    required = (node_affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True, []
    declared = set(declared)
    results: list[bool | None] = []
    unknowns: list[OfflineUnknown] = []
    for i, term in enumerate(required.get("nodeSelectorTerms") or []):
        term_unknowns = []
        false = False
        for j, expr in enumerate(term.get("matchExpressions") or []):
            checked_by = unknowable_label(str(expr.get("key", "")), declared)
            if checked_by is not None:
                what = f"requires {_expression_text(expr)}: {_why(str(expr.get('key', '')))}"
                term_unknowns.append(OfflineUnknown(f"{AFFINITY_TERMS}[{i}].matchExpressions[{j}]", what, checked_by))
            elif not _expression_matches(expr, labels):
                false = True
        for j, field_ in enumerate(term.get("matchFields") or []):
            term_unknowns.append(
                OfflineUnknown(
                    f"{AFFINITY_TERMS}[{i}].matchFields[{j}]",
                    f"requires node field {_expression_text(field_)}: node fields exist only once the nodes have joined",
                    "the cluster: `kubectl get nodes`",
                )
            )
        if false:
            results.append(False)
            continue
        results.append(None if term_unknowns else True)
        unknowns.extend(term_unknowns)
    if True in results:
        return True, unknowns
    return (None, unknowns) if None in results else (False, [])


def selector_offline(
    selector: Mapping[str, str], labels: Mapping[str, str], declared: Iterable[str], path: str
) -> tuple[bool | None, list[OfflineUnknown]]:
    """A pod's ``nodeSelector`` with the same third outcome as :func:`affinity_offline`."""
    declared = set(declared)
    unknowns: list[OfflineUnknown] = []
    for key, value in selector.items():
        checked_by = unknowable_label(key, declared)
        if checked_by is not None:
            unknowns.append(OfflineUnknown(f"{path}.{key}", f"requires {key}={value}: {_why(key)}", checked_by))
        elif labels.get(key) != value:
            return False, []
    return (None, unknowns) if unknowns else (True, [])


@dataclass(frozen=True)
class NodeAllocatable:
    """What one node of a group offers pods, and how that was computed."""

    group: Group
    capacity: Mapping[str, int]
    kube_reserved: Mapping[str, int]
    eviction: Mapping[str, int]
    tiered_storage: Mapping[str, int]
    daemonsets: Mapping[str, int]
    daemonset_names: tuple[str, ...]
    unknown_daemonsets: tuple[str, ...]
    allocatable: Mapping[str, int]
    observed: str = ""  # "observed 2026-12-04 by verify": kube-reserved and eviction read from a node, not computed

    def breakdown(self, resource: str) -> str:
        """``96 vCPUs (threadsPerCore 1) - 310m kube-reserved - 0.2 DaemonSets`` for one resource."""
        parts = [f"{show(resource, self.capacity.get(resource, 0))} {NOUN[resource]}"]
        if resource == CPU:
            parts[0] += f" (threadsPerCore {self.group.threads_per_core})"
        for label, amounts in (
            ("reserved by the kubelet" if self.observed else "kube-reserved", self.kube_reserved),
            ("eviction threshold", self.eviction),
            (f"requests of {len(self.daemonset_names)} DaemonSets", self.daemonsets),
        ):
            if amounts.get(resource):
                parts.append(f"{show(resource, amounts[resource])} {label}")
        text = " - ".join(parts)
        if self.observed:
            text += f" ({self.observed})"
        if self.unknown_daemonsets and resource in (CPU, MEMORY):
            text += f" (DaemonSets with unknown requests not subtracted: {', '.join(self.unknown_daemonsets)})"
        return text


def daemonsets_on(group: Group, system_pods: Iterable[SystemPod]) -> list[SystemPod]:
    labels = group.node_labels()
    return [
        p
        for p in system_pods
        if p.kind == "DaemonSet"
        and selector_matches(p.node_selector, labels)
        and affinity_matches(p.node_affinity, labels)
        and not blocking_taints(p.tolerations, group)
    ]


@dataclass(frozen=True)
class ObservedAllocatable:
    """A group's node ``status.allocatable`` as ``tools.verify`` read it from the cluster (the smallest of the
    group's nodes), which replaces the computed kube-reserved and eviction threshold (UNCONFIRMED [nodeadm-defaults]):
    the kubelet's allocatable already excludes both, and still includes what the DaemonSets take."""

    allocatable: Mapping[str, int]
    note: str  # "observed 2026-12-04 by verify"


def node_allocatable(
    group: Group, system_pods: Iterable[SystemPod] = (), observed: ObservedAllocatable | None = None
) -> NodeAllocatable | None:
    """Allocatable of one node of ``group``; ``None`` when the instance type is not in the data (and nothing was
    observed)."""
    spec = group.spec
    if spec is None and observed is None:
        return None
    if spec is None:
        assert observed is not None
        capacity = {r: observed.allocatable.get(r, 0) for r in (CPU, MEMORY, PODS, *EXTENDED)}
        return _observed_allocatable(group, capacity, system_pods, observed)
    cpus = spec.cpus(group.threads_per_core)
    capacity = {
        CPU: cpus * 1000,
        MEMORY: spec.memory_mib * 2**20,
        PODS: spec.max_pods,
        GPU: spec.gpus,
        NEURON: spec.neuron_devices,
        NEURONCORE: spec.neuron_cores,
        EFA: spec.max_efa_interfaces if spec.efa_supported else 0,
    }
    if observed is not None:
        return _observed_allocatable(group, capacity, system_pods, observed)
    reserved = {CPU: kube_reserved_cpu_m(cpus), MEMORY: kube_reserved_memory_mib(spec.max_pods) * 2**20}
    eviction = {MEMORY: EVICTION_MEMORY_MIB * 2**20}
    tiered = (
        {MEMORY: spec.memory_mib * 2**20 * group.tiered_storage_percent // 100} if group.tiered_storage_percent else {}
    )
    ds = daemonsets_on(group, system_pods)
    ds_total: dict[str, int] = {PODS: len(ds)}
    for pod in ds:
        for r, v in (pod.requests or {}).items():
            ds_total[r] = ds_total.get(r, 0) + v
    # Tiered storage is shown, not subtracted: whether HyperPod takes it from pod-allocatable memory is
    # UNCONFIRMED [tiered-storage-memory], and a mandatory error must not rest on a guess (docs/capacity.md).
    alloc = {r: max(0, capacity[r] - reserved.get(r, 0) - eviction.get(r, 0) - ds_total.get(r, 0)) for r in capacity}
    return NodeAllocatable(
        group=group,
        capacity=capacity,
        kube_reserved=reserved,
        eviction=eviction,
        tiered_storage=tiered,
        daemonsets=ds_total,
        daemonset_names=tuple(p.name for p in ds),
        unknown_daemonsets=tuple(p.name for p in ds if p.requests is None),
        allocatable=alloc,
    )


def _daemonset_total(ds: Sequence[SystemPod]) -> dict[str, int]:
    total: dict[str, int] = {PODS: len(ds)}
    for pod in ds:
        for r, v in (pod.requests or {}).items():
            total[r] = total.get(r, 0) + v
    return total


def _observed_allocatable(
    group: Group, capacity: Mapping[str, int], system_pods: Iterable[SystemPod], observed: ObservedAllocatable
) -> NodeAllocatable:
    """What a node offers pods when its kubelet's allocatable is known: that, less the DaemonSets' requests; the
    difference to the instance's capacity is shown as kube-reserved (it includes the eviction threshold)."""
    ds = daemonsets_on(group, system_pods)
    ds_total = _daemonset_total(ds)
    seen = {r: observed.allocatable.get(r, 0) for r in capacity}
    return NodeAllocatable(
        group=group,
        capacity=capacity,
        kube_reserved={r: max(0, capacity[r] - seen[r]) for r in capacity if r in (CPU, MEMORY)},
        eviction={},
        tiered_storage={},
        daemonsets=ds_total,
        daemonset_names=tuple(p.name for p in ds),
        unknown_daemonsets=tuple(p.name for p in ds if p.requests is None),
        allocatable={r: max(0, seen[r] - ds_total.get(r, 0)) for r in capacity},
        observed=observed.note,
    )


def _requests_of(raw: Any) -> dict[str, int] | None:
    """Readiness ``requests``: ``None`` unknown; a field written as null unknown; a field left out is not set
    by the chart (zero); ``{}`` = the chart sets none (policies/readiness.py conventions)."""
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        given = dict(raw)
    else:
        given = {k: getattr(raw, k) for k in getattr(raw, "model_fields_set", set())}
    if any(v is None for v in given.values()):
        return None
    return {str(k): amount(str(k), v) for k, v in given.items()}


def _tolerations_of(raw: Any) -> tuple[Mapping[str, Any], ...] | None:
    if raw is None:
        return None
    out = []
    for t in raw:
        if isinstance(t, Mapping):
            out.append(dict(t))
        else:
            out.append({k: v for k, v in t.model_dump().items() if v is not None})
    return tuple(out)


def _installed_by_text(selectors: Any) -> str:
    if isinstance(selectors, str):
        return selectors
    parts = []
    for sel in selectors or []:
        typ = getattr(sel, "type", None) or (sel.get("type") if isinstance(sel, Mapping) else "")
        when = getattr(sel, "when", None) or (sel.get("when") if isinstance(sel, Mapping) else []) or []
        raw = [getattr(c, "value", None) if not isinstance(c, Mapping) else c.get("value") for c in when]
        parts.append(" ".join([str(typ), *[str(v) for v in raw if isinstance(v, str) and v]]))
    return " or ".join(parts)


def system_pod(entry: Any, inputs: Mapping[str, Any] | None = None) -> SystemPod:
    """A readiness system pod (``policies.readiness.SystemPod`` or a mapping of the same fields) as a
    :class:`SystemPod`; ``inputs`` (of the resource installing it) apply its configured tolerations/replicas."""

    def field_(name: str, default: Any = None) -> Any:
        return entry.get(name, default) if isinstance(entry, Mapping) else getattr(entry, name, default)

    kind: Literal["Deployment", "DaemonSet"] = "DaemonSet" if field_("kind") == "DaemonSet" else "Deployment"
    tolerations = field_("tolerations")
    replicas = field_("replicas")
    if inputs is not None and hasattr(entry, "effective_tolerations"):
        tolerations = entry.effective_tolerations(dict(inputs))
        replicas = entry.effective_replicas(dict(inputs))
    tols = _tolerations_of(tolerations)
    selector = field_("node_selector") or {}
    return SystemPod(
        name=str(field_("name", "?")),
        kind=kind,
        replicas=0 if kind == "DaemonSet" else int(replicas if replicas is not None else 1),
        requests=_requests_of(field_("requests")),
        tolerations=tols or (),
        tolerations_known=tols is not None,
        node_selector={str(k): v if isinstance(v, str) else tuple(str(x) for x in v) for k, v in selector.items()},
        installed_by=_installed_by_text(field_("installed_by")),
        source=str(field_("source", "") or ""),
    )


def _remote_children(readiness: Any, regs: Sequence[tuple[str, Mapping[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The children a remote component (``eks:index:Cluster``) creates but the mocks never register, as
    ``(type, inputs)`` (readiness ``remote_components``: the add-ons pulumi-eks creates itself)."""
    from policies.readiness import input_value

    out = []
    for typ, inputs in regs:
        component = readiness.remote(typ)
        if component is None:
            continue
        for child in component.children:
            if child.created(dict(inputs)):
                child_inputs = dict(child.inputs)
                for key, path in child.inputs_from.items():
                    value = input_value(inputs, path)
                    if value is not None:
                        child_inputs[key] = value
                out.append((child.type, child_inputs))
    return out


def load_system_pods(
    registrations: Iterable[tuple[str, Mapping[str, Any]]] | None = None,
) -> tuple[list[SystemPod], str | None]:
    """The system pods of ``policies/readiness.yaml`` (``policies.readiness.load_readiness``) and a note when the
    data is unavailable (then no DaemonSet is subtracted and no controller is checked).

    With ``registrations`` (``(type, inputs)`` of a registered graph) only the pods some resource installs are
    kept, with that resource's configured tolerations and replicas; without (config time, before anything is
    registered) every pod the data knows counts, with its chart defaults.
    """
    try:
        from policies.readiness import load_readiness
    except ImportError:  # pragma: no cover - the readiness data ships with the pack
        return (
            [],
            "system-pod data unavailable (policies/readiness.yaml): DaemonSets not subtracted, controllers not checked",
        )
    readiness = load_readiness()
    entries = [e for e in readiness.system_pods if not e.on_target_nodes]
    if registrations is None:
        return [system_pod(e) for e in entries], None
    regs = list(registrations)
    out = target_node_pods(regs)
    regs.extend(_remote_children(readiness, regs))
    for e in entries:
        types = [s.type for s in e.installed_by]
        installer = next(
            (
                inputs
                for typ, inputs in regs
                if any(fnmatch.fnmatchcase(typ, t) for t in types) and e.installed_by_matches(typ, dict(inputs))
            ),
            None,
        )
        if installer is not None:
            out.append(system_pod(e, installer))
    return out, None


def target_node_pods(registrations: Iterable[tuple[str, Mapping[str, Any]]]) -> list[SystemPod]:
    """The DaemonSets the operator runs on an endpoint's own nodes (readiness ``on_target_nodes``: the image and
    weights caches of ``spec.modelCacheConfig``), one per installing custom resource, or per distinct value of the
    entry's ``one_per`` (one image cache per image); on the endpoints' instance types, else their nodeAffinity.

    ``registrations`` are ``(type, inputs)`` of custom resources (``{apiVersion, kind, metadata, spec}``); at config
    time the endpoints' rendered custom resources, in a mock run the registered ones.
    """
    from policies.readiness import input_value, load_readiness

    out: list[SystemPod] = []
    regs = [(t, i) for t, i in registrations if t.startswith("kubernetes:inference.sagemaker.aws.amazon.com/")]
    for e in load_readiness().system_pods:
        if not e.on_target_nodes:
            continue
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for typ, inputs in regs:
            if not e.installed_by_matches(typ, dict(inputs)):
                continue
            meta = inputs.get("metadata") if isinstance(inputs.get("metadata"), Mapping) else {}
            assert isinstance(meta, Mapping)
            own = f"{meta.get('namespace', 'default')}/{meta.get('name', '?')}"
            shared = input_value(dict(inputs), e.one_per) if e.one_per else None
            groups.setdefault(str(shared) if shared is not None else own, []).append(inputs)
        for members in groups.values():
            workloads = [workload_from_cr(m, "", "") for m in members]
            types = sorted({t for w in workloads for p in w.pods for t in p.instance_types or ()})
            affinity = next((p.node_affinity for w in workloads for p in w.pods if not p.instance_types), None)
            names = ", ".join(
                f"{(m.get('metadata') or {}).get('namespace', 'default')}/{(m.get('metadata') or {}).get('name', '?')}"
                for m in members
            )
            base = system_pod(e)
            out.append(
                SystemPod(
                    name=f"{e.name} ({names})",
                    kind="DaemonSet",
                    requests=base.requests,
                    tolerations=base.tolerations,
                    tolerations_known=base.tolerations_known,
                    node_selector={INSTANCE_TYPE_LABEL: tuple(types)} if types and affinity is None else {},
                    node_affinity=affinity if not types else None,
                    installed_by=names,
                    source=base.source,
                )
            )
    return out


# --- the workloads: endpoints' pods ----------------------------------------------------------------------


@dataclass(frozen=True)
class PodTemplate:
    """One kind of pod an endpoint runs: ``worker``, or ``prefill`` / ``decode`` under pdSpec (D3: worker.resources
    is ignored for DPD pods), or a JumpStartModel ``server`` (requests chosen by the operator: unknown)."""

    role: str
    resources_path: str
    resources: Mapping[str, Any] | None
    replicas_min: int
    replicas_max: int
    replicas_path: str
    instance_types: tuple[str, ...] | None = None
    node_affinity: Mapping[str, Any] | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    # (spec path, ResourceRequirements) of the containers the operator adds to the pod (operator 3.4's metrics
    # sidecar, metrics collector and S3 uploader, policies/crd_overlays): their requests add to the pod's (that
    # all three run in the inference pod: UNCONFIRMED [operator-34-sidecar-resources-path])
    sidecars: tuple[tuple[str, Mapping[str, Any]], ...] = ()

    def pod_requests(self) -> dict[str, int] | None:
        """What the scheduler counts for one pod: the main container's requests plus every sidecar's (a pod's
        request is the sum of its containers'); None when the main container's are unknown (JumpStartModel)."""
        if self.resources is None:
            return None
        total = effective_requests(self.resources)[0]
        for _, resources in self.sidecars:
            for name, value in effective_requests(resources)[0].items():
                if name != PODS:
                    total[name] = total.get(name, 0) + value
        total.setdefault(PODS, 1)
        return total


@dataclass(frozen=True)
class Workload:
    """An endpoint: ``key`` identifies it to the caller (config index or URN); ``label`` starts its messages."""

    key: str
    label: str
    pods: tuple[PodTemplate, ...]


def _get(data: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(p)
    return data


def _replicas(base: int, scaling: Any, base_path: str, scaling_path: str) -> tuple[int, int, str]:
    """(mandatory count, advisory count, spec path): autoscaling's minReplicaCount/maxReplicaCount (CRD defaults
    1 and 5, operator-facts §4.5) when autoscaling is configured, else the fixed replica count."""
    if isinstance(scaling, Mapping):
        lo = int(scaling.get("minReplicaCount", 1) or 0)
        hi = int(scaling.get("maxReplicaCount", 5) or 0)
        return lo, max(lo, hi), f"{scaling_path}.minReplicaCount"
    return base, base, base_path


def _sidecars(spec: Mapping[str, Any], kind: str) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    """The sidecar containers' resources the spec sets (overlay fields with ``capacity: sidecar``)."""
    out = []
    for path in crd_overlays.sidecar_paths(kind):
        value = _get(spec, *path.split("."))
        if isinstance(value, Mapping):
            out.append((path, value))
    return tuple(out)


def workload_from_cr(cr: Mapping[str, Any], key: str, label: str) -> Workload:
    """The pods an operator custom resource asks for (InferenceEndpointConfig or JumpStartModel)."""
    spec = cr.get("spec") if isinstance(cr.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    tolerations = tuple(t for t in spec.get("tolerations") or [] if isinstance(t, Mapping))  # operator 3.7 (§14)
    sidecars = _sidecars(spec, str(cr.get("kind") or "InferenceEndpointConfig"))
    if cr.get("kind") == "JumpStartModel":
        itype = _get(spec, "server", "instanceType")
        lo, hi, path = _replicas(
            int(spec.get("replicas", 1) or 0), spec.get("autoScalingSpec"), "replicas", "autoScalingSpec"
        )
        return Workload(
            key,
            label,
            (
                PodTemplate(
                    "server",
                    "server",
                    None,
                    lo,
                    hi,
                    path,
                    (str(itype),) if itype else None,
                    None,
                    {},
                    tolerations,
                    sidecars,
                ),
            ),
        )
    types: tuple[str, ...] | None = None
    if isinstance(spec.get("instanceType"), str):
        types = (spec["instanceType"],)
    elif spec.get("instanceTypes"):
        types = tuple(str(t) for t in spec["instanceTypes"])
    affinity = spec.get("nodeAffinity") if isinstance(spec.get("nodeAffinity"), Mapping) else None
    pd = spec.get("pdSpec")
    if isinstance(pd, Mapping):
        pods = []
        for role, key_ in (("prefill", "prefillSpec"), ("decode", "decodingSpec")):
            role_spec = pd.get(key_) if isinstance(pd.get(key_), Mapping) else {}
            assert isinstance(role_spec, Mapping)
            scaling_key = "prefillAutoScaling" if role == "prefill" else "decodingAutoScaling"
            lo, hi, path = _replicas(
                int(role_spec.get("replicas", 1) or 0),
                _get(pd, "autoScalingSpec", scaling_key),
                f"pdSpec.{key_}.replicas",
                f"pdSpec.autoScalingSpec.{scaling_key}",
            )
            selector = role_spec.get("nodeSelector") if isinstance(role_spec.get("nodeSelector"), Mapping) else {}
            pods.append(
                PodTemplate(
                    role,
                    f"pdSpec.{key_}.resources",
                    role_spec.get("resources") if isinstance(role_spec.get("resources"), Mapping) else {},
                    lo,
                    hi,
                    path,
                    types,
                    affinity,
                    dict(selector or {}),
                    tolerations,
                    sidecars,
                )
            )
        return Workload(key, label, tuple(pods))
    scaling = spec.get("autoScalingSpec") or _get(spec, "intelligentRoutingSpec", "autoScalingSpec")
    scaling_path = "autoScalingSpec" if spec.get("autoScalingSpec") else "intelligentRoutingSpec.autoScalingSpec"
    lo, hi, path = _replicas(int(spec.get("replicas", 1) or 0), scaling, "replicas", scaling_path)
    resources = _get(spec, "worker", "resources")
    return Workload(
        key,
        label,
        (
            PodTemplate(
                "worker",
                "worker.resources",
                resources if isinstance(resources, Mapping) else {},
                lo,
                hi,
                path,
                types,
                affinity,
                {},
                tolerations,
                sidecars,
            ),
        ),
    )


# --- findings --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One capacity problem: ``key`` is the workload's key ("" for the cluster), ``path`` the spec path."""

    rule: str
    key: str
    path: str
    message: str
    checked_by: str = ""  # set: cannot be checked offline (what decides it)

    @property
    def level(self) -> Level:
        """The rule's level, from its record (a capacity rule has one level in every environment)."""
        level = records.RECORDS[self.rule].levels["prod"]
        assert level != "disabled", self.rule
        return level


def effective_requests(resources: Mapping[str, Any] | None) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Requests as the scheduler counts them (a missing request defaults to its limit) and the problems found.

    Problems (spec path, message) follow Kubernetes' ResourceRequirements validation: a limit below its
    request; extended resources (GPUs, Neuron, EFA) whole numbers, with a limit equal to the request
    ("Limit must be set for non overcommitable resources"; kubernetes.io docs: extended resources).
    """
    problems: list[tuple[str, str]] = []
    if not resources:
        return {}, problems
    parsed: dict[str, dict[str, Fraction]] = {"requests": {}, "limits": {}}
    for part in ("requests", "limits"):
        block = resources.get(part) or {}
        if not isinstance(block, Mapping):
            continue
        for name, value in block.items():
            try:
                parsed[part][str(name)] = parse_quantity(value)
            except ValueError:
                problems.append((f"{part}.{name}", f"{part}.{name} {value!r} is not a Kubernetes quantity"))
    req, lim = parsed["requests"], parsed["limits"]
    for name in sorted(set(req) | set(lim)):
        r, lm = req.get(name), lim.get(name)
        if name in EXTENDED or "/" in name:
            for part, q in (("requests", r), ("limits", lm)):
                if q is not None and q.denominator != 1:
                    problems.append(
                        (f"{part}.{name}", f"{part}.{name} is {float(q):g}; {name} is counted in whole devices")
                    )
            if r is not None and lm is None:
                problems.append(
                    (
                        f"limits.{name}",
                        f"requests.{name} needs an equal limits.{name} (extended resources are not overcommitted)",
                    )
                )
            elif r is not None and lm is not None and r != lm:
                problems.append(
                    (
                        f"limits.{name}",
                        f"limits.{name} ({float(lm):g}) must equal requests.{name} ({float(r):g}) for an extended resource",
                    )
                )
        elif r is not None and lm is not None and lm < r:
            problems.append(
                (
                    f"limits.{name}",
                    f"limits.{name} ({show_raw(name, lm)}) is below requests.{name} ({show_raw(name, r)})",
                )
            )
    out: dict[str, int] = {}
    for name in set(req) | set(lim):
        q = req.get(name, lim.get(name))
        assert q is not None
        out[name] = math.ceil(q * 1000) if name == CPU else math.ceil(q)
    out[PODS] = 1
    return out, problems


def show_raw(name: str, q: Fraction) -> str:
    return show(name, math.ceil(q * 1000) if name == CPU else math.ceil(q))


def resource_findings(workloads: Iterable[Workload]) -> list[Finding]:
    """``endpoint-resources-valid``: requests/limits that the API server or the scheduler rejects."""
    out = []
    for w in workloads:
        for pod in w.pods:
            for path, message in effective_requests(pod.resources)[1]:
                out.append(
                    Finding(
                        "endpoint-resources-valid",
                        w.key,
                        f"{pod.resources_path}.{path}",
                        f"{w.label}: {pod.role} {message}",
                    )
                )
            for where, resources in pod.sidecars:
                for path, message in effective_requests(resources)[1]:
                    out.append(
                        Finding(
                            "endpoint-resources-valid",
                            w.key,
                            f"{where}.{path}",
                            f"{w.label}: {where} {message}",
                        )
                    )
    return out


@dataclass
class _Node:
    group: Group
    index: int
    free: dict[str, int]
    taken: dict[str, dict[str, int]] = field(default_factory=dict)  # workload key -> amounts


@dataclass
class PodPlacement:
    """Where one pod template can go: the groups its selection allows, those whose taints it tolerates, ..."""

    workload: Workload
    pod: PodTemplate
    requests: dict[str, int] | None  # None: unknown (JumpStartModel)
    selected: list[Group]
    tolerated: list[Group]
    fitting: list[Group]  # tolerated groups one of whose nodes can hold the pod
    tolerations: list[Mapping[str, Any]] = field(default_factory=list)  # the pod's, plus the admission-added ones
    unknowns: list[OfflineUnknown] = field(default_factory=list)  # node selection not known offline


@dataclass
class Plan:
    """Everything the capacity rules and the report read, computed once per stack."""

    groups: list[Group]
    allocatable: dict[str, NodeAllocatable | None]
    placements: list[PodPlacement]
    system_pods: list[SystemPod]
    findings: list[Finding]
    usage: dict[str, dict[str, dict[str, int]]]  # group -> workload label -> amounts (at min replicas)
    usage_max: dict[str, dict[str, dict[str, int]]]
    unplaced: dict[str, int]  # workload key -> pods not placed at min replicas

    def by_rule(self, rule: str) -> list[Finding]:
        return [f for f in self.findings if f.rule == rule]


def _candidate_groups(pod: PodTemplate, groups: Sequence[Group]) -> tuple[list[Group], list[OfflineUnknown]]:
    """The groups a pod may land on (those whose match is unknown offline included) and the unknown expressions."""
    declared = {k for g in groups for k in g.node_labels()}
    selector_path = pod.resources_path.rsplit(".", 1)[0] + ".nodeSelector"
    out: list[Group] = []
    unknowns: list[OfflineUnknown] = []
    for g in groups:
        if pod.instance_types is not None and g.instance_type not in pod.instance_types:
            continue
        labels = g.node_labels()
        by_selector, from_selector = selector_offline(pod.node_selector, labels, declared, selector_path)
        by_affinity, from_affinity = affinity_offline(pod.node_affinity, labels, declared)
        if by_selector is False or by_affinity is False:
            continue
        out.append(g)
        unknowns.extend(u for u in (*from_selector, *from_affinity) if u not in unknowns)
    return out, unknowns


def _fits(requests: Mapping[str, int], free: Mapping[str, int]) -> bool:
    for r, v in requests.items():
        if v and v > free.get(r, 0):
            return False
    return True


def _short(requests: Mapping[str, int], free: Mapping[str, int]) -> list[str]:
    return [r for r in (GPU, NEURON, NEURONCORE, EFA, CPU, MEMORY, PODS) if requests.get(r, 0) > free.get(r, 0)]


def _taints_text(group: Group, taints: list[Taint]) -> str:
    return f"group {group.name} ({group.instance_type}), tainted {', '.join(str(t) for t in taints)}"


def _placement_findings(pl: PodPlacement, alloc: Mapping[str, NodeAllocatable | None]) -> list[Finding]:
    w, pod = pl.workload, pl.pod
    out: list[Finding] = []
    if pl.unknowns and pl.selected:
        groups = ", ".join(g.name for g in pl.selected)
        out.extend(
            Finding(
                NODE_SELECTION_OFFLINE,
                w.key,
                u.path,
                f"{w.label}: its {pod.role} pods {u.what}; not checked offline: they were sized against the groups "
                f"the rest of their selection allows ({groups})",
                u.checked_by,
            )
            for u in pl.unknowns
        )
    if not pl.selected:
        if pod.node_affinity or pod.node_selector:
            out.append(
                Finding(
                    "endpoint-pod-fits-node",
                    w.key,
                    "nodeAffinity" if pod.node_affinity else pod.resources_path.rsplit(".", 1)[0] + ".nodeSelector",
                    f"{w.label}: no instance group matches the {pod.role} pods' node selection "
                    f"(instance types {', '.join(pod.instance_types) if pod.instance_types else 'any'}"
                    f"{', nodeAffinity' if pod.node_affinity else ''}{', nodeSelector ' + str(dict(pod.node_selector)) if pod.node_selector else ''})",
                )
            )
        return out  # an instance type outside the cluster is endpoint-instance-type-in-cluster's finding
    if not pl.tolerated:
        tol = (
            "tolerates " + ", ".join(str(dict(t)) for t in pod.tolerations) if pod.tolerations else "tolerates no taint"
        )
        out.append(
            Finding(
                "endpoint-tolerates-group-taints",
                w.key,
                "tolerations" if pod.tolerations else "",
                f"{w.label}: its {pod.role} pods may only run on "
                + "; ".join(_taints_text(g, blocking_taints(pl.tolerations, g)) for g in pl.selected)
                + f"; the endpoint {tol} (InferenceEndpointConfig/JumpStartModel have no tolerations field before "
                "operator 3.7): remove the taint, make it PreferNoSchedule, or add an untainted group",
            )
        )
        return out
    if pl.requests is None:
        return out
    non_empty = [g for g in pl.tolerated if g.count > 0]
    if not non_empty or all(g.training_plan_arn for g in non_empty):
        why = "; ".join(
            f"group {g.name} has instanceCount 0"
            if g.count == 0
            else f"group {g.name} takes its instances from training plan {g.training_plan_arn}"
            for g in pl.tolerated
        )
        out.append(
            Finding(
                "endpoint-on-empty-group",
                w.key,
                "",
                f"{w.label}: {why}; its {pod.role} pods stay Pending until instances are running"
                + (
                    " (the plan must be Active: python -m tools.preflight.regional checks it)"
                    if any(g.training_plan_arn for g in non_empty)
                    else ""
                ),
                "tools.preflight.regional (ListTrainingPlans: the plan must be Active)"
                if any(g.training_plan_arn for g in non_empty)
                else "",
            )
        )
    if not pl.fitting:
        parts = []
        path = ""
        for g in pl.tolerated:
            a = alloc.get(g.name)
            if a is None:
                continue
            short = _short(pl.requests, a.allocatable)
            path = path or (
                f"{pod.resources_path}.requests.{short[0]}" if short and short[0] != PODS else pod.resources_path
            )
            shown = {r: v for r, v in a.allocatable.items() if r in (GPU, CPU, MEMORY) or pl.requests.get(r)}
            parts.append(
                f"one node of {g.describe()} allocates {describe(shown)}; "
                + "; ".join(f"{NOUN[r]}: {show(r, a.allocatable.get(r, 0))} = {a.breakdown(r)}" for r in short)
            )
        if parts:
            out.append(
                Finding(
                    "endpoint-pod-fits-node",
                    w.key,
                    path,
                    f"{w.label}: a {pod.role} pod requests {describe(pl.requests)}, more than any node it may run on: "
                    + " | ".join(parts),
                )
            )
    return out


def _pack(
    nodes: list[_Node], items: list[tuple[PodPlacement, int]], strategy: int
) -> tuple[list[tuple[PodPlacement, int]], list[_Node]]:
    """First-fit of pods onto candidate nodes; returns the pods not placed. ``items`` = (placement, replica no.)."""

    def size(item: tuple[PodPlacement, int]) -> tuple[int, ...]:
        req = item[0].requests or {}
        big = (-req.get(GPU, 0), -req.get(NEURON, 0), -req.get(NEURONCORE, 0), -req.get(MEMORY, 0), -req.get(CPU, 0))
        return ((len(item[0].fitting),) if strategy else ()) + big

    failed = []
    ordered = sorted(items, key=size)
    # Free amounts only shrink, so a node that could not take a pod cannot take an identical one later:
    # identical pods resume the scan where the previous one stopped (linear instead of pods x nodes).
    resume: dict[tuple[Any, ...], int] = {}
    for pl, replica in ordered:
        assert pl.requests is not None
        names = frozenset(g.name for g in pl.fitting)
        key = (names, tuple(sorted(pl.requests.items())))
        start = resume.get(key, 0)
        for i in range(start, len(nodes)):
            node = nodes[i]
            if node.group.name in names and _fits(pl.requests, node.free):
                for r, v in pl.requests.items():
                    node.free[r] = node.free.get(r, 0) - v
                bucket = node.taken.setdefault(pl.workload.key, {})
                for r, v in pl.requests.items():
                    bucket[r] = bucket.get(r, 0) + v
                resume[key] = i
                break
        else:
            resume[key] = len(nodes)
            failed.append((pl, replica))
    return failed, nodes


def _fresh_nodes(groups: Sequence[Group], alloc: Mapping[str, NodeAllocatable | None]) -> list[_Node]:
    out: list[_Node] = []
    for g in groups:
        a = alloc.get(g.name)
        if a is not None:
            out.extend(_Node(g, i, dict(a.allocatable)) for i in range(g.count))
    return out


def _pack_best(
    groups: Sequence[Group], alloc: Mapping[str, NodeAllocatable | None], items: list[tuple[PodPlacement, int]]
) -> tuple[list[tuple[PodPlacement, int]], list[_Node]]:
    """Largest-first, then most-constrained-first: a placement either finds counts as feasible."""
    best: tuple[list[tuple[PodPlacement, int]], list[_Node]] | None = None
    for strategy in (0, 1):
        failed, nodes = _pack(_fresh_nodes(groups, alloc), items, strategy)
        if not failed:
            return failed, nodes
        if best is None:
            best = (failed, nodes)
    assert best is not None
    return best


def _usage(nodes: Iterable[_Node], labels: Mapping[str, str]) -> dict[str, dict[str, dict[str, int]]]:
    out: dict[str, dict[str, dict[str, int]]] = {}
    for node in nodes:
        for key, amounts in node.taken.items():
            bucket = out.setdefault(node.group.name, {}).setdefault(labels.get(key, key), {})
            for r, v in amounts.items():
                bucket[r] = bucket.get(r, 0) + v
    return out


def _dimension(req: Mapping[str, int]) -> str:
    return next((r for r in (GPU, NEURON, NEURONCORE) if req.get(r)), CPU)


def _capacity_findings(  # noqa: PLR0917 - internal, called twice with the same shape
    failed: list[tuple[PodPlacement, int]],
    nodes: list[_Node],
    counts: Mapping[tuple[str, str], int],
    alloc: Mapping[str, NodeAllocatable | None],
    labels: Mapping[str, str],
    rule: str,
    at: str,
    beyond: Mapping[tuple[str, str], int],
) -> list[Finding]:
    out = []
    seen: dict[tuple[str, str], int] = dict(beyond)
    for pl, _ in failed:
        k = (pl.workload.key, pl.pod.role)
        seen[k] = seen.get(k, 0) + 1
    done = set()
    for pl, _ in failed:
        k = (pl.workload.key, pl.pod.role)
        if k in done:
            continue
        done.add(k)
        assert pl.requests is not None
        dim = _dimension(pl.requests)
        n = counts[k]
        types = sorted({g.instance_type for g in pl.fitting})
        per_group = []
        for g in pl.fitting:
            a = alloc.get(g.name)
            if a is not None:
                per_group.extend(
                    _binding_texts(pl, g, a, [x for x in nodes if x.group.name == g.name], labels=labels, dim=dim)
                )
        extra = {r: v for r, v in pl.requests.items() if r not in (dim, PODS)}
        out.append(
            Finding(
                rule,
                pl.workload.key,
                pl.pod.replicas_path.replace("minReplicaCount", "maxReplicaCount") if at else pl.pod.replicas_path,
                f"{pl.workload.label} needs {n} {pl.pod.role} pod{'s' if n != 1 else ''} x "
                f"{show(dim, pl.requests.get(dim, 0))} {NOUN[dim]}"
                + (f" ({describe(extra)} each)" if extra else "")
                + f" on {', '.join(types)}{at}; {seen[k]} of them fit nowhere: "
                + " | ".join(per_group),
            )
        )
    return out


BIND_ORDER = (GPU, NEURON, NEURONCORE, EFA, CPU, MEMORY, PODS)


def _verb(resource: str) -> str:
    return f"{NOUN[resource]} {'bind' if NOUN[resource].endswith('s') else 'binds'}"


def threads_note(group: Group) -> str:
    """``threadsPerCore 1: 24 of the 48 vCPUs; threadsPerCore: 2 shows all 48`` (what the CPU count rests on)."""
    spec = group.spec
    if spec is None:
        return f"threadsPerCore {group.threads_per_core}"
    cpus = spec.cpus(group.threads_per_core)
    text = f"threadsPerCore {group.threads_per_core}: {cpus} of the {spec.vcpus} vCPUs"
    if cpus < spec.vcpus:
        text += f"; threadsPerCore: {spec.default_threads_per_core} shows all {spec.vcpus}"
    return text


def _per_node(values: Sequence[str], listed: int = 8) -> str:
    """Free amounts node by node; past ``listed`` nodes, each distinct amount once with its node count (a 6758-node
    group must not make a 6758-item message)."""
    if len(values) <= listed:
        return ", ".join(values) or "none"
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return ", ".join(f"{v} on {n} node{'s' if n != 1 else ''}" for v, n in counts.items())


def _binding_texts(
    pl: PodPlacement, g: Group, a: NodeAllocatable, g_nodes: list[_Node], *, labels: Mapping[str, str], dim: str
) -> list[str]:
    """Per resource that binds on the nodes of ``g`` (the first one a pod is short of, node by node): what the
    group has, what the other pods take, what is free per node and what one pod needs."""
    assert pl.requests is not None
    binding: dict[str, int] = {}
    for x in g_nodes:
        short = next((r for r in BIND_ORDER if pl.requests.get(r, 0) > x.free.get(r, 0)), None)
        if short is not None:
            binding[short] = binding.get(short, 0) + 1
    texts = []
    for r in sorted(binding, key=lambda r: (-binding[r], BIND_ORDER.index(r))) or [dim]:
        per = a.allocatable.get(r, 0)
        others: dict[str, int] = {}
        own = 0
        for x in g_nodes:
            for key, amounts in x.taken.items():
                if key == pl.workload.key:
                    own += amounts.get(r, 0)
                else:
                    others[labels.get(key, key)] = others.get(labels.get(key, key), 0) + amounts.get(r, 0)
        text = f"group {g.name} has {g.count} x {show(r, per)} = {show(r, g.count * per)} {NOUN[r]}"
        if r == CPU:
            text += f" ({threads_note(g)})"
        taken = ", ".join(f"{lbl} already takes {show(r, v)}" for lbl, v in others.items() if v)
        if taken:
            text += f", {taken}"
        if own:
            text += f", its other pods take {show(r, own)}"
        text += f"; free per node: {_per_node([show(r, x.free.get(r, 0)) for x in g_nodes])}"
        if r != dim or len(binding) > 1:
            on = f" on {binding.get(r, 0)} of {len(g_nodes)} nodes" if binding.get(r, 0) < len(g_nodes) else ""
            text += f"; {_verb(r)}{on} (a pod needs {show(r, pl.requests.get(r, 0))})"
            if r != dim:
                text += f"; {NOUN[dim]} free per node: {_per_node([show(dim, x.free.get(dim, 0)) for x in g_nodes])}"
        texts.append(text)
    return texts


def _controller_findings(
    system_pods: Sequence[SystemPod], groups: Sequence[Group], alloc: Mapping[str, NodeAllocatable | None]
) -> tuple[list[Finding], list[tuple[SystemPod, list[Group]]]]:
    out, placeable = [], []
    stranded: dict[str, list[SystemPod]] = {}
    for pod in system_pods:
        if pod.kind == "DaemonSet" or pod.replicas <= 0:
            continue
        why = []
        ok = []
        for g in groups:
            labels = g.node_labels()
            taints = blocking_taints(pod.tolerations, g)
            if g.count == 0:
                why.append(f"{g.name} has instanceCount 0")
            elif not selector_matches(pod.node_selector, labels):
                why.append(f"{g.name} does not match its nodeSelector {dict(pod.node_selector)}")
            elif taints:
                why.append(_taints_text(g, taints) + " (not tolerated)")
            else:
                a = alloc.get(g.name)
                if pod.requests is not None and a is not None and not _fits({**pod.requests, PODS: 1}, a.allocatable):
                    why.append(
                        f"one node of {g.name} allocates {describe(a.allocatable)}, less than its {describe(pod.requests)}"
                    )
                else:
                    ok.append(g)
        if not ok:
            reason = "; ".join(why) or "the cluster has no instance group"
            stranded.setdefault(reason, []).append(pod)
        elif pod.requests is not None:
            placeable.append((pod, ok))
    for reason, pods in stranded.items():
        names = ", ".join(
            f"{p.name} ({p.replicas}{'' if p.tolerations_known else ', tolerations unknown'})" for p in pods
        )
        out.append(
            Finding(
                "controllers-have-a-node",
                "",
                "",
                f"{len(pods)} controller Deployment(s) the stack installs can run on no instance group: {names} "
                f"(replicas in brackets): {reason}; leave one group untainted (the system group) or tolerate its taint",
            )
        )
    return out, placeable


ZONE_RULE = "controllers-span-zones"


def controllers_in_one_zone(plan: Plan) -> list[str]:
    """``controllers-span-zones``: the groups each controller Deployment may run on are in at least two AZ IDs;
    one message per AZ that holds controllers alone.

    A topology rule, not a count, over the system (non-accelerator) groups a controller may use when it has any:
    three system nodes in one AZ lose CoreDNS, the load balancer controller's
    fail-closed webhooks, KEDA, cert-manager and the operator together when that AZ fails (issue 47 item 5). With
    nodes in two AZs the scheduler's default topology spreading (Kubernetes "Pod Topology Spread Constraints",
    cluster-level defaults: ``topology.kubernetes.io/zone``, ScheduleAnyway) places replicas in both, and a
    single-replica controller is rescheduled into the other AZ. A group whose AZ is not known (an unresolved
    subnet) makes the rule unknowable for that controller, never ok.

    A config-time rule only (components/config/capacity.py: prod refuses, an adopted cluster is advised): the pack
    sees the groups' subnets by ID, which a plan does not resolve to an AZ, so it has no policy record.
    """
    controllers = _controller_findings(plan.system_pods, plan.groups, plan.allocatable)[1]
    one_zone: dict[str, list[str]] = {}
    for pod, ok in controllers:
        serving = [g for g in ok if g.count > 0]
        # The system nodes: where a controller may run without taking an accelerator node (an untainted GPU group
        # admits controllers too, until the endpoints fill it). Only GPU groups admit it: they are the spread then.
        system = [g for g in serving if g.spec is not None and not g.spec.gpus and not g.spec.neuron_devices]
        serving = system or serving
        if not serving or any(g.az_id is None for g in serving):
            continue
        zones = sorted({str(g.az_id) for g in serving})
        if len(zones) < 2:
            one_zone.setdefault(zones[0], []).append(pod.name)
    return [
        f"{len(names)} controller Deployment(s) can run only in {zone}: {', '.join(sorted(names))}; an outage of "
        f"{zone} stops them all. Give them nodes in a second AZ ID: another untainted instance group (e.g. a "
        "second system group) with availabilityZoneId in another of network.availabilityZoneIds"
        for zone, names in sorted(one_zone.items())
    ]


def plan(
    groups: Sequence[Group],
    workloads: Sequence[Workload],
    system_pods: Sequence[SystemPod] = (),
    observed: Mapping[str, ObservedAllocatable] | None = None,
) -> Plan:
    """Run every capacity rule once: the findings and the per-group usage the report shows. ``observed``: per
    group name, the allocatable ``tools.verify`` read from the group's nodes (used instead of the computed one)."""
    groups = list(groups)
    seen = observed or {}
    alloc = {g.name: node_allocatable(g, system_pods, seen.get(g.name)) for g in groups}
    findings = resource_findings(workloads)
    labels = {w.key: w.label for w in workloads}
    placements = []
    for w in workloads:
        for pod in w.pods:
            requests = pod.pod_requests()
            selected, unknowns = _candidate_groups(pod, groups)
            tolerations = [*pod.tolerations, *extended_resource_tolerations(requests or {})]
            tolerated = [g for g in selected if not blocking_taints(tolerations, g)]
            fitting = []
            if requests is not None:
                fitting = [
                    g for g in tolerated if (a := alloc.get(g.name)) is not None and _fits(requests, a.allocatable)
                ]
            pl = PodPlacement(w, pod, requests, selected, tolerated, fitting, tolerations, unknowns)
            placements.append(pl)
            findings.extend(_placement_findings(pl, alloc))

    controller_findings, controllers = _controller_findings(system_pods, groups, alloc)
    findings.extend(controller_findings)
    sys_workloads = {
        pod.name: PodPlacement(
            Workload(f"system:{pod.name}", pod.name, ()),
            PodTemplate(pod.name, "", None, pod.replicas, pod.replicas, ""),
            {**(pod.requests or {}), PODS: 1},
            ok,
            ok,
            [g for g in ok if g.count > 0],
        )
        for pod, ok in controllers
    }
    for spl in sys_workloads.values():
        labels[spl.workload.key] = spl.workload.label

    def slots(pl: PodPlacement) -> int:
        """Pods the nodes that exist can hold at most (each node's allocatable ``pods``): one replica more than
        this never fits, so the packing needs no more items than that, whatever the replica count says. This
        bounds the model's cost by the nodes (botocore: at most 6758 per group), not by the config's integers."""
        total = 0
        for g in pl.fitting:
            a = alloc.get(g.name)
            total += g.count * a.allocatable.get(PODS, 0) if a is not None else 0
        return total

    def items(
        at_max: bool,
    ) -> tuple[list[tuple[PodPlacement, int]], dict[tuple[str, str], int], dict[tuple[str, str], int]]:
        out: list[tuple[PodPlacement, int]] = []
        counts: dict[tuple[str, str], int] = {}
        beyond: dict[tuple[str, str], int] = {}  # replicas past the first that cannot fit: counted, not packed
        for pl in placements:
            if pl.requests is None or not any(g.count > 0 for g in pl.fitting):
                continue
            n = pl.pod.replicas_max if at_max else pl.pod.replicas_min
            key = (pl.workload.key, pl.pod.role)
            counts[key] = n
            packed = min(n, slots(pl) + 1)
            if packed < n:
                beyond[key] = n - packed
            out.extend((pl, i) for i in range(packed))
        for spl in sys_workloads.values():
            out.extend((spl, i) for i in range(min(spl.pod.replicas_min, slots(spl) + 1)))
        return out, counts, beyond

    min_items, min_counts, min_beyond = items(False)
    failed, nodes = _pack_best(groups, alloc, min_items)
    endpoint_failed = [f for f in failed if not f[0].workload.key.startswith("system:")]
    system_failed = [f for f in failed if f[0].workload.key.startswith("system:")]
    findings.extend(
        _capacity_findings(
            endpoint_failed,
            nodes,
            min_counts,
            alloc,
            labels,
            "endpoint-fits-group-capacity",
            "",
            min_beyond,
        )
    )
    for spl, _ in system_failed:
        findings.append(
            Finding(
                "controllers-have-a-node",
                "",
                "",
                f"{spl.workload.label}: {spl.pod.replicas_min} replica(s) of {describe(spl.requests or {})} do not fit "
                f"next to the endpoints on {', '.join(g.name for g in spl.fitting)}",
            )
        )
    unplaced: dict[str, int] = {}
    for pl, _ in endpoint_failed:
        unplaced[pl.workload.key] = unplaced.get(pl.workload.key, 0) + 1
    for (key, _role), n in sorted(min_beyond.items()):
        unplaced[key] = unplaced.get(key, 0) + n
    usage = _usage(nodes, labels)

    max_items, max_counts, max_beyond = items(True)
    usage_max = usage
    if max_counts != min_counts:
        failed_max, nodes_max = _pack_best(groups, alloc, max_items)
        usage_max = _usage(nodes_max, labels)
        newly = [
            f for f in failed_max if not f[0].workload.key.startswith("system:") and f[0].workload.key not in unplaced
        ]
        findings.extend(
            _capacity_findings(
                newly,
                nodes_max,
                max_counts,
                alloc,
                labels,
                "endpoint-fits-group-capacity-at-max",
                " at autoscaling maxReplicaCount",
                max_beyond,
            )
        )
    return Plan(groups, alloc, placements, list(system_pods), findings, usage, usage_max, unplaced)


# The rules' names, levels and descriptions are in their records (policies/records/<name>.yaml, kind capacity).
CAPACITY_RULE_NAMES: tuple[str, ...] = tuple(r.name for r in records.of_kind("capacity"))


def fit_hook_for(registrations: Iterable[tuple[str, Mapping[str, Any]]]) -> Any:
    """:func:`fit_hook` for one stack: each node's allocatable also subtracts the DaemonSets its endpoints make the
    operator run on their nodes (:func:`target_node_pods`, e.g. the image cache on the endpoint's instance types)."""
    extra = tuple(target_node_pods(registrations))

    def hook(pod: Any, group: Any, replicas: int) -> str | None:
        return fit_hook(pod, group, replicas, extra)

    return hook


def fit_hook(pod: Any, group: Any, replicas: int, extra_daemonsets: Sequence[SystemPod] = ()) -> str | None:
    """The rehearsal's resource-fit hook (``tools.rehearse`` ``FitHook``): why ``replicas`` of a system pod
    (``policies.readiness.SystemPod``) do not fit the nodes of ``group`` (its ``NodeGroup``: name,
    instance_type, count, labels, taints as ``(key, value, effect)``, optional threads_per_core), or ``None``.

    Taints, selectors and architecture are the rehearsal's own checks; this judges requests against one node's
    allocatable (after kube-reserved and the DaemonSets) and the replicas against the group's nodes. Unknown
    requests or an instance type missing from the data cannot be judged: ``None``.
    """
    sp = system_pod(pod)
    if sp.requests is None:
        return None
    g = Group(
        name=str(group.name),
        instance_type=str(group.instance_type),
        count=int(group.count),
        threads_per_core=int(getattr(group, "threads_per_core", 1) or 1),
        labels=dict(getattr(group, "labels", {}) or {}),
        taints=tuple(Taint(str(k), v, str(e)) for k, v, e in getattr(group, "taints", ()) or ()),
    )
    a = node_allocatable(g, [*load_system_pods()[0], *extra_daemonsets])
    if a is None:
        return None
    req = {**sp.requests, PODS: 1}
    if not _fits(req, a.allocatable):
        short = _short(req, a.allocatable)
        return f"{sp.name} requests {describe(req)}; one node of {g.describe()} allocates " + "; ".join(
            f"{NOUN[r]} {show(r, a.allocatable.get(r, 0))} = {a.breakdown(r)}" for r in short
        )
    per_node = min(a.allocatable.get(r, 0) // v for r, v in req.items() if v)
    if per_node * g.count < replicas:
        return (
            f"{replicas} replicas of {sp.name} ({describe(req)} each) need more than {g.count} node(s) of "
            f"{g.describe()}, which hold {per_node} each"
        )
    return None
