"""The ALB front door: authentication before forwarding, TLS, redirect, targets, DNS, logs and config errors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from pulumi.runtime.rpc import _special_secret_sig, _special_sig_key

from components.config.ingress import DEFAULT_TLS_POLICY
from components.config.stackfile import OFFLINE_SECRET_PLACEHOLDER
from tests.conftest import cached_scope, registered, stack_mapping
from tools import mocks
from tools.harness import StackRun, run_stack
from tools.preview import preview

LISTENER = "aws:lb/listener:Listener"
RULE = "aws:lb/listenerRule:ListenerRule"
TG = "aws:lb/targetGroup:TargetGroup"
TGB = "kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding"
ALB = "aws:lb/loadBalancer:LoadBalancer"
RECORD = "aws:route53/record:Record"
ING = "hyperpod-inference:ingress"


def plain(value: Any) -> Any:
    """Registered inputs with secret wrappers removed (the values the provider would receive)."""
    if isinstance(value, dict):
        if value.get(_special_sig_key) == _special_secret_sig:
            return plain(value["value"])
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def inputs(run: StackRun, typ: str, name: str) -> dict[str, Any]:
    return plain(run.named(typ, name).inputs)


@pytest.fixture(scope=cached_scope("module"))
def prod(stack_runs) -> StackRun:
    run = stack_runs["prod"]
    assert run.of_type(ALB), "prod must have the ALB front door"
    return run


def test_https_listener_authenticates_then_forwards(prod: StackRun) -> None:
    https = inputs(prod, LISTENER, "front-door-https")
    assert (https["port"], https["protocol"]) == (443, "HTTPS")
    # FSBP ELB.17 recommends TLS13-1-2-Res (restricted ciphers), not TLS13-1-2-2021-06 (the old default)
    assert https["sslPolicy"] == DEFAULT_TLS_POLICY == "ELBSecurityPolicy-TLS13-1-2-Res-2021-06"
    actions = https["defaultActions"]
    assert [a["type"] for a in actions] == ["authenticate-oidc", "forward"]
    assert [a["order"] for a in actions] == [1, 2]
    oidc = actions[0]["authenticateOidc"]
    assert oidc["issuer"] == "https://login.example.com/oauth2/default"
    assert oidc["tokenEndpoint"] == "https://login.example.com/oauth2/default/v1/token"
    assert oidc["clientId"] == "hpi-prod-front-door"
    assert oidc["onUnauthenticatedRequest"] == "deny"
    assert oidc["scope"] == "openid profile"
    assert oidc["sessionTimeout"] == 3600
    # the catch-all route (no host, no path) is the listener default: llama-70b-kvaware's target group
    kvaware_tg = prod.named(TG, "front-door-tg-llama-70b-kvaware").outputs["arn"]
    assert actions[1]["targetGroupArn"] == kvaware_tg
    validated = prod.named("aws:acm/certificateValidation:CertificateValidation", "front-door-cert-validation")
    assert https["certificateArn"] == validated.outputs["certificateArn"]
    assert https["certificateArn"].startswith("arn:aws:acm:us-east-1:123456789012:certificate/")


def test_host_rule_authenticates_then_forwards(prod: StackRun) -> None:
    rules = prod.of_type(RULE)
    assert len(rules) == 1
    rule = plain(rules[0].inputs)
    assert [a["type"] for a in rule["actions"]] == ["authenticate-oidc", "forward"]
    assert [a["order"] for a in rule["actions"]] == [1, 2]
    assert rule["conditions"] == [{"hostHeader": {"values": ["dpd.inference.example.com"]}}]
    assert rule["actions"][1]["targetGroupArn"] == prod.named(TG, "front-door-tg-llama-70b-dpd").outputs["arn"]
    assert rule["listenerArn"] == prod.named(LISTENER, "front-door-https").outputs["arn"]
    assert rule["priority"] == 10


def test_client_secret_is_a_secret_end_to_end(monkeypatch) -> None:
    """The wire request the engine receives carries clientSecret inside the secret wrapper, never bare."""
    raw: dict[str, dict[str, Any]] = {}
    original = mocks.GraphMonitor.RegisterResource

    def spy(self, request):  # type: ignore[no-untyped-def]
        if request.type in (LISTENER, RULE):
            raw[request.name] = MessageToDict(request.object)
        return original(self, request)

    monkeypatch.setattr(mocks.GraphMonitor, "RegisterResource", spy)
    registered(run_stack("prod"))
    https_secret = raw["front-door-https"]["defaultActions"][0]["authenticateOidc"]["clientSecret"]
    rule_secret = raw["front-door-route-1"]["actions"][0]["authenticateOidc"]["clientSecret"]
    for secret in (https_secret, rule_secret):
        assert secret == {_special_sig_key: _special_secret_sig, "value": OFFLINE_SECRET_PLACEHOLDER}
    # nothing else in the listener is secret: the wrapper sits exactly on the client secret
    assert json.dumps(raw["front-door-https"]).count(_special_secret_sig) == 1


def test_client_secret_output_is_secret() -> None:
    """The component turns the config value into a secret Output before it reaches any resource."""
    from pydantic import SecretStr

    from components.config.ingress import IngressConfig, OidcConfig
    from components.ingress import IngressAlb

    cfg = IngressConfig(
        oidc=OidcConfig(
            issuer="https://idp.example.com",
            authorization_endpoint="https://idp.example.com/authorize",
            token_endpoint="https://idp.example.com/token",
            user_info_endpoint="https://idp.example.com/userinfo",
            client_id="c",
            client_secret=SecretStr("s3cr3t"),
        )
    )
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        out = IngressAlb._client_secret(cfg)
        assert loop.run_until_complete(out.is_secret()) is True
        assert loop.run_until_complete(out.future()) == "s3cr3t"
    finally:
        loop.close()
        asyncio.set_event_loop(None)


def test_http_redirects_to_https(prod: StackRun) -> None:
    http = inputs(prod, LISTENER, "front-door-http")
    assert (http["port"], http["protocol"]) == (80, "HTTP")
    assert http["defaultActions"] == [
        {"type": "redirect", "redirect": {"protocol": "HTTPS", "port": "443", "statusCode": "HTTP_301"}}
    ]


def test_alb_settings_in_prod(prod: StackRun) -> None:
    alb = inputs(prod, ALB, "front-door-alb")
    assert alb["loadBalancerType"] == "application"
    assert alb["internal"] is False
    assert alb["dropInvalidHeaderFields"] is True
    assert alb["enableDeletionProtection"] is True
    assert alb["idleTimeout"] == 300
    public = {s.outputs["arn"].rsplit("/", 1)[1] for s in prod.of_type("aws:ec2/subnet:Subnet") if "public" in s.name}
    assert set(alb["subnets"]) == public and len(public) == 3
    bucket = prod.named("aws:s3/bucket:Bucket", "front-door-logs")
    assert bucket.protect is True
    assert alb["accessLogs"] == {"bucket": bucket.outputs["bucket"], "prefix": "alb", "enabled": True}
    sg = prod.named("aws:ec2/securityGroup:SecurityGroup", "front-door-sg").outputs["arn"].rsplit("/", 1)[1]
    assert alb["securityGroups"] == [sg]


def test_security_group_rules(prod: StackRun) -> None:
    alb_in = sorted(
        (plain(r.inputs)["fromPort"], plain(r.inputs)["cidrIpv4"])
        for r in prod.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.name.startswith("front-door-")
    )
    assert alb_in == [(80, "0.0.0.0/0"), (443, "0.0.0.0/0")]
    egress = {
        r.name: plain(r.inputs)
        for r in prod.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
        if r.name.startswith("front-door-")
    }
    assert egress["front-door-sg-out-8000"]["cidrIpv4"] == "10.64.0.0/16"
    assert egress["front-door-sg-out-8000"]["fromPort"] == 8000


def test_one_target_group_and_binding_per_routed_endpoint(prod: StackRun) -> None:
    tgs = {r.name: plain(r.inputs) for r in prod.of_type(TG)}
    tgbs = {r.name: plain(r.inputs) for r in prod.of_type(TGB)}
    assert set(tgs) == {"front-door-tg-llama-70b-kvaware", "front-door-tg-llama-70b-dpd"}
    assert set(tgbs) == {"front-door-tgb-llama-70b-kvaware", "front-door-tgb-llama-70b-dpd"}
    for endpoint in ("llama-70b-kvaware", "llama-70b-dpd"):
        tg = tgs[f"front-door-tg-{endpoint}"]
        assert (tg["targetType"], tg["protocol"], tg["port"]) == ("ip", "HTTP", 8000)
        assert len(tg["name"]) <= 32
        assert tg["healthCheck"]["path"] == "/health"  # the endpoint spec's loadBalancer.healthCheckPath
        assert tg["loadBalancingAlgorithmType"] == "least_outstanding_requests"
        tgb = tgbs[f"front-door-tgb-{endpoint}"]
        assert tgb["apiVersion"] == "elbv2.k8s.aws/v1beta1" and tgb["kind"] == "TargetGroupBinding"
        # intelligent routing is on for both: the binding targets the operator's router Service, which
        # lives in hyperpod-inference-system (components/config/ingress.py names the sources)
        assert tgb["metadata"]["namespace"] == "hyperpod-inference-system"
        assert tgb["spec"]["serviceRef"] == {"name": f"{endpoint}-inference-routing-service", "port": 8000}
        assert tgb["spec"]["targetType"] == "ip"
        arn = prod.named(TG, f"front-door-tg-{endpoint}").outputs["arn"]
        assert tgb["spec"]["targetGroupARN"] == arn
        sg = prod.named("aws:ec2/securityGroup:SecurityGroup", "front-door-sg").outputs["arn"].rsplit("/", 1)[1]
        # prod names the router pods' port (routes[].targetPort): the binding opens exactly it, from the ALB's SG
        assert tgb["spec"]["networking"]["ingress"] == [
            {"from": [{"securityGroup": {"groupID": sg}}], "ports": [{"protocol": "TCP", "port": 8000}]}
        ]
    # the bindings go through the EKS cluster's provider, not an ambient kubeconfig
    for reg in prod.of_type(TGB):
        # the LB controller's webhook refuses these changes: Pulumi replaces the binding (same name: delete first)
        assert sorted(reg.replace_on_changes) == [
            "spec.ipAddressType",
            "spec.targetGroupARN",
            "spec.targetType",
            "spec.vpcID",
        ]
        assert reg.delete_before_replace is True
        assert reg.provider is not None and "eks" in reg.provider
        # ...and only after the add-on that installs the LB controller and the TargetGroupBinding CRD
        assert any(d.endswith("aws:eks/addon:Addon::inference-operator-addon") for d in reg.dependencies)
        # ...and after the endpoint's custom resource (whose reconcile creates the Service; deleted after it)
        endpoint = reg.name.removeprefix("front-door-tgb-")
        assert any(d.endswith(f"::endpoints-inference-{endpoint}") for d in reg.dependencies), reg.dependencies


def test_alias_records_point_at_the_alb(prod: StackRun) -> None:
    alb = prod.named(ALB, "front-door-alb").outputs
    for host in ("api.inference.example.com", "dpd.inference.example.com"):
        rec = inputs(prod, RECORD, f"front-door-alias-{host}")
        assert rec["type"] == "A" and rec["name"] == host and rec["zoneId"] == "Z0EXAMPLE1HPIPROD"
        assert rec["aliases"] == [{"name": alb["dnsName"], "zoneId": alb["zoneId"], "evaluateTargetHealth": True}]


def test_certificate_is_dns_validated_in_the_zone(prod: StackRun) -> None:
    cert = inputs(prod, "aws:acm/certificate:Certificate", "front-door-cert")
    assert cert["domainName"] == "api.inference.example.com"
    assert cert["subjectAlternativeNames"] == ["dpd.inference.example.com"]
    assert cert["validationMethod"] == "DNS"
    records = [r for r in prod.of_type(RECORD) if r.name.startswith("front-door-cert-validation-")]
    assert len(records) == 2
    for rec in records:
        assert rec.inputs["type"] == "CNAME" and rec.inputs["records"][0].endswith(".acm-validations.aws.")
    validation = inputs(prod, "aws:acm/certificateValidation:CertificateValidation", "front-door-cert-validation")
    assert sorted(validation["validationRecordFqdns"]) == sorted(r.outputs["fqdn"] for r in records)


def test_access_log_bucket_is_encrypted_private_and_tls_only(prod: StackRun) -> None:
    sse = inputs(
        prod,
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "front-door-logs-sse",
    )
    assert sse["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
    block = inputs(prod, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "front-door-logs-public-access")
    assert all(block[k] for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"))
    policy = json.loads(inputs(prod, "aws:s3/bucketPolicy:BucketPolicy", "front-door-logs-policy")["policy"])
    write, deny = policy["Statement"]
    assert write["Principal"] == {"Service": "logdelivery.elasticloadbalancing.amazonaws.com"}
    assert write["Action"] == "s3:PutObject"
    assert write["Resource"].endswith("/alb/AWSLogs/123456789012/*")
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def _dev_with_ingress(**overrides: Any) -> dict[str, Any]:
    mapping = stack_mapping("dev")
    mapping[ING] = {
        "enabled": True,
        "domainName": "llm.dev.example.com",
        "hostedZoneId": "Z0EXAMPLEDEV",
        "hostedZoneName": "dev.example.com",
        "authentication": "cognito",
        "cognito": {
            "userPoolArn": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_AbCdEf123",
            "userPoolClientId": "3n4b5urk1ft4fl3mg5e62d9ado",
            "userPoolDomain": "hpi-dev",
            "onUnauthenticatedRequest": "authenticate",
        },
        "certificateArn": "arn:aws:acm:us-west-2:123456789012:certificate/0d3c6b1e-1111-2222-3333-444455556666",
        "routes": [{"endpoint": "llama-8b", "path": "/v1/*"}],
        **overrides,
    }
    return mapping


def test_internal_cognito_alb_in_dev(run) -> None:
    result = registered(run("dev", _dev_with_ingress()))
    alb = inputs(result, ALB, "front-door-alb")
    assert alb["internal"] is True and alb["enableDeletionProtection"] is False
    private = {
        s.outputs["arn"].rsplit("/", 1)[1] for s in result.of_type("aws:ec2/subnet:Subnet") if "private" in s.name
    }
    assert set(alb["subnets"]) == private
    https = inputs(result, LISTENER, "front-door-https")
    assert https["certificateArn"].endswith("0d3c6b1e-1111-2222-3333-444455556666")
    assert not result.of_type("aws:acm/certificate:Certificate"), "an existing certificate ARN is used as is"
    # no catch-all: unmatched requests get a 404 after authentication
    assert [a["type"] for a in https["defaultActions"]] == ["authenticate-cognito", "fixed-response"]
    assert https["defaultActions"][0]["authenticateCognito"]["onUnauthenticatedRequest"] == "authenticate"
    rule = plain(result.of_type(RULE)[0].inputs)
    assert [a["type"] for a in rule["actions"]] == ["authenticate-cognito", "forward"]
    assert rule["conditions"] == [{"pathPattern": {"values": ["/v1/*"]}}]
    ingress = [
        plain(r.inputs)
        for r in result.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.name.startswith("front-door-")
    ]
    assert {r["cidrIpv4"] for r in ingress} == {"10.192.0.0/16"}  # internal default: the VPC only
    assert len(result.of_type(TG)) == len(result.of_type(TGB)) == 1


def test_waf_association_when_configured(run) -> None:
    acl = "arn:aws:wafv2:us-west-2:123456789012:regional/webacl/hpi-dev/1a2b3c4d"
    result = registered(run("dev", _dev_with_ingress(wafWebAclArn=acl)))
    waf = inputs(result, "aws:wafv2/webAclAssociation:WebAclAssociation", "front-door-waf")
    assert waf["webAclArn"] == acl
    assert waf["resourceArn"] == result.named(ALB, "front-door-alb").outputs["arn"]


def test_authentication_none_is_rendered_and_fails_the_policy(capsys) -> None:
    mapping = stack_mapping("prod")
    mapping[ING]["authentication"] = "none"
    del mapping[ING]["oidc"]
    result = registered(run_stack("prod", mapping))
    https = inputs(result, LISTENER, "front-door-https")
    assert [a["type"] for a in https["defaultActions"]] == ["forward"]
    assert preview("prod", mapping=mapping) == 1
    out = capsys.readouterr().out
    assert "MANDATORY alb-requires-authentication" in out


def _set(path: list[Any], value: Any) -> Any:
    def mutate(m: dict[str, Any]) -> None:
        node = m[ING]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _drop(path: list[Any]) -> Any:
    def mutate(m: dict[str, Any]) -> None:
        node = m[ING]
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            _set(["oidc", "tokenEndpoint"], "http://login.example.com/token"),
            "hyperpod-inference:ingress.oidc.tokenEndpoint: must be an https:// URL",
        ),
        (
            _set(["oidc", "issuer"], "http://login.example.com"),
            "hyperpod-inference:ingress.oidc.issuer: must be an https:// URL",
        ),
        (_drop(["oidc", "clientSecret"]), "hyperpod-inference:ingress.oidc.clientSecret: required when authentication"),
        (
            _set(["oidc", "clientSecret"], "plain-text-secret"),
            "hyperpod-inference:ingress.oidc.clientSecret: must be a Pulumi secret",
        ),
        (
            _set(["domainName"], "api.other.example.org"),
            "hyperpod-inference:ingress.domainName: api.other.example.org is outside the hosted zone",
        ),
        (
            _set(["routes", 1, "host"], "dpd.example.net"),
            "hyperpod-inference:ingress.routes[1].host: dpd.example.net is outside the hosted zone",
        ),
        (
            _set(["routes", 1, "endpoint"], "llama-405b"),
            "hyperpod-inference:ingress.routes[1].endpoint: unknown endpoint 'llama-405b'",
        ),
        (
            _set(["sslPolicy"], "ELBSecurityPolicy-2016-08"),
            "hyperpod-inference:ingress.sslPolicy: 'ELBSecurityPolicy-2016-08' is not a TLS 1.2+",
        ),
        (
            _set(["sslPolicy"], "ELBSecurityPolicy-TLS13-1-2-2021-06"),
            "hyperpod-inference:ingress.sslPolicy: prod: security policy ELBSecurityPolicy-TLS13-1-2-2021-06 is not "
            "one FSBP ELB.17 recommends; use one of ELBSecurityPolicy-TLS13-1-3-2021-06, ",
        ),
        (_drop(["hostedZoneName"]), "hyperpod-inference:ingress.hostedZoneName: required when ingress is enabled"),
        (_drop(["allowedCidrs"]), "hyperpod-inference:ingress.allowedCidrs: required for an internet-facing ALB"),
        (_drop(["oidc"]), "hyperpod-inference:ingress.oidc: required when authentication is oidc"),
        (_set(["authentication"], "cognito"), "hyperpod-inference:ingress.cognito: required when authentication"),
        (
            _set(["routes", 1], {"endpoint": "llama-70b-dpd"}),
            "hyperpod-inference:ingress.routes[1]: a second catch-all",
        ),
        (_set(["oidc", "clientSd"], "x"), "hyperpod-inference:ingress.oidc.clientSd: unknown key"),
    ],
    ids=[
        "oidc-http-token-endpoint",
        "oidc-http-issuer",
        "missing-client-secret",
        "plaintext-client-secret",
        "domain-outside-zone",
        "route-host-outside-zone",
        "unknown-endpoint",
        "tls10-policy",
        "elb17-not-recommended-in-prod",
        "no-zone-name",
        "internet-facing-without-cidrs",
        "oidc-missing",
        "cognito-missing",
        "two-catch-alls",
        "misspelt-key",
    ],
)
def test_config_errors_name_the_key(mutate, expected: str, capsys) -> None:
    mapping = stack_mapping("prod")
    mutate(mapping)
    code = preview("prod", mapping=mapping)
    out = capsys.readouterr().out
    assert code == 2, out
    assert expected in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("domain", "host", "expected"),
    [
        (
            "api.notexample.com",
            "dpd.example.com",
            ["hyperpod-inference:ingress.domainName: api.notexample.com is outside the hosted zone example.com; use a name in that zone"],
        ),
        (
            "api.example.com",
            "dpd.notexample.com",
            ["hyperpod-inference:ingress.routes[1].host: dpd.notexample.com is outside the hosted zone example.com; use a name in that zone"],
        ),
        ("example.com", "a.b.example.com", []),  # the zone's apex and a deeper name are inside it
    ],
    ids=["domain-ends-with-the-zone-name", "host-ends-with-the-zone-name", "apex-and-deeper"],
)  # fmt: skip
def test_a_name_ending_with_the_zone_name_is_not_in_the_zone(domain: str, host: str, expected: list[str]) -> None:
    """``api.notexample.com`` ends with ``example.com`` but is not in that zone: only a dot boundary counts."""
    mapping = stack_mapping("prod")
    mapping[ING].update(hostedZoneName="example.com", domainName=domain)
    mapping[ING]["routes"][1]["host"] = host
    result = run_stack("prod", mapping)
    issues = [i.render() for i in result.config_error.issues] if result.config_error is not None else []
    assert issues == expected
    if not expected:
        registered(result)


# --- TargetGroupBinding target (issue 13, point 9) -----------------------------------------------------------


def _prod_without_router(**route: Any) -> dict[str, Any]:
    """prod with intelligent routing switched off on the kvaware endpoint (a worker-pod target)."""
    mapping = stack_mapping("prod")
    ep = next(e for e in mapping["hyperpod-inference:endpoints"] if e["name"] == "llama-70b-kvaware")
    ep["spec"].pop("intelligentRoutingSpec")
    ep["spec"]["kvCacheSpec"] = {"enableL1Cache": True}
    mapping[ING]["routes"][0] = {"endpoint": "llama-70b-kvaware", **route}
    return mapping


def _tgb(result: StackRun, endpoint: str) -> dict[str, Any]:
    return plain(registered(result).named(TGB, f"front-door-tgb-{endpoint}").inputs)


def test_worker_target_with_configured_service_binds_in_the_endpoint_namespace(run) -> None:
    result = run("prod", _prod_without_router(serviceName="llama-70b-kvaware-svc", servicePort=8080))
    tgb = _tgb(result, "llama-70b-kvaware")
    assert tgb["metadata"]["namespace"] == "inference"
    assert tgb["spec"]["serviceRef"] == {"name": "llama-70b-kvaware-svc", "port": 8080}
    sg = result.named("aws:ec2/securityGroup:SecurityGroup", "front-door-sg").outputs["arn"].rsplit("/", 1)[1]
    assert tgb["spec"]["networking"]["ingress"] == [
        {"from": [{"securityGroup": {"groupID": sg}}], "ports": [{"protocol": "TCP", "port": 8000}]}
    ]
    reg = result.named(TGB, "front-door-tgb-llama-70b-kvaware")
    assert any(d.endswith("kubernetes:core/v1:Namespace::endpoints-ns-inference") for d in reg.dependencies)
    assert any(d.endswith("::endpoints-inference-llama-70b-kvaware") for d in reg.dependencies)


def test_service_namespace_override(run) -> None:
    mapping = stack_mapping("prod")
    mapping[ING]["routes"][0]["serviceNamespace"] = "routers"
    mapping[ING]["routes"][0]["serviceName"] = "kv-router"
    tgb = _tgb(run("prod", mapping), "llama-70b-kvaware")
    assert tgb["metadata"]["namespace"] == "routers"
    assert tgb["spec"]["serviceRef"] == {"name": "kv-router", "port": 8000}


@pytest.mark.parametrize(
    ("route", "missing"),
    [
        ({}, {"serviceName", "servicePort"}),
        ({"serviceName": "svc"}, {"servicePort"}),
        ({"servicePort": 8000}, {"serviceName"}),
    ],
    ids=["neither", "name-only", "port-only"],
)
def test_prod_worker_target_requires_service_name_and_port(run, route: dict[str, Any], missing: set[str]) -> None:
    result = run("prod", _prod_without_router(**route))
    assert result.config_error is not None and result.registrations == []
    keys = {i.path for i in result.config_error.issues}
    assert {k.rsplit(".", 1)[1] for k in keys if k.startswith("ingress.routes[0].")} == missing
    assert all(
        "required in prod" in i.message for i in result.config_error.issues if i.path.startswith("ingress.routes[0]")
    )


def _egress(result: StackRun) -> dict[str, tuple[int, int, str]]:
    return {
        r.name: (r.inputs["fromPort"], r.inputs["toPort"], r.inputs["cidrIpv4"])
        for r in result.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
        if r.name.startswith("front-door-sg-out-") and r.name != "front-door-sg-out-idp"
    }


def _binding_range(tgb: dict[str, Any]) -> tuple[int, int]:
    """What the LB controller opens on the pods for a binding: the named port, else 0-65535 (LBC@225f4456
    pkg/networking/networking_manager.go:436-451)."""
    (rule,) = tgb["spec"]["networking"]["ingress"]
    (port,) = rule["ports"]
    assert port["protocol"] == "TCP"
    return (port["port"], port["port"]) if "port" in port else (0, 65535)


def test_router_target_without_a_port_opens_all_tcp_on_both_sides(run) -> None:
    """Outside prod the router's port may stay unknown: the ALB may then reach every TCP port in the VPC, exactly
    what the binding opens on the router pods (it used to allow egress to the worker port only, so health checks
    failed whenever the router listened elsewhere)."""
    result = registered(run("dev", _dev_with_ingress()))
    tgb = _tgb(result, "llama-8b")
    sg = result.named("aws:ec2/securityGroup:SecurityGroup", "front-door-sg").outputs["arn"].rsplit("/", 1)[1]
    assert tgb["spec"]["networking"]["ingress"] == [
        {"from": [{"securityGroup": {"groupID": sg}}], "ports": [{"protocol": "TCP"}]}
    ]
    assert _egress(result) == {"front-door-sg-out-all-tcp": (0, 65535, "10.192.0.0/16")}


def test_router_target_port_is_opened_on_both_sides(run) -> None:
    mapping = _dev_with_ingress(routes=[{"endpoint": "llama-8b", "path": "/v1/*", "targetPort": 9000}])
    result = registered(run("dev", mapping))
    tgb = _tgb(result, "llama-8b")
    assert tgb["spec"]["networking"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 9000}]
    assert _egress(result) == {"front-door-sg-out-9000": (9000, 9000, "10.192.0.0/16")}
    # the target group keeps the worker port as its default; ip targets are registered with the pod port
    assert inputs(result, TG, "front-door-tg-llama-8b")["port"] == 8000


@pytest.mark.parametrize("stack", ["prod", "staging"])
def test_every_binding_range_is_an_alb_egress_rule(stack_runs: dict[str, StackRun], stack: str) -> None:
    result = stack_runs[stack]
    tgbs = [plain(r.inputs) for r in result.of_type(TGB)]
    assert tgbs, f"{stack} has no TargetGroupBinding"
    egress = {(low, high) for low, high, _ in _egress(result).values()}
    for tgb in tgbs:
        low, high = _binding_range(tgb)
        assert any(a <= low and high <= b for a, b in egress), (tgb["metadata"]["name"], egress)


def test_prod_router_target_requires_the_target_port(run) -> None:
    mapping = stack_mapping("prod")
    del mapping[ING]["routes"][0]["targetPort"]
    result = run("prod", mapping)
    assert result.config_error is not None and result.registrations == []
    issues = {i.path: i.message for i in result.config_error.issues}
    assert set(issues) == {"ingress.routes[0].targetPort"}
    assert issues["ingress.routes[0].targetPort"].startswith(
        "required in prod for router targets: no source names the port the router pods behind "
        "llama-70b-kvaware-inference-routing-service listen on"
    )


def test_prod_router_target_requires_only_the_port(run) -> None:
    mapping = stack_mapping("prod")
    del mapping[ING]["routes"][1]["servicePort"]
    result = run("prod", mapping)
    assert result.config_error is not None
    issues = {i.path: i.message for i in result.config_error.issues}
    assert set(issues) == {"ingress.routes[1].servicePort"}
    assert "llama-70b-dpd-inference-routing-service" in issues["ingress.routes[1].servicePort"]


def test_outside_prod_defaults_apply_without_config(run) -> None:
    """dev: the router target's port and a worker target's Service fall back to defaults (no config error)."""
    tgb = _tgb(run("dev", _dev_with_ingress()), "llama-8b")
    assert tgb["metadata"]["namespace"] == "hyperpod-inference-system"
    assert tgb["spec"]["serviceRef"] == {"name": "llama-8b-inference-routing-service", "port": 8000}

    mapping = _dev_with_ingress()
    spec = mapping["hyperpod-inference:endpoints"][0]["spec"]
    spec.pop("intelligentRoutingSpec")
    tgb = _tgb(run("dev", mapping), "llama-8b")
    assert tgb["metadata"]["namespace"] == "inference"
    assert tgb["spec"]["serviceRef"] == {"name": "llama-8b", "port": 8000}
