"""The SageMaker HyperPod cluster (EKS orchestrator) and what it needs of its own.

* an execution role for the instance groups: trusted by ``sagemaker.amazonaws.com`` exactly as AWS's own templates
  trust it (no ``aws:SourceAccount`` condition: see :func:`execution_role_trust_policy`), with the AWS managed
  ``AmazonSageMakerClusterInstanceRolePolicy`` plus the statements AWS's own templates add for EKS-orchestrated
  clusters (VPC CNI and HyperPod ENI management scoped to this region, account, subnets and security group; ECR pulls; EKS Pod Identity on this cluster)
  and read access to this cluster's lifecycle bucket — nothing broader (sources above ``ENI_MUTATING_ACTIONS``);
* a private lifecycle-script bucket (public access blocked, bucket-owner objects, SSE-S3, versioning,
  TLS-only policy) holding the repo's own ``components/lifecycle/*`` scripts, so what runs on a node is
  versioned with this code;
* the cluster: one instance group per ``cluster.instanceGroups`` entry, each in the private subnet of its
  AZ ID, with the deep health checks the group supports (``config/health_checks.py``), labels/taints,
  threads per core, an extra EBS volume and an optional training plan; node recovery Automatic; tiered storage when ``kvCache.l2Backend`` is ``tieredstorage``;
* the wait for its nodes (:class:`~components.hyperpod_node_wait.HyperPodNodeWait`, ``nodes_ready``): the cluster's
  create returns before its instances join (AWS's Terraform waits for them afterwards), so whatever needs running
  pods (CoreDNS, the operator's add-ons and charts) depends on ``nodes_ready``, not on the cluster.

In prod the cluster and the bucket are protected from deletion and the bucket is never force-destroyed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_aws_native as aws_native
from pulumi_aws_native import sagemaker

from components.role_boundary import role_boundary_arn
from policies.readiness import program_create_timeout

from .config.cluster import ClusterConfig, InstanceGroup
from .config.node_software import LATEST, BatchSize, SoftwareUpdates
from .dynamic_provider import credential_inputs
from .hyperpod_node_software import RESOURCE_KIND as NODE_SOFTWARE_KIND
from .hyperpod_node_software import HyperPodNodeSoftware
from .hyperpod_node_wait import RESOURCE_KIND as NODE_WAIT_KIND
from .hyperpod_node_wait import HyperPodNodeWait
from .private_bucket import PrivateBucket, PrivateBucketArgs

LIFECYCLE_DIR = Path(__file__).resolve().parent / "lifecycle"
LIFECYCLE_PREFIX = "lifecycle"
ON_CREATE = "on_create.sh"
MANAGED_INSTANCE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
CLUSTER_TYPE = "aws-native:sagemaker:Cluster"
DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"


def lifecycle_scripts() -> dict[str, str]:
    """The lifecycle scripts shipped with this package: file name -> content."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(LIFECYCLE_DIR.iterdir()) if p.suffix == ".sh"}


# Sources of the execution role's statements (the test compares with literal lists taken from them):
#   CS  = aws/sagemaker-hyperpod-cluster-setup@b920fcf430f1fd3b36c01bb63b63348f95f0b9fb
#         :eks/cloudformation/sagemaker-iam-role-template.yaml (the template behind the HyperPod console and
#         the HyperPod CLI's cluster stack, hyperpod-cluster-stack-template/.../creation_template.yaml)
#   ADT = awslabs/awsome-distributed-ai@95b939cdc5b24ded03a70da21533964f9354b731
#         :1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/modules/sagemaker_iam_role/main.tf
#         and :1.architectures/7.sagemaker-hyperpod-eks/cfn-templates/nested-stacks/sagemaker-iam-role-stack.yaml
# Both grant these on top of AmazonSageMakerClusterInstanceRolePolicy. Only fsx:DescribeFileSystems (ADT
# only, for FSx mounts) is left out: this package creates no FSx file system.
ENI_MUTATING_ACTIONS = (
    "ec2:AssignPrivateIpAddresses",
    "ec2:AttachNetworkInterface",
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DetachNetworkInterface",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:UnassignPrivateIpAddresses",
)
# Describe* calls support no resource-level permissions (Service Authorization Reference, Amazon EC2).
EC2_DESCRIBE_ACTIONS = (
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeInstances",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeTags",
    "ec2:DescribeVpcs",
)
IMAGE_PULL_ACTIONS = (
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:GetAuthorizationToken",
    "ecr:GetDownloadUrlForLayer",
)


def execution_role_trust_policy() -> dict[str, Any]:
    """SageMaker may assume the role; the trust policy AWS's own HyperPod templates write, without conditions.

    Why no ``aws:SourceAccount`` (issue 33 item 1): the role is assumed by HyperPod for the cluster's instances, and
    no source shows that HyperPod sends ``aws:SourceAccount`` when it does. AWS's templates leave the condition out:
    aws/sagemaker-hyperpod-cluster-setup@225929764f92613e15ff951569564a71f3711470
    :eks/cloudformation/sagemaker-iam-role-template.yaml (``ExecutionRole.AssumeRolePolicyDocument``: Principal
    ``sagemaker.amazonaws.com``, Action ``sts:AssumeRole``, no Condition) and awslabs/awsome-distributed-ai (ADT above,
    ``sagemaker_iam_role``), and SageMaker's cross-service confused-deputy page does not list HyperPod. A condition
    the service does not satisfy makes CreateCluster fail late (after the EKS cluster is up), so the package follows
    the templates. The role stays scoped by what it grants (the inline policy below) and by who may pass it
    (``iam:PassRole`` of the deployer, tools.cli.deployer_policy).
    """
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def execution_role_policy(
    bucket_arn: str,
    partition: str = "aws",
    *,
    region: str = "us-east-1",
    account_id: str = "123456789012",
    eks_cluster_arn: str | None = None,
    subnet_ids: list[str] | None = None,
    security_group_ids: list[str] | None = None,
) -> dict[str, Any]:
    """What HyperPod EKS nodes need beyond the managed instance policy (CS and ADT, see above).

    Scoped where the actions allow it: ENI mutations to this region and account and to the stack's private
    subnets and node security group (CS and ADT scope them per subnet and per security group the same way),
    ENI tagging to this region and account, ``eks-auth:AssumeRoleForPodIdentity`` to this EKS cluster (CS
    and ADT do so).
    """
    ec2 = f"arn:{partition}:ec2:{region}:{account_id}"
    cluster = eks_cluster_arn or f"arn:{partition}:eks:{region}:{account_id}:cluster/*"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                # VPC CNI on HyperPod nodes: attach ENIs, assign pod IPs; HyperPod itself creates the
                # cross-account ENIs of the instance groups (the *Permission actions).
                "Sid": "VpcCniNetworkInterfaces",
                "Effect": "Allow",
                "Action": list(ENI_MUTATING_ACTIONS),
                "Resource": [
                    f"{ec2}:instance/*",
                    f"{ec2}:network-interface/*",
                    *[f"{ec2}:subnet/{s}" for s in (subnet_ids or ["*"])],
                    *[f"{ec2}:security-group/{g}" for g in (security_group_ids or ["*"])],
                ],
            },
            {
                "Sid": "VpcCniDescribe",
                "Effect": "Allow",
                "Action": list(EC2_DESCRIBE_ACTIONS),
                "Resource": "*",
            },
            {
                "Sid": "VpcCniTagNetworkInterfaces",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": f"{ec2}:network-interface/*",
            },
            {
                "Sid": "PullImages",
                "Effect": "Allow",
                "Action": list(IMAGE_PULL_ACTIONS),
                "Resource": "*",
            },
            {
                # Granted by CS and ADT alike; no resource-level permissions for DescribeAlarms.
                "Sid": "DescribeAlarms",
                "Effect": "Allow",
                "Action": "cloudwatch:DescribeAlarms",
                "Resource": "*",
            },
            {
                "Sid": "PodIdentity",
                "Effect": "Allow",
                "Action": "eks-auth:AssumeRoleForPodIdentity",
                "Resource": cluster,
            },
            {
                "Sid": "ReadLifecycleScripts",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:ListBucket"],
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
            },
        ],
    }


def _batch(size: BatchSize) -> sagemaker.ClusterCapacitySizeConfigArgs:
    return sagemaker.ClusterCapacitySizeConfigArgs(type=size.type, value=size.value)


def _deployment_config(updates: SoftwareUpdates) -> sagemaker.ClusterDeploymentConfigArgs:
    """The group's rolling ``DeploymentConfig`` (the same one the Kubernetes-upgrade roll sends, node_software.py)."""
    return sagemaker.ClusterDeploymentConfigArgs(
        rolling_update_policy=sagemaker.ClusterRollingUpdatePolicyArgs(
            maximum_batch_size=_batch(updates.maximum_batch_size),
            rollback_maximum_batch_size=(
                _batch(updates.rollback_maximum_batch_size) if updates.rollback_maximum_batch_size else None
            ),
        ),
        wait_interval_in_seconds=updates.wait_interval_seconds,
        auto_rollback_configuration=[sagemaker.ClusterAlarmDetailsArgs(alarm_name=a) for a in updates.rollback_alarms]
        or None,
    )


@dataclass(frozen=True)
class HyperPodClusterArgs:
    cluster: ClusterConfig
    cluster_name: str
    eks_cluster_arn: pulumi.Input[str]
    node_security_group_id: pulumi.Input[str]
    private_subnet_ids: Mapping[str, pulumi.Input[str]] = field(metadata={"doc": "Private subnet per AZ ID."})
    default_az_id: str = field(metadata={"doc": "AZ ID of groups that name none (the first network AZ ID)."})
    name_prefix: str
    tiered_storage: bool = False
    is_prod: bool = False
    tags: dict[str, str] = field(default_factory=dict)


class HyperPodCluster(pulumi.ComponentResource):
    """A HyperPod cluster orchestrated by an EKS cluster, with its execution role and lifecycle bucket."""

    cluster_arn: pulumi.Output[str]
    cluster_name: pulumi.Output[str]
    execution_role_arn: pulumi.Output[str]
    lifecycle_bucket: pulumi.Output[str]
    nodes_ready: HyperPodNodeWait
    node_software: HyperPodNodeSoftware

    def __init__(self, name: str, args: HyperPodClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:hyperpod_cluster:HyperPodCluster", name, None, opts)
        caller = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
        cfg = args.cluster

        bucket, objects = self._lifecycle_scripts(name, args, caller.account_id)
        role, role_policies = self._execution_role(name, args, bucket, caller.account_id, partition, region)
        cluster = self._cluster(name, args, role, bucket, waits_for=[*objects, *role_policies])

        # Done once every instance group has its target count of Running nodes (ListClusterNodes), within the node
        # wait's timeout from policies/readiness.yaml: its longer entry when a group runs on-start deep health
        # checks (they run before the nodes are Running), selected by the same `deepHealthChecks` input the
        # rehearsal reads.
        deep_checked = sorted(g.name for g in cfg.instance_groups if g.deep_health_checks)
        timeout_minutes = program_create_timeout(
            DYNAMIC_TYPE, {"resourceKind": NODE_WAIT_KIND, "deepHealthChecks": deep_checked}
        )
        self.nodes_ready = HyperPodNodeWait(
            f"{name}-nodes",
            {
                "region": region,
                "deepHealthChecks": deep_checked,
                "clusterArn": cluster.cluster_arn,
                # partial provisioning: `up` is serving once each group has its minInstanceCount (the rest arrive later)
                "groups": {
                    g.name: g.min_instance_count if g.min_instance_count is not None else g.instance_count
                    for g in cfg.instance_groups
                },
                "timeoutSeconds": int(timeout_minutes * 60),
                "pollSeconds": 30,
                **credential_inputs(),  # the aws provider's profile / assume-role chain (dynamic_provider.py)
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster]),
        )

        # A Kubernetes version change rolls the groups on `latest` to the new version's software, group by group, with
        # each group's rolling DeploymentConfig; after the node wait (and so after the control plane and kube-proxy,
        # which the EKS component updates first), before the operator add-on (hyperpod_node_software.py).
        self.node_software = HyperPodNodeSoftware(
            f"{name}-node-software",
            {
                "region": region,
                "clusterArn": cluster.cluster_arn,
                "kubernetesVersion": cfg.kubernetes_version,
                "groups": {
                    g.name: g.software_updates.deployment_config()
                    for g in cfg.instance_groups
                    if g.image_release_version in (None, LATEST)
                },
                "timeoutSeconds": int(program_create_timeout(DYNAMIC_TYPE, {"resourceKind": NODE_SOFTWARE_KIND}) * 60),
                "pollSeconds": 60,
                **credential_inputs(),
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.nodes_ready]),
        )

        self.cluster_arn = cluster.cluster_arn
        self.cluster_name = pulumi.Output.from_input(args.cluster_name)
        self.execution_role_arn = role.arn
        self.lifecycle_bucket = bucket.bucket
        self.cluster = cluster
        self.register_outputs(
            {
                "clusterArn": self.cluster_arn,
                "clusterName": self.cluster_name,
                "executionRoleArn": self.execution_role_arn,
                "lifecycleBucket": self.lifecycle_bucket,
            }
        )

    def _child(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self)

    def _lifecycle_scripts(
        self, name: str, args: HyperPodClusterArgs, account_id: pulumi.Output[str]
    ) -> tuple[aws.s3.Bucket, list[aws.s3.BucketObject]]:
        """The lifecycle-script bucket and the scripts HyperPod runs on every node (components/lifecycle/)."""
        lifecycle = PrivateBucket(
            f"{name}-lifecycle",
            PrivateBucketArgs(
                # HyperPod's managed instance policy reads `sagemaker-*` buckets; the execution role's inline
                # policy grants this one explicitly as well.
                bucket=account_id.apply(lambda acct: f"sagemaker-{args.name_prefix}-lifecycle-{acct}"),
                protect=args.is_prod,
                tags=args.tags,
            ),
            opts=self._child(),
        )
        bucket = lifecycle.bucket
        objects = [
            aws.s3.BucketObject(
                f"{name}-lifecycle-{fname.replace('.', '-').replace('_', '-')}",
                bucket=bucket.id,
                key=f"{LIFECYCLE_PREFIX}/{fname}",
                content=content,
                content_type="text/x-shellscript",
                tags=args.tags,
                opts=self._child(),
            )
            for fname, content in lifecycle_scripts().items()
        ]
        return bucket, objects

    def _execution_role(  # noqa: PLR0917 - one private step of the constructor
        self,
        name: str,
        args: HyperPodClusterArgs,
        bucket: aws.s3.Bucket,
        account_id: pulumi.Output[str],
        partition: pulumi.Output[str],
        region: pulumi.Output[str],
    ) -> tuple[aws.iam.Role, list[pulumi.CustomResource]]:
        """The instance groups' execution role: HyperPod's managed policy plus a scoped inline policy."""
        role = aws.iam.Role(
            f"{name}-execution-role",
            name=f"{args.name_prefix}-hyperpod-execution",
            description="SageMaker HyperPod instance groups (EKS orchestrator)",
            assume_role_policy=json.dumps(execution_role_trust_policy()),
            max_session_duration=3600,
            tags=args.tags,
            permissions_boundary=role_boundary_arn(args.tags, self),
            opts=self._child(),
        )
        managed = aws.iam.RolePolicyAttachment(
            f"{name}-execution-managed",
            role=role.name,
            policy_arn=pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", MANAGED_INSTANCE_POLICY),
            opts=self._child(),
        )
        inline = aws.iam.RolePolicy(
            f"{name}-execution-inline",
            role=role.name,
            policy=pulumi.Output.all(
                bucket.arn,
                partition,
                region,
                account_id,
                args.eks_cluster_arn,
                pulumi.Output.all(*args.private_subnet_ids.values()),
                args.node_security_group_id,
            ).apply(
                lambda a: json.dumps(
                    execution_role_policy(
                        a[0],
                        a[1],
                        region=a[2],
                        account_id=a[3],
                        eks_cluster_arn=a[4],
                        subnet_ids=sorted(a[5]),
                        security_group_ids=[a[6]],
                    )
                )
            ),
            opts=self._child(),
        )
        return role, [managed, inline]

    def _cluster(
        self,
        name: str,
        args: HyperPodClusterArgs,
        role: aws.iam.Role,
        bucket: aws.s3.Bucket,
        waits_for: list[pulumi.CustomResource],
    ) -> sagemaker.Cluster:
        """The HyperPod cluster (AWS::SageMaker::Cluster), after its lifecycle scripts and role policies."""
        cfg = args.cluster
        source_uri = pulumi.Output.concat("s3://", bucket.bucket, f"/{LIFECYCLE_PREFIX}/")
        groups = [self._group(g, args, role.arn, source_uri) for g in cfg.instance_groups]
        # The cluster-level VpcConfig is create-only (cfn-lint AWS::SageMaker::Cluster createOnlyProperties:
        # ClusterName, VpcConfig, Orchestrator/Eks), each group's OverrideVpcConfig is not. So the cluster level
        # names the default AZ's subnet only and every group carries its own AZ's subnet: adding an AZ (and a
        # group in it) updates the cluster instead of replacing it and every GPU node (docs/cluster.md).
        cluster_subnets = [args.private_subnet_ids[args.default_az_id]]
        timeout = f"{program_create_timeout(CLUSTER_TYPE, {}):g}m"
        return sagemaker.Cluster(
            f"{name}-cluster",
            cluster_name=args.cluster_name,
            orchestrator=sagemaker.ClusterOrchestratorArgs(
                eks=sagemaker.ClusterOrchestratorEksConfigArgs(cluster_arn=args.eks_cluster_arn)
            ),
            instance_groups=groups,
            node_recovery=sagemaker.ClusterNodeRecovery.AUTOMATIC,
            node_provisioning_mode=(
                sagemaker.ClusterNodeProvisioningMode.CONTINUOUS if cfg.node_provisioning_mode == "Continuous" else None
            ),
            vpc_config=sagemaker.ClusterVpcConfigArgs(
                security_group_ids=[args.node_security_group_id], subnets=cluster_subnets
            ),
            tiered_storage_config=(
                sagemaker.ClusterTieredStorageConfigArgs(
                    mode=sagemaker.ClusterTieredStorageConfigMode.ENABLE,
                    instance_memory_allocation_percentage=cfg.tiered_storage_memory_percentage,
                )
                if args.tiered_storage
                else None
            ),
            tags=[aws_native.TagArgs(key=k, value=v) for k, v in sorted(args.tags.items())],
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.is_prod,
                depends_on=waits_for,
                # The handler's timeoutInMinutes, from policies/readiness.yaml (where a test holds it to the schema).
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout, delete=timeout),
            ),
        )

    @staticmethod
    def _group(
        group: InstanceGroup, args: HyperPodClusterArgs, role_arn: pulumi.Input[str], source_uri: pulumi.Input[str]
    ) -> sagemaker.ClusterInstanceGroupArgs:
        az = group.availability_zone_id or args.default_az_id
        updates = group.software_updates
        checks = [sagemaker.ClusterDeepHealthCheckType(c) for c in group.deep_health_checks]
        return sagemaker.ClusterInstanceGroupArgs(
            instance_group_name=group.name,
            instance_type=group.instance_type,
            instance_count=group.instance_count,
            execution_role=role_arn,
            life_cycle_config=sagemaker.ClusterLifeCycleConfigArgs(source_s3_uri=source_uri, on_create=ON_CREATE),
            threads_per_core=group.threads_per_core,
            instance_storage_configs=[
                sagemaker.ClusterInstanceStorageConfigArgs(
                    ebs_volume_config=sagemaker.ClusterEbsVolumeConfigArgs(volume_size_in_gb=group.ebs_volume_size_gb)
                )
            ],
            on_start_deep_health_checks=checks or None,
            kubernetes_config=(
                sagemaker.ClusterKubernetesConfigArgs(
                    labels=dict(group.labels) or None,
                    taints=[
                        sagemaker.ClusterKubernetesTaintArgs(
                            key=t.key, value=t.value, effect=sagemaker.ClusterKubernetesTaintEffect(t.effect)
                        )
                        for t in group.taints
                    ]
                    or None,
                )
                if group.labels or group.taints
                else None
            ),
            override_vpc_config=sagemaker.ClusterVpcConfigArgs(
                security_group_ids=[args.node_security_group_id], subnets=[args.private_subnet_ids[az]]
            ),
            training_plan_arn=group.training_plan_arn,
            min_instance_count=group.min_instance_count,
            # A pinned release moves the group's nodes through UpdateClusterSoftware when it changes (schema text
            # of ImageReleaseVersion); `latest` leaves it unset (config/node_software.py).
            image_release_version=(
                group.image_release_version if group.image_release_version not in (None, LATEST) else None
            ),
            scheduled_update_config=(
                sagemaker.ClusterScheduledUpdateConfigArgs(
                    schedule_expression=updates.schedule, deployment_config=_deployment_config(updates)
                )
                if updates.schedule
                else None
            ),
            auto_patch_config=(
                sagemaker.ClusterAutoPatchConfigArgs(
                    patching_strategy=sagemaker.ClusterAutoPatchConfigPatchingStrategy(updates.auto_patch),
                    deployment_config=_deployment_config(updates),
                )
                if updates.auto_patch
                else None
            ),
        )
