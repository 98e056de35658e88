"""HyperPodNodeWait: a Pulumi dynamic resource that waits until a HyperPod cluster's nodes are running.

Why: the HyperPod cluster's create (aws-native, CloudControl) ends when its handler reports SUCCESS, and no source
says that means the nodes have joined. AWS's own Terraform waits for them *after* the cluster: it polls
``kubectl get nodes -l sagemaker.amazonaws.com/cluster-name=<cluster>`` every 30 s, up to 60 times (30 minutes),
before anything that needs nodes (awslabs/awsome-distributed-ai@95b939cd
``1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/modules/hyperpod_cluster/main.tf:136-144``
and ``scripts/wait-for-hyperpod-nodes.sh:10-24``). CoreDNS, the operator's prerequisite add-ons, the inference
add-on and the charts that wait for pods start their own create timers when their create starts, and CoreDNS
"always takes 15 minutes" even with nodes (aws-ia/terraform-aws-eks-blueprints#642): without this wait their
timeouts run while the nodes are still joining (deploy-readiness.md trap 12).

What it waits for is stricter than AWS's script (at least one node): **every instance group has its target count
of nodes whose ``InstanceStatus.Status`` is ``Running``**, read with SageMaker ``ListClusterNodes`` (paginated,
``MaxResults`` 100) every ``pollSeconds``, through the AWS API, so it needs no route to the Kubernetes API. The
request and response shapes below mirror botocore's ``sagemaker`` service model and ``tests/test_hyperpod_node_wait.py``
checks them against it. Whether ``Running`` means the node has joined EKS and passed its on-start deep health checks
(``DeepHealthCheckInProgress`` is a separate status) is UNCONFIRMED [node-running-means-ready]; a group whose nodes are Running but not yet
Ready in Kubernetes is possible.

Lifecycle:

- create / update: the wait above, bounded by ``timeoutSeconds`` (its default is the ``create_timeout_minutes`` of
  this resource's entry in ``policies/readiness.yaml``). On timeout it fails with each group that is short, its
  count and the statuses its nodes are in. The failed create is not saved, so ``pulumi up`` again waits again.
- diff: a new cluster ARN or region replaces (a new wait); target counts, timeout, poll interval and the credential
  chain update (the state must hold the inputs ``read``/``delete`` run with). **The wait runs again only when the
  instance groups or their counts change** (:data:`NODE_KEYS`):
  a new credential source or a new readiness timeout is an update that records the inputs and returns at once,
  keeping the ``runningNodes`` of the last wait (issue 45 item 4: a 90-minute wait for nothing).
- read: the inputs (it owns nothing in AWS); delete: nothing to delete.

Errors: AccessDenied names ``sagemaker:ListClusterNodes``; throttling is retried by botocore (adaptive mode); an
unknown cluster is one clear error. Waits take an injectable ``sleep`` and ``clock``. Clients,
retries and the stack's credential chain come from the shared base, ``components/dynamic_provider.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, TypedDict

import pulumi
from botocore.exceptions import ClientError
from pulumi import dynamic

from .dynamic_provider import (
    DENIED_CODES,
    NOT_FOUND_CODES,
    THROTTLED,
    THROTTLING_CODES,
    DynamicProviderBase,
    error_code,
    error_message,
)

RESOURCE_KIND = "hyperpod:HyperPodNodeWait"
RUNNING = "Running"
POLL_SECONDS = 30.0  # as AWS's wait-for-hyperpod-nodes.sh (sleep 30)
PAGE_SIZE = 100  # ListClusterNodes MaxResults maximum (botocore sagemaker model)
# The inputs that say what the nodes are: a change of one of them makes an update wait again (the others — timeout,
# poll interval, the credential chain — are recorded without waiting).
NODE_KEYS: tuple[str, ...] = ("groups",)


# --- API shapes (botocore sagemaker model, 2017-07-24; checked in tests) -------------------------------


class _ListRequired(TypedDict):
    ClusterName: str


class ListClusterNodesRequest(_ListRequired, total=False):
    """``ListClusterNodesRequest`` (the members this provider sends)."""

    NextToken: str
    MaxResults: int


class InstanceStatusShape(TypedDict, total=False):
    """``ClusterInstanceStatusDetails``: ``Status`` is required."""

    Status: str
    Message: str


class ClusterNodeSummaryShape(TypedDict, total=False):
    """``ClusterNodeSummary`` (the members this provider reads)."""

    InstanceGroupName: str
    InstanceId: str
    InstanceStatus: InstanceStatusShape


class ListClusterNodesResponse(TypedDict, total=False):
    """``ListClusterNodesResponse``."""

    NextToken: str
    ClusterNodeSummaries: list[ClusterNodeSummaryShape]


class NodeWaitError(Exception):
    """One clear, actionable message for a failed wait."""


_code, _message = error_code, error_message


def node_statuses(pages: list[ListClusterNodesResponse]) -> dict[str, Counter[str]]:
    """Instance group -> how many of its nodes are in each ``InstanceStatus.Status``."""
    out: dict[str, Counter[str]] = {}
    for page in pages:
        for node in page.get("ClusterNodeSummaries", []):
            group = str(node.get("InstanceGroupName", ""))
            status = str((node.get("InstanceStatus") or {}).get("Status", "unknown"))
            out.setdefault(group, Counter())[status] += 1
    return out


def short_groups(targets: Mapping[str, int], statuses: Mapping[str, Counter[str]]) -> dict[str, tuple[int, int]]:
    """Groups with fewer Running nodes than their target: group -> (running, target)."""
    out = {}
    for group, target in sorted(targets.items()):
        running = statuses.get(group, Counter())[RUNNING]
        if running < int(target):
            out[group] = (running, int(target))
    return out


def describe_short(short: Mapping[str, tuple[int, int]], statuses: Mapping[str, Counter[str]]) -> str:
    parts = []
    for group, (running, target) in short.items():
        others = {s: n for s, n in sorted(statuses.get(group, Counter()).items()) if s != RUNNING}
        detail = ", ".join(f"{s}: {n}" for s, n in others.items()) or "no other nodes listed"
        parts.append(f"instance group {group}: {running} of {target} node(s) Running ({detail})")
    return "; ".join(parts)


def nodes_changed(olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
    """Whether an update changes what the nodes are (:data:`NODE_KEYS`; an empty value and a missing one are the
    same), so the wait must run again."""
    return any((olds.get(k) or None) != (news.get(k) or None) for k in NODE_KEYS)


def changed_keys(olds: Mapping[str, Any], news: Mapping[str, Any]) -> str:
    keys = sorted(k for k in set(olds) | set(news) if k != "runningNodes" and olds.get(k) != news.get(k))
    return ", ".join(keys) or "nothing"


class HyperPodNodeWaitProvider(DynamicProviderBase):
    """Waits for a HyperPod cluster's nodes; ``client_factory``/``sleep``/``clock``/``log`` are for tests.

    Clients, retries and the credential chain (the stack's ``aws:profile`` / ``aws:assumeRoles``, passed as inputs)
    come from :class:`~components.dynamic_provider.DynamicProviderBase`.
    """

    replace_keys = ("clusterArn", "region")
    update_keys = ("groups", "timeoutSeconds", "pollSeconds")

    def error(self, operation: str, params: Mapping[str, Any], err: ClientError) -> NodeWaitError:
        return self._error(str(params.get("ClusterName", "")), err)

    @staticmethod
    def _error(cluster: str, err: ClientError) -> NodeWaitError:
        code, message = _code(err), _message(err)
        if code in DENIED_CODES:
            return NodeWaitError(
                "access denied: the credentials running `pulumi up` need IAM action sagemaker:ListClusterNodes "
                f"on {cluster} to wait for its nodes: {message}"
            )
        if code in THROTTLING_CODES:
            return NodeWaitError(f"ListClusterNodes: {THROTTLED}: {message}")
        if code in NOT_FOUND_CODES:
            return NodeWaitError(f"ListClusterNodes: no HyperPod cluster {cluster}: {message}")
        return NodeWaitError(f"ListClusterNodes on {cluster} failed ({code}): {message}")

    def statuses(self, region: str, cluster: str) -> dict[str, Counter[str]]:
        """Every page of ListClusterNodes, counted per group and status."""
        request = ListClusterNodesRequest(ClusterName=cluster, MaxResults=PAGE_SIZE)
        pages: list[ListClusterNodesResponse] = list(self._pages(region, "ListClusterNodes", **request))
        return node_statuses(pages)

    def wait(self, props: Mapping[str, Any]) -> dict[str, int]:
        """Until every group has its target of Running nodes; the Running count per group."""
        region, cluster = self._use(props), str(props["clusterArn"])
        targets = {str(k): int(v) for k, v in (props.get("groups") or {}).items()}
        timeout = float(props["timeoutSeconds"])
        poll = float(props.get("pollSeconds") or POLL_SECONDS)
        started = self._now()
        while True:
            statuses = self.statuses(region, cluster)
            short = short_groups(targets, statuses)
            elapsed = self._now() - started
            if not short:
                running = {g: statuses.get(g, Counter())[RUNNING] for g in sorted(targets)}
                self._info(f"{cluster}: every instance group has its nodes Running after {elapsed:.0f}s ({running})")
                return running
            if elapsed >= timeout:
                raise NodeWaitError(
                    f"HyperPod cluster {cluster}: after {elapsed:.0f}s (timeoutSeconds {timeout:g}, "
                    f"policies/readiness.yaml) {describe_short(short, statuses)}. The nodes may still join: check "
                    f"`aws sagemaker list-cluster-nodes --cluster-name {cluster} --region {region}` (a Failure status "
                    "shows its reason in InstanceStatus.Message), then rerun `pulumi up`, which waits again"
                )
            self._info(f"{cluster}: waiting for nodes: {describe_short(short, statuses)}")
            self._wait(poll)

    # CRUD

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        running = self.wait(props)
        return dynamic.CreateResult(str(props["clusterArn"]), {**props, "runningNodes": running})

    def read(self, id_: str, props: dict[str, Any]) -> dynamic.ReadResult:
        return dynamic.ReadResult(id_, props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        return self.diff_keys(olds, news)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        if not nodes_changed(olds, news):
            self._info(
                f"{news.get('clusterArn')}: instance groups unchanged; no wait (only {changed_keys(olds, news)})"
            )
            return dynamic.UpdateResult({**news, "runningNodes": olds.get("runningNodes")})
        return dynamic.UpdateResult({**news, "runningNodes": self.wait(news)})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None  # nothing of its own in AWS


class HyperPodNodeWait(dynamic.Resource):
    """The wait. Inputs (camelCase, also read by the rehearsal): ``region``, ``clusterArn``, ``groups``
    (instance group name -> target count), ``timeoutSeconds``, ``pollSeconds``, and the credential chain
    ``awsProfile`` / ``awsAssumeRoles`` / ``awsStsRegion`` (:func:`components.dynamic_provider.credential_inputs`)."""

    runningNodes: pulumi.Output[dict[str, int]]  # outputs keep their property names

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: HyperPodNodeWaitProvider | None = None,
    ) -> None:
        inputs: dict[str, Any] = {**props, "resourceKind": RESOURCE_KIND, "runningNodes": None}
        super().__init__(provider or HyperPodNodeWaitProvider(), name, inputs, opts)
