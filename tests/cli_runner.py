"""Run ``python -m <module> ARGS`` inside the test process, with what a subprocess would report.

Starting Python for each command-line test costs about a second (the interpreter, then importing Pulumi, the
three provider SDKs and pydantic); the suite has ~60 such tests. ``run_module`` executes the module as
``__main__`` with :func:`runpy.run_module`, exactly the code path of ``python -m``, in the already-warm test
process, and returns a :class:`subprocess.CompletedProcess` with the exit status, stdout and stderr. An exception
that escapes the module is rendered as the interpreter would (a ``Traceback`` on stderr, exit 1), so the "no
traceback" assertions still fail on one.

What needs a real process stays a real process: output determinism across hash seeds
(``tests/test_plan.py::test_two_runs_print_identical_bytes``), the policy pack's gRPC server, and one smoke test
per entry point in ``tests/test_entry_points.py`` (``test_real_process_*``).
"""

from __future__ import annotations

import contextlib
import io
import runpy
import subprocess
import sys
import traceback
import warnings

from tools.plan.harness import ROOT


def _exit_status(exc: SystemExit, stderr: io.StringIO) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)  # sys.exit("message") prints the message and exits 1
    return 1


def run_module(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m module *args`` in this process, from the repository root (as the tests' subprocesses ran):
    exit status, stdout and stderr as a subprocess gives them."""
    stdout, stderr = io.StringIO(), io.StringIO()
    saved_argv = sys.argv
    sys.argv = [module, *args]
    status = 0
    try:
        with (
            contextlib.chdir(ROOT),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
            warnings.catch_warnings(),
        ):
            # runpy's note that the module is already imported (it is: the tests import it) is not the program's
            warnings.filterwarnings("ignore", message=".*found in sys.modules.*", category=RuntimeWarning)
            try:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            except SystemExit as exc:
                status = _exit_status(exc, stderr)
            except BaseException:  # noqa: BLE001 - rendered as the interpreter renders an uncaught exception
                stderr.write(traceback.format_exc())
                status = 1
    finally:
        sys.argv = saved_argv
    return subprocess.CompletedProcess(["python", "-m", module, *args], status, stdout.getvalue(), stderr.getvalue())
