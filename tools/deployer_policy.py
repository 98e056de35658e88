"""Deprecated alias, kept for one release: ``python -m tools.deployer_policy`` moved to ``tools.cli.deployer_policy``; run ``hpi deployer-policy``."""

if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # also as `python tools/deployer_policy.py`
        sys.path.insert(0, root)
    print(
        "python -m tools.deployer_policy is deprecated and goes in the next release; run hpi deployer-policy",
        file=sys.stderr,
    )
    runpy.run_module("tools.cli.deployer_policy", run_name="__main__", alter_sys=True)
