"""What ``python -m tools.verify`` observed in a live stack, read back by the offline checks.

A verify run writes ``verified/<stack>.json`` (``tools/verify/report.py``); commit it, and the next offline preview
of that stack uses the observed fact instead of the assumption the checklist of ``docs/first-deploy.md`` marks as
unverified, and says so ("observed 2026-12-04 by verify"):

* the Service a front-door route binds (``ingress.routes[].servicePort``; UNCONFIRMED [router-service-port]): a
  port the Service does not have is a config error naming the port it has (``components/config/ingress.py``,
  ``_observed_services``);
* each instance group's node ``status.allocatable`` (UNCONFIRMED [nodeadm-defaults]): the capacity checks use it
  instead of the computed kube-reserved (:func:`allocatable_of`, ``policies/capacity_rules.ObservedAllocatable``).

* the builds EKS lists for each prerequisite add-on on the cluster's Kubernetes version (check ``prerequisite-builds``):
  every stack of the same region is then judged by them (:func:`addon_build_listings`, ``policies/addon_builds.py``).

The loader reads these once per run (``components/config/context.py``); the checks get them from there.
``settled_by_stack`` tells the checklist's marker listing which checklist ids a run settled for which stack. The
directory is ``verified/`` at the repository root, or ``$HPI_VERIFIED_DIR`` (the tests point it elsewhere).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from policies import addon_builds
from policies import capacity_rules as cap

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "hyperpod-inference/verified/v1"


def verified_dir() -> Path:
    return Path(os.environ.get("HPI_VERIFIED_DIR") or ROOT / "verified")


def verified_path(stack: str) -> Path:
    return verified_dir() / f"{stack}.json"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class ServicePort(_Model):
    port: int
    target_port: int | str | None = Field(default=None, alias="targetPort")
    name: str | None = None


class ObservedService(_Model):
    """The Service a route's TargetGroupBinding names, as the cluster had it (``exists: false``: not there)."""

    namespace: str
    name: str
    exists: bool
    ports: list[ServicePort] = Field(default_factory=list)


class ObservedGroup(_Model):
    """The smallest ``status.allocatable`` of an instance group's nodes, their labels and taints."""

    nodes: int
    allocatable: dict[str, str]
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[dict[str, Any]] = Field(default_factory=list)


class ObservedAddonBuilds(_Model):
    """The builds EKS listed (DescribeAddonVersions) for the cluster's Kubernetes version, per prerequisite add-on."""

    region: str
    kubernetes_version: str = Field(alias="kubernetesVersion")
    builds: dict[str, list[str]]  # add-on name -> builds listed for that version


class Observations(_Model):
    """``verified/<stack>.json`` (the keys this module reads; a run may write more, under ``facts``)."""

    schema_: str = Field(alias="schema", pattern=f"^{SCHEMA}$")
    stack: str
    observed_on: str = Field(alias="observedOn", pattern=r"^\d{4}-\d{2}-\d{2}$")
    settled: list[str] = Field(default_factory=list)
    services: dict[str, ObservedService] = Field(default_factory=dict)  # key: endpoint name
    groups: dict[str, ObservedGroup] = Field(default_factory=dict)  # key: instance group name
    addon_builds: ObservedAddonBuilds | None = Field(default=None, alias="addonBuilds")
    facts: dict[str, Any] = Field(default_factory=dict)

    @property
    def note(self) -> str:
        return f"observed {self.observed_on} by verify"


class ObservationsError(ValueError):
    """``verified/<stack>.json`` exists but is not what verify writes."""


def parse(path: Path) -> Observations:
    try:
        return Observations.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as err:
        raise ObservationsError(f"{path}:{err.lineno}:{err.colno}: not JSON ({err.msg})") from None
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ObservationsError(f"{path}: {where}: {first['msg']} (rerun python -m tools.verify)") from None


def load(stack: str) -> Observations | None:
    """The stack's observations, or None when verify never ran for it (raises :class:`ObservationsError`)."""
    path = verified_path(stack)
    return parse(path) if path.is_file() else None


def settled_by_stack() -> dict[str, list[tuple[str, str]]]:
    """``{checklist id: [(stack, observed on), ...]}`` over every ``verified/*.json``."""
    out: dict[str, list[tuple[str, str]]] = {}
    folder = verified_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        obs = parse(path)
        for check_id in obs.settled:
            out.setdefault(check_id, []).append((obs.stack, obs.observed_on))
    return out


def allocatable_of(obs: Observations | None) -> dict[str, cap.ObservedAllocatable]:
    """Per instance group, the allocatable verify read from its nodes (empty when never observed, or when the file
    is malformed: ``components/config/ingress.py`` reports that as a config error)."""
    if obs is None:
        return {}
    return {
        name: cap.ObservedAllocatable({r: cap.amount(r, v) for r, v in g.allocatable.items()}, obs.note)
        for name, g in obs.groups.items()
    }


def addon_build_listings(region: str) -> tuple[addon_builds.Listing, ...]:
    """What verify read of DescribeAddonVersions in ``region``, over every ``verified/*.json`` (any stack: the
    builds EKS lists for a Kubernetes version are the region's, not the stack's). A malformed file gives nothing
    here; the ingress checks report it as a config error."""
    folder = verified_dir()
    out: list[addon_builds.Listing] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            obs = parse(path)
        except ObservationsError:
            continue
        seen = obs.addon_builds
        if seen is None or seen.region != region:
            continue
        source = f"observed {obs.observed_on} by verify ({obs.stack}, {seen.region})"
        out.extend(
            addon_builds.Listing(addon, seen.kubernetes_version, tuple(builds), source)
            for addon, builds in sorted(seen.builds.items())
            if builds
        )
    return tuple(out)
