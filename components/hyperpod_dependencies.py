"""The HyperPod dependencies AWS requires on the EKS cluster *before* a HyperPod cluster joins it.

AWS documents (SageMaker developer guide, "Installing packages on the Amazon EKS cluster using Helm") that
a cluster created through the APIs must first get the Helm chart ``helm_chart/HyperPodHelmChart`` from
aws/sagemaker-hyperpod-cli, released as ``hyperpod-dependencies`` in ``kube-system``; without it HyperPod
may fail to create or run. The chart bundles the health-monitoring agent, deep-health-check RBAC, the
NVIDIA, EFA and Neuron device plugins, job auto-restart, HyperPod patching and the Kubeflow training
operator. It is not published to a Helm repository, so it is installed from a local checkout of a pinned
commit (``cluster.hyperpodDependencies.gitCommit``), never from a branch.

Values deviate from the chart defaults only where this package installs the same thing another way:
the inference operator and cert-manager come as EKS add-ons (issue 4), so the chart must not install them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from .config.cluster import HyperPodDependenciesConfig

RELEASE_NAME = "hyperpod-dependencies"
NAMESPACE = "kube-system"


def chart_values(region: str) -> dict[str, object]:
    """The values this package sets on the chart (everything else stays at the pinned chart's defaults)."""
    return {
        "global": {"region": region},
        "health-monitoring-agent": {"enabled": True, "region": region},
        "deep-health-check": {"enabled": True},
        "nvidia-device-plugin": {"devicePlugin": {"enabled": True}},
        "aws-efa-k8s-device-plugin": {"devicePlugin": {"enabled": True}},
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
                values=chart_values(args.region),
                description=f"aws/sagemaker-hyperpod-cli@{args.config.git_commit} helm_chart/HyperPodHelmChart",
                atomic=True,
                timeout=900,
                opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider),
            )
        self.register_outputs({"releaseName": RELEASE_NAME if self.release is not None else None})
