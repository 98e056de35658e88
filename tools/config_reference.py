"""Deprecated alias, kept for one release: ``python -m tools.config_reference`` moved to ``tools.generate.config_reference``; run ``hpi generate config-reference``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.config_reference is deprecated and goes in the next release; run hpi generate config-reference",
        file=sys.stderr,
    )
    runpy.run_module("tools.generate.config_reference", run_name="__main__", alter_sys=True)
