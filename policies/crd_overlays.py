"""Operator releases without a published CRD (3.4-3.7), as schema overlays on the newest published one.

No retrievable snapshot of aws/sagemaker-hyperpod-cli has the CRD YAML of operator 3.4 or later; what is known of
those releases comes from AWS's release notes, the Inference Gateway page and the release pull requests
(../shared/docs/operator-3.4-3.7.md). Each release is one data file, ``policies/crd_overlays/operator-<v>.yaml``:
the spec fields it adds, each with its JSON-schema fragment (type, enum, bounds) or ``schemaFrom`` (a core type the
base CRD already embeds, e.g. ``worker.resources``), the source keys of ``policies/compatibility.yaml`` it rests
on, and, where no source states the field's path, ``checklistId`` (the id of its marker and of its row in the
checklist of docs/first-deploy.md).

What an overlay is worth is said wherever it is used:

- a spec validated with overlay fields is ``valid-against-docs-schema`` (sources listed), never ``valid``; one
  that sets a field whose path no source states is ``cannot-validate-offline`` (``tools/plan/crd_schema.py``);
- a field newer than the pinned add-on's operator is refused naming its release, and where the add-on → operator
  mapping is inferred (``operatorVersionBasis: inferred``) it is an advisory naming the verify check
  :data:`VERIFY_CHECK`, which reads the installed CRD (``policies/compatibility.py``, ``policies/rules.py``).

When a real CRD of a release is published (a ``crdReleases`` row at or after the overlay's operator), the CRD wins
and the overlay is superseded; ``tests/test_crd_overlays.py`` then checks that the two agree on every field they
share.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from policies import compatibility as compat
from policies.yaml_files import load_yaml_file

OVERLAY_DIR = Path(__file__).resolve().parent / "crd_overlays"
VERIFY_CHECK = "operator-crd-fields"
"""The ``python -m tools.verify`` check that reads the installed CRDs (``kubectl get crd ... -o yaml``)."""
VERIFY_TEXT = f"`python -m tools.verify` check `{VERIFY_CHECK}` (reads the installed CRD)"

KindCode = Literal["IEC", "JSM"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class SchemaFrom(_Strict):
    """A core Kubernetes type the base CRD already embeds: its schema at ``path`` of the ``kind`` CRD."""

    kind: KindCode
    path: str


class OverlayField(_Strict):
    """One spec field an operator release adds, with what it rests on."""

    path: str
    kinds: tuple[KindCode, ...]
    sources: tuple[str, ...] = Field(min_length=1)
    description: str
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    schema_from: SchemaFrom | None = Field(default=None, alias="schemaFrom")
    checklist_id: str | None = Field(default=None, alias="checklistId", pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    minimum_addon: str | None = Field(default=None, alias="minimumAddon")
    capacity: Literal["sidecar"] | None = None

    @model_validator(mode="after")
    def _one_schema(self) -> OverlayField:
        if (self.schema_ is None) == (self.schema_from is None):
            raise ValueError(f"{self.path}: give exactly one of schema / schemaFrom")
        return self

    def applies_to(self, kind: str) -> bool:
        return any(compat._KIND_CODES[k] == kind for k in self.kinds)


class ImageRequirement(_Strict):
    """What a setting needs of the worker image: a minimum version of LMCache or vLLM."""

    component: Literal["lmcache", "vllm"]
    min: str

    def label(self) -> str:
        return f"{'LMCache' if self.component == 'lmcache' else 'vLLM'} >= {self.min}"


class RuleCondition(_Strict):
    path: str
    equals: Any


class OverlayRule(_Strict):
    """A rule the release's documents state: the policy rule ``id`` (``policies/rules.py``) enforces it; with
    ``when`` and ``requires`` it is an image requirement of a spec setting, read from here by that rule."""

    id: str
    sources: tuple[str, ...]
    when: RuleCondition | None = None
    requires: ImageRequirement | None = None
    covered_by_image_set: bool = Field(default=False, alias="coveredByImageSet")


class Overlay(_Strict):
    """One operator release's overlay file."""

    operator_version: str = Field(alias="operator")
    chart: str
    base: str
    sources: tuple[str, ...]
    fields: tuple[OverlayField, ...]
    status: tuple[OverlayField, ...] = ()
    rules: tuple[OverlayRule, ...] = ()
    file: str = ""

    @property
    def operator(self) -> tuple[int, ...]:
        return compat.operator_tuple(self.operator_version)


@functools.cache
def load_overlays() -> tuple[Overlay, ...]:
    """Every overlay file, oldest release first; source keys, add-ons and base releases checked."""
    table = compat.load_compatibility()
    out = []
    for path in sorted(OVERLAY_DIR.glob("operator-*.yaml")):
        overlay = Overlay.model_validate({**load_yaml_file(path), "file": f"policies/crd_overlays/{path.name}"})
        if path.name != f"operator-{overlay.operator_version}.yaml":
            raise ValueError(f"{path.name}: holds operator {overlay.operator_version}")
        if overlay.base not in {r.operator_version for r in table.crd_releases}:
            raise ValueError(f"{path.name}: base {overlay.base} is not a crdReleases row")
        keys = [*overlay.sources, *(k for f in (*overlay.fields, *overlay.status) for k in f.sources)]
        keys += [k for r in overlay.rules for k in r.sources]
        unknown = sorted(set(keys) - set(table.sources))
        if unknown:
            raise ValueError(f"{path.name}: unknown source keys {', '.join(unknown)}")
        for f in overlay.fields:
            if f.minimum_addon is not None and not compat.is_known_addon(f.minimum_addon):
                raise ValueError(f"{path.name}: {f.path}: unknown add-on {f.minimum_addon}")
        out.append(overlay)
    return tuple(sorted(out, key=lambda o: o.operator))


def superseded(overlay: Overlay) -> bool:
    """A published CRD of this release (or a later one) exists: the CRD is the contract, not the overlay."""
    return any(r.operator >= overlay.operator for r in compat.load_compatibility().crd_releases)


def active_fields(kind: str, operator_version: str | None = None) -> list[tuple[Overlay, OverlayField]]:
    """The overlay fields of ``kind`` up to ``operator_version`` (every release when None) whose release has no
    published CRD, oldest release first."""
    limit = compat.operator_tuple(operator_version) if operator_version is not None else None
    return [
        (o, f)
        for o in load_overlays()
        if not superseded(o) and (limit is None or o.operator <= limit)
        for f in o.fields
        if f.applies_to(kind)
    ]


def later_fields(kind: str, operator_version: str) -> list[tuple[Overlay, OverlayField]]:
    """The overlay fields of releases newer than ``operator_version`` (not superseded)."""
    have = {id(f) for _, f in active_fields(kind, operator_version)}
    return [(o, f) for o, f in active_fields(kind) if id(f) not in have]


def used(spec: dict[str, Any], fields: list[tuple[Overlay, OverlayField]]) -> list[tuple[Overlay, OverlayField]]:
    """The fields of ``fields`` that ``spec`` sets (a non-null value at the path)."""
    out = []
    for o, f in fields:
        found, value = compat.present(spec, f.path)
        if found and value is not None:
            out.append((o, f))
    return out


def fragment(f: OverlayField, core_schema: Callable[[str, str], dict[str, Any]]) -> dict[str, Any]:
    """The JSON-schema fragment of a field (``schemaFrom`` resolved through ``core_schema(kind_code, path)``)."""
    if f.schema_from is not None:
        node = copy.deepcopy(core_schema(f.schema_from.kind, f.schema_from.path))
    else:
        node = copy.deepcopy(dict(f.schema_ or {}))
    node["description"] = f.description
    return node


def apply(
    spec_schema: dict[str, Any],
    fields: list[tuple[Overlay, OverlayField]],
    core_schema: Callable[[str, str], dict[str, Any]],
) -> dict[str, Any]:
    """``spec_schema`` (a CRD's v1 spec) with ``fields`` added at their paths (a fresh copy)."""
    out = copy.deepcopy(spec_schema)
    for _, f in fields:
        node = out
        *parents, leaf = f.path.split(".")
        for part in parents:
            node = node.setdefault("properties", {}).setdefault(part, {"type": "object"})
        node.setdefault("properties", {})[leaf] = fragment(f, core_schema)
    return out


def schema_path(spec_schema: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The sub-schema at a dotted spec path, or None."""
    node: Any = spec_schema
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = (node.get("properties") or {}).get(part)
    return node if isinstance(node, dict) else None


def describe(fields: list[tuple[Overlay, OverlayField]]) -> str:
    """``operator 3.6 overlay (policies/crd_overlays/operator-3.6.yaml): inferenceGateway from <urls>; ...``"""
    parts = []
    for o, f in fields:
        where = f"path unsourced, checklist `{f.checklist_id}`" if f.checklist_id else "path as documented"
        parts.append(f"{f.path} (operator {o.operator_version}, {o.file}; {compat.source_urls(f.sources)}; {where})")
    return "; ".join(parts)


def image_requirements() -> list[tuple[Overlay, OverlayRule]]:
    """Every overlay rule that asks something of the worker image when a spec setting holds (those the add-ons'
    image sets already cover, ``coveredByImageSet``, are enforced by ``image-compatible-with-operator``)."""
    return [
        (o, r)
        for o in load_overlays()
        for r in o.rules
        if r.when is not None and r.requires is not None and not r.covered_by_image_set
    ]


def sidecar_paths(kind: str) -> list[str]:
    """Spec paths of the containers the operator adds to each inference pod (their requests count)."""
    return [f.path for _, f in active_fields(kind) if f.capacity == "sidecar"]


def checklist_ids() -> Iterator[tuple[str, str]]:
    """(overlay file, checklist id) of every field whose path no source states."""
    for o in load_overlays():
        for f in o.fields:
            if f.checklist_id:
                yield o.file, f.checklist_id


# --- release gating ---------------------------------------------------------------------------------------------


def _addon_index(version: str) -> int:
    return compat.addon_versions().index(version)


def _documented_operator() -> tuple[int, ...]:
    """The newest operator release a source maps an add-on build to (3.4: v1.5.0-eksbuild.1)."""
    return max(a.operator for a in compat.load_compatibility().addons if not a.operator_version_inferred)


def carried(f: OverlayField, o: Overlay, addon_version: str) -> bool | None:
    """Whether the pinned add-on's operator has the field: True, False, or None when no source can tell (the
    add-on → operator mapping is inferred and the release is newer than every documented mapping)."""
    release = compat.addon(addon_version)
    if f.minimum_addon is not None and _addon_index(addon_version) >= _addon_index(f.minimum_addon):
        return True  # a source states the add-on builds that carry it (D4 for inferenceGateway)
    if release.operator_version_inferred and o.operator > _documented_operator():
        return None
    return release.operator >= o.operator


def gate(
    spec: dict[str, Any], addon_version: str, kind: str
) -> tuple[list[tuple[Overlay, OverlayField]], list[tuple[Overlay, OverlayField]]]:
    """(refused, unknowable): overlay fields the spec sets that the pinned add-on's operator does not have, and
    those where the add-on → operator mapping cannot tell (an advisory naming :data:`VERIFY_CHECK`)."""
    refused, unknown = [], []
    for o, f in used(spec, active_fields(kind)):
        has = carried(f, o, addon_version)
        if has is False:
            refused.append((o, f))
        elif has is None:
            unknown.append((o, f))
    return refused, unknown


def unknown_text(o: Overlay, f: OverlayField, addon_version: str) -> str:
    release = compat.addon(addon_version)
    return (
        f"`{f.path}` is added by operator {o.operator_version} ({compat.source_urls(f.sources)}); which operator "
        f"add-on {addon_version} carries is inferred, not sourced (operator {release.operator_version}, "
        "operatorVersionNote in policies/compatibility.yaml), so whether its CRD has the field cannot be known "
        "offline; an API server prunes a field its CRD lacks"
    )


def path_unsourced_text(o: Overlay, f: OverlayField) -> str:
    return (
        f"`{f.path}` (operator {o.operator_version}, {compat.source_urls(f.sources)}) is rendered at a path no "
        f"source states (checklist `{f.checklist_id}` of docs/first-deploy.md, {o.file}); if the installed CRD has "
        "it elsewhere the API server prunes it and the setting has no effect"
    )


def features_missing(spec: dict[str, Any], addon_version: str, kind: str = compat.IEC) -> list[tuple[str, str, Any]]:
    """:func:`policies.compatibility.features_missing` plus the overlay fields the pinned add-on's operator lacks
    (``(path, introduced_in, feature)``; the unknowable ones are the ``feature-in-installed-crd`` advisory)."""
    out: list[tuple[str, str, Any]] = list(compat.features_missing(spec, addon_version, kind))
    refused, _ = gate(spec, addon_version, kind)
    for overlay, f in refused:
        feature = compat.Feature.model_validate(
            {
                "path": f.path,
                "introducedIn": overlay.operator_version,
                "kinds": list(f.kinds),
                "sources": list(f.sources),
            }
        )
        out.append((f.path, overlay.operator_version, feature))
    return out


GATEWAY_CONFIG_FILE = "inferencegatewayconfig-v1alpha1.yaml"


class DocsSchema(_Strict):
    """A kind with no published CRD, as its documentation page defines it (the InferenceGatewayConfig)."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    minimum_addon: str = Field(alias="minimumAddon")
    sources: tuple[str, ...] = Field(min_length=1)
    spec: dict[str, Any]
    file: str = ""

    def describe(self) -> str:
        return f"{self.file} (docs schema; {compat.source_urls(self.sources)})"


@functools.cache
def gateway_config_schema() -> DocsSchema:
    """The InferenceGatewayConfig v1alpha1 spec schema of the AWS Inference Gateway page (D4)."""
    path = OVERLAY_DIR / GATEWAY_CONFIG_FILE
    doc = DocsSchema.model_validate({**load_yaml_file(path), "file": f"policies/crd_overlays/{path.name}"})
    unknown = sorted(set(doc.sources) - set(compat.load_compatibility().sources))
    if unknown or not compat.is_known_addon(doc.minimum_addon):
        raise ValueError(f"{path.name}: unknown source keys {unknown} or add-on {doc.minimum_addon}")
    return doc
