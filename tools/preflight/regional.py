"""Preflight: check the AWS account with read-only calls before ``pulumi up``.

    python -m tools.preflight.regional --stack dev [--stack-file FILE] [--profile NAME] [--fetch-jwks]

Uses your AWS credentials (the default boto3 chain, or ``--profile``) in the stack's ``aws:region``. Checks
instance-type offerings per AZ ID, SageMaker cluster quotas, EKS add-on versions, name clashes, the
ingress certificate and hosted zone, training plans, and for adopted clusters (``cluster.existing``) the EKS and
HyperPod clusters, the OIDC provider, existing prerequisites and add-ons already installed (see
``tools/preflight/checks.py`` and ``docs/adoption.md``). With ``--fetch-jwks`` it also fetches the JWKS of
``ingress.jwt`` and judges it by the ALB's limits (``tools/preflight/jwks.py``; one HTTPS GET outside AWS).

Exit codes: 0 nothing failed (warnings allowed), 1 a check failed or no usable credentials, 2 config error or
unusable input (``file:line``, no traceback).
"""

from __future__ import annotations

import argparse
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

from components.config import PROJECT, ConfigError, ConfigIssue, StackConfig
from components.config.loader import parse_stack_mapping
from components.config.stackfile import StackFileError, load_stack_file
from tools.preflight.checks import CheckResult, Clients, run_all
from tools.preflight.jwks import Fetch, check_jwks, fetch_url
from tools.preflight.report import EXIT_FAIL, EXIT_OK, NO_CREDENTIALS, print_problems, render
from tools.report import cli


def load_config(stack: str, mapping: dict[str, Any]) -> StackConfig:
    """Validate a regional stack file's ``config:`` mapping exactly as the program does (raises ConfigError)."""
    cfg = parse_stack_mapping(stack, mapping)
    if not isinstance(cfg, StackConfig):
        raise ConfigError([ConfigIssue("role", "a global stack: use python -m tools.preflight.global_stack")])
    return cfg


def _run_checks(cfg: StackConfig, clients: Clients, console: Console) -> list[CheckResult] | None:
    """Every check's rows, or None after printing why AWS could not be used (credentials, network)."""
    try:
        identity = clients.identity
        console.print(f"preflight for stack [bold]{cfg.stack}[/] in {cfg.region} as {identity.get('Arn', '?')}")
        return run_all(clients, cfg)
    except (NoCredentialsError, PartialCredentialsError) as err:
        console.print(f"[bold red]{NO_CREDENTIALS}[/] ({err})")
    except ProfileNotFound as err:
        console.print(f"[bold red]{err}[/]: pass an existing --profile or configure it, then rerun")
    except ClientError as err:
        # only GetCallerIdentity gets here (checks turn their own errors into rows): bad or expired credentials
        msg = err.response.get("Error", {}).get("Message", str(err))
        console.print(f"[bold red]AWS rejected the credentials[/]: {msg}. Refresh them (e.g. `aws sso login`), rerun.")
    except BotoCoreError as err:
        console.print(f"[bold red]could not reach AWS[/]: {err}")
    return None


def preflight(
    stack: str,
    *,
    stack_file: Path | None = None,
    profile: str | None = None,
    clients: Clients | None = None,
    console: Console | None = None,
    fetch_jwks: Fetch | None = None,
) -> int:
    """Load the stack, run every check, print the table; returns the exit code.

    ``fetch_jwks`` fetches ``ingress.jwt.jwksUri`` (``--fetch-jwks``: :func:`tools.preflight.jwks.fetch_url`); None
    leaves it unknown (a SKIP row).
    """
    console = console or Console(highlight=False, soft_wrap=True)
    try:
        path = cli.stack_file(stack, stack_file)
        mapping = load_stack_file(path)
    except (StackFileError, cli.InputError) as err:
        return print_problems(console, "error", stack, cli.input_problems(err))
    if mapping.get(f"{PROJECT}:role") == "global":  # tools/preflight/global_stack.py
        from tools.preflight.global_stack import preflight_global

        return preflight_global(stack, stack_file=path, profile=profile, console=console)
    try:
        cfg = load_config(stack, mapping)
    except ConfigError as err:
        return print_problems(console, "config error", stack, [i.render() for i in err.issues])
    try:
        clients = clients or Clients(boto3.Session(profile_name=profile), cfg.region)
    except ProfileNotFound as err:
        console.print(f"[bold red]{err}[/]: pass an existing --profile or configure it, then rerun")
        return EXIT_FAIL
    results = _run_checks(cfg, clients, console)
    if results is None:
        return EXIT_FAIL
    results += check_jwks(cfg, fetch_jwks)
    render(results, console, f"preflight: stack {stack}, {cfg.region}")
    return EXIT_FAIL if any(r.status == "FAIL" for r in results) else EXIT_OK


def main(argv: list[str] | None = None, *, clients: Clients | None = None, console: Console | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.preflight.regional", description=(__doc__ or "").split("\n\n")[0]
    )
    cli.add_stack_arguments(parser)
    parser.add_argument("--profile", help="AWS profile (default: the standard boto3 credential chain)")
    parser.add_argument(
        "--fetch-jwks",
        action="store_true",
        help="also GET ingress.jwt.jwksUri (outside AWS) and check the ALB's JWKS limits; only where the runner may",
    )
    args = parser.parse_args(argv)
    return preflight(
        args.stack,
        stack_file=args.stack_file,
        profile=args.profile,
        clients=clients,
        console=console,
        fetch_jwks=fetch_url if args.fetch_jwks else None,
    )


if __name__ == "__main__":
    cli.run(main)
