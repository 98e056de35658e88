"""Deprecated alias, kept for one release: ``python -m tools.capacity`` moved to ``tools.cli.capacity``; run ``hpi capacity``."""

if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # also as `python tools/capacity.py`
        sys.path.insert(0, root)
    print("python -m tools.capacity is deprecated and goes in the next release; run hpi capacity", file=sys.stderr)
    runpy.run_module("tools.cli.capacity", run_name="__main__", alter_sys=True)
