"""``tools.cli.preview --diff-state FILE``: diff the offline plan against a deployed stack's ``pulumi stack export``.

So a user with a deployed stack and no cloud credentials in CI sees what the next ``pulumi up`` would do: the
export's resources become the base of :func:`tools.plan.diff.diff_plans` (joined by URN; their recorded
``inputs`` against the new inputs; ops by the same replacement rules; a resource in the state that the program no
longer registers is a ``delete``), and the plan-diff policies run unchanged on the result (prod's
no-replacement guard included).

The export is ``apitype.UntypedDeployment`` (``version``, ``deployment``) around a ``DeploymentV3`` (``manifest``,
``resources``: ``ResourceV3``): pulumi/pulumi@0ac56e876614aedf12771d73ef7e80959b8a6fd4 (tag v3.259.0; the SDK pin
3.272.0 is not in the mirror) ``sdk/go/common/apitype/core.go``; versions 3 and 4
(``DeploymentSchemaVersionCurrent``/``Latest``).

What the state knows that an offline run cannot, and how it is read:

* **Computed values.** The state holds every value a resource computed (``vpc-0f1e...``); the offline plan has the
  unknown sentinel there. An unknown new value is not compared with the recorded one: it is what its dependency
  computes, so it changes exactly when the dependency is created, replaced or may be replaced — the plan diff's
  propagation (``known_base``).
* **Secrets.** A value in a secret envelope (``{"4dabf18193072939515e22adb298388d":
  "1b47061264138c4ac30d75fd1eb44270", "ciphertext"|"plaintext": ...}``, ``sdk/go/common/resource/sig/sig.go``) is
  read as ``"[secret]"`` and never printed. Offline the new value of a secret is a placeholder, so a secret against
  a secret is not compared (counted in ``secretsNotCompared``: ``pulumi preview`` with the stack's secrets provider
  compares them); a secret against a plain value is a change.
* **Resource references** (sig ``5cf8f73096256a8f31e491e813e4eb8e``) are read as the plan writes them
  (``{"resourceReference": <type>}``).
* **Remote components' children.** Under mocks a remote component (pulumi-eks ``eks:index:Cluster``) registers no
  children, so its children in the state are not compared (``notComparedOffline``), never called deletes.
* Default providers (``...::pulumi:providers:<pkg>::default_<version>``) go where the plan keeps them, the
  extension block's ``defaultProviders``; resources marked ``delete`` (pending deletion) are left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.config import PROJECT
from tools.plan.diff import BasePlanError
from tools.plan.mocks import URN_PREFIX, qualified_type
from tools.plan.writer import EXTENSION, PLAN_FORMAT, SECRET, is_default_provider, preview_step, resource_v3

SIG_KEY = "4dabf18193072939515e22adb298388d"  # sig.Key
SIG_SECRET = "1b47061264138c4ac30d75fd1eb44270"  # sig.Secret
SIG_RESOURCE_REFERENCE = "5cf8f73096256a8f31e491e813e4eb8e"  # sig.ResourceReference
SCHEMA_VERSIONS = (3, 4)


class StateError(BasePlanError):
    """The ``--diff-state`` file is not a ``pulumi stack export`` of this stack."""


def state_value(value: Any) -> Any:
    """A recorded value as the plan writes values: secrets ``"[secret]"``, resource references by type."""
    if isinstance(value, dict):
        sig = value.get(SIG_KEY)
        if sig == SIG_SECRET:
            return SECRET
        if sig == SIG_RESOURCE_REFERENCE:
            return {"resourceReference": qualified_type(str(value.get("urn", ""))).rsplit("$", 1)[-1]}
        return {str(k): state_value(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [state_value(v) for v in value]
    return value


def count_secrets(value: Any) -> int:
    if isinstance(value, dict):
        if value.get(SIG_KEY) == SIG_SECRET:
            return 1
        return sum(count_secrets(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_secrets(v) for v in value)
    return 0


def load_export(path: Path) -> dict[str, Any]:
    """The JSON of ``path``; :class:`StateError` when it cannot be read."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StateError(f"--diff-state {path}: no such file") from None
    except json.JSONDecodeError as err:
        raise StateError(
            f"--diff-state {path}: not JSON ({err.msg} at line {err.lineno}, column {err.colno})"
        ) from None
    if not isinstance(raw, dict):
        raise StateError(f"--diff-state {path}: not a stack export (expected `pulumi stack export` output)")
    return raw


def _resources(export: dict[str, Any], source: str) -> list[dict[str, Any]]:
    version = export.get("version")
    deployment = export.get("deployment")
    if not isinstance(deployment, dict):
        raise StateError(
            f"{source}: not a stack export (no `deployment`: expected `pulumi stack export --stack <s> --file F`)"
        )
    if version not in SCHEMA_VERSIONS:
        raise StateError(f"{source}: deployment schema version {version!r}; this tool reads {SCHEMA_VERSIONS}")
    resources = deployment.get("resources") or []
    if not isinstance(resources, list) or not all(isinstance(r, dict) and "urn" in r for r in resources):
        raise StateError(f"{source}: deployment.resources is not a list of resources with a `urn`")
    return resources


def state_plan(export: dict[str, Any], source: str, *, stack: str) -> dict[str, Any]:
    """The export as a base plan of :mod:`tools.plan.writer`'s format (every resource a ``create`` step)."""
    resources = _resources(export, source)
    prefix = f"{URN_PREFIX}{stack}::{PROJECT}::"
    others = sorted({str(r["urn"]).split("::")[0].removeprefix(URN_PREFIX) + "::" + str(r["urn"]).split("::")[1]
                     for r in resources if not str(r["urn"]).startswith(prefix) and str(r["urn"]).count("::") >= 3})  # fmt: skip
    if others:
        raise StateError(
            f"{source}: an export of {others[0]!r} (stack::project), not {stack}::{PROJECT}; export the stack this "
            "preview is for"
        )
    steps: list[dict[str, Any]] = []
    defaults: list[dict[str, Any]] = []
    secrets = 0
    for r in resources:
        if r.get("delete"):
            continue  # pending deletion (a replaced resource's old copy): the engine deletes it either way
        urn = str(r["urn"])
        secrets += count_secrets(r.get("inputs"))
        state = resource_v3(
            type=str(r.get("type", qualified_type(urn).rsplit("$", 1)[-1])),
            urn=urn,
            custom=bool(r.get("custom")),
            parent=r.get("parent"),
            provider=r.get("provider"),
            protect=bool(r.get("protect")),
            inputs=state_value(r.get("inputs") or {}),
            dependencies=sorted(set(r.get("dependencies") or [])),
            propertyDependencies={k: sorted(set(v)) for k, v in sorted((r.get("propertyDependencies") or {}).items())},
        )
        step = preview_step("create", urn, str(r.get("provider") or ""), newState=state)
        (defaults if is_default_provider(urn) else steps).append(step)
    return {
        "steps": steps,
        EXTENSION: {
            "format": PLAN_FORMAT,
            "project": PROJECT,
            "stack": stack,
            "defaultProviders": defaults,
            "stateSecrets": secrets,
        },
    }


def remote_component_children(base: dict[str, Any], head: dict[str, Any]) -> set[str]:
    """URNs of state resources below a remote component of the head plan (not a custom resource, with a
    provider): the mocks register none of them, so they cannot be compared offline."""
    remote = {
        s["urn"] for s in head.get("steps") or [] if not (s.get("newState") or {}).get("custom") and s.get("provider")
    }
    parents = {s["urn"]: (s.get("newState") or {}).get("parent") for s in base.get("steps") or []}
    out = set()
    for urn in parents:
        parent = parents.get(urn)
        seen: set[str] = set()
        while parent and parent not in seen:
            if parent in remote:
                out.add(urn)
                break
            seen.add(parent)
            parent = parents.get(parent)
    return out


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.plan.state", "python -m tools.cli.preview --stack <name> --diff-state STATE.json")
