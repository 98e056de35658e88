"""Deprecated alias, kept for one release: ``python -m tools.rehearse.bench`` moved to ``tools.cli.bench``; run ``python -m tools.cli.bench``."""

if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:  # also as `python tools/rehearse/bench.py`
        sys.path.insert(0, root)
    print(
        "python -m tools.rehearse.bench is deprecated and goes in the next release; run python -m tools.cli.bench",
        file=sys.stderr,
    )
    runpy.run_module("tools.cli.bench", run_name="__main__", alter_sys=True)
