"""Deprecated alias, kept for one release: ``python -m tools.preflight_global`` moved to ``tools.preflight.global_stack``; run ``hpi preflight-global``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.preflight_global is deprecated and goes in the next release; run hpi preflight-global",
        file=sys.stderr,
    )
    runpy.run_module("tools.preflight.global_stack", run_name="__main__", alter_sys=True)
