"""Resource-type records: everything the project knows about one Pulumi resource type, in one record.

A record is keyed by the type token (``aws:elasticache/replicationGroup:ReplicationGroup``; a dynamic resource by
``pulumi-python:dynamic:Resource#<resourceKind>``; a *family* by a glob such as ``kubernetes:*``) and lives in the
YAML file of its provider and service (``aws/elasticache.yaml``, ``aws-native/sagemaker.yaml``, ...). The fields
are described in ``policies/resource_types/README.md`` and typed in :mod:`policies.resource_types.schema`;
``index.yaml`` holds what every record shares (the sources legend, the deploy policy's header, the providers'
naming conventions, the readiness used when no entry fits).

Readers build their views from :func:`load_resource_types`: :mod:`policies.deploy_actions` (the deploy policy's
table), :mod:`policies.physical_names`, :mod:`policies.readiness` (``resources``), ``tools.plan.mocks`` (the output
shape of a registration) and ``tools.preflight.checks`` (the names to look up before a first deploy). The
replacement rules stay generated (``policies/replacement_rules.json``); a record names its key there.
"""

from __future__ import annotations

import fnmatch
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from policies.resource_types.schema import (
    Condition,
    InvokeRow,
    NameRule,
    Naming,
    ReadinessEntry,
    ReplacementFacts,
    ResourceReadiness,
    TypeRow,
)
from policies.yaml_files import load_yaml_file

RECORDS_DIR = Path(__file__).parent
INDEX_FILE = RECORDS_DIR / "index.yaml"
DYNAMIC = "pulumi-python:dynamic:Resource"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Mock(_Model):
    """The outputs ``tools.plan.mocks`` gives a registration: ``outputs`` names a shape of its ``MOCK_SHAPES``
    (``id_prefix``: the EC2-style ID prefix of the ``ec2`` shape, ``sg``, ``rtb``, ...)."""

    outputs: str
    id_prefix: str | None = None


class Preflight(_Model):
    """A physical name the program fixes, looked up before a first deploy (``tools.preflight.checks``):
    ``label`` names the look-up (its function in ``LOOKUPS``), ``name_input`` the input holding the name (default:
    the ``physical_name`` rule's ``name``)."""

    label: str
    name_input: str | None = None


CONSTANT = r"^[A-Z][A-Z0-9_]*$"


class ResourceType(_Model):
    """Everything known about one type (or, keyed by a glob, a family of types)."""

    constant: str | None = Field(
        default=None, pattern=CONSTANT, description="its name in the generated policies/resource_types/tokens.py"
    )
    deploy: TypeRow | None = None
    no_iam: str | None = Field(default=None, description="why the type calls no AWS API (instead of `deploy`)")
    physical_name: NameRule | None = None
    readiness: list[ReadinessEntry] | None = Field(
        default=None,
        description="first match wins; [] = no entry of its own (a family's entry, else the default, applies)",
    )
    replacement: str | None = Field(default=None, description="key in replacement_rules.json (default: the key)")
    replacement_facts: ReplacementFacts | None = None
    mock: Mock | None = None
    preflight: Preflight | None = None

    @model_validator(mode="after")
    def _one_iam_answer(self) -> ResourceType:
        if self.deploy is not None and self.no_iam is not None:
            raise ValueError("`deploy` and `no_iam` exclude each other")
        if self.preflight is not None and self.preflight.name_input is None and self.physical_name is None:
            raise ValueError("`preflight` needs `name_input` when the type has no `physical_name` rule")
        return self


class InvokeRecord(InvokeRow):
    """A data source the program calls: its IAM actions (:class:`InvokeRow`) and its constant's name."""

    constant: str | None = Field(default=None, pattern=CONSTANT)


class RecordFile(_Model):
    """One file of records: the types of one provider's service and the data sources (invokes) it has."""

    types: dict[str, ResourceType] = Field(default_factory=dict)
    invokes: dict[str, InvokeRecord] = Field(default_factory=dict)


class RequestTagAction(_Model):
    why: str
    existing: bool = False  # it also acts on existing (tagged) resources: granted there on aws:ResourceTag too


class TagOnCreate(_Model):
    condition_key: str  # the service's key naming the create API the tags come with (sagemaker:TaggingAction)
    why: str


class ActionResources(_Model):
    arns: list[str]
    why: str


class Index(_Model):
    """What every record shares."""

    sources: dict[str, str]
    global_services: list[str]
    stack_tag: str
    request_tag_actions: dict[str, RequestTagAction] = Field(default_factory=dict)
    boundary_actions: list[str] = Field(default_factory=list)
    tag_write_actions: list[str] = Field(default_factory=list)
    tag_on_create: dict[str, TagOnCreate] = Field(default_factory=dict)
    action_resources: dict[str, ActionResources] = Field(default_factory=dict)
    naming: dict[str, Naming] = Field(description="per provider package (the token's first part): aws, aws-native")
    default_readiness: ReadinessEntry


class ResourceTypes(_Model):
    """Every record, with the look-ups the readers share."""

    index: Index
    types: dict[str, ResourceType]
    invokes: dict[str, InvokeRecord]
    files: dict[str, str] = Field(description="record key -> the file it is written in (relative to the records)")

    @staticmethod
    def key_of(type_token: str, inputs: dict[str, Any] | None = None) -> str:
        """The record key of a registration: its type, or ``<type>#<resourceKind>`` for a dynamic resource."""
        if type_token == DYNAMIC:
            return f"{type_token}#{(inputs or {}).get('resourceKind') or '?'}"
        return type_token

    def record(self, type_token: str, inputs: dict[str, Any] | None = None) -> ResourceType | None:
        """The record written for exactly this registration's key (no family)."""
        return self.types.get(self.key_of(type_token, inputs))

    def families(self, key: str) -> list[tuple[str, ResourceType]]:
        """The glob records matching ``key``, most specific (longest pattern) first."""
        found = [(p, r) for p, r in self.types.items() if _is_glob(p) and fnmatch.fnmatchcase(key, p)]
        return sorted(found, key=lambda item: -len(item[0]))

    def readiness_entries(self) -> list[ResourceReadiness]:
        """Every readiness entry joined with its type, in the order ``Readiness.entry_for`` tries them (first match
        wins): the entries of the exact records, each record's in its written order, then those of the families,
        the most specific first. A dynamic resource's entry also matches on its ``resourceKind``."""
        exact = [(k, r) for k, r in self.types.items() if not _is_glob(k)]
        globs = sorted(((k, r) for k, r in self.types.items() if _is_glob(k)), key=lambda item: -len(item[0]))
        out: list[ResourceReadiness] = []
        for key, rec in [*exact, *globs]:
            typ, _, kind = key.partition("#")
            kind_match = [Condition(input="resourceKind", value=kind)] if kind else []
            for entry in rec.readiness or []:
                fields = {name: getattr(entry, name) for name in entry.model_fields_set}
                fields["match"] = [*kind_match, *entry.match]
                out.append(ResourceReadiness(type=typ, **fields))
        return out

    def default_readiness(self) -> ResourceReadiness:
        entry = self.index.default_readiness
        return ResourceReadiness(type="*", **{name: getattr(entry, name) for name in entry.model_fields_set})


def _is_glob(key: str) -> bool:
    return any(ch in key for ch in "*?[")


class RecordError(ValueError):
    """A record file that does not validate: names the file and pydantic's finding."""


@cache
def load_resource_types(directory: Path = RECORDS_DIR) -> ResourceTypes:
    """Read ``index.yaml`` and every record file under ``directory`` (cached per directory).

    A key written in two files is an error naming both."""
    try:
        index = Index.model_validate(load_yaml_file(directory / INDEX_FILE.name))
    except ValidationError as err:
        raise RecordError(f"{directory / INDEX_FILE.name}: {err}") from err
    types: dict[str, ResourceType] = {}
    invokes: dict[str, InvokeRecord] = {}
    files: dict[str, str] = {}
    for path in sorted(directory.rglob("*.yaml")):
        if path.name == INDEX_FILE.name:
            continue
        rel = path.relative_to(directory).as_posix()
        try:
            records = RecordFile.model_validate(load_yaml_file(path) or {})
        except ValidationError as err:
            raise RecordError(f"{path}: {err}") from err
        for key in [*records.types, *records.invokes]:
            if key in files:
                raise RecordError(f"{key} is written twice: {files[key]} and {rel}")
            files[key] = rel
        types.update(records.types)
        invokes.update(records.invokes)
    constants = [(r.constant, k) for k, r in types.items() if r.constant]
    constants += [(r.constant, k) for k, r in invokes.items() if r.constant]
    taken: dict[str, str] = {}
    for constant, key in constants:
        if constant in taken:
            raise RecordError(f"constant {constant} names both {taken[constant]} and {key}")
        taken[constant] = key
    return ResourceTypes(index=index, types=types, invokes=invokes, files=files)
