"""The generator of ``policies/replacement_rules.json``: what replaces a resource, per type, from its owner's source.

    venv/bin/python -m tools.replacement_rules --write [--tf-source DIR]   # regenerate tools/replacement_rules.json
    venv/bin/python -m tools.replacement_rules --check [--tf-source DIR]   # exit 1 when the file is stale

No provider plugin runs its ``Diff`` offline, so ``tools.plan_diff`` judges a changed property by the rules in
``policies/replacement_rules.json`` (read by :mod:`policies.replacement_rules`), each taken from the owner's machine-readable source:

* ``aws-native:*`` — the ``createOnlyProperties`` (replace) and ``conditionalCreateOnlyProperties`` (may replace)
  of the CloudFormation resource schema cfn-lint ships (read here, as data, through :func:`tools.render.resource_schema`).
* ``aws:*`` (pulumi-aws bridges terraform-provider-aws) — the attributes the Terraform schema marks ``ForceNew``
  (SDKv2) or ``RequiresReplace`` (plugin framework), and those a ``CustomizeDiff``/``ModifyPlan`` forces new only
  under a condition (may replace). Each entry keeps the Terraform names it was read as (``tf.forceNew``) with the
  ``repo@commit:path`` it was read from; the generator maps them to the SDK's camelCase inputs and checks every
  top-level name against the pulumi-aws *Args class. With ``--tf-source DIR`` (a checkout of
  hashicorp/terraform-provider-aws) it re-reads them from the Go schema (:func:`parse_go_schema`).
* ``kubernetes:*`` — the object's identity (``metadata.name``/``namespace``; a changed ``apiVersion`` or ``kind`` is
  another type token, so another URN) plus the fields a CRD (``x-kubernetes-validations`` with ``oldSelf``) or a
  validating webhook makes immutable (:data:`K8S_IMMUTABLE`, each with its source).
* ``pulumi-python:dynamic:Resource`` — keyed by its ``resourceKind`` input; the rules are derived by calling the
  provider's own ``diff()`` (:func:`_dynamic_rules`).
* pulumi-eks, Helm releases, the Kubernetes provider, components: :data:`STATIC`, each with its source.

``other`` says what a change of any property no rule names is: ``update`` when the source is complete (a
Terraform schema: every attribute that is not ForceNew is updated in place), ``may-replace`` when it is not.
The file is loaded once, lazily (:func:`policies.replacement_rules.load_rules`); ``tests/test_replacement_rules.py`` keeps it current and
fails when a type the program can register has no entry.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from policies.replacement_rules import DYNAMIC, RULES_FILE

RULES_FORMAT = 1

# --- generation -------------------------------------------------------------------------------------------------

# aws-native types the program registers (their rules come from cfn-lint's schemas).
AWS_NATIVE_TYPES = ("aws-native:sagemaker:Cluster",)

# Kubernetes kinds -> fields a validating webhook (or the API server) refuses to change, with the source.
LBC_WEBHOOK = (
    "kubernetes-sigs/aws-load-balancer-controller webhooks/elbv2/targetgroupbinding_validator.go "
    "checkImmutableFields (read at 0a27108f617683e51e6b39675b855aa31f650eac; identical at tag v2.13.0 "
    "73980cf1: UNCONFIRMED), webhook failurePolicy=fail"
)
K8S_IDENTITY_SOURCE = (
    "pulumi-kubernetes replaces an object whose metadata.name or metadata.namespace changes; apiVersion and "
    "kind are part of the type token, so a change is another resource (delete and create)"
)
K8S_KINDS: dict[str, dict[str, Any]] = {
    "kubernetes:core/v1:Namespace": {},
    "kubernetes:core/v1:ServiceAccount": {},
    "kubernetes:core/v1:ConfigMap": {},
    "kubernetes:core/v1:Secret": {
        "replace": ["type"],
        "why": "the API server refuses to change a Secret's type (kubernetes/kubernetes "
        "pkg/apis/core/validation ValidateSecretUpdate: `field is immutable`; UNCONFIRMED line)",
    },
    "kubernetes:rbac.authorization.k8s.io/v1:Role": {},
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": {
        "replace": ["roleRef"],
        "why": "the API server refuses to change a binding's roleRef (Kubernetes RBAC documentation: 'After you "
        "create a binding, you cannot change the Role or ClusterRole that it refers to')",
    },
    "kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding": {
        "replace": ["spec.targetGroupARN", "spec.targetType", "spec.vpcID", "spec.ipAddressType"],
        "why": LBC_WEBHOOK,
        "crd": "third-party/elbv2.k8s.aws_targetgroupbindings.yaml",
    },
    "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig": {
        "crd": "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
        "note": "the operator's validating webhooks are not public: a change it refuses cannot be known offline",
    },
    "kubernetes:inference.sagemaker.aws.amazon.com/v1:JumpStartModel": {
        "crd": "inference.sagemaker.aws.amazon.com_jumpstartmodels.yaml",
        "note": "the operator's validating webhooks are not public: a change it refuses cannot be known offline",
    },
    "kubernetes:inference.sagemaker.aws.amazon.com/v1alpha1:InferenceGatewayConfig": {
        "note": "no public CRD or webhook: the identity rules only",
    },
}

_P_K8S = "pulumi/pulumi-kubernetes@94977969 provider/pkg/provider"
_P_EKS = "pulumi/pulumi-eks@7bf0c1b179932ce51cb02dfc4f9bd0d7550cb0cd nodejs/eks/cluster/cluster.ts"
_TF_EKS = "hashicorp/terraform-provider-aws@00555dc5b38f92abbfa230badea0ed0754cea81e:internal/service/eks/cluster.go"

# Types whose diff is code we read (not a schema the generator can parse): the rules with their sources.
STATIC: dict[str, dict[str, Any]] = {
    "eks:index:Cluster": {
        "source": f"{_P_EKS} (component inputs -> its aws.eks.Cluster) and {_TF_EKS} (ForceNew)",
        "replace": ["name", "serviceRole", "kubernetesServiceIpAddressRange", "ipFamily"],
        "update": [
            "version",
            "tags",
            "clusterTags",
            "endpointPublicAccess",
            "endpointPrivateAccess",
            "publicAccessCidrs",
            "enabledClusterLogTypes",
            "vpcCniOptions",
            "kubeProxyAddonOptions",
            "corednsAddonOptions",
            "accessEntries",
        ],
        # A remote component: what else a change does depends on the children pulumi-eks creates from it
        # (security groups, the aws-auth ConfigMap, the OIDC provider, ...), which no mock run shows.
        "other": "may-replace",
    },
    "kubernetes:helm.sh/v3:Release": {
        "source": f"{_P_K8S}/helm_release.go Diff (a changed release name or namespace replaces; UNCONFIRMED line)",
        "replace": ["name", "namespace"],
        "other": "update",
    },
    "pulumi:providers:kubernetes": {
        "source": f"{_P_K8S}/provider.go DiffConfig (a kubeconfig for another cluster replaces the provider, "
        "and with it every object it manages; decided from the cluster the kubeconfig names)",
        "mayReplace": [{"path": "kubeconfig", "why": "DiffConfig compares the clusters the kubeconfigs name"}],
        "other": "update",
    },
    "random:index/randomPassword:RandomPassword": {
        "source": "hashicorp/terraform-provider-random resource_password.go (not read here)",
        "other": "may-replace",
    },
}

# Types that are never diffed by a provider.
GLOBS: dict[str, dict[str, Any]] = {
    "hyperpod:*": {
        "source": "a ComponentResource: no provider diffs it; its children carry every change",
        "other": "update",
    },
    "pulumi:pulumi:Stack": {"source": "the stack resource: its outputs only", "other": "update"},
    "pulumi:providers:*": {
        "source": "a default provider (its version and the stack's provider config)",
        "other": "update",
    },
}


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _tf_path(path: str) -> str:
    return ".".join(_camel(p) for p in path.split("."))


def sdk_input_names(token: str) -> set[str] | None:
    """The camelCase input names of a pulumi-aws resource's *Args class (None when the SDK has no such class)."""
    import importlib

    _, module, name = token.split(":")
    mod_path = "pulumi_aws." + module.split("/")[0]
    try:
        mod = importlib.import_module(mod_path)
    except ImportError:
        return None
    cls = getattr(mod, f"{name}Args", None)
    if cls is None:
        return None
    names = set()
    for attr, value in vars(cls).items():
        if isinstance(value, property):
            names.add(getattr(value.fget, "_pulumi_name", None) or _camel(attr))
    return names


def _terraform_entry(token: str, tf: dict[str, Any]) -> dict[str, Any]:
    """The rules of a pulumi-aws type from its Terraform facts; raises when a name is not an SDK input."""
    replace = sorted({_tf_path(p) for p in tf.get("forceNew", [])})
    may = sorted(({"path": _tf_path(c["path"]), "why": c["why"]} for c in tf.get("conditional", [])), key=str)
    names = sdk_input_names(token)
    if names is None:
        raise ValueError(f"{token}: no *Args class in the installed pulumi-aws SDK")
    unknown = sorted({p.split(".")[0] for p in replace} - names)
    if unknown:
        raise ValueError(f"{token}: {unknown} are not inputs of the pulumi-aws SDK's Args class")
    if tf.get("read", True):
        source = f"{tf['repo']}@{tf['commit']}:{tf['path']} ({tf['resource']}, ForceNew/RequiresReplace)"
    else:
        source = (
            f"{tf['repo']}:{tf['path']} ({tf['resource']}) not read yet: its ForceNew attributes are unknown here, "
            "so every change may replace"
        )
    entry: dict[str, Any] = {"owner": "terraform-provider-aws", "source": source, "tf": tf, "replace": replace}
    if may:
        entry["mayReplace"] = may
    entry["references"] = sorted(_tf_path(p) for p in tf.get("forceNew", []) if re.search(r"_(id|ids|arn)$", p))
    entry["other"] = "update" if tf.get("read", True) else "may-replace"
    return entry


def _aws_native_entry(token: str, region: str = "us-east-1") -> dict[str, Any]:
    from tools.render import cfn_type, resource_schema

    schema = resource_schema(cfn_type(token), region)
    if schema is None:
        raise ValueError(f"{token}: cfn-lint ships no schema for {cfn_type(token)}")

    def camel(p: str) -> str:
        parts = p.removeprefix("/properties/").split("/")
        return ".".join(x[:1].lower() + x[1:] for x in parts if x != "*")

    import importlib.metadata

    entry: dict[str, Any] = {
        "owner": "cloudformation",
        "source": f"createOnlyProperties of {cfn_type(token)} (cfn-lint "
        f"{importlib.metadata.version('cfn-lint')} CloudFormation schema, {region})",
        "replace": sorted(camel(p) for p in schema.get("createOnlyProperties") or []),
        "other": "update",
    }
    conditional = schema.get("conditionalCreateOnlyProperties") or []
    if conditional:
        entry["mayReplace"] = [
            {"path": camel(p), "why": f"conditionalCreateOnlyProperties of {cfn_type(token)}"}
            for p in sorted(conditional)
        ]
    return entry


def _crd_immutable(crds_dir: Path | None, crd: str | None) -> list[str]:
    """Spec paths a CRD makes immutable with an ``oldSelf`` CEL rule (``x-kubernetes-validations``)."""
    if crds_dir is None or crd is None or not (crds_dir / crd).is_file():
        return []
    import yaml

    doc = yaml.safe_load((crds_dir / crd).read_text(encoding="utf-8"))
    out: set[str] = set()

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            for rule in node.get("x-kubernetes-validations") or []:
                if "oldSelf" in str(rule.get("rule", "")) and path:
                    out.add(".".join(path))
            for key, sub in (node.get("properties") or {}).items():
                walk(sub, [*path, key])
            if isinstance(node.get("items"), dict):
                walk(node["items"], path)

    for version in doc["spec"]["versions"]:
        walk(version["schema"]["openAPIV3Schema"], [])
    return sorted(out)


def _kubernetes_entry(token: str, facts: dict[str, Any], crds_dir: Path | None) -> dict[str, Any]:
    replace = ["metadata.name", "metadata.namespace", *facts.get("replace", [])]
    sources = [K8S_IDENTITY_SOURCE]
    if facts.get("why"):
        sources.append(facts["why"])
    cel = _crd_immutable(crds_dir, facts.get("crd"))
    if cel:
        replace += cel
        sources.append(f"x-kubernetes-validations oldSelf rules of {facts['crd']}")
    entry: dict[str, Any] = {"owner": "kubernetes", "source": "; ".join(sources), "replace": sorted(set(replace))}
    if facts.get("note"):
        entry["note"] = facts["note"]
    entry["other"] = "update"
    return entry


def _dynamic_rules() -> dict[str, dict[str, Any]]:
    """Rules of the boto3 dynamic providers, read off their own ``diff()`` by probing it key by key."""
    from components.global_inference_gateway import RESOURCE_KIND, GlobalInferenceGatewayProvider

    provider = GlobalInferenceGatewayProvider.__new__(GlobalInferenceGatewayProvider)
    keys = ["name", "region", "executionRoleArn", "routingWeights", "tags", "waitTimeoutSeconds", "environment"]
    keys += ["members", "accountId", "partition", "awsProfile"]
    replace, update, ignore = [], [], []
    for key in keys:
        probe_old: Any = [{"stack": "a", "name": "g", "namespace": "n", "clusterArn": "x", "region": "r"}]
        probe_new: Any = [{"stack": "a", "name": "g", "namespace": "n", "clusterArn": "y", "region": "r"}]
        old, new = ({key: probe_old}, {key: probe_new}) if key == "members" else ({key: "a"}, {key: "b"})
        result = provider.diff("id", old, new)
        if key in (result.replaces or []):
            replace.append(key)
        elif result.changes:
            update.append(key)
        else:
            ignore.append(key)
    return {
        f"{DYNAMIC}#{RESOURCE_KIND}": {
            "owner": "dynamic-provider",
            "source": "components/global_inference_gateway.py GlobalInferenceGatewayProvider.diff (probed key by "
            "key by the generator; delete-before-replace)",
            "replace": sorted(replace),
            "update": sorted(update),
            "ignore": sorted([*ignore, "__provider", "resourceKind"]),
            "other": "may-replace",
        }
    }


def generate(existing: dict[str, Any] | None, *, tf_source: Path | None = None, crds_dir: Path | None = None) -> dict:
    """The rule data: regenerated from cfn-lint, the SDK, the CRDs and the code; Terraform facts re-read from
    ``tf_source`` when given, else carried over from ``existing`` (they are the generator's input then)."""
    types: dict[str, dict[str, Any]] = {}
    for token in AWS_NATIVE_TYPES:
        types[token] = _aws_native_entry(token)
    for token, entry in sorted(((existing or {}).get("types") or {}).items()):
        tf = entry.get("tf")
        if tf is None:
            continue
        if tf_source is not None and tf.get("read", True):
            tf = {**tf, **reread_terraform(tf, tf_source)}
        types[token] = _terraform_entry(token, tf)
    for token, facts in K8S_KINDS.items():
        types[token] = _kubernetes_entry(token, facts, crds_dir)
    types.update(_dynamic_rules())
    for token, entry in STATIC.items():
        types[token] = dict(entry)
    return {
        "format": RULES_FORMAT,
        "generatedBy": "python -m tools.replacement_rules --write",
        "types": dict(sorted(types.items())),
        "globs": GLOBS,
    }


# --- reading a Terraform Go schema ------------------------------------------------------------------------------

_ATTR_CONST = re.compile(r"^\s*(Attr\w+)\s*=\s*\"([a-z0-9_]+)\"", re.M)
_KEY = re.compile(r"(?:\"([a-z0-9_]+)\"|names\.(Attr\w+))\s*:\s*(?:\{|([A-Za-z_][\w.]*(?:\(\))?),)")


def _attr_names(tf_source: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted((tf_source / "names").glob("attr_consts*.go")):
        out.update(dict(_ATTR_CONST.findall(path.read_text(encoding="utf-8"))))
    return out


def parse_go_schema(text: str, attr_names: dict[str, str] | None = None) -> list[str]:
    """Dotted attribute paths a Terraform Go schema marks ``ForceNew: true`` or ``RequiresReplace()``.

    Walks the ``"name": { ... }`` entries by brace depth; an entry's own flags are those at its top level
    (not inside a nested ``Elem``). Good enough for the schema literals of terraform-provider-aws; shared
    blocks defined in other variables or files are not followed (the entry then needs them by hand).
    """
    attr_names = attr_names or {}
    found: list[str] = []
    stack: list[tuple[str, int]] = []  # (attribute path, depth at which its body opened)
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            while stack and stack[-1][1] == depth:
                stack.pop()
            depth -= 1
        elif ch in '"n':
            m = _KEY.match(text, i)
            if m and m.group(3) is None:
                name = m.group(1) or attr_names.get(m.group(2) or "", _snake(m.group(2) or ""))
                parent = stack[-1][0] + "." if stack else ""
                depth += 1
                stack.append((parent + name, depth))
                i = m.end()
                continue
            if m:
                i = m.end()
                continue
        elif stack and stack[-1][1] == depth and text.startswith(("ForceNew: true", "ForceNew:true"), i):
            found.append(stack[-1][0])
        elif stack and stack[-1][1] == depth and text.startswith("RequiresReplace()", i):
            found.append(stack[-1][0])
        i += 1
    return sorted(set(found))


def _snake(attr_const: str) -> str:
    name = attr_const.removeprefix("Attr")
    return re.sub(r"(?<!^)(?=[A-Z][a-z])|(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def reread_terraform(tf: dict[str, Any], tf_source: Path) -> dict[str, Any]:
    """``forceNew`` of one entry as the Go file in ``tf_source`` states it today."""
    text = (tf_source / tf["path"]).read_text(encoding="utf-8")
    return {"forceNew": parse_go_schema(text, _attr_names(tf_source))}


def _crds_dir() -> Path | None:
    shared = Path(__file__).resolve().parents[2] / "shared" / "crds"
    return shared if shared.is_dir() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.replacement_rules", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {RULES_FILE.name}")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs from a regeneration")
    parser.add_argument("--tf-source", type=Path, help="a checkout of hashicorp/terraform-provider-aws")
    args = parser.parse_args(argv)
    existing = json.loads(RULES_FILE.read_text(encoding="utf-8")) if RULES_FILE.exists() else None
    data = generate(existing, tf_source=args.tf_source, crds_dir=_crds_dir())
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    if args.write:
        RULES_FILE.write_text(text, encoding="utf-8")
        print(f"wrote {RULES_FILE} ({len(data['types'])} types)")
        return 0
    current = RULES_FILE.read_text(encoding="utf-8") if RULES_FILE.exists() else ""
    if current != text:
        print(f"{RULES_FILE} is stale: run python -m tools.replacement_rules --write", file=sys.stderr)
        return 1
    print(f"{RULES_FILE} is current ({len(data['types'])} types)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
