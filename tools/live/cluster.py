"""A real etcd and kube-apiserver on 127.0.0.1 for the live test suites (envtest's shape, in Python).

:class:`LiveCluster` starts etcd and kube-apiserver (built by :mod:`tools.live.build`) on free loopback ports in a
temporary directory, with a CA, serving certificate and service-account key generated in-process (``cryptography``)
and a static bearer token in ``system:masters``; it writes a kubeconfig the Kubernetes provider can use. No
controller manager runs: objects are stored, validated, defaulted and pruned exactly as the API server does it,
and nothing reconciles them (no namespace finalizer, no garbage collector).

:class:`ApiClient` speaks to it over plain HTTPS (``requests``) so that the server's ``Warning`` headers (how it
reports a field it pruned) are visible, which the generated clients drop. :func:`apply` is a server-side apply
(``application/apply-patch+yaml``), dry-run or real, and :func:`ApplyResult` says what the server did: refused it
(its ``Status`` causes), pruned fields (present in what was sent, absent from what it returned, and warned about),
or defaulted ones.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

FIELD_MANAGER = "hpi-live"
START_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _write_pki(folder: Path) -> dict[str, Path]:
    """A CA, a serving certificate for 127.0.0.1/localhost and a service-account key pair (PEM files)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def pem_key(k: ec.EllipticCurvePrivateKey) -> bytes:
        return k.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    ca_key = key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hpi-live-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # keyCertSign, cRLSign
        .sign(ca_key, hashes.SHA256())
    )
    server_key = key()
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.DNSName("kubernetes.default.svc"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    sa_key = key()
    files = {
        "ca.crt": ca.public_bytes(serialization.Encoding.PEM),
        "server.crt": server.public_bytes(serialization.Encoding.PEM),
        "server.key": pem_key(server_key),
        "sa.key": pem_key(sa_key),
        "sa.pub": sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    }
    out = {}
    for name, data in files.items():
        path = folder / name
        path.write_bytes(data)
        path.chmod(0o600)
        out[name] = path
    return out


@dataclass
class LiveCluster:
    """etcd + kube-apiserver for one test session; :meth:`start` then :meth:`stop` (or use as a context manager)."""

    etcd: Path
    kube_apiserver: Path
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="hpi-live-cluster-")))
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    port: int = 0
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        return self.workdir / "pki" / "ca.crt"

    @property
    def kubeconfig_path(self) -> Path:
        return self.workdir / "kubeconfig"

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        log = self.log(name).open("wb")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(proc)
        return proc

    def start(self) -> LiveCluster:
        pki_dir = self.workdir / "pki"
        pki_dir.mkdir(parents=True, exist_ok=True)
        pki = _write_pki(pki_dir)
        tokens = self.workdir / "tokens.csv"
        tokens.write_text(f'{self.token},hpi-live-admin,hpi-live-admin,"system:masters"\n', encoding="utf-8")
        tokens.chmod(0o600)
        client, peer = free_port(), free_port()
        etcd = self._spawn(
            "etcd",
            [
                str(self.etcd),
                "--name=live",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{client}",
                f"--advertise-client-urls=http://127.0.0.1:{client}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=live=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        self._wait(lambda: _http_ok(f"http://127.0.0.1:{client}/health"), etcd, "etcd")
        self.port = free_port()
        apiserver = self._spawn(
            "kube-apiserver",
            [
                str(self.kube_apiserver),
                f"--etcd-servers=http://127.0.0.1:{client}",
                f"--etcd-prefix=/hpi-live-{self.token[:8]}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={self.workdir / 'certs'}",
                f"--tls-cert-file={pki['server.crt']}",
                f"--tls-private-key-file={pki['server.key']}",
                f"--client-ca-file={pki['ca.crt']}",
                f"--token-auth-file={tokens}",
                f"--service-account-key-file={pki['sa.pub']}",
                f"--service-account-signing-key-file={pki['sa.key']}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                "--enable-priority-and-fairness=false",
                "--profiling=false",
                "--v=1",
            ],
        )
        self._wait(self._ready, apiserver, "kube-apiserver")
        self.kubeconfig_path.write_text(yaml.safe_dump(self.kubeconfig()), encoding="utf-8")
        self.kubeconfig_path.chmod(0o600)
        return self

    def kubeconfig(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "live", "cluster": {"server": self.url, "certificate-authority": str(self.ca_file)}}],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "live", "context": {"cluster": "live", "user": "admin"}}],
            "current-context": "live",
        }

    def _ready(self) -> bool:
        with contextlib.suppress(requests.RequestException):
            r = requests.get(
                f"{self.url}/readyz",
                headers={"Authorization": f"Bearer {self.token}"},
                verify=str(self.ca_file),
                timeout=2,
            )
            return r.status_code == 200
        return False

    def _wait(self, check: Any, proc: subprocess.Popen[bytes], name: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}: {self.tail(name)}")
            if check():
                return
            time.sleep(0.3)
        raise RuntimeError(f"{name} not ready after {START_TIMEOUT:.0f} s: {self.tail(name)}")

    def tail(self, name: str, lines: int = 30) -> str:
        path = self.log(name)
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        return f"(log {path})\n" + "\n".join(text.splitlines()[-lines:])

    def client(self) -> ApiClient:
        return ApiClient(self.url, self.token, self.ca_file)

    def stop(self, *, keep: bool = False) -> None:
        for proc in reversed(self.processes):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=15)
        self.processes.clear()
        if not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LiveCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _http_ok(url: str) -> bool:
    with contextlib.suppress(requests.RequestException):
        return requests.get(url, timeout=2).status_code == 200
    return False


@dataclass(frozen=True)
class ApplyResult:
    """What the server did with one object."""

    status: int
    body: dict[str, Any]
    warnings: list[str]
    pruned: list[str]
    defaulted: list[str]

    @property
    def refused(self) -> bool:
        """Refused: an error status, or a field the server dropped (a pruned field is not "valid")."""
        return self.status >= 400 or bool(self.pruned)

    @property
    def errors(self) -> list[str]:
        if self.status < 400:
            return [f"{p}: pruned (unknown field)" for p in self.pruned]
        causes = (self.body.get("details") or {}).get("causes") or []
        return [f"{c.get('field', '')}: {c.get('message', '')}" for c in causes] or [str(self.body.get("message"))]


def leaf_paths(value: Any, prefix: str = "") -> set[str]:
    """Every path in ``value`` that holds something (empty maps and lists, and nulls, are not "sent")."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out |= leaf_paths(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out |= leaf_paths(v, f"{prefix}[{i}]")
    elif value is not None:
        out.add(prefix)
    return out


def _container_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path in ``value`` (containers included), to tell a dropped key from a changed value."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            out.add(path)
            out |= _container_paths(v, path)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            path = f"{prefix}[{i}]"
            out.add(path)
            out |= _container_paths(v, path)
    return out


def _payload(obj: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}
    meta = obj.get("metadata") or {}
    for key in ("labels", "annotations"):
        if meta.get(key):
            out[f"metadata.{key}"] = meta[key]
    return out


def compare(sent: dict[str, Any], stored: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(paths sent but absent from what the server returned: pruned; paths the server added: defaulted)."""
    sent_payload, stored_payload = _payload(sent), _payload(stored)
    if sent.get("kind") == "Secret":  # stringData is write-only: the server folds it into data
        sent_payload.pop("stringData", None)
        stored_payload.pop("data", None)
    stored_keys = _container_paths(stored_payload)
    pruned = sorted({_topmost_missing(p, stored_keys) for p in leaf_paths(sent_payload) if p not in stored_keys})
    sent_keys = _container_paths(sent_payload)
    defaulted = sorted(p for p in leaf_paths(stored_payload) if p not in sent_keys)
    return _collapse(pruned), _collapse(defaulted)


def _topmost_missing(path: str, present: set[str]) -> str:
    """The shortest prefix of ``path`` (at a ``.`` or ``[``) absent from ``present``: the key the server dropped."""
    cuts = [i for i, ch in enumerate(path) if ch in ".["] + [len(path)]
    return next(path[:i] for i in cuts if path[:i] not in present)


def _collapse(paths: list[str]) -> list[str]:
    """Keep the shortest path of each dropped subtree (``spec.inferenceGateway``, not each of its leaves)."""
    out: list[str] = []
    for p in paths:
        if not any(p.startswith(q + ".") or p.startswith(q + "[") for q in out):
            out.append(p)
    return out


class ApiClient:
    """A thin HTTPS client of the live API server: discovery, server-side apply, get, delete."""

    def __init__(self, url: str, token: str, ca_file: Path) -> None:
        self.url = url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.ca_file = str(ca_file)
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        # verify per request: a session's own setting loses to REQUESTS_CA_BUNDLE in the environment
        return self.session.request(method, self.url + path, timeout=60, verify=self.ca_file, **kwargs)

    def resources(self, api_version: str, *, refresh: bool = False) -> dict[str, tuple[str, bool]]:
        """kind -> (plural, namespaced) for one group/version (discovery, cached)."""
        if refresh or api_version not in self._resources:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            r = self.request("GET", base)
            found: dict[str, tuple[str, bool]] = {}
            if r.status_code == 200:
                for res in r.json().get("resources", []):
                    if "/" not in res["name"]:
                        found[res["kind"]] = (res["name"], bool(res["namespaced"]))
            self._resources[api_version] = found
        return self._resources[api_version]

    def path(self, obj: dict[str, Any]) -> str:
        api_version, kind = obj["apiVersion"], obj["kind"]
        kinds = self.resources(api_version)
        if kind not in kinds:
            kinds = self.resources(api_version, refresh=True)
        if kind not in kinds:
            raise LookupError(f"the server serves no {kind} in {api_version}")
        plural, namespaced = kinds[kind]
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        meta = obj.get("metadata") or {}
        ns = f"/namespaces/{meta.get('namespace') or 'default'}" if namespaced else ""
        return f"{base}{ns}/{plural}/{meta['name']}"

    def apply(self, obj: dict[str, Any], *, dry_run: bool, field_validation: str = "Warn") -> ApplyResult:
        """Server-side apply ``obj`` (``dry_run``: ``dryRun=All``, nothing is stored)."""
        params = {"fieldManager": FIELD_MANAGER, "force": "true", "fieldValidation": field_validation}
        if dry_run:
            params["dryRun"] = "All"
        r = self.request(
            "PATCH",
            self.path(obj),
            params=params,
            data=json.dumps(obj),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
        body = r.json() if r.content else {}
        warnings = [w for w in r.headers.get("Warning", "").split(", 299") if w]
        if r.status_code >= 400:
            return ApplyResult(r.status_code, body, warnings, [], [])
        pruned, defaulted = compare(obj, body)
        return ApplyResult(r.status_code, body, warnings, pruned, defaulted)

    def create(self, obj: dict[str, Any], *, dry_run: bool, field_validation: str = "Warn") -> ApplyResult:
        """A plain create (``POST``, what ``kubectl create`` and client-side apply send): unknown fields are pruned
        (``Warn``: with a warning header; ``Strict``: refused), where a server-side apply refuses them."""
        params = {"fieldManager": FIELD_MANAGER, "fieldValidation": field_validation}
        if dry_run:
            params["dryRun"] = "All"
        collection = self.path(obj).rsplit("/", 1)[0]
        r = self.request("POST", collection, params=params, json=obj)
        body = r.json() if r.content else {}
        warnings = [w for w in r.headers.get("Warning", "").split(", 299") if w]
        if r.status_code >= 400:
            return ApplyResult(r.status_code, body, warnings, [], [])
        pruned, defaulted = compare(obj, body)
        return ApplyResult(r.status_code, body, warnings, pruned, defaulted)

    def get(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        r = self.request("GET", self.path(obj))
        return r.json() if r.status_code == 200 else None

    def delete(self, obj: dict[str, Any]) -> int:
        return self.request("DELETE", self.path(obj)).status_code

    def wait_established(self, crd_name: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}")
            if r.status_code == 200:
                status = r.json().get("status") or {}
                conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
                if conditions.get("Established") == "True":
                    return
            time.sleep(0.2)
        raise TimeoutError(f"CRD {crd_name} not Established after {timeout:.0f} s")

    def wait_gone(self, obj: dict[str, Any], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.request("GET", self.path(obj)).status_code == 404:
                return
            time.sleep(0.2)
        raise TimeoutError(f"{obj['kind']} {obj['metadata']['name']} still there after {timeout:.0f} s")


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.live.cluster", "python -m tools.live.build, then pytest -n 0 -m live_apiserver tests/live")
