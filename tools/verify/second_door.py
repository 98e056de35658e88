"""Check 4, a second door: another load balancer or Ingress that reaches the endpoints' pods without the stack's
authentication.

The operator creates its own per-endpoint ALB through an Ingress ``alb-<name>-<namespace>`` in
hyperpod-inference-system (AWS docs sagemaker-hyperpod-model-deployment-custom-certs), next to
the stack's front door; the rehearsal reports it offline, this is the live side. A finding is any load balancer
in the stack's VPC, other than the front door, whose listener forwards to a target group holding an endpoint pod's
IP without an ``authenticate-oidc``/``authenticate-cognito``/``jwt-validation`` action before the forward; and any
Ingress in the cluster whose backend is a Service selecting an endpoint's pods.
"""

from __future__ import annotations

from typing import Any

from policies.baselines import AUTH_ACTIONS
from tools.preflight.checks import call, listed

from .base import Context, Result, check, labels, name_of
from .operator import endpoint_pods
from .traffic import routed


def _unauthenticated_forwards(actions: list[dict[str, Any]]) -> list[str]:
    """Target groups a rule forwards to with no authentication action before the forward (by ``Order``)."""
    ordered = sorted(actions, key=lambda a: a.get("Order", 50000))
    out: list[str] = []
    for i, action in enumerate(ordered):
        if action.get("Type") != "forward":
            continue
        authed = any(str(a.get("Type")) in AUTH_ACTIONS for a in ordered[:i])
        if authed:
            continue
        arns = [action["TargetGroupArn"]] if action.get("TargetGroupArn") else []
        arns += [t["TargetGroupArn"] for t in (action.get("ForwardConfig") or {}).get("TargetGroups") or []]
        out.extend(dict.fromkeys(arns))
    return out


@check(
    "second-door",
    "load balancers and Ingresses that bypass the front door",
    reads=(
        "elasticloadbalancing:DescribeLoadBalancers",
        "elasticloadbalancing:DescribeListeners",
        "elasticloadbalancing:DescribeRules",
        "elasticloadbalancing:DescribeTargetHealth",
        "networking.k8s.io/v1 ingresses list",
    ),
)
def second_door(ctx: Context) -> list[Result]:
    vpc = ctx.outputs.get("vpcId")
    front = str(ctx.outputs.get("frontDoorAlbDnsName") or "").lower().rstrip(".")
    pod_ips: dict[str, str] = {}
    for name, pods in endpoint_targets(ctx).items():
        for pod in pods:
            ip = (pod.get("status") or {}).get("podIP")
            if ip:
                pod_ips[str(ip)] = name
    elb = ctx.aws("elbv2")
    findings = []
    checked = 0
    for lb in listed(elb, "describe_load_balancers", "LoadBalancers"):
        if (vpc and lb.get("VpcId") != vpc) or str(lb.get("DNSName", "")).lower() == front:
            continue
        checked += 1
        for listener in listed(elb, "describe_listeners", "Listeners", LoadBalancerArn=lb["LoadBalancerArn"]):
            rules = listed(elb, "describe_rules", "Rules", ListenerArn=listener["ListenerArn"])
            groups = [tg for r in rules for tg in _unauthenticated_forwards(r.get("Actions") or [])]
            if not rules:
                groups = _unauthenticated_forwards(listener.get("DefaultActions") or [])
            for tg in dict.fromkeys(groups):
                health = call(elb, "describe_target_health", TargetGroupArn=tg)
                reached = sorted(
                    {
                        pod_ips[t["Target"]["Id"]]
                        for t in health.get("TargetHealthDescriptions") or []
                        if t["Target"]["Id"] in pod_ips
                    }
                )
                if reached:
                    findings.append(
                        f"{lb.get('LoadBalancerName')} ({lb.get('DNSName')}) port {listener.get('Port')} forwards to "
                        f"the pods of {', '.join(reached)} without authentication"
                    )
    service_pods = _services_selecting_endpoints(ctx)
    for ing in ctx.kube.items(ctx.kube.networking.list_ingress_for_all_namespaces):
        ns = ing["metadata"].get("namespace")
        for svc in _backends(ing):
            eps = service_pods.get((ns, svc))
            if eps:
                findings.append(
                    f"Ingress {name_of(ing)} routes to Service {ns}/{svc}, which selects the pods of {', '.join(eps)}"
                )
    if findings:
        return [
            Result(
                "second-door",
                "FAIL",
                "; ".join(findings),
                "callers can bypass the front door's authentication: remove the operator's own load balancer for "
                "these endpoints (docs/operator.md, front door) or restrict its security group, then rerun",
            )
        ]
    return [
        Result(
            "second-door",
            "PASS",
            f"{checked} other load balancer(s) in the VPC, none reaches an endpoint's pods; no Ingress does",
        )
    ]


def _backends(ing: dict[str, Any]) -> list[str]:
    spec = ing.get("spec") or {}
    out = []
    default = ((spec.get("defaultBackend") or {}).get("service") or {}).get("name")
    if default:
        out.append(str(default))
    for rule in spec.get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            name = ((path.get("backend") or {}).get("service") or {}).get("name")
            if name:
                out.append(str(name))
    return list(dict.fromkeys(out))


def endpoint_targets(ctx: Context) -> dict[str, list[dict[str, Any]]]:
    """Per endpoint, the pods a caller reaches it through: its workers, and the pods of the Service the front
    door binds (the operator's router, for intelligent routing)."""
    out = {ep.name: list(endpoint_pods(ctx, ep)) for ep in ctx.cfg.endpoints}
    for _i, _route, endpoint, target in routed(ctx):
        svc = ctx.kube.get(ctx.kube.core.read_namespaced_service, target.name, target.namespace)
        selector = ((svc or {}).get("spec") or {}).get("selector") or {}
        out[endpoint.name] += [
            p
            for p in ctx.pods
            if p["metadata"].get("namespace") == target.namespace
            and selector
            and all(labels(p).get(k) == v for k, v in selector.items())
        ]
    return out


def _services_selecting_endpoints(ctx: Context) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    services = ctx.kube.items(ctx.kube.core.list_service_for_all_namespaces)
    for name, pods in endpoint_targets(ctx).items():
        for pod in pods:
            pod_labels = labels(pod)
            ns = pod["metadata"].get("namespace")
            for svc in services:
                selector = (svc.get("spec") or {}).get("selector") or {}
                if (
                    svc["metadata"].get("namespace") == ns
                    and selector
                    and all(pod_labels.get(k) == v for k, v in selector.items())
                ):
                    out.setdefault((ns, str(svc["metadata"]["name"])), []).append(name)
    return {k: sorted(set(v)) for k, v in out.items()}


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.verify.second_door", "python -m tools.verify --stack <name>")
