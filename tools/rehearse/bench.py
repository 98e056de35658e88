"""Deprecated alias, kept for one release: ``python -m tools.rehearse.bench`` moved to ``tools.cli.bench``; run ``python -m tools.cli.bench``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.rehearse.bench is deprecated and goes in the next release; run python -m tools.cli.bench",
        file=sys.stderr,
    )
    runpy.run_module("tools.cli.bench", run_name="__main__", alter_sys=True)
