"""InferenceGateway and the serving layer as the real program wires it (prod: gateway with JWT, sglang endpoint)."""

from __future__ import annotations

from typing import Any

from tests.conftest import registered, stack_mapping
from tools.plan.harness import StackRun

GW_TYPE = "kubernetes:inference.sagemaker.aws.amazon.com/v1alpha1:InferenceGatewayConfig"
IEC_TYPE = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
NS_TYPE = "kubernetes:core/v1:Namespace"
GW = "hyperpod-inference:gateway"
EPS = "hyperpod-inference:endpoints"
SECRET_SIG = "4dabf18193072939515e22adb298388d"


def _spec(value: Any) -> Any:
    return value["value"] if isinstance(value, dict) and SECRET_SIG in value else value


def _addon_urns(run: StackRun) -> set[str]:
    """The inference add-on component's EKS add-on (a dependency on the component expands to it)."""
    (component,) = [r for r in run.registrations if r.type == "hyperpod:operator:InferenceOperatorAddon"]
    urns = {r.urn for r in run.registrations if r.type == "aws:eks/addon:Addon" and r.parent == component.urn}
    assert urns
    return urns


def test_prod_gateway_config_with_jwt(stack_runs: dict[str, StackRun]) -> None:
    run = stack_runs["prod"]
    (gw,) = run.of_type(GW_TYPE)
    assert gw.inputs["apiVersion"] == "inference.sagemaker.aws.amazon.com/v1alpha1"
    assert gw.inputs["metadata"]["name"] == "inference-gateway"
    # with the endpoint it fronts (qwen-sglang in `inference`): an InferencePool selects pods in its own namespace
    assert gw.inputs["metadata"]["namespace"] == "inference"
    provider = gw.inputs["spec"]["auth"]["jwt"]["provider"]
    assert provider["issuer"] == "https://login.example.com/oauth2/default"
    assert provider["remoteJWKS"] == {"uri": "https://login.example.com/oauth2/default/v1/keys"}
    assert provider["audiences"] == ["hpi-prod-inference"]
    (scheduler,) = gw.inputs["spec"]["schedulers"]
    assert scheduler["engineType"] == "sglang" and scheduler["modelName"] == "Qwen2.5-7B-Instruct"
    # Ordered after the inference add-on (its CRD and gateway controller) and on the cluster's provider.
    assert gw.provider is not None and gw.provider.startswith("urn:")
    assert _addon_urns(run) <= set(gw.dependencies)
    # ...and after the Namespace this package creates for it and its endpoints
    assert run.named(NS_TYPE, "endpoints-ns-inference").urn in gw.dependencies
    assert run.outputs["inferenceGatewayNamespace"] == "inference"


def test_prod_endpoints_wired_after_the_addon_with_the_tls_bucket(stack_runs: dict[str, StackRun]) -> None:
    run = stack_runs["prod"]
    crs = {r.inputs["metadata"]["name"]: r for r in run.of_type(IEC_TYPE)}
    assert set(crs) == {"llama-70b-kvaware", "llama-70b-dpd", "qwen-sglang"}
    addon_urns = _addon_urns(run)
    tls_bucket = run.outputs["tlsCertificateBucket"]
    for name, cr in crs.items():
        assert addon_urns <= set(cr.dependencies), name
        spec = _spec(cr.inputs["spec"])
        assert spec["tlsConfig"]["tlsCertificateOutputS3Uri"] == f"s3://{tls_bucket}/endpoints/inference/{name}"
        assert cr.inputs["metadata"]["labels"]["hyperpod-inference/engine"] in ("vllm", "sglang")
    # Only the endpoint served through the gateway waits for the InferenceGatewayConfig.
    (gw,) = run.of_type(GW_TYPE)
    assert gw.urn in crs["qwen-sglang"].dependencies
    assert gw.urn not in crs["llama-70b-kvaware"].dependencies
    sglang = _spec(crs["qwen-sglang"].inputs["spec"])
    assert sglang["inferenceGateway"] == {"enabled": True, "name": "inference-gateway"}
    assert "intelligentRoutingSpec" not in sglang and "kvCacheSpec" not in sglang
    assert crs["qwen-sglang"].inputs["metadata"]["labels"]["hyperpod-inference/engine"] == "sglang"
    # Only the endpoint that asked for redis carries the URL, whose credentials are Secret references only.
    assert str(
        _spec(crs["llama-70b-kvaware"].inputs["spec"])["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"]
    ).startswith("rediss://$(HPI_KV_CACHE_USERNAME):$(HPI_KV_CACHE_PASSWORD)@")
    namespaces = [
        r for r in run.registrations if r.type == "kubernetes:core/v1:Namespace" and r.name.startswith("endpoints-ns-")
    ]
    assert [n.inputs["metadata"]["name"] for n in namespaces] == ["inference"]


def test_dev_has_no_gateway(stack_runs: dict[str, StackRun]) -> None:
    run = stack_runs["dev"]
    assert run.of_type(GW_TYPE) == []
    assert len(run.of_type(IEC_TYPE)) == 1


def _rendered_issues(run, mapping: dict[str, Any]) -> list[str]:
    result = run("prod", mapping)
    assert result.config_error is not None and result.registrations == []
    return [i.render() for i in result.config_error.issues]


def test_prod_gateway_without_jwt_is_a_config_error(run) -> None:
    mapping = stack_mapping("prod")
    del mapping["hyperpod-inference:gateway"]["spec"]["auth"]
    issues = _rendered_issues(run, mapping)
    assert any(i.startswith("hyperpod-inference:gateway.spec.auth.jwt.provider: prod requires JWT") for i in issues), (
        issues
    )
    # Named by its rule, like the endpoint rule errors (the policy pack's gateway-requires-jwt).
    [jwt] = [i for i in issues if i.startswith("hyperpod-inference:gateway.spec.auth.jwt.provider:")]
    assert jwt.endswith("[gateway-requires-jwt]"), jwt
    assert "spec.auth.jwt is not set" in jwt


def test_gateway_without_jwt_outside_prod_is_no_config_error(run) -> None:
    mapping = stack_mapping("prod")
    del mapping["hyperpod-inference:gateway"]["spec"]["auth"]
    mapping["hyperpod-inference:environment"] = "staging"
    result = run("prod", mapping)
    issues = [i.render() for i in result.config_error.issues] if result.config_error is not None else []
    assert not any("[gateway-requires-jwt]" in i for i in issues), issues


def test_jwt_without_audiences_or_claims_is_a_config_error(run) -> None:
    mapping = stack_mapping("prod")
    del mapping["hyperpod-inference:gateway"]["spec"]["auth"]["jwt"]["provider"]["audiences"]
    issues = _rendered_issues(run, mapping)
    assert any(i.startswith("hyperpod-inference:gateway.spec.auth.jwt.provider") for i in issues), issues


def test_endpoint_opting_into_a_disabled_gateway_is_a_config_error(run) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:gateway"]["enabled"] = False
    issues = _rendered_issues(run, mapping)
    assert any(i.startswith("hyperpod-inference:endpoints[2].spec.inferenceGateway.enabled") for i in issues), issues


def test_gateway_needs_the_v2_addon(run) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:operator"]["addonVersion"] = "v1.4.0-eksbuild.1"
    issues = _rendered_issues(run, mapping)
    assert any(
        i.startswith("hyperpod-inference:gateway.enabled: the managed Inference Gateway needs") for i in issues
    ), issues


# --- the gateway's namespace (issue 23 item 3) -------------------------------------------------------------


def _qwen(mapping: dict[str, Any]) -> dict[str, Any]:
    endpoint: dict[str, Any] = next(e for e in mapping[EPS] if e["name"] == "qwen-sglang")
    return endpoint


def test_explicit_system_namespace_away_from_its_endpoint_is_a_config_error(run) -> None:
    mapping = stack_mapping("prod")
    mapping[GW]["namespace"] = "hyperpod-inference-system"
    issues = _rendered_issues(run, mapping)
    assert issues == [
        "hyperpod-inference:endpoints[2].namespace: inference, but gateway.namespace is hyperpod-inference-system: "
        "the gateway's InferencePools select pods in their own namespace only, so this endpoint would get no "
        "traffic; put both in one namespace"
    ]


def test_opted_in_endpoints_in_two_namespaces_are_named(run) -> None:
    mapping = stack_mapping("prod")
    second = {**_qwen(mapping), "name": "qwen-b", "namespace": "team-b"}
    mapping[EPS].append(second)
    issues = [i for i in _rendered_issues(run, mapping) if ".namespace:" in i]
    listed = "endpoints[2] qwen-sglang in inference, endpoints[3] qwen-b in team-b"
    assert [i.split(":", 2)[1] for i in issues] == ["endpoints[2].namespace", "endpoints[3].namespace"]
    assert all(listed in i and "must share one namespace" in i for i in issues), issues


def test_gateway_follows_its_endpoints_into_another_namespace(run) -> None:
    mapping = stack_mapping("prod")
    _qwen(mapping)["namespace"] = "team-b"
    result = registered(run("prod", mapping))
    (gw,) = result.of_type(GW_TYPE)
    assert gw.inputs["metadata"]["namespace"] == "team-b"
    assert result.named(NS_TYPE, "endpoints-ns-team-b").urn in gw.dependencies
    assert result.outputs["globalGatewayMember"]["namespace"] == "team-b"


def test_gateway_without_opted_in_endpoints_needs_a_namespace_and_gets_it_created(run) -> None:
    mapping = stack_mapping("prod")
    opt_in = _qwen(mapping)["spec"].pop("inferenceGateway")
    assert _rendered_issues(run, mapping) == [
        "hyperpod-inference:gateway.namespace: required when no endpoint opts into the gateway "
        "(spec.inferenceGateway.enabled): the namespace of the models it fronts (an InferencePool selects pods in "
        "its own namespace only)",
        # on a cluster this stack creates, nothing else can serve the scheduler's model (issue 25)
        "hyperpod-inference:gateway.spec.schedulers[0].modelName: 'Qwen2.5-7B-Instruct' is served by no endpoint of "
        "this stack that opts into the gateway; served: none (no endpoint sets spec.inferenceGateway.enabled)",
    ]
    # the gateway goes where its model runs, and waits for that Namespace
    _qwen(mapping)["spec"]["inferenceGateway"] = opt_in
    _qwen(mapping)["namespace"] = "models"
    mapping[GW]["namespace"] = "models"
    result = registered(run("prod", mapping))
    (gw,) = result.of_type(GW_TYPE)
    assert gw.inputs["metadata"]["namespace"] == "models"
    assert result.named(NS_TYPE, "endpoints-ns-models").urn in gw.dependencies


def test_opted_in_endpoint_must_name_this_gateway(run) -> None:
    mapping = stack_mapping("prod")
    _qwen(mapping)["spec"]["inferenceGateway"] = {"enabled": True}
    (issue,) = _rendered_issues(run, mapping)
    assert issue == (
        "hyperpod-inference:endpoints[2].spec.inferenceGateway.name: names no gateway (the operator then generates "
        "inf-igw-<uuid>); this stack's gateway is 'inference-gateway': any other name makes the operator create a "
        "gateway without this stack's spec (no JWT authentication); set name: inference-gateway"
    )
    _qwen(mapping)["spec"]["inferenceGateway"] = {"enabled": True, "name": "other"}
    (issue,) = _rendered_issues(run, mapping)
    assert issue.startswith("hyperpod-inference:endpoints[2].spec.inferenceGateway.name: names 'other';")
