"""Deprecated alias, kept for one release: ``python -m tools.guardduty_cleanup`` moved to ``tools.preflight.guardduty_cleanup``; run ``hpi guardduty-cleanup``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.guardduty_cleanup is deprecated and goes in the next release; run hpi guardduty-cleanup",
        file=sys.stderr,
    )
    runpy.run_module("tools.preflight.guardduty_cleanup", run_name="__main__", alter_sys=True)
