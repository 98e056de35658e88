"""HyperPodNodeSoftware: moves a HyperPod cluster's running nodes to the software of a new Kubernetes version.

Why: a HyperPod node's image is chosen when the node is created ("SageMaker HyperPod selects an AMI that corresponds to
the Kubernetes version of the Amazon EKS cluster"), and only UpdateClusterSoftware moves existing nodes (AWS, "Update
the SageMaker HyperPod platform software":
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-cli-command-update-cluster-software.html).
An EKS version change alone leaves every node on the old kubelet. For a group with a pinned ``imageReleaseVersion``
the cluster's own property is the trigger (AWS::SageMaker::Cluster ``ImageReleaseVersion``: "Changing this value on
an existing instance group triggers a software update via UpdateClusterSoftware"); for a group on ``latest`` the
schema has no property that would, so this dynamic resource makes the call, with the group's rolling
``DeploymentConfig`` (``cluster.instanceGroups[].softwareUpdates``, components/config/node_software.py).

Lifecycle:

- create: nothing to roll (new nodes start on the release for the cluster's version); ``DescribeCluster`` records
  each group's ``CurrentImageReleaseVersion`` as ``imageReleases`` (what to pin ``imageReleaseVersion`` to).
- diff: a new cluster ARN or region replaces (a new cluster: nothing to roll); ``kubernetesVersion`` updates and
  rolls; the groups' deployment configs, timeout, poll interval and the credential chain update without a roll.
- update with a new ``kubernetesVersion``: for each group of ``groups`` in turn (never two groups at once, so the
  capacity taken is one group's batch: policies/node_roll.py), ``UpdateClusterSoftware`` (ClusterName, InstanceGroups
  [the group], DeploymentConfig), then ``DescribeCluster`` every ``pollSeconds`` until ``ClusterStatus`` is
  ``InService`` and the group's ``SoftwareUpdateStatus`` is ``Succeeded`` — ``Failed``, ``RollbackInProgress`` or
  ``RollbackComplete`` (an alarm of ``AutoRollbackConfiguration`` fired) is one error naming the group — within
  ``timeoutSeconds`` per group (policies/readiness.yaml).
- read: the inputs; delete: nothing (it owns nothing in AWS).

Every request is checked against botocore's ``sagemaker`` model in the tests (Stubber validates parameters).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from botocore.exceptions import ClientError
from pulumi import dynamic

from .dynamic_provider import DENIED_CODES, DynamicProviderBase
from .dynamic_provider import error_code as _code
from .dynamic_provider import error_message as _message

RESOURCE_KIND = "hyperpod:HyperPodNodeSoftware"
POLL_SECONDS = 60.0
IN_SERVICE = "InService"
SUCCEEDED = "Succeeded"
ROLLED_BACK = frozenset({"Failed", "RollbackInProgress", "RollbackComplete"})


class NodeSoftwareError(Exception):
    """One clear, actionable message for a failed roll."""


def update_request(cluster: str, group: str, deployment_config: Mapping[str, Any]) -> dict[str, Any]:
    """``UpdateClusterSoftware`` parameters rolling one group with its deployment config."""
    return {
        "ClusterName": cluster,
        "InstanceGroups": [{"InstanceGroupName": group}],
        "DeploymentConfig": dict(deployment_config),
    }


def group_status(described: Mapping[str, Any], group: str) -> tuple[str, str | None]:
    """(``ClusterStatus``, the group's ``SoftwareUpdateStatus`` or None) of a DescribeCluster response."""
    for g in described.get("InstanceGroups") or []:
        if g.get("InstanceGroupName") == group:
            return str(described.get("ClusterStatus", "")), g.get("SoftwareUpdateStatus")
    return str(described.get("ClusterStatus", "")), None


class HyperPodNodeSoftwareProvider(DynamicProviderBase):
    """Rolls the ``latest`` groups on a Kubernetes version change; ``client_factory``/``sleep``/``clock``/``log``
    are for tests (:class:`~components.dynamic_provider.DynamicProviderBase`)."""

    replace_keys = ("clusterArn", "region")
    update_keys = ("kubernetesVersion", "groups", "timeoutSeconds", "pollSeconds")

    def error(self, operation: str, params: Mapping[str, Any], err: ClientError) -> NodeSoftwareError:
        code, message = _code(err), _message(err)
        if code in DENIED_CODES:
            return NodeSoftwareError(
                f"access denied: the credentials running `pulumi up` need IAM action sagemaker:{operation} on "
                f"{params.get('ClusterName')} to roll its nodes to the new Kubernetes version: {message}"
            )
        return NodeSoftwareError(f"{operation} on {params.get('ClusterName')} failed ({code}): {message}")

    def roll(self, props: Mapping[str, Any]) -> list[str]:
        """Every group of ``groups``, one after the other; the groups rolled."""
        region, cluster = self._use(props), str(props["clusterArn"])
        timeout = float(props["timeoutSeconds"])
        poll = float(props.get("pollSeconds") or POLL_SECONDS)
        rolled = []
        for group, deployment in sorted(dict(props.get("groups") or {}).items()):
            self._call(region, "UpdateClusterSoftware", **update_request(cluster, group, deployment))
            started = self._now()
            while True:
                described = self._call(region, "DescribeCluster", ClusterName=cluster)
                status, update = group_status(described, group)
                if update in ROLLED_BACK:
                    raise NodeSoftwareError(
                        f"software update of instance group {group} of {cluster}: SoftwareUpdateStatus {update} (an "
                        "alarm of softwareUpdates.rollbackAlarms fired, or a node failed): `aws sagemaker "
                        f"describe-cluster --cluster-name {cluster}` shows why; fix it, then rerun `pulumi up`"
                    )
                if status == IN_SERVICE and update in (SUCCEEDED, None):
                    break
                elapsed = self._now() - started
                if elapsed >= timeout:
                    raise NodeSoftwareError(
                        f"software update of instance group {group} of {cluster}: still {status} / {update} after "
                        f"{elapsed:.0f}s (timeoutSeconds {timeout:g}, policies/readiness.yaml); the update goes on in "
                        "AWS: rerun `pulumi up` once describe-cluster shows it InService"
                    )
                self._info(f"{cluster}: rolling {group}: {status} / {update}")
                self._wait(poll)
            rolled.append(group)
        return rolled

    # CRUD

    def releases(self, props: Mapping[str, Any]) -> dict[str, str]:
        """Each group's ``CurrentImageReleaseVersion`` (DescribeCluster), where the API reports one."""
        region, cluster = self._use(props), str(props["clusterArn"])
        described = self._call(region, "DescribeCluster", ClusterName=cluster)
        return {
            str(g["InstanceGroupName"]): str(g["CurrentImageReleaseVersion"])
            for g in described.get("InstanceGroups") or []
            if g.get("CurrentImageReleaseVersion")
        }

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        outs = {**props, "rolledGroups": [], "imageReleases": self.releases(props)}
        return dynamic.CreateResult(str(props["clusterArn"]), outs)

    def read(self, id_: str, props: dict[str, Any]) -> dynamic.ReadResult:
        return dynamic.ReadResult(id_, props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        return self.diff_keys(olds, news)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        if olds.get("kubernetesVersion") == news.get("kubernetesVersion"):
            return dynamic.UpdateResult({**news, "rolledGroups": []})
        rolled = self.roll(news)
        return dynamic.UpdateResult({**news, "rolledGroups": rolled, "imageReleases": self.releases(news)})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None


class HyperPodNodeSoftware(dynamic.Resource):
    """The roll. Inputs (camelCase, also read by the rehearsal): ``region``, ``clusterArn``, ``kubernetesVersion``,
    ``groups`` (instance group on ``latest`` -> its DeploymentConfig), ``timeoutSeconds`` (per group),
    ``pollSeconds``, and the credential chain (:func:`components.dynamic_provider.credential_inputs`)."""

    rolledGroups: pulumi.Output[list[str]]
    imageReleases: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: HyperPodNodeSoftwareProvider | None = None,
    ) -> None:
        inputs: dict[str, Any] = {**props, "resourceKind": RESOURCE_KIND, "rolledGroups": None, "imageReleases": None}
        super().__init__(provider or HyperPodNodeSoftwareProvider(), name, inputs, opts)
