"""The deploy-actions table: which IAM actions each resource type's create, read, update and delete call.

The data lives in ``policies/deploy_actions.yaml`` (one file, every row with its source); this module is its typed,
cached loader. Reader: ``tools.cli.deployer_policy``, which turns the types one stack registers into that stack's
least-privilege deploy policy.

* :func:`load_deploy_actions` -> :class:`DeployActions` (cached);
* :meth:`DeployActions.row_for` finds the row of a registration (``<type>`` or, for a dynamic resource,
  ``<type>#<resourceKind>``); :meth:`DeployActions.needs_no_iam` tells the types that call no AWS API;
* ``DeployActions.invokes``: the data sources the program calls, with their actions.
"""

from __future__ import annotations

import fnmatch
import re
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from policies.yaml_files import load_yaml_file

DEPLOY_ACTIONS_FILE = Path(__file__).with_name("deploy_actions.yaml")
DYNAMIC = "pulumi-python:dynamic:Resource"
LIFECYCLE = ("create", "read", "update", "delete")
_ACTION = re.compile(r"^[a-z0-9-]+:[A-Za-z0-9]+$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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


class ActionResources(_Model):
    arns: list[str]
    why: str


class RequestTagAction(_Model):
    why: str
    existing: bool = False  # it also acts on existing (tagged) resources: granted there on aws:ResourceTag too


class TagOnCreate(_Model):
    condition_key: str  # the service's key naming the create API the tags come with (sagemaker:TaggingAction)
    why: str


class DeployActions(_Model):
    sources: dict[str, str]
    global_services: list[str]
    stack_tag: str
    request_tag_actions: dict[str, RequestTagAction] = Field(default_factory=dict)
    boundary_actions: list[str] = Field(default_factory=list)
    tag_write_actions: list[str] = Field(default_factory=list)
    tag_on_create: dict[str, TagOnCreate] = Field(default_factory=dict)
    action_resources: dict[str, ActionResources] = Field(default_factory=dict)
    types: dict[str, TypeRow]
    no_iam: dict[str, str]
    invokes: dict[str, InvokeRow]

    @staticmethod
    def key_of(type_token: str, inputs: dict[str, Any]) -> str:
        """The table key of a registration: its type, or ``<type>#<resourceKind>`` for a dynamic resource."""
        if type_token == DYNAMIC:
            return f"{type_token}#{inputs.get('resourceKind') or '?'}"
        return type_token

    def row_for(self, type_token: str, inputs: dict[str, Any]) -> TypeRow | None:
        return self.types.get(self.key_of(type_token, inputs))

    def needs_no_iam(self, type_token: str) -> bool:
        if type_token in self.types:
            return False
        return any(fnmatch.fnmatchcase(type_token, pattern) for pattern in self.no_iam)


@cache
def load_deploy_actions(path: Path = DEPLOY_ACTIONS_FILE) -> DeployActions:
    """Parse and validate ``policies/deploy_actions.yaml`` (cached per path)."""
    return DeployActions.model_validate(load_yaml_file(path))
