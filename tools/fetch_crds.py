"""Deprecated alias, kept for one release: ``python -m tools.fetch_crds`` moved to ``tools.fetch.crds``; run ``hpi fetch crds``."""

if __name__ == "__main__":
    import runpy
    import sys

    print("python -m tools.fetch_crds is deprecated and goes in the next release; run hpi fetch crds", file=sys.stderr)
    runpy.run_module("tools.fetch.crds", run_name="__main__", alter_sys=True)
