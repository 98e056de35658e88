"""The generator of ``policies/replacement_rules.json``: what replaces a resource, per type, from its owner's source.

    venv/bin/python -m tools.generate.replacement_rules --write                 # regenerate policies/replacement_rules.json
    venv/bin/python -m tools.generate.replacement_rules --check                 # exit 1 when the file is stale
    venv/bin/python -m tools.generate.replacement_rules --tf-source DIR --tf-commit SHA   # compare with the Go files

No provider plugin runs its ``Diff`` offline, so ``tools.plan.diff`` judges a changed property by the rules in
``policies/replacement_rules.json`` (read by :mod:`policies.replacement_rules`), each taken from the owner's
machine-readable source:

* ``aws-native:*`` (every aws-native record with deploy actions) — the ``createOnlyProperties`` (replace) and ``conditionalCreateOnlyProperties`` (may replace)
  of the CloudFormation resource schema cfn-lint ships (read here, as data, through :func:`tools.plan.render.resource_schema`).
* ``aws:*`` (pulumi-aws bridges terraform-provider-aws) — the attributes the Terraform schema marks ``ForceNew``
  (SDKv2) or ``RequiresReplace`` (plugin framework), those a ``CustomizeDiff``/``ModifyPlan`` forces new only
  under a condition (may replace), SDK inputs newer than the Go file read (may replace), and ``region`` on every
  Region-aware type (:data:`REGION_SOURCE`). What was read is in the type's record (``replacement_facts.tf``:
  Terraform names, the ``repo@commit:path`` of the file version read) and copied to its entry; the generator maps the names to the SDK's camelCase inputs by
  walking the pulumi-aws *Args classes (:func:`sdk_path`) and fails on a name the SDK does not have. With
  ``--tf-source DIR --tf-commit SHA`` (a terraform-provider-aws tree) the records' facts read at SHA are re-read
  from their Go files by :func:`parse_go_schema` and every difference is printed.
* ``kubernetes:*`` — the object's identity (``metadata.name``/``namespace``; a changed ``apiVersion`` or ``kind`` is
  another type token, so another URN) plus the fields a CRD (``x-kubernetes-validations`` with ``oldSelf``) or a
  validating webhook makes immutable (``replacement_facts`` of the kind's record, each with its source).
* ``pulumi-python:dynamic:Resource`` — keyed by its ``resourceKind`` input; the rules are derived by calling the
  provider's own ``diff()`` (:func:`_dynamic_rules`).
* pulumi-eks, Helm releases, the Kubernetes provider, components: rules read by hand from their code, in the
  ``replacement_facts`` of their records (``policies/resource_types``), each with its source.

``other`` says what a change of any property no rule names is: ``update`` when the source is complete (a
Terraform schema: every attribute that is not ForceNew is updated in place), ``may-replace`` when it is not.
The file is loaded once, lazily (:func:`policies.replacement_rules.load_rules`); ``tests/test_replacement_rules.py``
keeps it current and fails when a type the program can register has no entry.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from policies.replacement_rules import DYNAMIC, RULES_FILE
from policies.resource_types import load_resource_types
from policies.resource_types.schema import ReplacementFacts
from tools.report import cli

RULES_FORMAT = 1

# --- generation -------------------------------------------------------------------------------------------------

# The Kubernetes objects' rules start from their identity (``replacement_facts`` of their records add the rest).
K8S_IDENTITY_SOURCE = (
    "pulumi-kubernetes replaces an object whose metadata.name or metadata.namespace changes; apiVersion and "
    "kind are part of the type token, so a change is another resource (delete and create)"
)


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _sdk_args_class(token: str) -> tuple[Any, type] | None:
    """(package module, *Args class) of a pulumi-aws resource token, the class defined in the resource's module.

    Where a nested input type of another resource has the same name (``s3.BucketLoggingArgs`` is
    ``Bucket.logging``'s type), the SDK names the resource's args ``BucketLoggingInitArgs``.
    """
    import importlib

    _, module, name = token.split(":")
    try:
        package = importlib.import_module("pulumi_aws." + module.split("/")[0])
    except ImportError:
        return None
    resource = getattr(package, name, None)
    if resource is None:
        return None
    home = sys.modules[resource.__module__]
    for candidate in (f"{name}InitArgs", f"{name}Args"):
        cls = getattr(home, candidate, None)
        if isinstance(cls, type) and cls.__module__ == home.__name__:
            return package, cls
    return None


_NESTED_ARGS = re.compile(r"ForwardRef\('(\w+Args)'\)")


def _sdk_properties(cls: type) -> dict[str, str | None]:
    """{camelCase input name: the nested *Args class name of its value, or None} of an SDK args class."""
    out: dict[str, str | None] = {}
    for attr, value in vars(cls).items():
        if isinstance(value, property):
            name = getattr(value.fget, "_pulumi_name", None) or _camel(attr)
            nested = _NESTED_ARGS.search(str(value.fget.__annotations__.get("return", "")))
            out[name] = nested.group(1) if nested else None
    return out


def sdk_input_names(token: str) -> set[str] | None:
    """The camelCase input names of a pulumi-aws resource's *Args class (None when the SDK has no such class)."""
    found = _sdk_args_class(token)
    return set(_sdk_properties(found[1])) if found else None


def sdk_path(token: str, tf_path: str) -> str | None:
    """The SDK's camelCase path of a Terraform attribute path (``subnet_mapping.subnet_id`` ->
    ``subnetMappings.subnetId``), walking the nested *Args classes; None when a segment is no SDK input.

    The bridge pluralises list blocks (``default_action`` -> ``defaultActions``, ``client_id_list`` ->
    ``clientIdLists``), so each segment is tried as is and pluralised.
    """
    found = _sdk_args_class(token)
    if found is None:
        return None
    package, top = found
    cls: type | None = top
    out: list[str] = []
    for segment in tf_path.split("."):
        if cls is None:
            return None
        props = _sdk_properties(cls)
        camel = _camel(segment)
        candidates = [camel, camel + "s", camel + "es"]
        if camel.endswith("y"):
            candidates.append(camel[:-1] + "ies")
        name = next((c for c in candidates if c in props), None)
        if name is None:
            return None
        out.append(name)
        nested = props[name]
        cls = getattr(package, nested, None) if nested else None
    return ".".join(out)


# Terraform AWS Provider v6 adds a top-level ``region`` to every Region-aware resource; changing it replaces.
REGION_SOURCE = (
    "hashicorp/terraform-provider-aws@0cb788ce0d5adada2f2b98572dc8462f8ed5738d:"
    "website/docs/guides/enhanced-region-support.html.markdown ('Changing the value of `region` will force "
    "resource replacement'); the SDK's Args class has `region` exactly for the Region-aware types"
)


NOT_IN_COPY = (
    "an input of the pulumi-aws SDK that the terraform-provider-aws copy read does not have (newer than that "
    "copy): whether a change of it replaces was not read"
)


def _terraform_entry(token: str, tf: dict[str, Any]) -> dict[str, Any]:
    """The rules of a pulumi-aws type from its Terraform facts; raises when a name is not an SDK input.

    ``tf`` holds what was read: ``forceNew`` and ``conditional`` (Terraform paths), ``notInCopy`` (SDK inputs
    the copy read lacks: may replace), ``sdkNames`` (pulumi-aws renames, ``alarm_name`` -> ``name``), ``commit``
    (the file version read) and ``alsoRead`` (what else was read, or not).
    """
    names = sdk_input_names(token)
    if names is None:
        raise ValueError(f"{token}: no *Args class in the installed pulumi-aws SDK")
    renames: dict[str, str] = tf.get("sdkNames") or {}

    def mapped(path: str) -> str:
        head, _, rest = path.partition(".")
        if head in renames:
            return renames[head] + (("." + (sdk_path(token, path) or "").split(".", 1)[-1]) if rest else "")
        out = sdk_path(token, path)
        if out is None:
            raise ValueError(f"{token}: Terraform attribute {path!r} maps to no input of the pulumi-aws SDK")
        return out

    read = tf.get("read", True)
    replace = {mapped(p) for p in tf.get("forceNew", [])}
    if read and "region" in names:
        replace.add("region")
    may = [{"path": mapped(c["path"]), "why": c["why"]} for c in tf.get("conditional", [])]
    may += [{"path": mapped(p), "why": NOT_IN_COPY} for p in tf.get("notInCopy", [])]
    if read:
        at = f"@{tf['commit']}" if tf.get("commit") else ""
        source = f"{tf['repo']}{at}:{tf['path']} ({tf['resource']}, ForceNew/RequiresReplace)"
        if tf.get("alsoRead"):
            source += f"; {tf['alsoRead']}"
        if "region" in names:
            source += f"; region: {REGION_SOURCE}"
    else:
        source = (
            f"{tf['repo']}:{tf['path']} ({tf['resource']}) not read yet: its ForceNew attributes are unknown here, "
            "so every change may replace"
        )
    entry: dict[str, Any] = {"owner": "terraform-provider-aws", "source": source, "tf": tf, "replace": sorted(replace)}
    if may:
        entry["mayReplace"] = sorted(may, key=lambda m: (m["path"], m["why"]))
    entry["references"] = sorted(mapped(p) for p in tf.get("forceNew", []) if re.search(r"_(id|ids|arn)$", p))
    entry["other"] = "update" if read else "may-replace"
    return entry


def _aws_native_entry(token: str, region: str = "us-east-1") -> dict[str, Any]:
    from tools.plan.render import cfn_type, resource_schema

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
    from policies.yaml_files import load_yaml_file

    doc = load_yaml_file(crds_dir / crd)
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


def _kubernetes_entry(facts: ReplacementFacts, crds_dir: Path | None) -> dict[str, Any]:
    replace = ["metadata.name", "metadata.namespace", *facts.replace]
    sources = [K8S_IDENTITY_SOURCE]
    if facts.why:
        sources.append(facts.why)
    cel = _crd_immutable(crds_dir, facts.crd)
    if cel:
        replace += cel
        sources.append(f"x-kubernetes-validations oldSelf rules of {facts.crd}")
    entry: dict[str, Any] = {"owner": "kubernetes", "source": "; ".join(sources), "replace": sorted(set(replace))}
    if facts.note:
        entry["note"] = facts.note
    entry["other"] = "update"
    return entry


def _read_by_hand(facts: ReplacementFacts) -> dict[str, Any]:
    """The rules a record states from its owner's code (``owner: code``), or for what no provider diffs."""
    entry: dict[str, Any] = {"source": facts.source}
    if facts.replace:
        entry["replace"] = list(facts.replace)
    if facts.update:
        entry["update"] = list(facts.update)
    if facts.may_replace:
        entry["mayReplace"] = [m.model_dump() for m in facts.may_replace]
    entry["other"] = facts.other
    return entry


def _probe(provider: Any, keys: list[str], probes: dict[str, tuple[Any, Any]]) -> tuple[list, list, list]:
    """``(replace, update, ignore)`` of a dynamic provider's ``diff()``, probed one key at a time."""
    replace, update, ignore = [], [], []
    for key in keys:
        old, new = probes.get(key, ("a", "b"))
        result = provider.diff("id", {key: old}, {key: new})
        if key in (result.replaces or []):
            replace.append(key)
        elif result.changes:
            update.append(key)
        else:
            ignore.append(key)
    return replace, update, ignore


def _dynamic_rules() -> dict[str, dict[str, Any]]:
    """Rules of the boto3 dynamic providers, read off their own ``diff()`` by probing it key by key."""
    from components import cluster_scheduler_config as scheduler
    from components import destroy_waits
    from components import global_inference_gateway as gateway
    from components import hyperpod_node_software as node_software
    from components import hyperpod_node_wait as node_wait
    from components import target_health_wait as health_wait
    from components.dynamic_provider import CREDENTIAL_KEYS

    member = {"stack": "a", "name": "g", "namespace": "n", "region": "r"}
    providers: list[tuple[str, type, str, list[str], dict[str, tuple[Any, Any]]]] = [
        (
            gateway.RESOURCE_KIND,
            gateway.GlobalInferenceGatewayProvider,
            "components/global_inference_gateway.py GlobalInferenceGatewayProvider.diff (probed key by key by the "
            "generator; delete-before-replace)",
            [
                "name",
                "region",
                "executionRoleArn",
                "routingWeights",
                "tags",
                "waitTimeoutSeconds",
                "environment",
                "members",
                "accountId",
                "partition",
                *CREDENTIAL_KEYS,
            ],
            {"members": ([{**member, "clusterArn": "x"}], [{**member, "clusterArn": "y"}])},
        ),
        (
            scheduler.RESOURCE_KIND,
            scheduler.ClusterSchedulerConfigProvider,
            "components/cluster_scheduler_config.py ClusterSchedulerConfigProvider.diff (probed key by key by the "
            "generator; name, cluster and region are createOnly in AWS::SageMaker::ClusterSchedulerConfig)",
            [
                "name",
                "clusterArn",
                "region",
                "schedulerConfig",
                "description",
                "tags",
                "waitTimeoutSeconds",
                *CREDENTIAL_KEYS,
            ],
            {"schedulerConfig": ({"FairShare": "Enabled"}, {"FairShare": "Disabled"})},
        ),
        (
            node_wait.RESOURCE_KIND,
            node_wait.HyperPodNodeWaitProvider,
            "components/hyperpod_node_wait.py HyperPodNodeWaitProvider.diff (probed key by key by the generator; "
            "it owns nothing in AWS, so a replacement only waits again)",
            [
                "clusterArn",
                "region",
                "groups",
                "timeoutSeconds",
                "pollSeconds",
                *CREDENTIAL_KEYS,
                "deepHealthChecks",
                "runningNodes",
            ],
            {"groups": ({"g": 1}, {"g": 2})},
        ),
        (
            node_software.RESOURCE_KIND,
            node_software.HyperPodNodeSoftwareProvider,
            "components/hyperpod_node_software.py HyperPodNodeSoftwareProvider.diff (probed key by key by the "
            "generator; it owns nothing in AWS: a kubernetesVersion update rolls the nodes, a replacement does not)",
            [
                "clusterArn",
                "region",
                "kubernetesVersion",
                "groups",
                "timeoutSeconds",
                "pollSeconds",
                *CREDENTIAL_KEYS,
                "rolledGroups",
                "imageReleases",
            ],
            {"groups": ({"g": {}}, {"g": {"WaitIntervalInSeconds": 1}})},
        ),
        (
            health_wait.RESOURCE_KIND,
            health_wait.TargetHealthWaitProvider,
            "components/target_health_wait.py TargetHealthWaitProvider.diff (probed key by key by the generator; "
            "it owns nothing in AWS, so a replacement only waits again)",
            [
                "targetGroupArn",
                "region",
                "endpoint",
                "timeoutSeconds",
                "pollSeconds",
                *CREDENTIAL_KEYS,
                "targetStates",
            ],
            {},
        ),
        (
            destroy_waits.DRAIN_KIND,
            destroy_waits.LoadBalancerControllerDrainProvider,
            "components/destroy_waits.py _DestroyWait.diff (probed key by key by the generator; it owns nothing in "
            "AWS: every change updates in place)",
            ["region", "clusterName", "timeoutSeconds", "pollSeconds", *CREDENTIAL_KEYS],
            {},
        ),
        (
            destroy_waits.CLEANUP_KIND,
            destroy_waits.GuardDutyEndpointCleanupProvider,
            "components/destroy_waits.py _DestroyWait.diff (probed key by key by the generator; it owns nothing in "
            "AWS: every change updates in place)",
            ["region", "vpcId", "subnetIds", "timeoutSeconds", *CREDENTIAL_KEYS],
            {},
        ),
    ]
    out: dict[str, dict[str, Any]] = {}
    for kind, cls, source, keys, probes in providers:
        replace, update, ignore = _probe(object.__new__(cls), keys, probes)
        out[f"{DYNAMIC}#{kind}"] = {
            "owner": "dynamic-provider",
            "source": source,
            "replace": sorted(replace),
            "update": sorted(update),
            "ignore": sorted([*ignore, "__provider", "resourceKind"]),
            "other": "may-replace",
        }
    return out


def generate(*, crds_dir: Path | None = None) -> dict:
    """The rule data, from the records (``policies/resource_types``: the Terraform facts of each pulumi-aws type,
    the Kubernetes kinds' and the hand-read rules), cfn-lint's schemas, the SDK, the CRDs and the code."""
    records = load_resource_types().types
    facts = {token: r.replacement_facts for token, r in records.items() if r.replacement_facts is not None}
    types: dict[str, dict[str, Any]] = {}
    for token, record in records.items():
        if token.startswith("aws-native:") and record.deploy is not None:
            types[token] = _aws_native_entry(token)
    for token, f in sorted(facts.items()):
        if f.tf is not None:
            types[token] = _terraform_entry(token, f.tf.model_dump(exclude_unset=True))
    for token, f in facts.items():
        if f.owner == "kubernetes":
            types[token] = _kubernetes_entry(f, crds_dir)
    types.update(_dynamic_rules())
    types.update({token: _read_by_hand(f) for token, f in facts.items() if f.owner == "code"})
    return {
        "format": RULES_FORMAT,
        "generatedBy": "python -m tools.generate.replacement_rules --write",
        "types": dict(sorted(types.items())),
        "globs": {token: _read_by_hand(f) for token, f in sorted(facts.items()) if f.owner == "engine"},
    }


# --- reading a Terraform Go schema ------------------------------------------------------------------------------

_ATTR_CONST = re.compile(r"^\s*(Attr\w+)\s*=\s*\"([a-z0-9_]+)\"", re.M)
_GO_TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<string>"(?:[^"\\\n]|\\.)*"|`[^`]*`)
      | (?P<rune>'(?:[^'\\\n]|\\.)+')
      | (?P<ident>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)
      | (?P<punct>\S)""",
    re.X | re.S,
)
_TF_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_GO_STRING_CONST = re.compile(r"^\s*([a-z]\w*)\s*=\s*\"([a-z][a-z0-9_]*)\"\s*$", re.M)
# Tokens allowed between ``key:`` and the ``{`` of its schema literal (``schema.StringAttribute``, ``&schema.Schema``).
_TYPE_TOKENS = frozenset("&*[]")
_ALWAYS_REPLACE = ("RequiresReplace", "RequiresReplaceIfConfigured")
# The type of an attribute's literal ends so (``&schema.Schema{``, ``schema.StringAttribute{``, ``ListNestedBlock{``);
# ``"x": []any{`` in a flatten function is data, not schema.
_SCHEMA_TYPES = ("Schema", "Attribute", "Block")


def _attr_names(tf_source: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted((tf_source / "names").glob("attr_consts*.go")):
        out.update(dict(_ATTR_CONST.findall(path.read_text(encoding="utf-8"))))
    return out


def _go_tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, line) of a Go source, comments dropped, string literals kept whole (so braces in them do
    not count)."""
    out: list[tuple[str, str, int]] = []
    line = 1
    pos = 0
    for m in _GO_TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        kind = m.lastgroup or "punct"
        if kind != "comment":
            out.append((kind, m.group(), line))
    return out


def parse_go_schema(text: str, attr_names: dict[str, str] | None = None) -> dict[str, list[Any]]:
    """What a terraform-provider-aws Go file says replaces the resource, from its schema literals.

    Returns ``{"forceNew": [dotted paths], "conditional": [{"path", "why"}], "attributes": [top-level names]}``:

    * ``forceNew`` — an attribute whose schema literal carries ``ForceNew: true`` (SDKv2; also on its ``Elem``)
      or a ``RequiresReplace()`` / ``RequiresReplaceIfConfigured()`` plan modifier (plugin framework), or whose
      value is ``...ForceNew()`` (``tftags.TagsSchemaForceNew()``).
    * ``conditional`` — replacement only under a condition: ``RequiresReplaceIf...`` plan modifiers,
      ``customdiff.ForceNewIf[Change]("x", ...)`` and ``d.ForceNew("x")`` in a ``CustomizeDiff``, and
      ``resp.RequiresReplace`` paths set in a ``ModifyPlan`` (``path.Root("x")``).

    An attribute literal is ``KEY: [type] {`` with KEY a snake_case string or a ``names.Attr*`` constant;
    every other brace (``Elem: &schema.Resource{``, ``map[string]*schema.Schema{``, function bodies) is
    structure and adds nothing to the path. Comments and string literals are tokens, so braces in them do not
    count. Schema fragments built by functions in other files are not followed: the caller lists them by hand.
    """
    names = dict(attr_names or {})
    names.update(_GO_STRING_CONST.findall(text))  # file constants used as keys (routeDestinationCIDRBlock)
    tokens = _go_tokens(text)
    force: set[str] = set()
    conditional: dict[str, str] = {}
    frames: list[str | None] = []  # per open brace: the attribute path it opens, or None (structure)
    top: set[str] = set()  # top-level attributes whose schema literal is in the file

    def key_name(tok: tuple[str, str, int]) -> str | None:
        kind, value, _ = tok
        if kind == "string" and value.startswith('"') and _TF_NAME.match(value[1:-1]):
            return value[1:-1]
        if kind == "ident" and value.startswith("names.Attr"):
            const = value.removeprefix("names.")
            return names.get(const) or _snake(const)
        if kind == "ident" and value in names and _TF_NAME.match(names[value]):
            return names[value]
        return None

    def current() -> str | None:
        return next((f for f in reversed(frames) if f is not None), None)

    def joined(name: str) -> str:
        parent = current()
        return f"{parent}.{name}" if parent else name

    def arg_path(i: int) -> str | None:
        """The attribute named by the call argument starting at token ``i`` (``"a.0.b"`` -> ``a.b``)."""
        if i >= len(tokens):
            return None
        kind, value, _ = tokens[i]
        if kind == "string" and value.startswith('"'):
            parts = [p for p in value[1:-1].split(".") if p and not p.isdigit() and p != "*"]
            return ".".join(parts) if parts and all(_TF_NAME.match(p) for p in parts) else None
        return key_name(tokens[i])

    for i, (kind, value, line) in enumerate(tokens):
        if value == "{" and kind == "punct":
            j = i - 1  # step back over the literal's type (``schema.StringAttribute``, ``&schema.Schema``)
            while j >= 0 and (tokens[j][0] == "ident" or tokens[j][1] in _TYPE_TOKENS):
                j -= 1
            literal = tokens[i - 1][1] if j < i - 1 else ""  # the type right before "{", if any
            schema_like = not literal or literal.endswith(_SCHEMA_TYPES)
            name = key_name(tokens[j - 1]) if j >= 1 and tokens[j][1] == ":" and schema_like else None
            if name and current() is None:
                top.add(name)
            frames.append(joined(name) if name else None)
        elif value == "}" and kind == "punct":
            if frames:
                frames.pop()
        elif kind == "ident":
            last = value.rsplit(".", 1)[-1]
            nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
            if nxt in ("(", ",", "}") and i >= 2 and tokens[i - 1][1] == ":" and current() is None:
                shared = key_name(tokens[i - 2])  # names.AttrTags: tftags.TagsSchema(), "ingress": ruleSetSchema,
                if shared and (nxt == "(" or (value[:1].islower() and value not in ("true", "false", "nil"))):
                    top.add(shared)
            if last == "ForceNew" and nxt == ":" and i + 2 < len(tokens) and tokens[i + 2][1] == "true":
                if current():
                    force.add(str(current()))
            elif last.startswith("RequiresReplace") and nxt == "(" and "." in value and current():
                if last in _ALWAYS_REPLACE:
                    force.add(str(current()))
                else:
                    conditional.setdefault(str(current()), f"plan modifier {last}")
            elif last.startswith("ForceNewIf") and nxt == "(":
                target = arg_path(i + 2)
                if target:
                    conditional.setdefault(target, f"CustomizeDiff customdiff.{last}")
            elif last == "ForceNew" and nxt == "(" and "." in value:
                target = arg_path(i + 2)
                if target:
                    conditional.setdefault(target, "CustomizeDiff calls ForceNew under a condition")
            elif last.endswith("ForceNew") and last != "ForceNew" and nxt == "(" and i >= 2 and tokens[i - 1][1] == ":":
                name = key_name(tokens[i - 2])
                if name:
                    force.add(joined(name))
                    if current() is None:
                        top.add(name)
            elif last == "RequiresReplace" and nxt != "(":
                # ModifyPlan: resp.RequiresReplace = append(resp.RequiresReplace, path.Root("x")) on this line
                for k in range(i + 1, len(tokens)):
                    if tokens[k][2] != line:
                        break
                    if tokens[k][1] == "path.Root" and k + 2 < len(tokens):
                        target = arg_path(k + 2)
                        if target:
                            conditional.setdefault(target, "ModifyPlan sets RequiresReplace under a condition")
    cond = [{"path": p, "why": w} for p, w in sorted(conditional.items()) if p not in force]
    return {"forceNew": sorted(force), "conditional": cond, "attributes": sorted(top)}


def _snake(attr_const: str) -> str:
    """``names.AttrVPCID`` -> ``vpc_id`` when no ``names/attr_consts.go`` is at hand (the checkout's wins)."""
    name = re.sub(r"(ID|ARN)s$", lambda m: m.group(1).capitalize() + "s", attr_const.removeprefix("Attr"))
    return re.sub(r"(?<!^)(?=[A-Z][a-z])|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=(?:ID|ARN)s?$)", "_", name).lower()


def reread_terraform(token: str, tf: dict[str, Any], tf_source: Path) -> dict[str, Any]:
    """One entry's Terraform facts as the Go file in ``tf_source`` states them.

    ``forceNew`` and the conditional paths come from :func:`parse_go_schema` (a hand-written ``why`` of a path
    the parser also finds is kept; conditions the parser cannot see, such as ``ModifyPlan`` paths held in
    variables, stay as written); attributes the SDK no longer has are dropped; ``notInCopy`` becomes the SDK
    inputs the file does not define.
    """
    parsed = parse_go_schema((tf_source / tf["path"]).read_text(encoding="utf-8"), _attr_names(tf_source))
    renames: dict[str, str] = tf.get("sdkNames") or {}

    def known(path: str) -> bool:
        return path.split(".", maxsplit=1)[0] in renames or sdk_path(token, path) is not None

    whys = {c["path"]: c["why"] for c in tf.get("conditional", [])}
    conditional = {c["path"]: whys.get(c["path"], c["why"]) for c in parsed["conditional"] if known(c["path"])}
    for path, why in whys.items():
        conditional.setdefault(path, why)
    seen = {renames.get(a) or sdk_path(token, a) for a in parsed["attributes"]}
    missing = (sdk_input_names(token) or set()) - seen - {"region", "tags", None}
    not_in_copy = sorted(re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() for name in missing)
    return {
        **tf,
        "forceNew": [p for p in parsed["forceNew"] if known(p)],
        "conditional": [{"path": p, "why": w} for p, w in sorted(conditional.items())],
        "notInCopy": [p for p in not_in_copy if sdk_path(token, p) is not None],
    }


def _crds_dir() -> Path | None:
    shared = Path(__file__).resolve().parents[3] / "shared" / "crds"
    return shared if shared.is_dir() else None


def _compare_with_go(tf_source: Path, tf_commit: str) -> int:
    """Re-read from the Go files every record's Terraform facts read at ``tf_commit``; print those that differ
    (as the record should write them) and exit 1, so the records stay the one place the facts are written."""
    records = load_resource_types()
    stale = 0
    for token, record in sorted(records.types.items()):
        f = record.replacement_facts
        if f is None or f.tf is None or not f.tf.read or f.tf.commit != tf_commit:
            continue
        written = f.tf.model_dump(exclude_unset=True)
        again = reread_terraform(token, written, tf_source)
        if again != written:
            stale += 1
            print(f"{records.files[token]}: {token}: replacement_facts.tf should be {json.dumps(again)}")
    print(f"{stale} record(s) differ from the Go files at {tf_commit}", file=sys.stderr if stale else sys.stdout)
    return 1 if stale else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.generate.replacement_rules", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--write", action="store_true", help=f"write {RULES_FILE.name}")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs from a regeneration")
    parser.add_argument("--tf-source", type=Path, help="a hashicorp/terraform-provider-aws tree (internal/, names/)")
    parser.add_argument(
        "--tf-commit", help="the commit of --tf-source: the records' facts read at it are compared with the Go files"
    )
    args = parser.parse_args(argv)
    if (args.tf_source is None) != (args.tf_commit is None):
        parser.error("--tf-source and --tf-commit go together")
    if args.tf_source is not None:
        return _compare_with_go(args.tf_source, args.tf_commit)
    data = generate(crds_dir=_crds_dir())
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    if args.write:
        RULES_FILE.write_text(text, encoding="utf-8")
        print(f"wrote {RULES_FILE} ({len(data['types'])} types)")
        return 0
    current = RULES_FILE.read_text(encoding="utf-8") if RULES_FILE.exists() else ""
    if current != text:
        print(f"{RULES_FILE} is stale: run python -m tools.generate.replacement_rules --write", file=sys.stderr)
        return 1
    print(f"{RULES_FILE} is current ({len(data['types'])} types)")
    return 0


if __name__ == "__main__":
    cli.run(main)
