"""Deprecated alias, kept for one release: ``python -m tools.replacement_rules`` moved to ``tools.generate.replacement_rules``; run ``hpi generate replacement-rules``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.replacement_rules is deprecated and goes in the next release; run hpi generate replacement-rules",
        file=sys.stderr,
    )
    runpy.run_module("tools.generate.replacement_rules", run_name="__main__", alter_sys=True)
