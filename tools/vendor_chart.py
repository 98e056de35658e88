"""Deprecated alias, kept for one release: ``python -m tools.vendor_chart`` moved to ``tools.fetch.chart``; run ``hpi fetch chart``."""

if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # also as `python tools/vendor_chart.py`
        sys.path.insert(0, root)
    print(
        "python -m tools.vendor_chart is deprecated and goes in the next release; run hpi fetch chart", file=sys.stderr
    )
    runpy.run_module("tools.fetch.chart", run_name="__main__", alter_sys=True)
