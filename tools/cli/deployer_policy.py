"""The least-privilege IAM policy for ``pulumi up`` and ``pulumi destroy`` of exactly one stack.

    python -m tools.cli.deployer_policy --stack prod [--account 111122223333] [--json]

``tools.cli.preview --stack <s> --out DIR`` writes it as ``DIR/iam/deployer-<s>.json`` (an identity policy for the
role CI assumes, docs/first-deploy.md) and ``DIR/deployer-<s>.notes.json`` (why each statement has its scope,
which type needs which action, what the policy does not cover).

How it is derived, without AWS:

1. The real program runs under mocks (the preview's run); remote components are expanded into the children they
   create (``tools.rehearse.model.expand``, the rehearsal's data), so pulumi-eks's service role, EKS cluster, OIDC
   provider and add-ons count.
2. Each registered type (and each data source the program calls) is looked up in the resource-type records (``deploy:``, ``policies/resource_types``):
   the IAM actions of its create, read, update and delete, each row with its source. All four phases are
   granted: ``up`` creates, updates and reads (refresh), ``destroy`` deletes.
3. Each action is scoped with the Service Authorization Reference (parliament's machine-readable copy). Of the
   resource types the SAR lists for the action, those this stack has count: when each of them has ARN patterns
   (from the names the stack gives its resources), the statement names those ARNs; when one is a type whose IDs
   AWS assigns (``unscoped_types`` of a row), or the SAR lists none the stack has, or the action has no
   resource-level permissions, it is ``*`` — with ``aws:RequestedRegion`` limited to the stack's region for
   regional services — and the notes say why.

A type the table does not know is reported (``unknown_types``) and makes the notes say the policy is incomplete;
``tests/test_deployer_policy.py`` fails on one for every reference stack. The account defaults to ``*`` in ARNs
(mocks know no account); pass ``--account`` to pin it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from policies.deploy_actions import ArnPattern, DeployActions, TypeRow, load_deploy_actions
from policies.physical_names import name_pattern, physical_name
from policies.readiness import input_value
from policies.resource_types.tokens import EKS_CLUSTER, IAM_POLICY, IAM_ROLE, IAM_ROLE_POLICY_ATTACHMENT
from tools.plan.mocks import ACCOUNT_ID, Registration
from tools.report import cli

POLICY_VERSION = "2012-10-17"
# "The size of each managed policy cannot exceed 6,144 characters" (IAM user guide, IAM and AWS STS quotas; white
# space does not count). A larger policy is also written in parts that each fit, to attach side by side.
MANAGED_POLICY_MAX_CHARS = 6144
_AUTONAME = re.compile(r"^(?P<logical>.+)-[0-9a-f]{7}$")
_FIELD = re.compile(r"\{([a-z]+(?:\.[A-Za-z0-9_.]+)?)\}")

STATE_BACKEND_NOTE = (
    "Not included: the state backend. Pulumi Cloud needs no AWS permission (PULUMI_ACCESS_TOKEN); a self-managed "
    "S3 backend (`pulumi login s3://<bucket>/<prefix>`) needs s3:ListBucket on the bucket and s3:GetObject, "
    "s3:PutObject, s3:DeleteObject on <bucket>/<prefix>/* (and kms:Encrypt, kms:Decrypt, kms:GenerateDataKey on "
    "the key of an awskms:// secrets provider): add them as a separate statement for your backend."
)
KUBERNETES_NOTE = (
    "Kubernetes objects and Helm releases are authorized by the deployer's EKS access entry, not by IAM: the "
    "principal that creates the cluster gets cluster-admin (bootstrapClusterCreatorAdminPermissions); another "
    "principal running `pulumi up` later needs an access entry with AmazonEKSClusterAdminPolicy. The token "
    "(`aws eks get-token`) presigns sts:GetCallerIdentity, which needs no permission."
)


# --- the Service Authorization Reference (parliament 1.6.4's iam_definition.json) -----------------------------


@dataclass(frozen=True)
class SarAction:
    """An action's resource types in the SAR (``required``: marked ``*`` there); empty: no resource-level scope."""

    resource_types: tuple[str, ...]
    required: frozenset[str]


@cache
def _sar_data() -> list[dict[str, Any]]:
    """parliament's copy of the SAR, read without importing parliament (its import loads more than the data)."""
    spec = importlib.util.find_spec("parliament")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - a pinned dependency
        raise RuntimeError("the deploy policy needs parliament's Service Authorization Reference data (requirements)")
    path = Path(next(iter(spec.submodule_search_locations))) / "iam_definition.json"
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


@cache
def _sar() -> dict[str, dict[str, SarAction]]:
    """``{service prefix: {lower-case action name: SarAction}}``."""
    out: dict[str, dict[str, SarAction]] = {}
    for service in _sar_data():
        actions = out.setdefault(service["prefix"], {})  # two services share `cloudformation` (Cloud Control)
        for priv in service["privileges"]:
            names = [r["resource_type"] for r in priv["resource_types"] if r["resource_type"]]
            actions[priv["privilege"].lower()] = SarAction(
                tuple(n.rstrip("*") for n in names), frozenset(n.rstrip("*") for n in names if n.endswith("*"))
            )
    return out


@cache
def sar_resources() -> dict[str, dict[str, str]]:
    """``{service prefix: {resource type: ARN format}}``."""
    out: dict[str, dict[str, str]] = {}
    for service in _sar_data():
        out.setdefault(service["prefix"], {}).update({r["resource"]: r["arn"] for r in service["resources"]})
    return out


def sar_action(action: str) -> SarAction | None:
    """The SAR entry of ``service:Action`` (IAM action names are case-insensitive), or None when it has none."""
    service, _, name = action.partition(":")
    return _sar().get(service, {}).get(name.lower())


# --- the policy -------------------------------------------------------------------------------------------------


@dataclass
class Statement:
    sid: str
    actions: list[str]
    resources: list[str]
    condition: dict[str, Any] | None
    why: str
    effect: str = "Allow"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"Sid": self.sid, "Effect": self.effect, "Action": self.actions}
        out["Resource"] = self.resources[0] if self.resources == ["*"] else self.resources
        if self.condition:
            out["Condition"] = self.condition
        return out


@dataclass
class DeployerPolicy:
    """The policy document of one stack and what explains it."""

    stack: str
    region: str
    statements: list[Statement]
    by_type: dict[str, list[str]]  # table key -> every action it needs
    unknown_types: list[str] = field(default_factory=list)
    unknown_invokes: list[str] = field(default_factory=list)
    boundary: str = ""  # the permissions boundary every role of the stack must carry
    unbounded_roles: list[str] = field(default_factory=list)  # roles registered without it
    stack_roles: list[str] = field(default_factory=list)  # the ARN patterns of the stack's roles

    @property
    def boundary_document(self) -> dict[str, Any]:
        return boundary_document(self.stack_roles)

    @property
    def document(self) -> dict[str, Any]:
        return {"Version": POLICY_VERSION, "Statement": [s.to_json() for s in self.statements]}

    @property
    def actions(self) -> set[str]:
        return {a for s in self.statements for a in s.actions}

    @property
    def complete(self) -> bool:
        return not self.unknown_types and not self.unknown_invokes and not self.unbounded_roles

    def parts(self, limit: int = MANAGED_POLICY_MAX_CHARS) -> list[dict[str, Any]]:
        """The statements packed, in order, into documents of at most ``limit`` characters (white space excluded)."""
        docs: list[list[dict[str, Any]]] = [[]]
        for st in (s.to_json() for s in self.statements):
            if docs[-1] and policy_chars({"Version": POLICY_VERSION, "Statement": [*docs[-1], st]}) > limit:
                docs.append([])
            docs[-1].append(st)
        for statements in docs:
            if policy_chars({"Version": POLICY_VERSION, "Statement": statements}) > limit:
                raise ValueError(f"statement {statements[0]['Sid']} alone exceeds {limit} characters")
        return [{"Version": POLICY_VERSION, "Statement": statements} for statements in docs]

    def notes(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "region": self.region,
            "complete": self.complete,
            "unknownTypes": self.unknown_types,
            "unknownInvokes": self.unknown_invokes,
            "permissionsBoundary": self.boundary,
            "unboundedRoles": self.unbounded_roles,
            "statements": [
                {"sid": s.sid, "actions": s.actions, "resources": s.resources, "why": s.why} for s in self.statements
            ],
            "types": self.by_type,
            "notes": [KUBERNETES_NOTE, STATE_BACKEND_NOTE],
            "table": "policies/resource_types (deploy)",
        }


def policy_chars(document: dict[str, Any]) -> int:
    """The size IAM counts: the JSON without white space (none of this package's values contains any)."""
    return len(json.dumps(document, separators=(",", ":")))


class _Names:
    """Turns registration inputs into ARN parts: the mocks' account becomes the policy's, and a physical name the
    mocks reported for a resource whose name AWS completes (a prefix's unique suffix, an auto-name's random hex;
    the record's ``physical_name``) becomes the pattern of every name it can get (``prefix*``, ``<logical>-*``)."""

    def __init__(self, registrations: Sequence[Registration], account: str) -> None:
        self.account = account
        self.logical = {r.name for r in registrations}
        # The stack's own EKS cluster (``{eks_cluster}``): the cluster a HyperPod API acts on with the caller's
        # credentials (compute quotas, the scheduler config). None when the stack adopts one or has several.
        eks = {r.inputs.get("name") for r in registrations if r.type == EKS_CLUSTER}
        self.eks_cluster = next(iter(eks)) if len(eks) == 1 else None  # None in the set: a name not known offline
        self.patterns: dict[str, str] = {}
        for r in registrations:
            concrete, pattern = physical_name(r.type, r.name, r.inputs), name_pattern(r.type, r.name, r.inputs)
            if concrete and pattern and concrete != pattern:
                self.patterns[concrete] = pattern

    def clean(self, value: Any) -> str:
        if not isinstance(value, str) or not value:
            return "*"
        if value in self.patterns:
            value = self.patterns[value]
        else:
            m = _AUTONAME.match(value)
            if m and m.group("logical") in self.logical:
                value = f"{m.group('logical')}-*"
        return value.replace(ACCOUNT_ID, self.account)


def _physical_name(reg: Registration, row: TypeRow, names: _Names) -> str:
    """The pattern of the resource's own name in its ARN (``*`` when its inputs do not give it)."""
    pattern = name_pattern(reg.type, reg.name, reg.inputs)
    if pattern is None:
        return "*"
    return names.clean(pattern.removeprefix(row.name_strip))


def render_arn(
    pattern: ArnPattern | str,
    *,
    inputs: dict[str, Any],
    name: str,
    partition: str,
    region: str,
    names: _Names,
) -> str:
    template = pattern.arn if isinstance(pattern, ArnPattern) else pattern

    def value(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "partition":
            return partition
        if key == "region":
            return region
        if key == "account":
            return names.account
        if key == "name":
            return name
        if key == "eks_cluster":
            return names.clean(names.eks_cluster)
        if key.startswith("input."):
            return names.clean(input_value(inputs, key[len("input.") :]))
        raise ValueError(f"unknown field {{{key}}} in ARN template {template!r}")

    return _FIELD.sub(value, template)


def _service_label(service: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^a-z0-9]+", service) if part)


class _Scopes:
    """What the stack's resources are, by SAR resource type: ARN patterns where its names give them, and the types
    it touches without a usable ARN (IDs AWS assigns) or that the SAR copy does not know."""

    def __init__(self) -> None:
        self.patterns: dict[str, set[str]] = {}  # SAR ARN format -> this stack's ARN patterns
        self.unscoped: dict[str, str] = {}  # SAR ARN format -> "service:type"
        self.unknown: dict[str, set[str]] = {}  # service -> resource types the SAR copy does not list
        self.tagged: set[str] = set()  # ARN patterns that carry no stack name: only with the stack's tag
        self.untagged: set[str] = set()

    @staticmethod
    def _format(sar: str) -> str | None:
        service, _, rtype = sar.partition(":")
        return sar_resources().get(service, {}).get(rtype)

    def add_pattern(self, sar: str, arn: str, *, tag_scoped: bool = False) -> None:
        fmt = self._format(sar)
        if fmt is None:
            self.unknown.setdefault(sar.partition(":")[0], set()).add(sar.partition(":")[2])
        else:
            self.patterns.setdefault(fmt, set()).add(arn)
            (self.tagged if tag_scoped else self.untagged).add(arn)

    def is_tagged(self, arn: str) -> bool:
        """Tag-scoped unless some resource of the stack has the same ARN pattern without a tag (an adopted one)."""
        return arn in self.tagged and arn not in self.untagged

    def add_unscoped(self, sar: str) -> None:
        fmt = self._format(sar)
        if fmt is None:
            self.unknown.setdefault(sar.partition(":")[0], set()).add(sar.partition(":")[2])
        else:
            self.unscoped[fmt] = sar

    def scope(self, action: str, sar: SarAction) -> tuple[list[str], str]:
        """The rule: of the SAR's resource types of the action, every required one needs ARN patterns; any this
        stack has without a pattern (IDs AWS assigns), or a type of the service the SAR copy does not know, means
        ``*``; else the patterns of the types the stack has."""
        service = action.split(":", 1)[0]
        if service in self.unknown:
            kinds = ", ".join(sorted(self.unknown[service]))
            return ["*"], f"this stack has {service} resources ({kinds}) the SAR copy does not list: no scope known"
        formats = {f for t in sar.resource_types if (f := self._format(f"{service}:{t}"))}
        unscoped = sorted(self.unscoped[f] for f in formats if f in self.unscoped)
        if unscoped:
            return ["*"], f"acts on {', '.join(unscoped)}, which this stack's names give no ARN for (IDs AWS assigns)"
        uncovered = sorted(t for t in sar.required if not self.patterns.get(self._format(f"{service}:{t}") or ""))
        if uncovered:
            return ["*"], f"requires {', '.join(uncovered)} (SAR), which this stack gives no ARN for"
        arns = sorted({a for f in formats for a in self.patterns.get(f, ())})
        if not arns:
            return ["*"], f"acts on resource types ({', '.join(sar.resource_types)}) this stack gives no ARN for"
        return arns, "scoped to the ARNs this stack's resources have"


ROLE_TYPE = IAM_ROLE
POLICY_TYPE = IAM_POLICY
ATTACHMENT_TYPE = IAM_ROLE_POLICY_ATTACHMENT
ATTACH_ACTIONS = frozenset({"iam:AttachRolePolicy", "iam:DetachRolePolicy"})
POLICY_VERSION_WRITES = frozenset({"iam:CreatePolicyVersion", "iam:DeletePolicyVersion", "iam:SetDefaultPolicyVersion"})
VERSION_WRITE_WHY = (
    "only the stack's managed policies attached to nothing but the stack's roles (each under the boundary): a new "
    "version cannot reach a principal outside the stack"
)
# What the boundary denies every role of the stack: changing IAM (users, roles, policies, boundaries) and the
# account or organization, so no role the deploy role writes can give anyone more than the boundary allows. It
# keeps iam:PassRole and iam:CreateServiceLinkedRole (the load balancer controller's policy uses them) and reads.
BOUNDARY_DENIED = (
    "account:*",
    "iam:AddUserToGroup",
    "iam:AttachGroupPolicy",
    "iam:AttachRolePolicy",
    "iam:AttachUserPolicy",
    "iam:CreateAccessKey",
    "iam:CreateGroup",
    "iam:CreateInstanceProfile",
    "iam:CreateLoginProfile",
    "iam:CreateOpenIDConnectProvider",
    "iam:CreatePolicy",
    "iam:CreatePolicyVersion",
    "iam:CreateRole",
    "iam:CreateSAMLProvider",
    "iam:CreateUser",
    "iam:DeleteRolePermissionsBoundary",
    "iam:DeleteUserPermissionsBoundary",
    "iam:PutGroupPolicy",
    "iam:PutRolePermissionsBoundary",
    "iam:PutRolePolicy",
    "iam:PutUserPermissionsBoundary",
    "iam:PutUserPolicy",
    "iam:SetDefaultPolicyVersion",
    "iam:UpdateAssumeRolePolicy",
    "iam:UpdateLoginProfile",
    "organizations:*",
)


def boundary_arn(stack: str, partition: str = "aws", account: str = "*") -> str:
    """The ARN of the permissions boundary every role of the stack carries (components/role_boundary.py)."""
    from components.role_boundary import role_boundary_name

    return f"arn:{partition}:iam::{account}:policy/{role_boundary_name(stack)}"


# What the boundary also denies: every way a principal turns its permissions into another principal's (the
# escalation paths principalmapper's edge checks and its admin test look for: assuming a role, passing a role to
# compute it then controls, changing code that runs as a role) and the actions that expose what it may read.
BOUNDARY_DENIED_PATHS = (
    "autoscaling:CreateAutoScalingGroup",
    "autoscaling:CreateLaunchConfiguration",
    "autoscaling:UpdateAutoScalingGroup",
    "cloudformation:CreateChangeSet",
    "cloudformation:CreateStack",
    "cloudformation:ExecuteChangeSet",
    "cloudformation:SetStackPolicy",
    "cloudformation:UpdateStack",
    "codebuild:*",
    "ec2:AssociateIamInstanceProfile",
    "ec2:CreateFleet",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateLaunchTemplateVersion",
    "ec2:ModifyImageAttribute",
    "ec2:ModifyInstanceAttribute",
    "ec2:ModifySnapshotAttribute",
    "ec2:ReplaceIamInstanceProfileAssociation",
    "ec2:RequestSpotFleet",
    "ec2:RequestSpotInstances",
    "ec2:RunInstances",
    "ec2-instance-connect:SendSSHPublicKey",
    "glue:CreateDevEndpoint",
    "glue:UpdateDevEndpoint",
    "lambda:*",
    "sagemaker:CreateNotebookInstance",
    "sagemaker:CreatePresignedNotebookInstanceUrl",
    "sagemaker:CreateProcessingJob",
    "sagemaker:CreateTrainingJob",
    "ssm:SendCommand",
    "ssm:StartSession",
    "sts:AssumeRole",
    "sts:GetFederationToken",
)


def boundary_document(stack_roles: Sequence[str] = ()) -> dict[str, Any]:
    """The boundary's document: what a role of the stack may do at most, whatever its own policies say. With the
    stack's role ARNs (``stack_roles``), iam:PassRole is denied on every other role; without them, on all."""
    pass_role: dict[str, Any] = {"Sid": "PassOnlyTheStacksRoles", "Effect": "Deny", "Action": "iam:PassRole"}
    if stack_roles:
        pass_role["NotResource"] = sorted(stack_roles)
    else:
        pass_role["Resource"] = "*"
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {"Sid": "AtMostWhatTheRolesOwnPoliciesAllow", "Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Sid": "NoIamOrAccountChanges", "Effect": "Deny", "Action": list(BOUNDARY_DENIED), "Resource": "*"},
            {"Sid": "NoEscalationPaths", "Effect": "Deny", "Action": list(BOUNDARY_DENIED_PATHS), "Resource": "*"},
            pass_role,
        ],
    }


@dataclass
class _Conditions:
    """The conditions of least privilege, per action: the stack's tag where ARNs cannot carry its name, the
    services a role may be passed to or a service-linked role made for, the boundary on every role change, and
    the stack's region where the resource is ``*``."""

    table: DeployActions
    stack: str
    region: str
    boundary: str
    passed_to: list[str]
    service_linked: list[str]

    def _base(self, action: str) -> dict[str, dict[str, Any]]:
        if action == "iam:PassRole" and self.passed_to:
            return {"StringEquals": {"iam:PassedToService": self.passed_to}}
        if action == "iam:CreateServiceLinkedRole" and self.service_linked:
            return {"StringEquals": {"iam:AWSServiceName": self.service_linked}}
        if action in self.table.boundary_actions:
            op = "StringLike" if "*" in self.boundary else "StringEquals"
            return {op: {"iam:PermissionsBoundary": self.boundary}}
        return {}

    def split(
        self, action: str, resources: list[str], scopes: _Scopes
    ) -> list[tuple[list[str], dict[str, dict[str, Any]], str]]:
        """(resources, condition, Sid infix) of each statement the action belongs to."""
        service = action.split(":", 1)[0]
        base = self._base(action)
        out: list[tuple[list[str], dict[str, dict[str, Any]], str]] = []
        tag = self.table.stack_tag
        request = self.table.request_tag_actions.get(action)
        if resources == ["*"]:
            cond = {k: dict(v) for k, v in base.items()}
            if service not in self.table.global_services:
                cond.setdefault("StringEquals", {})["aws:RequestedRegion"] = self.region
            if request is not None:
                cond.setdefault("StringEquals", {})[f"aws:RequestTag/{tag}"] = self.stack
                return [(resources, cond, "TaggedCreate")]
            return [(resources, cond, "")]
        tagged = [r for r in resources if scopes.is_tagged(r)]
        plain = [r for r in resources if r not in tagged]
        if plain and tagged and request is None:
            # One request names both (kms:CreateAlias: the alias and its key): one statement, else each would
            # lack a resource type the action requires. Aliases carry no tags, so the tag is required where the
            # resource has one; an untagged key or cluster is refused by DenyUntaggedOrOtherStacksResources.
            cond = {**base, "StringEqualsIfExists": {f"aws:ResourceTag/{tag}": self.stack}}
            return [(plain + tagged, cond, "Tagged")]
        if plain and tagged and request is not None:
            # a create naming an account resource besides the new one (CreateCluster and a training plan): the
            # request's tag is the request's, one statement covers both
            return [(plain + tagged, {**base, "StringEquals": {f"aws:RequestTag/{tag}": self.stack}}, "TaggedCreate")]
        if plain:
            out.append((plain, base, ""))
        if tagged:
            if request is not None:
                out.append((tagged, {**base, "StringEquals": {f"aws:RequestTag/{tag}": self.stack}}, "TaggedCreate"))
            if request is None or request.existing:
                out.append((tagged, {**base, "StringEquals": {f"aws:ResourceTag/{tag}": self.stack}}, "Tagged"))
        return out

    def tag_writes(
        self, action: str, resources: list[str], creates: list[str]
    ) -> list[tuple[list[str], dict[str, Any], str]]:
        """A tag write (``tag_write_actions``): only where the stack's tag already is, never with a request tag
        alone (it would claim an untagged resource of the account); SageMaker's tag-on-create is told apart by the
        create API it comes with (``tag_on_create``)."""
        tag = self.table.stack_tag
        own: dict[str, dict[str, Any]] = {"StringEquals": {f"aws:ResourceTag/{tag}": self.stack}}
        out: list[tuple[list[str], dict[str, Any], str]] = [(resources, own, "Tagged")]
        on_create = self.table.tag_on_create.get(action)
        if on_create is not None and creates:
            cond = {"StringEquals": {f"aws:RequestTag/{tag}": self.stack, on_create.condition_key: creates}}
            if action.split(":", 1)[0] not in self.table.global_services:
                cond["StringEquals"]["aws:RequestedRegion"] = self.region
            out.append((resources, cond, "TagOnCreate"))
        return out


def deployer_policy(
    registrations: Iterable[Registration],
    calls: Iterable[Any] = (),
    *,
    stack: str,
    region: str,
    partition: str = "aws",
    account: str = "*",
    table: DeployActions | None = None,
    phases: Sequence[str] = ("create", "read", "update", "delete"),
) -> DeployerPolicy:
    """The deploy policy of the stack whose mock run registered ``registrations`` and made ``calls`` (invokes);
    with ``phases=("read",)`` the preview policy (:func:`preview_policy`)."""
    from tools.rehearse.model import expand

    table = table or load_deploy_actions()
    regs = [r for r in expand(registrations) if r.custom]
    names = _Names(regs, account)
    by_type: dict[str, set[str]] = {}
    scopes = _Scopes()
    unknown_types: set[str] = set()

    passed_to: set[str] = set()
    service_linked: set[str] = set()
    attached: list[tuple[str, str]] = []  # (role name, policy ARN) of each attachment the plan makes
    stack_policies: dict[str, str] = {}  # the mocks' ARN of each managed policy of the stack -> its ARN pattern
    role_names: set[str] = set()
    unbounded: list[str] = []
    boundary = boundary_arn(stack, partition, account)

    def add_arns(arns: list[ArnPattern], inputs: dict[str, Any], name: str) -> None:
        for p in arns:
            arn = render_arn(p, inputs=inputs, name=name, partition=partition, region=region, names=names)
            scopes.add_pattern(p.sar, arn, tag_scoped=p.tag_scoped)

    for reg in regs:
        row = table.row_for(reg.type, reg.inputs)
        if row is None:
            if not table.needs_no_iam(reg.type):
                unknown_types.add(table.key_of(reg.type, reg.inputs))
            continue
        row_actions = {a for phase in phases for a in row.actions()[phase]}
        by_type.setdefault(table.key_of(reg.type, reg.inputs), set()).update(row_actions)
        add_arns(row.arns, reg.inputs, _physical_name(reg, row, names))
        if "iam:PassRole" in row_actions:
            passed_to.update(row.passes_role_to)
        if "iam:CreateServiceLinkedRole" in row_actions:
            service_linked.update(row.service_linked_roles)
        if reg.type == ATTACHMENT_TYPE:
            attached.append((names.clean(reg.inputs.get("role")), names.clean(reg.inputs.get("policyArn"))))
        if reg.type == POLICY_TYPE:
            stack_policies[names.clean(str(reg.outputs.get("arn") or ""))] = render_arn(
                "arn:{partition}:iam::{account}:policy/{name}",
                inputs=reg.inputs,
                name=_physical_name(reg, row, names),
                partition=partition,
                region=region,
                names=names,
            )
        if reg.type == ROLE_TYPE:
            role_names.add(names.clean(physical_name(reg.type, reg.name, reg.inputs)))
            for arn in reg.inputs.get("managedPolicyArns") or []:
                attached.append((names.clean(physical_name(reg.type, reg.name, reg.inputs)), names.clean(arn)))
            given = names.clean(reg.inputs.get("permissionsBoundary"))
            if given != boundary:
                unbounded.append(f"{reg.name} ({'no permissionsBoundary' if given == '*' else given})")
        for sar in row.unscoped_types:
            scopes.add_unscoped(sar)

    unknown_invokes: set[str] = set()
    for call in calls:
        token, args = str(getattr(call, "token", "")), dict(getattr(call, "args", {}) or {})
        invoke = table.invokes.get(token)
        if invoke is None:
            unknown_invokes.add(token)
            continue
        by_type.setdefault(f"invoke {token}", set()).update(invoke.actions)
        add_arns(invoke.arns, args, names.clean(args.get("name")))

    # iam:AttachRolePolicy/DetachRolePolicy only for the policies the plan attaches (iam:PolicyARN): never
    # AdministratorAccess, never the boundary itself (it allows `*` minus its denials).
    attachable = sorted({stack_policies.get(p, p) for _, p in attached if p != "*"})
    # A new version of a managed policy changes every principal it is attached to: written only for the stack's
    # policies attached to nothing but the stack's own (bounded) roles, never one outside callers attach.
    version_writable = {
        arn
        for mock_arn, arn in stack_policies.items()
        if any(p == mock_arn for _, p in attached) and all(r in role_names for r, p in attached if p == mock_arn)
    }
    conditions = _Conditions(
        table=table,
        stack=stack,
        region=region,
        boundary=boundary,
        passed_to=sorted(passed_to),
        service_linked=sorted(service_linked),
    )
    # Scope each action, then group actions of one service with the same scope and condition into one statement.
    groups: dict[tuple[str, tuple[str, ...], str, str], tuple[set[str], set[str]]] = {}
    granted_actions = sorted({a for acts in by_type.values() for a in acts})
    for action in granted_actions:
        resources, why = _scope(action, scopes, table, partition, region, names)
        service = action.split(":", 1)[0]
        if action in POLICY_VERSION_WRITES:
            resources = [r for r in resources if r in version_writable]
            if not resources:
                continue  # no policy of the stack whose new version only the stack's bounded roles would get
            why = VERSION_WRITE_WHY
        if action in table.tag_write_actions:
            creates = sorted(a.split(":", 1)[1] for a in granted_actions if a.startswith(f"{service}:Create"))
            split = conditions.tag_writes(action, resources, creates)
        else:
            split = conditions.split(action, resources, scopes)
        for arns, base_cond, kind in split:
            cond: dict[str, Any] = dict(base_cond)
            if action in ATTACH_ACTIONS:
                cond["ArnEquals"] = {"iam:PolicyARN": attachable}
            elif arns == ["*"] and service not in table.global_services and "aws:RequestedRegion" not in str(cond):
                cond["StringEquals"] = {**cond.get("StringEquals", {}), "aws:RequestedRegion": region}
            key = (service, tuple(arns), kind, json.dumps(cond, sort_keys=True))
            acts, reasons = groups.setdefault(key, (set(), set()))
            acts.add(action)
            reasons.add(why)
    statements: list[Statement] = []
    used: set[str] = set()
    for (service, scope, kind, condition_json), (acts, reasons) in sorted(groups.items()):
        base = _service_label(service) + kind + ("AnyResource" if scope == ("*",) else "StackResources")
        condition: dict[str, Any] | None = json.loads(condition_json) or None
        sid, n = base, 2
        while sid in used:
            sid, n = f"{base}{n}", n + 1
        used.add(sid)
        statements.append(Statement(sid, sorted(acts), list(scope), condition, "; ".join(sorted(reasons))))
    granted = {a for st in statements for a in st.actions}
    # Whatever grants name a tag-scoped ARN pattern (a key, a cluster: IDs AWS assigns), only the stack's tagged
    # resources behind it are reachable: an untagged resource of the account (StringNotEquals matches a missing
    # key) or another stack's is refused. The creating calls (no resource yet) and the tag-on-create are apart.
    tag_scoped = sorted(scopes.tagged - scopes.untagged)
    creating = set(table.request_tag_actions) | set(table.tag_on_create)
    on_tagged = sorted(
        {a for st in statements if st.effect == "Allow" and set(st.resources) & set(tag_scoped) for a in st.actions}
        - creating
    )
    if on_tagged:
        statements.append(
            Statement(
                "DenyUntaggedOrOtherStacksResources",
                on_tagged,
                tag_scoped,
                {"StringNotEquals": {f"aws:ResourceTag/{table.stack_tag}": stack}},
                "a key or cluster whose ARN cannot carry the stack's name is the stack's only if it carries the "
                "stack's tag; tagging one that has none is not granted either (issue 46)",
                effect="Deny",
            )
        )
    retag = sorted(a for a in table.tag_write_actions if a in granted)
    if retag:
        tag_key = f"aws:ResourceTag/{table.stack_tag}"
        statements.append(
            Statement(
                "DenyTagChangesOnOtherStacksResources",
                retag,
                ["*"],
                {"StringNotEquals": {tag_key: stack}, "Null": {tag_key: "false"}},
                "the stack's tag is what scopes resources whose ARNs carry no name: never change the tags of a "
                "resource another stack's tag marks",
                effect="Deny",
            )
        )
    return DeployerPolicy(
        stack=stack,
        region=region,
        statements=statements,
        by_type={k: sorted(v) for k, v in sorted(by_type.items())},
        unknown_types=sorted(unknown_types),
        unknown_invokes=sorted(unknown_invokes),
        boundary=boundary,
        unbounded_roles=sorted(unbounded),
        stack_roles=sorted(f"arn:{partition}:iam::{account}:role/{name}" for name in role_names if name != "*"),
    )


def preview_policy(
    registrations: Iterable[Registration],
    calls: Iterable[Any] = (),
    *,
    stack: str,
    region: str,
    partition: str = "aws",
    account: str = "*",
) -> DeployerPolicy:
    """The read-only policy of the role pull requests get (issue 46 item 2): what a real ``pulumi preview`` reads
    (the refresh, each type's ``read`` row, and the program's data sources), scoped like the deploy policy; nothing
    it holds creates, changes, deletes, tags or passes anything."""
    return deployer_policy(
        registrations, calls, stack=stack, region=region, partition=partition, account=account, phases=("read",)
    )


GITHUB_OIDC = "token.actions.githubusercontent.com"


def github_trust(repo: str, subject: str, *, account: str = "*", partition: str = "aws") -> dict[str, Any]:
    """The trust policy of a role GitHub Actions assumes with OIDC for one ``sub`` claim (GitHub docs, "About
    security hardening with OpenID Connect", subject claims: ``repo:ORG/REPO:pull_request`` for a pull request's
    jobs, ``repo:ORG/REPO:environment:NAME`` for a job that names an environment)."""
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": f"arn:{partition}:iam::{account}:oidc-provider/{GITHUB_OIDC}"},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{GITHUB_OIDC}:aud": "sts.amazonaws.com",
                        f"{GITHUB_OIDC}:sub": f"repo:{repo}:{subject}",
                    }
                },
            }
        ],
    }


def _scope(  # noqa: PLR0917 - one private helper, called once
    action: str,
    scopes: _Scopes,
    table: DeployActions,
    partition: str,
    region: str,
    names: _Names,
) -> tuple[list[str], str]:
    """(Resource list, why) for one action: the table's override, else the SAR's resource types."""
    override = table.action_resources.get(action)
    if override is not None:
        arns = [
            render_arn(a, inputs={}, name="*", partition=partition, region=region, names=names) for a in override.arns
        ]
        return sorted(arns), override.why
    sar = sar_action(action)
    if sar is None:
        return ["*"], "not in the Service Authorization Reference data parliament ships (newer actions): no scope known"
    if not sar.resource_types:
        return ["*"], "supports no resource-level permissions (Service Authorization Reference)"
    return scopes.scope(action, sar)


# --- files and the command line --------------------------------------------------------------------------------


def policy_files(
    policy: DeployerPolicy, preview: DeployerPolicy | None = None, *, repo: str = "ORG/REPO", account: str = "*"
) -> dict[str, dict[str, Any]]:
    """``{path under --out: document}``: the whole policy, its parts to attach, and the boundary; with the preview
    policy, its parts too and the trust policy of each role (the deploy role: the stack's GitHub environment, the
    preview role: pull requests)."""
    stack = policy.stack
    out = {f"iam/deployer-{stack}.json": policy.document}
    for n, part in enumerate(policy.parts(), start=1):
        out[f"iam/deployer-{stack}.part{n}.json"] = part
    out[f"iam/boundary-{stack}.json"] = boundary_document(policy.stack_roles)
    if preview is not None:
        for n, part in enumerate(preview.parts(), start=1):
            out[f"iam/preview-{stack}.part{n}.json"] = part
        out[f"iam/trust-deployer-{stack}.json"] = github_trust(repo, f"environment:{stack}", account=account)
        out[f"iam/trust-preview-{stack}.json"] = github_trust(repo, "pull_request", account=account)
    return out


def write_deployer_policy(
    registrations: Iterable[Registration],
    calls: Iterable[Any],
    out_dir: Path,
    *,
    stack: str,
    region: str,
    account: str = "*",
    repo: str = "ORG/REPO",
) -> list[Path]:
    """Write ``out_dir/iam/deployer-<stack>.json`` (the whole policy, to read), ``out_dir/iam/deployer-<stack>.part<N>
    .json`` (the managed policies to attach to the deploy role, each within the size limit),
    ``out_dir/iam/boundary-<stack>.json`` (the permissions boundary, created once as the managed policy
    ``hpi-<stack>-role-boundary``) and ``out_dir/deployer-<stack>.notes.json``; return the paths."""
    registrations, calls = list(registrations), list(calls)
    policy = deployer_policy(registrations, calls, stack=stack, region=region, account=account)
    preview = preview_policy(registrations, calls, stack=stack, region=region, account=account)
    iam_dir = out_dir / "iam"
    iam_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for rel, doc in policy_files(policy, preview, repo=repo, account=account).items():
        path = out_dir / rel
        path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        written.append(path)
    notes_path = out_dir / f"deployer-{stack}.notes.json"
    notes = {
        **policy.notes(),
        "parts": [f"iam/{p.name}" for p in written if ".part" in p.name and p.name.startswith("deployer-")],
        "previewParts": [f"iam/{p.name}" for p in written if p.name.startswith("preview-")],
        "boundaryFile": f"iam/boundary-{stack}.json",
    }
    notes_path.write_text(json.dumps(notes, indent=2) + "\n", encoding="utf-8")
    written.append(notes_path)
    return written


def main(argv: list[str] | None = None) -> int:
    from components.config.stackfile import load_stack_file, stack_path
    from tools.plan.harness import run_stack

    parser = argparse.ArgumentParser(prog="python -m tools.cli.deployer_policy", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--account", default="*", help="the AWS account ID to put in ARNs (default: *)")
    parser.add_argument("--json", action="store_true", help="print the notes (scopes, reasons, types) as well")
    parser.add_argument(
        "--repo",
        default="ORG/REPO",
        help="the GitHub repository (OWNER/NAME) in the roles' trust `sub` claims (default: ORG/REPO)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write DIR/iam/deployer-<stack>.json, its .part<N>.json managed policies (each within IAM's 6,144 "
        "characters) and DIR/deployer-<stack>.notes.json instead of printing one document",
    )
    ns = parser.parse_args(argv)
    if ns.out is not None:
        try:
            cli.output_dir(ns.out)
        except cli.InputError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    bad = [
        message
        for ok, message in (
            (
                re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", ns.repo),
                f"--repo {ns.repo!r}: expected OWNER/NAME of the GitHub repository",
            ),
            (
                re.fullmatch(r"\*|[0-9]{12}", ns.account),
                f"--account {ns.account!r}: expected a 12-digit AWS account ID",
            ),
        )
        if not ok
    ]
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 2
    path = stack_path(ns.stack)
    if not path.exists():
        print(f"no stack {ns.stack!r}: {path} does not exist", file=sys.stderr)
        return 2
    mapping = load_stack_file(path)
    run = run_stack(ns.stack, mapping)
    if run.config_error is not None:
        for issue in run.config_error.issues:
            print(issue.render(), file=sys.stderr)
        return 2
    region = str(mapping.get("aws:region") or "us-east-1")
    if ns.out is not None:
        for written in write_deployer_policy(
            run.registrations, run.mocks.calls, ns.out, stack=ns.stack, region=region, account=ns.account, repo=ns.repo
        ):
            print(f"wrote {written}")
    policy = deployer_policy(run.registrations, run.mocks.calls, stack=ns.stack, region=region, account=ns.account)
    if ns.out is None:
        preview = preview_policy(run.registrations, run.mocks.calls, stack=ns.stack, region=region, account=ns.account)
        files = {
            k: v
            for k, v in policy_files(policy, preview, repo=ns.repo, account=ns.account).items()
            if k != f"iam/deployer-{ns.stack}.json"
        }
        print(json.dumps(policy.notes() if ns.json else files, indent=2))
    if not policy.complete:
        if policy.unbounded_roles:
            print(
                f"incomplete: roles without the boundary {policy.boundary}: {policy.unbounded_roles}", file=sys.stderr
            )
        if policy.unknown_types or policy.unknown_invokes:
            print(
                f"incomplete: no deploy row in policies/resource_types for "
                f"{policy.unknown_types + policy.unknown_invokes}",
                file=sys.stderr,
            )
        return 1
    return 0


if __name__ == "__main__":
    cli.run(main)
