"""Which Kubernetes versions an EKS cluster for HyperPod may run, and whether EKS still gives them standard support.

Two facts, each from its source, in one place (the config validation and the policy pack both read them):

* SageMaker HyperPod (EKS orchestration) supports Kubernetes 1.30, 1.31, 1.32, 1.33, 1.34 and 1.35 —
  docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html, "Kubernetes version support"
  (stored copy read 2026-12-01). An older copy of the same page listed 1.28-1.33, so re-check it before adding a
  version here.
* EKS standard support lasts 14 months from the EKS release, then extended support 12 more months "at an
  additional cost per cluster hour" — docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html
  (awsdocs/amazon-eks-user-guide ``latest/ug/versioning/kubernetes-versions.adoc``, "Amazon EKS Kubernetes release
  calendar"). The stored copy of that calendar stops at 1.33; the 1.34 and 1.35 dates below are the ones the
  AWS-maintained aws-samples/sample-apex-skills ``eks-operation-review/references/cluster-lifecycle.md``
  (verified 2026-04-24) and endoflife.date/amazon-eks give; they agree with the 14 + 12 month rule.

On 2026-12-01 only 1.34 (until 2026-12-02) and 1.35 (until 2027-03-27) are in standard support, so the
package defaults to 1.35. A version in extended support is allowed (it works, it costs more): the
``eks-kubernetes-standard-support`` policy reports it as advisory.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .graph import EKS_CLUSTER, EKS_COMPONENT, get

HYPERPOD_SUPPORTED_VERSIONS: tuple[str, ...] = ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35")


@dataclass(frozen=True)
class EksSupport:
    """End dates (UTC, inclusive of the day before) of one version's EKS support windows."""

    end_of_standard: dt.date
    end_of_extended: dt.date


# Amazon EKS Kubernetes release calendar (sources in the module docstring). Billing for extended support "starts at
# the beginning of the day that the version reaches end of standard support, in the UTC+0 timezone".
EKS_CALENDAR: dict[str, EksSupport] = {
    "1.30": EksSupport(dt.date(2025, 7, 23), dt.date(2026, 7, 23)),
    "1.31": EksSupport(dt.date(2025, 11, 26), dt.date(2026, 11, 26)),
    "1.32": EksSupport(dt.date(2026, 3, 23), dt.date(2027, 3, 23)),
    "1.33": EksSupport(dt.date(2026, 7, 29), dt.date(2027, 7, 29)),
    "1.34": EksSupport(dt.date(2026, 12, 2), dt.date(2027, 12, 2)),
    "1.35": EksSupport(dt.date(2027, 3, 27), dt.date(2028, 3, 27)),
}


def support_status(version: str, on: dt.date) -> str:
    """``standard``, ``extended``, ``ended`` (past extended support) or ``unknown`` (not in the calendar)."""
    support = EKS_CALENDAR.get(version)
    if support is None:
        return "unknown"
    if on < support.end_of_standard:
        return "standard"
    if on < support.end_of_extended:
        return "extended"
    return "ended"


def accepted_versions(on: dt.date) -> list[str]:
    """The versions a new stack may use on ``on``: HyperPod supports them and EKS still supports them."""
    return [v for v in HYPERPOD_SUPPORTED_VERSIONS if support_status(v, on) in ("standard", "extended")]


def accepted_text(on: dt.date) -> str:
    """``accepted on 2026-12-01: 1.32, 1.33 (extended support, billed extra), 1.34, 1.35``."""
    shown = [
        f"{v} (extended support, billed extra)" if support_status(v, on) == "extended" else v
        for v in accepted_versions(on)
    ]
    return f"accepted on {on.isoformat()}: {', '.join(shown) or 'none'}"


def version_problem(version: str, on: dt.date) -> str | None:
    """Why ``version`` must not be used for a HyperPod EKS cluster on ``on``, or None; the text lists exactly
    what is accepted that day."""
    if version not in HYPERPOD_SUPPORTED_VERSIONS:
        return (
            f"SageMaker HyperPod does not support Kubernetes {version} (sagemaker-hyperpod-eks-prerequisites); "
            f"{accepted_text(on)}"
        )
    if support_status(version, on) == "ended":
        return (
            f"Kubernetes {version} left EKS extended support on {EKS_CALENDAR[version].end_of_extended.isoformat()}; "
            f"{accepted_text(on)}"
        )
    return None


def extended_support_note(version: str, on: dt.date) -> str | None:
    """The advisory text for a version in EKS extended support on ``on``, or None."""
    if support_status(version, on) != "extended":
        return None
    support = EKS_CALENDAR[version]
    newer = [v for v in HYPERPOD_SUPPORTED_VERSIONS if support_status(v, on) == "standard"]
    return (
        f"Kubernetes {version} left EKS standard support on {support.end_of_standard.isoformat()} and is billed as "
        f"extended support until {support.end_of_extended.isoformat()}; versions HyperPod supports that are in "
        f"standard support: {', '.join(newer) or 'none'}"
    )


def _as_of(args: ResourceValidationArgs) -> dt.date:
    raw = args.get_config().get("asOf")
    if isinstance(raw, str) and raw:
        return dt.date.fromisoformat(raw)
    return dt.datetime.now(dt.UTC).date()


def _eks_kubernetes_standard_support(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (EKS_COMPONENT, EKS_CLUSTER):
        return
    version = get(args.props, "version")
    if not isinstance(version, str):
        return
    note = extended_support_note(version, _as_of(args))
    if note is not None:
        report(note, None)


eks_kubernetes_standard_support = ResourceValidationPolicy(
    name="eks-kubernetes-standard-support",
    description="The EKS cluster's Kubernetes version should be in EKS standard support; in extended support it is "
    "billed extra per cluster hour. AWS docs: EKS 'Understand the Kubernetes version lifecycle on EKS' (release "
    "calendar); SageMaker 'sagemaker-hyperpod-eks-prerequisites' (Kubernetes version support).",
    validate=_eks_kubernetes_standard_support,
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(
        properties={"asOf": {"type": "string", "description": "Evaluate on this date (YYYY-MM-DD); default today."}}
    ),
    severity=Severity.LOW,
)

CLUSTER_VERSION_POLICIES = [eks_kubernetes_standard_support]
