"""Deprecated alias, kept for one release: ``python -m tools.crd_models`` moved to ``tools.generate.crd_models``; run ``hpi generate crd-models``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.crd_models is deprecated and goes in the next release; run hpi generate crd-models",
        file=sys.stderr,
    )
    runpy.run_module("tools.generate.crd_models", run_name="__main__", alter_sys=True)
