"""After ``pulumi up``: prove with read-only calls that the stack serves, and record what offline cannot know.

    python -m tools.verify --stack prod [--outputs outputs.json] [--kubeconfig FILE] [--token T | --token-cmd CMD]
                           [--event-log up-events.json] [--deploy-session NAME] [--wait MINUTES] [--json]
    python -m tools.verify --list

Uses the AWS credentials of the default chain (or ``--profile``) in the stack's region, and the cluster through
``--kubeconfig``, else the stack output ``kubeconfig``, else the default kubeconfig (``aws eks update-kubeconfig``).
``--outputs`` is ``pulumi stack output --json --show-secrets`` (the ALB's name, the VPC). Writes
``verified/<stack>.json``: commit it, and the offline checks use what it observed (router port, allocatable).

Exit codes: 0 every check holds (warnings allowed), 1 a check failed (each with its fix), 2 verify cannot run
(a config error, no credentials, no cluster access), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, PartialCredentialsError, ProfileNotFound
from kubernetes import config as kube_config
from kubernetes.client.rest import ApiException
from kubernetes.config.config_exception import ConfigException
from rich.console import Console
from rich.table import Table
from urllib3.exceptions import HTTPError as Urllib3Error

from components.config import PROJECT, ConfigError, StackConfig
from components.config.stackfile import StackFileError, load_stack_file
from policies import cluster_versions
from tools.preflight.checks import Clients
from tools.preflight.regional import load_config
from tools.preflight.report import NO_CREDENTIALS, STYLES, print_problems
from tools.report import cli

from . import report, traffic
from .base import CHECKS, CannotRun, Check, Context, Http, Kube, Result

EXIT_OK, EXIT_FAIL, EXIT_CANNOT = 0, 1, 2
GROUPS = ("traffic", "operator", "nodes", "governance", "second_door", "report")
RETRY_SECONDS = 30


def ordered() -> list[Check]:
    """The checks in the order of the issue's groups (traffic first)."""
    return sorted(CHECKS, key=lambda c: GROUPS.index(c.run.__module__.rsplit(".", 1)[-1]))


def listing() -> list[dict[str, Any]]:
    return [c.listing() for c in ordered()]


def _kube(kubeconfig: Path | None, context: str | None, outputs: dict[str, Any], hint: str) -> Kube:
    try:
        if kubeconfig is not None:
            api = kube_config.new_client_from_config(config_file=str(kubeconfig), context=context)
        elif outputs.get("kubeconfig"):
            raw = outputs["kubeconfig"]
            doc = json.loads(raw) if isinstance(raw, str) else raw
            api = kube_config.new_client_from_config_dict(doc, context=context)
        else:
            api = kube_config.new_client_from_config(context=context)
    except (ConfigException, OSError, ValueError) as err:
        raise CannotRun(f"no cluster access ({err}): {hint}") from None
    return Kube(api)


def _probe(kube: Kube, hint: str) -> str:
    """The API server's version, or :class:`CannotRun` saying why the cluster cannot be read."""
    try:
        found = kube.get(kube.version.get_code)
    except ApiException as err:
        if err.status in (401, 403):
            raise CannotRun(
                f"the cluster refused the credentials ({err.status}): give this principal an EKS access entry "
                "(AmazonEKSViewPolicy), then rerun"
            ) from None
        raise CannotRun(f"the cluster answered {err.status}: {hint}") from None
    except (Urllib3Error, OSError) as err:
        raise CannotRun(f"cannot reach the cluster's API server ({err.__class__.__name__}): {hint}") from None
    return str((found or {}).get("gitVersion", "?"))


def _token(given: str | None, command: str | None) -> str | None:
    if given or not command:
        return given
    try:
        done = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as err:
        raise CannotRun(f"--token-cmd {command!r} failed: {err}") from None
    token = done.stdout.strip()
    if not token:
        raise CannotRun(f"--token-cmd {command!r} printed no token")
    return token


def run_checks(
    ctx: Context,
    wait_minutes: float = 0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[Result]:
    """Every check once; with ``wait_minutes``, the traffic checks again every 30 s until they hold or time is up."""
    checks = ordered()
    results = {c.id: c.run(ctx) for c in checks}
    deadline = clock() + wait_minutes * 60
    retried = [c for c in checks if c.traffic]
    while any(r.status == "FAIL" for c in retried for r in results[c.id]) and clock() < deadline:
        sleep(RETRY_SECONDS)
        ctx._cache.clear()
        for c in retried:
            results[c.id] = c.run(ctx)
    return [r for c in checks for r in results[c.id]]


def render(results: list[Result], console: Console, title: str) -> None:
    table = Table(title=title)
    for name in ("check", "status", "detail", "what to do", "settles"):
        table.add_column(name, overflow="fold")
    for r in results:
        table.add_row(r.check, f"[{STYLES[r.status]}]{r.status}[/]", r.detail, r.fix, ", ".join(r.settles))
    console.print(table)
    counts = {s: sum(r.status == s for r in results) for s in STYLES}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items()), markup=False)


def _connect(
    cfg: StackConfig,
    *,
    profile: str | None,
    clients: Clients | None,
    kube: Kube | None,
    kube_args: tuple[Path | None, str | None, dict[str, Any]],
    token: str | None,
    token_cmd: str | None,
) -> tuple[Clients, dict[str, Any], Kube, str, str | None]:
    """AWS (the caller's identity), the cluster (its version) and the token, or :class:`CannotRun` saying what to
    configure."""
    kubeconfig, context, outputs = kube_args
    hint = (
        f"run `aws eks update-kubeconfig --name {outputs.get('eksClusterName') or cfg.name_prefix + '-eks'} "
        f"--region {cfg.region}` or pass --kubeconfig"
    )
    try:
        clients = clients or Clients(boto3.Session(profile_name=profile), cfg.region)
        identity = clients.identity
    except (NoCredentialsError, PartialCredentialsError):
        raise CannotRun(NO_CREDENTIALS) from None
    except ProfileNotFound as err:
        raise CannotRun(f"{err}: pass an existing --profile or configure it") from None
    except ClientError as err:
        msg = err.response.get("Error", {}).get("Message", str(err))
        raise CannotRun(f"AWS rejected the credentials: {msg}; refresh them (aws sso login)") from None
    except BotoCoreError as err:
        raise CannotRun(f"could not reach AWS: {err}") from None
    kube = kube or _kube(kubeconfig, context, outputs, hint)
    return clients, identity, kube, _probe(kube, hint), _token(token, token_cmd)


def _cannot(console: Console, as_json: bool, stack: str, why: str) -> int:
    if as_json:
        console.print_json(json.dumps({"stack": stack, "exit": EXIT_CANNOT, "cannotRun": why}))
    else:
        console.print(f"[bold red]verify cannot run[/] for stack {stack}: {why}")
    return EXIT_CANNOT


def verify(
    stack: str,
    *,
    stack_file: Path | None = None,
    profile: str | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
    outputs_file: Path | None = None,
    token: str | None = None,
    token_cmd: str | None = None,
    event_log: Path | None = None,
    deploy_session: str | None = None,
    wait_minutes: float = 0,
    as_json: bool = False,
    write: bool = True,
    clients: Clients | None = None,
    kube: Kube | None = None,
    http: Http | None = None,
    sleep: Callable[[float], None] = time.sleep,
    console: Console | None = None,
) -> int:
    console = console or Console(highlight=False, soft_wrap=True)
    try:
        path = cli.stack_file(stack, stack_file)
        mapping = load_stack_file(path)
        if mapping.get(f"{PROJECT}:role") == "global":
            raise cli.InputError(f"{stack} is a global stack: verify checks regional stacks (verify each member)")
        cfg: StackConfig = load_config(stack, mapping)
        outputs = dict(cli.read_json(outputs_file, "--outputs")) if outputs_file else {}
    except (StackFileError, cli.InputError) as err:
        return print_problems(console, "error", stack, cli.input_problems(err))
    except ConfigError as err:
        return print_problems(console, "config error", stack, [i.render() for i in err.issues])
    try:
        clients, identity, kube, version, the_token = _connect(
            cfg,
            profile=profile,
            clients=clients,
            kube=kube,
            kube_args=(kubeconfig, context, outputs),
            token=token,
            token_cmd=token_cmd,
        )
        today = cluster_versions.today()
    except (CannotRun, ValueError) as err:
        return _cannot(console, as_json, stack, str(err))
    ctx = Context(
        cfg=cfg,
        aws=clients,
        kube=kube,
        http=http or traffic.http_request,
        outputs=outputs,
        token=the_token,
        event_log=event_log,
        deploy_session=deploy_session,
        today=today,
    )
    ctx.facts["kubernetesVersion"] = version
    results = run_checks(ctx, wait_minutes, sleep)
    written = str(report.write_observations(ctx, results)) if write else None
    code = EXIT_FAIL if any(r.status == "FAIL" for r in results) else EXIT_OK
    if as_json:
        doc = {
            "stack": stack,
            "region": cfg.region,
            "caller": identity.get("Arn"),
            "exit": code,
            "verified": written,
            "results": [
                {"check": r.check, "status": r.status, "detail": r.detail, "fix": r.fix, "settles": list(r.settles)}
                for r in results
            ],
        }
        console.print_json(json.dumps(doc))
    else:
        console.print(
            f"verify for stack [bold]{stack}[/] in {cfg.region} as {identity.get('Arn', '?')}, Kubernetes {version}"
        )
        render(results, console, f"verify: stack {stack}")
        if written:
            console.print(f"observations written to {written}: commit it, the offline checks read it", markup=False)
    return code


def main(argv: list[str] | None = None, **injected: Any) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.verify", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--stack", help="stack name: stacks/Pulumi.<stack>.yaml (required unless --list)")
    parser.add_argument("--stack-file", type=Path, help="read the config from this file")
    parser.add_argument("--list", action="store_true", help="print the checks as JSON (id, settles, reads) and exit")
    parser.add_argument("--profile", help="AWS profile (default: the standard boto3 credential chain)")
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig of the stack's cluster")
    parser.add_argument("--context", help="context in the kubeconfig")
    parser.add_argument("--outputs", type=Path, help="pulumi stack output --json --show-secrets, saved to a file")
    parser.add_argument("--token", help="a bearer token for one completion request through the ALB and the gateway")
    parser.add_argument("--token-cmd", help="a command that prints that token")
    parser.add_argument("--event-log", type=Path, help="the file of `pulumi up --event-log FILE`")
    parser.add_argument("--deploy-session", help="role session name pulumi up ran as (CloudTrail denials)")
    parser.add_argument("--wait", type=float, default=0, metavar="N", help="retry the traffic checks for N minutes")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--no-write", action="store_true", help="do not write verified/<stack>.json")
    args = parser.parse_args(argv)
    console = injected.pop("console", None) or Console(highlight=False, soft_wrap=True)
    if args.list:
        console.print_json(json.dumps(listing()))
        return EXIT_OK
    if not args.stack:
        parser.print_usage(sys.stderr)
        print("python -m tools.verify: error: --stack is required (or --list)", file=sys.stderr)
        return EXIT_CANNOT
    return verify(
        args.stack,
        stack_file=args.stack_file,
        profile=args.profile,
        kubeconfig=args.kubeconfig,
        context=args.context,
        outputs_file=args.outputs,
        token=args.token,
        token_cmd=args.token_cmd,
        event_log=args.event_log,
        deploy_session=args.deploy_session,
        wait_minutes=args.wait,
        as_json=args.json,
        write=not args.no_write,
        console=console,
        **injected,
    )


if __name__ == "__main__":
    sys.exit(main())
