"""Deprecated alias, kept for one release: ``python -m tools.preflight`` moved to ``tools.preflight.regional``; run ``hpi preflight``."""

if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:  # also as `python tools/preflight/__main__.py`
        sys.path.insert(0, root)
    print("python -m tools.preflight is deprecated and goes in the next release; run hpi preflight", file=sys.stderr)
    runpy.run_module("tools.preflight.regional", run_name="__main__", alter_sys=True)
