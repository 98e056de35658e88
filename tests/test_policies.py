"""The policy pack: every rule caught on an otherwise valid stack, and its nearest valid variant passing.

Most tests take the reference stacks' mock-registered graphs (run once per session), change one thing — a
registration's inputs, a removed rule resource, or an added hand-written custom resource (what a raw
``CustomResource`` registers) — and run the pack through ``policies.engine.evaluate`` with the stack's
``config.<env>.json``. They assert that the change adds results of exactly one policy, at the level the
issue's table gives, and that the nearest valid variant adds none. A few tests go end to end through
``tools.cli.preview`` (exit code and printed line), including a raw ``CustomResource`` program.
"""

from __future__ import annotations

import copy
import functools
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import tools.cli.preview as preview_mod
from policies import rules
from policies.capacity_rules import CAPACITY_RULE_NAMES
from policies.engine import PolicyResult, evaluate, policy_pack_config
from policies.pack import POLICIES
from policies.records import RECORDS
from tests.conftest import stack_mapping
from tools.plan.harness import StackRun, run_stack
from tools.plan.mocks import Registration

IEC_TYPE = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
JSM_TYPE = "kubernetes:inference.sagemaker.aws.amazon.com/v1:JumpStartModel"
IGC_TYPE = "kubernetes:inference.sagemaker.aws.amazon.com/v1alpha1:InferenceGatewayConfig"
ENV = {"dev": "dev", "prod": "prod"}
CAPACITY_NAMES = frozenset(CAPACITY_RULE_NAMES)
FSBP_NAMES = frozenset(name for name, record in RECORDS.items() if record.fsbp)  # tests/test_edge.py breaks those

Mutation = Callable[[list[Registration]], None]


# --- helpers ---------------------------------------------------------------------------------------


def _added(stack_runs: dict[str, StackRun], stack: str, mutate: Mutation, env: str | None = None) -> list[PolicyResult]:
    """Results the mutation adds to the reference stack's results (same environment config).

    Capacity results are left out: an injected copy of a reference endpoint also asks for GPUs the reference
    groups have already given away, which tests/test_capacity.py judges on its own.
    """
    env = env or ENV[stack]
    regs = stack_runs[stack].registrations
    assert len(regs) > 0
    before = evaluate(POLICIES, regs, env)
    changed = copy.deepcopy(regs)
    mutate(changed)
    after = evaluate(POLICIES, changed, env)
    return [r for r in after if r not in before and r.policy not in CAPACITY_NAMES]


def _only(results: list[PolicyResult], policy: str, level: str) -> list[PolicyResult]:
    assert results, f"expected {policy} to report a violation"
    assert {r.policy for r in results} == {policy}, [r.render() for r in results]
    assert {r.level for r in results} == {level}, [r.render() for r in results]
    return results


def _one(regs: list[Registration], typ: str, name: str | None = None) -> Registration:
    found = [r for r in regs if r.type == typ and (name is None or r.name == name)]
    assert len(found) == 1, f"{len(found)} {typ} {name or ''} registrations"
    return found[0]


def _engine_label(engine: str) -> dict[str, str]:
    return {rules.ENGINE_LABEL: engine}


def _cr(
    name: str, spec: dict[str, Any], *, kind: str = "InferenceEndpointConfig", engine: str = "vllm"
) -> Registration:
    """What a raw ``CustomResource`` of the operator registers (apiVersion, kind, metadata, spec)."""
    typ = IEC_TYPE if kind == "InferenceEndpointConfig" else JSM_TYPE
    return Registration(
        type=typ,
        name=name,
        urn=f"urn:pulumi:test::hyperpod-inference::{typ}::{name}",
        custom=True,
        parent=None,
        inputs={
            "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": "inference", "labels": _engine_label(engine)},
            "spec": spec,
        },
    )


def _reference_spec(stack: str, index: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = stack_mapping(stack)["hyperpod-inference:endpoints"][index]["spec"]
    return spec


def prod_kvaware() -> dict[str, Any]:
    """The prod kvaware endpoint, with the L2 URL the KV-cache layer fills in (rediss://)."""
    spec = _reference_spec("prod", 0)
    assert spec["intelligentRoutingSpec"]["routingStrategy"] == "kvaware"
    spec["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"] = "rediss://master.hpi-prod-kv.cache.amazonaws.com:6379"
    return spec


def dev_prefixaware() -> dict[str, Any]:
    spec = _reference_spec("dev", 0)
    assert spec["kvCacheSpec"]["l2CacheSpec"]["l2CacheBackend"] == "tieredstorage"
    return spec


def _inject(*crs: Registration) -> Mutation:
    def mutate(regs: list[Registration]) -> None:
        regs.extend(crs)

    return mutate


def _edit(spec_fn: Callable[[], dict[str, Any]], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    spec = spec_fn()
    change(spec)
    return spec


# --- the pack as a whole --------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_reference_stacks_have_no_mandatory_violation(stack_runs: dict[str, StackRun], stack: str) -> None:
    run = stack_runs[stack]
    assert len(run.registrations) > 20
    results = evaluate(POLICIES, run.registrations, ENV[stack])
    assert [r.render() for r in results if r.level == "mandatory"] == []


def test_reference_prod_stack_is_clean_and_dev_only_advises_protection(stack_runs: dict[str, StackRun]) -> None:
    prod = evaluate(POLICIES, stack_runs["prod"].registrations, "prod")
    # the only advisories: 1.35 is listed by no retrievable HyperPod page (accepted explicitly), and no offline
    # source lists the prerequisite builds for it (policies/addon_builds.py)
    assert sorted((r.policy, r.resource_name) for r in prod) == [
        ("eks-kubernetes-version-listed", "eks-cluster"),
        ("prerequisite-build-listed-offline", "operator-prereqs-aws-fsx-csi-driver"),
        ("prerequisite-build-listed-offline", "operator-prereqs-aws-mountpoint-s3-csi-driver"),
        ("prerequisite-build-listed-offline", "operator-prereqs-cert-manager"),
        ("prerequisite-build-listed-offline", "operator-prereqs-metrics-server"),
    ]
    dev = evaluate(POLICIES, stack_runs["dev"].registrations, "dev")
    # interface VPC endpoints are off by default outside prod (billed per AZ-hour): advised, not required
    assert {r.policy for r in dev} <= {
        "stateful-resources-protected",
        "vpc-interface-endpoints",
        "prerequisite-build-listed-offline",
        "eks-kubernetes-version-listed",
    }
    assert all(r.level == "advisory" for r in dev)


# --- endpoint rules, on hand-written custom resources added to a reference stack ----------------------


def test_nearest_valid_endpoints_pass(stack_runs: dict[str, StackRun]) -> None:
    """The reference specs as raw custom resources add nothing, in either stack."""
    assert _added(stack_runs, "prod", _inject(_cr("raw", prod_kvaware()))) == []
    assert _added(stack_runs, "dev", _inject(_cr("raw", dev_prefixaware()))) == []


ENDPOINT_CASES: dict[str, tuple[str, str, Callable[[], dict[str, Any]], Callable[[], dict[str, Any]], str]] = {
    # rule: (stack, level, violating spec, nearest valid spec, engine)
    "kvaware-requires-vllm-completions": (
        "prod",
        "mandatory",
        lambda: _edit(prod_kvaware, lambda s: s.update(invocationEndpoint="v1/chat/completions")),
        prod_kvaware,
        "vllm",
    ),
    # a 3.6 field on prod's add-on (operator 3.6 inferred from prose): advised, naming the verify check
    "feature-in-installed-crd": (
        "prod",
        "advisory",
        lambda: _edit(prod_kvaware, lambda s: s.setdefault("kubernetes", {}).update(podTemplateAnnotations={"a": "b"})),
        prod_kvaware,
        "vllm",
    ),
    "gateway-excludes-intelligent-routing": (
        "prod",
        "mandatory",
        # named as the stack's gateway, in its namespace: only the routing exclusion is broken
        lambda: _edit(
            prod_kvaware, lambda s: s.update(inferenceGateway={"enabled": True, "name": "inference-gateway"})
        ),
        lambda: _edit(prod_kvaware, lambda s: s.update(inferenceGateway={"enabled": False})),
        "vllm",
    ),
    "dpd-requires-efa-instances": (
        "prod",
        "mandatory",
        lambda: _edit(lambda: _reference_spec("prod", 1), lambda s: s.update(instanceType="ml.m5.2xlarge")),
        lambda: _reference_spec("prod", 1),
        "vllm",
    ),
    "endpoint-instance-type-in-cluster": (
        "prod",
        "mandatory",
        lambda: _edit(prod_kvaware, lambda s: s.update(instanceType="ml.p5e.48xlarge")),
        lambda: _edit(prod_kvaware, lambda s: s.update(instanceType="ml.p6-b200.48xlarge")),
        "vllm",
    ),
    "instance-selection-exclusive": (
        "prod",
        "mandatory",
        lambda: _edit(prod_kvaware, lambda s: s.update(instanceTypes=["ml.p5.48xlarge"])),
        lambda: _edit(prod_kvaware, lambda s: (s.pop("instanceType"), s.update(instanceTypes=["ml.p5.48xlarge"]))),
        "vllm",
    ),
    "router-metrics-port-matches-worker": (
        "prod",
        "advisory",
        lambda: _edit(prod_kvaware, lambda s: s["metrics"].update(modelMetrics={"port": 9000})),
        prod_kvaware,
        "vllm",
    ),
    "feature-supported-by-addon-version": (
        "dev",  # add-on v1.3.0 = operator 3.2; idleTimeoutSeconds arrived in 3.3
        "mandatory",
        lambda: _edit(dev_prefixaware, lambda s: s["loadBalancer"].update(idleTimeoutSeconds=120)),
        dev_prefixaware,
        "vllm",
    ),
    "image-compatible-with-operator": (
        "prod",  # kvaware in prod: mandatory
        "mandatory",
        lambda: _edit(prod_kvaware, lambda s: s["worker"].update(image="lmcache/vllm-openai:v0.3.9post2")),
        prod_kvaware,
        "vllm",
    ),
    "l2-redis-wired": (
        "prod",
        "mandatory",
        lambda: _edit(
            prod_kvaware,
            lambda s: s["kvCacheSpec"]["l2CacheSpec"].update(l2CacheLocalUrl="redis://master.hpi-prod-kv:6379"),
        ),
        prod_kvaware,
        "vllm",
    ),
    "known-addon-defect": (
        "dev",  # add-on v1.3.0 ignores l2CacheBackend redis (aws/sagemaker-hyperpod-cli#431)
        "advisory",
        lambda: _edit(
            dev_prefixaware,
            lambda s: s["kvCacheSpec"]["l2CacheSpec"].update(
                l2CacheBackend="redis", l2CacheLocalUrl="redis://valkey.inference.svc:6379"
            ),
        ),
        dev_prefixaware,
        "vllm",
    ),
    "tieredstorage-on-non-p-instance": (
        "dev",
        "advisory",
        lambda: _edit(dev_prefixaware, lambda s: s.update(instanceType="ml.m5.2xlarge")),
        dev_prefixaware,
        "vllm",
    ),
    "weights-cache-needs-local-nvme": (
        "prod",  # add-on v2.0.0 = operator 3.6: the field exists; ml.m5.2xlarge has no instance store
        "mandatory",
        lambda: _edit(
            prod_kvaware,
            lambda s: s.update(instanceType="ml.m5.2xlarge", modelCacheConfig={"weightsCache": {"enabled": True}}),
        ),
        lambda: _edit(prod_kvaware, lambda s: s.update(instanceType="ml.m5.2xlarge")),
        "vllm",
    ),
    "weights-cache-nvme-offline": (
        "prod",
        "advisory",
        lambda: _edit(
            prod_kvaware, lambda s: s.update(modelCacheConfig={"weightsCache": {"enabled": True, "hostPath": "/d"}})
        ),
        lambda: _edit(prod_kvaware, lambda s: s.update(modelCacheConfig={"weightsCache": {"enabled": True}})),
        "vllm",
    ),
}


def _no_routing(spec: dict[str, Any]) -> None:
    spec.pop("intelligentRoutingSpec", None)


def _plain_endpoint() -> dict[str, Any]:
    """The prod kvaware endpoint without routing or KV cache (for rules about the worker alone)."""
    spec = prod_kvaware()
    _no_routing(spec)
    spec.pop("kvCacheSpec")
    return spec


SGLANG_IMAGE = "lmsysorg/sglang:v0.5.2-cu126"
SGLANG_ARGS = ["--model-path", "/opt/ml/model", "--port", "8000", "--enable-metrics"]  # sglang-metrics-served
ENDPOINT_CASES["kv-cache-requires-vllm"] = (
    "prod",
    "mandatory",
    lambda: _edit(prod_kvaware, lambda s: (_no_routing(s), s["worker"].update(image=SGLANG_IMAGE, args=SGLANG_ARGS))),
    lambda: _edit(
        prod_kvaware,
        lambda s: (_no_routing(s), s.pop("kvCacheSpec"), s["worker"].update(image=SGLANG_IMAGE, args=SGLANG_ARGS)),
    ),
    "sglang",
)
ENDPOINT_CASES["sglang-metrics-served"] = (
    "prod",
    "mandatory",
    # the prod sglang endpoint as it was: metrics on, no port (CRD default 8080), no --enable-metrics
    lambda: _edit(
        lambda: _reference_spec("prod", 2),
        lambda s: (s["metrics"].pop("modelMetrics"), s["worker"].update(args=s["worker"]["args"][:-1])),
    ),
    lambda: _reference_spec("prod", 2),
    "sglang",
)
ENDPOINT_CASES["s3-locations-valid"] = (
    "prod",
    "mandatory",
    lambda: _edit(
        prod_kvaware, lambda s: s["modelSourceConfig"]["s3Storage"].update(bucketName="s3://hpi-prod-models/")
    ),
    prod_kvaware,
    "vllm",
)
ENDPOINT_CASES["endpoint-tags-valid"] = (
    "prod",
    "mandatory",
    lambda: _edit(prod_kvaware, lambda s: s.update(tags=[{"name": "aws:cost-center", "value": "ml"}])),
    lambda: _edit(prod_kvaware, lambda s: s.update(tags=[{"name": "cost-center", "value": "ml"}])),
    "vllm",
)
# an SGLang image declared vLLM: every vLLM-only check would pass it
ENDPOINT_CASES["engine-matches-image"] = (
    "prod",
    "mandatory",
    lambda: _edit(_plain_endpoint, lambda s: s["worker"].update(image=SGLANG_IMAGE)),
    _plain_endpoint,
    "vllm",
)
ENDPOINT_CASES["request-limits-require-metrics"] = (
    "prod",
    "mandatory",
    lambda: _edit(
        _plain_endpoint,
        lambda s: (s["worker"].update(requestLimits={"maxConcurrentRequests": 8}), s["metrics"].update(enabled=False)),
    ),
    lambda: _edit(_plain_endpoint, lambda s: s["worker"].update(requestLimits={"maxConcurrentRequests": 8})),
    "vllm",
)


@pytest.mark.parametrize("rule", sorted(ENDPOINT_CASES))
def test_endpoint_rule_breaks_alone_and_nearest_valid_passes(stack_runs: dict[str, StackRun], rule: str) -> None:
    stack, level, bad, good, engine = ENDPOINT_CASES[rule]
    results = _only(_added(stack_runs, stack, _inject(_cr("raw-endpoint", bad(), engine=engine))), rule, level)
    assert all(r.resource_type == IEC_TYPE and r.resource_name == "raw-endpoint" for r in results)
    assert _added(stack_runs, stack, _inject(_cr("raw-endpoint", good(), engine=engine))) == []


def test_every_endpoint_rule_has_a_case() -> None:
    assert set(ENDPOINT_CASES) | set(RELEASE_REQUIREMENT_CASES) == set(rules.RULES)


# lmcache.mode is an operator-3.7 field: on prod's add-on it always brings the feature-in-installed-crd advisory
# too, so these cases take that one out and check it is there.
RELEASE_REQUIREMENT_CASES = {
    "image-meets-release-requirement": ("mandatory", "lmcache/vllm-openai:v0.4.3", "lmcache/vllm-openai:v0.5.1"),
    "image-meets-release-requirement-offline": ("advisory", "vllm/vllm-openai:v0.19.1", "lmcache/vllm-openai:v0.5.1"),
}


def _multiprocess(image: str) -> dict[str, Any]:
    """prod's kvaware spec in LMCache MultiProcess mode (operator 3.7) with ``image``."""

    def edit(s: dict[str, Any]) -> None:
        s["lmcache"] = {"mode": "MultiProcess"}
        s["worker"]["image"] = image

    return _edit(prod_kvaware, edit)


@pytest.mark.parametrize("rule", sorted(RELEASE_REQUIREMENT_CASES))
def test_release_requirement_rules_on_the_pack(stack_runs: dict[str, StackRun], rule: str) -> None:
    level, bad_image, good_image = RELEASE_REQUIREMENT_CASES[rule]
    spec = _multiprocess
    bad = _added(stack_runs, "prod", _inject(_cr("raw-endpoint", spec(bad_image), engine="vllm")))
    assert {r.policy for r in bad} == {rule, "feature-in-installed-crd"}, [r.render() for r in bad]
    _only([r for r in bad if r.policy == rule], rule, level)
    good = _added(stack_runs, "prod", _inject(_cr("raw-endpoint", spec(good_image), engine="vllm")))
    assert {r.policy for r in good} == {"feature-in-installed-crd"}, [r.render() for r in good]


def test_kvaware_on_a_jumpstart_model_is_caught(stack_runs: dict[str, StackRun]) -> None:
    spec = {
        "model": {"modelId": "meta-textgeneration-llama-3-1-8b-instruct", "acceptEula": True},
        "server": {"instanceType": "ml.p5.48xlarge"},
        "intelligentRoutingSpec": {"enabled": True, "routingStrategy": "kvaware"},
    }
    _only(
        _added(stack_runs, "prod", _inject(_cr("jsm", spec, kind="JumpStartModel"))),
        "kvaware-requires-vllm-completions",
        "mandatory",
    )
    spec["intelligentRoutingSpec"]["routingStrategy"] = "prefixaware"
    assert _added(stack_runs, "prod", _inject(_cr("jsm", spec, kind="JumpStartModel"))) == []


def test_image_rule_is_advisory_outside_kvaware_and_outside_prod(stack_runs: dict[str, StackRun]) -> None:
    old = "lmcache/vllm-openai:v0.3.9post2"
    dev = _edit(dev_prefixaware, lambda s: s["worker"].update(image=old))
    _only(_added(stack_runs, "dev", _inject(_cr("raw", dev))), "image-compatible-with-operator", "advisory")
    # kvaware in dev is still advisory (the config relaxes it)
    kv = _edit(prod_kvaware, lambda s: s["worker"].update(image=old))
    assert [r.level for r in _added(stack_runs, "prod", _inject(_cr("raw", kv)), env="dev")] == ["advisory"]
    # prod, prefixaware: the catalogue level is advisory, but the engine has one level per policy (mandatory in
    # prod), so the pack reports only the kvaware case there (reportLevels) — documented in the README.
    prefix = _edit(
        lambda: copy.deepcopy(kv),
        lambda s: s["intelligentRoutingSpec"].update(routingStrategy="prefixaware", enabled=True),
    )
    prefix["invocationEndpoint"] = "v1/chat/completions"
    assert _added(stack_runs, "prod", _inject(_cr("raw", prefix))) == []


def test_l2_redis_url_plain_is_fine_in_dev_but_missing_is_not(stack_runs: dict[str, StackRun]) -> None:
    url = _edit(prod_kvaware, lambda s: s["kvCacheSpec"]["l2CacheSpec"].update(l2CacheLocalUrl="redis://r:6379"))
    assert _added(stack_runs, "prod", _inject(_cr("raw", url)), env="dev") == []
    missing = _edit(prod_kvaware, lambda s: s["kvCacheSpec"]["l2CacheSpec"].pop("l2CacheLocalUrl"))
    _only(_added(stack_runs, "prod", _inject(_cr("raw", missing)), env="dev"), "l2-redis-wired", "mandatory")


def test_float_numbers_from_the_cli_are_judged_like_ints(stack_runs: dict[str, StackRun]) -> None:
    """The CLI sends 8000.0; the ports still match."""
    spec = prod_kvaware()
    spec["metrics"]["modelMetrics"]["port"] = 8000.0
    spec["worker"]["modelInvocationPort"]["containerPort"] = 8000.0
    assert _added(stack_runs, "prod", _inject(_cr("raw", spec))) == []


# --- end to end through tools.cli.preview: a raw CustomResource program -------------------------------------


RAW_PROGRAM = textwrap.dedent(
    """
    import json
    import runpy

    import pulumi_kubernetes as k8s

    runpy.run_path({main!r}, run_name="__pulumi_main__")
    k8s.apiextensions.CustomResource(
        "raw-endpoint",
        api_version="inference.sagemaker.aws.amazon.com/v1",
        kind="InferenceEndpointConfig",
        metadata={{"name": "raw-endpoint", "namespace": "inference", "labels": {labels!r}}},
        spec=json.loads({spec!r}),
    )
    """
)


def _preview_with_raw_cr(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stack: str, spec: dict[str, Any]
) -> tuple[int, str]:
    main = tmp_path / "__main__.py"
    root = Path(__file__).resolve().parents[1]
    main.write_text(
        RAW_PROGRAM.format(main=str(root / "__main__.py"), labels=_engine_label("vllm"), spec=json.dumps(spec)),
        encoding="utf-8",
    )
    monkeypatch.setattr(preview_mod, "run_stack", functools.partial(run_stack, main=main))
    console = Console(record=True, width=400, highlight=False, soft_wrap=True)
    code = preview_mod.preview(stack, console=console)
    return code, console.export_text()


@pytest.mark.parametrize(
    ("stack", "rule"),
    [("prod", "kvaware-requires-vllm-completions"), ("dev", "feature-supported-by-addon-version")],
)
def test_preview_catches_a_raw_custom_resource(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stack: str, rule: str
) -> None:
    """A hand-written CustomResource bypasses the config checks; the pack still stops it (exit 1).

    The same spec in the stack config is a config error (exit 2): both call the same rule function.
    """
    case_stack, _, bad, _, _ = ENDPOINT_CASES[rule]
    assert case_stack == stack
    spec = bad()
    mapping = stack_mapping(stack)
    mapping["hyperpod-inference:endpoints"][0]["spec"] = copy.deepcopy(spec)
    code, out = _preview(stack, mapping)
    assert code == 2, out

    code, out = _preview_with_raw_cr(monkeypatch, tmp_path, stack, spec)
    assert code == 1, out
    assert f"MANDATORY {rule} {IEC_TYPE}::raw-endpoint" in out


# --- baselines, by changing one registration of a reference stack --------------------------------------


def _set_inputs(typ: str, name: str | None, **changes: Any) -> Mutation:
    def mutate(regs: list[Registration]) -> None:
        _one(regs, typ, name).inputs.update(changes)

    return mutate


def _remove(typ: str, name: str) -> Mutation:
    def mutate(regs: list[Registration]) -> None:
        regs.remove(_one(regs, typ, name))

    return mutate


def _gateway_config(auth: dict[str, Any] | None) -> Registration:
    spec: dict[str, Any] = {
        "bbr": {"enabled": True},
        "schedulers": [{"name": "s", "modelName": "m", "modelSelector": {}}],
    }
    if auth is not None:
        spec["auth"] = auth
    return Registration(
        type=IGC_TYPE,
        name="raw-gateway",
        urn=f"urn:pulumi:test::hyperpod-inference::{IGC_TYPE}::raw-gateway",
        custom=True,
        parent=None,
        inputs={
            "apiVersion": "inference.sagemaker.aws.amazon.com/v1alpha1",
            "kind": "InferenceGatewayConfig",
            "spec": spec,
        },
    )


JWT = {
    "jwt": {
        "provider": {
            "name": "idp",
            "issuer": "https://idp.example.com",
            "remoteJWKS": {"uri": "https://idp.example.com/jwks"},
            "audiences": ["inference"],
        }
    }
}


def test_gateway_requires_jwt(stack_runs: dict[str, StackRun]) -> None:
    _only(_added(stack_runs, "prod", _inject(_gateway_config(None))), "gateway-requires-jwt", "mandatory")
    _only(_added(stack_runs, "prod", _inject(_gateway_config(None)), env="dev"), "gateway-requires-jwt", "advisory")
    assert _added(stack_runs, "prod", _inject(_gateway_config(JWT))) == []


AUTH_TYPES = ("authenticate-oidc", "authenticate-cognito", "jwt-validation")


def _listener_actions(name: str, drop_auth: bool, expected: str = "jwt-validation") -> Mutation:
    def mutate(regs: list[Registration]) -> None:
        reg = (
            _one(regs, "aws:lb/listener:Listener", name)
            if name.endswith("https")
            else _one(regs, "aws:lb/listenerRule:ListenerRule", name)
        )
        key = "defaultActions" if reg.type.endswith("Listener") else "actions"
        actions = reg.inputs[key]
        if isinstance(actions, dict):  # a secret (the OIDC client secret) wraps the list
            actions = actions["value"]
        assert [a["type"] for a in actions] == [expected, "forward"], actions
        if drop_auth:
            actions = [a for a in actions if a["type"] not in AUTH_TYPES]
        reg.inputs[key] = actions

    return mutate


def test_alb_requires_authentication_on_the_https_listener(stack_runs: dict[str, StackRun]) -> None:
    _only(
        _added(stack_runs, "prod", _listener_actions("front-door-https", True)),
        "alb-requires-authentication",
        "mandatory",
    )
    _only(
        _added(stack_runs, "prod", _listener_actions("front-door-https", True), env="dev"),
        "alb-requires-authentication",
        "advisory",
    )
    # prod's default action is jwt-validation (order 1) then forward (order 2): the pack passes it
    assert _added(stack_runs, "prod", _listener_actions("front-door-https", False)) == []


def _listener_reordered(name: str, orders: dict[str, int | None], reverse_list: bool = False) -> Mutation:
    """Set each action's ``order`` by type (None removes it) and optionally reverse the list itself."""

    def mutate(regs: list[Registration]) -> None:
        _listener_actions(name, False)(regs)  # asserts jwt-validation is there
        reg = _one(regs, "aws:lb/listener:Listener", name)
        actions = [dict(a) for a in reg.inputs["defaultActions"]]
        for action in actions:
            if orders.get(action["type"], 0) is None:
                action.pop("order", None)
            elif action["type"] in orders:
                action["order"] = orders[action["type"]]
        reg.inputs["defaultActions"] = list(reversed(actions)) if reverse_list else actions

    return mutate


def test_alb_requires_authentication_follows_the_order_field_not_list_order(stack_runs: dict[str, StackRun]) -> None:
    """ALB runs actions by ``order`` (lowest first), whatever the list order (ELB API reference, Action.Order)."""
    # listed [jwt-validation order 2, forward order 1]: ALB forwards first, so this is unauthenticated
    _only(
        _added(stack_runs, "prod", _listener_reordered("front-door-https", {"jwt-validation": 2, "forward": 1})),
        "alb-requires-authentication",
        "mandatory",
    )
    # listed [forward order 2, jwt-validation order 1]: ALB verifies the token first
    assert (
        _added(
            stack_runs,
            "prod",
            _listener_reordered("front-door-https", {"jwt-validation": 1, "forward": 2}, reverse_list=True),
        )
        == []
    )
    # no order on either action: the list order decides (jwt-validation listed first passes, last fails)
    no_order: dict[str, int | None] = {"jwt-validation": None, "forward": None}
    assert _added(stack_runs, "prod", _listener_reordered("front-door-https", no_order)) == []
    _only(
        _added(stack_runs, "prod", _listener_reordered("front-door-https", no_order, reverse_list=True)),
        "alb-requires-authentication",
        "mandatory",
    )


def test_alb_requires_authentication_on_listener_rules(stack_runs: dict[str, StackRun]) -> None:
    results = _only(
        _added(stack_runs, "prod", _listener_actions("front-door-route-1", True)),
        "alb-requires-authentication",
        "mandatory",
    )
    assert [r.resource_name for r in results] == ["front-door-route-1"]
    assert [r.message for r in results] == [
        "listener rule forwards without an authenticate-oidc, authenticate-cognito or jwt-validation action before it"
    ]
    assert _added(stack_runs, "prod", _listener_actions("front-door-route-1", False)) == []


def test_alb_requires_authentication_on_staging_routes(stack_runs: dict[str, StackRun]) -> None:
    """staging: an OIDC listener and a JWT rule both pass; either without its authenticate action is reported."""
    assert (
        _added(stack_runs, "staging", _listener_actions("front-door-https", False, "authenticate-oidc"), "staging")
        == []
    )
    assert _added(stack_runs, "staging", _listener_actions("front-door-route-1", False), "staging") == []
    _only(
        _added(stack_runs, "staging", _listener_actions("front-door-https", True, "authenticate-oidc"), "staging"),
        "alb-requires-authentication",
        "advisory",
    )
    _only(
        _added(stack_runs, "staging", _listener_actions("front-door-route-1", True), "staging"),
        "alb-requires-authentication",
        "advisory",
    )


def _oidc_lets_through(regs: list[Registration]) -> None:
    reg = _one(regs, "aws:lb/listener:Listener", "front-door-https")
    actions = reg.inputs["defaultActions"]
    actions = actions["value"] if isinstance(actions, dict) else actions
    assert actions[0]["type"] == "authenticate-oidc"
    actions[0]["authenticateOidc"]["onUnauthenticatedRequest"] = "allow"
    reg.inputs["defaultActions"] = actions


def test_alb_requires_authentication_refuses_oidc_that_lets_unauthenticated_requests_through(
    stack_runs: dict[str, StackRun],
) -> None:
    """onUnauthenticatedRequest allow: "Allow the request to be forwarded to the target" (ELB API reference), so
    the forward is reached without a login even though an authenticate action comes first."""
    (result,) = _only(
        _added(stack_runs, "staging", _oidc_lets_through, env="prod"), "alb-requires-authentication", "mandatory"
    )
    assert result.message == (
        "HTTPS listener's default action forwards after authenticate-oidc with onUnauthenticatedRequest: allow, "
        "which lets requests without a login through"
    )


_OIDC_DENY = {"type": "authenticate-oidc", "order": 1, "authenticateOidc": {"onUnauthenticatedRequest": "deny"}}
_OIDC_ALLOW = {"type": "authenticate-oidc", "order": 1, "authenticateOidc": {"onUnauthenticatedRequest": "allow"}}
_COGNITO_ALLOW = {
    "type": "authenticate-cognito",
    "order": 1,
    "authenticateCognito": {"onUnauthenticatedRequest": "allow"},
}


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        ([{"type": "jwt-validation", "order": 1}, {"type": "forward", "order": 2}], None),
        ([{"type": "authenticate-cognito", "order": 1}, {"type": "forward", "order": 2}], None),
        ([_OIDC_DENY, {"type": "forward", "order": 2}], None),
        (
            [_OIDC_ALLOW, {"type": "forward", "order": 2}],
            "forwards after authenticate-oidc with onUnauthenticatedRequest: allow, which lets requests without a "
            "login through",
        ),
        (
            [_COGNITO_ALLOW, {"type": "jwt-validation", "order": 2}, {"type": "forward", "order": 3}],
            None,  # a later jwt-validation still stands before the forward
        ),
        ([{"type": "forward", "order": 1}, {"type": "jwt-validation", "order": 2}], "forwards without"),
        ([{"type": "forward"}], "forwards without"),
        ([{"targetGroupArn": "arn:aws:elasticloadbalancing:tg"}], "forwards without"),  # forward by its target only
        ([{"type": "fixed-response"}], None),  # nothing is forwarded
        ([{"type": "JWT-VALIDATION", "order": 1}, {"type": "forward", "order": 2}], None),  # type case-insensitive
    ],
    ids=[
        "jwt-first",
        "cognito-first",
        "oidc-deny",
        "oidc-allow",
        "allow-then-jwt",
        "jwt-after-forward",
        "bare-forward",
        "target-only",
        "fixed-response",
        "upper-case-type",
    ],
)
def test_unauthenticated_forward_every_branch(actions: list[dict[str, Any]], expected: str | None) -> None:
    from policies.baselines import unauthenticated_forward

    reason = unauthenticated_forward(actions)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and reason.startswith(expected), reason


def _execution_role_named(name: str) -> Mutation:
    def mutate(regs: list[Registration]) -> None:
        addon = next(
            r
            for r in regs
            if r.type == "aws:eks/addon:Addon" and r.inputs.get("addonName") == "amazon-sagemaker-hyperpod-inference"
        )
        values = json.loads(addon.inputs["configurationValues"])
        old = values["executionRoleArn"].rsplit("/", 1)[-1]
        values["executionRoleArn"] = values["executionRoleArn"].replace(old, name)
        addon.inputs["configurationValues"] = json.dumps(values)
        role = next(r for r in regs if r.type == "aws:iam/role:Role" and r.inputs.get("name") == old)
        role.inputs["name"] = name

    return mutate


def test_execution_role_name_prefix(stack_runs: dict[str, StackRun]) -> None:
    results = _only(
        _added(stack_runs, "prod", _execution_role_named("hpi-prod-operator")),
        "execution-role-name-prefix",
        "mandatory",
    )
    assert "SageMakerHyperPodInference*" in results[0].message
    assert _added(stack_runs, "prod", _execution_role_named("SageMakerHyperPodInference-prod-v2")) == []


def test_efa_security_group_needs_self_ingress_and_egress(stack_runs: dict[str, StackRun]) -> None:
    ingress = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
    egress = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
    for stack in ("dev", "prod"):
        results = _only(
            _added(stack_runs, stack, _remove(ingress, "node-sg-self-ingress")),
            "efa-security-group-self-rules",
            "mandatory",
        )
        assert "ingress" in results[0].message and results[0].resource_type == "aws:ec2/securityGroup:SecurityGroup"
        results = _only(
            _added(stack_runs, stack, _remove(egress, "node-sg-self-egress")),
            "efa-security-group-self-rules",
            "mandatory",
        )
        assert "egress" in results[0].message
    # self, but only one port: not what EFA needs
    _only(
        _added(
            stack_runs, "prod", _set_inputs(ingress, "node-sg-self-ingress", ipProtocol="tcp", fromPort=443, toPort=443)
        ),
        "efa-security-group-self-rules",
        "mandatory",
    )

    # nearest valid: the self rules as an inline rule on the group instead of a standalone one
    def inline(regs: list[Registration]) -> None:
        _remove(ingress, "node-sg-self-ingress")(regs)
        _one(regs, "aws:ec2/securityGroup:SecurityGroup", "node-sg-sg").inputs["ingress"] = [
            {"self": True, "protocol": "-1", "fromPort": 0, "toPort": 0}
        ]

    assert _added(stack_runs, "prod", inline) == []


def _replication_group(transit: bool, at_rest: bool, protect: bool = True) -> Registration:
    typ = "aws:elasticache/replicationGroup:ReplicationGroup"
    return Registration(
        type=typ,
        name="raw-kv",
        urn=f"urn:pulumi:test::hyperpod-inference::{typ}::raw-kv",
        custom=True,
        parent=None,
        inputs={"engine": "valkey", "transitEncryptionEnabled": transit, "atRestEncryptionEnabled": at_rest},
        protect=protect,
    )


def test_redis_encryption(stack_runs: dict[str, StackRun]) -> None:
    for transit, at_rest in ((False, True), (True, False)):
        _only(
            _added(stack_runs, "prod", _inject(_replication_group(transit, at_rest))), "redis-encryption", "mandatory"
        )
        # mandatory in every environment
        _only(
            _added(stack_runs, "prod", _inject(_replication_group(transit, at_rest)), env="dev"),
            "redis-encryption",
            "mandatory",
        )
    assert _added(stack_runs, "prod", _inject(_replication_group(True, True))) == []
    rg = _replication_group(True, True)
    rg.inputs["transitEncryptionMode"] = "preferred"
    _only(_added(stack_runs, "prod", _inject(rg)), "redis-encryption", "mandatory")


def test_existing_replication_groups_are_encrypted(stack_runs: dict[str, StackRun]) -> None:
    typ = "aws:elasticache/replicationGroup:ReplicationGroup"
    groups = [r for r in stack_runs["prod"].registrations if r.type == typ]
    assert len(groups) == 1, "prod's KV-cache layer must register one ElastiCache replication group"
    _only(
        _added(stack_runs, "prod", _set_inputs(typ, groups[0].name, atRestEncryptionEnabled=False)),
        "redis-encryption",
        "mandatory",
    )


def _bucket_parts(regs: list[Registration], typ: str) -> list[Registration]:
    return [r for r in regs if r.type == typ]


def test_s3_bucket_private_encrypted(stack_runs: dict[str, StackRun]) -> None:
    regs = stack_runs["prod"].registrations
    buckets = _bucket_parts(regs, "aws:s3/bucket:Bucket")
    assert buckets, "prod registers buckets"
    pab = _bucket_parts(regs, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")[0]
    sse = _bucket_parts(regs, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")[
        0
    ]
    pol = _bucket_parts(regs, "aws:s3/bucketPolicy:BucketPolicy")[0]
    for mutation in (
        _remove(pab.type, pab.name),
        _set_inputs(pab.type, pab.name, blockPublicPolicy=False),
        _remove(sse.type, sse.name),
        _remove(pol.type, pol.name),
        _set_inputs(
            pol.type,
            pol.name,
            policy=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                            "Action": "s3:GetObject",
                            "Resource": "*",
                        }
                    ],
                }
            ),
        ),
    ):
        results = _only(_added(stack_runs, "prod", mutation), "s3-bucket-private-encrypted", "mandatory")
        assert len(results) == 1 and results[0].resource_type == "aws:s3/bucket:Bucket"

    # nearest valid: the same TLS-only statement as a different, equally valid document
    def reformatted(regs: list[Registration]) -> None:
        p = _one(regs, pol.type, pol.name)
        p.inputs["policy"] = json.dumps(json.loads(p.inputs["policy"]), indent=2)

    assert _added(stack_runs, "prod", reformatted) == []


def _eks_public(cidrs: list[str]) -> Mutation:
    return _set_inputs("eks:index:Cluster", None, endpointPublicAccess=True, publicAccessCidrs=cidrs)


def test_eks_endpoint_private(stack_runs: dict[str, StackRun]) -> None:
    _only(_added(stack_runs, "prod", _eks_public(["0.0.0.0/0"])), "eks-endpoint-private", "mandatory")
    _only(_added(stack_runs, "dev", _eks_public(["0.0.0.0/0"])), "eks-endpoint-private", "advisory")
    _only(_added(stack_runs, "prod", _eks_public([])), "eks-endpoint-private", "mandatory")
    assert _added(stack_runs, "prod", _eks_public(["203.0.113.0/24"])) == []
    assert _added(stack_runs, "dev", _eks_public(["203.0.113.0/24"])) == []


def test_eks_endpoint_private_needs_a_deployer_path(stack_runs: dict[str, StackRun]) -> None:
    """Private endpoint: the cluster SG must admit something other than the HyperPod nodes on 443."""
    ingress = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
    # prod as registered passes; without its deployer rule only the nodes' 443 rule is left
    results = _only(
        _added(stack_runs, "prod", _remove(ingress, "eks-api-from-deployer-cidr-0")),
        "eks-endpoint-private",
        "mandatory",
    )
    assert "no security-group rule admits a deployer on 443" in results[0].message

    # the nodes' own rule does not count, whatever it is called
    def from_nodes(regs: list[Registration]) -> None:
        nodes = _one(regs, ingress, "eks-api-from-nodes")
        rule = _one(regs, ingress, "eks-api-from-deployer-cidr-0")
        rule.inputs = {**nodes.inputs}
        rule.property_dependencies = dict(nodes.property_dependencies)

    _only(_added(stack_runs, "prod", from_nodes), "eks-endpoint-private", "mandatory")

    # a rule on another port does not count either
    _only(
        _added(stack_runs, "prod", _set_inputs(ingress, "eks-api-from-deployer-cidr-0", fromPort=22, toPort=22)),
        "eks-endpoint-private",
        "mandatory",
    )

    # dev reaches the API through its restricted public endpoint; turning that off leaves no path
    _only(
        _added(stack_runs, "dev", _set_inputs("eks:index:Cluster", None, endpointPublicAccess=False)),
        "eks-endpoint-private",
        "advisory",
    )

    # ... unless an in-VPC runner's security group is admitted on 443 (nearest valid variant)
    def private_with_runner_sg(regs: list[Registration]) -> None:
        _set_inputs("eks:index:Cluster", None, endpointPublicAccess=False)(regs)
        rule = copy.deepcopy(_one(regs, ingress, "eks-api-from-nodes"))
        rule.name, rule.urn = "runner", rule.urn.replace("eks-api-from-nodes", "runner")
        rule.inputs["referencedSecurityGroupId"] = "sg-0123456789abcdef0"
        rule.property_dependencies = {"securityGroupId": rule.property_dependencies["securityGroupId"]}
        regs.append(rule)

    assert _added(stack_runs, "dev", private_with_runner_sg) == []


def test_eks_endpoint_private_on_the_provider_cluster() -> None:
    """``aws:eks/cluster:Cluster`` (what pulumi-eks creates for real): public with the default CIDR list, or private
    with no rule for the deployer, fails; private with a 443 rule from a CIDR on its security group passes."""
    sg = Registration(
        type="aws:ec2/securityGroup:SecurityGroup",
        name="api-sg",
        urn="urn:pulumi:test::p::aws:ec2/securityGroup:SecurityGroup::api-sg",
        custom=True,
        parent=None,
        inputs={"vpcId": "vpc-1"},
    )
    reg = Registration(
        type="aws:eks/cluster:Cluster",
        name="raw-eks",
        urn="urn:pulumi:test::p::aws:eks/cluster:Cluster::raw-eks",
        custom=True,
        parent=None,
        inputs={
            "vpcConfig": {"endpointPublicAccess": True, "subnetIds": ["subnet-1"]},
            # what the other cluster policies demand, so that only the endpoint is judged here
            "deletionProtection": True,
            "encryptionConfig": {"resources": ["secrets"], "provider": {"keyArn": "arn:aws:kms:us-east-1:1:key/k"}},
        },
    )
    _only(evaluate(POLICIES, [reg], "prod"), "eks-endpoint-private", "mandatory")
    reg.inputs["vpcConfig"] = {"endpointPublicAccess": False, "endpointPrivateAccess": True, "securityGroupIds": ["x"]}
    reg.property_dependencies = {"vpcConfig": [sg.urn]}
    _only(evaluate(POLICIES, [sg, reg], "prod"), "eks-endpoint-private", "mandatory")
    rule = Registration(
        type="aws:ec2/securityGroupRule:SecurityGroupRule",
        name="runner",
        urn="urn:pulumi:test::p::aws:ec2/securityGroupRule:SecurityGroupRule::runner",
        custom=True,
        parent=None,
        inputs={"type": "ingress", "protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["10.0.8.0/24"]},
        property_dependencies={"securityGroupId": [sg.urn]},
    )
    assert evaluate(POLICIES, [sg, reg, rule], "prod") == []


def test_stateful_resources_protected(stack_runs: dict[str, StackRun]) -> None:
    def unprotect(regs: list[Registration]) -> None:
        _one(regs, "aws-native:sagemaker:Cluster").protect = False

    _only(_added(stack_runs, "prod", unprotect), "stateful-resources-protected", "mandatory")
    dev = evaluate(POLICIES, stack_runs["dev"].registrations, "dev")
    assert "aws-native:sagemaker:Cluster" in {
        r.resource_type for r in dev if r.policy == "stateful-resources-protected"
    }
    assert all(r.level == "advisory" for r in dev)

    def protect(regs: list[Registration]) -> None:
        _one(regs, "aws-native:sagemaker:Cluster").protect = True

    assert _added(stack_runs, "prod", protect) == []


# --- the policies judge the resources the layers really register ---------------------------------------


def _spec_of(reg: Registration) -> dict[str, Any]:
    """A registration's spec; a spec carrying a secret (the Redis AUTH URL) arrives wrapped as one."""
    spec = reg.inputs["spec"]
    if "value" in spec and len(spec) == 2:
        reg.inputs["spec"] = spec = spec["value"]
    return spec  # type: ignore[no-any-return]


def _change_stack_cr(typ: str, name: str, change: Callable[[dict[str, Any]], None]) -> Mutation:
    def mutate(regs: list[Registration]) -> None:
        change(_spec_of(_one(regs, typ, name)))

    return mutate


def test_registered_endpoints_are_judged(stack_runs: dict[str, StackRun]) -> None:
    kvaware = "endpoints-inference-llama-70b-kvaware"
    assert [r.type for r in stack_runs["prod"].registrations if r.name == kvaware] == [IEC_TYPE], (
        "prod must register the kvaware endpoint as an InferenceEndpointConfig"
    )
    _only(
        _added(
            stack_runs,
            "prod",
            _change_stack_cr(IEC_TYPE, kvaware, lambda s: s.update(invocationEndpoint="v1/chat/completions")),
        ),
        "kvaware-requires-vllm-completions",
        "mandatory",
    )
    _only(
        _added(
            stack_runs,
            "prod",
            _change_stack_cr(
                IEC_TYPE,
                kvaware,
                lambda s: s["kvCacheSpec"]["l2CacheSpec"].update(l2CacheLocalUrl="redis://plain:6379"),
            ),
        ),
        "l2-redis-wired",
        "mandatory",
    )


def test_registered_gateway_is_judged(stack_runs: dict[str, StackRun]) -> None:
    gateways = [r for r in stack_runs["prod"].registrations if r.type == IGC_TYPE]
    assert len(gateways) == 1, "prod must register one InferenceGatewayConfig"
    assert get_jwt(gateways[0]), "the reference gateway validates JWTs"
    _only(
        _added(stack_runs, "prod", _change_stack_cr(IGC_TYPE, gateways[0].name, lambda s: s.pop("auth"))),
        "gateway-requires-jwt",
        "mandatory",
    )


def _opted_in(name: str, namespace: str, gateway: str | None) -> Registration:
    spec = _edit(prod_kvaware, lambda s: s.pop("intelligentRoutingSpec"))
    spec["inferenceGateway"] = {"enabled": True, **({"name": gateway} if gateway else {})}
    cr = _cr(name, spec)
    cr.inputs["metadata"]["namespace"] = namespace
    return cr


@pytest.mark.parametrize(("env", "level"), [("prod", "mandatory"), ("dev", "mandatory")])
def test_gateway_in_another_namespace_than_its_endpoint_is_caught_alone(stack_runs, env: str, level: str) -> None:
    """Today's defect reintroduced on the graph: the gateway in hyperpod-inference-system, its model in inference."""
    results = _only(
        _added(stack_runs, "prod", _inject(_opted_in("elsewhere", "team-b", "inference-gateway")), env=env),
        "gateway-fronts-its-endpoints",
        level,
    )
    assert results[0].message == (
        "opts into Inference Gateway inference-gateway in team-b, but this stack's InferenceGatewayConfig is "
        "inference/inference-gateway: an InferencePool selects pods in its own namespace only"
    )
    unnamed = _added(stack_runs, "prod", _inject(_opted_in("unnamed", "inference", None)))
    assert (
        "(unnamed: the operator generates one)"
        in _only(unnamed, "gateway-fronts-its-endpoints", "mandatory")[0].message
    )


def test_gateway_fronts_its_endpoints_nearest_valid(stack_runs) -> None:
    assert _added(stack_runs, "prod", _inject(_opted_in("beside", "inference", "inference-gateway"))) == []
    # a stack without a gateway: the config's gateway.enabled check owns that case, the policy is silent
    dev = _added(stack_runs, "dev", _inject(_opted_in("no-gateway", "inference", "inference-gateway")), env="dev")
    assert [r for r in dev if r.policy == "gateway-fronts-its-endpoints"] == []


def get_jwt(reg: Registration) -> Any:
    return copy.deepcopy(_spec_of(copy.deepcopy(reg))).get("auth", {}).get("jwt")


# --- end to end through tools.cli.preview with a changed stack config ---------------------------------------


def _preview(stack: str, mapping: dict[str, Any]) -> tuple[int, str]:
    console = Console(record=True, width=600, highlight=False, soft_wrap=True)
    code = preview_mod.preview(stack, mapping=mapping, console=console)
    return code, console.export_text()


def _dev_with_redis(transit: bool) -> dict[str, Any]:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:kvCache"] = {"l2Backend": "redis", "redis": {"transitEncryption": transit}}
    mapping["hyperpod-inference:endpoints"][0]["spec"]["kvCacheSpec"]["l2CacheSpec"]["l2CacheBackend"] = "redis"
    return mapping


def test_preview_dev_redis_without_tls_is_stopped_and_with_tls_only_advised() -> None:
    """dev allows a non-TLS Redis in config, the pack does not (redis-encryption is mandatory everywhere)."""
    rg = "aws:elasticache/replicationGroup:ReplicationGroup::kv-cache-rg"
    code, out = _preview("dev", _dev_with_redis(transit=False))
    assert code == 1, out
    assert f"MANDATORY redis-encryption {rg}: transitEncryptionEnabled is not true" in out
    # add-on v1.3.0 ignores l2CacheBackend redis: advised, not blocked
    assert f"ADVISORY known-addon-defect {IEC_TYPE}::endpoints-inference-llama-8b" in out

    code, out = _preview("dev", _dev_with_redis(transit=True))
    assert code == 0, out
    assert "redis-encryption" not in out
    assert "ADVISORY known-addon-defect" in out


# --- parity with the CLI's analyzer ----------------------------------------------------------------------


def _struct(value: dict[str, Any]) -> Any:
    from google.protobuf import struct_pb2

    s = struct_pb2.Struct()
    s.update(json.loads(json.dumps(value, default=str)))  # ints become floats, as on the wire
    return s


def _analyzer_results(regs: list[Registration], env: str) -> set[tuple[str, str, str, str]]:
    """(level, policy, type, name) from pulumi_policy's own analyzer servicer, configured with the env's file.

    This is the code the CLI talks to over gRPC: it proxies props (read-only Mapping/Sequence, unknowns raise),
    sends numbers as floats, unwraps secrets and resolves enforcement from ``Configure``.
    """
    from pulumi.runtime import proto
    from pulumi_policy import EnforcementLevel
    from pulumi_policy.policy import _PolicyAnalyzerServicer

    from policies.pack import PACK_ENFORCEMENT, PACK_NAME

    levels = {"advisory": proto.ADVISORY, "mandatory": proto.MANDATORY, "disabled": proto.DISABLED}
    names = {proto.ADVISORY: "advisory", proto.MANDATORY: "mandatory"}
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", POLICIES, EnforcementLevel(PACK_ENFORCEMENT.value))
    request = proto.ConfigureAnalyzerRequest()
    for policy, entry in policy_pack_config(env).items():
        props = {k: v for k, v in entry.items() if k != "enforcementLevel"}
        request.policyConfig[policy].CopyFrom(
            proto.PolicyConfig(enforcementLevel=levels[entry["enforcementLevel"]], properties=_struct(props))
        )
    servicer.Configure(request, None)
    by_urn = {r.urn: (r.type, r.name) for r in regs}
    out: set[tuple[str, str, str, str]] = set()

    def collect(response: Any, default_urn: str = "") -> None:
        for d in response.diagnostics:
            typ, name = by_urn.get(d.urn or default_urn, ("pulumi:pulumi:Stack", "stack"))
            out.add((names[d.enforcementLevel], d.policyName, typ, name))

    resources = []
    for reg in regs:
        opts = proto.AnalyzerResourceOptions(protect=reg.protect, parent=reg.parent or "")
        props = _struct(reg.inputs)
        collect(
            servicer.Analyze(
                proto.AnalyzeRequest(type=reg.type, properties=props, urn=reg.urn, name=reg.name, options=opts), None
            ),
            reg.urn,
        )
        resource = proto.AnalyzerResource(
            type=reg.type,
            properties=props,
            urn=reg.urn,
            name=reg.name,
            options=opts,
            parent=reg.parent or "",
            dependencies=reg.dependencies,
        )
        for key, urns in reg.property_dependencies.items():
            resource.propertyDependencies[key].urns.extend(urns)
        resources.append(resource)
    collect(servicer.AnalyzeStack(proto.AnalyzeStackRequest(resources=resources), None))
    return out


def _everything_broken(regs: list[Registration]) -> None:
    for rule, (stack, _, bad, _, engine) in ENDPOINT_CASES.items():
        if stack == "prod":
            regs.append(_cr(f"raw-{rule}", bad(), engine=engine))
    for rule, (_, bad_image, _) in RELEASE_REQUIREMENT_CASES.items():
        regs.append(_cr(f"raw-{rule}", _multiprocess(bad_image), engine="vllm"))
    regs.append(_gateway_config(None))
    regs.append(_replication_group(False, False, protect=False))
    _listener_actions("front-door-https", True)(regs)
    _execution_role_named("hpi-prod-operator")(regs)
    _remove("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "node-sg-self-ingress")(regs)
    _eks_public(["0.0.0.0/0"])(regs)
    _set_inputs("eks:index:Cluster", None, version="1.33")(regs)  # in EKS extended support since 2026-07-29
    _set_inputs("eks:index:Cluster", None, deletionProtection=False, encryptionConfigKeyArn="")(regs)
    _set_inputs("aws:sns/topic:Topic", None, kmsMasterKeyId="")(regs)
    pab = next(r for r in regs if r.type == "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    regs.remove(pab)
    # capacity: every group tainted (no controller and no endpoint can run), a fractional GPU request
    cluster = _one(regs, "aws-native:sagemaker:Cluster")
    for group in cluster.inputs["instanceGroups"]:
        group["kubernetesConfig"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
    half = _reference_spec("prod", 2)
    half["worker"]["resources"] = {"requests": {"nvidia.com/gpu": "0.5"}, "limits": {"nvidia.com/gpu": "0.5"}}
    regs.append(_cr("raw-half-gpu", half, engine="sglang"))
    # a node name in the node affinity: cannot be checked offline (endpoint-node-selection-offline)
    pinned = _reference_spec("prod", 2)
    pinned.pop("instanceType")
    pinned["nodeAffinity"] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["hyperpod-i-0a"]}]}
            ]
        }
    }
    regs.append(_cr("raw-pinned", pinned, engine="sglang"))
    regs.append(_opted_in("raw-other-namespace", "team-b", "inference-gateway"))  # gateway-fronts-its-endpoints


@pytest.mark.parametrize("env", ["prod", "dev"])
def test_offline_engine_matches_the_cli_analyzer(stack_runs: dict[str, StackRun], env: str) -> None:
    regs = copy.deepcopy(stack_runs["prod"].registrations)
    _everything_broken(regs)
    offline = {(r.level, r.policy, r.resource_type, r.resource_name) for r in evaluate(POLICIES, regs, env)}
    analyzer = _analyzer_results(regs, env)
    assert offline == analyzer
    # every policy of the pack fired at least once, at the level the env's config gives it
    config = policy_pack_config(env)
    fired = {policy for _, policy, _, _ in analyzer}
    expected = (
        set(RECORDS)
        - FSBP_NAMES
        - {  # test_edge.py breaks those on its own
            "feature-supported-by-addon-version",
            "known-addon-defect",
            "tieredstorage-on-non-p-instance",
            # the one cluster here runs 1.33 for eks-kubernetes-standard-support; the unlisted 1.35 case is
            # tests/test_cluster_config.py::test_unlisted_kubernetes_version_needs_the_explicit_key
            "eks-kubernetes-version-listed",
            # refuses only where a prerequisiteBuilds row exists (none is sourced yet): tests/test_addon_builds.py
            "prerequisite-build-listed",
        }
    )
    expected -= {n for n, r in RECORDS.items() if "global" in r.scope.stacks}  # tests/test_global_gateway.py
    expected -= {  # capacity rules that need the groups untainted (tests/test_capacity.py covers them on the pack)
        "endpoint-pod-fits-node",
        "endpoint-fits-group-capacity",
        "endpoint-fits-group-capacity-at-max",
        "endpoint-on-empty-group",
    }
    if env != "prod":
        expected.discard("l2-redis-wired")  # the injected redis:// URL is allowed outside prod
    expected -= {n for n in RECORDS if config[n]["enforcementLevel"] == "disabled"}  # e.g. prod-only rules
    assert expected <= fired, expected - fired
    assert {(policy, level) for level, policy, _, _ in analyzer} <= {
        (p, config[p]["enforcementLevel"]) for p in RECORDS
    }


@pytest.mark.parametrize("env", ["dev", "staging", "prod"])
def test_config_files_validate_against_each_policys_schema(env: str) -> None:
    """What the CLI checks before the pack runs: every property a config file sets is in the policy's schema."""
    import jsonschema

    config = policy_pack_config(env)
    for policy in POLICIES:
        props = {k: v for k, v in config[policy.name].items() if k != "enforcementLevel"}
        assert config[policy.name]["enforcementLevel"] in ("advisory", "mandatory", "disabled")
        if policy.config_schema is None:
            assert props == {}, policy.name
            continue
        schema = {"type": "object", "properties": policy.config_schema.properties, "additionalProperties": False}
        jsonschema.validate(props, schema)


def test_engine_matches_image_in_the_pack() -> None:
    """The pack applies the config check's function to a rendered resource: an SGLang image labelled vLLM is
    refused naming both; a matching image, a private repository and an unlabelled resource pass."""
    from policies import rules

    def cr(engine: str | None, image: str) -> dict[str, Any]:
        labels = {"hyperpod-inference/engine": engine} if engine else {}
        return {"kind": "InferenceEndpointConfig", "metadata": {"labels": labels}, "spec": {"worker": {"image": image}}}

    ctx = rules.RuleContext(environment="prod", addon_version="v1.5.0-eksbuild.1")
    wrong = rules.engine_matches_image(cr("vllm", "docker.io/lmsysorg/sglang:v0.5.3-cu126"), ctx)
    assert [(str(v), v.path) for v in wrong] == [
        (
            "engine is vllm but the worker image docker.io/lmsysorg/sglang:v0.5.3-cu126 is a sglang image (its "
            "repository names sglang); set engine: sglang, or use a vllm image: the engine decides which checks "
            "apply (the KV cache and kvaware routing need vLLM)",
            "worker.image",
        )
    ]
    assert rules.engine_matches_image(cr("vllm", "lmcache/vllm-openai:v0.3.9"), ctx) == []
    assert rules.engine_matches_image(cr("sglang", "123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:1"), ctx) == []
    assert rules.engine_matches_image(cr(None, "docker.io/lmsysorg/sglang:v0.5.3-cu126"), ctx) == []
    assert rules.RULES["engine-matches-image"].enforcement == {
        "dev": "mandatory",
        "staging": "mandatory",
        "prod": "mandatory",
    }
