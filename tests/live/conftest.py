"""Fixtures of the live suites (docs/live-tests.md): a real etcd + kube-apiserver for the session.

The binaries come from the cache :mod:`tools.live.build` fills (outside the clone). A suite SKIPS only when a
binary could not be built, and the skip names the build log; a server that does not start, or any verdict that
differs, FAILS.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tools.live import build
from tools.live.cluster import ApiClient, LiveCluster


def binaries_or_skip(names: tuple[str, ...]) -> dict[str, Any]:
    found, missing = build.status(names)
    if missing:
        pytest.skip("live binaries missing: " + "; ".join(missing))
    return found


@pytest.fixture(scope="session")
def live_cluster() -> Iterator[LiveCluster]:
    found = binaries_or_skip(build.APISERVER)
    cluster = LiveCluster(found["etcd"], found["kube-apiserver"])
    try:
        cluster.start()
    except Exception:
        cluster.stop(keep=True)
        raise
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def api(live_cluster: LiveCluster) -> ApiClient:
    return live_cluster.client()
