"""What a rolling node-software update of a HyperPod instance group takes away from each endpoint while it runs.

HyperPod replaces a node's root volume with the new AMI during a software update, and the node is ``NotReady`` while
it is patched; HyperPod does not drain or move the pods on it (AWS, "Update the SageMaker HyperPod platform
software": https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-cli-command-update-cluster-software.html).
Without a ``DeploymentConfig`` every node of the group is patched at once; with one, ``RollingUpdatePolicy``
``MaximumBatchSize`` nodes (``INSTANCE_COUNT``) or per cent of the group (``CAPACITY_PERCENTAGE``) at a time
(UpdateClusterSoftware, DeploymentConfiguration: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateClusterSoftware.html).

So the replicas of an endpoint on the batch's nodes stop serving for the batch. Two bounds, both computed here:

* **spread** — the replicas spread one-by-one over every node of the instance types they may use (what the Kubernetes
  scheduler's default spreading tends to do): the best a roll can leave. Zero here means the roll empties the
  endpoint whatever the scheduler does: refused in prod (``cluster.instanceGroups[].softwareUpdates``).
* **packed** — as many replicas on one node as its GPUs hold (a pod's GPU request against the node's GPUs): the
  worst. Zero here only when the pods land together, which nothing in the stack prevents offline: an advisory
  naming ``kubectl get pods -o wide`` as what checks it.

A percentage batch is rounded up to whole nodes (at least one): how HyperPod rounds is not published, so the bound
takes the larger batch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from policies.capacity_rules import GPU, Workload, instance_spec

INSTANCE_COUNT = "INSTANCE_COUNT"
CAPACITY_PERCENTAGE = "CAPACITY_PERCENTAGE"


@dataclass(frozen=True)
class RollingGroup:
    """An instance group as a roll sees it: ``batch_type``/``batch_value`` of its RollingUpdatePolicy, or None (no
    DeploymentConfig: the whole group at once)."""

    name: str
    instance_type: str
    count: int
    batch_type: str | None = None
    batch_value: int | None = None

    @property
    def batch_nodes(self) -> int:
        """Nodes patched at a time (0 for an empty group)."""
        return batch_nodes(self.count, self.batch_type, self.batch_value)


def batch_nodes(count: int, batch_type: str | None, batch_value: int | None) -> int:
    """Nodes of a group of ``count`` patched at once: the whole group without a rolling policy, ``value`` nodes for
    INSTANCE_COUNT, ``value`` per cent rounded up to a whole node for CAPACITY_PERCENTAGE; never more than ``count``."""
    if count <= 0:
        return 0
    if batch_type is None or batch_value is None:
        return count
    if batch_type == CAPACITY_PERCENTAGE:
        return min(count, max(1, math.ceil(count * batch_value / 100)))
    return min(count, max(1, batch_value))


@dataclass(frozen=True)
class RollImpact:
    """One endpoint role during the roll of one group."""

    group: str
    endpoint: str
    role: str
    replicas: int
    batch_nodes: int
    left_spread: int
    left_packed: int

    def describe(self) -> str:
        who = self.endpoint if self.role == "worker" else f"{self.endpoint} ({self.role})"
        return (
            f"{who}: {self.replicas} replica(s); a batch of {self.batch_nodes} node(s) of {self.group} leaves "
            f"{self.left_spread} serving if the replicas are spread over the nodes, {self.left_packed} if they are packed"
        )


def _gpus(requests: dict[str, int] | None) -> int | None:
    if requests is None:
        return None
    return requests.get(GPU, 0)


def roll_impacts(groups: Sequence[RollingGroup], workloads: Iterable[Workload]) -> list[RollImpact]:
    """Per group and endpoint role whose pods may run on the group's instance type: what serves during one batch.

    Endpoints with 0 replicas, pods that name no instance type, and groups with no node are left out (nothing to
    take away, or no group to pin them to)."""
    out: list[RollImpact] = []
    for wl in workloads:
        for pod in wl.pods:
            types = pod.instance_types
            replicas = pod.replicas_min
            if not types or replicas <= 0:
                continue
            matching = [g for g in groups if g.instance_type in types and g.count > 0]
            nodes_total = sum(g.count for g in matching)
            if nodes_total == 0:
                continue
            # Evenly spread: r nodes hold q + 1 replicas, the rest q; the worst batch takes the fullest nodes.
            q, r = divmod(replicas, nodes_total)
            for g in matching:
                spec = instance_spec(g.instance_type)
                gpus = _gpus(pod.pod_requests())
                per_node_packed = replicas
                if spec is not None and gpus:
                    per_node_packed = min(replicas, max(1, spec.gpus // gpus))
                b = g.batch_nodes
                out.append(
                    RollImpact(
                        group=g.name,
                        endpoint=wl.label,
                        role=pod.role,
                        replicas=replicas,
                        batch_nodes=b,
                        left_spread=max(0, replicas - min(replicas, min(b, r) * (q + 1) + max(0, b - r) * q)),
                        left_packed=max(0, replicas - min(replicas, b * per_node_packed)),
                    )
                )
    return out
