"""The HyperPod dependencies AWS requires on the EKS cluster *before* a HyperPod cluster joins it.

AWS documents (SageMaker developer guide, "Installing packages on the Amazon EKS cluster using Helm") that
a cluster created through the APIs must first get the Helm chart ``helm_chart/HyperPodHelmChart`` from
aws/sagemaker-hyperpod-cli, released as ``hyperpod-dependencies`` in ``kube-system``; without it HyperPod
may fail to create or run. It is not published to a Helm repository, so it is installed from a local
checkout of a reviewed commit (``cluster.hyperpodDependencies.gitCommit``, fetched by
``python -m tools.fetch.chart``).

**No waiting.** The release is created before the HyperPod cluster, which provides the cluster's only nodes, so
nothing it installs can run yet. Helm's wait (``atomic`` turns it on) would wait for Deployments that cannot
schedule and fail after the timeout, and the HyperPod cluster would never be created. So the release is
installed with ``skip_await`` and without ``atomic``, as AWS's readme (``helm install`` without ``--wait``,
aws/sagemaker-hyperpod-cli@b01cf906 ``helm_chart/readme.md`` steps One-Three) and awslabs/awsome-distributed-ai
``hyperpod-eks-tf/modules/helm_chart/main.tf`` (``wait = false``) do.

**Values** (aws/sagemaker-hyperpod-cli@b01cf906 ``helm_chart/HyperPodHelmChart/values.yaml`` and ``Chart.yaml``):

* kept on, because HyperPod resiliency and accelerated inference nodes need them (readme, "Package structure"):
  ``health-monitoring-agent`` (node auto-recovery "needs" it: sagemaker-hyperpod-eks-prerequisites),
  ``deep-health-check`` (RBAC for the on-start deep health checks), ``hyperpod-patching`` (RBAC for rolling
  software updates), ``nvidia-device-plugin`` (exposes ``nvidia.com/gpu``), ``aws-efa-k8s-device-plugin``
  (``vpc.amazonaws.com/efa``), ``neuron-device-plugin`` (Trainium/Inferentia groups);
* training only, off unless asked for: ``trainingOperators`` (Kubeflow training operator, a Deployment with no
  tolerations), ``mpi-operator`` (a Deployment), ``job-auto-restart`` (RBAC on ``kubeflow.org`` PyTorchJobs);
* installed another way by this package, so off: ``inferenceOperators`` and ``cert-manager`` (EKS add-ons),
  ``mlflow`` (chart default off, pinned off).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from .config.cluster import HyperPodDependenciesConfig

RELEASE_NAME = "hyperpod-dependencies"
NAMESPACE = "kube-system"


def chart_values(region: str, config: HyperPodDependenciesConfig) -> dict[str, object]:
    """The values this package sets on the chart (everything else stays at the pinned chart's defaults)."""
    return {
        "global": {"region": region},
        "health-monitoring-agent": {"enabled": True, "region": region},
        "deep-health-check": {"enabled": True},
        "hyperpod-patching": {"enabled": True},
        "nvidia-device-plugin": {"devicePlugin": {"enabled": True}},
        "aws-efa-k8s-device-plugin": {"devicePlugin": {"enabled": True}},
        "neuron-device-plugin": {"devicePlugin": {"enabled": True}},
        # Training only (chart default on): off for this inference package unless the stack turns them on.
        "trainingOperators": {"enabled": config.training_operators},
        "mpi-operator": {"enabled": config.mpi_operator},
        "job-auto-restart": {"enabled": config.job_auto_restart},
        # Installed as EKS add-ons by the inference-operator layer; two owners would fight.
        "inferenceOperators": {"enabled": False},
        "cert-manager": {"enabled": False},
        "mlflow": {"enabled": False},
    }


@dataclass(frozen=True)
class HyperPodDependenciesArgs:
    config: HyperPodDependenciesConfig
    region: str
    k8s_provider: k8s.Provider


class HyperPodDependencies(pulumi.ComponentResource):
    """``helm install hyperpod-dependencies <checkout@gitCommit>/helm_chart/HyperPodHelmChart -n kube-system``."""

    release: k8s.helm.v3.Release | None

    def __init__(self, name: str, args: HyperPodDependenciesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:hyperpod_dependencies:HyperPodDependencies", name, None, opts)
        self.release = None
        if args.config.enabled:
            self.release = k8s.helm.v3.Release(
                f"{name}-release",
                name=RELEASE_NAME,
                chart=args.config.chart_path,
                namespace=NAMESPACE,
                values=chart_values(args.region, args.config),
                description=f"aws/sagemaker-hyperpod-cli@{args.config.git_commit} helm_chart/HyperPodHelmChart",
                # Create (and delete) without waiting for pods: no node exists until the HyperPod cluster that
                # depends on this release is created (module docstring). Not atomic: atomic implies wait.
                skip_await=True,
                # The chart's Chart.yaml pulls nvidia-device-plugin 0.16.1, aws-efa-k8s-device-plugin 0.5.20 and
                # cert-manager v1.18.2 from their Helm repositories; the git checkout does not contain them
                # (readme "Step One": `helm dependencies update`).
                dependency_update=True,
                timeout=900,
                opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider),
            )
        self.register_outputs({"releaseName": RELEASE_NAME if self.release is not None else None})
