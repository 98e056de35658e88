"""Deprecated alias, kept for one release: ``python -m tools.vendor_chart`` moved to ``tools.fetch.chart``; run ``hpi fetch chart``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.vendor_chart is deprecated and goes in the next release; run hpi fetch chart", file=sys.stderr
    )
    runpy.run_module("tools.fetch.chart", run_name="__main__", alter_sys=True)
