"""Offline preview: run the real program for a stack under Pulumi mocks, then the policy pack.

    python -m tools.cli.preview --stack dev [--stack-file FILE] [--json] [--diff BASE.json | --diff-state EXPORT.json]
                            [--out DIR]
                            [--critical-path] [--graph FILE] [--member-outputs FILE]

No AWS credentials, Pulumi CLI or provider plugins are needed. Prints the resource tree (type, name, the
key properties a reviewer checks first), counts by type and every policy result as
``<MANDATORY|ADVISORY> <policy-name> <type>::<name>: <message>``. ``--json`` prints the plan in the shape of
``pulumi preview --json`` (:mod:`tools.plan.writer`); ``--diff BASE.json`` compares it with a saved plan and prints
only what changes (:mod:`tools.plan.diff`); ``--diff-state EXPORT.json`` compares it with a deployed stack's
``pulumi stack export`` (:mod:`tools.plan.state`): what the next ``pulumi up`` would do; ``--out DIR`` writes the plan, the Kubernetes manifests, the
CloudFormation template, every IAM document and every dashboard body.

Every preview also rehearses the deploy (:mod:`tools.rehearse`: does ``pulumi up`` converge?), prints the
capacity table of the HyperPod instance groups (:mod:`tools.plan.capacity_table`) and what cannot be checked offline
(:mod:`tools.report.advisories`); the plan carries them under ``rehearsal``, ``capacity`` and ``advisories`` of its
extension block (``hyperpodInference``, :mod:`tools.plan.writer`). A global stack's members' outputs come from
``--member-outputs FILE``, their stack files or mock values (:mod:`tools.plan.member_outputs`), and the preview says
when mock values were used (``memberOutputs`` in the extension block).

Exit codes: 0 no mandatory violation and the rehearsal converges, 1 mandatory violations or a rehearsal
finding, 2 config error (or unusable arguments).
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from components.config import PROJECT, StackConfig
from components.config.base import ConfigAdvisory
from components.config.loader import parse_stack_mapping
from components.config.stackfile import StackFileError, load_stack_file
from policies.capacity_rules import fit_hook_for
from policies.engine import evaluate
from policies.graph import EKS_ADDON, EKS_COMPONENT, HYPERPOD_CLUSTER, LISTENER_RULES, LISTENERS, REPLICATION_GROUP
from policies.pack import POLICIES
from policies.readiness import load_readiness
from policies.resource_types.tokens import COMPUTE_QUOTA, HELM_RELEASE
from policies.resource_types.tokens import LOAD_BALANCER as ALB
from tools.plan import member_outputs
from tools.plan.capacity_table import capacity_report
from tools.plan.diff import STATEFUL, BasePlanError, check_base, diff_lines, diff_plans, logical_name
from tools.plan.harness import StackRun, run_stack
from tools.plan.mocks import Registration, unwrap_secrets
from tools.plan.render import write_outputs
from tools.plan.state import load_export, remote_component_children, state_plan
from tools.plan.writer import EXTENSION, build_plan, config_error_plan, extension, ordered
from tools.rehearse import rehearse
from tools.rehearse.graph import Graph, create_minutes, write_graph
from tools.report import cli
from tools.report.advisories import advisories_of, advisory_report
from tools.report.console import make_console, progress

EXIT_OK, EXIT_VIOLATIONS, EXIT_CONFIG = 0, 1, 2
GRAPH_SUFFIXES = {".dot", ".gv", ".mmd", ".md", ".svg", ".png"}

_ENDPOINT_KINDS = ("InferenceEndpointConfig", "JumpStartModel")


def _endpoint_properties(inputs: dict[str, Any]) -> str:
    labels = (inputs.get("metadata") or {}).get("labels") or {}
    spec = inputs.get("spec") or {}
    routing_spec = spec.get("intelligentRoutingSpec") or {}
    if (spec.get("inferenceGateway") or {}).get("enabled"):
        routing = "routing: inference gateway"
    elif routing_spec.get("enabled"):
        routing = f"routing: {routing_spec.get('routingStrategy', 'default')}"
    else:
        routing = "routing: none"
    pd = spec.get("pdSpec") or {}
    if pd:
        replicas = (
            f"prefill x{(pd.get('prefillSpec') or {}).get('replicas', '?')} "
            f"+ decode x{(pd.get('decodingSpec') or {}).get('replicas', '?')}"
        )
    else:
        replicas = f"replicas {spec['replicas']}" if "replicas" in spec else "replicas: CRD default"
    instance = spec.get("instanceType") or (spec.get("server") or {}).get("instanceType") or "?"
    return f"{labels.get('hyperpod-inference/engine', '?')}, {routing}, {replicas}, {instance}"


def _hyperpod_properties(i: dict[str, Any]) -> str:
    return ", ".join(
        f"{g.get('instanceGroupName')}: {g.get('instanceType')} x{g.get('instanceCount')}"
        for g in i.get("instanceGroups") or []
    )


def _eks_properties(i: dict[str, Any]) -> str:
    pins = (
        ("vpc-cni", "vpcCniOptions", "addonVersion"),
        ("kube-proxy", "kubeProxyAddonOptions", "version"),
        ("coredns", "corednsAddonOptions", "version"),
    )
    core = [f"{name} {(i.get(key) or {}).get(field)}" for name, key, field in pins if (i.get(key) or {}).get(field)]
    access = "public+private" if i.get("endpointPublicAccess") else "private"
    return f"Kubernetes {i.get('version')}, API endpoint {access}" + (f"; {', '.join(core)}" if core else "")


def _helm_properties(i: dict[str, Any]) -> str:
    version = i.get("version")
    return f"chart {Path(str(i.get('chart'))).name}{' ' + version if version else ''} in {i.get('namespace')}"


def _redis_properties(i: dict[str, Any]) -> str:
    n = int(i.get("numCacheClusters") or 1)
    return (
        f"{i.get('engine')} {i.get('engineVersion')}, {i.get('nodeType')} x{n} "
        f"(1 primary + {n - 1} replica{'s' if n != 2 else ''})"
    )


def _action_chain(actions: Any) -> str:
    """A listener's or rule's actions in the order the ALB runs them, with what authenticates: the reviewer sees
    at a glance which routes check a JWT (its issuer and claims), send browsers to a login page, or neither."""
    listed = [a for a in actions or [] if isinstance(a, dict)]
    steps = []
    for action in sorted(listed, key=lambda a: a.get("order") or 0):
        kind = str(action.get("type"))
        if kind == "jwt-validation":
            jwt = action.get("jwtValidation") or {}
            claims = ", ".join(str(c.get("name")) for c in jwt.get("additionalClaims") or [])
            steps.append(f"jwt-validation (iss {jwt.get('issuer')}{'; ' + claims if claims else ''})")
        elif kind.startswith("authenticate-"):
            block = action.get("authenticateOidc") or action.get("authenticateCognito") or {}
            steps.append(f"{kind} (unauthenticated: {block.get('onUnauthenticatedRequest', 'authenticate')})")
        else:
            steps.append(kind)
    return " -> ".join(steps)


def _rule_properties(i: dict[str, Any]) -> str:
    matched = [
        value
        for condition in i.get("conditions") or []
        for key in ("hostHeader", "pathPattern")
        for value in (condition.get(key) or {}).get("values") or []
    ]
    return f"{' '.join(matched) or '*'}: {_action_chain(i.get('actions'))}"


_KEY_PROPERTIES: dict[str, Callable[[dict[str, Any]], str]] = {
    **dict.fromkeys(
        LISTENERS, lambda i: f"{i.get('protocol')} {i.get('port')}: {_action_chain(i.get('defaultActions'))}"
    ),
    **dict.fromkeys(LISTENER_RULES, _rule_properties),
    HYPERPOD_CLUSTER: _hyperpod_properties,
    EKS_ADDON: lambda i: f"{i.get('addonName')} {i.get('addonVersion', '(default version)')}",
    EKS_COMPONENT: _eks_properties,
    HELM_RELEASE: _helm_properties,
    ALB: lambda i: "internal" if i.get("internal") else "internet-facing",
    REPLICATION_GROUP: _redis_properties,
}


def _quota_properties(i: dict[str, Any]) -> str:
    """A team's quota: team, per-instance-type amounts, sharing and preemption (task governance, issue 39)."""
    cfg, target = i.get("computeQuotaConfig") or {}, i.get("computeQuotaTarget") or {}
    amounts = ", ".join(
        f"{r.get('instanceType')}: "
        + " ".join(f"{k}={r[k]}" for k in ("accelerators", "count", "vCpu", "memoryInGiB") if r.get(k) is not None)
        for r in cfg.get("computeQuotaResources") or []
    )
    sharing = cfg.get("resourceSharingConfig") or {}
    limit = f" {sharing['borrowLimit']}%" if sharing.get("borrowLimit") is not None else ""
    return (
        f"team {target.get('teamName')}: {amounts}; {sharing.get('strategy')}{limit}; "
        f"preempt {cfg.get('preemptTeamTasks')}"
    )


def _scheduler_properties(i: dict[str, Any]) -> str:
    """The cluster policy: priority classes with weights, fair share, idle resource sharing."""
    sc = i.get("schedulerConfig") or {}
    classes = " ".join(f"{c.get('Name')}={c.get('Weight')}" for c in sc.get("PriorityClasses") or [])
    return f"{classes}; FairShare {sc.get('FairShare')}; IdleResourceSharing {sc.get('IdleResourceSharing')}"


def key_properties(reg: Registration) -> str:
    """The properties a reviewer checks first, for the resource types that have them ("" otherwise)."""
    inputs = unwrap_secrets(reg.inputs)
    if reg.type == COMPUTE_QUOTA:
        return _quota_properties(inputs)
    if inputs.get("resourceKind") == "hyperpod:ClusterSchedulerConfig":
        return _scheduler_properties(inputs)
    if reg.type.startswith("kubernetes:inference.sagemaker.aws.amazon.com/") and reg.type.endswith(_ENDPOINT_KINDS):
        return _endpoint_properties(inputs)
    fn = _KEY_PROPERTIES.get(reg.type)
    return fn(inputs) if fn is not None else ""


def _label(reg: Registration) -> Text:
    label = Text.from_markup(f"[cyan]{reg.type}[/] {reg.name}", overflow="fold")
    props = key_properties(reg)
    if props:
        label.append(f"  [{props}]", style="green")
    if reg.protect:
        label.append(" (protected)", style="yellow")
    return label


def _tree(run: StackRun) -> Tree:
    root = Tree(f"[bold]pulumi:pulumi:Stack[/] hyperpod-inference-{run.stack}")
    nodes: dict[str, Tree] = {}
    for reg in ordered(run.registrations):  # parents come before their children, children sorted
        parent = nodes.get(reg.parent or "", root)
        nodes[reg.urn] = parent.add(_label(reg))
    return root


def _environment(mapping: dict[str, Any]) -> str:
    env = mapping.get("hyperpod-inference:environment")
    return env if isinstance(env, str) else "dev"


def _region(mapping: dict[str, Any]) -> str | None:
    region = mapping.get("aws:region")
    return region if isinstance(region, str) else None


def _fail(
    console: Console, as_json: bool, stack: str, issues: list[tuple[str, str, str]], heading: str = "config error"
) -> int:
    """Print a config error (as JSON with ``--json``) and return exit code 2."""
    if as_json:
        print(json.dumps(config_error_plan(stack, issues), indent=2, sort_keys=True))
    else:
        console.print(f"[bold red]{heading}[/] in stack {stack}:")
        for _, _, text in issues:
            console.print(f"  {text}", markup=False, soft_wrap=True)  # one problem, one line
    line = cli.verdict(stack, exit_code=EXIT_CONFIG, errors=len(issues), what="nothing registered")
    if as_json:
        print(line, file=sys.stderr)
    else:
        console.print(line, markup=False, style="bold red")
    return EXIT_CONFIG


def _argument_error(console: Console, as_json: bool, stack: str, message: str) -> int:
    return _fail(console, as_json, stack, [("", message, message)], heading="error")


def _graph_problem(graph: Path) -> str | None:
    if graph.suffix not in GRAPH_SUFFIXES:
        return f"--graph {graph}: unknown format {graph.suffix or '(none)'}; use one of {', '.join(sorted(GRAPH_SUFFIXES))}"
    if graph.suffix in (".svg", ".png") and shutil.which("dot") is None:
        return (
            f"--graph {graph}: {graph.suffix} needs Graphviz `dot` on PATH (e.g. `apt-get install graphviz`); "
            "without it write FILE.dot or FILE.mmd (Mermaid)"
        )
    return None


def _write_graph(run: StackRun, graph: Path) -> list[Path]:
    if graph.suffix != ".png":
        return write_graph(run.registrations, graph)
    graph.parent.mkdir(parents=True, exist_ok=True)
    dot = shutil.which("dot")
    assert dot is not None  # checked before the run
    subprocess.run(
        [dot, "-Tpng", "-o", str(graph)], input=Graph.build(run.registrations).to_dot(), text=True, check=True
    )
    return [graph]


def _load_base(path: Path, stack: str) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BasePlanError(f"--diff {path}: no such file") from None
    except json.JSONDecodeError as err:
        raise BasePlanError(f"--diff {path}: not JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    return check_base(raw, f"--diff {path}", stack=stack)


def allow_replacement_check(
    mapping: dict[str, Any], run: StackRun, base: dict[str, Any] | None
) -> tuple[list[tuple[str, str, str]], list[ConfigAdvisory]]:
    """``allowReplacement`` names the stateful resources a change may replace or delete: each must be one this run
    registers, or (with ``--diff``) one the base plan has. Without ``--diff`` a name this run does not register may
    be a resource the change deletes: an advisory, decided by ``--diff``."""
    names = mapping.get(f"{PROJECT}:allowReplacement") or []
    here = {r.name for r in run.registrations if r.type in STATEFUL}
    before = {
        logical_name(str((st.get("newState") or st.get("oldState") or {}).get("urn", "")))
        for st in (base or {}).get("steps", [])
        if (st.get("newState") or st.get("oldState") or {}).get("type") in STATEFUL
    }
    known = sorted(here | before)
    issues: list[tuple[str, str, str]] = []
    advisories: list[ConfigAdvisory] = []
    for i, name in enumerate(names if isinstance(names, list) else []):
        if name in here or name in before:
            continue
        key = f"allowReplacement[{i}]"
        nearest = [n for n in known if n.startswith(str(name)[:4])]
        message = (
            f"{name!r} names no stateful resource of this stack; its stateful resources: {', '.join(known) or 'none'}"
            + (f" (did you mean {nearest[0]}?)" if nearest else "")
        )
        if base is not None:
            issues.append((key, message, f"{PROJECT}:{key}: {message}"))
        else:
            advisories.append(
                ConfigAdvisory(
                    key,
                    f"{message}; fine only if it is a resource this change deletes",
                    "allow-replacement-names",
                    "python -m tools.cli.preview --diff BASE.json (the base plan's resources)",
                )
            )
    return issues, advisories


def preview(
    stack: str,
    *,
    out: Path | None = None,
    as_json: bool = False,
    mapping: dict[str, Any] | None = None,
    console: Console | None = None,
    critical_path: bool = False,
    graph: Path | None = None,
    diff: Path | None = None,
    diff_state: Path | None = None,
    stack_file: Path | None = None,
    member_outputs_file: Path | None = None,
) -> int:
    """Run the preview and print it; returns the exit code."""
    console = console or make_console()
    try:
        if mapping is None:
            mapping = load_stack_file(cli.stack_file(stack, stack_file))
        members = member_outputs.for_stack(stack, mapping, member_outputs_file)
        if graph is not None and (problem := _graph_problem(graph)) is not None:
            raise cli.InputError(problem)
        if out is not None:
            cli.output_dir(out)
        if graph is not None:
            cli.output_dir(graph.parent, "--graph")
            if graph.is_dir():
                raise cli.InputError(f"--graph {graph}: is a folder; name a file such as {graph / 'graph.mmd'}")
        if diff is not None and diff_state is not None:
            raise cli.InputError("--diff and --diff-state: give one base, a saved plan or a stack export")
        base = _load_base(diff, stack) if diff is not None else None
        if diff_state is not None:
            base = state_plan(load_export(diff_state), f"--diff-state {diff_state}", stack=stack)
    except StackFileError as err:
        return _fail(console, as_json, stack, [("", p, p) for p in err.problems])
    except (cli.InputError, BasePlanError) as err:
        return _argument_error(console, as_json, stack, str(err))

    started = time.monotonic_ns()
    with progress(f"{stack}: running the program under Pulumi mocks") as step:
        run = run_stack(stack, mapping, stack_outputs=member_outputs.stack_outputs(members) if members else None)
        notice = member_outputs.notice(members) if members else None
        if run.config_error is not None:
            issues = [(i.path, i.message, i.render()) for i in run.config_error.issues]
            if notice is not None:
                issues.append(("", notice, notice))
            return _fail(console, as_json, stack, issues)
        replacement_issues, replacement_advisories = allow_replacement_check(mapping, run, base)
        if replacement_issues:
            return _fail(console, as_json, stack, replacement_issues)
        step(f"{stack}: the policy pack, capacity and the deploy rehearsal over {len(run.registrations)} resources")
        return _report(
            stack,
            mapping,
            run,
            base,
            replacement_advisories,
            notice=notice,
            console=console,
            as_json=as_json,
            out=out,
            graph=graph,
            diff=diff,
            diff_state=diff_state,
            started=started,
            critical_path=critical_path,
            members=members,
        )


def _report(
    stack: str,
    mapping: dict[str, Any],
    run: StackRun,
    base: dict[str, Any] | None,
    replacement_advisories: list[ConfigAdvisory],
    *,
    notice: str | None,
    console: Console,
    as_json: bool,
    out: Path | None,
    graph: Path | None,
    diff: Path | None,
    diff_state: Path | None,
    started: int,
    critical_path: bool,
    members: Any,
) -> int:
    """Everything after a run that registered: policies, plan, rehearsal, capacity, outputs, then the verdict."""
    environment, region = _environment(mapping), _region(mapping)
    results = evaluate(POLICIES, run.registrations, environment)
    plan = build_plan(
        run, results, environment=environment, region=region, mapping=mapping, duration_ns=time.monotonic_ns() - started
    )
    if base is not None:
        allowed = mapping.get("hyperpod-inference:allowReplacement") or []
        if diff_state is not None:
            plan = diff_plans(
                base,
                plan,
                allow_replacement=allowed,
                known_base=True,
                not_compared=remote_component_children(base, plan),
            )
        else:
            plan = diff_plans(base, plan, allow_replacement=allowed)
    ext = plan[EXTENSION]
    mandatory = [r for r in ext["policyResults"] if r["enforcementLevel"] == "mandatory"]
    # Mocks prove wiring, not convergence: rehearse the deploy on the same graph, and size the endpoints
    # against the instance groups (both are cheap next to the mock run itself: BENCHMARKS.md).
    fit = fit_hook_for([(r.type, unwrap_secrets(r.inputs)) for r in run.registrations])
    rehearsal = rehearse(run, mapping=mapping, environment=environment, fit=fit)
    capacity = capacity_report(run.registrations)
    cfg = parse_stack_mapping(stack, mapping)
    advisories = advisory_report(
        [*(advisories_of(cfg) if isinstance(cfg, StackConfig) else []), *replacement_advisories]
    )
    ext["rehearsal"] = rehearsal.to_json()
    ext["capacity"] = capacity.data
    ext["advisories"] = advisories.data
    if members:
        ext["memberOutputs"] = [{"stack": m.stack, "source": m.source, "mock": m.mock} for m in members]

    written: list[Path] = []
    if out is not None:
        written = write_outputs(run.registrations, out, region or "us-east-1")
        from tools.cli.deployer_policy import write_deployer_policy  # only --out pays for the SAR data

        written += write_deployer_policy(
            run.registrations, run.mocks.calls, out, stack=stack, region=region or "us-east-1"
        )
        plan_path = out / "plan.json"
        plan_path.write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.insert(0, plan_path)
    if graph is not None:
        written += _write_graph(run, graph)

    if as_json:
        print(json.dumps(plan, indent=2, sort_keys=True))
    else:
        if notice:
            console.print(notice, style="bold yellow", soft_wrap=True, markup=False)
        _print_human(
            console,
            run,
            plan,
            base_path=diff or diff_state,
            critical_path=critical_path,
            # a diff stays short: only the rehearsal's verdict; the full preview has the tables
            sections=[rehearsal.brief()]
            if base is not None
            else [capacity.renderable, advisories.renderable, rehearsal],
            written=written,
        )
    code = EXIT_VIOLATIONS if mandatory or not rehearsal.converges else EXIT_OK
    line = cli.verdict(
        stack,
        exit_code=code,
        resources=len(run.registrations),
        errors=len(mandatory) + len(rehearsal.findings),
        advisories=len(ext["policyResults"]) - len(mandatory) + len(advisories.data),
        converges=rehearsal.converges,
    )
    if as_json:
        print(line, file=sys.stderr)  # stdout stays one JSON document
    else:
        console.print(line, markup=False, style="bold green" if code == EXIT_OK else "bold red")
    return code


def _policy_line(r: dict[str, Any]) -> str:
    return f"{r['enforcementLevel'].upper()} {r['policyName']} {r['resourceType']}::{r['resourceName']}: {r['message']}"


def _print_human(
    console: Console,
    run: StackRun,
    plan: dict[str, Any],
    *,
    base_path: Path | None,
    critical_path: bool,
    sections: list[RenderableType],
    written: list[Path],
) -> None:
    results = extension(plan)["policyResults"]
    mandatory = [r for r in results if r["enforcementLevel"] == "mandatory"]
    if base_path is not None:
        console.print(f"[bold]diff[/] of stack {run.stack} against {base_path}:")
        ext = extension(plan)
        if ext.get("secretsNotCompared"):
            console.print(
                f"{ext['secretsNotCompared']} secret input(s) not compared (offline a secret is a placeholder; "
                "`pulumi preview` with the stack's secrets provider compares them)",
                style="yellow",
                markup=False,
            )
        if ext.get("notComparedOffline"):
            console.print(
                f"{len(ext['notComparedOffline'])} resource(s) of remote components not compared (the mocks register "
                "no children of a remote component; `pulumi preview` shows them)",
                style="yellow",
                markup=False,
            )
        for line in diff_lines(plan):
            style = {"+ ": "green", "~ ": "yellow", "+-": "red", "+?": "red", "- ": "red"}.get(line[:2], "")
            console.print(Text(line, style=style), soft_wrap=True)  # one finding, one line: grep finds it
    else:
        console.print(_tree(run))
        table = Table(title=f"{len(run.registrations)} resources", show_lines=False)
        table.add_column("type")
        table.add_column("count", justify="right")
        for typ, n in sorted(Counter(r.type for r in run.registrations).items()):
            table.add_row(typ, str(n))
        console.print(table)
        if run.outputs:
            console.print("[bold]stack outputs[/] (mock values):")
            for key, value in sorted(run.outputs.items()):
                shown = "[secret]" if key in run.secret_outputs else json.dumps(value, default=str)
                console.print(f"  {key}: {shown}", markup=False)
    if results:
        console.print(
            f"[bold]policy results[/] ({len(mandatory)} mandatory, {len(results) - len(mandatory)} advisory):"
        )
        said: dict[tuple[str, str], str] = {}
        for r in results:
            style = "red" if r["enforcementLevel"] == "mandatory" else "yellow"
            first = said.setdefault((r["policyName"], r["message"]), r["resourceName"])
            # a long explanation is said once; the same finding on another resource refers to it (--json: in full)
            line = (
                _policy_line(r) if first == r["resourceName"] else _policy_line({**r, "message": f"as {first} above"})
            )
            console.print(Text(line, style=style), soft_wrap=True)  # one finding, one line: grep finds it
    else:
        console.print(f"[green]policy pack: {len(POLICIES)} policies, no violations[/]")
    if critical_path and base_path is not None:  # the full preview's rehearsal section prints the critical path
        console.print(_critical_path_table(run))
    for section in sections:
        console.print(section)
    for path in written:
        console.print(f"wrote {path}", markup=False)


def _critical_path_table(run: StackRun) -> Table:
    total, chain = Graph.build(run.registrations).critical_path()
    table = Table(title=f"deploy critical path: ~{total:.0f} min (typical create durations, policies/readiness.yaml)")
    table.add_column("#", justify="right")
    table.add_column("resource")
    table.add_column("type")
    table.add_column("min", justify="right")
    for i, reg in enumerate(chain, 1):
        known = not reg.custom or load_readiness().entry_for(reg.type, reg.inputs).create_minutes is not None
        table.add_row(str(i), reg.name, reg.type, f"{create_minutes(reg):g}" if known else "unknown")
    return table


def main(argv: list[str] | None = None) -> int:
    # The SDK modules just imported hold ~1M long-lived objects; without freezing them every gen-2
    # collection during the run re-scans them all (profiled: ~25% of a 200-endpoint preview). The run
    # itself allocates many short-lived protobuf/asyncio objects and frees them by reference counting, so
    # a larger young generation avoids most collections (per-endpoint cost 9.3 -> 7.2 ms, measured).
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 50)
    parser = argparse.ArgumentParser(prog="python -m tools.cli.preview", description=__doc__.split("\n\n")[0])
    cli.add_stack_arguments(parser)
    parser.add_argument(
        "--out", type=Path, help="write plan.json, Kubernetes YAML, CloudFormation, IAM documents, dashboards here"
    )
    parser.add_argument("--json", action="store_true", help="print the plan (pulumi preview --json shape)")
    parser.add_argument("--diff", type=Path, metavar="BASE.json", help="compare with a saved plan; print only changes")
    parser.add_argument(
        "--diff-state",
        type=Path,
        metavar="EXPORT.json",
        help="compare with a deployed stack's `pulumi stack export`: what the next `pulumi up` would do",
    )
    parser.add_argument("--critical-path", action="store_true", help="print the longest chain of typical create times")
    parser.add_argument(
        "--graph", type=Path, help="write the resource graph: FILE.dot, FILE.mmd (Mermaid), FILE.svg/.png (Graphviz)"
    )
    parser.add_argument(
        member_outputs.FLAG,
        type=Path,
        metavar="FILE",
        help='a global stack\'s members: JSON {"<member stack>": <its globalGatewayMember>}',
    )
    args = parser.parse_args(argv)
    return preview(
        args.stack,
        stack_file=args.stack_file,
        out=args.out,
        as_json=args.json,
        critical_path=args.critical_path,
        graph=args.graph,
        diff=args.diff,
        diff_state=args.diff_state,
        member_outputs_file=args.member_outputs,
    )


if __name__ == "__main__":
    cli.run(main)
