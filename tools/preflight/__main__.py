"""Deprecated alias, kept for one release: ``python -m tools.preflight`` moved to ``tools.preflight.regional``; run ``hpi preflight``."""

if __name__ == "__main__":
    import runpy
    import sys

    print("python -m tools.preflight is deprecated and goes in the next release; run hpi preflight", file=sys.stderr)
    runpy.run_module("tools.preflight.regional", run_name="__main__", alter_sys=True)
