"""The ``aws`` provider keys the program's dynamic providers must follow, and those they cannot (issue 33 item 3).

The node wait, the Global Inference Gateway and the cluster scheduler config call AWS with boto3 from the process
that runs ``pulumi up`` (``components/dynamic_provider.py``). They are handed the ``aws`` provider's credential chain
as inputs: ``aws:profile``, ``aws:assumeRoles`` (assumed in order) and ``aws:stsRegion``. Keys that would make them
run as another principal than the aws provider, and that they cannot honour, are refused here, before any resource
is registered, each naming what to use instead:

- ``aws:accessKey`` / ``aws:secretKey`` / ``aws:token`` (static keys): a dynamic provider only gets its inputs, which
  the state stores, and ``read``/``delete`` run with the stored ones, so a rotated key would break a later destroy;
  boto3 and the aws provider both read the ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``
  environment variables and named profiles instead (boto3 credentials guide, "Configuring credentials";
  pulumi-aws 7.51.1 ``config/vars.py``).
- ``aws:assumeRoleWithWebIdentity``, ``aws:sharedConfigFiles``, ``aws:sharedCredentialsFiles``: they change where
  the aws provider's credentials come from; set ``AWS_ROLE_ARN`` + ``AWS_WEB_IDENTITY_TOKEN_FILE`` or
  ``AWS_CONFIG_FILE`` / ``AWS_SHARED_CREDENTIALS_FILE`` instead, which both read.

``aws:assumeRoles`` entries are checked against the keys the aws provider takes (pulumi-aws 7.51.1
``config/outputs.py`` ``AssumeRoles``): ``roleArn`` required, ``duration`` a Go duration between 15 minutes and
12 hours as the provider documents it.

The Kubernetes side (issue 47 item 2): the chart, the custom resources and the bindings go through a kubeconfig
whose token comes from ``aws eks get-token``, not from the aws provider. pulumi-eks copies only ``aws:profile``
into it unless ``providerCredentialOpts`` says more; its ``roleArn`` adds ``--role <arn>`` to the get-token call
(pulumi/pulumi-eks ``nodejs/eks/cluster.ts`` ``generateKubeconfig``; ``KubeconfigOptionsArgs(profile_name,
role_arn)`` in pulumi-eks 4.4.0). Without it the token is the caller's while the cluster's creator, and only
admin, is the assumed role: every Kubernetes call fails Unauthorized. So the role goes into the kubeconfig
(:func:`kubeconfig_role`), and what ``aws eks get-token`` cannot express is refused with the fix: a chain of
more than one role (it assumes one role from the profile's credentials), and entries with an external ID,
session policies, tags or a source identity (it has no option for them; AWS CLI ``eks get-token`` takes
``--cluster-name``, ``--role-arn``, ``--cluster-id``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .base import ConfigIssue, join_path

# aws:assumeRoles entry keys (pulumi-aws 7.51.1 config AssumeRoles) -> STS AssumeRole parameters.
ASSUME_ROLE_KEYS: dict[str, str] = {
    "roleArn": "RoleArn",
    "sessionName": "RoleSessionName",
    "externalId": "ExternalId",
    "duration": "DurationSeconds",
    "policy": "Policy",
    "policyArns": "PolicyArns",
    "tags": "Tags",
    "transitiveTagKeys": "TransitiveTagKeys",
    "sourceIdentity": "SourceIdentity",
}
UNHONOURED: dict[str, str] = {
    "accessKey": "static keys would be stored in the state of the dynamic resources (node wait, global gateway, "
    "scheduler config), whose delete runs with the stored ones; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (and "
    "AWS_SESSION_TOKEN) in the environment or use aws:profile",
    "secretKey": "see aws:accessKey: use the AWS_SECRET_ACCESS_KEY environment variable or aws:profile",
    "token": "see aws:accessKey: use the AWS_SESSION_TOKEN environment variable or aws:profile",
    "assumeRoleWithWebIdentity": "the dynamic providers (boto3) would not follow it; set AWS_ROLE_ARN and "
    "AWS_WEB_IDENTITY_TOKEN_FILE in the environment, which both the aws provider and boto3 read",
    "sharedConfigFiles": "the dynamic providers (boto3) would not read them; set AWS_CONFIG_FILE instead",
    "sharedCredentialsFiles": "the dynamic providers (boto3) would not read them; set AWS_SHARED_CREDENTIALS_FILE",
}
# aws:assumeRoles keys `aws eks get-token --role-arn` can honour (the rest change the session it cannot shape).
KUBECONFIG_ROLE_KEYS = frozenset({"roleArn", "sessionName", "duration"})
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]+$")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
MIN_SESSION_SECONDS, MAX_SESSION_SECONDS = 15 * 60, 12 * 3600


def duration_seconds(text: str) -> int:
    """A Go duration as the aws provider reads ``duration`` (``1h``, ``90m``, ``1h30m``), in whole seconds."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{text!r} is not a duration such as 1h or 90m")
    return int(sum(float(n) * _UNIT_SECONDS[u] for n, u in parts))


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def aws_chain_issues(everything: Mapping[str, Any], *, kubernetes: bool = True) -> list[ConfigIssue]:
    """Problems with the ``aws:`` keys of a stack's config (``{"ns:key": value}``), as the loader gets them.

    ``kubernetes``: the stack makes Kubernetes calls (a regional stack), so the role must fit its kubeconfig too; a
    global stack calls only AWS and may chain roles."""
    issues = list(_issues(everything))
    roles = _decoded(everything.get("aws:assumeRoles"))
    if kubernetes and isinstance(roles, list):
        issues.extend(_kubeconfig_issues(roles))
    return issues


def kubeconfig_role(everything: Mapping[str, Any]) -> str | None:
    """The role the Kubernetes provider's token must be for: the one ``aws:assumeRoles`` entry (None: no entry).

    Only meaningful once :func:`aws_chain_issues` found nothing (one entry, keys get-token can honour)."""
    roles = _decoded(everything.get("aws:assumeRoles")) if "aws:assumeRoles" in everything else None
    if isinstance(roles, list) and len(roles) == 1 and isinstance(roles[0], dict):
        arn = roles[0].get("roleArn")
        return arn if isinstance(arn, str) else None
    return None


def _kubeconfig_issues(roles: list[Any]) -> Iterator[ConfigIssue]:
    """What the kubeconfig's ``aws eks get-token --role-arn`` cannot follow (see the module docstring)."""
    if len(roles) > 1:
        yield ConfigIssue(
            "aws:assumeRoles",
            f"{len(roles)} roles chained: the Kubernetes provider's token comes from `aws eks get-token --role-arn`, "
            "which assumes one role from the caller's credentials, so Kubernetes calls would run as another "
            "principal than the one that creates the cluster (Unauthorized). Keep only the last role here and reach "
            "the ones before it with aws:profile (a profile with role_arn/source_profile in ~/.aws/config)",
        )
        return
    for i, role in enumerate(roles):
        if not isinstance(role, dict):
            continue
        for key in sorted(set(role) & set(ASSUME_ROLE_KEYS) - KUBECONFIG_ROLE_KEYS):
            yield ConfigIssue(
                f"{join_path('aws:assumeRoles', i)}.{key}",
                "`aws eks get-token --role-arn`, which makes the Kubernetes provider's token, cannot pass it, so "
                "Kubernetes calls would run with another session than the aws provider's; put the role in an "
                f"aws:profile (~/.aws/config role_arn with {key} settings there) instead, or drop {key}",
            )


def _issues(everything: Mapping[str, Any]) -> Iterator[ConfigIssue]:
    for key, why in UNHONOURED.items():
        if everything.get(f"aws:{key}") not in (None, ""):
            yield ConfigIssue(f"aws:{key}", f"not supported by this program: {why}")
    if "aws:assumeRoles" not in everything:
        return
    roles = _decoded(everything["aws:assumeRoles"])
    if not isinstance(roles, list):
        yield ConfigIssue("aws:assumeRoles", "must be a list of roles ({roleArn, sessionName, ...}), assumed in order")
        return
    for i, role in enumerate(roles):
        where = join_path("aws:assumeRoles", i)
        if not isinstance(role, dict):
            yield ConfigIssue(where, "must be a mapping with at least roleArn")
            continue
        for extra in sorted(set(role) - set(ASSUME_ROLE_KEYS)):
            yield ConfigIssue(f"{where}.{extra}", f"unknown key; allowed keys here: {', '.join(ASSUME_ROLE_KEYS)}")
        arn = role.get("roleArn")
        if not isinstance(arn, str) or not ROLE_ARN.match(arn):
            yield ConfigIssue(
                f"{where}.roleArn", f"required: an IAM role ARN (arn:aws:iam::<account>:role/<name>), got {arn!r}"
            )
        if role.get("duration") is not None:
            try:
                seconds = duration_seconds(str(role["duration"]))
            except ValueError as err:
                yield ConfigIssue(f"{where}.duration", str(err))
            else:
                if not MIN_SESSION_SECONDS <= seconds <= MAX_SESSION_SECONDS:
                    yield ConfigIssue(f"{where}.duration", "must be between 15 minutes and 12 hours (15m to 12h)")
