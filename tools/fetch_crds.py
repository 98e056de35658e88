"""Deprecated alias, kept for one release: ``python -m tools.fetch_crds`` moved to ``tools.fetch.crds``; run ``hpi fetch crds``."""

if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # also as `python tools/fetch_crds.py`
        sys.path.insert(0, root)
    print("python -m tools.fetch_crds is deprecated and goes in the next release; run hpi fetch crds", file=sys.stderr)
    runpy.run_module("tools.fetch.crds", run_name="__main__", alter_sys=True)
