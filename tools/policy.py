"""Deprecated alias, kept for one release: ``python -m tools.policy`` moved to ``tools.cli.policy``; run ``hpi policy``."""

if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # also as `python tools/policy.py`
        sys.path.insert(0, root)
    print("python -m tools.policy is deprecated and goes in the next release; run hpi policy", file=sys.stderr)
    runpy.run_module("tools.cli.policy", run_name="__main__", alter_sys=True)
