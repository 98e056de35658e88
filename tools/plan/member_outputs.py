"""Where the offline tools get a global stack's member outputs (``globalGatewayMember`` of each regional stack).

Under the Pulumi CLI the global stack reads each member with a ``StackReference`` from the backend. Offline there
is no backend, so ``tools.cli.preview``, ``tools.rehearse`` and ``tools.preflight.global_stack`` take them, per member, from
the first of:

1. ``--member-outputs FILE``: a JSON object ``{"<member stack>": <its globalGatewayMember>}``, the output of
   ``pulumi stack output globalGatewayMember --json -s <member stack>`` for each member (real values);
2. the member's stack file in this repository, ``stacks/Pulumi.<last part of the member's name>.yaml``: what that
   stack exports (:func:`components.config.global_gateway.member_export`), with a **mock** cluster ARN;
3. **mock** outputs: a JWT-protected prod gateway in the global stack's Region (``tools/plan/mocks.py``).

Every tool says which members got mock values (2 and 3), so a green offline run is never mistaken for a lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config import PROJECT, ConfigError, StackConfig
from components.config.global_gateway import MEMBER_EXPORT, GlobalStackConfig, member_export
from components.config.loader import parse_stack_mapping
from components.config.stackfile import ROOT, load_stack_file, stack_path
from tools.plan.mocks import hyperpod_cluster_arn, mock_member_export
from tools.report.cli import InputError, read_json

FLAG = "--member-outputs"


@dataclass(frozen=True)
class MemberOutputs:
    """One member's outputs as the offline run sees them, and where they came from."""

    stack: str
    export: dict[str, Any]
    source: str
    mock: bool

    def describe(self) -> str:
        return f"{self.stack}: {self.source}"


def read_member_outputs(path: Path) -> dict[str, dict[str, Any]]:
    """``--member-outputs FILE`` as ``{member stack: globalGatewayMember}``; :class:`InputError` naming the file."""
    data = read_json(path, FLAG)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputError(
            f'{path}: {FLAG} must be a JSON object {{"<member stack>": <its {MEMBER_EXPORT}>}} '
            f"(`pulumi stack output {MEMBER_EXPORT} --json -s <member stack>` for each member)"
        )
    return data


def stack_file_of(member: str) -> Path:
    """The stack file a member would have in this repository (``org/project/prod`` -> ``stacks/Pulumi.prod.yaml``)."""
    return stack_path(member.rsplit("/", 1)[-1])


def regional_config(member: str) -> StackConfig | None:
    """The validated config of a member's stack file in this repository (``None`` without a regional one)."""
    path = stack_file_of(member)
    if not path.is_file():
        return None
    regional = parse_stack_mapping(path.name[len("Pulumi.") : -len(".yaml")], load_stack_file(path))
    return regional if isinstance(regional, StackConfig) else None


def derived_export(member: str) -> dict[str, Any] | None:
    """What the member's stack file in this repository exports, with a mock cluster ARN; ``None`` without a file."""
    regional = regional_config(member)
    if regional is None:
        return None
    return {
        **member_export(regional),
        "clusterArn": hyperpod_cluster_arn(regional.region, f"{regional.name_prefix}-hp"),
    }


def resolve(cfg: GlobalStackConfig, file: Path | None = None) -> list[MemberOutputs]:
    """Each member's outputs for an offline run, from ``--member-outputs``, its stack file, or mock values."""
    given: Mapping[str, dict[str, Any]] = read_member_outputs(file) if file is not None else {}
    out: list[MemberOutputs] = []
    for ref in cfg.members:
        if ref.stack in given:
            out.append(MemberOutputs(ref.stack, given[ref.stack], f"{FLAG} {file}", mock=False))
            continue
        derived = derived_export(ref.stack)
        if derived is not None:
            source = f"derived from {stack_file_of(ref.stack).relative_to(ROOT)} (clusterArn is a mock value)"
            out.append(MemberOutputs(ref.stack, derived, source, mock=True))
            continue
        out.append(
            MemberOutputs(
                ref.stack,
                mock_member_export(ref.stack, cfg.region),
                f"mock outputs (no {FLAG} entry, no {stack_file_of(ref.stack).name} here): a JWT-protected prod "
                f"gateway in {cfg.region}",
                mock=True,
            )
        )
    return out


def for_stack(stack: str, mapping: dict[str, Any], given: Path | None) -> list[MemberOutputs] | None:
    """A global stack's member outputs for the offline run (``None`` for a regional stack, or when the config is
    invalid: the run reports that). :class:`tools.report.cli.InputError` for a bad ``--member-outputs``."""
    if mapping.get(f"{PROJECT}:role") != "global":
        if given is not None:
            raise InputError(
                f"{FLAG} {given}: only a global stack ({PROJECT}:role: global) has members; stack {stack} is regional"
            )
        return None
    try:
        cfg = parse_stack_mapping(stack, mapping)
    except ConfigError:
        return None
    return resolve(cfg, given) if isinstance(cfg, GlobalStackConfig) else None


def stack_outputs(members: list[MemberOutputs]) -> dict[str, dict[str, Any]]:
    """The StackReference outputs the mocks answer with (``tools.plan.harness.run_stack(stack_outputs=...)``)."""
    return {m.stack: {MEMBER_EXPORT: m.export} for m in members}


def notice(members: list[MemberOutputs]) -> str | None:
    """The line every tool prints when mock member outputs were used (``None`` when all came from the file)."""
    mocked = [m for m in members if m.mock]
    if not mocked:
        return None
    return (
        f"member outputs: MOCK values were used for {len(mocked)} of {len(members)} member(s) — "
        + "; ".join(m.describe() for m in mocked)
        + f". Pass {FLAG} FILE with each member's `pulumi stack output {MEMBER_EXPORT} --json` for real values."
    )


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.plan.member_outputs", f"python -m tools.cli.preview --stack <global stack> {FLAG} FILE")
