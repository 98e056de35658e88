"""Replay the hand-made mutations that once survived the suite, and show that a test now kills each one.

    python -m tests.hand_mutations            # all of them
    python -m tests.hand_mutations alb-order  # one, by id

Each mutation is a realistic bug written as an exact text replacement in one source file. The tool copies
the tracked files into a temporary directory, applies one mutation there, runs the tests named for it and
expects them to FAIL (the mutant is killed). It never edits the working tree. Exit 0 when every mutant is
killed, 1 otherwise; a replacement whose text is no longer in the file is reported as stale (exit 1), so the
list cannot silently rot when the code changes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    id: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "alb-order",
        "policies/baselines.py",
        'key=lambda ia: (get(ia[1], "order", default=1e9), ia[0])',
        "key=lambda ia: ia[0]",
        ("tests/test_policies.py::test_alb_requires_authentication_follows_the_order_field_not_list_order",),
        "alb-requires-authentication trusts list order instead of the actions' order field",
    ),
    Mutation(
        "kv-cache-other-engine",
        "policies/rules.py",
        'if engine != "vllm" and _kv_cache_on(spec, ctx.addon_version):',
        'if engine == "sglang" and _kv_cache_on(spec, ctx.addon_version):',
        ("tests/test_rules.py::test_kv_cache_requires_vllm_every_engine",),
        "kv-cache-requires-vllm only catches sglang, not an `other` engine",
    ),
    Mutation(
        "router-metrics-and",
        "policies/rules.py",
        "if not _routing(spec)[0] and not _kv_cache_on(spec):",
        "if not _routing(spec)[0] or not _kv_cache_on(spec):",
        ("tests/test_rules.py::test_router_metrics_port_every_branch",),
        "the router-metrics port rule only judged when routing AND the KV cache are on",
    ),
    Mutation(
        "empty-instance-types",
        "policies/rules.py",
        "    if ctx.instance_types is None:\n        return []\n    have =",
        "    if not ctx.instance_types:\n        return []\n    have =",
        ("tests/test_rules.py::test_empty_instance_type_set_is_not_unknown",),
        "an empty set of instance groups treated like unknown groups",
    ),
    Mutation(
        "subnet-overlap",
        "components/config/network.py",
        "if len(blocks) < len(azs) + 1:",
        "if len(blocks) < len(azs):",
        ("tests/test_subnet_plan.py",),
        "plan_subnets lets the public block be the last private subnet",
    ),
)


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for name in files:
        src = ROOT / name
        if src.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def run(mutation: Mutation) -> str:
    """``killed``, ``survived`` or ``stale`` for one mutation."""
    with tempfile.TemporaryDirectory(prefix="hand-mutation-") as tmp:
        # the copy sits beside ../shared so tests that read the operator's CRDs find them as usual
        work = Path(tmp) / "repo"
        _copy_tree(work)
        shared = ROOT.parent / "shared"
        if shared.is_dir():
            (Path(tmp) / "shared").symlink_to(shared)
        vendored = ROOT / "vendor" / "crds"  # python -m tools.fetch_crds (gitignored, so not copied)
        if vendored.is_dir():
            (work / "vendor").mkdir(exist_ok=True)
            (work / "vendor" / "crds").symlink_to(vendored)
        path = work / mutation.file
        text = path.read_text(encoding="utf-8")
        if text.count(mutation.old) != 1:
            return "stale"
        path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *mutation.tests],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
        return "killed" if result.returncode == 1 else "survived"


def main(argv: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not argv or m.id in argv]
    failed = 0
    for mutation in chosen:
        outcome = run(mutation)
        failed += outcome != "killed"
        print(f"{outcome:9} {mutation.id}: {mutation.why} ({', '.join(mutation.tests)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
