"""What a rehearsal found: findings, waves, critical path; as JSON and as a rich renderable."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

FindingKind = Literal[
    # create
    "deadlock",
    "race",
    "timeout",
    "crd-missing",
    "unreachable-api",
    "unschedulable",
    # destroy
    "protected",
    "deletion-protection",
    "bucket-not-empty",
    "finalizer-orphaned",
    "leak",
    "served-deleted-first",
    "unprotected-stateful",
]

EXIT_OK, EXIT_FINDINGS, EXIT_CONFIG = 0, 1, 2


@dataclass
class Finding:
    """One reason the deploy (or destroy) does not converge, naming the resource and what it waits for."""

    kind: FindingKind
    resource: str
    type: str
    waits_for: str
    why: str
    source: str = ""
    also: list[str] = field(default_factory=list)  # other resources with the same finding
    rule: str = ""  # the ordering rule a missing edge breaks (policies/readiness.yaml `ordering:`), if any
    other: str = ""  # the resource it is not ordered after (ordering findings)

    def render(self) -> str:
        more = f" (and {len(self.also)} more: {', '.join(self.also[:5])}{', ...' if len(self.also) > 5 else ''})"
        return (
            f"{self.kind.upper()} {self.type}::{self.resource}: waits for {self.waits_for}; {self.why}"
            + (more if self.also else "")
            + (f" [{self.source}]" if self.source else "")
        )


@dataclass
class Step:
    """One resource on the critical path (minutes None = no source gives a typical time)."""

    name: str
    type: str
    start: float
    minutes: float | None
    finish: float
    timeout: float | None = None  # the create timeout in force (program's or the provider default)


@dataclass
class LongCreate:
    """A long create off the critical path. ``minutes`` None: no source gives a typical time, but its
    timeout is long (``timeout``); then ``slack`` is None too."""

    name: str
    type: str
    minutes: float | None
    finish: float
    slack: float | None
    timeout: float | None = None


@dataclass
class Rehearsal:
    """The outcome of one rehearsal (create, or destroy with ``mode='destroy'``)."""

    stack: str
    environment: str
    mode: Literal["create", "destroy"]
    resources: int
    findings: list[Finding] = field(default_factory=list)
    waves: list[list[str]] = field(default_factory=list)
    critical_path: list[Step] = field(default_factory=list)
    total_minutes: float = 0.0
    unknown_on_path: int = 0
    off_path_long: list[LongCreate] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def converges(self) -> bool:
        return not self.findings

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.converges else EXIT_FINDINGS

    def kinds(self) -> set[str]:
        return {f.kind for f in self.findings}

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "environment": self.environment,
            "mode": self.mode,
            "resources": self.resources,
            "converges": self.converges,
            "findings": [asdict(f) for f in self.findings],
            "waves": self.waves,
            "criticalPath": {
                "totalMinutes": self.total_minutes,
                "unknownDurations": self.unknown_on_path,
                "steps": [asdict(s) for s in self.critical_path],
            },
            "offPathLongCreates": [asdict(x) for x in self.off_path_long],
            "blocked": self.blocked,
            "protected": self.protected,
            "notes": self.notes,
        }

    # --- rich ---------------------------------------------------------------------------------------

    def brief(self) -> Group:
        """The verdict and the findings only (the human ``--diff`` of ``tools.cli.preview`` prints this)."""
        return Group(*self._verdict())

    def _verdict(self) -> Iterator[Any]:
        verb = "deploy" if self.mode == "create" else "destroy"
        if self.converges:
            yield Text(f"rehearsal ({verb}) of {self.stack}: converges ({self.resources} resources)", style="green")
        else:
            yield Text(
                f"rehearsal ({verb}) of {self.stack}: {len(self.findings)} finding(s), does not converge",
                style="bold red",
            )
            for f in self.findings:
                yield Text(f"  {f.render()}", style="red")

    def _sections(self) -> Iterator[Any]:
        verb = "deploy" if self.mode == "create" else "destroy"
        yield from self._verdict()
        if self.blocked:
            yield Text(f"never created because of the findings above: {len(self.blocked)} resources", style="yellow")
        if self.critical_path:
            unknown = f", {self.unknown_on_path} step(s) of unknown duration" if self.unknown_on_path else ""
            table = Table(
                title=f"{verb} critical path: ~{self.total_minutes:.0f} min (typical times, policies/readiness.yaml{unknown})"
            )
            for col, justify in (("#", "right"), ("resource", "left"), ("type", "left")):
                table.add_column(col, justify=justify)  # type: ignore[arg-type]
            for col in ("start", "min", "finish", "timeout"):
                table.add_column(col, justify="right")
            for i, s in enumerate(self.critical_path, 1):
                mins = "unknown" if s.minutes is None else f"{s.minutes:g}"
                timeout = "" if s.timeout is None else f"{s.timeout:g}"
                table.add_row(str(i), s.name, s.type, f"{s.start:g}", mins, f"{s.finish:g}", timeout)
            yield table
        if self.off_path_long:
            yield Text(
                "long creates off the critical path: "
                + ", ".join(
                    f"{x.name} ({x.minutes:g} min, slack {x.slack:g})"
                    if x.minutes is not None and x.slack is not None
                    else f"{x.name} (typical time unknown, timeout {x.timeout:g} min)"
                    for x in self.off_path_long
                )
            )
        if self.waves:
            yield Text(f"{len(self.waves)} waves: " + ", ".join(str(len(w)) for w in self.waves))
        if self.protected:
            yield Text("protected (destroy stops here): " + ", ".join(self.protected), style="yellow")
        for note in self.notes:
            yield Text(f"note: {note}", style="dim")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Group(*self._sections())


class Findings:
    """Findings grouped: one per (kind, type, cause), naming the first resource and the others."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, ...], Finding] = {}
        self.failed: set[str] = set()
        self.pairs: set[tuple[str, str]] = set()  # (resource, the one it is not ordered after), reported

    def add(
        self,
        urn: str,
        reg: Any,
        kind: FindingKind,
        waits_for: str,
        why: str,
        *,
        source: str,
        rule: str = "",
        other: str = "",
    ) -> None:
        self.failed.add(urn)
        key = (kind, reg.type, waits_for, why)
        got = self.by_key.get(key)
        if got is None:
            self.by_key[key] = Finding(kind, reg.name, reg.type, waits_for, why, source, rule=rule, other=other)
        else:
            got.also.append(reg.name)

    def all(self) -> list[Finding]:
        return list(self.by_key.values())


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.rehearse.report", "python -m tools.rehearse --stack <name>")
