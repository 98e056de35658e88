"""Lint IAM policy documents with parliament (duo-labs) and fail on any finding above LOW.

Reusable by every layer's tests::

    from tests.iam_lint import assert_policy_clean, policy_documents
    for where, doc in policy_documents(run):
        assert_policy_clean(doc, where)

``policy_documents(run)`` collects every JSON policy document the program registered (role trust policies,
inline and managed policies, bucket policies), so a new resource type that writes a policy is linted
without touching the tests.

Parliament's rule base predates two things this package relies on, so exactly these findings are
waived — each narrowly matched, each with its reason (anything else above LOW fails):

- Trust (assume-role) policies have no ``Resource``: parliament lints every document as an identity
  policy and reports ``MALFORMED`` "neither Resource nor NotResource". Waived only when every statement's
  action is an ``sts:AssumeRole*`` (or ``sts:TagSession``) action (i.e. the document *is* a trust policy).
- EKS IAM OIDC providers (IRSA) are not in parliament's list of federation sources (it knows SAML,
  Cognito, Google, Facebook, Amazon): ``UNKNOWN_FEDERATION_SOURCE`` is waived only for ARNs of the form
  ``arn:aws:iam::<12 digits>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<ID>``.
- ``elasticloadbalancing:CreateAction`` is documented by AWS for ``elasticloadbalancing:AddTags``
  (Service Authorization Reference, Elastic Load Balancing V2 condition keys) and used verbatim by the
  AWS Load Balancer Controller's own policy; parliament's bundled action data does not list it.
- ``RESOURCE_POLICY_PRIVILEGE_ESCALATION`` on a named S3 bucket ARN (not ``*``): whoever may write a bucket's
  policy can grant itself anything on that bucket. The deploy policy (``tools.cli.deployer_policy``) must write the
  TLS-only policies of the stack's buckets, so it holds ``s3:PutBucketPolicy`` on exactly those buckets; the
  finding restates that and is waived only for scoped bucket ARNs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from parliament import analyze_policy_string, enhance_finding

SEVERITY_ORDER = {"LOW": 1, "MEDIUM": 2, "HIGH": 3, "CRITICAL": 4}
_OIDC_ARN = re.compile(
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:oidc-provider/oidc\.eks\.[a-z0-9-]+\.amazonaws\.com/id/[0-9A-F]+$"
)
# "... escalation on arn:aws:s3:::<bucket pattern> due to ..." where the bucket pattern is not a bare wildcard.
_SCOPED_BUCKET = re.compile(r" on arn:aws[a-z-]*:s3:::[A-Za-z0-9.-][^\s/]* due to ")

# Registered input properties (camelCase, as the engine sees them) that hold a policy document.
POLICY_PROPERTIES: dict[str, tuple[str, ...]] = {
    "aws:iam/role:Role": ("assumeRolePolicy",),
    "aws:iam/policy:Policy": ("policy",),
    "aws:iam/rolePolicy:RolePolicy": ("policy",),
    "aws:s3/bucketPolicy:BucketPolicy": ("policy",),
}


@dataclass(frozen=True)
class Finding:
    severity: str
    issue: str
    detail: str

    def render(self) -> str:
        return f"{self.severity} {self.issue}: {self.detail}"


def _is_trust_policy(doc: dict[str, Any]) -> bool:
    statements = doc.get("Statement") or []
    if isinstance(statements, dict):
        statements = [statements]
    actions: list[str] = []
    for st in statements:
        act = st.get("Action", [])
        actions.extend([act] if isinstance(act, str) else act)
    # sts:TagSession sits next to sts:AssumeRole in EKS Pod Identity trust policies (EKS user guide,
    # "Pod Identity" role trust policy); it is a trust-policy action too.
    return bool(actions) and all(a.startswith("sts:AssumeRole") or a == "sts:TagSession" for a in actions)


def _waived(finding: Finding, doc: dict[str, Any]) -> bool:
    if finding.issue == "MALFORMED" and "neither Resource nor NotResource" in finding.detail:
        return _is_trust_policy(doc)
    if finding.issue == "UNKNOWN_FEDERATION_SOURCE":
        return bool(_OIDC_ARN.match(finding.detail.strip()))
    if finding.issue == "RESOURCE_POLICY_PRIVILEGE_ESCALATION":
        return bool(_SCOPED_BUCKET.search(finding.detail))
    if finding.issue == "UNKNOWN_CONDITION_FOR_ACTION":
        return (
            "elasticloadbalancing:CreateAction" in finding.detail and "elasticloadbalancing:AddTags" in finding.detail
        )
    return False


def lint_policy(document: str | dict[str, Any]) -> list[Finding]:
    """All parliament findings for a document (community auditors off), waivers applied."""
    text = document if isinstance(document, str) else json.dumps(document)
    doc = json.loads(text)
    out: list[Finding] = []
    for raw in analyze_policy_string(text).findings:
        f = enhance_finding(raw)
        finding = Finding(str(f.severity), str(f.issue), str(f.detail))
        if not _waived(finding, doc):
            out.append(finding)
    return out


def findings_above(document: str | dict[str, Any], threshold: str = "LOW") -> list[Finding]:
    limit = SEVERITY_ORDER[threshold]
    return [f for f in lint_policy(document) if SEVERITY_ORDER.get(f.severity, 99) > limit]


def assert_policy_clean(document: str | dict[str, Any], where: str = "policy") -> None:
    """Fail with every finding above LOW, naming where the document came from."""
    bad = findings_above(document)
    assert not bad, f"{where}: parliament findings above LOW:\n  " + "\n  ".join(f.render() for f in bad)


def policy_documents(run: Any, *, types: dict[str, tuple[str, ...]] | None = None) -> Iterator[tuple[str, str]]:
    """``(where, json text)`` for every policy document a mock run registered."""
    for reg in run.registrations:
        for prop in (types or POLICY_PROPERTIES).get(reg.type, ()):
            value = reg.inputs.get(prop)
            if isinstance(value, str) and value:
                yield f"{reg.type}::{reg.name}.{prop}", value
        if reg.type == "aws:iam/role:Role":  # inline policies written on the role itself
            for i, inline in enumerate(reg.inputs.get("inlinePolicies") or []):
                text = inline.get("policy") if isinstance(inline, dict) else None
                if isinstance(text, str) and text:
                    yield f"{reg.type}::{reg.name}.inlinePolicies[{i}]", text
