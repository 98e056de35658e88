"""``hyperpod-inference:operator`` — the inference add-on pin and its prerequisites' pins."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model

AddonVersion = str


class BundledChart(Model):
    """How a controller the operator needs gets onto the cluster."""

    mode: Literal["bundled", "helm", "existing"] = Field(
        default="bundled",
        description="bundled: the add-on installs it (operator 3.0+); helm: this package installs the pinned chart; "
        "existing: already on the cluster.",
    )
    chart_version: str | None = Field(default=None, description="Chart version when mode is helm.")


class OperatorConfig(Model):
    addon_version: AddonVersion = Field(
        pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$",
        description="Pinned amazon-sagemaker-hyperpod-inference add-on version (see the compatibility table).",
    )
    s3_csi_driver_version: str = Field(default="v1.14.1-eksbuild.1", pattern=r"^v[0-9.]+-eksbuild\.[0-9]+$")
    fsx_csi_driver_version: str = Field(default="v1.6.0-eksbuild.1", pattern=r"^v[0-9.]+-eksbuild\.[0-9]+$")
    metrics_server_version: str = Field(default="v0.7.2-eksbuild.4", pattern=r"^v[0-9.]+-eksbuild\.[0-9]+$")
    cert_manager_version: str = Field(default="v1.18.2-eksbuild.2", pattern=r"^v[0-9.]+-eksbuild\.[0-9]+$")
    load_balancer_controller: BundledChart = Field(default_factory=BundledChart)
    keda: BundledChart = Field(default_factory=BundledChart)
