"""Check 5, what a run observed: the ``pulumi up --event-log`` file, the deploy role's denials, WAF, add-on logs; and
``verified/<stack>.json``, which the offline checks read back (``components/config/observed.py``).

The event log is the Pulumi engine's event stream, one JSON ``EngineEvent`` per line, as defined in
pulumi/pulumi ``sdk/go/common/apitype/events.go`` (read at 0accfeec; the v3.272.0 CLI writes the same types):
``sequence``, ``timestamp`` (Unix seconds) and exactly one event field; a step starts with
``resourcePreEvent.metadata`` (``op``, ``urn``, ``type``; ``planning: true`` during a preview) and ends with
``resOutputsEvent`` or ``resOpFailedEvent`` carrying the same ``metadata``; ``diagnosticEvent`` (``urn``,
``message``, ``severity``) says why a step failed. A step's duration is its end minus its start.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from components.aws_calls import DENIED_CODES
from components.config import observed
from policies.resource_types.tokens import AMP_WORKSPACE, HYPERPOD_CLUSTER
from tools.preflight.checks import call, listed

from .base import Context, Result, check, condition
from .nodes import group_nodes

# Checklist "after:" rows no read-only command can settle, and why (docs/first-deploy.md lists them).
BY_HAND: dict[str, str] = {
    "alb-create-state": "which state the provider polls for is in its debug log of the create (`pulumi up --debug`), "
    "not in any API afterwards",
    "nat-create-state": "the same: the provider's wait during the create, seen only in its debug log",
    "alb-jwt-claim-values": "needs two tokens the IdP issues with chosen claim values; verify sends only the token "
    "it is given",
    "deep-health-check-scheduling": "visible only while the HyperPod create runs (watch the health label then); "
    "afterwards no API keeps the label's history",
    "hyperpod-nvme-mount": "needs a shell on the node (`kubectl debug node/...`): verify only reads the APIs",
    "lmcache-url-expansion": "needs `kubectl exec` into a worker to read the expanded variable: not a read-only call",
    "global-gateway-iam-propagation": "the first up of the global stack, by whoever watches it",
    "global-gateway-progress-display": "how the CLI shows progress lines: a person watching the global stack's up",
    "governance-namespace-lifecycle": "needs a destroy (of a test stack): verify reads a stack that is up",
    "global-gateway-token-forwarding": "an invoke through the Global Inference Gateway (SigV4, another stack): "
    "verify checks regional stacks",
}


@dataclass(frozen=True)
class Step:
    urn: str
    type: str
    op: str
    seconds: int | None  # None: never finished in the log
    failed: bool
    messages: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


class EventLogError(ValueError):
    pass


def parse_event_log(lines: Iterable[str], source: str = "event log") -> list[Step]:
    """The steps of a ``pulumi up --event-log`` file (preview steps, ``planning: true``, are left out)."""
    started: dict[str, tuple[int, str, str]] = {}
    ended: dict[str, tuple[int, bool]] = {}
    messages: dict[str, list[str]] = {}
    order: list[str] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as err:
            raise EventLogError(f"{source}:{n}: not an engine event ({err.msg})") from None
        if not isinstance(event, dict) or "timestamp" not in event:
            raise EventLogError(f"{source}:{n}: not an engine event (no timestamp)")
        at = int(event["timestamp"])
        if (pre := event.get("resourcePreEvent")) and not pre.get("planning"):
            meta = pre.get("metadata") or {}
            urn = str(meta.get("urn"))
            if urn not in started:
                started[urn] = (at, str(meta.get("op")), str(meta.get("type")))
                order.append(urn)
        for key, failed in (("resOutputsEvent", False), ("resOpFailedEvent", True)):
            if (end := event.get(key)) and not end.get("planning"):
                urn = str((end.get("metadata") or {}).get("urn"))
                ended[urn] = (at, failed)
        if (diag := event.get("diagnosticEvent")) and diag.get("urn") and diag.get("severity") == "error":
            messages.setdefault(str(diag["urn"]), []).append(str(diag.get("message", "")).strip())
    steps = []
    for urn in order:
        at, op, typ = started[urn]
        end = ended.get(urn)
        steps.append(
            Step(urn, typ, op, end[0] - at if end else None, bool(end and end[1]), tuple(messages.get(urn, ())))
        )
    return steps


ENDPOINT_TYPES = re.compile(r"^kubernetes:inference\.sagemaker\.aws\.amazon\.com/v1:")


def _ready_time(node: dict[str, Any]) -> datetime | None:
    ready = condition(node, "Ready")
    stamp = ready.get("lastTransitionTime") if ready else None
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None


@check(
    "create-times",
    "the create times and failures of `pulumi up --event-log`",
    settles=(
        "amp-create-time",
        "hyperpod-node-join-time",
        "hyperpod-create-completion",
        "operator-webhook-ready",
        "lifecycle-failure-visibility",
        "elasticache-user-wait",
        "governance-policy-create-time",
    ),
    reads=("the --event-log file", "core/v1 nodes list"),
)
def create_times(ctx: Context) -> list[Result]:
    if ctx.event_log is None:
        return [
            Result(
                "create-times",
                "SKIP",
                "no event log",
                "pass --event-log FILE, the file of `pulumi up --event-log FILE`",
            )
        ]
    try:
        steps = parse_event_log(ctx.event_log.read_text(encoding="utf-8").splitlines(), str(ctx.event_log))
    except OSError as err:
        return [Result("create-times", "FAIL", f"--event-log {ctx.event_log}: {err.strerror}", "pass an existing file")]
    except EventLogError as err:
        return [Result("create-times", "FAIL", str(err), "pass the file `pulumi up --event-log FILE` wrote")]
    creates = [s for s in steps if s.op in ("create", "create-replacement")]
    ctx.facts["createTimes"] = {s.name: {"type": s.type, "seconds": s.seconds, "failed": s.failed} for s in creates}
    out = []
    settled: list[str] = []
    for s in creates:
        if s.failed:
            if s.type == HYPERPOD_CLUSTER:
                settled.append("lifecycle-failure-visibility")
            if ENDPOINT_TYPES.match(s.type):
                settled.append("operator-webhook-ready")
            out.append(
                Result(
                    "create-times",
                    "FAIL",
                    f"{s.name} ({s.type}) failed to create: {' | '.join(s.messages) or 'no diagnostic'}",
                    "fix what the message names, then pulumi up again",
                    tuple(settled),
                )
            )
    amp = [s for s in creates if s.type == AMP_WORKSPACE and s.seconds is not None]
    if amp:
        settled.append("amp-create-time")
    elasticache = [s for s in creates if s.type.startswith("aws:elasticache/user") and s.seconds is not None]
    if elasticache:
        settled.append("elasticache-user-wait")
    policy = [s for s in creates if s.name.endswith("governance-policy") and s.seconds is not None]
    if policy:  # the cluster scheduler config (components/cluster_scheduler_config.py) waits for Created
        settled.append("governance-policy-create-time")
    waits = [s for s in creates if "nodewait" in s.name.replace("-", "").lower() and s.seconds is not None]
    if waits:
        settled.append("hyperpod-node-join-time")
    endpoints_ok = [s for s in creates if ENDPOINT_TYPES.match(s.type) and not s.failed]
    if endpoints_ok:
        settled.append("operator-webhook-ready")
    hyperpod = next((s for s in creates if s.type == HYPERPOD_CLUSTER and not s.failed and s.seconds), None)
    completion = ""
    if hyperpod is not None:
        late = [
            n["metadata"]["name"]
            for g in ctx.cfg.cluster.instance_groups
            for n in group_nodes(ctx, g.name)
            if (t := _ready_time(n)) is not None and t > _finished_at(ctx.event_log, hyperpod)
        ]
        ctx.facts["hyperpodCreate"] = {"seconds": hyperpod.seconds, "nodesReadyAfterIt": late}
        completion = (
            f"; the HyperPod create ({hyperpod.seconds} s) returned before {len(late)} node(s) were Ready"
            if late
            else f"; every node was Ready when the HyperPod create ({hyperpod.seconds} s) returned"
        )
        settled.append("hyperpod-create-completion")
    shown = ", ".join(f"{s.name} {s.seconds} s" for s in [*amp, *elasticache, *policy, *waits])
    out.append(
        Result(
            "create-times",
            "PASS" if not any(r.status == "FAIL" for r in out) else "WARN",
            f"{len(creates)} creates recorded{': ' + shown if shown else ''}{completion}",
            "",
            tuple(dict.fromkeys(settled)),
        )
    )
    return out


def _finished_at(path: Path | None, step: Step) -> datetime:
    """When ``step`` ended, as a UTC time (the log's ``timestamp`` of its resOutputsEvent)."""
    assert path is not None
    for line in path.read_text(encoding="utf-8").splitlines():
        if step.urn in line and "resOutputsEvent" in line:
            event = json.loads(line)
            if (event.get("resOutputsEvent") or {}).get("metadata", {}).get("urn") == step.urn:
                return datetime.fromtimestamp(int(event["timestamp"]), UTC)
    return datetime.max.replace(tzinfo=UTC)


@check(
    "deploy-role-denials",
    "calls of pulumi up the deploy role was denied",
    settles=("deployer-policy-complete",),
    reads=("cloudtrail:LookupEvents",),
)
def deploy_role_denials(ctx: Context) -> list[Result]:
    if not ctx.deploy_session:
        return [
            Result(
                "deploy-role-denials",
                "SKIP",
                "no deploy session named",
                "pass --deploy-session NAME (the role session name pulumi up ran as)",
            )
        ]
    trail = ctx.aws("cloudtrail")
    denied: dict[str, int] = {}
    lookup = [{"AttributeKey": "Username", "AttributeValue": ctx.deploy_session}]
    for event in listed(trail, "lookup_events", "Events", LookupAttributes=lookup, MaxResults=50):
        body = json.loads(event.get("CloudTrailEvent") or "{}")
        if body.get("errorCode") in DENIED_CODES:
            action = f"{str(body.get('eventSource', '')).split('.')[0]}:{body.get('eventName')}"
            denied[action] = denied.get(action, 0) + 1
    ctx.facts["deployRoleDenied"] = denied
    if denied:
        return [
            Result(
                "deploy-role-denials",
                "FAIL",
                "denied: " + ", ".join(f"{a} ({n}x)" for a, n in sorted(denied.items())),
                "add these actions to the `deploy:` of the resource-type records (policies/resource_types) for the types that call them, then "
                "regenerate the deploy policy (tools.cli.preview --out)",
                ("deployer-policy-complete",),
            )
        ]
    return [
        Result(
            "deploy-role-denials",
            "PASS",
            f"no AccessDenied for session {ctx.deploy_session} in CloudTrail's 90 days",
            "",
            ("deployer-policy-complete",),
        )
    ]


def _front_door_alb(ctx: Context) -> dict[str, Any] | None:
    """The front door's load balancer: the one whose DNS name is the stack output ``frontDoorAlbDnsName``."""
    dns = str(ctx.outputs.get("frontDoorAlbDnsName") or "").lower().rstrip(".")
    lbs = listed(ctx.aws("elbv2"), "describe_load_balancers", "LoadBalancers")
    return next((lb for lb in lbs if str(lb.get("DNSName", "")).lower() == dns), None)


@check(
    "web-acl",
    "the WebACL association and its log group's resource policy",
    settles=("waf-association-propagation", "waf-log-resource-policy"),
    reads=("elasticloadbalancing:DescribeLoadBalancers", "wafv2:GetWebACLForResource", "logs:DescribeResourcePolicies"),
)
def web_acl(ctx: Context) -> list[Result]:
    ing = ctx.cfg.ingress
    if not ing.enabled or not (ing.waf.enabled or ing.waf_web_acl_arn):
        return [Result("web-acl", "SKIP", "no WebACL on the front door")]
    alb = _front_door_alb(ctx)
    if alb is None:
        return [Result("web-acl", "SKIP", "the front door's ALB is unknown", "pass --outputs FILE")]
    acl = call(ctx.aws("wafv2"), "get_web_acl_for_resource", ResourceArn=alb["LoadBalancerArn"]).get("WebACL")
    out = []
    if not acl:
        out.append(
            Result(
                "web-acl",
                "FAIL",
                f"no WebACL is associated with {alb['LoadBalancerName']}",
                "run pulumi up again (the association is part of the stack)",
                ("waf-association-propagation",),
            )
        )
    else:
        out.append(
            Result(
                "web-acl",
                "PASS",
                f"{acl.get('Name')} protects {alb['LoadBalancerName']}",
                "",
                ("waf-association-propagation",),
            )
        )
    if ing.waf.enabled:
        policies = call(ctx.aws("logs"), "describe_resource_policies").get("resourcePolicies") or []
        delivers = [p for p in policies if "delivery.logs.amazonaws.com" in str(p.get("policyDocument"))]
        ctx.facts["wafLogPolicies"] = [p.get("policyName") for p in delivers]
        out.append(
            Result(
                "web-acl",
                "PASS" if delivers else "FAIL",
                f"log delivery resource policy: {', '.join(str(p.get('policyName')) for p in delivers) or 'none'}",
                "" if delivers else "WAF did not write the aws-waf-logs- log group's resource policy: the stack must",
                ("waf-log-resource-policy",),
            )
        )
    return out


@check(
    "alb-access-logs",
    "the front door's access logs in their bucket",
    reads=(
        "elasticloadbalancing:DescribeLoadBalancers",
        "elasticloadbalancing:DescribeLoadBalancerAttributes",
        "s3:ListBucket",
    ),
)
def alb_access_logs(ctx: Context) -> list[Result]:
    """ELB writes a log object under ``<prefix>/AWSLogs/<account>/`` only if the bucket policy admits its log writer
    (the Region's documented one, components/access_logs.py): one object proves it does."""
    if not ctx.cfg.ingress.enabled:
        return [Result("alb-access-logs", "SKIP", "the stack has no front door")]
    alb = _front_door_alb(ctx)
    if alb is None:
        return [Result("alb-access-logs", "SKIP", "the front door's ALB is unknown", "pass --outputs FILE")]
    attrs = call(ctx.aws("elbv2"), "describe_load_balancer_attributes", LoadBalancerArn=alb["LoadBalancerArn"])
    values = {a.get("Key"): a.get("Value") for a in attrs.get("Attributes") or []}
    bucket = values.get("access_logs.s3.bucket")
    if values.get("access_logs.s3.enabled") != "true" or not bucket:
        return [
            Result(
                "alb-access-logs",
                "FAIL",
                f"{alb['LoadBalancerName']} writes no access logs (access_logs.s3.enabled is not true)",
                "run pulumi up again: the stack turns them on",
            )
        ]
    account = ctx.aws.account_id
    prefix = "/".join(p for p in (values.get("access_logs.s3.prefix"), "AWSLogs", account) if p) + "/"
    objects = call(ctx.aws("s3"), "list_objects_v2", Bucket=bucket, Prefix=prefix, MaxKeys=1)
    if objects.get("KeyCount") or objects.get("Contents"):
        return [
            Result(
                "alb-access-logs",
                "PASS",
                f"ELB delivers {alb['LoadBalancerName']}'s logs to s3://{bucket}/{prefix} (the bucket policy admits it)",
                "",
            )
        ]
    return [
        Result(
            "alb-access-logs",
            "WARN",
            f"no log object under s3://{bucket}/{prefix} yet (ELB delivers every 5 minutes, after traffic)",
            "send a request through the front door, then rerun in 5 minutes",
        )
    ]


@check(
    "addon-logs",
    "the add-ons' logs for denied AWS calls",
    settles=("fsx-csi-without-irsa",),
    reads=("core/v1 pods/log get",),
)
def addon_logs(ctx: Context) -> list[Result]:
    pods = [
        p
        for p in ctx.pods
        if p["metadata"].get("namespace") == "kube-system"
        and str(p["metadata"]["name"]).startswith("fsx-csi-controller")
    ]
    if not pods:
        return [Result("addon-logs", "SKIP", "no fsx-csi-controller pod in kube-system")]
    hits = []
    for pod in pods:
        text = (
            ctx.kube.text(
                ctx.kube.core.read_namespaced_pod_log,
                pod["metadata"]["name"],
                "kube-system",
                container="fsx-plugin",
                tail_lines=2000,
            )
            or ""
        )
        hits += [
            line.strip()[:200]
            for line in text.splitlines()
            if "AccessDenied" in line or "UnauthorizedOperation" in line
        ]
    if hits:
        return [
            Result(
                "addon-logs",
                "FAIL",
                f"fsx-csi-controller calls FSx without permission: {hits[0]}",
                "give the FSx CSI driver a role (operator prerequisites), or remove the add-on if no FSx volume is used",
                ("fsx-csi-without-irsa",),
            )
        ]
    return [
        Result(
            "addon-logs",
            "PASS",
            f"fsx-csi-controller ({len(pods)} pod(s)): no denied call in its log",
            "",
            ("fsx-csi-without-irsa",),
        )
    ]


PROMQL_LABELS = ("namespace", "pod")  # what components/dashboards.py groups by (UNCONFIRMED [promql-labels])
PROMQL_METRIC = "model_invocations_total"


def signed_get(ctx: Context, url: str, service: str) -> dict[str, str]:
    """The headers of a SigV4-signed GET (the AMP query API is HTTP, not a boto3 operation: AMP User Guide,
    "Query your Prometheus metrics", signature version 4 with service name ``aps``)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    credentials = ctx.aws.session.get_credentials()
    request = AWSRequest(method="GET", url=url)
    SigV4Auth(credentials.get_frozen_credentials(), service, ctx.aws.region).add_auth(request)
    return dict(request.headers.items())


@check(
    "promql-labels",
    "the label names of the operator's metrics in the AMP workspace",
    settles=("promql-labels",),
    reads=(f"aps:QueryMetrics (GET api/v1/query?query={PROMQL_METRIC}, SigV4)",),
)
def promql_labels(ctx: Context) -> list[Result]:
    endpoint = ctx.outputs.get("prometheusEndpoint")
    if not endpoint:
        return [
            Result("promql-labels", "SKIP", "no AMP workspace (stack output prometheusEndpoint)", "pass --outputs FILE")
        ]
    url = f"{str(endpoint).rstrip('/')}/api/v1/query?query={PROMQL_METRIC}"
    answer = ctx.http(url, "GET", signed_get(ctx, url, "aps"), None)
    if answer.status != 200 or not answer.body:
        return [
            Result(
                "promql-labels",
                "FAIL",
                f"the workspace's query API answered {answer.status or answer.error}",
                "grant aps:QueryMetrics to the credentials running verify, then rerun",
            )
        ]
    series = ((json.loads(answer.body).get("data") or {}).get("result")) or []
    if not series:
        return [
            Result(
                "promql-labels", "WARN", f"no {PROMQL_METRIC} series yet (no request served?)", "rerun after traffic"
            )
        ]
    names = sorted({k for s in series for k in (s.get("metric") or {})})
    ctx.facts["promqlLabels"] = names
    missing = [label for label in PROMQL_LABELS if label not in names]
    if missing:
        return [
            Result(
                "promql-labels",
                "FAIL",
                f"{PROMQL_METRIC} has the labels {', '.join(names)}, not {', '.join(missing)}",
                "the dashboards group by those labels: change them in components/dashboards.py",
                ("promql-labels",),
            )
        ]
    return [Result("promql-labels", "PASS", f"{PROMQL_METRIC} labels: {', '.join(names)}", "", ("promql-labels",))]


def observations(ctx: Context, results: list[Result]) -> dict[str, Any]:
    """``verified/<stack>.json``: what the offline checks read (components/config/observed.py), then the rest."""
    settled = sorted({i for r in results for i in r.settles})
    doc = {
        "schema": observed.SCHEMA,
        "stack": ctx.cfg.stack,
        "observedOn": ctx.today.isoformat(),
        "settled": settled,
        "services": ctx.services,
        "groups": {k: v for k, v in ctx.groups.items() if "allocatable" in v},
        "facts": ctx.facts,
    }
    if ctx.addon_builds:
        doc["addonBuilds"] = ctx.addon_builds
    observed.Observations.model_validate(doc)  # what the reading side accepts, or a bug here
    return doc


def write_observations(ctx: Context, results: list[Result]) -> Path:
    path = observed.verified_path(ctx.cfg.stack)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(observations(ctx, results), indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
    )
    return path


__all__ = ["BY_HAND", "observations", "parse_event_log", "write_observations"]


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.verify.report", "python -m tools.verify --stack <name>")
