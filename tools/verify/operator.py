"""Check 2, the operator and its CRDs: add-on version, installed CRD fields, endpoint status, worker pods, gateway.

The case offline cannot see: an installed CRD older than the field a custom resource sets (``spec.inferenceGateway``
before operator 3.6) makes the API server prune the field silently (structural schemas: unknown fields are dropped
unless ``x-kubernetes-preserve-unknown-fields``; Kubernetes docs, "CustomResourceDefinitions", Field pruning), so
the model never joins the gateway and ``pulumi up`` reports success. ``operator-crd-fields`` walks every field the stack's
custom resources set through the installed CRD's schema of the version the stack uses.

The InferenceGatewayConfig has no public CRD (AWS documents it in prose only), so ``gateway`` judges only the standard
``status.conditions[type=Ready]`` and records the whole ``status`` it finds (its address among it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from components.config.endpoints import CR_GROUP_VERSION
from components.config.gateway import gateway_namespace
from components.config.operator import PREREQUISITES
from components.inference_gateway import API_VERSION as GATEWAY_API_VERSION
from policies import addon_builds, crd_overlays
from tools.preflight.checks import INFERENCE_ADDON, addon_versions_for, call

from .base import Context, HttpAnswer, Result, check, condition, labels
from .traffic import _completion

GROUP, VERSION = CR_GROUP_VERSION.split("/")
PLURALS = {"InferenceEndpointConfig": "inferenceendpointconfigs", "JumpStartModel": "jumpstartmodels"}
GATEWAY_PLURAL = "inferencegatewayconfigs"
# The pack and the checklist send users to this check by name: one name, kept where the overlays are.
CRD_FIELDS = crd_overlays.VERIFY_CHECK


def _stack_crs(ctx: Context) -> list[tuple[int, Any, dict[str, Any]]]:
    url = ctx.cfg.kv_cache.url_at_config_time(ctx.cfg.name_prefix)
    return [(i, ep, ep.custom_resource(url)) for i, ep in enumerate(ctx.cfg.endpoints)]


@check(
    "operator-addon",
    "the inference operator add-on",
    reads=("eks:DescribeAddon",),
)
def operator_addon(ctx: Context) -> list[Result]:
    found = call(ctx.aws("eks"), "describe_addon", clusterName=ctx.eks_cluster_name, addonName=INFERENCE_ADDON)
    addon = found.get("addon") or {}
    version, status = addon.get("addonVersion"), addon.get("status")
    ctx.facts["operatorAddon"] = {"version": version, "status": status}
    want = ctx.cfg.operator.addon_version
    if status != "ACTIVE":
        issues = "; ".join(str(i.get("message")) for i in (addon.get("health") or {}).get("issues") or [])
        return [
            Result(
                "operator-addon",
                "FAIL",
                f"{INFERENCE_ADDON} is {status}{': ' + issues if issues else ''}",
                f"aws eks describe-addon --cluster-name {ctx.eks_cluster_name} --addon-name {INFERENCE_ADDON}",
            )
        ]
    if version != want:
        return [
            Result(
                "operator-addon",
                "FAIL",
                f"{INFERENCE_ADDON} {version} is installed, the stack pins {want} (operator.addonVersion)",
                f"set operator.addonVersion: {version}, or run pulumi up to install {want}",
            )
        ]
    return [Result("operator-addon", "PASS", f"{INFERENCE_ADDON} {version} ACTIVE")]


@check(
    addon_builds.VERIFY_CHECK,
    "the prerequisite add-on builds EKS lists for the cluster's Kubernetes version",
    reads=("eks:DescribeAddonVersions",),
)
def prerequisite_builds(ctx: Context) -> list[Result]:
    """Read what EKS lists for each prerequisite this stack installs, judge the pin by it, and record the listing
    in ``verified/<stack>.json`` (``addonBuilds``): the offline checks of every stack in the region then refuse a
    pin EKS does not list for that version (policies/addon_builds.py)."""
    name = addon_builds.VERIFY_CHECK
    # the API server's version (``v1.34.2-eks-3025e55``) -> the minor EKS lists builds for (``1.34``)
    minor = re.match(r"^v?([0-9]+\.[0-9]+)", str(ctx.facts.get("kubernetesVersion") or ""))
    if minor is None:
        return [Result(name, "SKIP", "the cluster's Kubernetes version was not read")]
    k8s = minor.group(1)
    eks = ctx.aws("eks")
    listed: dict[str, list[str]] = {}
    out = []
    for pre in PREREQUISITES:
        if not ctx.cfg.operator.installs(pre):
            continue
        builds = [str(v["addonVersion"]) for v in addon_versions_for(eks, pre.addon_name, k8s) if "addonVersion" in v]
        listed[pre.addon_name] = builds
        if not builds:
            out.append(
                Result(
                    name,
                    "FAIL",
                    f"EKS lists no {pre.addon_name} build for Kubernetes {k8s} in {ctx.cfg.region}",
                    "install it another way and list it in operator.existingPrerequisites",
                )
            )
            continue
        source = f"DescribeAddonVersions in {ctx.cfg.region}"
        found = addon_builds.verdict(
            pre.addon_name,
            ctx.cfg.operator.pinned(pre),
            k8s,
            [addon_builds.Listing(pre.addon_name, k8s, tuple(builds), source)],
        )
        if found.outcome == "holds":
            out.append(Result(name, "PASS", found.text))
        else:
            out.append(Result(name, "FAIL", found.text, f"set operator.{pre.config_key} to one of the listed builds"))
    ctx.addon_builds = {"region": ctx.cfg.region, "kubernetesVersion": k8s, "builds": listed}
    return out or [Result(name, "SKIP", "the stack installs no prerequisite add-on (operator.existingPrerequisites)")]


def _schema_of(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("name") == version:
            return dict((v.get("schema") or {}).get("openAPIV3Schema") or {})
    return None


def pruned_paths(value: Any, schema: dict[str, Any], path: str) -> Iterator[str]:
    """Every path in ``value`` the structural schema does not declare (what the API server prunes)."""
    if schema.get("x-kubernetes-preserve-unknown-fields") is True and not schema.get("properties"):
        return
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            if key in props:
                yield from pruned_paths(sub, props[key], f"{path}.{key}")
            elif isinstance(extra, dict):
                yield from pruned_paths(sub, extra, f"{path}.{key}")
            elif extra is True or schema.get("x-kubernetes-preserve-unknown-fields") is True:
                continue
            else:
                yield f"{path}.{key}"
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from pruned_paths(item, schema["items"], f"{path}[{i}]")


@check(
    CRD_FIELDS,
    "the installed CRDs against the stack's custom resources",
    settles=tuple(dict.fromkeys(cid for _, cid in crd_overlays.checklist_ids())),
    reads=("apiextensions.k8s.io/v1 customresourcedefinitions list",),
)
def crd_fields(ctx: Context) -> list[Result]:
    crds = ctx.kube.items(ctx.kube.extensions.list_custom_resource_definition)
    by_kind = {
        ((c.get("spec") or {}).get("names") or {}).get("kind"): c
        for c in crds
        if (c.get("spec") or {}).get("group") == GROUP
    }
    ctx.facts["crdVersions"] = {
        str(c["metadata"]["name"]): [str(v.get("name")) for v in (c.get("spec") or {}).get("versions") or []]
        for c in by_kind.values()
    }
    out = []
    for i, ep, cr in _stack_crs(ctx):
        crd = by_kind.get(cr["kind"])
        schema = _schema_of(crd, VERSION) if crd else None
        if crd is None or schema is None:
            out.append(
                Result(
                    CRD_FIELDS,
                    "FAIL",
                    f"{ep.name}: no installed CRD serves {cr['kind']} {CR_GROUP_VERSION}",
                    "the inference add-on installs the CRDs: see operator-addon",
                )
            )
            continue
        spec_schema = (schema.get("properties") or {}).get("spec") or {}
        lost = list(pruned_paths(cr["spec"], spec_schema, "spec"))
        # A field of a later release whose path no source states: the installed CRD answers where it goes (kept or
        # pruned at that path), so its checklist row is settled either way.
        unsourced = tuple(
            dict.fromkeys(
                f.checklist_id
                for _, f in crd_overlays.used(cr["spec"], crd_overlays.active_fields(cr["kind"]))
                if f.checklist_id
            )
        )
        if lost:
            shown = ", ".join(lost)
            gateway = (
                " (the model never joins the gateway)"
                if any(p.startswith("spec.inferenceGateway") for p in lost)
                else ""
            )
            out.append(
                Result(
                    CRD_FIELDS,
                    "FAIL",
                    f"{ep.name}: the installed {crd['metadata']['name']} has no {shown}: the API server prunes "
                    f"{'it' if len(lost) == 1 else 'them'}{gateway}",
                    f"raise operator.addonVersion to a release whose CRD has {lost[0]} (policies/compatibility.yaml), "
                    f"or remove it from endpoints[{i}].spec",
                    unsourced,
                )
            )
        else:
            out.append(
                Result(
                    CRD_FIELDS,
                    "PASS",
                    f"{ep.name}: every field the stack sets is in the installed CRD",
                    "",
                    unsourced,
                )
            )
    if ctx.cfg.gateway.enabled and "InferenceGatewayConfig" not in by_kind:
        out.append(
            Result(
                CRD_FIELDS,
                "FAIL",
                "no InferenceGatewayConfig CRD is installed, the stack creates a gateway",
                "the gateway needs add-on v2.0.0-eksbuild.2 or later (operator.addonVersion)",
            )
        )
    return out or [Result(CRD_FIELDS, "SKIP", "the stack has no endpoints")]


_BAD_STATE = re.compile(r"fail", re.IGNORECASE)


def _tiered_settles(ctx: Context, ep: Any) -> tuple[str, ...]:
    """An endpoint with the managed tiered KV cache answers two open questions by its status: on a cluster without
    ``TieredStorageConfig`` (tieredstorage-cluster-config), on a group that is not P-family (tieredstorage-p-only)."""
    if ep.l2_backend != "tieredstorage":
        return ()
    out: tuple[str, ...] = ()
    if ctx.cfg.kv_cache.l2_backend != "tieredstorage":  # the cluster is created without TieredStorageConfig
        out += ("tieredstorage-cluster-config",)
    if ep.instance_types and not all(t.startswith("ml.p") for t in ep.instance_types):
        out += ("tieredstorage-p-only",)
    return out


@check(
    "endpoint-status",
    "each endpoint's status",
    settles=("tieredstorage-cluster-config", "tieredstorage-p-only"),
    reads=("inference.sagemaker.aws.amazon.com/v1 inferenceendpointconfigs,jumpstartmodels get",),
    traffic=True,
)
def endpoint_status(ctx: Context) -> list[Result]:
    out = []
    for i, ep, cr in _stack_crs(ctx):
        obj = ctx.kube.get(
            ctx.kube.custom.get_namespaced_custom_object, GROUP, VERSION, ep.namespace, PLURALS[cr["kind"]], ep.name
        )
        tiered = _tiered_settles(ctx, ep)
        if obj is None:
            out.append(
                Result(
                    "endpoint-status",
                    "FAIL",
                    f"{ep.name}: no {cr['kind']} {ep.namespace}/{ep.name}",
                    "run pulumi up (the custom resource is part of the stack)",
                )
            )
            continue
        status = obj.get("status") or {}
        state = str(status.get("state") or "")
        false = [
            f"{c.get('type')}: {c.get('reason', '')} {c.get('message', '')}".strip()
            for c in status.get("conditions") or []
            if c.get("status") == "False"
        ]
        ctx.facts.setdefault("endpointStatus", {})[ep.name] = {"state": state, "conditions": status.get("conditions")}
        if _BAD_STATE.search(state) or (false and state != "DeploymentComplete"):
            out.append(
                Result(
                    "endpoint-status",
                    "FAIL",
                    f"{ep.name}: state {state or '(none)'}; {'; '.join(false) or 'no condition says why'}",
                    f"kubectl describe {cr['kind'].lower()} {ep.name} -n {ep.namespace}; fix endpoints[{i}].spec as "
                    "the condition says",
                    tiered,
                )
            )
        elif state == "DeploymentComplete":
            out.append(Result("endpoint-status", "PASS", f"{ep.name}: {state}", "", tiered))
        else:
            out.append(
                Result(
                    "endpoint-status",
                    "FAIL",
                    f"{ep.name}: still {state or 'without a status'} (the operator has not finished)",
                    "a fresh endpoint takes a while: rerun with --wait 20",
                )
            )
    return out or [Result("endpoint-status", "SKIP", "the stack has no endpoints")]


def endpoint_pods(ctx: Context, ep: Any) -> list[dict[str, Any]]:
    """The worker pods of an endpoint: in its namespace, named after it (the operator's Deployment)."""
    return [
        p
        for p in ctx.pods
        if (p.get("metadata") or {}).get("namespace") == ep.namespace
        and str((p.get("metadata") or {}).get("name", "")).startswith(f"{ep.name}-")
    ]


def _env(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        for e in c.get("env") or []:
            out.setdefault(str(e.get("name")), dict(e))
    return out


# NOPERM: the ElastiCache user's ACL (policies/compatibility.yaml lmcacheRedisCommands) lacks a command this LMCache
# release sends: the L2 cache degrades silently otherwise (issue 47 item 6).
REDIS_TROUBLE = re.compile(
    r"(redis|lmcache)[^\n]*(refused|timed? ?out|auth|denied|error|fail|noperm|no permissions)|noperm[^\n]*",
    re.IGNORECASE,
)


@check(
    "endpoint-pods",
    "each endpoint's worker pods: environment, labels, KV-cache connection",
    settles=("operator-env-valuefrom", "lmcache-redis-url", "gateway-model-selector"),
    reads=("core/v1 pods list", "core/v1 pods/log get"),
    traffic=True,
)
def endpoint_pods_check(ctx: Context) -> list[Result]:
    out = []
    for i, ep, _cr in _stack_crs(ctx):
        pods = endpoint_pods(ctx, ep)
        if not pods:
            out.append(
                Result(
                    "endpoint-pods",
                    "FAIL",
                    f"{ep.name}: no pod named {ep.name}-* in {ep.namespace}",
                    "see endpoint-status; rerun with --wait 20",
                )
            )
            continue
        pod = pods[0]
        ctx.facts.setdefault("podLabels", {})[ep.name] = labels(pod)
        env = _env(pod)
        problems = []
        for want in ep.env:
            name = str(want.get("name"))
            got = env.get(name)
            if got is None:
                problems.append(f"{name} is missing")
            elif "valueFrom" in want and got.get("valueFrom") != want["valueFrom"]:
                problems.append(f"{name}'s valueFrom became {got.get('valueFrom') or got.get('value')!r}")
        settles: tuple[str, ...] = ("operator-env-valuefrom", "gateway-model-selector")
        if ep.l2_backend == "redis":
            settles += ("lmcache-redis-url",)
            if "LMCACHE_REMOTE_URL" not in env:
                problems.append("LMCACHE_REMOTE_URL is not set (l2CacheLocalUrl was not copied)")
            meta = pod.get("metadata") or {}
            log = ctx.kube.text(ctx.kube.core.read_namespaced_pod_log, meta.get("name"), ep.namespace, tail_lines=500)
            trouble = REDIS_TROUBLE.search(log or "")
            if trouble:
                problems.append(f"its log says {trouble.group(0)[:160]!r}")
        if problems:
            out.append(
                Result(
                    "endpoint-pods",
                    "FAIL",
                    f"{ep.name}: pod {pod['metadata']['name']}: {'; '.join(problems)}",
                    f"compare endpoints[{i}].spec.worker.environmentVariables and kvCacheSpec with the pod "
                    f"(kubectl get pod -n {ep.namespace} {pod['metadata']['name']} -o yaml)",
                    settles,
                )
            )
        else:
            out.append(
                Result(
                    "endpoint-pods",
                    "PASS",
                    f"{ep.name}: {len(pods)} pod(s), environment as written, labels recorded",
                    "",
                    settles,
                )
            )
    return out or [Result("endpoint-pods", "SKIP", "the stack has no endpoints")]


_METRIC = re.compile(r"^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) ", re.MULTILINE)


@check(
    "endpoint-metrics",
    "the metric names the worker pods serve",
    settles=("lmcache-metrics", "request-limit-metrics"),
    reads=("core/v1 pods/proxy get /metrics",),
    traffic=True,
)
def endpoint_metrics(ctx: Context) -> list[Result]:
    out = []
    for _i, ep, _cr in _stack_crs(ctx):
        pods = endpoint_pods(ctx, ep)
        if not pods:
            continue
        pod = pods[0]
        names: set[str] = set()
        for c in (pod.get("spec") or {}).get("containers") or []:
            for p in c.get("ports") or []:
                text = ctx.kube.text(
                    ctx.kube.core.connect_get_namespaced_pod_proxy_with_path,
                    f"{pod['metadata']['name']}:{p['containerPort']}",
                    ep.namespace,
                    "metrics",
                )
                names.update(_METRIC.findall(text or ""))
        ctx.facts.setdefault("metricNames", {})[ep.name] = sorted(names)
        if names:
            lmcache = sorted(n for n in names if n.startswith("lmcache"))
            out.append(
                Result(
                    "endpoint-metrics",
                    "PASS",
                    f"{ep.name}: {len(names)} metric families ({len(lmcache)} lmcache_*), recorded",
                    "",
                    ("lmcache-metrics", "request-limit-metrics"),
                )
            )
        else:
            out.append(
                Result(
                    "endpoint-metrics",
                    "WARN",
                    f"{ep.name}: no port of pod {pod['metadata']['name']} serves Prometheus /metrics",
                    "spec.metrics.enabled and modelMetrics.port decide it",
                )
            )
    return out or [Result("endpoint-metrics", "SKIP", "no endpoint pod to read")]


def _address(status: dict[str, Any]) -> str | None:
    for key in ("address", "endpoint", "url"):
        if isinstance(status.get(key), str):
            return str(status[key])
    addresses = status.get("addresses")
    if isinstance(addresses, list) and addresses and isinstance(addresses[0], dict):
        return str(addresses[0].get("value"))
    return None


def _selects(selector: dict[str, Any], pod_labels: dict[str, str]) -> bool:
    found = selector.get("matchLabels")
    match: dict[str, Any] = found if isinstance(found, dict) else selector
    return bool(match) and all(pod_labels.get(str(k)) == str(v) for k, v in match.items())


@check(
    "gateway",
    "the in-cluster inference gateway",
    settles=("gateway-model-selector", "gateway-jwt-responses"),
    reads=("inference.sagemaker.aws.amazon.com/v1alpha1 inferencegatewayconfigs get", "HTTPS POST to the gateway"),
    traffic=True,
)
def gateway(ctx: Context) -> list[Result]:
    gw = ctx.cfg.gateway
    namespace = gateway_namespace(ctx.cfg)
    if not gw.enabled or namespace is None:
        return [Result("gateway", "SKIP", "gateway.enabled is false")]
    group, version = GATEWAY_API_VERSION.split("/")
    obj = ctx.kube.get(ctx.kube.custom.get_namespaced_custom_object, group, version, namespace, GATEWAY_PLURAL, gw.name)
    if obj is None:
        return [Result("gateway", "FAIL", f"no InferenceGatewayConfig {namespace}/{gw.name}", "run pulumi up")]
    status = obj.get("status") or {}
    ready = condition(obj, "Ready")
    address = _address(status)
    ctx.facts["gateway"] = {"status": status, "address": address}
    out = []
    if ready is None or ready.get("status") != "True":
        why = f"{ready.get('reason', '')} {ready.get('message', '')}".strip() if ready else "no Ready condition"
        out.append(
            Result(
                "gateway",
                "FAIL",
                f"gateway {namespace}/{gw.name} not Ready: {why}",
                "kubectl -n hyperpod-inference-system logs deploy/inference-gateway-controller",
            )
        )
    else:
        out.append(Result("gateway", "PASS", f"gateway {namespace}/{gw.name} Ready, serving on {address or '?'}"))
    pod_labels = ctx.facts.get("podLabels") or {}
    schedulers = (obj.get("spec") or {}).get("schedulers") or []
    for ep in [e for e in ctx.cfg.endpoints if e.opts_into_gateway]:
        pods = endpoint_pods(ctx, ep)
        got = pod_labels.get(ep.name) or (labels(pods[0]) if pods else None)
        if got is None:
            continue
        picked = [s.get("name") for s in schedulers if _selects(dict(s.get("modelSelector") or {}), got)]
        out.append(
            Result(
                "gateway",
                "PASS" if picked else "FAIL",
                f"{ep.name}: scheduler {', '.join(map(str, picked))} selects its pods"
                if picked
                else f"{ep.name}: no scheduler's modelSelector matches its pods' labels {got}",
                "" if picked else "set gateway.spec.schedulers[].modelSelector to labels the pods carry (above)",
                ("gateway-model-selector",),
            )
        )
        if address:
            out.append(_gateway_request(ctx, ep, address))
    return out


def _gateway_request(ctx: Context, ep: Any, address: str) -> Result:
    path, body = _completion(ep)
    base = address if "://" in address else f"https://{address}"
    headers = {"Content-Type": "application/json"}
    if ctx.token:
        headers["Authorization"] = f"Bearer {ctx.token}"
    answer: HttpAnswer = ctx.http(base.rstrip("/") + path, "POST", headers, body)
    ctx.facts.setdefault("gatewayResponses", {})[ep.name] = {
        ("withToken" if ctx.token else "withoutToken"): answer.status
    }
    if answer.status is None:
        return Result(
            "gateway",
            "WARN",
            f"{ep.name}: the gateway at {base} did not answer ({answer.error})",
            "the gateway is inside the VPC: run verify from a machine there",
        )
    want_ok = bool(ctx.token)
    ok = 200 <= answer.status < 300 if want_ok else answer.status == 401
    return Result(
        "gateway",
        "PASS" if ok else "FAIL",
        f"{ep.name}: POST {base}{path} {'with' if want_ok else 'without'} a token -> {answer.status}"
        + (f", first byte after {answer.ttfb_ms} ms" if answer.ttfb_ms is not None else ""),
        ""
        if ok
        else (
            "gateway.spec.auth.jwt must accept the token"
            if want_ok
            else "the gateway serves without a token: set gateway.spec.auth.jwt"
        ),
        ("gateway-jwt-responses",),
    )


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.verify.operator", "python -m tools.verify --stack <name>")
