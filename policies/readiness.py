"""The deploy-readiness model: what each create (and delete) waits for, what it provides, how long it takes.

Each resource type's entries (``readiness:`` of its record, ``policies/resource_types``) and the cluster-level facts
of ``policies/readiness.yaml`` (system pods, remote components, ordering rules, ...), every one with its source;
this module is their typed, cached loader. Readers: ``tools.rehearse`` (the offline ``pulumi up`` / ``destroy`` simulation),
``tools.rehearse.graph`` (critical path, graph picture) and the capacity checks (DaemonSet overhead per node, "every
controller needs a group it can run on").

Stable API (other components rely on it):

* :func:`load_readiness` -> :class:`Readiness` (cached);
* ``Readiness.resources``: :class:`ResourceReadiness` entries; :meth:`Readiness.entry_for` picks the first
  entry whose ``type`` glob and ``match`` conditions fit a registration's type and inputs;
* ``Readiness.system_pods``: :class:`SystemPod` entries (``name``, ``installed_by``, ``kind``, ``replicas``,
  ``requests``, ``tolerations``, ``node_selector``, ``source``); :meth:`SystemPod.installed_by_matches` tells
  whether a registration installs the pod, :meth:`SystemPod.effective_tolerations` applies the installing
  resource's configured override;
* ``Readiness.remote_components``: how a remote component (``eks:index:Cluster``) expands into the
  children it really creates;
* ``Readiness.ordering``: :class:`OrderingRule` entries, the edges the program must declare between resources
  of one run (a namespaced object after its Namespace, a custom resource after its CRD's installer, a role's
  user after the role's policies, the HyperPod cluster after its lifecycle scripts), checked by
  ``tools/rehearse/ordering.py``.

Conventions: ``None`` always means *unknown* (no source states it) and is reported as such, never
replaced by a guess. ``requests: {}`` means the chart sets no requests (zero), which is a known value.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from policies.resource_types import load_resource_types
from policies.resource_types.schema import (
    Condition,
    Provide,
    ReadinessEntry,
    ResourceReadiness,
    Selector,
    TimeoutInput,
    Wait,
    all_hold,
    input_value,
)
from policies.yaml_files import load_yaml_file

__all__ = [
    "Condition",
    "Provide",
    "Readiness",
    "ReadinessEntry",
    "ResourceReadiness",
    "Selector",
    "TimeoutInput",
    "Wait",
    "all_hold",
    "input_value",
    "load_readiness",
]

if TYPE_CHECKING:
    import pulumi

READINESS_FILE = Path(__file__).with_name("readiness.yaml")

_MISSING = object()


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Toleration(_Model):
    key: str | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: int | None = None  # Kubernetes field name

    def tolerates(self, key: str, value: str | None, effect: str) -> bool:
        """Kubernetes' toleration matching (an empty key with Exists matches every taint)."""
        if self.effect is not None and self.effect != effect:
            return False
        if self.key is None or self.key == "":
            return self.operator == "Exists"
        if self.key != key:
            return False
        return self.operator == "Exists" or (self.value or "") == (value or "")


class Requests(_Model):
    """A pod's total resource requests (Kubernetes quantities); a field left None is unknown."""

    cpu: str | None = None
    memory: str | None = None


class SystemPod(_Model):
    """A controller or agent the stack installs (through an EKS add-on or a Helm chart)."""

    name: str
    installed_by: list[Selector] = Field(min_length=1, description="alternatives: any matching resource installs it")
    kind: Literal["Deployment", "DaemonSet"]
    replicas: int | None = Field(default=None, description="Deployments: the default replica count")
    replicas_input: str | None = Field(default=None, description="input path overriding replicas (Helm values)")
    requests: Requests | None = Field(default=None, description="None = unknown; {} = the chart sets none")
    tolerations: list[Toleration] | None = Field(default=None, description="defaults; None = unknown")
    tolerations_input: str | None = Field(
        default=None, description="input path of the installing resource whose value replaces the defaults"
    )
    tolerate_all_input: str | None = Field(default=None, description="input path of a 'tolerate all taints' switch")
    node_selector: dict[str, list[str]] = Field(
        default_factory=dict, description="label -> allowed values (nodeSelector or required node affinity)"
    )
    serves: list[str] = Field(default_factory=list, description="what it provides: webhook/CRD controller names")
    on_target_nodes: bool = Field(
        default=False,
        description="a DaemonSet on the nodes its installer (an endpoint's custom resource) targets: its instance "
        "types, else its nodeAffinity; one per installer, or per distinct value of one_per",
    )
    one_per: str | None = Field(
        default=None, description="input path of the installer: installers with the same value share one DaemonSet"
    )
    source: str = Field(min_length=1)

    def installed_by_matches(self, typ: str, inputs: dict[str, Any]) -> bool:
        return any(s.matches(typ, inputs) for s in self.installed_by)

    def effective_tolerations(self, inputs: dict[str, Any]) -> list[Toleration] | None:
        """The tolerations the pod gets given the installing resource's inputs (None = unknown)."""
        if self.tolerate_all_input and input_value(inputs, self.tolerate_all_input) is True:
            return [Toleration(operator="Exists")]
        if self.tolerations_input:
            given = input_value(inputs, self.tolerations_input, _MISSING)
            if given is not _MISSING and isinstance(given, list):
                return [Toleration.model_validate(t) for t in given]
        return self.tolerations

    def effective_replicas(self, inputs: dict[str, Any]) -> int | None:
        if self.replicas_input:
            given = input_value(inputs, self.replicas_input)
            if isinstance(given, int):
                return given
        return self.replicas


class RemoteChild(_Model):
    """One child a remote component creates, with the conditions (on the component's inputs) it needs."""

    suffix: str = Field(description="child name = '<component name><suffix>'")
    type: str
    when: list[Condition] = Field(default_factory=list)
    when_any: list[list[Condition]] = Field(
        default_factory=list, description="alternatives (OR of ANDs), checked after ``when``"
    )
    depends_on: list[str] = Field(default_factory=list, description="suffixes of sibling children it waits on")
    inputs_from: dict[str, str] = Field(
        default_factory=dict, description="child input -> component input path it is built from"
    )
    inputs: dict[str, Any] = Field(default_factory=dict, description="fixed inputs the component sets")
    kubernetes: bool = Field(default=False, description="created through the component's own Kubernetes provider")
    source: str = Field(min_length=1)

    def inputs_for(self, component_inputs: dict[str, Any]) -> dict[str, Any]:
        """The child's inputs: its fixed ``inputs`` plus ``inputs_from`` read from the component's inputs
        (dotted targets build nested mappings: ``vpcConfig.endpointPublicAccess``)."""
        out: dict[str, Any] = copy.deepcopy(self.inputs)
        for target, source in self.inputs_from.items():
            value = input_value(component_inputs, source)
            if value is None:
                continue
            cur = out
            *heads, last = target.split(".")
            for part in heads:
                nxt = cur.get(part)
                if not isinstance(nxt, dict):
                    nxt = {}
                    cur[part] = nxt
                cur = nxt
            cur[last] = value
        return out

    def created(self, inputs: dict[str, Any]) -> bool:
        """Whether the component creates this child given its inputs."""
        if not all_hold(self.when, inputs):
            return False
        return not self.when_any or any(all_hold(alt, inputs) for alt in self.when_any)


class RemoteComponent(_Model):
    type: str
    children: list[RemoteChild]
    source: str = Field(min_length=1)


class Architecture(_Model):
    """CPU architecture of HyperPod instance families (``ml.<family>.<size>``)."""

    default: str
    families: dict[str, str] = Field(default_factory=dict)
    source: str = Field(min_length=1)

    def of(self, instance_type: str) -> str:
        parts = instance_type.split(".")
        family = parts[1] if len(parts) >= 3 else instance_type
        return self.families.get(family, self.default)


class HealthTaint(_Model):
    """The taint HyperPod puts on nodes while their on-start deep health checks run."""

    key: str
    value: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    source: str = Field(min_length=1)


class RoutingModel(_Model):
    """Where the rehearsal finds the route tables of the cluster's subnets and which route targets carry the control
    plane's replies to a private network outside the VPC (the return half of the deployer's path)."""

    subnet_inputs: list[str] = Field(description="cluster inputs holding its subnet ids (first found is used)")
    vpc_input: str = Field(description="cluster input: the VPC id")
    vpc_type: str
    vpc_cidr_input: str
    association_type: str
    route_table_type: str
    inline_routes_input: str = Field(description="route table input holding inline routes (counted if present)")
    route_type: str
    destination_input: str
    inline_destination_input: str
    target_inputs: list[str] = Field(description="route inputs naming a target")
    return_targets: dict[str, str] = Field(
        description="target input -> required id prefix ('' = any) of targets that reach a private network"
    )
    runner_cidrs_keys: list[str] = Field(description="stack config keys listing the runner's CIDRs")
    source: str = Field(min_length=1)


class DeployerAccess(_Model):
    """How the rehearsal decides whether Pulumi can reach a private-only Kubernetes API (data-driven)."""

    config_keys: list[str] = Field(description="stack config keys that declare the deployer's path")
    public_input: str = Field(description="the pulumi-eks cluster's input turning the public endpoint on")
    public_cidrs_input: str
    cluster_sg_output: str = Field(description="the pulumi-eks cluster's output: its cluster security group id")
    cluster_sg_input: str = Field(
        description="the pulumi-eks cluster's input: a security group given for the control plane"
    )
    sg_type: str = Field(description="type token of a security group")
    cluster_sg_child: str = Field(description="suffix of the expanded child: the control-plane SG pulumi-eks creates")
    rule_types: list[str] = Field(description="ingress rule types that can admit the deployer")
    node_sg_input_paths: list[str] = Field(
        default_factory=list, description="where the HyperPod nodes' SG ids are (rules from them do not count)"
    )
    routing: RoutingModel
    source: str = Field(min_length=1)


# --- ordering rules (issue 28): the edges a program must declare between resources of one run ----------


class OrderingGrant(_Model):
    """A resource type that gives an IAM role permissions, and the input that names the role."""

    type: str = Field(description="type token (glob)")
    role_input: str = Field(description="input naming the role (its name; a list of names is allowed)")


class OrderingRule(_Model):
    """One ordering rule: a resource matching ``user`` must transitively wait on the resources the ``join``
    finds for it in the same run (``require: all`` of them, or ``any`` one). Checked for every resource of
    the complete graph by ``tools/rehearse/ordering.py``; a missing edge is a race.

    joins: ``same_value`` — a provider whose value at one of ``provider_paths`` (inputs, then outputs)
    equals the user's value at one of ``user_paths`` (a Namespace named as the object's namespace);
    ``crd_installer`` — a resource that provides the CRD of the user's kind (``provides: crds`` of the
    readiness entries); ``role_grants`` — the ``grants`` of every ``roles`` resource the user references
    (its ARN in the user's inputs, or a direct dependency on it); ``s3_prefix`` — provider objects whose
    bucket and key (``provider_paths``: bucket path, key path) lie under an ``s3://`` URI at ``user_paths``.
    ``*`` in a path walks every element of a list.
    """

    id: str = Field(pattern=r"^[a-z0-9-]+$")
    join: Literal["same_value", "crd_installer", "role_grants", "s3_prefix"]
    detail: str = Field(min_length=1, description="what the user waits for, in words")
    user: Selector
    user_except: list[str] = Field(
        default_factory=list, description="type globs that never count as users (they name, not use, the provider)"
    )
    user_paths: list[str] = Field(default_factory=list)
    provider: Selector | None = None
    provider_paths: list[str] = Field(default_factory=list)
    same_provider: bool = Field(default=False, description="user and provider go through the same provider (cluster)")
    roles: Selector | None = None
    role_arn_output: str = "arn"
    role_name_outputs: list[str] = Field(default_factory=lambda: ["name", "id"])
    grants: list[OrderingGrant] = Field(default_factory=list)
    require: Literal["all", "any"] = "all"
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _fields_of_the_join(self) -> OrderingRule:
        needs: dict[str, tuple[str, ...]] = {
            "same_value": ("user_paths", "provider", "provider_paths"),
            "crd_installer": (),
            "role_grants": ("roles", "grants"),
            "s3_prefix": ("user_paths", "provider", "provider_paths"),
        }
        missing = [f for f in needs[self.join] if not getattr(self, f)]
        if missing:
            raise ValueError(f"ordering rule {self.id}: join {self.join} needs {', '.join(missing)}")
        if self.join == "s3_prefix" and len(self.provider_paths) != 2:
            raise ValueError(f"ordering rule {self.id}: s3_prefix needs provider_paths [bucket path, key path]")
        return self


class Readiness(_Model):
    sources: dict[str, str]
    resources: list[ResourceReadiness]
    default: ResourceReadiness
    system_pods: list[SystemPod]
    remote_components: list[RemoteComponent]
    architecture: Architecture
    health_taint: HealthTaint
    deployer_access: DeployerAccess
    destroy: dict[str, Any] = Field(default_factory=dict)
    ordering: list[OrderingRule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_pods(self) -> Readiness:
        names = [p.name for p in self.system_pods]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise ValueError(f"duplicate system pod names: {sorted(dupes)}")
        rule_ids = [r.id for r in self.ordering]
        if len(set(rule_ids)) != len(rule_ids):
            raise ValueError(f"duplicate ordering rule ids: {sorted({i for i in rule_ids if rule_ids.count(i) > 1})}")
        return self

    def entry_for(self, typ: str, inputs: dict[str, Any]) -> ResourceReadiness:
        """The first entry whose type glob and match conditions fit; else ``default``."""
        for entry in self.resources:
            if entry.matches(typ, inputs):
                return entry
        return self.default

    def pods_installed_by(self, typ: str, inputs: dict[str, Any]) -> list[SystemPod]:
        return [p for p in self.system_pods if p.installed_by_matches(typ, inputs)]

    def pod(self, name: str) -> SystemPod:
        for p in self.system_pods:
            if p.name == name:
                return p
        raise KeyError(name)

    def remote(self, typ: str) -> RemoteComponent | None:
        for rc in self.remote_components:
            if rc.type == typ:
                return rc
        return None


def program_create_timeout(typ: str, inputs: dict[str, Any]) -> float:
    """The create timeout (minutes) the program sets for a resource of ``typ`` with ``inputs``: its entry's
    ``program_create_timeout_minutes``. Raises ``LookupError`` when the entry sets none (a component asking for one
    must have its value in policies/readiness.yaml)."""
    entry = load_readiness().entry_for(typ, inputs)
    if entry.program_create_timeout_minutes is None:
        raise LookupError(
            f"policies/readiness.yaml: {entry.label or entry.type} sets no program_create_timeout_minutes"
        )
    return entry.program_create_timeout_minutes


def custom_timeouts(typ: str, inputs: dict[str, Any]) -> pulumi.CustomTimeouts:
    """``pulumi.CustomTimeouts`` (create and update) from :func:`program_create_timeout`."""
    import pulumi  # only components need it; the policy pack and tools do not

    minutes = f"{program_create_timeout(typ, inputs):g}m"
    return pulumi.CustomTimeouts(create=minutes, update=minutes)


WAIT_FOR = "pulumi.com/waitFor"
TIMEOUT_SECONDS = "pulumi.com/timeoutSeconds"


def await_annotations(typ: str, inputs: dict[str, Any]) -> dict[str, str]:
    """The Kubernetes provider's await annotations for an object of ``typ`` with ``inputs`` (its spec as rendered):
    ``pulumi.com/waitFor`` (a JSON list of the entry's ``ready_when`` that apply) and ``pulumi.com/timeoutSeconds``
    (the entry's program timeout). Empty when the entry sets no ``ready_when``: the provider's own await applies."""
    import json

    entry = load_readiness().entry_for(typ, inputs)
    expressions = [r.expression for r in entry.ready_when if all_hold(r.when, inputs)]
    if not expressions:
        return {}
    return {
        WAIT_FOR: json.dumps(expressions),
        TIMEOUT_SECONDS: str(int(program_create_timeout(typ, inputs) * 60)),
    }


@cache
def load_readiness(path: Path = READINESS_FILE) -> Readiness:
    """Parse and validate ``policies/readiness.yaml`` (cached per path) and join the readiness entries of the
    resource-type records (``Readiness.resources``, in the order they are tried) and the shared legend and default."""
    data = load_yaml_file(path)  # libyaml when present: 150 -> 10 ms on this file
    records = load_resource_types()
    return Readiness.model_validate(
        {
            **data,
            "sources": records.index.sources,
            "resources": records.readiness_entries(),
            "default": records.default_readiness(),
        }
    )
