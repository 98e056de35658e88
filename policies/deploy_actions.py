"""The deploy-actions table: which IAM actions each resource type's create, read, update and delete call.

The rows live in the resource-type records (``deploy:`` of each record, ``invokes:`` of a record file, the shared
header in ``policies/resource_types/index.yaml``); this module is the table's typed view. Reader:
``tools.cli.deployer_policy``, which turns the types one stack registers into that stack's least-privilege deploy
policy.

* :func:`load_deploy_actions` -> :class:`DeployActions` (cached);
* :meth:`DeployActions.row_for` finds the row of a registration (``<type>`` or, for a dynamic resource,
  ``<type>#<resourceKind>``); :meth:`DeployActions.needs_no_iam` tells the types that call no AWS API;
* ``DeployActions.invokes``: the data sources the program calls, with their actions.
"""

from __future__ import annotations

import fnmatch
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from policies.resource_types import (
    DYNAMIC,
    ActionResources,
    RequestTagAction,
    ResourceTypes,
    TagOnCreate,
    load_resource_types,
)
from policies.resource_types.schema import LIFECYCLE, ArnPattern, InvokeRow, TypeRow

__all__ = ["DYNAMIC", "LIFECYCLE", "ArnPattern", "DeployActions", "InvokeRow", "TypeRow", "load_deploy_actions"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
def load_deploy_actions() -> DeployActions:
    """The table of every record's ``deploy`` row, ``no_iam`` reason and invoke (cached)."""
    records: ResourceTypes = load_resource_types()
    index = records.index
    return DeployActions(
        sources=index.sources,
        global_services=index.global_services,
        stack_tag=index.stack_tag,
        request_tag_actions=index.request_tag_actions,
        boundary_actions=index.boundary_actions,
        tag_write_actions=index.tag_write_actions,
        tag_on_create=index.tag_on_create,
        action_resources=index.action_resources,
        types={key: rec.deploy for key, rec in records.types.items() if rec.deploy is not None},
        no_iam={key: rec.no_iam for key, rec in records.types.items() if rec.no_iam is not None},
        invokes=records.invokes,
    )
