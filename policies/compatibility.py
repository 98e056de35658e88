"""Typed access to ``policies/compatibility.yaml``: add-on → operator → CRD → images → features → defects.

The table is data, kept in one YAML file with a public source on every row; this module only types and
queries it. Both the stack-config checks (``components/config``) and the policy pack (``policies/rules.py``)
call these helpers, so a new add-on release is one YAML edit.

Which spec fields an operator release has comes from its published CRD: ``crdReleases`` names the CRD files,
``python -m tools.generate.crd_models`` derives ``policies/crd_fields.json`` from them (the first release that has each
spec path and enum value), and :func:`features_missing` reads it together with the hand-dated ``features``
(fields no public CRD dates) and the overlays of the releases without a published CRD (``policies/crd_overlays.py``).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from policies.yaml_files import load_yaml_file

TABLE_PATH = Path(__file__).resolve().parent / "compatibility.yaml"
FIELDS_PATH = Path(__file__).resolve().parent / "crd_fields.json"

IEC = "InferenceEndpointConfig"
JSM = "JumpStartModel"
_KIND_CODES = {"IEC": IEC, "JSM": JSM}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class VersionBound(_Strict):
    """Either an exact supported version or a minimum."""

    exact: str | None = None
    min: str | None = None

    @model_validator(mode="after")
    def _one(self) -> VersionBound:
        if (self.exact is None) == (self.min is None):
            raise ValueError("give exactly one of exact/min")
        return self

    def allows(self, version: str) -> bool:
        got = parse_version(version)
        if got is None:
            return False
        if self.exact is not None:
            return got == parse_version(self.exact)
        assert self.min is not None
        bound = parse_version(self.min)
        return bound is not None and got >= bound

    def describe(self) -> str:
        return f"exactly {self.exact}" if self.exact is not None else f">= {self.min}"


class ImageSet(_Strict):
    lmcache: VersionBound
    vllm: VersionBound
    source: str


KindCode = Literal["IEC", "JSM"]


class CrdRelease(_Strict):
    """One operator release whose CRDs are published: the files (in the CRD folder) that define its fields."""

    operator_version: str = Field(alias="operator")
    chart: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    files: dict[KindCode, str]
    source: str

    @property
    def operator(self) -> tuple[int, ...]:
        return operator_tuple(self.operator_version)


class AddonRelease(_Strict):
    addon_version: str = Field(alias="addonVersion")
    operator_version: str = Field(alias="operatorVersion")
    released: str | None = None
    image_set: str = Field(alias="imageSet")
    required_configuration: tuple[str, ...] = Field(alias="requiredConfiguration")
    inference_gateway: bool = Field(default=False, alias="inferenceGateway")
    operator_version_basis: Literal["documented", "inferred"] = Field(alias="operatorVersionBasis")
    operator_version_note: str | None = Field(default=None, alias="operatorVersionNote")
    sources: tuple[str, ...]

    @model_validator(mode="after")
    def _inferred_rows_say_from_what(self) -> AddonRelease:
        if self.operator_version_basis == "inferred" and not self.operator_version_note:
            raise ValueError(f"{self.addon_version}: an inferred operatorVersion needs operatorVersionNote")
        return self

    @property
    def operator(self) -> tuple[int, ...]:
        return operator_tuple(self.operator_version)

    @property
    def operator_version_inferred(self) -> bool:
        """True when no source states this add-on's operator version (it is assembled from prose)."""
        return self.operator_version_basis == "inferred"


class Feature(_Strict):
    """A spec field (or a field set to one value) and the operator release that introduced it.

    The fields of releases without a public CRD are overlays (``policies/crd_overlays``), not features.
    """

    path: str
    value: str | None = None
    introduced_in: str = Field(alias="introducedIn")
    kinds: tuple[KindCode, ...]
    sources: tuple[str, ...]
    description: str | None = None

    @property
    def label(self) -> str:
        return f"{self.path}: {self.value}" if self.value is not None else self.path

    def applies_to(self, kind: str) -> bool:
        return any(_KIND_CODES[k] == kind for k in self.kinds)


class DefectCondition(_Strict):
    path: str
    equals: Any


class Defect(_Strict):
    id: str
    addon_versions: tuple[str, ...] = Field(default=(), alias="addonVersions")
    operator_below: str | None = Field(default=None, alias="operatorBelow")
    when: tuple[DefectCondition, ...]
    description: str
    workaround: str
    sources: tuple[str, ...]

    def affects(self, release: AddonRelease) -> bool:
        if release.addon_version in self.addon_versions:
            return True
        return self.operator_below is not None and release.operator < operator_tuple(self.operator_below)

    def triggered_by(self, spec: dict[str, Any]) -> list[str]:
        """The spec paths whose values trigger this defect."""
        hits = []
        for cond in self.when:
            found, value = dig(spec, cond.path)
            if found and _same(value, cond.equals):
                hits.append(cond.path)
        return hits


class PrerequisiteBuilds(_Strict):
    """The builds of one prerequisite add-on EKS lists for one Kubernetes version, and where that was read."""

    addon: str
    kubernetes_version: str = Field(alias="kubernetesVersion", pattern=r"^1\.[0-9]+$")
    builds: tuple[str, ...] = Field(min_length=1)
    source: str = Field(min_length=1)


class LmcacheRedisCommands(_Strict):
    """The Redis commands one LMCache release sends to its L2 cache (read from its wheel; ``source`` says which)."""

    lmcache: str
    commands: tuple[str, ...] = Field(min_length=1)
    source: str


class CompatibilityTable(_Strict):
    sources: dict[str, str]
    crd_releases: tuple[CrdRelease, ...] = Field(alias="crdReleases")
    image_sets: dict[str, ImageSet] = Field(alias="imageSets")
    addons: tuple[AddonRelease, ...]
    features: tuple[Feature, ...]
    defects: tuple[Defect, ...]
    prerequisite_builds: tuple[PrerequisiteBuilds, ...] = Field(default=(), alias="prerequisiteBuilds")
    lmcache_redis_commands: tuple[LmcacheRedisCommands, ...] = Field(default=(), alias="lmcacheRedisCommands")

    @model_validator(mode="after")
    def _cross_refs(self) -> CompatibilityTable:
        cited: list[str] = [s.source for s in self.image_sets.values()] + [r.source for r in self.crd_releases]
        cited.extend(r.source for r in self.lmcache_redis_commands)
        if [r.operator for r in self.crd_releases] != sorted({r.operator for r in self.crd_releases}):
            raise ValueError("crdReleases must be oldest first, one row per operator release")
        for a in self.addons:
            if a.image_set not in self.image_sets:
                raise ValueError(f"{a.addon_version}: unknown imageSet {a.image_set}")
            cited.extend(a.sources)
        for f in self.features:
            cited.extend(f.sources)
        for d in self.defects:
            cited.extend(d.sources)
            for v in d.addon_versions:
                if v not in {a.addon_version for a in self.addons}:
                    raise ValueError(f"defect {d.id}: unknown add-on {v}")
        unknown = sorted(set(cited) - set(self.sources))
        if unknown:
            raise ValueError(f"unknown source keys: {', '.join(unknown)}")
        return self


@functools.cache
def load_compatibility() -> CompatibilityTable:
    """The parsed table (cached: the file is read once per process)."""
    return CompatibilityTable.model_validate(load_yaml_file(TABLE_PATH))


# --- helpers -----------------------------------------------------------------------------------------


def operator_tuple(version: str) -> tuple[int, ...]:
    """``"3.1.2"`` → ``(3, 1, 2)``; a shorter version sorts before its patch releases (3.1 < 3.1.2)."""
    return tuple(int(p) for p in version.split("."))


_IMAGE_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:\.?post(\d+))?")


def parse_version(text: str) -> tuple[int, int, int, int] | None:
    """``v0.3.9post2`` → ``(0, 3, 9, 2)``; anything that is not such a version → ``None``."""
    m = _IMAGE_VERSION.fullmatch(text.strip())
    if m is None:
        return None
    return (int(m[1]), int(m[2]), int(m[3]), int(m[4] or 0))


def addon_versions() -> list[str]:
    return [a.addon_version for a in load_compatibility().addons]


def addon(version: str) -> AddonRelease:
    """The release row of an add-on version (``KeyError`` naming the known versions if absent)."""
    for a in load_compatibility().addons:
        if a.addon_version == version:
            return a
    raise KeyError(f"add-on {version} is not in the compatibility table; known: {', '.join(addon_versions())}")


def is_known_addon(version: str) -> bool:
    return version in addon_versions()


def minimum_addon_for(operator_version: str) -> AddonRelease | None:
    """The oldest add-on release whose operator is at least ``operator_version``."""
    need = operator_tuple(operator_version)
    return next((a for a in load_compatibility().addons if a.operator >= need), None)


def dig(data: Any, path: str) -> tuple[bool, Any]:
    """``(present, value)`` of a dotted path in nested dicts."""
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return False, None
        data = data[part]
    return True, data


def _same(value: Any, expected: Any) -> bool:
    if isinstance(value, str) and isinstance(expected, str):
        return value.lower() == expected.lower()
    return bool(value == expected and type(value) is type(expected))


def crd_release_for(operator_version: str, kind: str = IEC) -> CrdRelease:
    """The published CRD an operator release understands for ``kind``: the newest ``crdReleases`` row not newer
    than it that has a file of that kind; when every such row is newer (the JumpStartModel CRD is published from
    3.2 only), the oldest row that has one."""
    code = _code(kind)
    have = [r for r in load_compatibility().crd_releases if code in r.files]
    if not have:
        raise KeyError(f"no published CRD of {kind} in crdReleases")
    older = [r for r in have if r.operator <= operator_tuple(operator_version)]
    return older[-1] if older else have[0]


def _code(kind: str) -> KindCode:
    for code, name in _KIND_CODES.items():
        if name == kind:
            return "IEC" if code == "IEC" else "JSM"
    raise KeyError(f"not an operator kind: {kind}")


@functools.cache
def crd_field_table() -> dict[str, dict[str, str]]:
    """``{kind code: {spec path or path=value: operator release that first has it}}`` from the published CRDs
    (``policies/crd_fields.json``, generated by ``python -m tools.generate.crd_models``). Paths of the oldest published CRD
    of a kind are not listed; ``[]`` marks list items (``tags[].name``)."""
    doc = json.loads(FIELDS_PATH.read_text(encoding="utf-8"))
    table: dict[str, dict[str, str]] = doc["kinds"]
    return table


def present(data: Any, path: str) -> tuple[bool, Any]:
    """``(present, value)`` of a dotted path whose ``[]`` parts step into every list item (the first found)."""
    head, dot, rest = path.partition(".")
    key, brackets = (head[:-2], True) if head.endswith("[]") else (head, False)
    if not isinstance(data, dict) or key not in data:
        return False, None
    value = data[key]
    if not brackets:
        return (True, value) if not dot else present(value, rest)
    for item in value if isinstance(value, list) else []:
        found, got = (True, item) if not dot else present(item, rest)
        if found:
            return found, got
    return False, None


def features_missing(spec: dict[str, Any], addon_version: str, kind: str = IEC) -> list[tuple[str, str, Feature]]:
    """Spec features the pinned add-on's operator does not have: ``(path, introduced_in, feature)``.

    A spec path (or enum value) is missing when the CRD of the pinned operator (:func:`crd_release_for`) lacks it
    and a later published CRD has it (:func:`crd_field_table`), when a hand-dated ``features`` row says the
    operator is older than the release that introduced it. The fields of releases without a published CRD are
    added by :func:`policies.crd_overlays.features_missing`, which the config checks and the rules call. ``path`` is the spec path where the feature is used
    (``[]`` for list items); ``introduced_in`` the operator version that added it.
    """
    release = addon(addon_version)
    table = load_compatibility()
    own = crd_release_for(release.operator_version, kind)
    by_operator = {r.operator_version: r for r in table.crd_releases}
    out: list[tuple[str, str, Feature]] = []
    for key, introduced in crd_field_table().get(_code(kind), {}).items():
        if operator_tuple(introduced) <= own.operator:
            continue
        path, eq, value = key.partition("=")
        found, got = present(spec, path)
        if not found or got is None or (eq and not _same(got, value)):
            continue
        feature = Feature.model_validate(
            {
                "path": path,
                "value": value if eq else None,
                "introducedIn": introduced,
                "kinds": [_code(kind)],
                "sources": [by_operator[introduced].source],
            }
        )
        out.append((path, introduced, feature))
    for feature in table.features:
        if not feature.applies_to(kind) or release.operator >= operator_tuple(feature.introduced_in):
            continue
        found, got = present(spec, feature.path)
        if not found or got is None:
            continue
        if feature.value is not None and not _same(got, feature.value):
            continue
        out.append((feature.path, feature.introduced_in, feature))
    return out


def missing_text(feature: Feature, introduced: str, addon_version: str) -> str:
    """Why a feature is refused for a pin, naming the release that adds it and the add-on that carries it."""
    minimum = minimum_addon_for(introduced)
    need = (
        f"add-on {minimum.addon_version} or later"
        if minimum
        else "no add-on build of the compatibility table is known to carry it"
    )
    release = addon(addon_version)
    return (
        f"`{feature.label}` needs operator {introduced}+ ({need}; {source_urls(feature.sources)}); "
        f"operator.addonVersion pins {addon_version} (operator {release.operator_version})"
    )


def image_component(image: str) -> tuple[Literal["lmcache", "vllm"] | None, str | None]:
    """Which versioned component an image is (LMCache or vLLM) and the version its tag names, if any."""
    ref = image.split("@", 1)[0]
    repo, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "")
    name = repo.lower()
    component: Literal["lmcache", "vllm"] | None
    if "lmcache" in name:
        component = "lmcache"
    elif "vllm" in name:
        component = "vllm"
    else:
        component = None
    version = tag if tag and parse_version(tag) is not None else None
    return component, version


def _split_image(image: str) -> tuple[str, str, str]:
    """``repo[:tag][@digest]`` -> (repository, tag, digest); a registry port (``host:5000/x``) is not a tag."""
    ref, _, digest = image.partition("@")
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        repo, _, tag = ref.rpartition(":")
        return repo, tag, digest
    return ref, "", digest


def image_repository(image: str) -> str:
    """The image without its tag and digest (``lmcache/vllm-openai:latest`` -> ``lmcache/vllm-openai``)."""
    return _split_image(image)[0]


def image_tag_text(image: str) -> str:
    """Why an image's reference names no version, in words (for messages)."""
    _, tag, digest = _split_image(image)
    if tag.lower() == "latest":
        return "tag 'latest' is mutable"
    if not tag and digest:
        return "pinned by digest, without a version tag"
    if not tag:
        return "no tag: Kubernetes pulls :latest, which is mutable"
    return f"tag {tag!r} is not a version"


def image_requirement(image: str, addon_version: str) -> str | None:
    """What the pinned add-on needs of this image, e.g. ``LMCache >= 0.4.3``; ``None`` if not LMCache/vLLM."""
    component, _ = image_component(image)
    if component is None:
        return None
    table = load_compatibility()
    bound = getattr(table.image_sets[addon(addon_version).image_set], component)
    return f"{'LMCache' if component == 'lmcache' else 'vLLM'} {bound.describe()}"


def image_lmcache_version(image: str) -> str | None:
    """The LMCache version an image's tag names (``lmcache/vllm-openai:v0.4.3`` -> ``v0.4.3``); None when the image
    is not an LMCache image or its tag is not a version (``latest``, a vLLM or DLC tag: LMCache inside is unknown)."""
    component, version = image_component(image)
    return version if component == "lmcache" else None


def lmcache_redis_commands(version: str) -> tuple[str, ...] | None:
    """The Redis commands LMCache ``version`` sends (``lmcacheRedisCommands``); None for a release not read."""
    wanted = parse_version(version)
    for row in load_compatibility().lmcache_redis_commands:
        if wanted is not None and parse_version(row.lmcache) == wanted:
            return row.commands
    return None


def all_lmcache_redis_commands() -> tuple[str, ...]:
    """Every command some listed LMCache release sends, in table order (the ACL when no image names its version)."""
    return tuple(dict.fromkeys(c for row in load_compatibility().lmcache_redis_commands for c in row.commands))


def image_versions_ok(image: str, addon_version: str) -> bool | None:
    """Whether an LMCache/vLLM image's tagged version is supported by the pinned add-on's operator.

    ``None`` when it cannot be told: the image is neither LMCache nor vLLM, or its tag is not a version
    (``latest``, a DLC tag such as ``server-hyperpod-cuda-v1.1``).
    """
    component, version = image_component(image)
    if component is None or version is None:
        return None
    table = load_compatibility()
    bound: VersionBound = getattr(table.image_sets[addon(addon_version).image_set], component)
    return bound.allows(version)


def known_defects(spec: dict[str, Any], addon_version: str) -> list[tuple[Defect, list[str]]]:
    """Defects of the pinned add-on that this spec triggers, each with the triggering spec paths."""
    release = addon(addon_version)
    out = []
    for defect in load_compatibility().defects:
        if defect.affects(release):
            hits = defect.triggered_by(spec)
            if hits:
                out.append((defect, hits))
    return out


def source_urls(keys: tuple[str, ...] | list[str]) -> str:
    table = load_compatibility()
    return ", ".join(table.sources[k] for k in keys)
