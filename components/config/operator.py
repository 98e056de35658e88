"""``hyperpod-inference:operator`` — the inference add-on pin and its prerequisites' pins.

The add-on version itself is checked against the one compatibility table (``policies/compatibility.yaml``,
owned by that module's check). This module owns the prerequisite EKS add-on pins: the inference add-on's
install check refuses to start when one of them is missing or older than the documented minimum, so a
pin below the minimum is a config error here rather than a failed 45-minute add-on create.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import Field

from .base import ConfigIssue, Model
from .checks import cross_check


class StackView(Protocol):
    """What this module's checks read of the stack (``components/config/stack.py`` provides it; mypy checks)."""

    @property
    def operator(self) -> OperatorConfig: ...


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
# Source: AWS docs "sagemaker-hyperpod-model-deployment-setup" (D6), dependency table; see
# ../shared/docs/operator-facts.md §11. Defaults equal the minimums: upgrade deliberately, per environment.
PREREQUISITES: tuple[Prerequisite, ...] = (
    Prerequisite("s3CsiDriverVersion", "aws-mountpoint-s3-csi-driver", "v1.14.1-eksbuild.1", "v1.14.1-eksbuild.1"),
    Prerequisite("fsxCsiDriverVersion", "aws-fsx-csi-driver", "v1.6.0-eksbuild.1", "v1.6.0-eksbuild.1"),
    Prerequisite("metricsServerVersion", "metrics-server", "v0.7.2-eksbuild.4", "v0.7.2-eksbuild.4"),
    Prerequisite("certManagerVersion", "cert-manager", "v1.18.2-eksbuild.2", "v1.18.2-eksbuild.2"),
)
_BY_KEY = {p.config_key: p for p in PREREQUISITES}
PrerequisiteName = Literal["aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "metrics-server", "cert-manager"]


def parse_eks_version(version: str) -> tuple[int, int, int, int]:
    """``v1.14.1-eksbuild.2`` -> ``(1, 14, 1, 2)`` for ordering add-on versions."""
    m = re.match(r"^v([0-9]+)\.([0-9]+)\.([0-9]+)-eksbuild\.([0-9]+)$", version)
    if m is None:
        raise ValueError(f"not an EKS add-on version: {version!r}")
    major, minor, patch, build = (int(g) for g in m.groups())
    return major, minor, patch, build


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


cross_check(_operator_checks)
