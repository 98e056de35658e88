"""Deprecated alias, kept for one release: ``python -m tools.deployer_policy`` moved to ``tools.cli.deployer_policy``; run ``hpi deployer-policy``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.deployer_policy is deprecated and goes in the next release; run hpi deployer-policy",
        file=sys.stderr,
    )
    runpy.run_module("tools.cli.deployer_policy", run_name="__main__", alter_sys=True)
