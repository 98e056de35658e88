"""Whether EKS lists a prerequisite add-on's pinned build for the cluster's Kubernetes version.

EKS refuses ``CreateAddon`` with a build whose ``DescribeAddonVersions`` compatibilities do not list the cluster's
Kubernetes version ("Verify Amazon EKS add-on version compatibility with a cluster",
docs.aws.amazon.com/eks/latest/userguide/addon-compat.html; the error is "Addon aws-fsx-csi-driver specified is not
supported in 1.33 kubernetes version", InvalidParameterException, github.com/aws/containers-roadmap/issues/2625).
The inference add-on's prerequisites are pinned at the operator's documented minimums (components/config/operator.py),
and a minimum says nothing about which Kubernetes versions its build lists.

The contract is the API's answer (botocore ``eks`` model: ``addons[].addonVersions[].compatibilities[].clusterVersion``).
No public source lists the builds of these four add-ons per Kubernetes version (searched 2026-12-03; see
``prerequisiteBuilds`` in policies/compatibility.yaml), so the facts come from two places, each naming its source:

* rows of ``prerequisiteBuilds`` in policies/compatibility.yaml (a DescribeAddonVersions answer copied with the call,
  region and date);
* what ``python -m tools.verify`` check ``prerequisite-builds`` read from the same API in a live account, recorded in
  ``verified/<stack>.json`` (components/config/observed.py hands those to :func:`verdict`).

Three outcomes, one function for the stack-config check and the policy pack: the build is listed (holds), a source
lists the version's builds and this one is not among them (refused, naming the builds that are), or no source lists
the version's builds (cannot be known offline: ``python -m tools.preflight.regional`` check ``add-on versions`` asks EKS).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pulumi_policy import (
    ReportViolation,
    StackValidationArgs,
)

from . import compatibility as compat
from .graph import EKS_ADDON, EKS_CLUSTER, EKS_COMPONENT, get

# The add-ons the inference add-on's install check requires (AWS docs "sagemaker-hyperpod-model-deployment-setup",
# dependency table); components/config/operator.py pins each (tests/test_addon_builds.py keeps the two equal).
PREREQUISITE_ADDONS: tuple[str, ...] = (
    "aws-mountpoint-s3-csi-driver",
    "aws-fsx-csi-driver",
    "metrics-server",
    "cert-manager",
)
VERIFY_CHECK = "prerequisite-builds"
POLICY_LISTED = "prerequisite-build-listed"
POLICY_OFFLINE = "prerequisite-build-listed-offline"


@dataclass(frozen=True)
class Listing:
    """The builds of ``addon`` one source says EKS lists for ``kubernetes_version``."""

    addon: str
    kubernetes_version: str
    builds: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class BuildVerdict:
    outcome: Literal["holds", "refused", "unknown"]
    text: str
    allowed: tuple[str, ...] = ()


def table_listings() -> tuple[Listing, ...]:
    """The ``prerequisiteBuilds`` rows of policies/compatibility.yaml."""
    return tuple(
        Listing(r.addon, r.kubernetes_version, r.builds, r.source)
        for r in compat.load_compatibility().prerequisite_builds
    )


def checked_by(addon: str, kubernetes_version: str) -> str:
    """What settles an unknown verdict: the preflight check that asks EKS (and the call it makes)."""
    return (
        "python -m tools.preflight.regional (check add-on versions: aws eks describe-addon-versions "
        f"--addon-name {addon} --kubernetes-version {kubernetes_version})"
    )


_EKSBUILD = re.compile(r"^v([0-9]+)\.([0-9]+)\.([0-9]+)-eksbuild\.([0-9]+)$")


def parse_eks_build(version: str) -> tuple[int, int, int, int]:
    """``v1.14.1-eksbuild.2`` -> ``(1, 14, 1, 2)``, to order EKS add-on builds."""
    m = _EKSBUILD.match(version)
    if m is None:
        raise ValueError(f"not an EKS add-on version: {version!r}")
    major, minor, patch, build = (int(g) for g in m.groups())
    return major, minor, patch, build


def _order(build: str) -> tuple[int, ...]:
    try:
        return parse_eks_build(build)
    except ValueError:
        return (-1,)


def verdict(addon: str, build: str, kubernetes_version: str, listings: Iterable[Listing]) -> BuildVerdict:
    """Is ``build`` of ``addon`` listed by EKS for ``kubernetes_version``, by the sources in ``listings``?

    A build any source lists holds; a build none lists, where some source lists the version's builds, is refused
    with the listed builds (newest first); no source for the version is unknown."""
    rows = [r for r in listings if r.addon == addon and r.kubernetes_version == kubernetes_version]
    if not rows:
        return BuildVerdict(
            "unknown",
            f"no source lists the {addon} builds EKS offers for Kubernetes {kubernetes_version} "
            f"(policies/compatibility.yaml prerequisiteBuilds, or a verify run): whether EKS accepts {build} is not "
            "known offline",
        )
    sources = "; ".join(dict.fromkeys(r.source for r in rows))
    listed = tuple(sorted({b for r in rows for b in r.builds}, key=_order, reverse=True))
    if build in listed:
        return BuildVerdict(
            "holds", f"{addon} {build} is listed for Kubernetes {kubernetes_version} ({sources})", listed
        )
    return BuildVerdict(
        "refused",
        f"EKS does not list {addon} {build} for Kubernetes {kubernetes_version} ({sources}); "
        f"pin one it lists: {', '.join(listed)}",
        listed,
    )


# --- the policy pack -----------------------------------------------------------------------------------


def plan_verdicts(
    resources: Iterable[tuple[str, str, Mapping[str, Any]]],
) -> list[tuple[str, BuildVerdict, str, str]]:
    """(urn, verdict, addon, Kubernetes version) for every prerequisite add-on of a plan whose EKS cluster version is in the plan.

    ``resources``: (type, urn, inputs). An adopted cluster is not in the plan: its version is unknown here, and
    the config check and preflight (which read it) speak for it."""
    items = list(resources)
    versions = [
        get(props, "version") for t, _, props in items if t in (EKS_COMPONENT, EKS_CLUSTER) and get(props, "version")
    ]
    if len(set(versions)) != 1:
        return []
    k8s = str(versions[0])
    listings = table_listings()
    out = []
    for t, urn, props in items:
        name, build = get(props, "addonName"), get(props, "addonVersion")
        if t == EKS_ADDON and name in PREREQUISITE_ADDONS and isinstance(build, str):
            out.append((urn, verdict(str(name), build, k8s, listings), str(name), k8s))
    return out


def _listed(args: StackValidationArgs, report: ReportViolation) -> None:
    for urn, found, _, _ in plan_verdicts((r.resource_type, r.urn, r.props) for r in args.resources):
        if found.outcome == "refused":
            report(found.text, urn)


def _listed_offline(args: StackValidationArgs, report: ReportViolation) -> None:
    for urn, found, addon, k8s in plan_verdicts((r.resource_type, r.urn, r.props) for r in args.resources):
        if found.outcome == "unknown":
            report(f"{found.text}; checked by {checked_by(addon, k8s)}", urn)
