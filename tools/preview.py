"""Deprecated alias, kept for one release: ``python -m tools.preview`` moved to ``tools.cli.preview``; run ``hpi preview``."""

if __name__ == "__main__":
    import runpy
    import sys

    print("python -m tools.preview is deprecated and goes in the next release; run hpi preview", file=sys.stderr)
    runpy.run_module("tools.cli.preview", run_name="__main__", alter_sys=True)
