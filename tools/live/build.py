"""Build and cache the real binaries the live test suites run: ``python -m tools.live.build [COMPONENT ...]``.

Each component is built from published Go modules with the ordinary ``go`` client (the Go module proxy, no git
clone) through a wrapper main module of its own, kept in ``tools/live/modules/<component>/`` (``go.mod`` and
``go.sum``: the pins, reviewed like any lock file). A wrapper module is needed because ``go install module@version``
refuses a module whose ``go.mod`` has ``replace`` lines (``k8s.io/kubernetes`` replaces every ``k8s.io/*`` staging
module with ``./staging/...``; ``go.etcd.io/etcd/server/v3`` and ``pulumi/pkg/v3`` replace their siblings), and a
main module of our own may ``replace`` them with their published versions, as out-of-tree builds do.

The binaries live OUTSIDE the clone, so a fresh clone (CI) on the same machine finds them warm::

    ${HPI_LIVE_CACHE:-~/.cache/hyperpod-inference/live}/<component>-<version>/bin/<binary>
    ${HPI_LIVE_CACHE:-~/.cache/hyperpod-inference/live}/<component>-<version>/build.log

A cached binary is reused when its ``stamp`` matches the wrapper module (go.mod + go.sum digest); otherwise it is
rebuilt. Go's own module and build caches (``go env GOMODCACHE GOCACHE``) are reused, so a rebuild after a cache
wipe of this folder is a link step. A binary is written to a temporary name and renamed into place: a build that
fails or is killed never leaves a half-written binary. Builds run under ``nice -n 10`` with ``go build -p 2`` (the
machine is shared).

Exit status: 0 when every requested component is built (or cached), 1 when one failed (its log path is printed;
the live suites then skip naming that log), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

MODULES = Path(__file__).resolve().parent / "modules"


@dataclass(frozen=True)
class Component:
    """One binary: the wrapper module that pins it, the package path of its ``main``, and what it stands in for."""

    name: str
    version: str
    package: str
    binary: str
    why: str
    ldflags: str = ""

    @property
    def module_dir(self) -> Path:
        return MODULES / self.name


# The Kubernetes minor the stacks move to (1.35) and the etcd its go.mod requires (k8s.io/kubernetes v1.35.4 go.mod:
# go.etcd.io/etcd/server/v3 v3.6.5). The Pulumi CLI: the SDK pin is pulumi==3.272.0, but the module proxy serves
# github.com/pulumi/pulumi/pkg/v3 only from v3.274.0 on (v3.272.0 and v3.273.0 answer 403), so the nearest served
# release is built; a CLI newer than the SDK is the supported direction. The Kubernetes provider: the proxy serves
# github.com/pulumi/pulumi-kubernetes/provider/v4 at one pseudo-version only (2026-01-15, commit f47bc2d6f199); the
# SDK pin pulumi-kubernetes==4.34.2 has no served provider module (v4.34.2 answers 403). docs/live-tests.md says so.
COMPONENTS: dict[str, Component] = {
    c.name: c
    for c in (
        Component("etcd", "v3.6.5", "go.etcd.io/etcd/server/v3", "etcd", "the API server's storage"),
        Component(
            "kube-apiserver", "v1.35.4", "k8s.io/kubernetes/cmd/kube-apiserver", "kube-apiserver", "the API server"
        ),
        Component(
            "pulumi",
            "v3.274.0",
            "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
            "pulumi",
            "the Pulumi engine",
            # what the release build stamps in (`pulumi version`; the Automation API reads it)
            ldflags="-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v3.274.0",
        ),
        Component(
            "pulumi-resource-kubernetes",
            "v4.0.0-20260115033456-f47bc2d6f199",
            "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes",
            "pulumi-resource-kubernetes",
            "the Kubernetes provider plugin",
        ),
    )
}
APISERVER = ("etcd", "kube-apiserver")
ENGINE = ("pulumi", "pulumi-resource-kubernetes")


def cache_root() -> Path:
    """Where the binaries live: ``$HPI_LIVE_CACHE`` or ``~/.cache/hyperpod-inference/live`` (never in the clone)."""
    env = os.environ.get("HPI_LIVE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "hyperpod-inference" / "live"


def component_dir(component: Component) -> Path:
    return cache_root() / f"{component.name}-{component.version}"


def binary_path(component: Component) -> Path:
    return component_dir(component) / "bin" / component.binary


def log_path(component: Component) -> Path:
    return component_dir(component) / "build.log"


def module_digest(component: Component) -> str:
    """The digest of the wrapper module's pins (go.mod, go.sum, the import file): a changed pin rebuilds."""
    h = hashlib.sha256()
    for name in ("go.mod", "go.sum", "tools.go"):
        path = component.module_dir / name
        h.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
    h.update(component.ldflags.encode())
    return h.hexdigest()


def cached(component: Component) -> bool:
    """True when the binary is in the cache and was built from the current wrapper module."""
    stamp = component_dir(component) / "stamp"
    return (
        binary_path(component).is_file() and stamp.is_file() and stamp.read_text().strip() == module_digest(component)
    )


def status(names: tuple[str, ...]) -> tuple[dict[str, Path], list[str]]:
    """(binaries that are cached, a reason per component that is not, naming its build log)."""
    found: dict[str, Path] = {}
    missing: list[str] = []
    for name in names:
        component = COMPONENTS[name]
        if cached(component):
            found[name] = binary_path(component)
        elif log_path(component).is_file():
            missing.append(f"{name} {component.version} did not build: see {log_path(component)}")
        else:
            missing.append(
                f"{name} {component.version} is not built (run `python -m tools.live.build {name}`; "
                f"log: {log_path(component)})"
            )
    return found, missing


def _run(cmd: list[str], cwd: Path, log: IO[str], env: dict[str, str]) -> int:
    """Run one step in its own process group, so that a timeout (``.ci/run``) ends the compilers too."""
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        return proc.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.write("# interrupted: the step was stopped\n")
        raise


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def build(component: Component, *, say: Callable[[str], object] = print) -> bool:
    """Build one component into the cache (a no-op when cached); True on success. The log is written either way."""
    if cached(component):
        say(f"[live] {component.name} {component.version}: cached at {binary_path(component)}")
        return True
    go = shutil.which("go")
    target = component_dir(component)
    target.mkdir(parents=True, exist_ok=True)
    log_file = log_path(component)
    started = time.monotonic()
    say(f"[live] {component.name} {component.version}: building {component.package} (log: {log_file})")
    with log_file.open("w", encoding="utf-8") as log:
        log.write(
            f"# {component.name} {component.version}: {component.why}\n# wrapper module: {component.module_dir}\n"
        )
        if go is None:
            log.write("go: command not found (the live suites need Go 1.26; see docs/live-tests.md)\n")
            say(f"[live] {component.name}: FAILED, no `go` on PATH (log: {log_file})")
            return False
        env = dict(os.environ)
        env.setdefault("GOFLAGS", "")
        env["GOFLAGS"] = (env["GOFLAGS"] + " -mod=mod").strip()
        with tempfile.TemporaryDirectory(prefix=f"hpi-live-{component.name}-") as tmp:
            work = Path(tmp) / "module"
            shutil.copytree(component.module_dir, work)
            out = target / "bin" / f".{component.binary}.partial-{os.getpid()}"
            out.parent.mkdir(parents=True, exist_ok=True)
            steps = [
                ("download modules", [go, "mod", "download"]),
                (
                    "compile",
                    [
                        *("nice", "-n", "10", go, "build", "-p", "2", "-trimpath"),
                        *(("-ldflags", component.ldflags) if component.ldflags else ()),
                        *("-o", str(out), component.package),
                    ],
                ),
            ]
            for label, cmd in steps:
                step_started = time.monotonic()
                try:
                    code = _run(cmd, work, log, env)
                except BaseException:
                    out.unlink(missing_ok=True)
                    raise
                took = time.monotonic() - step_started
                log.write(f"# {label}: exit {code} after {took:.0f} s\n")
                say(
                    f"[live] {component.name}: {label} {'ok' if code == 0 else f'FAILED (exit {code})'} in {took:.0f} s"
                )
                if code != 0:
                    out.unlink(missing_ok=True)
                    say(f"[live] {component.name}: see {log_file}")
                    return False
            os.replace(out, binary_path(component))
        (target / "stamp").write_text(module_digest(component) + "\n", encoding="utf-8")
        total = time.monotonic() - started
        log.write(f"# built {binary_path(component)} in {total:.0f} s\n")
    say(f"[live] {component.name} {component.version}: built in {total:.0f} s -> {binary_path(component)}")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.live.build",
        description="Build and cache the binaries of the live test suites (docs/live-tests.md).",
    )
    parser.add_argument(
        "components",
        nargs="*",
        metavar="COMPONENT",
        help=f"what to build (default: all, in this order): {', '.join(COMPONENTS)}; or the groups 'apiserver', 'engine'",
    )
    parser.add_argument("--status", action="store_true", help="only say what is cached, build nothing")
    args = parser.parse_args(argv)
    names: list[str] = []
    for arg in args.components or list(COMPONENTS):
        group = {"apiserver": APISERVER, "engine": ENGINE}.get(arg)
        if group:
            names.extend(group)
        elif arg in COMPONENTS:
            names.append(arg)
        else:
            parser.error(f"unknown component {arg!r}; allowed: {', '.join([*COMPONENTS, 'apiserver', 'engine'])}")
    signal.signal(signal.SIGTERM, _terminate)  # `timeout` sends SIGTERM: stop the compilers, leave no partial file
    say = lambda text: print(text, flush=True)  # noqa: E731
    say(f"[live] cache: {cache_root()}")
    if args.status:
        found, missing = status(tuple(dict.fromkeys(names)))
        for name, path in found.items():
            say(f"[live] {name}: {path}")
        for reason in missing:
            say(f"[live] {reason}")
        return 0 if not missing else 1
    started = time.monotonic()
    ok = True
    for name in dict.fromkeys(names):
        ok = build(COMPONENTS[name], say=say) and ok
    say(f"[live] done in {time.monotonic() - started:.0f} s: {'all built' if ok else 'some FAILED (logs above)'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
