"""Deprecated alias, kept for one release: ``python -m tools.crd_models`` moved to ``tools.generate.crd_models``; run ``hpi generate crd-models``."""

if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # also as `python tools/crd_models.py`
        sys.path.insert(0, root)
    print(
        "python -m tools.crd_models is deprecated and goes in the next release; run hpi generate crd-models",
        file=sys.stderr,
    )
    runpy.run_module("tools.generate.crd_models", run_name="__main__", alter_sys=True)
