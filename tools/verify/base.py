"""What every verify check shares: the result row, the registry (``--list``), the run's context, the cluster client.

A check is a function ``(ctx) -> list[Result]`` registered with :func:`check`, which names the checklist ids of
``docs/first-deploy.md`` it settles and the API calls it reads (``--list`` prints both). An AWS call refused for
lack of an IAM permission, or a Kubernetes read refused by RBAC, becomes one FAIL row naming what to grant; any
other API error a FAIL row with the API's message. What aborts the whole run (no credentials, no cluster) is
:class:`CannotRun`, raised before the checks (``tools/verify/__main__.py``: exit 2).

Every call is a read: AWS ``Describe*``/``List*``/``Get*``/``LookupEvents``, Kubernetes ``get``/``list`` (pod logs
and a pod's ``/metrics`` through the API server's proxy are GETs too), and at most two HTTP requests through the
front door per route (one completion with ``--token``, or one without a token that must be refused).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal

from botocore.exceptions import ClientError
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from components.config import StackConfig
from tools.preflight.checks import Clients, Denied

Status = Literal["PASS", "FAIL", "WARN", "SKIP"]


@dataclass(frozen=True)
class Result:
    """One row: ``settles`` are the checklist ids this row's observation answers (a FAIL settles too: the fact
    is known now, and the fix says what to change)."""

    check: str
    status: Status
    detail: str
    fix: str = ""
    settles: tuple[str, ...] = ()


class CannotRun(Exception):
    """Verify cannot run at all (no credentials, no cluster access): exit 2 with what to configure."""


class Kube:
    """The official Kubernetes client, answers as plain JSON dicts (``_preload_content=False``), so the checks read
    the API's own field names (camelCase) and the tests' recorded responses are exactly what the API sends."""

    def __init__(self, api: k8s.ApiClient) -> None:
        self.api = api
        self.core = k8s.CoreV1Api(api)
        self.apps = k8s.AppsV1Api(api)
        self.custom = k8s.CustomObjectsApi(api)
        self.extensions = k8s.ApiextensionsV1Api(api)
        self.networking = k8s.NetworkingV1Api(api)
        self.version = k8s.VersionApi(api)

    @staticmethod
    def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fn(*args, _preload_content=False, **kwargs)

    def get(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One read; ``None`` when the object does not exist (404)."""
        try:
            return json.loads(self._call(fn, *args, **kwargs).data)
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def items(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        found = self.get(fn, *args, **kwargs)
        return list(found.get("items") or []) if found else []

    def text(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str | None:
        """A plain-text read (pod logs, ``/metrics`` through the proxy); ``None`` on 404."""
        try:
            data = self._call(fn, *args, **kwargs).data
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


@dataclass
class HttpAnswer:
    status: int | None  # None: no answer (connection refused, timeout)
    ttfb_ms: int | None
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""  # the body, read only when the caller asked for it (the AMP query)


Http = Callable[[str, str, dict[str, str], bytes | None], HttpAnswer]


@dataclass
class Context:
    """One run: the validated stack, its AWS clients and cluster, the stack outputs, what the checks observed."""

    cfg: StackConfig
    aws: Clients
    kube: Kube
    http: Http
    outputs: dict[str, Any] = field(default_factory=dict)
    token: str | None = None
    event_log: Path | None = None
    deploy_session: str | None = None
    today: date = field(default_factory=date.today)
    facts: dict[str, Any] = field(default_factory=dict)  # written to verified/<stack>.json under "facts"
    services: dict[str, dict[str, Any]] = field(default_factory=dict)  # endpoint -> ObservedService
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)  # instance group -> ObservedGroup
    addon_builds: dict[str, Any] = field(default_factory=dict)  # ObservedAddonBuilds (check prerequisite-builds)
    _cache: dict[str, Any] = field(default_factory=dict)

    def once(self, key: str, read: Callable[[], Any]) -> Any:
        """Read once per run (pods, nodes: several checks look at them)."""
        if key not in self._cache:
            self._cache[key] = read()
        return self._cache[key]

    @property
    def pods(self) -> list[dict[str, Any]]:
        return self.once("pods", lambda: self.kube.items(self.kube.core.list_pod_for_all_namespaces))

    @property
    def nodes(self) -> list[dict[str, Any]]:
        return self.once("nodes", lambda: self.kube.items(self.kube.core.list_node))

    @property
    def eks_cluster_name(self) -> str:
        """The stack output, else the adopted cluster's name, else the name the stack gives its own."""
        existing = self.cfg.cluster.existing
        adopted = existing.eks_cluster_name if existing else None
        return str(self.outputs.get("eksClusterName") or adopted or f"{self.cfg.name_prefix}-eks")

    @property
    def hyperpod_cluster_name(self) -> str:
        existing = self.cfg.cluster.existing
        arn = self.outputs.get("hyperpodClusterArn") or (existing.hyperpod_cluster_arn if existing else None)
        return str(self.outputs.get("hyperpodClusterName") or arn or f"{self.cfg.name_prefix}-hp")


CheckFn = Callable[[Context], list[Result]]


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    settles: tuple[str, ...]
    reads: tuple[str, ...]
    traffic: bool  # retried by --wait (a fresh endpoint takes a while to serve)
    run: CheckFn

    def listing(self) -> dict[str, Any]:
        return {"id": self.id, "settles": list(self.settles), "reads": list(self.reads)}


CHECKS: list[Check] = []


def _rbac(err: ApiException) -> str:
    try:
        body = json.loads(err.body or "{}")
    except ValueError:
        body = {}
    return str(body.get("message") or err.reason or err)


def check(
    check_id: str, title: str, *, settles: tuple[str, ...] = (), reads: tuple[str, ...], traffic: bool = False
) -> Callable[[CheckFn], CheckFn]:
    """Register a check; an API error inside it becomes one FAIL row for ``check_id``."""

    def wrap(fn: CheckFn) -> CheckFn:
        @functools.wraps(fn)
        def run(ctx: Context) -> list[Result]:
            try:
                return fn(ctx)
            except Denied as err:
                return [
                    Result(
                        check_id,
                        "FAIL",
                        f"access denied: the caller lacks {err.action}, so {title} could not be checked",
                        f"grant {err.action} to the credentials running verify (read-only), then rerun",
                    )
                ]
            except ClientError as err:
                msg = err.response.get("Error", {}).get("Message", str(err))
                return [Result(check_id, "FAIL", f"AWS error: {msg}", "fix the cause AWS names, then rerun")]
            except ApiException as err:
                if err.status in (401, 403):
                    return [
                        Result(
                            check_id,
                            "FAIL",
                            f"the cluster refused a read ({err.status}): {_rbac(err)}",
                            "give the verifying principal read access (an EKS access entry with "
                            "AmazonEKSViewPolicy cluster-wide, plus get on pods/log and pods/proxy), then rerun",
                        )
                    ]
                return [Result(check_id, "FAIL", f"Kubernetes API error {err.status}: {_rbac(err)}", "")]

        CHECKS.append(Check(check_id, title, settles, reads, traffic, run))
        return run

    return wrap


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def name_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.verify.base", "python -m tools.verify --stack <name>")
