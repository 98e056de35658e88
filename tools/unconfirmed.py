"""Deprecated alias, kept for one release: ``python -m tools.unconfirmed`` moved to ``tools.generate.unconfirmed``; run ``hpi unconfirmed``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.unconfirmed is deprecated and goes in the next release; run hpi unconfirmed", file=sys.stderr
    )
    runpy.run_module("tools.generate.unconfirmed", run_name="__main__", alter_sys=True)
