"""Deprecated alias, kept for one release: ``python -m tools.ci_matrix`` moved to ``tools.generate.ci_matrix``; run ``hpi generate ci-matrix``."""

if __name__ == "__main__":
    import runpy
    import sys

    print(
        "python -m tools.ci_matrix is deprecated and goes in the next release; run hpi generate ci-matrix",
        file=sys.stderr,
    )
    runpy.run_module("tools.generate.ci_matrix", run_name="__main__", alter_sys=True)
