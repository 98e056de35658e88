"""The schema of a resource-type record: every fact the project keeps about one Pulumi resource type.

One record per type token (``policies/resource_types/<provider>/<service>.yaml``, see its README) holds the
type's deploy actions and ARN templates (:class:`TypeRow`), its physical-name rule (:class:`NameRule`), its
readiness entries (:class:`ReadinessEntry`: what a create waits for, what it provides, its times), the key of its
generated replacement rules, the shape of its mock outputs and its preflight look-up. The models are strict
(``extra="forbid"``): a misspelt key is an error naming the file, never a silent default.

This module holds only the models (no file reads); :mod:`policies.resource_types` loads the records, and the
readers build their views from them: :mod:`policies.deploy_actions`, :mod:`policies.physical_names`,
:mod:`policies.readiness`.
"""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

LIFECYCLE = ("create", "read", "update", "delete")
_ACTION = re.compile(r"^[a-z0-9-]+:[A-Za-z0-9]+$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- readiness: what a create (and delete) waits for, what it provides, how long it takes ------------------------


def input_value(inputs: Any, path: str, default: Any = None) -> Any:
    """The value at dotted ``path`` in registration inputs; JSON strings on the way are parsed.

    ``configurationValues.alb.enabled`` reads into an add-on's JSON ``configurationValues`` string.
    A path segment that is an integer indexes a list.
    """
    cur = inputs
    for part in path.split("."):
        if isinstance(cur, str):
            try:
                cur = json.loads(cur)
            except ValueError:
                return default
        if isinstance(cur, dict):
            if part not in cur:
                return default
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return default
    if cur is None:
        return default
    return cur


class Condition(_Model):
    """One test on a registration's inputs; a list of conditions is ANDed."""

    input: str = Field(description="Dotted path into the inputs (JSON strings are parsed on the way).")
    op: Literal["eq", "ne", "in", "glob", "truthy", "falsy"] = "eq"
    value: Any = None
    default: Any = Field(default=None, description="The value when the input is absent (the provider's default).")

    def holds(self, inputs: dict[str, Any]) -> bool:
        got = input_value(inputs, self.input, self.default)
        if self.op == "eq":
            return bool(got == self.value)
        if self.op == "ne":
            return bool(got != self.value)
        if self.op == "in":
            return got in (self.value or [])
        if self.op == "glob":
            return isinstance(got, str) and fnmatch.fnmatchcase(got, str(self.value))
        if self.op == "truthy":
            return bool(got)
        return not got


def all_hold(conditions: list[Condition], inputs: dict[str, Any]) -> bool:
    return all(c.holds(inputs) for c in conditions)


class Selector(_Model):
    """Finds a resource in the graph: a type token (glob) and conditions on its inputs."""

    type: str
    when: list[Condition] = Field(default_factory=list)

    def matches(self, typ: str, inputs: dict[str, Any]) -> bool:
        return fnmatch.fnmatchcase(typ, self.type) and all_hold(self.when, inputs)


class Wait(_Model):
    """Something a create waits for before the engine marks it done.

    kinds: ``pods`` — the Deployments this resource installs (``SystemPod.installed_by``) must get their
    minimum pods ready, i.e. be schedulable on nodes that already exist; ``crd`` — the CRD of the object's
    kind must be registered by a resource created before it; ``webhook`` — the named system pods (a
    controller's admission webhook, ``failurePolicy: Fail``) must be serving; ``k8s_api`` — the Kubernetes
    API must be reachable from where Pulumi runs; ``after`` — a resource matching ``selector`` must be
    created first (a documented ordering requirement); ``status`` — a state the resource reaches by itself
    (ACTIVE, ISSUED, ...), taking ``create_minutes``.
    """

    kind: Literal["pods", "crd", "webhook", "k8s_api", "after", "status"]
    detail: str = ""
    pods: list[str] = Field(default_factory=list, description="webhook: system pod names that serve it")
    selector: Selector | None = None
    when: list[Condition] = Field(default_factory=list, description="the wait applies only when these hold")
    unless: list[Condition] = Field(default_factory=list, description="the wait is off when all of these hold")
    source: str = ""

    def applies(self, inputs: dict[str, Any]) -> bool:
        if not all_hold(self.when, inputs):
            return False
        return not (self.unless and all_hold(self.unless, inputs))


class Provide(_Model):
    """What a resource makes available once created: ``nodes`` (instance groups read from its inputs),
    ``nodes_joined`` (a wait resource: the nodes of the cluster it waits on are running once it is created),
    ``crds`` (``group/Kind`` names), ``k8s_api`` (an API endpoint)."""

    kind: Literal["nodes", "nodes_joined", "crds", "k8s_api"]
    crds: list[str] = Field(default_factory=list)
    when: list[Condition] = Field(default_factory=list)
    joined_at_create: bool = Field(
        default=True,
        description="nodes: False when the create returns before the nodes join (a HyperPod cluster); a wait for "
        "pods is then met only by a `nodes_joined` provider ordered before it",
    )
    source: str = ""


class TimeoutInput(_Model):
    """A create timeout the program sets through an input (e.g. a Helm release's ``timeout`` in seconds)."""

    input: str
    unit: Literal["s", "min"] = "s"


class ReadyWhen(_Model):
    """One condition the Kubernetes provider waits for after the object is accepted (``pulumi.com/waitFor``:
    ``jsonpath={.status.x}=Value`` or ``condition=Type``; pulumi-kubernetes >= 4.18, every listed one must hold)."""

    expression: str = Field(pattern=r"^(jsonpath=\{\.status\.[^}]+\}=.+|condition=[A-Za-z]+)$")
    when: list[Condition] = Field(default_factory=list)
    source: str = Field(min_length=1)


class ReadinessEntry(_Model):
    """Readiness facts of one resource type, as its record writes them (optionally narrowed by ``match``)."""

    match: list[Condition] = Field(default_factory=list)
    label: str = Field(default="", description="short human name, e.g. 'EKS add-on coredns'")
    waits_for: list[Wait] = Field(default_factory=list)
    provides: list[Provide] = Field(default_factory=list)
    create_timeout_minutes: float | None = Field(default=None, description="provider default; None = none/unknown")
    create_timeout_input: TimeoutInput | None = None
    program_create_timeout_minutes: float | None = Field(
        default=None,
        description="the create (and update) timeout the program sets for it (customTimeouts, a timeout input): "
        "components read it from here, the one place it is written (program_create_timeout)",
    )
    create_minutes: float | None = Field(default=None, description="typical create time a source gives; None = unknown")
    create_minutes_third_party: bool = Field(
        default=False,
        description="create_minutes comes from a third-party page only (no AWS or maintainer source): shown as such",
    )
    delete_minutes: float | None = None
    delete_timeout_minutes: float | None = None
    delete_waits_for: str = ""
    finalizer_controller: list[str] = Field(
        default_factory=list, description="system pods whose controller must run to remove this object's finalizer"
    )
    stateful: bool = Field(default=False, description="holds data: must be protected in prod")
    ready_when: list[ReadyWhen] = Field(
        default_factory=list,
        description="Kubernetes objects: the status the program makes the provider wait for (pulumi.com/waitFor)",
    )
    source: str = Field(min_length=1)


class ResourceReadiness(ReadinessEntry):
    """A readiness entry joined with its record's type token (``policies.readiness.Readiness.resources``)."""

    type: str = Field(description="Pulumi type token; fnmatch glob allowed")

    def matches(self, typ: str, inputs: dict[str, Any]) -> bool:
        return fnmatch.fnmatchcase(typ, self.type) and all_hold(self.match, inputs)


# --- deploy actions: the IAM actions of each lifecycle phase, and the ARNs of the type --------------------------


class ArnPattern(_Model):
    """One ARN a resource of the type can have: ``sar`` names its Service Authorization Reference resource type
    (``<service prefix>:<resource type>``), ``arn`` the template (``{partition}``, ``{region}``, ``{account}``,
    ``{name}``, ``{input.<path>}``)."""

    sar: str
    arn: str
    tag_scoped: bool = False  # the ARN cannot carry the stack's name: statements on it require the stack's tag

    @property
    def service(self) -> str:
        return self.sar.split(":", 1)[0]

    @property
    def resource_type(self) -> str:
        return self.sar.split(":", 1)[1]


def _actions(value: list[str]) -> list[str]:
    for action in value:
        if not _ACTION.match(action):
            raise ValueError(f"{action!r} is not an IAM action (service:Action)")
    return value


class TypeRow(_Model):
    """The IAM actions of one resource type's lifecycle, and how its own ARN is built."""

    source: str
    create: list[str]
    read: list[str]
    update: list[str]
    delete: list[str]
    arns: list[ArnPattern] = Field(default_factory=list)
    name_strip: str = ""  # a prefix the name input carries that the ARN writes itself (KMS aliases: alias/)
    unscoped_types: list[str] = Field(default_factory=list)  # SAR types it has whose IDs AWS assigns
    delete_note: str | None = None
    passes_role_to: list[str] = Field(default_factory=list)  # iam:PassedToService values of its iam:PassRole
    service_linked_roles: list[str] = Field(default_factory=list)  # iam:AWSServiceName values

    _check = field_validator("create", "read", "update", "delete")(_actions)

    @model_validator(mode="after")
    def _delete_explained(self) -> TypeRow:
        if not self.delete and not self.delete_note:
            raise ValueError("an empty `delete` needs a `delete_note` saying why the delete calls no API")
        actions = self.all_actions()
        if ("iam:PassRole" in actions) != bool(self.passes_role_to):
            raise ValueError("iam:PassRole and `passes_role_to` (the services the role is passed to) go together")
        if ("iam:CreateServiceLinkedRole" in actions) != bool(self.service_linked_roles):
            raise ValueError("iam:CreateServiceLinkedRole and `service_linked_roles` go together")
        return self

    def actions(self) -> dict[str, list[str]]:
        return {phase: list(getattr(self, phase)) for phase in LIFECYCLE}

    def all_actions(self) -> set[str]:
        return {a for phase in LIFECYCLE for a in getattr(self, phase)}


class InvokeRow(_Model):
    actions: list[str]
    source: str
    arns: list[ArnPattern] = Field(default_factory=list)

    _check = field_validator("actions")(_actions)


# --- physical names: the name AWS gives the resource, from its inputs ----------------------------------------------


class NameRule(_Model):
    name: str = "name"
    prefix: str | None = None
    max: int
    lower: bool = False
    autonamed: bool


class PrefixSuffix(_Model):
    timestamp_digits: int
    counter_hex: int

    @property
    def length(self) -> int:
        return self.timestamp_digits + self.counter_hex


class Naming(_Model):
    """How a provider names a resource its registration does not name (the index's ``naming``, per provider)."""

    source: str
    separator: str
    random_hex: int
    prefix_suffix: PrefixSuffix | None = None


# --- replacement rules: what the generator of policies/replacement_rules.json cannot read from a schema -----------


class MayReplace(_Model):
    path: str
    why: str


class TerraformFacts(_Model):
    """What was read from the terraform-provider-aws resource file of a pulumi-aws type (keys as the generated
    file writes them): ``forceNew`` and ``conditional`` (Terraform attribute paths), ``notInCopy`` (SDK inputs the
    file read lacks: may replace), ``sdkNames`` (pulumi-aws renames, ``alarm_name`` -> ``name``), the file version
    read (``repo``, ``commit``, ``path``, ``resource``) and ``alsoRead``; ``read: false``: not read yet."""

    repo: str
    path: str
    resource: str
    commit: str | None = None
    read: bool = True
    forceNew: list[str] = Field(default_factory=list)
    conditional: list[MayReplace] = Field(default_factory=list)
    notInCopy: list[str] = Field(default_factory=list)
    sdkNames: dict[str, str] = Field(default_factory=dict)
    alsoRead: str | None = None


class ReplacementFacts(_Model):
    """The inputs ``tools.generate.replacement_rules`` takes from a record (the rules of CloudFormation types and
    dynamic providers it reads from their schemas and code itself).

    ``owner: terraform`` — ``tf``, what was read from the type's Terraform resource file (:class:`TerraformFacts`).
    ``owner: kubernetes`` — a Kubernetes object: its identity rules, plus ``replace`` (fields the API server or a
    validating webhook refuses to change, ``why``), the ``oldSelf`` rules of its ``crd`` and a ``note``.
    ``owner: code`` — rules read by hand from the owner's code: ``source``, ``replace``, ``update``,
    ``may_replace`` and what any other change is (``other``). ``owner: engine`` — never diffed by a provider
    (components, the stack, default providers): ``source`` and ``other`` only.
    """

    owner: Literal["terraform", "kubernetes", "code", "engine"]
    tf: TerraformFacts | None = None
    source: str | None = None
    replace: list[str] = Field(default_factory=list)
    update: list[str] = Field(default_factory=list)
    may_replace: list[MayReplace] = Field(default_factory=list)
    other: Literal["update", "may-replace"] | None = None
    why: str | None = None
    crd: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _fields_of_the_owner(self) -> ReplacementFacts:
        if (self.owner == "terraform") != (self.tf is not None):
            raise ValueError("`tf` goes with owner terraform, and only with it")
        if self.owner == "terraform":
            if self.model_fields_set - {"owner", "tf"}:
                raise ValueError("owner terraform has `tf` only")
        elif self.owner == "kubernetes":
            if self.source or self.update or self.may_replace or self.other:
                raise ValueError("a Kubernetes object's facts are replace, why, crd and note only")
        elif not (self.source and self.other):
            raise ValueError(f"owner {self.owner} needs `source` and `other`")
        elif self.owner == "engine" and (self.replace or self.update or self.may_replace or self.why or self.crd):
            raise ValueError("owner engine has `source` and `other` only")
        return self
