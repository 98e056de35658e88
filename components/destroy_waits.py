"""Destroy-time waits: what ``pulumi destroy`` must wait for that no Pulumi resource owns.

Two dynamic resources, each a no-op at create that records what its delete needs, placed in the dependency graph
so that ``pulumi destroy`` (which deletes in reverse dependency order) runs their delete at the right moment:

* :class:`LoadBalancerControllerDrain` — between the inference operator's add-on (which hosts the AWS Load Balancer
  Controller) and everything that makes the controller create AWS resources (the endpoints' custom resources, whose
  reconcile makes the operator's Ingress ``alb-<name>[-<namespace>]``; the front door's TargetGroupBindings). Pulumi
  waits for those custom resources to go, not for the controller to finalize the Ingresses the operator then
  deletes: if the add-on went next, the controller would go with it, and the ALB, its target groups and its
  ``k8s-*`` security groups would leak and block the VPC delete (deploy-readiness.md trap 7). Its delete polls
  until no load balancer and no security group tagged ``elbv2.k8s.aws/cluster=<cluster>`` (the controller's
  tracking tag: kubernetes-sigs/aws-load-balancer-controller ``pkg/deploy/tracking`` stack tags
  ``elbv2.k8s.aws/cluster: <cluster-name>``, ``ingress.k8s.aws/stack``; shield protection manager
  ``tagKeyK8sCluster = "elbv2.k8s.aws/cluster"``) remains, within ``timeoutSeconds``. On timeout it fails naming
  them: the add-on stays, the controller keeps running, and ``pulumi destroy`` again waits again.
* :class:`GuardDutyEndpointCleanup` — between the network (VPC, subnets) and the EKS cluster. With EKS Runtime
  Monitoring's automated agent configuration, GuardDuty adds an interface endpoint
  (``com.amazonaws.<region>.guardduty-data``) and a security group to the VPC of a monitored cluster; they keep the
  subnets and the VPC in use (awslabs/awsome-distributed-ai@95b939cd ``…/hyperpod-eks-tf/main.tf:367-385`` runs
  ``scripts/guardduty-cleanup.sh`` at destroy for this reason). Its delete runs after the EKS cluster (and so the
  HyperPod cluster, which depends on it) is gone and before the subnets: :func:`cleanup` deletes the endpoints
  tagged ``GuardDutyManaged`` for those services, waits for their interfaces, then deletes their tagged security
  groups (``python -m tools.preflight.guardduty_cleanup`` runs the same function by hand).

At create each makes one of its delete's read calls (a missing permission shows at ``up``). Both make their boto3
clients on first use, in the resource's ``region``, on the stack's credential chain (``aws:profile`` and
``aws:assumeRoles``, as the node wait and the gateway provider do: ``components/dynamic_provider.py``); ``client_factory``/``sleep``/``clock``/``log`` are for tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi import dynamic

from policies.readiness import load_readiness

from . import aws_calls
from .dynamic_provider import DynamicProviderBase

DRAIN_KIND = "hyperpod:LoadBalancerControllerDrain"
CLEANUP_KIND = "hyperpod:GuardDutyEndpointCleanup"
LBC_CLUSTER_TAG = "elbv2.k8s.aws/cluster"
GUARDDUTY_TAG = "GuardDutyManaged"
POLL_SECONDS = 5.0  # as guardduty-cleanup.sh (sleep 5)
DEFAULT_TIMEOUT_SECONDS = 600.0


DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"


def delete_timeout_seconds(kind: str) -> int:
    """The delete timeout of a destroy-time wait: its entry's ``delete_timeout_minutes`` in policies/readiness.yaml,
    the one place it is written (the rehearsal reads the same entry)."""
    entry = load_readiness().entry_for(DYNAMIC_TYPE, {"resourceKind": kind})
    if entry.delete_timeout_minutes is None:
        raise LookupError(f"policies/readiness.yaml: {entry.label or kind} sets no delete_timeout_minutes")
    return int(entry.delete_timeout_minutes * 60)


class CleanupError(Exception):
    """One clear message for a destroy-time wait or cleanup that could not finish."""


# --- GuardDuty's endpoint (also python -m tools.preflight.guardduty_cleanup) ---------------------------------------------


def guardduty_services(region: str) -> list[str]:
    """The endpoint services GuardDuty creates endpoints for (AmazonGuardDutyServiceRolePolicy)."""
    return [f"com.amazonaws.{region}.guardduty-data", f"com.amazonaws.{region}.guardduty-data-fips"]


@dataclass
class CleanupResult:
    vpc_id: str
    endpoints: list[str] = field(default_factory=list)
    security_groups: list[str] = field(default_factory=list)
    dry_run: bool = False


def _tagged(resource: dict[str, Any], key: str = GUARDDUTY_TAG) -> bool:
    return any(t.get("Key") == key for t in resource.get("Tags") or [])


def guardduty_endpoints(ec2: Any, vpc_id: str, region: str) -> list[dict[str, Any]]:
    """GuardDuty's endpoints in the VPC: its services and its tag (every page)."""
    filters = [
        {"Name": "vpc-id", "Values": [vpc_id]},
        {"Name": "service-name", "Values": guardduty_services(region)},
        {"Name": "tag-key", "Values": [GUARDDUTY_TAG]},
    ]
    found = aws_calls.items(ec2, "describe_vpc_endpoints", "VpcEndpoints", Filters=filters)
    return [e for e in found if _tagged(e) and e.get("VpcId", vpc_id) == vpc_id]


def cleanup(
    ec2: Any,
    vpc_id: str,
    region: str,
    *,
    dry_run: bool = False,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    log: Callable[[str], None] = print,
) -> CleanupResult:
    """Delete GuardDuty's endpoints in ``vpc_id``, wait for their interfaces, delete their tagged security groups.

    Only what GuardDuty's service-linked role may create: endpoints of its services carrying the tag key
    ``GuardDutyManaged``, and security groups of those endpoints carrying it (AmazonGuardDutyServiceRolePolicy,
    statements GuardDutyCreateVpcEndpointPolicy and GuardDutyCreateSecurityGroupPolicy).
    """
    endpoints = guardduty_endpoints(ec2, vpc_id, region)
    ids = sorted(str(e["VpcEndpointId"]) for e in endpoints)
    groups = sorted({str(g["GroupId"]) for e in endpoints for g in e.get("Groups") or []})
    result = CleanupResult(vpc_id, ids, [], dry_run)
    if not ids:
        log(f"{vpc_id}: no GuardDuty-managed VPC endpoint, nothing to do")
        return result
    tagged_groups = []
    if groups:
        described = ec2.describe_security_groups(GroupIds=groups).get("SecurityGroups") or []
        tagged_groups = sorted(str(g["GroupId"]) for g in described if _tagged(g))
    result.security_groups = tagged_groups
    if dry_run:
        log(
            f"{vpc_id}: would delete VPC endpoints {', '.join(ids)} and security groups {', '.join(tagged_groups) or 'none'}"
        )
        return result
    log(f"{vpc_id}: deleting GuardDuty VPC endpoints {', '.join(ids)}")
    failed = ec2.delete_vpc_endpoints(VpcEndpointIds=ids).get("Unsuccessful") or []
    if failed:
        reasons = "; ".join(
            f"{f.get('ResourceId')}: {f.get('Error', {}).get('Code')} {f.get('Error', {}).get('Message', '')}".strip()
            for f in failed
        )
        raise CleanupError(f"DeleteVpcEndpoints refused {reasons}")
    if tagged_groups:
        started = clock()
        while True:
            enis = (
                ec2.describe_network_interfaces(Filters=[{"Name": "group-id", "Values": tagged_groups}]).get(
                    "NetworkInterfaces"
                )
                or []
            )
            if not enis:
                break
            if clock() - started >= timeout:
                raise CleanupError(
                    f"{len(enis)} network interface(s) of {', '.join(tagged_groups)} still exist after {timeout:g}s; "
                    "rerun when they are gone (the endpoints are deleted)"
                )
            log(f"{vpc_id}: {len(enis)} network interface(s) of the endpoints still attached, waiting")
            sleep(POLL_SECONDS)
        for group in tagged_groups:
            log(f"{vpc_id}: deleting GuardDuty security group {group}")
            ec2.delete_security_group(GroupId=group)
    untagged = sorted(set(groups) - set(tagged_groups))
    if untagged:
        log(f"{vpc_id}: left {', '.join(untagged)} alone (no {GUARDDUTY_TAG} tag: not GuardDuty's)")
    return result


# --- the load balancer controller's leftovers -------------------------------------------------------------------


def controller_leftovers(elbv2: Any, ec2: Any, cluster: str) -> dict[str, list[str]]:
    """Load balancers and security groups the LB controller still tracks for ``cluster`` (its tracking tag)."""
    arns = [str(lb["LoadBalancerArn"]) for lb in aws_calls.items(elbv2, "describe_load_balancers", "LoadBalancers")]
    tracked: list[str] = []
    for i in range(0, len(arns), 20):  # DescribeTags takes at most 20 ARNs
        for desc in elbv2.describe_tags(ResourceArns=arns[i : i + 20]).get("TagDescriptions") or []:
            if any(t.get("Key") == LBC_CLUSTER_TAG and t.get("Value") == cluster for t in desc.get("Tags") or []):
                tracked.append(str(desc["ResourceArn"]))
    groups = ec2.describe_security_groups(Filters=[{"Name": f"tag:{LBC_CLUSTER_TAG}", "Values": [cluster]}])
    return {
        "loadBalancers": sorted(tracked),
        "securityGroups": sorted(str(g["GroupId"]) for g in groups.get("SecurityGroups") or []),
    }


class _DestroyWait(DynamicProviderBase):
    """A no-op at create (but for :meth:`probe`) whose delete does the waiting; clients, credential chain, time and
    log from :class:`DynamicProviderBase`."""

    def _aws(self, service: str, props: Mapping[str, Any]) -> Any:
        """A client on the resource's credential chain (``aws:profile``, then each ``aws:assumeRoles`` entry: the
        same principal and account as the rest of the stack; ``components/dynamic_provider.py``)."""
        return self._client(self._use(props), service)

    def probe(self, props: Mapping[str, Any]) -> None:
        """At create: one read call of the delete's, so a missing permission shows at ``up``, not mid-destroy."""

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        self.probe(props)
        return dynamic.CreateResult(str(props.get("clusterName") or props.get("vpcId")), dict(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        """Never replace (the waits own nothing); update when an input changes, so the state holds the inputs (and
        the credential chain) the delete will run with. An empty value and a missing one are the same, as in
        :meth:`DynamicProviderBase.diff_keys`: a state written before the chain inputs existed is no change."""
        keys = sorted((set(olds) | set(news)) - {"__provider"})
        return dynamic.DiffResult(
            changes=any((olds.get(k) or None) != (news.get(k) or None) for k in keys), replaces=[]
        )

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        return dynamic.UpdateResult(dict(news))

    def read(self, id_: str, props: dict[str, Any]) -> dynamic.ReadResult:
        return dynamic.ReadResult(id_, props)


class LoadBalancerControllerDrainProvider(_DestroyWait):
    """Delete: wait until the LB controller has removed every load balancer and security group it tracks."""

    def probe(self, props: Mapping[str, Any]) -> None:
        self._aws("elbv2", props).describe_load_balancers(PageSize=1)
        self._aws("ec2", props).describe_security_groups(
            Filters=[{"Name": f"tag:{LBC_CLUSTER_TAG}", "Values": [str(props["clusterName"])]}]
        )

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        cluster = str(props["clusterName"])
        timeout = float(props.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
        poll = float(props.get("pollSeconds") or 15)
        started = self._now()
        while True:
            left = controller_leftovers(self._aws("elbv2", props), self._aws("ec2", props), cluster)
            if not any(left.values()):
                self._info(f"{cluster}: the load balancer controller has removed its load balancers and groups")
                return
            what = "; ".join(f"{k}: {', '.join(v)}" for k, v in left.items() if v)
            if self._now() - started >= timeout:
                raise CleanupError(
                    f"EKS cluster {cluster}: after {timeout:g}s the AWS Load Balancer Controller still tracks ({what}; "
                    f"tag {LBC_CLUSTER_TAG}={cluster}). The add-on that runs the controller is kept: check "
                    "`kubectl get ingress,targetgroupbindings -A` for resources stuck on their finalizers, then rerun "
                    "`pulumi destroy`, which waits again"
                )
            self._info(f"{cluster}: waiting for the load balancer controller to finalize: {what}")
            self._wait(poll)


class GuardDutyEndpointCleanupProvider(_DestroyWait):
    """Delete: remove GuardDuty's endpoint and security group from the VPC (after the EKS cluster is gone)."""

    def probe(self, props: Mapping[str, Any]) -> None:
        region = str(props["region"])
        ec2 = self._aws("ec2", props)
        guardduty_endpoints(ec2, str(props["vpcId"]), region)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        region, vpc = str(props["region"]), str(props["vpcId"])
        ec2 = self._aws("ec2", props)
        cleanup(
            ec2,
            vpc,
            region,
            timeout=float(props.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS),
            sleep=self._wait,
            clock=self._now,
            log=self._info,
        )


class LoadBalancerControllerDrain(dynamic.Resource):
    """Inputs: ``region``, ``clusterName``, ``timeoutSeconds``, ``pollSeconds`` and the credential chain
    (:func:`components.dynamic_provider.credential_inputs`)."""

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: LoadBalancerControllerDrainProvider | None = None,
    ) -> None:
        inputs = {**props, "resourceKind": DRAIN_KIND}
        super().__init__(provider or LoadBalancerControllerDrainProvider(), name, inputs, opts)


class GuardDutyEndpointCleanup(dynamic.Resource):
    """Inputs: ``region``, ``vpcId``, ``subnetIds`` (so it is deleted before them), ``timeoutSeconds`` and the
    credential chain (:func:`components.dynamic_provider.credential_inputs`)."""

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: GuardDutyEndpointCleanupProvider | None = None,
    ) -> None:
        inputs = {**props, "resourceKind": CLEANUP_KIND}
        super().__init__(provider or GuardDutyEndpointCleanupProvider(), name, inputs, opts)
