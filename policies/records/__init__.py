"""The policy records: one YAML file per policy in this folder, the one place a policy's facts are written.

A record names the policy, its validator (``module:function``), what it applies to and needs, its severity, its
enforcement level per environment, its FSBP control or waiver, what decides it where it cannot be checked offline,
its line in ``docs/policies.md`` and allowed / disallowed samples (the gatekeeper library's one folder per policy,
``README.md`` here lists the fields). Everything else is built from the records: the pack (``policies/pack.py``),
the endpoint rules the config check runs (``policies.rules.RULES``), ``policies/config.<env>.json`` and the policy
tables of ``docs/policies.md`` (``python -m tools.generate.policy_docs``), and the sample tests
(``tests/test_policy_records.py``).

A file holds two YAML documents: the record, then ``---`` and its samples. Loading is pure: the record documents
are read once at import (libyaml); the samples, most of the text, only when asked for (:meth:`PolicyRecord.samples`),
and validators only when the pack is built (:meth:`PolicyRecord.function`), so reading the records imports no
policy module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from policies.yaml_files import SAFE_LOADER

HERE = Path(__file__).resolve().parent

Environment = Literal["dev", "staging", "prod"]
Level = Literal["mandatory", "advisory", "disabled"]
ENVIRONMENTS: tuple[Environment, ...] = ("dev", "staging", "prod")
Kind = Literal["endpoint", "resource", "stack", "capacity"]
"""How the pack wraps the validator: ``endpoint`` a rule ``fn(custom_resource, RuleContext)`` over the operator's
endpoint custom resources (also run by the config check); ``resource`` / ``stack`` a CrossGuard
``validate(args, report)``; ``capacity`` a finding of the stack's capacity plan (``policies/capacity_rules.py``)."""
Need = Literal["addon", "addon-if-registered", "instance-groups"]
"""Stack context an endpoint rule reads: the pinned inference add-on (``addon``: the rule is skipped without it;
``addon-if-registered``: read when there) or the HyperPod instance groups. An endpoint rule with needs is a
stack policy."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Scope(_Strict):
    resources: tuple[str, ...] = Field(min_length=1)
    """What the validator judges, in words (SDK classes or custom-resource kinds)."""
    stacks: tuple[Literal["regional", "global"], ...] = ("regional",)


class Escalation(_Strict):
    """A per-resource level above ``levels``: where ``function(cr)`` holds, the rule is ``to`` in ``environments``."""

    to: Level
    environments: tuple[Environment, ...]
    when: str  # shown in the docs' level column, e.g. "kvaware only"
    function: str  # module:function, ``fn(custom_resource) -> bool``


class Samples(_Strict):
    allowed: tuple[dict[str, Any], ...] = ()
    disallowed: tuple[dict[str, Any], ...] = ()
    no_disallowed: str | None = None
    """Why no offline input can be refused today (the rule's data has no row yet); only with no disallowed."""


class PolicyRecord(_Strict):
    name: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    kind: Kind
    validator: str = Field(pattern=r"^[a-z_.]+:[A-Za-z_][A-Za-z0-9_]*$")
    scope: Scope
    needs: tuple[Need, ...] = ()
    severity: Literal["low", "medium", "high", "critical"]
    levels: dict[Environment, Level]
    escalate: Escalation | None = None
    fsbp: str | None = None
    waiver: str | None = None
    checked_by: str
    description: str = Field(min_length=60)
    doc: str
    sources: tuple[str, ...] = ()
    config_schema: dict[str, dict[str, Any]] | None = None
    config_values: dict[str, Any] = {}

    @model_validator(mode="after")
    def _complete(self) -> PolicyRecord:
        missing = [e for e in ENVIRONMENTS if e not in self.levels]
        if missing:
            raise ValueError(f"levels: no level for {', '.join(missing)}")
        if self.needs and self.kind != "endpoint":
            raise ValueError("needs: only endpoint rules read stack context")
        if self.escalate is not None and self.kind != "endpoint":
            raise ValueError("escalate: only endpoint rules have a per-resource level")
        if self.kind == "capacity" and (len(set(self.levels.values())) != 1 or "disabled" in self.levels.values()):
            raise ValueError("levels: a capacity rule's findings carry one level, the same in every environment")
        for url in self.sources:
            if not url.startswith("https://"):
                raise ValueError(f"sources: {url!r} is not a public https URL")
        return self

    def pack_level(self, environment: Environment) -> Level:
        """The policy's level in an environment: the highest level any resource can have there."""
        if self.escalate is not None and environment in self.escalate.environments:
            return self.escalate.to
        return self.levels[environment]

    def report_levels(self, environment: Environment) -> tuple[str, ...] | None:
        """Which per-resource levels the policy reports (only for an escalating rule: the engine knows one level
        per policy, so where it escalates the pack reports only the escalated resources)."""
        if self.escalate is None:
            return None
        return (self.escalate.to,) if environment in self.escalate.environments else ("mandatory", "advisory")

    def pack_config(self, environment: Environment) -> dict[str, Any]:
        """This policy's entry of ``config.<environment>.json``."""
        entry: dict[str, Any] = {"enforcementLevel": self.pack_level(environment)}
        for key, value in self.config_values.items():
            entry[key] = environment if value == "{environment}" else value
        report = self.report_levels(environment)
        if report is not None:
            entry["reportLevels"] = list(report)
        if self.waiver is not None:
            entry["waiver"] = self.waiver
        return entry

    def function(self) -> Callable[..., Any]:
        """The validator, imported on first use."""
        return resolve(self.validator)

    def samples(self, folder: Path = HERE) -> Samples:
        """The record's samples: the file's second YAML document, read only when asked for (tests, docs)."""
        documents = list(yaml.load_all((folder / f"{self.name}.yaml").read_text(encoding="utf-8"), Loader=SAFE_LOADER))
        if len(documents) != 2:
            raise RecordError(
                f"{self.name}.yaml: {len(documents)} YAML documents; the record, then --- and its samples"
            )
        return Samples.model_validate(documents[1])


def resolve(reference: str) -> Callable[..., Any]:
    module, _, name = reference.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return found


class RecordError(ValueError):
    """A record file that does not load: the file and what is wrong."""


def _first_document(path: Path) -> Any:
    """The record document of a file (the samples after ``---`` are not parsed: they are most of its text)."""
    return next(iter(yaml.load_all(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)), None)


def load(folder: Path = HERE) -> dict[str, PolicyRecord]:
    """Every record of ``folder`` by name, in file-name order (the file is ``<name>.yaml``)."""
    records: dict[str, PolicyRecord] = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            record = PolicyRecord.model_validate(_first_document(path))
        except ValueError as err:
            raise RecordError(f"{path.name}: {err}") from None
        if record.name != path.stem:
            raise RecordError(f"{path.name}: name {record.name!r} is not the file's name")
        records[record.name] = record
    return records


RECORDS: Mapping[str, PolicyRecord] = load()
"""Every policy record by name."""


def of_kind(*kinds: Kind) -> list[PolicyRecord]:
    return [r for r in RECORDS.values() if r.kind in kinds]


def is_mandatory(name: str, environment: str) -> bool:
    """Whether policy ``name`` refuses in ``environment``: what a config-time check of the same rule asks, so the
    rule's level stays written once, in its record."""
    return any(environment == env and RECORDS[name].pack_level(env) == "mandatory" for env in ENVIRONMENTS)
