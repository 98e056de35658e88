"""OperatorPrerequisites: the EKS add-ons (and optional Helm charts) the inference add-on checks for first.

The inference add-on refuses to install unless these exist at or above documented minimums (D6; D7 lists
the resulting errors): ``aws-mountpoint-s3-csi-driver`` (CSIDriver ``s3.csi.aws.com``), ``aws-fsx-csi-driver``
(``fsx.csi.aws.com``), ``metrics-server`` and ``cert-manager`` (CRD ``certificaterequests.cert-manager.io``).
Versions come from ``operator.*Version`` (checked against the minimums in ``components/config/operator.py``).

HyperPod taints nodes it is health-checking with ``sagemaker.amazonaws.com/node-health-status``; on a cluster
whose only nodes are HyperPod nodes, a controller that does not tolerate it stays Pending and the
inference add-on's install check fails (aws/sagemaker-hyperpod-cli PR #449; ADT patches the ALB deployment
with kubectl instead). Each add-on gets the toleration through its ``configuration_values``; the keys are
the ones its Helm chart defines (the EKS add-on schemas mirror their charts; see README "operator" for which
keys were confirmed against a published add-on example and which follow the chart only).

IAM: IRSA (see ``operator_iam.py`` for why). The S3 CSI node gets read-only access to the model buckets.
The FSx CSI driver gets **no** role: its IAM permissions exist "to create/delete file systems and volumes on
the user's behalf" (kubernetes-sigs/aws-fsx-csi-driver@092ae9e6 docs/install.md, "Set up driver
permissions"), i.e. dynamic provisioning, and this package creates no FSx file system; mounting an existing
file system (``modelSourceType: fsx``) needs no AWS call from the driver. metrics-server and cert-manager
call no AWS API and get no role.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.role_boundary import role_boundary_arn
from policies.readiness import custom_timeouts, program_create_timeout

from . import iam_documents as docs
from .config.operator import PREREQUISITES, OperatorConfig
from .operator_iam import KEDA_SERVICE_ACCOUNT, LBC_SERVICE_ACCOUNT

HYPERPOD_HEALTH_TAINT = "sagemaker.amazonaws.com/node-health-status"
# Controllers tolerate exactly the taint HyperPod sets while deep health checks run
# (``Unschedulable:NoSchedule``), as AWS's own chart does for its controllers and device plugins
# (aws/sagemaker-hyperpod-cli@011ca927 helm_chart/HyperPodHelmChart/values.yaml:206-209 and
# helm_chart/readme.md:78-84). ``Exists`` would also match ``UnschedulablePendingReplacement`` /
# ``UnschedulablePendingReboot``, the values of failed nodes (docs: sagemaker-hyperpod-eks-resiliency-node-labels),
# and put controllers on nodes that are about to be replaced. NoSchedule only: a NoExecute eviction still
# moves controllers off a failing node.
HYPERPOD_TOLERATION: dict[str, str] = {
    "key": HYPERPOD_HEALTH_TAINT,
    "operator": "Equal",
    "value": "Unschedulable",
    "effect": "NoSchedule",
}
# Workloads (model pods) tolerate only ``Schedulable`` (awslabs/awsome-distributed-ai@358b0d22, the merge of
# PR #1110, 3.test_cases/pytorch/vllm/dsv3-uccl-nixl/manifests/decode.yaml:71-74), so they stay off nodes
# that are being checked or have failed. The pinned operator's CRDs (v3.6) have no tolerations field, so
# this package sets none on endpoint pods: with no toleration they avoid every node-health-status taint.
WORKLOAD_TOLERATION: dict[str, str] = {
    "key": HYPERPOD_HEALTH_TAINT,
    "operator": "Equal",
    "value": "Schedulable",
    "effect": "NoSchedule",
}
# The FSx controller chart's own default tolerations (kept, since setting the list replaces them).
FSX_DEFAULT_CONTROLLER_TOLERATIONS: list[dict[str, Any]] = [
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"effect": "NoExecute", "operator": "Exists", "tolerationSeconds": 300},
]
LBC_CHART_REPO = "https://aws.github.io/eks-charts"
KEDA_CHART_REPO = "https://kedacore.github.io/charts"
S3_CSI_SA = "system:serviceaccount:kube-system:s3-csi-driver-sa"


def addon_configuration(addon_name: str) -> dict[str, Any]:
    """The ``configuration_values`` each prerequisite add-on gets (tolerations for HyperPod nodes)."""
    if addon_name == "aws-mountpoint-s3-csi-driver":
        # The node DaemonSet must run on every GPU node that mounts model weights, whatever its taints.
        return {"node": {"tolerateAllTaints": True}}
    if addon_name == "aws-fsx-csi-driver":
        return {
            "controller": {"tolerations": [*FSX_DEFAULT_CONTROLLER_TOLERATIONS, HYPERPOD_TOLERATION]},
            "node": {"tolerateAllTaints": True},
        }
    if addon_name == "metrics-server":
        return {"tolerations": [HYPERPOD_TOLERATION]}
    if addon_name == "cert-manager":
        return {
            "tolerations": [HYPERPOD_TOLERATION],
            "webhook": {"tolerations": [HYPERPOD_TOLERATION]},
            "cainjector": {"tolerations": [HYPERPOD_TOLERATION]},
        }
    raise KeyError(addon_name)


def _helm_timeout(chart: str) -> int:
    """Helm's wait (atomic) in seconds, from the chart's entry in policies/readiness.yaml (the one place)."""
    return int(program_create_timeout("kubernetes:helm.sh/v3:Release", {"chart": chart}) * 60)


def model_buckets(endpoints: Iterable[Any]) -> list[str]:
    """The S3 buckets the endpoints load weights from (``spec.modelSourceConfig.s3Storage.bucketName``)."""
    out: set[str] = set()
    for endpoint in endpoints:
        source = endpoint.spec_dict().get("modelSourceConfig") or {}
        bucket = (source.get("s3Storage") or {}).get("bucketName")
        if isinstance(bucket, str) and bucket:
            out.add(bucket)
    return sorted(out)


@dataclass(frozen=True)
class OperatorPrerequisitesArgs:
    name_prefix: str
    region: str
    operator: OperatorConfig
    cluster_name: pulumi.Input[str]
    oidc_provider_arn: pulumi.Input[str]
    oidc_provider_url: pulumi.Input[str]
    model_bucket_names: list[str] = field(metadata={"doc": "S3 buckets endpoints mount model weights from."})
    vpc_id: pulumi.Input[str] | None = None
    k8s_provider: pulumi.ProviderResource | None = field(default=None, metadata={"doc": "Needed for helm modes."})
    alb_role_arn: pulumi.Input[str] | None = None
    keda_role_arn: pulumi.Input[str] | None = None
    tags: dict[str, str] = field(default_factory=dict)


class OperatorPrerequisites(pulumi.ComponentResource):
    """The four prerequisite EKS add-ons, their IRSA roles, and the ALB controller / KEDA charts in helm mode."""

    addons: dict[str, aws.eks.Addon]
    releases: dict[str, k8s.helm.v3.Release]
    dependencies: list[pulumi.Resource]

    def __init__(self, name: str, args: OperatorPrerequisitesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:operator:OperatorPrerequisites", name, None, opts)
        self._args = args
        self.dependencies = []
        self.addons = {}
        self.releases = {}
        self._role_deps: dict[str, list[pulumi.Resource]] = {}
        op = args.operator

        # `operator.existingPrerequisites`: already on the cluster, so neither the add-on nor its IAM role is
        # created here; the inference add-on's install check only needs them present (preflight looks).
        installed = {p.addon_name for p in PREREQUISITES if op.installs(p)}
        roles: dict[str, aws.iam.Role] = {}
        if "aws-mountpoint-s3-csi-driver" in installed:
            roles["aws-mountpoint-s3-csi-driver"] = self._s3_csi_role(name)

        for pre in PREREQUISITES:
            if pre.addon_name not in installed:
                continue
            role = roles.get(pre.addon_name)
            addon = aws.eks.Addon(
                f"{name}-{pre.addon_name}",
                cluster_name=args.cluster_name,
                addon_name=pre.addon_name,
                addon_version=op.pinned(pre),
                service_account_role_arn=role.arn if role is not None else None,
                configuration_values=json.dumps(addon_configuration(pre.addon_name), sort_keys=True),
                # OVERWRITE: this stack owns these add-ons' config; a field edited out of band (or a
                # self-managed install being adopted) must not make create/upgrade fail.
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="OVERWRITE",
                tags=args.tags,
                # Their controllers need joined nodes; the create/update timeout is the entry's in readiness.yaml.
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=self._role_deps.get(pre.addon_name, []),
                    custom_timeouts=custom_timeouts("aws:eks/addon:Addon", {"addonName": pre.addon_name}),
                ),
            )
            self.addons[pre.addon_name] = addon
            self.dependencies.append(addon)

        if op.load_balancer_controller.mode == "helm":
            self._lbc_release(name)
        if op.keda.mode == "helm":
            self._keda_release(name)

        self.register_outputs(
            {
                "addons": {k: a.addon_version for k, a in self.addons.items()},
                "helmReleases": {k: r.version for k, r in self.releases.items()},
            }
        )

    def _irsa_role(
        self, addon: str, resource_name: str, role_name: str, subject: str, policy_arn: pulumi.Input[str]
    ) -> aws.iam.Role:
        a = self._args
        role = aws.iam.Role(
            resource_name,
            name=role_name,
            description=f"IRSA for {subject}",
            assume_role_policy=pulumi.Output.all(a.oidc_provider_arn, a.oidc_provider_url).apply(
                lambda v: json.dumps(docs.irsa_trust(v[0], v[1], [subject]))
            ),
            tags=a.tags,
            permissions_boundary=role_boundary_arn(a.tags, self),
            opts=pulumi.ResourceOptions(parent=self),
        )
        attachment = aws.iam.RolePolicyAttachment(
            f"{resource_name}-policy", role=role.name, policy_arn=policy_arn, opts=pulumi.ResourceOptions(parent=self)
        )
        self._role_deps.setdefault(addon, []).extend([role, attachment])
        return role

    def _s3_csi_role(self, name: str) -> aws.iam.Role:
        a = self._args
        buckets = sorted(set(a.model_bucket_names)) or [f"{a.name_prefix}-models-*"]
        policy = aws.iam.Policy(
            f"{name}-s3-csi-policy",
            name=f"{a.name_prefix}-s3-csi-driver",
            description="Mountpoint for Amazon S3: read-only access to the model buckets.",
            policy=aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition.apply(
                lambda partition: json.dumps(docs.s3_csi_policy(buckets, partition))
            ),
            tags=a.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return self._irsa_role(
            "aws-mountpoint-s3-csi-driver", f"{name}-s3-csi", f"{a.name_prefix}-s3-csi-driver", S3_CSI_SA, policy.arn
        )

    def _release_opts(self) -> pulumi.ResourceOptions:
        if self._args.k8s_provider is None:
            raise ValueError("helm mode needs the cluster's Kubernetes provider (k8s_provider)")
        # After the add-ons: the ALB controller's webhook certificate and KEDA's metrics need them.
        return pulumi.ResourceOptions(
            parent=self, provider=self._args.k8s_provider, depends_on=list(self.addons.values())
        )

    def _lbc_release(self, name: str) -> None:
        a = self._args
        chart = a.operator.load_balancer_controller
        ns, sa = LBC_SERVICE_ACCOUNT["helm"]
        if a.alb_role_arn is None:
            raise ValueError("helm ALB controller needs its IRSA role ARN")
        release = k8s.helm.v3.Release(
            f"{name}-aws-load-balancer-controller",
            name="aws-load-balancer-controller",
            chart="aws-load-balancer-controller",
            version=chart.chart_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=LBC_CHART_REPO),
            namespace=ns,
            atomic=True,
            timeout=_helm_timeout("aws-load-balancer-controller"),
            values={
                "clusterName": a.cluster_name,
                "region": a.region,
                "vpcId": a.vpc_id,
                "replicaCount": 2,
                "serviceAccount": {
                    "create": True,
                    "name": sa,
                    "annotations": {"eks.amazonaws.com/role-arn": a.alb_role_arn},
                },
                "tolerations": [HYPERPOD_TOLERATION],
            },
            opts=self._release_opts(),
        )
        self.releases["aws-load-balancer-controller"] = release
        self.dependencies.append(release)

    def _keda_release(self, name: str) -> None:
        a = self._args
        chart = a.operator.keda
        ns, sa = KEDA_SERVICE_ACCOUNT["helm"]
        if a.keda_role_arn is None:
            raise ValueError("helm KEDA needs its IRSA role ARN")
        release = k8s.helm.v3.Release(
            f"{name}-keda",
            name="keda",
            chart="keda",
            version=chart.chart_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=KEDA_CHART_REPO),
            namespace=ns,
            create_namespace=True,
            atomic=True,
            timeout=_helm_timeout("keda"),
            values={
                "serviceAccount": {"operator": {"create": True, "name": sa}},
                "podIdentity": {"aws": {"irsa": {"enabled": True, "roleArn": a.keda_role_arn}}},
                "tolerations": [HYPERPOD_TOLERATION],
            },
            opts=self._release_opts(),
        )
        self.releases["keda"] = release
        self.dependencies.append(release)
