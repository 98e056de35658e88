"""Deprecated alias, kept for one release: ``python -m tools.preview`` moved to ``tools.cli.preview``; run ``hpi preview``."""

if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # also as `python tools/preview.py`
        sys.path.insert(0, root)
    print("python -m tools.preview is deprecated and goes in the next release; run hpi preview", file=sys.stderr)
    runpy.run_module("tools.cli.preview", run_name="__main__", alter_sys=True)
