"""``hyperpod-inference:operator`` — the inference add-on pin and its prerequisites' pins.

The add-on version itself is checked against the one compatibility table (``policies/compatibility.yaml``,
owned by that module's check). This module owns the prerequisite EKS add-on pins: the inference add-on's
install check refuses to start when one of them is missing or older than the documented minimum, so a
pin below the minimum is a config error here rather than a failed 45-minute add-on create.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import Field

from policies import addon_builds

from .base import ConfigAdvisory, ConfigIssue, Model
from .checks import Advise, Check
from .cluster import ClusterConfig
from .context import ValidationContext


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def operator(self) -> OperatorConfig: ...
    @property
    def cluster(self) -> ClusterConfig: ...
    @property
    def region(self) -> str: ...
    @property
    def context(self) -> ValidationContext: ...


AddonVersion = str
EKSBUILD = r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$"


@dataclass(frozen=True)
class Prerequisite:
    """One EKS add-on the inference add-on requires before it installs."""

    config_key: str  # key under `operator` that pins it
    addon_name: str
    minimum: str
    default: str


# The one place the prerequisite add-ons and their documented minimums live.
# Source: the dependency table of
# https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html.
# Defaults equal the minimums: upgrade deliberately, per environment.
PREREQUISITES: tuple[Prerequisite, ...] = (
    Prerequisite("s3CsiDriverVersion", "aws-mountpoint-s3-csi-driver", "v1.14.1-eksbuild.1", "v1.14.1-eksbuild.1"),
    Prerequisite("fsxCsiDriverVersion", "aws-fsx-csi-driver", "v1.6.0-eksbuild.1", "v1.6.0-eksbuild.1"),
    Prerequisite("metricsServerVersion", "metrics-server", "v0.7.2-eksbuild.4", "v0.7.2-eksbuild.4"),
    Prerequisite("certManagerVersion", "cert-manager", "v1.18.2-eksbuild.2", "v1.18.2-eksbuild.2"),
)
_BY_KEY = {p.config_key: p for p in PREREQUISITES}
PrerequisiteName = Literal["aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "metrics-server", "cert-manager"]


# One parser for EKS add-on builds, shared with the policy pack (policies/addon_builds.py).
parse_eks_version = addon_builds.parse_eks_build


class BundledChart(Model):
    """How a controller the operator needs gets onto the cluster."""

    mode: Literal["bundled", "helm", "existing"] = Field(
        default="bundled",
        description="bundled: the add-on installs it (operator 3.0+, via its alb.*/keda.* values); helm: this "
        "package installs the pinned chart; existing: already on the cluster (the add-on's copy is disabled).",
    )
    chart_version: str | None = Field(
        default=None,
        pattern=r"^v?[0-9]+\.[0-9]+\.[0-9]+$",
        description="Chart version; required when mode is helm, not allowed otherwise.",
    )


class OperatorConfig(Model):
    addon_version: AddonVersion = Field(
        pattern=EKSBUILD,
        description="Pinned amazon-sagemaker-hyperpod-inference add-on version (see the compatibility table).",
    )
    s3_csi_driver_version: str = Field(
        default=_BY_KEY["s3CsiDriverVersion"].default,
        pattern=EKSBUILD,
        description="aws-mountpoint-s3-csi-driver add-on version; at least v1.14.1-eksbuild.1.",
    )
    fsx_csi_driver_version: str = Field(
        default=_BY_KEY["fsxCsiDriverVersion"].default,
        pattern=EKSBUILD,
        description="aws-fsx-csi-driver add-on version; at least v1.6.0-eksbuild.1.",
    )
    metrics_server_version: str = Field(
        default=_BY_KEY["metricsServerVersion"].default,
        pattern=EKSBUILD,
        description="metrics-server add-on version; at least v0.7.2-eksbuild.4.",
    )
    cert_manager_version: str = Field(
        default=_BY_KEY["certManagerVersion"].default,
        pattern=EKSBUILD,
        description="cert-manager add-on version; at least v1.18.2-eksbuild.2.",
    )
    existing_prerequisites: list[PrerequisiteName] = Field(
        default_factory=list,
        description="Prerequisite add-ons already on the cluster (as EKS add-ons or self-managed): this stack does not "
        "install them (nor their IAM roles); the inference add-on only checks they are present.",
    )
    load_balancer_controller: BundledChart = Field(
        default_factory=BundledChart,
        description="AWS Load Balancer Controller: bundled (default), helm (chart from "
        "https://aws.github.io/eks-charts) or existing.",
    )
    keda: BundledChart = Field(
        default_factory=BundledChart,
        description="KEDA: bundled (default), helm (chart from https://kedacore.github.io/charts) or existing.",
    )

    def installs(self, prerequisite: Prerequisite) -> bool:
        """This stack installs the prerequisite add-on (it is not listed in ``existingPrerequisites``)."""
        return prerequisite.addon_name not in self.existing_prerequisites

    def pinned(self, prerequisite: Prerequisite) -> str:
        """The configured version of a prerequisite add-on."""
        value: str = self.model_dump(by_alias=True)[prerequisite.config_key]
        return value


def _operator_checks(cfg: StackView) -> Iterable[ConfigIssue]:
    op = cfg.operator
    for pre in PREREQUISITES:
        pinned = op.pinned(pre)
        if parse_eks_version(pinned) < parse_eks_version(pre.minimum):
            yield ConfigIssue(
                f"operator.{pre.config_key}",
                f"{pre.addon_name} {pinned} is below the minimum the inference add-on requires "
                f"({pre.minimum}); pin {pre.minimum} or later",
            )
    seen: set[str] = set()
    for i, addon_name in enumerate(op.existing_prerequisites):
        if addon_name in seen:
            yield ConfigIssue(f"operator.existingPrerequisites[{i}]", f"{addon_name} is listed twice")
        seen.add(addon_name)
    for pre in PREREQUISITES:
        attr = next(n for n, f in OperatorConfig.model_fields.items() if f.alias == pre.config_key)
        if not op.installs(pre) and attr in op.model_fields_set:
            yield ConfigIssue(
                f"operator.{pre.config_key}",
                f"{pre.addon_name} is listed in operator.existingPrerequisites, so this stack does not install it: "
                "remove the pin (preflight checks the installed one)",
            )
    for key, chart in (("loadBalancerController", op.load_balancer_controller), ("keda", op.keda)):
        if chart.mode == "helm" and chart.chart_version is None:
            yield ConfigIssue(f"operator.{key}.chartVersion", "required when mode is helm (pin the chart version)")
        if chart.mode != "helm" and chart.chart_version is not None:
            yield ConfigIssue(
                f"operator.{key}.chartVersion",
                f"only allowed when mode is helm (mode is {chart.mode}); remove it or set mode: helm",
            )


def _build_verdicts(cfg: StackView) -> Iterable[tuple[Prerequisite, addon_builds.BuildVerdict | None, str | None]]:
    """(prerequisite, verdict, Kubernetes version) for each prerequisite this stack installs; verdict None where
    the cluster is adopted (its version is the cluster's, read by preflight, not a pin of this stack)."""
    k8s = None if cfg.cluster.existing is not None else cfg.cluster.kubernetes_version
    listings = (*addon_builds.table_listings(), *cfg.context.addon_listings)
    for pre in PREREQUISITES:
        if not cfg.operator.installs(pre):
            continue
        if k8s is None:
            yield pre, None, None
        else:
            yield pre, addon_builds.verdict(pre.addon_name, cfg.operator.pinned(pre), k8s, listings), k8s


def _build_listed(cfg: StackView) -> Iterable[ConfigIssue]:
    """Refused: a source lists the builds EKS offers for the cluster's version and the pin is not one of them."""
    for pre, found, _ in _build_verdicts(cfg):
        if found is not None and found.outcome == "refused":
            yield ConfigIssue(f"operator.{pre.config_key}", found.text)


def _build_unknown(cfg: StackView) -> Iterable[ConfigAdvisory]:
    """Cannot be known offline: no source lists the version's builds, or the cluster (and so its version) is
    adopted."""
    for pre, found, k8s in _build_verdicts(cfg):
        key = f"operator.{pre.config_key}"
        if found is None:
            yield ConfigAdvisory(
                key,
                f"{pre.addon_name} {cfg.operator.pinned(pre)} on the adopted cluster: whether EKS lists it for the "
                "cluster's Kubernetes version is known only from the cluster",
                addon_builds.POLICY_OFFLINE,
                addon_builds.checked_by(pre.addon_name, "<the cluster's version>"),
            )
        elif found.outcome == "unknown" and k8s is not None:
            yield ConfigAdvisory(
                key, found.text, addon_builds.POLICY_OFFLINE, addon_builds.checked_by(pre.addon_name, k8s)
            )


# The checks of this module, in the order they report; components/config/validation.py calls them.
CHECKS: tuple[Check[StackView], ...] = (
    _operator_checks,
    _build_listed,
)
ADVISORIES: tuple[Advise[StackView], ...] = (_build_unknown,)
