"""mypy's scope stays complete: every Pulumi SDK service the code calls is type-checked, not skipped.

``pyproject.toml`` skips the generated SDKs' modules (``follow_imports = "skip"`` makes them ``Any``) except
the SDK roots and the services the program uses, which is what makes an uncached mypy run take seconds
instead of minutes. A module skipped that way would silently accept a misspelt argument, so this test reads
every ``aws.<service>``, ``aws_native.<service>`` and ``k8s.<group>.<version>`` the code touches and fails
when one of them is not listed as followed.
"""

from __future__ import annotations

import ast
import fnmatch
import tomllib
from pathlib import Path

import pulumi_aws

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_SDKS = ("pulumi_aws", "pulumi_aws_native", "pulumi_kubernetes")
SITE = Path(pulumi_aws.__file__).resolve().parents[1]


def _overrides() -> tuple[list[str], list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]["overrides"]
    skipped = [m for o in config if o.get("follow_imports") == "skip" for m in o["module"]]
    followed = [m for o in config if o.get("follow_imports") == "normal" for m in o["module"]]
    return skipped, followed


def _matches(module: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        return module == pattern[:-2] or module.startswith(pattern[:-1])
    return fnmatch.fnmatchcase(module, pattern)


def _module_of(dotted: list[str]) -> str:
    """The deepest SDK module a dotted attribute chain names (``pulumi_aws.lb.TargetGroup`` → ``pulumi_aws.lb``)."""
    found = dotted[0]
    for i in range(2, len(dotted) + 1):
        candidate = SITE.joinpath(*dotted[:i])
        if candidate.is_dir() or candidate.with_suffix(".py").is_file():
            found = ".".join(dotted[:i])
        else:
            break
    return found


def _sdk_modules_used() -> dict[str, str]:
    """SDK module → first place it is used, over components/, tools/, policies/ and __main__.py."""
    used: dict[str, str] = {}
    files = [ROOT / "__main__.py", *(p for d in ("components", "tools", "policies") for p in (ROOT / d).rglob("*.py"))]
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, list[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in SKIPPED_SDKS:
                        aliases[a.asname or a.name] = a.name.split(".")
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in SKIPPED_SDKS:
                for a in node.names:
                    aliases[a.asname or a.name] = [*node.module.split("."), a.name]
                    used.setdefault(_module_of([*node.module.split("."), a.name]), f"{path.name}:{node.lineno}")
        for node in ast.walk(tree):
            chain: list[str] = []
            cursor: ast.expr = node  # type: ignore[assignment]
            while isinstance(cursor, ast.Attribute):
                chain.insert(0, cursor.attr)
                cursor = cursor.value
            if isinstance(cursor, ast.Name) and cursor.id in aliases and chain:
                module = _module_of([*aliases[cursor.id], *chain])
                used.setdefault(module, f"{path.relative_to(ROOT)}:{node.lineno}")  # type: ignore[attr-defined]
    return used


def test_every_sdk_service_the_code_calls_is_type_checked() -> None:
    skipped, followed = _overrides()
    assert set(skipped) == {f"{sdk}.*" for sdk in SKIPPED_SDKS} | {"moto", "moto.*"}
    used = _sdk_modules_used()
    assert "pulumi_aws.lb" in used and "pulumi_aws_native.sagemaker" in used and "pulumi_kubernetes.helm.v3" in used
    unchecked = {m: where for m, where in used.items() if not any(_matches(m, p) for p in followed)}
    assert not unchecked, (
        "these SDK modules are used but skipped by mypy (add them to the follow_imports = normal override "
        f"in pyproject.toml): {unchecked}"
    )


def test_moto_is_skipped_only_because_no_program_code_uses_it() -> None:
    """mypy skips moto (pyproject.toml): that is only harmless while nothing but the offline data generator uses it."""
    users = sorted(
        str(p.relative_to(ROOT))
        for d in ("components", "tools", "policies")
        for p in (ROOT / d).rglob("*.py")
        if any(
            isinstance(n, ast.Import | ast.ImportFrom)
            and any(
                name.split(".")[0] == "moto"
                for name in ([a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""])
            )
            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        )
    )
    assert users == ["components/config/data/generate_instance_types.py"]
