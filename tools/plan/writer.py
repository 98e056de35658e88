"""The offline preview as ``pulumi preview --json`` writes it, so tools written for that output work on it.

The engine's JSON, field for field (pulumi/pulumi@0ac56e876614aedf12771d73ef7e80959b8a6fd4, tag v3.259.0, the
newest release in the mirror; the SDK pin 3.272.0 is not tagged there and these files are unchanged up to
master 1b5949891b3cefcb9974752b24a5ecef0acc86c8):

* ``PreviewDigest`` (``pkg/display/json.go``): ``config``, ``steps``, ``diagnostics``, ``duration`` (a Go
  ``time.Duration``: integer nanoseconds), ``changeSummary``, ``maybeCorrupt``; every one ``omitempty``.
* ``PreviewStep``: ``op``, ``urn`` (always), ``provider``, ``oldState``, ``newState``, ``diffReasons``,
  ``replaceReasons`` (``omitempty``) and ``detailedDiff`` (no ``omitempty``: ``null`` on a create, same or delete;
  ``{path: {kind, inputDiff}}`` on a change; kinds ``DiffKind.String()``: ``add``, ``add-replace``, ``delete``,
  ``delete-replace``, ``update``, ``update-replace``).
* ``PreviewDiagnostic``: ``urn``, ``message``, ``severity``; ``ShowPreviewDigest`` (``pkg/backend/display/json.go``)
  writes the prefix into the message (``"error: ..."``) and never sets ``prefix``.
* ``newState`` / ``oldState`` are ``apitype.ResourceV3`` (``sdk/go/common/apitype/core.go``): ``urn``, ``custom``,
  ``type`` always; ``inputs``, ``parent``, ``protect``, ``dependencies``, ``provider``, ``propertyDependencies``
  only when not empty (``omitempty``).
* Which steps: ``shouldShow`` (``pkg/backend/display/display.go``) drops ``same`` steps (no ``--show-sames``) but
  keeps the root Stack's; default providers' steps are internal (``isInternalStep``, ``pkg/engine/update.go``) and
  filtered from the display and from ``changeSummary``.

URNs are the engine's (:func:`tools.plan.mocks.engine_urn`): ``urn:pulumi:<stack>::<project>::<parent type chain>$<type>
::<name>``, the root Stack ``urn:pulumi:<stack>::<project>::pulumi:pulumi:Stack::<project>-<stack>``, a default
provider ``urn:pulumi:<stack>::<project>::pulumi:providers:aws::default_7_51_1`` (``ProviderRequest.DefaultName``,
``pkg/resource/deploy/providers/provider.go``). A resource managed by a default provider references it as
``<provider urn>::04da6b54-80e4-46f7-96ec-b56ff0331ba9`` (the engine's unknown-ID sentinel,
``plugin.UnknownStringValue``: the provider does not exist yet).

**The extension block.** Everything this project adds sits under one top-level key, ``hyperpodInference``
(:data:`EXTENSION`), which a reader of the engine's struct ignores: ``format``, ``project``, ``stack``,
``environment``, ``region``, ``counts`` (resources by type), ``outputs`` (stack exports), ``policyResults``
(``policyName``, ``enforcementLevel``, ``resourceType``, ``resourceName``, ``resourceUrn``, ``message``),
``configErrors`` (``path``, ``message``, ``text``), ``defaultProviders`` (the internal default-provider steps, which
the plan diff needs), and what :mod:`tools.cli.preview` and :mod:`tools.plan.diff` add: ``rehearsal``, ``capacity``,
``advisories``, ``memberOutputs``, ``base``, ``configChanges``, ``stepDetails`` (per URN: ``changes``, ``because``,
``replacementSource``). One op is ours: ``may-replace`` (no source says whether the change replaces); a reader
that knows only the engine's ops reads it as ``replace`` (:data:`tools.plan.reader.STRICT_OP`).

**Unknown values.** Every value a resource computes (its ID, ARN, endpoint: whatever the mocks made up) is
unknown until deploy, as ``pulumi preview --json`` shows it: an input that holds one — alone, or inside a string
built from it (a policy document, a URL) — is the sentinel ``04da6b54-80e4-46f7-96ec-b56ff0331ba9`` in the plan
(:func:`mark_unknowns`; only inputs whose ``propertyDependencies`` name the computing resource are touched).
Stack outputs likewise. Secrets are ``"[secret]"`` (``massagePropertyValue``).

Differences from the CLI, on purpose: ``inputs`` are every input the program passed, not the provider's checked
inputs; ``diagnostics`` carries the policy results and config errors; ``duration`` is the offline run's. The same
inputs give the same bytes but for ``duration``: ``json.dumps(plan, sort_keys=True)``, results sorted.
"""

from __future__ import annotations

import importlib.metadata
import json
from collections import Counter
from collections.abc import Collection, Iterable
from functools import cache
from typing import Any

from pulumi.runtime import rpc

from components.config import PROJECT
from components.config.stackfile import OFFLINE_SECRET_PLACEHOLDER
from policies.engine import PolicyResult
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration, secret_values, unwrap_secrets

# 3: the engine's URNs and JSON shape, our additions under EXTENSION (2: the mocks' URNs, our keys at the top;
# 1: mock values instead of unknowns).
PLAN_FORMAT = 3
EXTENSION = "hyperpodInference"
SECRET = "[secret]"
# The engine's unknown-value sentinel (pulumi/pulumi sdk/go/common/resource/plugin: UnknownStringValue),
# which `pulumi preview` prints as the ID of providers that do not exist yet.
UNKNOWN_ID = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

# Provider package of a type token -> the Python SDK distribution that carries its version.
_SDK_DISTRIBUTIONS = {
    "aws": "pulumi_aws",
    "aws-native": "pulumi_aws_native",
    "kubernetes": "pulumi_kubernetes",
    "eks": "pulumi_eks",
    "random": "pulumi_random",
}


def _blind(value: Any, secrets: frozenset[str]) -> Any:
    """``value`` with every string that contains a known secret replaced by ``"[secret]"``."""
    if isinstance(value, str):
        return SECRET if any(s in value for s in secrets) else value
    if isinstance(value, dict):
        return {k: _blind(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_blind(v, secrets) for v in value]
    return value


def plain(value: Any, secrets: frozenset[str] = frozenset()) -> Any:
    """Inputs as JSON: secrets as ``"[secret]"``, mapping keys sorted (stable run to run), lists in order.

    A secret-wrapped input whose plaintext contains one of the run's known secret values (``secrets``: the
    config placeholders and the outputs resources mark secret, :func:`tools.plan.mocks.secret_values`) keeps its
    structure with exactly those strings blinded — the HTTPS listener's actions stay readable while the OIDC
    client secret inside them does not. Any other secret-wrapped input is ``"[secret]"`` as a whole.
    """
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            inner = unwrap_secrets(value.get("value"))
            blinded = _blind(inner, secrets) if secrets else inner
            return plain(blinded, secrets) if blinded != inner else SECRET
        return {str(k): plain(value[k], secrets) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [plain(v, secrets) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    urn = getattr(value, "urn", None)  # a resource reference the mock monitor deserialized
    return f"resource-reference:{type(value).__name__}" if urn is not None else str(value)


@cache
def _sdk_version(package: str) -> str | None:
    dist = _SDK_DISTRIBUTIONS.get(package)
    if dist is None:
        return None
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_of(typ: str) -> str:
    return typ.split(":", 1)[0]


def provider_reference(reg: Registration, stack: str) -> str:
    """The provider a custom resource (or remote component) is managed by, as ``<provider urn>::<id>``."""
    if reg.provider:
        return reg.provider
    package = package_of(reg.type)
    if package in ("pulumi", "hyperpod") or not (reg.custom or package in _SDK_DISTRIBUTIONS):
        return ""
    version = _sdk_version(package)
    name = f"default_{version.replace('.', '_')}" if version else "default"
    return f"urn:pulumi:{stack}::{PROJECT}::pulumi:providers:{package}::{name}::{UNKNOWN_ID}"


def ordered(registrations: Iterable[Registration]) -> list[Registration]:
    """Depth first through the parent tree, children sorted by (type, name): stable run to run."""
    regs = list(registrations)
    urns = {r.urn for r in regs}
    children: dict[str, list[Registration]] = {}
    roots: list[Registration] = []
    for r in regs:
        if r.parent and r.parent in urns:
            children.setdefault(r.parent, []).append(r)
        else:
            roots.append(r)
    out: list[Registration] = []

    def visit(items: list[Registration]) -> None:
        for r in sorted(items, key=lambda x: (x.type, x.name, x.urn)):
            out.append(r)
            visit(children.get(r.urn, []))

    visit(roots)
    return out


def extension(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan's extension block (our additions: :data:`EXTENSION`); ``{}`` for an engine's own JSON."""
    block = plan.get(EXTENSION)
    return block if isinstance(block, dict) else {}


def resource_v3(**fields: Any) -> dict[str, Any]:
    """An ``apitype.ResourceV3`` as Go's encoder writes it: ``urn``, ``custom``, ``type`` always, every other
    field only when it is not its zero value (``omitempty``: ``""``, ``false``, ``[]``, ``{}``, ``null``)."""
    return {k: v for k, v in fields.items() if k in ("urn", "custom", "type") or v not in (None, "", False, [], {})}


def new_state(reg: Registration, stack: str, secrets: frozenset[str] = frozenset()) -> dict[str, Any]:
    return resource_v3(
        type=reg.type,
        urn=reg.urn,
        custom=reg.custom,
        parent=reg.parent,
        provider=provider_reference(reg, stack),
        protect=reg.protect,
        inputs=plain(reg.inputs, secrets),
        dependencies=sorted(set(reg.dependencies)),
        propertyDependencies={k: sorted(set(v)) for k, v in sorted(reg.property_dependencies.items())},
    )


def preview_step(op: str, urn: str, provider: str = "", **fields: Any) -> dict[str, Any]:
    """A ``PreviewStep``: ``op``, ``urn`` and ``detailedDiff`` always (``null`` unless given), the rest
    ``omitempty``."""
    out: dict[str, Any] = {"op": op, "urn": urn}
    if provider:
        out["provider"] = provider
    for key in ("oldState", "newState", "diffReasons", "replaceReasons"):
        if fields.get(key):
            out[key] = fields[key]
    out["detailedDiff"] = fields.get("detailedDiff") or None
    return out


def step(
    reg: Registration,
    stack: str,
    secrets: frozenset[str] = frozenset(),
    made: dict[str, frozenset[str]] | None = None,
) -> dict[str, Any]:
    state = new_state(reg, stack, secrets)
    if made and "inputs" in state:
        state["inputs"] = {
            key: mark_unknowns(value, _dependency_values(reg, key, made)) for key, value in state["inputs"].items()
        }
    return preview_step("create", reg.urn, state.get("provider", ""), newState=state)


_MIN_MADE = 8  # shorter computed strings ("ACTIVE", "none") are not looked for inside other strings


def _leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return []


def mock_made(registrations: Iterable[Registration]) -> dict[str, frozenset[str]]:
    """Per resource URN, the strings the mocks made up for it: its ID and every output that is not an input.

    A made-up value equal to one of the resource's own input strings (a bucket whose ID is the name it was
    given) stays known: a dependent may have taken the input's echo.
    """
    out: dict[str, frozenset[str]] = {}
    for r in registrations:
        given = set(_leaves(r.inputs))
        made = {leaf for k, v in r.outputs.items() if k not in r.inputs for leaf in _leaves(v)}
        if r.id:
            made.add(r.id)
        out[r.urn] = frozenset(m for m in made if len(m) >= _MIN_MADE and m not in given)
    return out


def _dependency_values(reg: Registration, key: str, made: dict[str, frozenset[str]]) -> frozenset[str]:
    deps = reg.property_dependencies.get(key) or []
    if not deps:
        return frozenset()
    return frozenset().union(*(made.get(d, frozenset()) for d in deps))


def mark_unknowns(value: Any, made: Collection[str]) -> Any:
    """``value`` with every string that is, or contains, a computed value replaced by the unknown sentinel."""
    if not made:
        return value
    if isinstance(value, str):
        return UNKNOWN_ID if value in made or any(m in value for m in made) else value
    if isinstance(value, dict):
        return {k: mark_unknowns(v, made) for k, v in value.items()}
    if isinstance(value, list):
        return [mark_unknowns(v, made) for v in value]
    return value


def stack_urn(stack: str) -> str:
    return f"urn:pulumi:{stack}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{stack}"


def stack_step(stack: str) -> dict[str, Any]:
    urn = stack_urn(stack)
    return preview_step("create", urn, newState=resource_v3(type="pulumi:pulumi:Stack", urn=urn, custom=False))


def is_default_provider(urn: str) -> bool:
    """``providers.IsDefaultProvider``: a provider URN whose name starts with ``default`` (internal steps)."""
    return "::pulumi:providers:" in urn and logical(urn).startswith("default")


def default_provider_steps(steps: list[dict[str, Any]], stack: str, region: str | None) -> list[dict[str, Any]]:
    """A step per default provider the resource steps reference (``...::pulumi:providers:<pkg>::default_<v>``).

    The engine registers them as internal steps, which ``pulumi preview --json`` does not list: the plan keeps them
    in the extension block (``defaultProviders``), where the plan diff finds a provider's op."""
    refs = sorted({p.rsplit("::", 1)[0] for s in steps if "::pulumi:providers:" in (p := s.get("provider", ""))})
    out = []
    for urn in refs:
        if not logical(urn).startswith("default"):
            continue  # an explicit provider the program registered: it has its own step
        package = urn.split("::pulumi:providers:", 1)[1].split("::", 1)[0]
        inputs: dict[str, Any] = {}
        version = _sdk_version(package)
        if version:
            inputs["version"] = version
        if package in ("aws", "aws-native") and region:
            inputs["region"] = region
        state = resource_v3(type=f"pulumi:providers:{package}", urn=urn, custom=True, inputs=inputs)
        out.append(preview_step("create", urn, newState=state))
    return out


def logical(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def sort_results(items: Iterable[dict[str, Any]], key: str | None = None) -> list[dict[str, Any]]:
    """Results or diagnostics in a fixed order (the engine's evaluation order varies from run to run)."""

    def order(r: dict[str, Any]) -> tuple[str, ...]:
        if key is not None:
            return (str(r.get(key, "")), str(r.get("urn", "")), str(r.get("severity", "")))
        return tuple(
            str(r.get(k, "")) for k in ("policyName", "resourceType", "resourceName", "resourceUrn", "message")
        )

    return sorted(items, key=order)


def policy_result_json(result: PolicyResult, urns: dict[tuple[str, str], str]) -> dict[str, Any]:
    return {
        "policyName": result.policy,
        "enforcementLevel": result.level,
        "resourceType": result.resource_type,
        "resourceName": result.resource_name,
        "resourceUrn": urns.get((result.resource_type, result.resource_name), ""),
        "message": result.message,
    }


def policy_diagnostic(result: dict[str, Any]) -> dict[str, Any]:
    """A policy result as the CLI's diagnostics list it (mandatory: error, advisory: warning)."""
    severity = "error" if result["enforcementLevel"] == "mandatory" else "warning"
    return diagnostic(severity, f"[{result['policyName']}] {result['message']}", result["resourceUrn"])


def diagnostic(severity: str, message: str, urn: str = "") -> dict[str, Any]:
    """A ``PreviewDiagnostic`` as ``ShowPreviewDigest`` writes it: the prefix inside the message, ``urn`` only
    when there is one."""
    out = {"urn": urn} if urn else {}
    return {**out, "message": f"{severity}: {message}", "severity": severity}


def summary(steps: list[dict[str, Any]], same: int = 0) -> dict[str, int]:
    """``changeSummary``: logical steps by op, ``same`` ones included (``same``: those the JSON does not list)."""
    counts = Counter(s["op"] for s in steps if not is_default_provider(s["urn"]))
    if same:
        counts["same"] += same
    return dict(sorted(counts.items()))


def _blind_secure(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return SECRET
        return {k: _blind_secure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_blind_secure(v) for v in value]
    return value


def blinded_config(mapping: dict[str, Any]) -> dict[str, str]:
    """The stack file's ``config:`` as the CLI's ``config`` key shows it: strings, every ``secure:`` value blinded.

    Only the secret leaves are blinded (``ingress.oidc.clientSecret``), so the rest of a key stays reviewable.
    """
    out: dict[str, str] = {}
    for key in sorted(mapping):
        value = _blind_secure(mapping[key])
        if isinstance(value, (dict, list)):
            out[key] = json.dumps(value, sort_keys=True)
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = str(value)
    return out


def build_plan(
    run: StackRun,
    results: list[PolicyResult],
    *,
    environment: str,
    region: str | None,
    mapping: dict[str, Any] | None = None,
    duration_ns: int = 0,
) -> dict[str, Any]:
    """The plan of one mock run (``op: create`` for every registered resource)."""
    regs = ordered(run.registrations)
    urns = {(r.type, r.name): r.urn for r in regs}
    policy = sort_results(policy_result_json(r, urns) for r in results)
    secrets = secret_values(run.registrations, (OFFLINE_SECRET_PLACEHOLDER,))
    made = mock_made(regs)
    resource_steps = [step(r, run.stack, secrets, made) for r in regs]
    steps = [stack_step(run.stack), *resource_steps]
    every_made = frozenset().union(*made.values()) if made else frozenset()
    plan: dict[str, Any] = {
        "config": blinded_config(mapping or {}),
        "steps": steps,
        "changeSummary": summary(steps),
        "diagnostics": sort_results((policy_diagnostic(p) for p in policy), key="message"),
        EXTENSION: {
            "format": PLAN_FORMAT,
            "project": PROJECT,
            "stack": run.stack,
            "environment": environment,
            "region": region,
            "defaultProviders": default_provider_steps(resource_steps, run.stack, region),
            "counts": dict(sorted(Counter(r.type for r in regs).items())),
            "outputs": {
                k: (SECRET if k in run.secret_outputs else mark_unknowns(plain(v), every_made))
                for k, v in sorted(run.outputs.items())
            },
            "policyResults": policy,
            "configErrors": [],
        },
    }
    if duration_ns:
        plan["duration"] = duration_ns
    if not plan["diagnostics"]:
        del plan["diagnostics"]
    if not plan["config"]:
        del plan["config"]
    return plan


def config_error_plan(
    stack: str, issues: Iterable[tuple[str, str, str]], *, environment: str | None = None, region: str | None = None
) -> dict[str, Any]:
    """The plan of a run that stopped on a config error: no steps, the errors in ``configErrors``.

    ``issues`` are ``(path, message, rendered text)``; a stack-file error has path ``""``.
    """
    errors = [{"path": p, "message": m, "text": t} for p, m, t in issues]
    return {
        "diagnostics": [diagnostic("error", e["text"]) for e in errors],
        EXTENSION: {
            "format": PLAN_FORMAT,
            "project": PROJECT,
            "stack": stack,
            "environment": environment,
            "region": region,
            "policyResults": [],
            "configErrors": errors,
        },
    }


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command(
        "tools.plan.writer", "python -m tools.cli.preview --stack <name> --json (the plan) or --out DIR (plan.json)"
    )
