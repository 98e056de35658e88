"""The policy pack starts the way the Pulumi CLI starts a Python pack.

The CLI's Python analyzer runs ``python -m pulumi.policy <engine-address> <pack-dir>`` (see
``pulumi/policy/__main__.py`` in the pulumi SDK: ``argparse`` takes ``engineAddress`` and ``program``, then
``runpy.run_path(program)``); the ``PolicyPack`` constructor prints its gRPC port on stdout and serves until
killed. Launching exactly that proves ``policies/__main__.py`` imports (sibling modules, rule functions,
compatibility table) and builds a valid pack, so a broken import cannot hide until someone runs it for real.
"""

from __future__ import annotations

import runpy
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pack_announces_its_port_when_launched_like_the_cli() -> None:
    proc = subprocess.Popen(
        # from the pack's folder: the project's packages come from its installation, not from the working directory
        [sys.executable, "-m", "pulumi.policy", "127.0.0.1:1", str(ROOT / "policies")],
        cwd=ROOT / "policies",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first_line: list[str] = []
    reader = threading.Thread(target=lambda: first_line.append(proc.stdout.readline() if proc.stdout else ""))
    reader.start()
    reader.join(timeout=60)
    try:
        alive = proc.poll() is None
    finally:
        proc.kill()
        _, stderr = proc.communicate(timeout=30)
    assert first_line and first_line[0].strip(), f"the pack printed no port; stderr:\n{stderr}"
    port = int(first_line[0].strip())
    assert 0 < port < 65536
    assert alive, f"the pack exited instead of serving; stderr:\n{stderr}"


def test_pack_entry_point_packs_exactly_the_importable_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``policies/__main__.py`` as the CLI does (``runpy.run_path`` of the folder), with the gRPC-serving
    ``PolicyPack`` replaced by a recorder: it must pack exactly ``policies.pack.POLICIES`` (the list the tests
    and the offline preview judge with) under the pack's name, and define no policy of its own."""
    import pulumi_policy

    from policies.pack import PACK_NAME, POLICIES

    packed: list[dict[str, Any]] = []
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda **kwargs: packed.append(kwargs))
    namespace = runpy.run_path(str(ROOT / "policies"), run_name="__main__")
    assert len(packed) == 1, "policies/__main__.py must build exactly one PolicyPack"
    assert packed[0]["name"] == "hyperpod-inference" == PACK_NAME
    assert packed[0]["policies"] is POLICIES
    assert len({p.name for p in POLICIES}) == len(POLICIES) >= 20
    own = [v for v in namespace.values() if isinstance(v, pulumi_policy.Policy)]
    assert own == [], f"policies defined in __main__.py instead of an importable module: {own}"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith(("-r", "-e")):
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not pinned exactly"
            pins[name.lower()] = version
    return pins


def test_policy_pack_pins_match_the_program() -> None:
    """The pack's requirements.txt (read by the CLI) must not drift from the program's pins."""
    root = Path(__file__).resolve().parents[1]
    program, pack = _pins(root / "requirements.txt"), _pins(root / "policies" / "requirements.txt")
    assert pack, "policies/requirements.txt pins nothing"
    assert {name: program.get(name) for name in pack} == pack
