"""Deprecated alias, kept for one release: ``python -m tools.policy`` moved to ``tools.cli.policy``; run ``hpi policy``."""

if __name__ == "__main__":
    import runpy
    import sys

    print("python -m tools.policy is deprecated and goes in the next release; run hpi policy", file=sys.stderr)
    runpy.run_module("tools.cli.policy", run_name="__main__", alter_sys=True)
