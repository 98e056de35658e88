"""Deprecated alias, kept for one release: ``python -m tools.capacity`` moved to ``tools.cli.capacity``; run ``hpi capacity``."""

if __name__ == "__main__":
    import runpy
    import sys

    print("python -m tools.capacity is deprecated and goes in the next release; run hpi capacity", file=sys.stderr)
    runpy.run_module("tools.cli.capacity", run_name="__main__", alter_sys=True)
