"""Task governance and what the add-ons run, read after ``up``: facts no offline source states.

- ``governance-labels`` — the Kueue labels the program puts on an endpoint's custom resource
  (``components/config/governance.py`` ``kueue_labels``) must reach its pods, or they never count against the team's
  quota (the operator's CRD has no field for them; AWS's task-governance page labels the pods).
- ``governance-priority-classes`` — the WorkloadPriorityClass names task governance created for the stack's priority
  classes (the ``<name>-priority`` rule is UNCONFIRMED [governance-priority-class-name]).
- ``governance-controller`` — the Kueue controller's replicas, requests and tolerations (capacity: its pods need a
  node that tolerates HyperPod's taints).
- ``addon-workloads`` — whether the inference add-on installs the NVIDIA Dynamo operator, and whether the workers
  run operator 3.7's optional fluent-bit sidecar, with their requests (the capacity model's missing rows).
"""

from __future__ import annotations

from typing import Any

from components.config.governance import PRIORITY_CLASS_SUFFIX, kueue_labels

from .base import Context, Result, Status, check, labels, name_of
from .operator import endpoint_pods

KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta1"
KUEUE_NAMESPACE, KUEUE_CONTROLLER = "kueue-system", "kueue-controller-manager"
DYNAMO_SELECTOR = "app.kubernetes.io/name=dynamo-operator"
DYNAMO_CRD = "dynamographdeployments.nvidia.com"


def _requests(pod_spec: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {
        str(c.get("name")): dict((c.get("resources") or {}).get("requests") or {})
        for c in pod_spec.get("containers") or []
    }


@check(
    "governance-labels",
    "the Kueue labels of each team endpoint's pods",
    settles=("governance-labels-propagated",),
    reads=("core/v1 pods list",),
)
def governance_labels(ctx: Context) -> list[Result]:
    if not ctx.cfg.governance.enabled:
        return [Result("governance-labels", "SKIP", "task governance is off (governance.enabled)")]
    out = []
    for i, ep in enumerate(ctx.cfg.endpoints):
        if not ep.team:
            continue
        pods = endpoint_pods(ctx, ep)
        if not pods:
            out.append(
                Result(
                    "governance-labels",
                    "WARN",
                    f"{ep.name}: no pod named {ep.name}-* in {ep.namespace} yet, so the labels cannot be read",
                    "rerun once endpoint-pods holds",
                )
            )
            continue
        want, got = kueue_labels(ep), labels(pods[0])
        wrong = [
            f"{k}={got[k]!r} (want {v!r})" if k in got else f"{k} is missing"
            for k, v in want.items()
            if got.get(k) != v
        ]
        if wrong:
            out.append(
                Result(
                    "governance-labels",
                    "FAIL",
                    f"{ep.name}: pod {name_of(pods[0])}: {'; '.join(wrong)}: the operator did not copy the custom "
                    "resource's Kueue labels, so the pods do not count against the team's quota",
                    f"the labels must reach the pods: set them in endpoints[{i}].spec's pod template labels (if the "
                    "release has one) or report it to AWS; until then the team's quota does not bound this endpoint",
                    ("governance-labels-propagated",),
                )
            )
        else:
            out.append(
                Result(
                    "governance-labels",
                    "PASS",
                    f"{ep.name}: pod {name_of(pods[0])} carries " + ", ".join(f"{k}={v}" for k, v in want.items()),
                    "",
                    ("governance-labels-propagated",),
                )
            )
    return out or [Result("governance-labels", "SKIP", "no endpoint names a team")]


@check(
    "governance-priority-classes",
    "the WorkloadPriorityClasses task governance created",
    settles=("governance-priority-class-name",),
    reads=("kueue.x-k8s.io/v1beta1 workloadpriorityclasses list",),
)
def governance_priority_classes(ctx: Context) -> list[Result]:
    classes = ctx.cfg.governance.priority_classes
    if not ctx.cfg.governance.enabled or not classes:
        return [Result("governance-priority-classes", "SKIP", "the stack sets no priority classes")]
    found = ctx.kube.items(
        ctx.kube.custom.list_cluster_custom_object, KUEUE_GROUP, KUEUE_VERSION, "workloadpriorityclasses"
    )
    seen = {str((c.get("metadata") or {}).get("name")): c.get("value") for c in found}
    ctx.facts["workloadPriorityClasses"] = seen
    out = []
    for pc in classes:
        assumed = f"{pc.name}{PRIORITY_CLASS_SUFFIX}"
        if assumed in seen:
            out.append(
                Result(
                    "governance-priority-classes",
                    "PASS",
                    f"{pc.name}: WorkloadPriorityClass {assumed} exists (value {seen[assumed]})",
                    "",
                    ("governance-priority-class-name",),
                )
            )
        else:
            near = sorted(n for n in seen if pc.name in n)
            out.append(
                Result(
                    "governance-priority-classes",
                    "FAIL",
                    f"{pc.name}: no WorkloadPriorityClass {assumed} (there: {', '.join(sorted(seen)) or 'none'})",
                    f"the endpoints' kueue.x-k8s.io/priority-class label names {assumed}: change the "
                    "PRIORITY_CLASS_SUFFIX rule in components/config/governance.py to the name task governance uses"
                    + (f" ({near[0]})" if near else ""),
                    ("governance-priority-class-name",),
                )
            )
    return out


@check(
    "governance-controller",
    "the Kueue controller task governance runs",
    settles=("governance-addon-workloads",),
    reads=("apps/v1 deployments get",),
)
def governance_controller(ctx: Context) -> list[Result]:
    if not ctx.cfg.governance.enabled:
        return [Result("governance-controller", "SKIP", "task governance is off (governance.enabled)")]
    deploy = ctx.kube.get(ctx.kube.apps.read_namespaced_deployment, KUEUE_CONTROLLER, KUEUE_NAMESPACE)
    if deploy is None:
        return [
            Result(
                "governance-controller",
                "FAIL",
                f"no Deployment {KUEUE_NAMESPACE}/{KUEUE_CONTROLLER}: the task governance add-on is not running",
                "see the add-on's health: aws eks describe-addon --addon-name amazon-sagemaker-hyperpod-taskgovernance",
            )
        ]
    spec = (deploy.get("spec") or {}).get("template", {}).get("spec") or {}
    replicas = int((deploy.get("spec") or {}).get("replicas") or 1)
    ready = int((deploy.get("status") or {}).get("readyReplicas") or 0)
    observed: dict[str, Any] = {
        "replicas": replicas,
        "requests": _requests(spec),
        "tolerations": [dict(t) for t in spec.get("tolerations") or []],
    }
    ctx.facts["kueueController"] = observed
    requests = "; ".join(f"{c}: {r or 'no requests'}" for c, r in observed["requests"].items())
    status: Status = "PASS" if ready >= replicas else "FAIL"
    return [
        Result(
            "governance-controller",
            status,
            f"{KUEUE_NAMESPACE}/{KUEUE_CONTROLLER}: {ready}/{replicas} ready; {requests}; "
            f"{len(observed['tolerations'])} toleration(s)",
            "" if status == "PASS" else "its pods need a node they tolerate and fit: see system-pods",
            ("governance-addon-workloads",),
        )
    ]


# add-on build -> the checklist row of its inferred operator release
INFERRED_OPERATOR_CHECKS = {"v2.1.0-eksbuild.1": "addon-210-operator"}


@check(
    "addon-workloads",
    "what the inference add-on installs beyond the operator",
    settles=("addon-dynamo-operator", "operator-37-fluent-bit-sidecar", "addon-210-operator"),
    reads=(
        "apps/v1 deployments list",
        "apps/v1 deployments get",
        "apiextensions.k8s.io/v1 customresourcedefinitions get",
        "core/v1 pods list",
    ),
)
def addon_workloads(ctx: Context) -> list[Result]:
    out = []
    # Which operator an add-on build whose mapping is inferred carries (policies/compatibility.yaml): its image.
    if ctx.cfg.operator.addon_version in INFERRED_OPERATOR_CHECKS:
        manager = ctx.kube.get(
            ctx.kube.apps.read_namespaced_deployment,
            "hyperpod-inference-controller-manager",
            "hyperpod-inference-system",
        )
        containers = ((((manager or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")
        images = sorted({str(c.get("image")) for c in containers or []})
        ctx.facts["operatorImages"] = images
        out.append(
            Result(
                "addon-workloads",
                "PASS" if images else "WARN",
                f"add-on {ctx.cfg.operator.addon_version} runs the operator image(s) {', '.join(images)}"
                if images
                else "no hyperpod-inference-controller-manager Deployment in hyperpod-inference-system",
                "compare the image's version with operatorVersion in policies/compatibility.yaml",
                (INFERRED_OPERATOR_CHECKS[ctx.cfg.operator.addon_version],),
            )
        )
    listed = ctx.kube.items(ctx.kube.apps.list_deployment_for_all_namespaces, label_selector=DYNAMO_SELECTOR)
    key, _, value = DYNAMO_SELECTOR.partition("=")
    dynamo = [d for d in listed if labels(d).get(key) == value]
    crd = ctx.kube.get(ctx.kube.extensions.read_custom_resource_definition, DYNAMO_CRD) is not None
    ctx.facts["dynamoOperator"] = {
        "deployments": {
            name_of(d): {
                "replicas": (d.get("spec") or {}).get("replicas"),
                "requests": _requests(((d.get("spec") or {}).get("template") or {}).get("spec") or {}),
            }
            for d in dynamo
        },
        "crd": crd,
    }
    if dynamo:
        out.append(
            Result(
                "addon-workloads",
                "WARN",
                f"the NVIDIA Dynamo operator runs: {', '.join(name_of(d) for d in dynamo)}"
                f"{'; CRD ' + DYNAMO_CRD if crd else ''} (its requests are in verified/<stack>.json)",
                "add its pods to policies/readiness.yaml and the capacity model's system pods",
                ("addon-dynamo-operator",),
            )
        )
    else:
        out.append(
            Result(
                "addon-workloads",
                "PASS",
                f"no Dynamo operator Deployment ({DYNAMO_SELECTOR}); CRD {DYNAMO_CRD} "
                f"{'installed' if crd else 'absent'}",
                "",
                ("addon-dynamo-operator",),
            )
        )
    sidecars = {}
    for ep in ctx.cfg.endpoints:
        for pod in endpoint_pods(ctx, ep)[:1]:
            found = {c: r for c, r in _requests(pod.get("spec") or {}).items() if "fluent-bit" in c}
            if found:
                sidecars[ep.name] = found
    if sidecars:
        ctx.facts["fluentBitSidecars"] = sidecars
        out.append(
            Result(
                "addon-workloads",
                "WARN",
                "fluent-bit sidecar in the workers: " + "; ".join(f"{ep}: {r}" for ep, r in sorted(sidecars.items())),
                "add it to policies/crd_overlays/operator-3.7.yaml (capacity: sidecar) with these requests",
                ("operator-37-fluent-bit-sidecar",),
            )
        )
    return out


__all__ = ["addon_workloads", "governance_controller", "governance_labels", "governance_priority_classes"]


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.verify.governance", "python -m tools.verify --stack <name>")
