"""The real Pulumi engine and Kubernetes provider against the live API server (``pytest -m live_engine``).

``tests/live/engine_program.py`` (prod's Kubernetes layer: namespaces, endpoints' custom resources, the Redis
credentials Secret, the viewer Role and RoleBinding, the InferenceGatewayConfig) runs twice: under the mocks, which
gives the project's own engine-shaped plan (:mod:`tools.plan.writer`, :mod:`tools.plan.diff`,
:mod:`tools.plan.state`), and as an Automation API inline program under the real CLI with a local file backend.
Preview, up, a change (one endpoint's health-check path) and destroy: the engine's URNs and ops must equal the
offline plan's at every step; a difference fails.

``pulumi.com/waitFor`` is exercised on an InferenceGatewayConfig whose status a test thread sets: ``up`` returns
only after the status is written, and times out when it never is.
"""

from __future__ import annotations

import os
import runpy
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.live.conftest import binaries_or_skip
from tools.live import build
from tools.live.cluster import ApiClient, LiveCluster
from tools.live.crds import gateway_crd, operator_crds, tgb_crd
from tools.plan.diff import diff_plans
from tools.plan.harness import run_stack
from tools.plan.state import state_plan
from tools.plan.writer import build_plan

pytestmark = pytest.mark.live_engine

PROGRAM = Path(__file__).with_name("engine_program.py")
STACK = "prod"
PROJECT = "hyperpod-inference"
REGION = "us-east-1"
PROD_ADDON = "v2.0.0-eksbuild.2"


def _program() -> None:
    runpy.run_path(str(PROGRAM), run_name="__main__")


def offline_plan(change: str = "") -> dict[str, Any]:
    mapping = {"aws:region": REGION, "live:source": STACK, **({"live:change": change} if change else {})}
    run = run_stack(STACK, mapping, main=PROGRAM)
    assert run.config_error is None, run.config_error
    return build_plan(run, [], environment="live", region=REGION, mapping=mapping)


@pytest.fixture(scope="module")
def offline_plans() -> dict[str, dict[str, Any]]:
    """The mock runs first: the mocks and the Automation API both set the SDK's process-wide settings."""
    return {"base": offline_plan(), "change": offline_plan("health-path")}


@pytest.fixture(scope="module")
def engine_cluster() -> Iterator[LiveCluster]:
    found = binaries_or_skip(build.APISERVER)
    binaries_or_skip(build.ENGINE)
    cluster = LiveCluster(found["etcd"], found["kube-apiserver"])
    try:
        cluster.start()
    except Exception:
        cluster.stop(keep=True)
        raise
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def engine_api(engine_cluster: LiveCluster, crds_dir: Path) -> ApiClient:
    from tests.live.test_live_apiserver import install_crds

    api = engine_cluster.client()
    results = install_crds(api, [*operator_crds(crds_dir, PROD_ADDON, overlays=True), tgb_crd(crds_dir), gateway_crd()])
    assert [r.errors for r in results if r.status >= 400] == []
    return api


class NamespaceFinalizer:
    """The namespace controller's last step, which no controller runs here: a Namespace being deleted whose
    content is gone gets its ``kubernetes`` finalizer removed (``PUT .../finalize``), so a destroy completes."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            r = self.api.request("GET", "/api/v1/namespaces")
            for ns in r.json().get("items", []) if r.status_code == 200 else []:
                if ns["metadata"].get("deletionTimestamp") and ns["spec"].get("finalizers"):
                    ns["spec"]["finalizers"] = []
                    self.api.request("PUT", f"/api/v1/namespaces/{ns['metadata']['name']}/finalize", json=ns)

    def __enter__(self) -> NamespaceFinalizer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def workspace(
    tmp_path_factory: pytest.TempPathFactory,
    engine_cluster: LiveCluster,
    engine_api: ApiClient,
    offline_plans: dict[str, dict[str, Any]],
) -> Iterator[Callable[..., Any]]:
    from pulumi import automation as auto

    found = binaries_or_skip(build.ENGINE)
    root = tmp_path_factory.mktemp("engine")
    (root / "state").mkdir()
    env = {
        "PULUMI_CONFIG_PASSPHRASE": "hpi-live",
        "PULUMI_HOME": str(root / "home"),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PATH": f"{found['pulumi-resource-kubernetes'].parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    settings = auto.ProjectSettings(
        name=PROJECT, runtime="python", backend=auto.ProjectBackend(url=f"file://{root / 'state'}")
    )
    command = auto.PulumiCommand(root=str(found["pulumi"].parent.parent), skip_version_check=True)

    def stack(program: Callable[[], None] = _program, name: str = STACK) -> Any:
        s = auto.create_or_select_stack(
            stack_name=name,
            project_name=PROJECT,
            program=program,
            opts=auto.LocalWorkspaceOptions(
                work_dir=str(root), pulumi_home=str(root / "home"), env_vars=env, project_settings=settings,
                pulumi_command=command,
            ),
        )  # fmt: skip
        s.set_all_config(
            {
                "aws:region": auto.ConfigValue(REGION),
                "live:source": auto.ConfigValue(STACK),
                "live:kubeconfig": auto.ConfigValue(yaml.safe_dump(engine_cluster.kubeconfig()), secret=True),
            }
        )
        return s

    yield stack


def _ops(events: list[Any]) -> dict[str, str]:
    """URN -> op of the engine's resource steps (default providers are internal steps, as in the plan)."""
    out = {}
    for e in events:
        pre = e.resource_pre_event
        if pre is not None and "::default" not in pre.metadata.urn:
            out[pre.metadata.urn] = pre.metadata.op.value
    return out


def _plan_ops(plan: dict[str, Any]) -> dict[str, str]:
    return {s["urn"]: s["op"] for s in plan["steps"]}


def test_preview_up_change_destroy_match_the_offline_plan(
    workspace: Callable[..., Any], offline_plans: dict[str, dict[str, Any]], engine_api: ApiClient
) -> None:
    stack = workspace()
    events: list[Any] = []
    stack.preview(on_event=events.append)
    assert _ops(events) == _plan_ops(offline_plans["base"])

    events = []
    up = stack.up(on_event=events.append)
    assert up.summary.result == "succeeded"
    assert _ops(events) == _plan_ops(offline_plans["base"])
    stored = engine_api.request(
        "GET", "/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/inference/inferenceendpointconfigs"
    ).json()
    assert sorted(i["metadata"]["name"] for i in stored["items"]) == [
        "llama-70b-dpd",
        "llama-70b-kvaware",
        "qwen-sglang",
    ]

    # The change: the offline diff against the real state, and the engine's preview of the same change.
    export = stack.export_stack()
    base = state_plan({"version": export.version, "deployment": export.deployment}, "live state", stack=STACK)
    offline = diff_plans(base, offline_plans["change"], known_base=True)
    offline_changed = {u: op for u, op in _plan_ops(offline).items() if op != "same" and "pulumi:pulumi:Stack" not in u}
    stack.set_config("live:change", __import__("pulumi").automation.ConfigValue("health-path"))
    events = []
    stack.preview(on_event=events.append)
    engine_changed = {u: op for u, op in _ops(events).items() if op != "same" and "pulumi:pulumi:Stack" not in u}
    assert engine_changed == offline_changed
    assert list(engine_changed.values()) == ["update"]
    stack.up(on_event=None)

    events = []
    with NamespaceFinalizer(engine_api):
        destroyed = stack.destroy(on_event=events.append)
    assert destroyed.summary.result == "succeeded"
    deleted = {u for u, op in _ops(events).items() if op == "delete"}
    assert deleted == {u for u in _plan_ops(offline_plans["base"]) if "pulumi:pulumi:Stack" not in u}


# --- pulumi.com/waitFor ---------------------------------------------------------------------------------------

WAIT_NS = "hpi-live-wait"
WAIT_FOR = "jsonpath={.status.state}=Ready"


def _wait_program(timeout: str | None) -> Callable[[], None]:
    def program() -> None:
        import pulumi
        import pulumi_kubernetes as k8s

        from components.config.gateway import gateway_namespace
        from components.config.loader import parse_stack_mapping
        from components.config.stackfile import load_stack_file, stack_path
        from components.inference_gateway import render_gateway

        cfg = parse_stack_mapping(STACK, load_stack_file(stack_path(STACK)))
        body = render_gateway(cfg.gateway, gateway_namespace(cfg) or WAIT_NS)
        provider = k8s.Provider("live", kubeconfig=pulumi.Config("live").require("kubeconfig"))
        k8s.apiextensions.CustomResource(
            "waited-gateway",
            api_version=body["apiVersion"],
            kind=body["kind"],
            metadata={"name": "waited", "namespace": WAIT_NS, "annotations": {"pulumi.com/waitFor": WAIT_FOR}},
            spec=body["spec"],
            opts=pulumi.ResourceOptions(
                provider=provider,
                custom_timeouts=pulumi.CustomTimeouts(create=timeout) if timeout else None,
            ),
        )

    return program


WAITED = {
    "apiVersion": "inference.sagemaker.aws.amazon.com/v1alpha1",
    "kind": "InferenceGatewayConfig",
    "metadata": {"name": "waited", "namespace": WAIT_NS},
}


def _set_status_later(api: ApiClient, delay: float, marks: dict[str, float]) -> threading.Thread:
    def run() -> None:
        deadline = time.monotonic() + 120
        while api.get(WAITED) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        marks["created"] = time.monotonic()
        time.sleep(delay)
        r = api.request(
            "PATCH",
            api.path(WAITED) + "/status",
            json={"status": {"state": "Ready"}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        marks["status"] = time.monotonic()
        marks["code"] = r.status_code

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_wait_for_returns_only_once_the_status_is_set(workspace: Callable[..., Any], engine_api: ApiClient) -> None:
    from tests.live.test_live_apiserver import ensure_namespace

    ensure_namespace(engine_api, WAIT_NS)
    stack = workspace(_wait_program(None), name="waitfor")
    marks: dict[str, float] = {}
    setter = _set_status_later(engine_api, 8.0, marks)
    up = stack.up()
    done = time.monotonic()
    setter.join(timeout=5)
    assert up.summary.result == "succeeded"
    assert marks.get("code") == 200, marks
    assert marks["status"] <= done  # up returned after the status was written ...
    assert done - marks["created"] >= 8.0  # ... and not before
    stack.destroy()


def test_wait_for_times_out_when_the_status_never_comes(workspace: Callable[..., Any], engine_api: ApiClient) -> None:
    from pulumi import automation as auto

    from tests.live.test_live_apiserver import ensure_namespace

    ensure_namespace(engine_api, WAIT_NS)
    engine_api.delete(WAITED)
    stack = workspace(_wait_program("20s"), name="waitfor-timeout")
    with pytest.raises(auto.CommandError) as failed:
        stack.up()
    assert "waited" in str(failed.value)
    stored = engine_api.get(WAITED)
    assert stored is not None and "status" not in stored


def test_the_engine_runs_a_python_program_without_a_language_host(tmp_path: Path) -> None:
    """The part that builds: the CLI runs an inline program (the Python SDK serves the language runtime; no
    ``pulumi-language-python`` exists here) against a local backend, up and destroy, with real URNs."""
    import pulumi
    from pulumi import automation as auto

    found = binaries_or_skip(("pulumi",))
    (tmp_path / "state").mkdir()

    def program() -> None:
        pulumi.export("answer", 42)

    env = {
        "PULUMI_CONFIG_PASSPHRASE": "hpi-live",
        "PULUMI_HOME": str(tmp_path / "home"),
        "PULUMI_SKIP_UPDATE_CHECK": "1",
    }
    stack = auto.create_or_select_stack(
        stack_name="smoke",
        project_name=PROJECT,
        program=program,
        opts=auto.LocalWorkspaceOptions(
            work_dir=str(tmp_path), pulumi_home=str(tmp_path / "home"), env_vars=env,
            project_settings=auto.ProjectSettings(
                name=PROJECT, runtime="python", backend=auto.ProjectBackend(url=f"file://{tmp_path / 'state'}")
            ),
            pulumi_command=auto.PulumiCommand(root=str(found["pulumi"].parent.parent), skip_version_check=True),
        ),
    )  # fmt: skip
    events: list[Any] = []
    up = stack.up(on_event=events.append)
    assert up.summary.result == "succeeded" and up.outputs["answer"].value == 42
    assert _ops(events) == {f"urn:pulumi:smoke::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-smoke": "create"}
    assert stack.destroy().summary.result == "succeeded"
