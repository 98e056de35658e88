"""Preflight of a global stack (``hyperpod-inference:role: global``): read-only AWS calls before ``pulumi up``.

    python -m tools.preflight.global_stack --stack global [--stack-file FILE] [--member-outputs FILE] [--profile NAME]
    python -m tools.preflight.regional --stack global          # the same, with the default member source

Checks:

1. the Global Inference Gateway API answers in the global stack's Region
   (``sagemaker:ListGlobalInferenceGateways``), and whether the gateway name is already taken there;
2. each member's Region is not an opt-in Region (``ec2:DescribeRegions`` ``OptInStatus``; the API rejects
   members there — botocore model, ``GlobalInferenceGatewayMember.ClusterArn``);
3. each member's HyperPod cluster exists (``sagemaker:DescribeCluster`` in the member's Region);
4. each member's in-cluster gateway is not in another global inference gateway (``ListInferenceGateways``
   with a ``ClusterArn`` filter, on every global gateway in the global and the members' Regions) —
   CreateGlobalInferenceGateway would fail with ResourceInUse.

Member data (:mod:`tools.plan.member_outputs`, shared with ``tools.cli.preview`` and ``tools.rehearse``): ``--member-outputs
FILE`` is a JSON object ``{"<member stack>": <globalGatewayMember>}`` (``pulumi stack output globalGatewayMember
--json -s <stack>`` for each member). Without it, a member whose stack file is in this repository
(``stacks/Pulumi.<last part of its name>.yaml``) is derived from that file (Region, gateway name and namespace,
cluster ``hpi-<stack>-hp``); other members are SKIPped (preflight never uses mock values).

Exit codes: 0 nothing failed (warnings allowed), 1 a check failed or no usable credentials, 2 config error or
unusable input (``file:line``, no traceback).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
)
from rich.console import Console

from components.config import PROJECT, ConfigError, ConfigIssue
from components.config.global_gateway import GlobalStackConfig, member_export
from components.config.loader import parse_stack_mapping
from components.config.stackfile import StackFileError, load_stack_file
from policies.global_policies import cluster_arn_parts, region_is_opt_in
from tools.plan import member_outputs
from tools.preflight.checks import CheckResult, Clients, Denied, call, error_code, listed
from tools.preflight.report import NO_CREDENTIALS, print_problems, render
from tools.report import cli

EXIT_OK, EXIT_FAIL, EXIT_CONFIG = 0, 1, 2
ClientsFor = Callable[[str], Clients]


def is_global_stack(mapping: Mapping[str, Any]) -> bool:
    """True for a stack file whose config says ``hyperpod-inference:role: global``."""
    return mapping.get(f"{PROJECT}:role") == "global"


def load_global(stack: str, mapping: Mapping[str, Any]) -> GlobalStackConfig:
    """Validate a global stack file's ``config:`` mapping exactly as the program does (raises ConfigError)."""
    cfg = parse_stack_mapping(stack, mapping)
    if not isinstance(cfg, GlobalStackConfig):
        raise ConfigError(
            [ConfigIssue("role", "not a global stack (role: global): use python -m tools.preflight.regional")]
        )
    return cfg


@dataclass(frozen=True)
class Member:
    """What preflight knows about one member: from ``--member-outputs`` or the member's stack file."""

    stack: str
    region: str | None
    name: str | None
    namespace: str | None
    cluster_arn: str | None = None
    cluster_name: str | None = None
    source: str = ""


def members_from(cfg: GlobalStackConfig, outputs: Mapping[str, Any] | None) -> list[Member]:
    out: list[Member] = []
    for ref in cfg.members:
        exported = (outputs or {}).get(ref.stack)
        if isinstance(exported, Mapping):
            out.append(
                Member(
                    ref.stack,
                    exported.get("region"),
                    exported.get("name"),
                    exported.get("namespace"),
                    cluster_arn=exported.get("clusterArn"),
                    source=member_outputs.FLAG,
                )
            )
            continue
        regional = member_outputs.regional_config(ref.stack)  # the regional contract, exactly as the program parses it
        if regional is None:
            out.append(Member(ref.stack, None, None, None, source=""))
            continue
        export = member_export(regional)
        out.append(
            Member(
                ref.stack,
                export["region"],
                export["name"],
                export["namespace"],
                cluster_name=f"{regional.name_prefix}-hp",
                source=member_outputs.stack_file_of(ref.stack).name,
            )
        )
    return out


def _denied(title: str, err: Denied) -> CheckResult:
    return CheckResult(title, "FAIL", f"access denied: the caller lacks {err.action}", f"grant {err.action}, rerun")


def check_api(clients_for: ClientsFor, cfg: GlobalStackConfig) -> list[CheckResult]:
    title = "global gateway API"
    sm = clients_for(cfg.region)("sagemaker")
    try:
        names = [g["Name"] for g in _all_gateways(sm)]
    except Denied as err:
        return [_denied(title, err)]
    except (ClientError, BotoCoreError) as err:
        return [
            CheckResult(
                title,
                "FAIL",
                f"the Global Inference Gateway API does not answer in {cfg.region}: {err}",
                "use a Region where the API is offered (aws:region of the global stack)",
            )
        ]
    rows = [CheckResult(title, "PASS", f"ListGlobalInferenceGateways answers in {cfg.region}")]
    if cfg.name in names:
        rows.append(
            CheckResult(
                "global gateway name",
                "WARN",
                f"a global inference gateway named {cfg.name} already exists in {cfg.region}",
                "fine if this stack created it; otherwise set gatewayName (create fails with ResourceInUse)",
            )
        )
    return rows


def _all_gateways(sm: Any) -> list[dict[str, Any]]:
    return listed(sm, "list_global_inference_gateways", "GlobalInferenceGatewaySummaries")


def check_member(
    clients_for: ClientsFor, cfg: GlobalStackConfig, member: Member
) -> tuple[list[CheckResult], str | None]:
    """Rows for one member, and its cluster ARN when found."""
    title = f"member {member.stack}"
    if member.region is None:
        return [
            CheckResult(
                title,
                "SKIP",
                "no exports given and no stack file in this repository",
                "pass --member-outputs with `pulumi stack output globalGatewayMember --json` of that stack",
            )
        ], None
    rows: list[CheckResult] = []
    regions_client = clients_for(cfg.region)("ec2")
    try:
        described = call(regions_client, "describe_regions", AllRegions=True, RegionNames=[member.region])["Regions"]
        status = described[0].get("OptInStatus", "") if described else "unknown"
    except Denied as err:
        rows.append(_denied(f"{title}: Region", err))
        status = "opt-in-not-required" if not region_is_opt_in(member.region) else "opted-in"
    if status != "opt-in-not-required" or region_is_opt_in(member.region):
        rows.append(
            CheckResult(
                f"{title}: Region",
                "FAIL",
                f"{member.region} is an opt-in Region ({status}); the Global Inference Gateway takes no members there",
                "serve that cluster from a default Region",
            )
        )
    else:
        rows.append(CheckResult(f"{title}: Region", "PASS", f"{member.region} is a default Region"))
    arn = member.cluster_arn
    try:
        sm = clients_for(member.region)("sagemaker")
        cluster = call(sm, "describe_cluster", ClusterName=arn or member.cluster_name or "")
        arn = str(cluster["ClusterArn"])
        rows.append(
            CheckResult(f"{title}: cluster", "PASS", f"{cluster.get('ClusterName')} is {cluster.get('ClusterStatus')}")
        )
    except Denied as err:
        return [*rows, _denied(f"{title}: cluster", err)], None
    except ClientError as err:
        if error_code(err) in ("ResourceNotFound", "ValidationException"):
            rows.append(
                CheckResult(
                    f"{title}: cluster",
                    "FAIL",
                    f"HyperPod cluster {arn or member.cluster_name} not found in {member.region}",
                    f"run `pulumi up` on stack {member.stack} first",
                )
            )
            return rows, None
        raise
    parts = cluster_arn_parts(arn)
    identity_account = clients_for(cfg.region).account_id
    if parts is not None and parts["account"] != identity_account:
        rows.append(
            CheckResult(
                f"{title}: account",
                "FAIL",
                f"cluster is in account {parts['account']}, the global gateway would be in {identity_account}",
                "members must be in the global gateway's account and partition",
            )
        )
    return rows, arn


def check_membership(
    clients_for: ClientsFor, cfg: GlobalStackConfig, members: list[tuple[Member, str]]
) -> list[CheckResult]:
    """No member gateway may already belong to another global inference gateway (ResourceInUse)."""
    regions = sorted({cfg.region, *(m.region for m, _ in members if m.region)})
    rows: list[CheckResult] = []
    owners: dict[str, str] = {}
    for region in regions:
        sm = clients_for(region)("sagemaker")
        try:
            gateways = _all_gateways(sm)
        except Denied as err:
            return [_denied("member gateways free", err)]
        for gw in gateways:
            if gw["Name"] == cfg.name and region == cfg.region:
                continue  # this stack's own gateway (re-run of preflight after a deploy)
            for member, arn in members:
                page = call(
                    sm,
                    "list_inference_gateways",
                    Identifier=gw["Arn"],
                    Filters=[{"Name": "ClusterArn", "Value": arn}],
                )
                for s in page.get("InferenceGatewaySummaries", []):
                    if (s["Namespace"], s["Name"]) == (member.namespace, member.name):
                        owners[member.stack] = f"{gw['Name']} ({region})"
    for member, _ in members:
        if member.stack in owners:
            rows.append(
                CheckResult(
                    f"member {member.stack}: gateway free",
                    "FAIL",
                    f"{member.namespace}/{member.name} already belongs to global gateway {owners[member.stack]}",
                    "remove it there (`aws sagemaker remove-inference-gateway`) or drop the member",
                )
            )
        else:
            rows.append(
                CheckResult(
                    f"member {member.stack}: gateway free",
                    "PASS",
                    f"{member.namespace}/{member.name} is in no other global gateway",
                )
            )
    return rows


def run_all(
    clients_for: ClientsFor, cfg: GlobalStackConfig, outputs: Mapping[str, Any] | None = None
) -> list[CheckResult]:
    rows = check_api(clients_for, cfg)
    found: list[tuple[Member, str]] = []
    for member in members_from(cfg, outputs):
        member_rows, arn = check_member(clients_for, cfg, member)
        rows.extend(member_rows)
        if arn is not None:
            found.append((member, arn))
    if found:
        rows.extend(check_membership(clients_for, cfg, found))
    return rows


def session_clients(profile: str | None) -> ClientsFor:
    """One :class:`Clients` per Region from the default credential chain (or ``profile``), created once each."""
    session = boto3.Session(profile_name=profile)
    cache: dict[str, Clients] = {}

    def clients_for(region: str) -> Clients:
        if region not in cache:
            cache[region] = Clients(session, region)
        return cache[region]

    return clients_for


def preflight_global(
    stack: str,
    *,
    stack_file: Path | None = None,
    member_outputs_file: Path | None = None,
    profile: str | None = None,
    clients_for: ClientsFor | None = None,
    console: Console | None = None,
) -> int:
    console = console or Console(highlight=False, soft_wrap=True)
    try:
        mapping = load_stack_file(cli.stack_file(stack, stack_file))
        outputs = member_outputs.read_member_outputs(member_outputs_file) if member_outputs_file else None
    except (StackFileError, cli.InputError) as err:
        return print_problems(console, "error", stack, cli.input_problems(err))
    try:
        cfg = load_global(stack, mapping)
    except ConfigError as err:
        return print_problems(console, "config error", stack, [i.render() for i in err.issues])
    try:
        clients_for = clients_for or session_clients(profile)
        console.print(
            f"preflight for global stack [bold]{stack}[/] in {cfg.region} as {clients_for(cfg.region).identity.get('Arn', '?')}"
        )
        results = run_all(clients_for, cfg, outputs)
    except (NoCredentialsError, PartialCredentialsError) as err:
        console.print(f"[bold red]{NO_CREDENTIALS}[/] ({err})")
        return EXIT_FAIL
    except ProfileNotFound as err:
        console.print(f"[bold red]{err}[/]: pass an existing --profile or configure it, then rerun")
        return EXIT_FAIL
    except (ClientError, BotoCoreError) as err:
        console.print(f"[bold red]AWS error[/]: {err}")
        return EXIT_FAIL
    render(results, console, f"preflight: global stack {stack}, {cfg.region}")
    return EXIT_FAIL if any(r.status == "FAIL" for r in results) else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.preflight.global_stack", description=(__doc__ or "").split("\n\n")[0]
    )
    cli.add_stack_arguments(parser)
    parser.add_argument(
        member_outputs.FLAG, type=Path, metavar="FILE", help='JSON {"<member stack>": <its globalGatewayMember>}'
    )
    parser.add_argument("--profile", help="AWS profile (default: the standard boto3 credential chain)")
    args = parser.parse_args(argv)
    return preflight_global(
        args.stack, stack_file=args.stack_file, member_outputs_file=args.member_outputs, profile=args.profile
    )


if __name__ == "__main__":
    cli.run(main)
