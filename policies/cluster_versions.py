"""Which Kubernetes versions an EKS cluster for HyperPod may run, and whether EKS still gives them standard support.

Two facts, each from its source, in one place (the config validation and the policy pack both read them):

* SageMaker HyperPod (EKS orchestration) supports the versions in :data:`HYPERPOD_SUPPORTED_VERSIONS`. The newest
  retrievable AWS copy of the page that lists them is the Chinese edition of "Getting started with Amazon EKS
  support in SageMaker HyperPod", https://docs.amazonaws.cn/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md
  (a machine translation of the English page; read 2026-12-01), Requirement 1, which says exactly:
  "SageMaker HyperPod 支持 Kubernetes 版本 1.28、1.29、1.30、1.31、1.32、1.33 和 1.34。" ("supports Kubernetes versions
  1.28, 1.29, 1.30, 1.31, 1.32, 1.33 and 1.34"). The English copies found stop earlier:
  https://docs.amazonaws.cn/en_us/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html lists 1.28-1.33 and
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html 1.28-1.32. 1.28 and
  1.29 are listed but have left EKS extended support (calendar below), so they are not offered here.
* **1.35 is in no retrievable copy.** An earlier revision of this package quoted a copy listing "1.30, 1.31, 1.32,
  1.33, 1.34, and 1.35" that could not be found again. So 1.35 is
  :data:`HYPERPOD_UNLISTED_VERSIONS`: a stack may use it only with ``cluster.acceptUnlistedKubernetesVersion: true``,
  and the advisory policy ``eks-kubernetes-version-listed`` reports it on every run until a retrievable AWS page lists
  it (then move it into :data:`HYPERPOD_SUPPORTED_VERSIONS` with that page's URL and sentence). Searched again on
  2026-12-03 (AWS docs and web pages, "sagemaker-hyperpod-eks-prerequisites" and "1.35"): every
  copy found lists at most 1.34, so the reference stacks stay on 1.34 and the advisory below says what extended
  support costs and when it ends.
* EKS standard support lasts 14 months from the EKS release, then extended support 12 more months "at an
  additional cost per cluster hour" — docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html
  (awsdocs/amazon-eks-user-guide ``latest/ug/versioning/kubernetes-versions.adoc``, "Amazon EKS Kubernetes release
  calendar"). The stored copy of that calendar stops at 1.33; the 1.34 and 1.35 dates below are the ones the
  AWS-maintained aws-samples/sample-apex-skills ``eks-operation-review/references/cluster-lifecycle.md``
  (verified 2026-04-24) and endoflife.date/amazon-eks give; they agree with the 14 + 12 month rule.

The package defaults to 1.34, the newest version a retrievable AWS page lists. 1.34 leaves EKS standard support on
2026-12-02; a version in extended support is allowed (it works, it costs more): the ``eks-kubernetes-standard-support``
policy reports it as advisory.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
)

from .graph import EKS_CLUSTER, EKS_COMPONENT, get

# Listed by a retrievable AWS page (module docstring), and not yet past EKS extended support.
HYPERPOD_SUPPORTED_VERSIONS: tuple[str, ...] = ("1.30", "1.31", "1.32", "1.33", "1.34")
# Believed supported but listed by no retrievable AWS page: only with cluster.acceptUnlistedKubernetesVersion.
HYPERPOD_UNLISTED_VERSIONS: tuple[str, ...] = ("1.35",)
ACCEPT_UNLISTED_KEY = "cluster.acceptUnlistedKubernetesVersion"
HYPERPOD_VERSIONS_SOURCE = "https://docs.amazonaws.cn/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md"


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
    """``accepted on 2026-12-01: 1.32, 1.33 (extended support, billed extra), 1.34; 1.35 only with ...``."""
    shown = [
        f"{v} (extended support, billed extra)" if support_status(v, on) == "extended" else v
        for v in accepted_versions(on)
    ]
    unlisted = [v for v in HYPERPOD_UNLISTED_VERSIONS if support_status(v, on) in ("standard", "extended")]
    tail = f"; {', '.join(unlisted)} only with {ACCEPT_UNLISTED_KEY}: true" if unlisted else ""
    return f"accepted on {on.isoformat()}: {', '.join(shown) or 'none'}{tail}"


def version_problem(version: str, on: dt.date, *, accept_unlisted: bool = False) -> str | None:
    """Why ``version`` must not be used for a HyperPod EKS cluster on ``on``, or None; the text lists exactly
    what is accepted that day.

    ``accept_unlisted``: the stack set ``cluster.acceptUnlistedKubernetesVersion`` (then 1.35 is allowed).
    """
    if version in HYPERPOD_UNLISTED_VERSIONS and not accept_unlisted:
        return (
            f"Kubernetes {version} is in no retrievable copy of SageMaker HyperPod's EKS prerequisites page (the newest "
            f"lists {', '.join(HYPERPOD_SUPPORTED_VERSIONS)}: {HYPERPOD_VERSIONS_SOURCE}); use one of those, or set "
            f"{ACCEPT_UNLISTED_KEY}: true to use {version} anyway (the policy eks-kubernetes-version-listed then "
            "reports it as advisory)"
        )
    if version not in HYPERPOD_SUPPORTED_VERSIONS and version not in HYPERPOD_UNLISTED_VERSIONS:
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


# What a cluster in extended support costs: "$0.60 per cluster hour" (AWS's notice to EKS customers, quoted in
# github.com/WGBH-MLA/chowda/issues/217; the EKS user guide's kubernetes-versions page says only "at an additional
# cost per cluster hour"). 730 hours a month. At the end of extended support "your cluster is auto-upgraded to the
# oldest currently supported extended version" (same page).
EXTENDED_SUPPORT_USD_PER_CLUSTER_HOUR = 0.60
HOURS_PER_MONTH = 730


def extended_support_note(version: str, on: dt.date) -> str | None:
    """The advisory text for a version in EKS extended support on ``on``, or None: what it costs, when it ends,
    what happens then, and what to move to (no retrievable HyperPod page lists a newer version than 1.34, so the
    reference stacks stay on it and this text says what staying costs)."""
    if support_status(version, on) != "extended":
        return None
    support = EKS_CALENDAR[version]
    newer = [v for v in HYPERPOD_SUPPORTED_VERSIONS if support_status(v, on) == "standard"]
    unlisted = [v for v in HYPERPOD_UNLISTED_VERSIONS if support_status(v, on) == "standard"]
    rate = EXTENDED_SUPPORT_USD_PER_CLUSTER_HOUR
    tail = (
        f" ({', '.join(unlisted)} is in standard support but listed by no retrievable HyperPod page: only with "
        f"{ACCEPT_UNLISTED_KEY}: true)"
        if unlisted and not newer
        else ""
    )
    return (
        f"Kubernetes {version} left EKS standard support on {support.end_of_standard.isoformat()} and is billed as "
        f"extended support until {support.end_of_extended.isoformat()}: ${rate:.2f} per cluster hour (about "
        f"${rate * HOURS_PER_MONTH:,.0f} a month per EKS cluster); on {support.end_of_extended.isoformat()} EKS "
        "upgrades the cluster to the oldest version still in extended support; Security Hub FSBP EKS.2 fails "
        f"meanwhile. Versions HyperPod supports that are in standard support: {', '.join(newer) or 'none'}{tail}"
    )


AS_OF_ENV = "HPI_AS_OF"


def today() -> dt.date:
    """The evaluation date of every support-calendar check: today (UTC), or ``HPI_AS_OF`` (YYYY-MM-DD) when set.

    The calendar is an input like the stack file: a preview run on another day can give another verdict (1.34
    left EKS standard support on 2026-12-02). ``HPI_AS_OF`` makes a run reproducible (the test suite pins it; a CI
    job comparing plans across days can too); the policy pack's ``asOf`` config does the same for the CLI run.
    """
    raw = os.environ.get(AS_OF_ENV)
    if not raw:
        return dt.datetime.now(dt.UTC).date()
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise ValueError(f"{AS_OF_ENV}={raw!r}: expected a date as YYYY-MM-DD") from None


def _as_of(args: ResourceValidationArgs) -> dt.date:
    raw = args.get_config().get("asOf")
    if isinstance(raw, str) and raw:
        return dt.date.fromisoformat(raw)
    return today()


def unlisted_version_note(version: str) -> str | None:
    """The advisory text for a version no retrievable AWS page lists as HyperPod-supported, or None."""
    if version in HYPERPOD_SUPPORTED_VERSIONS:
        return None
    return (
        f"Kubernetes {version} is not listed by any retrievable copy of SageMaker HyperPod's EKS prerequisites page "
        f"(newest listed: {HYPERPOD_SUPPORTED_VERSIONS[-1]}, {HYPERPOD_VERSIONS_SOURCE}); it was allowed by "
        f"{ACCEPT_UNLISTED_KEY}. Confirm with AWS that HyperPod supports it before relying on it"
    )


def _eks_kubernetes_standard_support(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (EKS_COMPONENT, EKS_CLUSTER):
        return
    version = get(args.props, "version")
    if not isinstance(version, str):
        return
    note = extended_support_note(version, _as_of(args))
    if note is not None:
        report(note, None)


def _eks_kubernetes_version_listed(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (EKS_COMPONENT, EKS_CLUSTER):
        return
    version = get(args.props, "version")
    if not isinstance(version, str):
        return
    note = unlisted_version_note(version)
    if note is not None:
        report(note, None)
