"""The least-privilege IAM policy for ``pulumi up`` and ``pulumi destroy`` of exactly one stack.

    python -m tools.deployer_policy --stack prod [--account 111122223333] [--json]

``tools.preview --stack <s> --out DIR`` writes it as ``DIR/iam/deployer-<s>.json`` (an identity policy for the
role CI assumes, docs/first-deploy.md) and ``DIR/deployer-<s>.notes.json`` (why each statement has its scope,
which type needs which action, what the policy does not cover).

How it is derived, without AWS:

1. The real program runs under mocks (the preview's run); remote components are expanded into the children they
   create (``tools.rehearse.model.expand``, the rehearsal's data), so pulumi-eks's service role, EKS cluster, OIDC
   provider and add-ons count.
2. Each registered type (and each data source the program calls) is looked up in ``policies/deploy_actions.yaml``:
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
from policies.readiness import input_value
from tools import cli
from tools.mocks import ACCOUNT_ID, Registration

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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"Sid": self.sid, "Effect": "Allow", "Action": self.actions}
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

    @property
    def document(self) -> dict[str, Any]:
        return {"Version": POLICY_VERSION, "Statement": [s.to_json() for s in self.statements]}

    @property
    def actions(self) -> set[str]:
        return {a for s in self.statements for a in s.actions}

    @property
    def complete(self) -> bool:
        return not self.unknown_types and not self.unknown_invokes

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
            "statements": [
                {"sid": s.sid, "actions": s.actions, "resources": s.resources, "why": s.why} for s in self.statements
            ],
            "types": self.by_type,
            "notes": [KUBERNETES_NOTE, STATE_BACKEND_NOTE],
            "table": "policies/deploy_actions.yaml",
        }


def policy_chars(document: dict[str, Any]) -> int:
    """The size IAM counts: the JSON without white space (none of this package's values contains any)."""
    return len(json.dumps(document, separators=(",", ":")))


class _Names:
    """Turns registration inputs into ARN parts: the mocks' account becomes the policy's, and a name the mocks
    made up for an auto-named resource (``<logical>-<7 hex>``) becomes ``<logical>-*``."""

    def __init__(self, registrations: Sequence[Registration], account: str) -> None:
        self.account = account
        self.logical = {r.name for r in registrations}

    def clean(self, value: Any) -> str:
        if not isinstance(value, str) or not value:
            return "*"
        m = _AUTONAME.match(value)
        if m and m.group("logical") in self.logical:
            value = f"{m.group('logical')}-*"
        return value.replace(ACCOUNT_ID, self.account)


def _physical_name(reg_name: str, inputs: dict[str, Any], row: TypeRow, names: _Names) -> str:
    value = inputs.get(row.name_input)
    if isinstance(value, str) and value:
        return names.clean(value.removeprefix(row.name_strip))
    prefix = inputs.get("namePrefix")
    if isinstance(prefix, str) and prefix:
        return names.clean(prefix) + "*"
    return f"{reg_name}-*" if row.autonamed else "*"


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

    @staticmethod
    def _format(sar: str) -> str | None:
        service, _, rtype = sar.partition(":")
        return sar_resources().get(service, {}).get(rtype)

    def add_pattern(self, sar: str, arn: str) -> None:
        fmt = self._format(sar)
        if fmt is None:
            self.unknown.setdefault(sar.partition(":")[0], set()).add(sar.partition(":")[2])
        else:
            self.patterns.setdefault(fmt, set()).add(arn)

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


def deployer_policy(
    registrations: Iterable[Registration],
    calls: Iterable[Any] = (),
    *,
    stack: str,
    region: str,
    partition: str = "aws",
    account: str = "*",
    table: DeployActions | None = None,
) -> DeployerPolicy:
    """The deploy policy of the stack whose mock run registered ``registrations`` and made ``calls`` (invokes)."""
    from tools.rehearse.model import expand

    table = table or load_deploy_actions()
    regs = [r for r in expand(registrations) if r.custom]
    names = _Names(regs, account)
    by_type: dict[str, set[str]] = {}
    scopes = _Scopes()
    unknown_types: set[str] = set()

    def add_arns(arns: list[ArnPattern], inputs: dict[str, Any], name: str) -> None:
        for p in arns:
            scopes.add_pattern(
                p.sar, render_arn(p, inputs=inputs, name=name, partition=partition, region=region, names=names)
            )

    for reg in regs:
        row = table.row_for(reg.type, reg.inputs)
        if row is None:
            if not table.needs_no_iam(reg.type):
                unknown_types.add(table.key_of(reg.type, reg.inputs))
            continue
        by_type.setdefault(table.key_of(reg.type, reg.inputs), set()).update(row.all_actions())
        add_arns(row.arns, reg.inputs, _physical_name(reg.name, reg.inputs, row, names))
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

    # Scope each action, then group actions of one service with the same scope into one statement.
    groups: dict[tuple[str, tuple[str, ...]], tuple[set[str], set[str]]] = {}
    for action in sorted({a for acts in by_type.values() for a in acts}):
        resources, why = _scope(action, scopes, table, partition, region, names)
        service = action.split(":", 1)[0]
        acts, reasons = groups.setdefault((service, tuple(resources)), (set(), set()))
        acts.add(action)
        reasons.add(why)
    statements: list[Statement] = []
    used: set[str] = set()
    for (service, scope), (acts, reasons) in sorted(groups.items()):
        base = _service_label(service) + ("AnyResource" if scope == ("*",) else "StackResources")
        sid, n = base, 2
        while sid in used:
            sid, n = f"{base}{n}", n + 1
        used.add(sid)
        condition = None
        if scope == ("*",) and service not in table.global_services:
            condition = {"StringEquals": {"aws:RequestedRegion": region}}
        statements.append(Statement(sid, sorted(acts), list(scope), condition, "; ".join(sorted(reasons))))
    return DeployerPolicy(
        stack=stack,
        region=region,
        statements=statements,
        by_type={k: sorted(v) for k, v in sorted(by_type.items())},
        unknown_types=sorted(unknown_types),
        unknown_invokes=sorted(unknown_invokes),
    )


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


def write_deployer_policy(
    registrations: Iterable[Registration],
    calls: Iterable[Any],
    out_dir: Path,
    *,
    stack: str,
    region: str,
    account: str = "*",
) -> list[Path]:
    """Write ``out_dir/iam/deployer-<stack>.json`` (the whole policy), when it is larger than one managed policy may
    be also ``out_dir/iam/deployer-<stack>.part<N>.json`` (each within the limit), and
    ``out_dir/deployer-<stack>.notes.json``; return the paths."""
    policy = deployer_policy(registrations, calls, stack=stack, region=region, account=account)
    iam_dir = out_dir / "iam"
    iam_dir.mkdir(parents=True, exist_ok=True)
    written = [iam_dir / f"deployer-{stack}.json"]
    written[0].write_text(json.dumps(policy.document, indent=2) + "\n", encoding="utf-8")
    parts = policy.parts()
    if len(parts) > 1:
        for n, part in enumerate(parts, start=1):
            path = iam_dir / f"deployer-{stack}.part{n}.json"
            path.write_text(json.dumps(part, indent=2) + "\n", encoding="utf-8")
            written.append(path)
    notes_path = out_dir / f"deployer-{stack}.notes.json"
    notes = {**policy.notes(), "parts": [f"iam/{p.name}" for p in written[1:]]}
    notes_path.write_text(json.dumps(notes, indent=2) + "\n", encoding="utf-8")
    written.append(notes_path)
    return written


def main(argv: list[str] | None = None) -> int:
    from components.config.stackfile import load_stack_file, stack_path
    from tools.harness import run_stack

    parser = argparse.ArgumentParser(prog="python -m tools.deployer_policy", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--account", default="*", help="the AWS account ID to put in ARNs (default: *)")
    parser.add_argument("--json", action="store_true", help="print the notes (scopes, reasons, types) as well")
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
    if not re.fullmatch(r"\*|[0-9]{12}", ns.account):
        print(f"--account {ns.account!r}: expected a 12-digit AWS account ID", file=sys.stderr)
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
            run.registrations, run.mocks.calls, ns.out, stack=ns.stack, region=region, account=ns.account
        ):
            print(f"wrote {written}")
    policy = deployer_policy(run.registrations, run.mocks.calls, stack=ns.stack, region=region, account=ns.account)
    if ns.out is None:
        print(json.dumps(policy.notes() if ns.json else policy.document, indent=2))
    if not policy.complete:
        print(
            f"incomplete: no row in policies/deploy_actions.yaml for {policy.unknown_types + policy.unknown_invokes}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    cli.run(main)
