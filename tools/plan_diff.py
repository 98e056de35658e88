"""``tools.preview --diff BASE.json``: compare this run's plan with a saved one, as ``pulumi preview --json --diff``.

Every step of the head plan becomes ``same``, ``create``, ``update`` or ``replace`` (matched to the base by
URN), and every base step without a head step a ``delete``. Updates and replacements carry ``diffReasons``
(top-level input keys), ``replaceReasons`` (those that force a replacement) and ``detailedDiff``
(``{property path: {kind, inputDiff}}``, kinds as Pulumi's ``DiffKind``: ``add``, ``update``, ``delete`` and
their ``-replace`` forms). Field names: see :mod:`tools.plan`.

What replaces a resource, offline (no provider plugin runs its ``Diff``):

* aws-native: the ``createOnlyProperties`` of the CloudFormation resource schema cfn-lint ships for the
  stack's region (``AWS::SageMaker::Cluster``: ``ClusterName``, ``VpcConfig``, ``Orchestrator/Eks``), read as
  data by :func:`tools.render.resource_schema`.
* Kubernetes objects: a changed ``apiVersion``, ``kind``, ``metadata.name`` or ``metadata.namespace`` (the
  object's identity; pulumi-kubernetes replaces on these).
* pulumi-aws (and the pulumi-eks component): only the properties :data:`FORCE_NEW` lists with a source (the
  Terraform provider pulumi-aws bridges marks them ``ForceNew: true``). Any other changed property of such a
  type is an ``update`` with ``"replacement": "unknown"``: the real preview may still replace it.

The plan-level policy ``no-replacement-of-stateful-resources``: a step that replaces or deletes the EKS
cluster, the HyperPod cluster, the ElastiCache replication group or an S3 bucket is a mandatory violation in
prod and advisory elsewhere, unless the stack config lists the resource's logical name in
``hyperpod-inference:allowReplacement`` (then it is reported as advisory, to stay visible in the review).
Secrets compare as ``"[secret]"``, so a changed secret value is not seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from policies.baselines import STATEFUL as _PACK_STATEFUL
from policies.graph import EKS_CLUSTER, EKS_COMPONENT
from tools.plan import policy_diagnostic, summary
from tools.render import cfn_type, resource_schema

POLICY = "no-replacement-of-stateful-resources"
POLICY_DESCRIPTION = (
    "A plan that replaces or deletes the EKS cluster, the HyperPod cluster, the ElastiCache replication group "
    "or an S3 bucket destroys running capacity or data; mandatory in prod unless the stack's allowReplacement "
    "lists the resource, advisory elsewhere."
)
# The stateful types of the pack's stateful-resources-protected policy, plus the EKS cluster (both forms).
STATEFUL: dict[str, str] = {**_PACK_STATEFUL, EKS_CLUSTER: "EKS cluster", EKS_COMPONENT: "EKS cluster"}

_TF = "hashicorp/terraform-provider-aws"
_TF_REPLICATION_GROUP = (
    f"{_TF}@001b6364c1a3b3045e152f655440a6d47eb44a70:internal/service/elasticache/replication_group.go"
)
_TF_EKS_CLUSTER = f"{_TF}@00555dc5b38f92abbfa230badea0ed0754cea81e:internal/service/eks/cluster.go"
_TF_LOAD_BALANCER = f"{_TF}@00edc94be7a89c4c485415cdec27094875f61bfc:internal/service/elbv2/load_balancer.go"

# type -> (property paths that force a new resource, source). pulumi-aws input names are the camelCase of
# the Terraform attribute names (replication_group_id -> replicationGroupId).
FORCE_NEW: dict[str, tuple[tuple[tuple[str, ...], ...], str]] = {
    "aws:elasticache/replicationGroup:ReplicationGroup": (
        (
            ("replicationGroupId",),
            ("atRestEncryptionEnabled",),
            ("dataTieringEnabled",),
            ("globalReplicationGroupId",),
            ("kmsKeyId",),
            ("networkType",),
            ("port",),
            ("securityGroupNames",),
            ("snapshotArns",),
            ("snapshotName",),
            ("subnetGroupName",),
        ),
        f"{_TF_REPLICATION_GROUP} (ForceNew: true)",
    ),
    EKS_CLUSTER: (
        (
            ("name",),
            ("roleArn",),
            ("bootstrapSelfManagedAddons",),
            ("accessConfig", "bootstrapClusterCreatorAdminPermissions"),
            ("kubernetesNetworkConfig", "serviceIpv4Cidr"),
            ("kubernetesNetworkConfig", "ipFamily"),
        ),
        f"{_TF_EKS_CLUSTER} (ForceNew: true)",
    ),
    # pulumi-eks passes these component inputs to its aws.eks.Cluster (`name`, and
    # `kubernetesServiceIpAddressRange`/`ipFamily` as kubernetesNetworkConfig.serviceIpv4Cidr/ipFamily;
    # pulumi-eks API docs, Cluster inputs), whose ForceNew attributes they are.
    EKS_COMPONENT: (
        (("name",), ("kubernetesServiceIpAddressRange",), ("ipFamily",), ("serviceRole",)),
        f"{_TF_EKS_CLUSTER} (ForceNew: true), through pulumi-eks's Cluster inputs",
    ),
    "aws:lb/loadBalancer:LoadBalancer": (
        (("name",), ("namePrefix",), ("internal",), ("loadBalancerType",)),
        f"{_TF_LOAD_BALANCER} (ForceNew: true)",
    ),
}

_K8S_IDENTITY = (("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"))
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")

Path = tuple[str | int, ...]


def property_path(path: Path) -> str:
    """Pulumi's property-path syntax: ``a.b[0].c``, ``tags["hyperpod-inference:stack"]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out


def input_diff(old: Any, new: Any, path: Path = ()) -> dict[Path, str]:
    """``{path: add|delete|update}`` between two input values (lists element by element)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: dict[Path, str] = {}
        for k in sorted(set(old) | set(new)):
            if k not in old:
                out[(*path, k)] = "add"
            elif k not in new:
                out[(*path, k)] = "delete"
            else:
                out.update(input_diff(old[k], new[k], (*path, k)))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = {}
        for i in range(max(len(old), len(new))):
            if i >= len(old):
                out[(*path, i)] = "add"
            elif i >= len(new):
                out[(*path, i)] = "delete"
            else:
                out.update(input_diff(old[i], new[i], (*path, i)))
        return out
    return {} if old == new else {path: "update"}


def _matches(rule: tuple[str, ...], path: Path) -> bool:
    """A rule path (``*`` for any list index) covers ``path`` when one is a prefix of the other, case-insensitively.

    Prefix both ways: a changed ``vpcConfig.subnets[0]`` is inside create-only ``VpcConfig``, and a changed
    ``orchestrator`` object contains create-only ``Orchestrator/Eks``.
    """
    for r, p in zip(rule, path, strict=False):
        if r == "*":
            if not isinstance(p, int):
                return False
        elif isinstance(p, int) or r.lower() != p.lower():
            return False
    return True


def _create_only(typ: str, region: str) -> list[tuple[str, ...]] | None:
    schema = resource_schema(cfn_type(typ), region)
    if schema is None:
        return None
    paths = schema.get("createOnlyProperties") or []
    return [tuple(p.removeprefix("/properties/").split("/")) for p in paths]


def replacement_rules(typ: str, inputs: dict[str, Any], region: str) -> tuple[list[tuple[str, ...]], str] | None:
    """(property paths that force replacement, source) for a type; None when no source says (unknown)."""
    if typ.startswith("aws-native:"):
        rules = _create_only(typ, region)
        if rules is None:
            return None
        return rules, f"createOnlyProperties of {cfn_type(typ)} (cfn-lint's CloudFormation schema, {region})"
    if typ.startswith("kubernetes:") and "kind" in inputs:
        return list(_K8S_IDENTITY), "a Kubernetes object's identity (apiVersion, kind, metadata.name/namespace)"
    known = FORCE_NEW.get(typ)
    if known is None:
        return None
    paths, source = known
    return list(paths), source


def diff_step(base: dict[str, Any], head: dict[str, Any], region: str) -> dict[str, Any]:
    """One head step against its base step: ``same``, ``update`` or ``replace`` with the diff fields."""
    old_inputs = (base.get("newState") or {}).get("inputs") or {}
    new_state = head["newState"]
    new_inputs = new_state.get("inputs") or {}
    changes = input_diff(old_inputs, new_inputs)
    out = {k: v for k, v in head.items() if k not in ("op",)}
    if not changes:
        return {"op": "same", **out}
    rules = replacement_rules(new_state["type"], new_inputs, region)
    detailed: dict[str, dict[str, Any]] = {}
    replace_keys: set[str] = set()
    for path, kind in changes.items():
        forces = rules is not None and any(_matches(rule, path) for rule in rules[0])
        if forces:
            replace_keys.add(str(path[0]))
        detailed[property_path(path)] = {"kind": f"{kind}-replace" if forces else kind, "inputDiff": True}
    step: dict[str, Any] = {
        "op": "replace" if replace_keys else "update",
        **out,
        "oldState": base.get("newState"),
        "diffReasons": sorted({str(p[0]) for p in changes}),
        "replaceReasons": sorted(replace_keys),
        "detailedDiff": detailed,
        "replacement": "unknown" if rules is None else "known",
    }
    if rules is not None:
        step["replacementSource"] = rules[1]
    return step


def logical_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def stateful_results(
    steps: list[dict[str, Any]], environment: str | None, allow_replacement: Iterable[str]
) -> list[dict[str, Any]]:
    """The ``no-replacement-of-stateful-resources`` results of a diffed plan (policyResults shape)."""
    allowed = set(allow_replacement)
    out = []
    for s in steps:
        if s["op"] not in ("replace", "delete"):
            continue
        state = s.get("newState") or s.get("oldState") or {}
        what = STATEFUL.get(state.get("type", ""))
        if what is None:
            continue
        name = logical_name(s["urn"])
        verb = "replace" if s["op"] == "replace" else "delete"
        why = f" (replaced by a change to {', '.join(s.get('replaceReasons') or [])})" if verb == "replace" else ""
        if name in allowed:
            level = "advisory"
            message = f"this plan would {verb} the {what} `{name}`{why}; allowed by hyperpod-inference:allowReplacement"
        else:
            level = "mandatory" if environment == "prod" else "advisory"
            message = (
                f"this plan would {verb} the {what} `{name}`{why}, destroying it and what it holds"
                f"{' (every HyperPod node)' if state.get('type') == 'aws-native:sagemaker:Cluster' else ''}; "
                f"if that is intended, list `{name}` in hyperpod-inference:allowReplacement of the stack file"
            )
        out.append(
            {
                "policyName": POLICY,
                "enforcementLevel": level,
                "resourceType": state.get("type", ""),
                "resourceName": name,
                "resourceUrn": s["urn"],
                "message": message,
            }
        )
    return out


class BasePlanError(ValueError):
    """The ``--diff`` base is not a plan this tool wrote."""


def check_base(base: Any, source: str) -> dict[str, Any]:
    if not isinstance(base, dict) or not isinstance(base.get("steps"), list):
        raise BasePlanError(f"{source}: not a plan (expected the JSON `tools.preview --json` prints, with `steps`)")
    return base


def diff_plans(base: dict[str, Any], head: dict[str, Any], *, allow_replacement: Iterable[str] = ()) -> dict[str, Any]:
    """The head plan with every step diffed against ``base``, deletes appended, the stateful-resource policy run."""
    region = head.get("region") or "us-east-1"
    base_steps = {s["urn"]: s for s in base.get("steps") or [] if s.get("op") != "delete"}
    head_urns = {s["urn"] for s in head.get("steps") or []}
    steps: list[dict[str, Any]] = []
    for s in head.get("steps") or []:
        old = base_steps.get(s["urn"])
        steps.append({**s, "op": "create"} if old is None else diff_step(old, s, region))
    for urn, old in base_steps.items():
        if urn not in head_urns:
            steps.append(
                {"op": "delete", "urn": urn, "provider": old.get("provider", ""), "oldState": old.get("newState")}
            )
    results = stateful_results(steps, head.get("environment"), allow_replacement)
    plan = {**head, "steps": steps, "changeSummary": summary(steps)}
    plan["policyResults"] = [*head.get("policyResults", []), *results]
    plan["diagnostics"] = [*head.get("diagnostics", []), *(policy_diagnostic(r) for r in results)]
    plan["base"] = {"stack": base.get("stack"), "steps": len(base_steps)}
    return plan


_SYMBOL = {"create": "+", "update": "~", "replace": "+-", "delete": "-"}


def diff_lines(plan: dict[str, Any]) -> list[str]:
    """The human form: one line per changed step (``+``, ``~``, ``+-``, ``-``) with its changed property paths."""
    lines = []
    for s in plan["steps"]:
        op = s["op"]
        if op == "same":
            continue
        state = s.get("newState") or s.get("oldState") or {}
        line = f"{_SYMBOL.get(op, op):<2} {op:<7} {state.get('type', '')} {logical_name(s['urn'])}"
        detailed = s.get("detailedDiff") or {}
        if detailed:
            parts = [f"{p} ({d['kind']})" if d["kind"].endswith("-replace") else p for p, d in detailed.items()]
            line += ": " + ", ".join(parts)
        if op == "update" and s.get("replacement") == "unknown":
            line += "  [replacement unknown offline: no source lists this type's replacing properties]"
        lines.append(line)
    counts = plan.get("changeSummary") or {}
    lines.append(
        ", ".join(f"{counts.get(op, 0)} to {op}" for op in ("create", "update", "replace", "delete"))
        + f", {counts.get('same', 0)} unchanged"
    )
    return lines


if __name__ == "__main__":
    from tools.cli import not_a_command

    not_a_command("tools.plan_diff", "python -m tools.preview --stack <name> --diff BASE.json")
