"""Check 1, the traffic path of every routed endpoint: Service, binding, target health, DNS, one request.

``pulumi up`` succeeds while a request still cannot get through: a TargetGroupBinding reconciles asynchronously,
so the binding is created even when the Service it names (the operator's router Service
``<endpoint>-<namespace>-routing-service``, a name from one AWS sample, on a port no source names: UNCONFIRMED
[router-service-port]) does not exist, and the ALB then answers 503. These checks read, per route:

* ``router-service``: the Service the binding names, its ports, and that a pod it selects exposes its targetPort;
  what it saw is written to ``verified/<stack>.json`` (``services``), which the offline checks then use;
* ``target-group-binding``: the binding is reconciled (``status.observedGeneration``, the only status field of the
  LB controller's CRD: ../shared/crds/third-party/elbv2.k8s.aws_targetgroupbindings.yaml) and DescribeTargetHealth
  shows at least one healthy target (the unhealthy ones with AWS's reason);
* ``front-door-dns``: the Route 53 alias record of ``ingress.domainName`` points at the stack's ALB;
* ``front-door-requests``: with ``--token``, one completion request through the ALB (status, time to first byte);
  without, an unauthenticated request that the front door must refuse (401 for jwt routes and ``deny``; a
  redirect to the IdP for browser routes that ``authenticate``).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from components.config.ingress import (
    OPERATOR_NAMESPACE,
    RouteConfig,
    ServiceTarget,
    route_authentication,
    service_target,
)
from tools.preflight.checks import call

from .base import Context, HttpAnswer, Result, check, labels

BINDING_GROUP, BINDING_VERSION, BINDING_PLURAL = "elbv2.k8s.aws", "v1beta1", "targetgroupbindings"


def binding_name(endpoint: str) -> str:
    """The TargetGroupBinding's name, as components/ingress.py names it."""
    return f"{endpoint}-front-door"[:63].rstrip("-")


def routed(ctx: Context) -> list[tuple[int, RouteConfig, Any, ServiceTarget]]:
    """``(route index, route, endpoint, bound Service)``, the first route of each routed endpoint."""
    ing = ctx.cfg.ingress
    if not ing.enabled:
        return []
    by_name = {e.name: e for e in ctx.cfg.endpoints}
    out, seen = [], set()
    for i, route in enumerate(ing.routes):
        endpoint = by_name.get(route.endpoint)
        if endpoint is None or route.endpoint in seen:
            continue
        seen.add(route.endpoint)
        out.append((i, route, endpoint, service_target(route, endpoint)))
    return out


def _selected_pods(ctx: Context, namespace: str, selector: dict[str, str]) -> list[dict[str, Any]]:
    return [
        p
        for p in ctx.pods
        if (p.get("metadata") or {}).get("namespace") == namespace
        and selector
        and all(labels(p).get(k) == v for k, v in selector.items())
    ]


def _container_ports(pods: list[dict[str, Any]]) -> set[int | str]:
    out: set[int | str] = set()
    for pod in pods:
        for c in (pod.get("spec") or {}).get("containers") or []:
            for p in c.get("ports") or []:
                out.add(int(p["containerPort"]))
                if p.get("name"):
                    out.add(str(p["name"]))
    return out


@check(
    "router-service",
    "the Service each front-door binding names",
    settles=("router-service-port",),
    reads=("core/v1 services get", "core/v1 services list", "core/v1 pods list"),
    traffic=True,
)
def router_service(ctx: Context) -> list[Result]:
    out = []
    for i, route, endpoint, target in routed(ctx):
        key = f"ingress.routes[{i}]"
        svc = ctx.kube.get(ctx.kube.core.read_namespaced_service, target.name, target.namespace)
        if svc is None:
            ctx.services[endpoint.name] = {"namespace": target.namespace, "name": target.name, "exists": False}
            others = ctx.kube.items(ctx.kube.core.list_namespaced_service, target.namespace)
            names = [str(s["metadata"]["name"]) for s in others]
            guess = [n for n in names if n.startswith(endpoint.name)]
            fix = (
                f"set {key}.serviceName: {guess[0]}"
                + (f" and serviceNamespace: {target.namespace}" if target.router else "")
                if len(guess) == 1
                else f"set {key}.serviceName to the Service the operator created for {endpoint.name}"
            )
            out.append(
                Result(
                    "router-service",
                    "FAIL",
                    f"{endpoint.name}: the binding names Service {target.namespace}/{target.name}, which does not exist "
                    f"(Services there: {', '.join(names) or 'none'}); the ALB answers 503",
                    fix,
                    ("router-service-port",),
                )
            )
            continue
        ports = [
            {"port": int(p["port"]), "targetPort": p.get("targetPort"), "name": p.get("name")}
            for p in (svc.get("spec") or {}).get("ports") or []
        ]
        ctx.services[endpoint.name] = {
            "namespace": target.namespace,
            "name": target.name,
            "exists": True,
            "ports": ports,
        }
        match = next((p for p in ports if p["port"] == target.port), None)
        if match is None:
            has = ", ".join(str(p["port"]) for p in ports) or "no port"
            fix = f"set {key}.servicePort: {ports[0]['port']}, the {'router ' if target.router else ''}Service listens there"
            out.append(
                Result(
                    "router-service",
                    "FAIL",
                    f"{endpoint.name}: Service {target.namespace}/{target.name} listens on {has}, the binding uses "
                    f"{target.port}",
                    fix if ports else "the Service has no port: look at the operator's logs",
                    ("router-service-port",),
                )
            )
            continue
        target_port = match["targetPort"] if match["targetPort"] is not None else match["port"]
        pods = _selected_pods(ctx, target.namespace, dict((svc.get("spec") or {}).get("selector") or {}))
        exposed = _container_ports(pods)
        if not pods:
            out.append(
                Result(
                    "router-service",
                    "FAIL",
                    f"{endpoint.name}: Service {target.namespace}/{target.name} selects no pod, so it has no endpoint",
                    "wait for the endpoint's pods (kubectl get pods -n " + target.namespace + "), or rerun with --wait",
                    ("router-service-port",),
                )
            )
            continue
        if target_port not in exposed:
            out.append(
                Result(
                    "router-service",
                    "FAIL",
                    f"{endpoint.name}: targetPort {target_port} of {target.namespace}/{target.name} is a port no pod "
                    f"it selects exposes (they expose {', '.join(str(p) for p in sorted(exposed, key=str)) or 'none'})",
                    "the operator's Service and pods disagree: look at the operator's logs",
                    ("router-service-port",),
                )
            )
            continue
        if route.target_port is not None and isinstance(target_port, int) and route.target_port != target_port:
            out.append(
                Result(
                    "router-service",
                    "FAIL",
                    f"{endpoint.name}: the pods listen on {target_port}, {key}.targetPort says {route.target_port} "
                    "(the ALB's security group and the binding open that port only)",
                    f"set {key}.targetPort: {target_port}",
                    ("router-service-port",),
                )
            )
            continue
        out.append(
            Result(
                "router-service",
                "PASS",
                f"{endpoint.name}: {target.namespace}/{target.name}:{target.port} -> targetPort {target_port}, "
                f"{len(pods)} pod(s)",
                "" if target.port_configured else f"pin it: {key}.servicePort: {target.port}",
                ("router-service-port",),
            )
        )
    return out or [Result("router-service", "SKIP", "no route in ingress.routes (ingress disabled)")]


def _health_text(desc: dict[str, Any]) -> str:
    target = desc.get("Target") or {}
    health = desc.get("TargetHealth") or {}
    where = f"{target.get('Id')}:{target.get('Port')}"
    return f"{where} {health.get('State')} ({health.get('Reason', '')}: {health.get('Description', '')})"


@check(
    "target-group-binding",
    "the front door's TargetGroupBindings and target health",
    reads=("elbv2.k8s.aws/v1beta1 targetgroupbindings get", "elasticloadbalancing:DescribeTargetHealth"),
    traffic=True,
)
def target_group_binding(ctx: Context) -> list[Result]:
    out = []
    for i, _route, endpoint, target in routed(ctx):
        name = binding_name(endpoint.name)
        tgb = ctx.kube.get(
            ctx.kube.custom.get_namespaced_custom_object,
            BINDING_GROUP,
            BINDING_VERSION,
            target.namespace,
            BINDING_PLURAL,
            name,
        )
        if tgb is None:
            out.append(
                Result(
                    "target-group-binding",
                    "FAIL",
                    f"{endpoint.name}: no TargetGroupBinding {target.namespace}/{name}",
                    "run pulumi up again (the binding is part of the stack); with ingress.routes[].serviceNamespace "
                    "changed, the binding moved",
                )
            )
            continue
        generation = (tgb.get("metadata") or {}).get("generation")
        observed = (tgb.get("status") or {}).get("observedGeneration")
        if observed is None or observed != generation:
            out.append(
                Result(
                    "target-group-binding",
                    "FAIL",
                    f"{endpoint.name}: binding {target.namespace}/{name} not reconciled by the LB controller "
                    f"(observedGeneration {observed}, generation {generation})",
                    "kubectl logs -n kube-system deploy/aws-load-balancer-controller; the controller must run and "
                    "reach the ELB API (rerun with --wait 10 after a fresh up)",
                )
            )
            continue
        arn = (tgb.get("spec") or {}).get("targetGroupARN")
        health = call(ctx.aws("elbv2"), "describe_target_health", TargetGroupArn=arn)
        descs = health.get("TargetHealthDescriptions") or []
        healthy = [d for d in descs if (d.get("TargetHealth") or {}).get("State") == "healthy"]
        others = [d for d in descs if d not in healthy]
        if not healthy:
            why = "; ".join(_health_text(d) for d in others) or "no target registered"
            out.append(
                Result(
                    "target-group-binding",
                    "FAIL",
                    f"{endpoint.name}: no healthy target in {arn}: {why}",
                    f"the health check ({endpoint.health_check_path} on the pods' port) must answer 200: "
                    f"kubectl get pods -n {target.namespace}; a fresh endpoint takes a while (--wait 15)",
                )
            )
            continue
        extra = f"; not healthy: {'; '.join(_health_text(d) for d in others)}" if others else ""
        out.append(
            Result(
                "target-group-binding",
                "PASS" if not others else "WARN",
                f"{endpoint.name}: bound (generation {generation}), {len(healthy)} healthy target(s){extra}",
                "" if not others else f"look at the unhealthy pods of ingress.routes[{i}]'s Service",
            )
        )
    return out or [Result("target-group-binding", "SKIP", "no route in ingress.routes (ingress disabled)")]


def _alb_dns(ctx: Context) -> str | None:
    dns = ctx.outputs.get("frontDoorAlbDnsName")
    return str(dns).lower().rstrip(".") if dns else None


@check(
    "front-door-dns",
    "the front door's Route 53 record",
    reads=("route53:ListResourceRecordSets",),
)
def front_door_dns(ctx: Context) -> list[Result]:
    ing = ctx.cfg.ingress
    if not ing.enabled or not ing.domain_name or not ing.hosted_zone_id:
        return [Result("front-door-dns", "SKIP", "ingress disabled")]
    alb = _alb_dns(ctx)
    if alb is None:
        return [
            Result(
                "front-door-dns",
                "SKIP",
                "the ALB's DNS name is unknown (stack output frontDoorAlbDnsName)",
                "pass --outputs FILE (pulumi stack output --json --show-secrets > FILE)",
            )
        ]
    name = ing.domain_name.rstrip(".") + "."
    found = call(
        ctx.aws("route53"),
        "list_resource_record_sets",
        HostedZoneId=ing.hosted_zone_id,
        StartRecordName=name,
        StartRecordType="A",
        MaxItems="1",
    )
    records = [r for r in found.get("ResourceRecordSets") or [] if r.get("Name") == name and r.get("Type") == "A"]
    if not records:
        return [
            Result(
                "front-door-dns",
                "FAIL",
                f"no A record {name} in hosted zone {ing.hosted_zone_id}",
                "run pulumi up again (the alias record is part of the stack); check ingress.hostedZoneId",
            )
        ]
    alias = str((records[0].get("AliasTarget") or {}).get("DNSName", "")).lower().rstrip(".")
    if alias.removeprefix("dualstack.") != alb:
        return [
            Result(
                "front-door-dns",
                "FAIL",
                f"{name} points at {alias or 'no alias'}, not the stack's ALB {alb}",
                "another stack or a person owns the record: fix ingress.domainName or the record",
            )
        ]
    return [Result("front-door-dns", "PASS", f"{name} -> {alb}")]


def http_request(url: str, method: str, headers: dict[str, str], body: bytes | None) -> HttpAnswer:
    """One HTTP request (urllib, no redirects followed); the time to the first byte of the response."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    start = time.monotonic()
    try:
        with opener.open(request, timeout=30) as answer:
            first = answer.read(1)
            ttfb = int((time.monotonic() - start) * 1000)
            rest = answer.read(1 << 20) if method == "GET" else b""
            return HttpAnswer(answer.status, ttfb, "", dict(answer.headers), first + rest)
    except urllib.error.HTTPError as err:
        return HttpAnswer(err.code, int((time.monotonic() - start) * 1000), "", dict(err.headers or {}))
    except (urllib.error.URLError, OSError, ValueError) as err:
        return HttpAnswer(None, None, str(getattr(err, "reason", err)))


def _completion(endpoint: Any) -> tuple[str, bytes]:
    path = "/" + str(getattr(endpoint.spec, "invocation_endpoint", None) or "v1/completions").lstrip("/")
    body: dict[str, Any] = {"model": endpoint.model_name or endpoint.name, "max_tokens": 1}
    if path.endswith("chat/completions"):
        body["messages"] = [{"role": "user", "content": "ping"}]
    else:
        body["prompt"] = "ping"
    return path, json.dumps(body).encode()


def _expect_unauthenticated(ctx: Context, route: RouteConfig) -> tuple[tuple[int, ...], str]:
    auth = route_authentication(ctx.cfg.ingress, route)
    if auth == "jwt":
        return (401,), "jwt-validation answers 401 without a bearer token"
    if auth in ("oidc", "cognito"):
        section = ctx.cfg.ingress.oidc if auth == "oidc" else ctx.cfg.ingress.cognito
        mode = section.on_unauthenticated_request if section is not None else "deny"
        if mode == "authenticate":
            return (302,), f"{auth} redirects a browser without a session to the login page"
        if mode == "deny":
            return (401,), f"{auth} with onUnauthenticatedRequest deny answers 401"
    return (), "no authentication on this route"


def front_door_url(ctx: Context) -> str | None:
    url = ctx.outputs.get("frontDoorUrl") or (
        f"https://{ctx.cfg.ingress.domain_name}" if ctx.cfg.ingress.domain_name else None
    )
    return str(url).rstrip("/") if url else None


@check(
    "front-door-requests",
    "a request through the front door",
    settles=("alb-jwt-responses",),
    reads=("HTTPS POST through the ALB (one per routed endpoint)",),
    traffic=True,
)
def front_door_requests(ctx: Context) -> list[Result]:
    base = front_door_url(ctx)
    if base is None:
        return [Result("front-door-requests", "SKIP", "ingress disabled")]
    out = []
    jwt_seen: dict[str, Any] = {}
    for i, route, endpoint, _target in routed(ctx):
        path, body = _completion(endpoint)
        path = (route.path or "").rstrip("*").rstrip("/") + path if route.path and route.path != "/*" else path
        host = {"Host": route.host} if route.host else {}
        url = base + path
        headers = {"Content-Type": "application/json", **host}
        if ctx.token:
            answer = ctx.http(url, "POST", {**headers, "Authorization": f"Bearer {ctx.token}"}, body)
            ok = answer.status is not None and 200 <= answer.status < 300
            jwt_seen[endpoint.name] = {"withToken": answer.status}
            out.append(
                Result(
                    "front-door-requests",
                    "PASS" if ok else "FAIL",
                    f"{endpoint.name}: POST {url} with the token -> {answer.status or answer.error}"
                    + (f", first byte after {answer.ttfb_ms} ms" if answer.ttfb_ms is not None else ""),
                    ""
                    if ok
                    else (
                        "401/403: the token does not satisfy ingress.jwt (issuer, audience, claims); "
                        "502/503: see target-group-binding above"
                        if answer.status
                        else "the runner cannot reach the ALB (an internal ALB: run verify inside the VPC)"
                    ),
                    ("alb-jwt-responses",) if answer.status in (200, 401, 403) else (),
                )
            )
            continue
        expected, why = _expect_unauthenticated(ctx, route)
        answer = ctx.http(url, "POST", headers, body)
        jwt_seen[endpoint.name] = {"withoutToken": answer.status}
        if answer.status is None:
            out.append(
                Result(
                    "front-door-requests",
                    "WARN",
                    f"{endpoint.name}: {url} did not answer ({answer.error})",
                    "an internal ALB: run verify from inside the VPC; else check ingress.allowedCidrs",
                )
            )
        elif not expected:
            out.append(Result("front-door-requests", "WARN", f"{endpoint.name}: {why}; answered {answer.status}"))
        elif answer.status in expected:
            out.append(
                Result(
                    "front-door-requests",
                    "PASS",
                    f"{endpoint.name}: POST {url} without a token -> {answer.status} ({why})",
                    "pass --token (or --token-cmd) to send one completion request",
                    ("alb-jwt-responses",) if expected == (401,) else (),
                )
            )
        else:
            out.append(
                Result(
                    "front-door-requests",
                    "FAIL",
                    f"{endpoint.name}: POST {url} without a token -> {answer.status}, expected "
                    f"{' or '.join(map(str, expected))} ({why})",
                    "the front door lets unauthenticated requests through: check the listener rules "
                    f"of ingress.routes[{i}] (`pulumi preview --diff`) and the second-door check"
                    if answer.status < 400
                    else "see target-group-binding above",
                    ("alb-jwt-responses",),
                )
            )
    ctx.facts["frontDoorResponses"] = jwt_seen
    return out or [Result("front-door-requests", "SKIP", "no route in ingress.routes")]


__all__ = ["OPERATOR_NAMESPACE", "binding_name", "front_door_url", "http_request", "routed"]


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.verify.traffic", "python -m tools.verify --stack <name>")
