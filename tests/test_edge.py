"""Issue 17, edge and baselines: the WebACL, flow logs, the default security group, S3 access logs and
lifecycle rules as registered, their config errors, and each new FSBP policy caught alone on a variant of the
reference graph and passing on its nearest valid variant (at the levels of their records, policies/records/<name>.yaml,
written out here as literals)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

import policies.engine as engine
from policies.engine import PolicyResult, evaluate
from policies.pack import POLICIES
from tests.conftest import cached_scope, registered, stack_mapping
from tests.test_ingress import _dev_with_ingress, inputs
from tests.test_policies import _analyzer_results
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration

WEBACL = "aws:wafv2/webAcl:WebAcl"
ASSOC = "aws:wafv2/webAclAssociation:WebAclAssociation"
WAF_LOGGING = "aws:wafv2/webAclLoggingConfiguration:WebAclLoggingConfiguration"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
ALB = "aws:lb/loadBalancer:LoadBalancer"
VPC = "aws:ec2/vpc:Vpc"
FLOW_LOG = "aws:ec2/flowLog:FlowLog"
DEFAULT_SG = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
BUCKET = "aws:s3/bucket:Bucket"
BUCKET_LOGGING = "aws:s3/bucketLogging:BucketLogging"
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
ROLE = "aws:iam/role:Role"
REPLICATION_GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"
ING = "hyperpod-inference:ingress"
OBS = "hyperpod-inference:observability"

NEW_POLICIES = {
    "alb-waf-attached",
    "vpc-flow-logs-enabled",
    "default-security-group-closed",
    "s3-bucket-access-logging",
    "s3-bucket-lifecycle-rules",
    "elasticache-automatic-backups",
    "alb-tls-policy-recommended",
}
LISTENER = "aws:lb/listener:Listener"


@pytest.fixture(scope=cached_scope("module"))
def prod(stack_runs: dict[str, StackRun]) -> StackRun:
    return stack_runs["prod"]


def _rules(run: StackRun) -> dict[str, dict[str, Any]]:
    acl = inputs(run, WEBACL, "edge-waf-acl")
    return {r["name"]: r for r in acl["rules"]}


# --- the WebACL in prod's plan ------------------------------------------------------------------------


def test_prod_webacl_rate_limits_per_ip_and_per_caller(prod: StackRun) -> None:
    acl = inputs(prod, WEBACL, "edge-waf-acl")
    assert acl["scope"] == "REGIONAL"
    assert acl["name"] == "hpi-prod-front-door"
    assert acl["defaultAction"] == {"allow": {}}
    rules = _rules(prod)
    assert [r["name"] for r in acl["rules"]] == [
        "rate-limit-caller",
        "rate-limit-ip",
        "aws-common",
        "aws-known-bad-inputs",
        "aws-ip-reputation",
        "prompt-body-rules-outside-inference",
    ]
    caller = rules["rate-limit-caller"]
    assert caller["priority"] == 10
    assert caller["statement"]["rateBasedStatement"] == {
        "limit": 300,
        "evaluationWindowSec": 60,
        "aggregateKeyType": "CUSTOM_KEYS",
        "customKeys": [
            {"ip": {}},
            {"header": {"name": "authorization", "textTransformations": [{"priority": 0, "type": "NONE"}]}},
        ],
    }
    per_ip = rules["rate-limit-ip"]
    assert per_ip["statement"]["rateBasedStatement"] == {
        "limit": 2000,
        "evaluationWindowSec": 300,
        "aggregateKeyType": "IP",
    }
    for rule in (caller, per_ip):
        assert rule["action"] == {
            "block": {
                "customResponse": {
                    "responseCode": 429,
                    "customResponseBodyKey": "rate-limited",
                    "responseHeaders": [{"name": "retry-after", "value": "60"}],
                }
            }
        }
    assert acl["customResponseBodies"] == [
        {
            "key": "rate-limited",
            "content": '{"error":"rate limit exceeded","retryAfterSeconds":60}',
            "contentType": "APPLICATION_JSON",
        }
    ]


def test_prod_webacl_counts_the_8kb_body_size_rule_instead_of_blocking(prod: StackRun) -> None:
    common = _rules(prod)["aws-common"]
    assert common["overrideAction"] == {"none": {}}
    assert common["statement"]["managedRuleGroupStatement"] == {
        "name": "AWSManagedRulesCommonRuleSet",
        "vendorName": "AWS",
        "ruleActionOverrides": [
            {"name": rule, "actionToUse": {"count": {}}}
            for rule in (
                "SizeRestrictions_BODY",
                "CrossSiteScripting_BODY",
                "GenericLFI_BODY",
                "GenericRFI_BODY",
                "EC2MetaDataSSRF_BODY",
            )
        ],
    }
    groups = {
        r["statement"]["managedRuleGroupStatement"]["name"]
        for r in _rules(prod).values()
        if "managedRuleGroupStatement" in r["statement"]
    }
    assert groups == {
        "AWSManagedRulesCommonRuleSet",
        "AWSManagedRulesKnownBadInputsRuleSet",
        "AWSManagedRulesAmazonIpReputationList",
    }


def test_prod_webacl_is_associated_with_the_alb_and_logs_to_aws_waf_logs(prod: StackRun) -> None:
    acl = prod.named(WEBACL, "edge-waf-acl")
    alb = prod.named(ALB, "front-door-alb")
    assoc = inputs(prod, ASSOC, "front-door-waf")
    assert assoc["resourceArn"] == alb.outputs["arn"]
    assert assoc["webAclArn"] == acl.outputs["arn"]
    group = inputs(prod, LOG_GROUP, "edge-waf-logs")
    assert group["name"] == "aws-waf-logs-hpi-prod"
    assert group["retentionInDays"] == 365
    logging = inputs(prod, WAF_LOGGING, "edge-waf-logging")
    assert logging["resourceArn"] == acl.outputs["arn"]
    assert logging["logDestinationConfigs"] == ["arn:aws:logs:us-east-1:123456789012:log-group:aws-waf-logs-hpi-prod"]
    assert logging["redactedFields"] == [
        {"singleHeader": {"name": "authorization"}},
        {"singleHeader": {"name": "x-api-key"}},
    ]


BEARER_KEYS = [
    {"ip": {}},
    {"header": {"name": "authorization", "textTransformations": [{"priority": 0, "type": "NONE"}]}},
]


def test_the_per_caller_budget_counts_each_bearer_token_of_the_jwt_routes(prod: StackRun) -> None:
    """prod's routes verify JWTs, which programs send as `Authorization: Bearer <token>`: the WebACL associated with
    that ALB counts each (client IP, Authorization value) on its own budget, untransformed (two tokens are two
    callers), and redacts the header from its logs."""
    https = inputs(prod, LISTENER, "front-door-https")
    assert https["defaultActions"][0]["type"] == "jwt-validation"
    assoc = inputs(prod, ASSOC, "front-door-waf")
    assert assoc["resourceArn"] == prod.named(ALB, "front-door-alb").outputs["arn"] == https["loadBalancerArn"]
    assert assoc["webAclArn"] == prod.named(WEBACL, "edge-waf-acl").outputs["arn"]
    caller = _rules(prod)["rate-limit-caller"]
    assert caller["statement"]["rateBasedStatement"]["customKeys"] == BEARER_KEYS
    # before the per-IP rule, which still counts requests without the header (WAF does not count those here)
    assert (caller["priority"], _rules(prod)["rate-limit-ip"]["priority"]) == (10, 20)
    assert caller["action"]["block"]["customResponse"]["responseCode"] == 429
    logging = inputs(prod, WAF_LOGGING, "edge-waf-logging")
    assert {"singleHeader": {"name": "authorization"}} in logging["redactedFields"]


def test_a_jwt_stack_keyed_on_another_header_gets_an_advisory(run) -> None:
    """Callers of a jwt route send `authorization`; a budget keyed on x-api-key may not count them (advisory)."""
    from components.config.loader import parse_stack_mapping
    from components.config.validation import run_advisories

    def dev(header: str) -> dict[str, Any]:
        return _dev_with_ingress(
            scheme="internet-facing",
            allowedCidrs=["198.51.100.0/24"],
            authentication="jwt",
            jwt={
                "issuer": "https://idp.example.com",
                "jwksUri": "https://idp.example.com/.well-known/jwks.json",
                "requiredClaims": [{"name": "aud", "format": "single-string", "values": ["llm"]}],
            },
            waf={"callerRateLimit": {"header": header, "limit": 100, "evaluationWindowSec": 300}},
        )

    mapping = dev("authorization")
    del mapping[ING]["cognito"]
    result = registered(run("dev", mapping))
    assert _rules(result)["rate-limit-caller"]["statement"]["rateBasedStatement"]["customKeys"] == BEARER_KEYS
    rule = inputs(result, "aws:lb/listenerRule:ListenerRule", "front-door-route-0")
    assert rule["actions"][0]["jwtValidation"]["issuer"] == "https://idp.example.com"  # kept as written, no "/"
    assert not [a for a in run_advisories(parse_stack_mapping("dev", mapping)) if a.rule == "waf-caller-key-jwt"]
    mapping = dev("x-api-key")
    del mapping[ING]["cognito"]
    (advisory,) = [a for a in run_advisories(parse_stack_mapping("dev", mapping)) if a.rule == "waf-caller-key-jwt"]
    assert advisory.path == "ingress.waf.callerRateLimit.header"
    assert advisory.message.startswith("x-api-key: callers of the jwt routes send their token in `authorization`")


def test_internet_facing_dev_alb_gets_a_webacl_by_default_internal_does_not(run) -> None:
    public = registered(run("dev", _dev_with_ingress(scheme="internet-facing", allowedCidrs=["198.51.100.0/24"])))
    rules = _rules(public)
    assert list(rules) == [
        "rate-limit-ip",
        "aws-common",
        "aws-known-bad-inputs",
        "aws-ip-reputation",
        "prompt-body-rules-outside-inference",
    ]
    assert rules["rate-limit-ip"]["statement"]["rateBasedStatement"]["limit"] == 1000
    assert inputs(public, LOG_GROUP, "edge-waf-logs")["retentionInDays"] == 90
    assert inputs(public, ASSOC, "front-door-waf")["webAclArn"] == public.named(WEBACL, "edge-waf-acl").outputs["arn"]
    internal = registered(run("dev", _dev_with_ingress()))
    assert internal.of_type(WEBACL) == [] and internal.of_type(ASSOC) == []
    opted_in = registered(run("dev", _dev_with_ingress(waf={"enabled": True, "ipReputation": False})))
    assert list(_rules(opted_in)) == [
        "rate-limit-ip",
        "aws-common",
        "aws-known-bad-inputs",
        "prompt-body-rules-outside-inference",
    ]


def test_an_existing_webacl_arn_is_associated_and_none_is_created(run) -> None:
    acl = "arn:aws:wafv2:us-west-2:123456789012:regional/webacl/corp/1a2b3c4d"
    result = registered(
        run("dev", _dev_with_ingress(scheme="internet-facing", allowedCidrs=["0.0.0.0/0"], wafWebAclArn=acl))
    )
    assert result.of_type(WEBACL) == []
    assert inputs(result, ASSOC, "front-door-waf")["webAclArn"] == acl


@pytest.mark.parametrize(
    ("waf", "extra", "path", "text"),
    [
        (
            {"rateLimit": {"limit": 100, "evaluationWindowSec": 90}},
            {},
            "ingress.waf.rateLimit.evaluationWindowSec",
            "60, 120, 300, 600",
        ),
        ({"rateLimit": {"limit": 5}}, {}, "ingress.waf.rateLimit.limit", "10"),
        (
            {"callerRateLimit": {"header": "Authorization", "limit": 50}},
            {},
            "ingress.waf.callerRateLimit.header",
            "pattern",
        ),
        (
            {
                "rateLimit": {"limit": 100, "evaluationWindowSec": 300},
                "callerRateLimit": {"header": "x-api-key", "limit": 100, "evaluationWindowSec": 60},
            },
            {},
            "ingress.waf.callerRateLimit.limit",
            "exceeds the per-IP budget",
        ),
        (
            {"enabled": True},
            {"wafWebAclArn": "arn:aws:wafv2:us-west-2:123456789012:regional/webacl/x/1"},
            "ingress.waf.enabled",
            "one WebACL",
        ),
        ({"logRetentionDays": 100}, {}, "ingress.waf.logRetentionDays", "3653"),
        ({"rateLimits": {"limit": 100}}, {}, "ingress.waf.rateLimits", "unknown key"),
    ],
)
def test_waf_config_errors_name_the_key(run, waf: dict[str, Any], extra: dict[str, Any], path: str, text: str) -> None:
    result = run("dev", _dev_with_ingress(waf=waf, **extra))
    assert result.config_error is not None
    issues = {i.path: i.message for i in result.config_error.issues}
    assert path in issues, issues
    assert text in issues[path]
    assert result.registrations == []


def test_caller_budget_within_the_per_ip_budget_is_accepted(run) -> None:
    waf = {
        "rateLimit": {"limit": 600, "evaluationWindowSec": 300},
        "callerRateLimit": {"header": "x-api-key", "limit": 120, "evaluationWindowSec": 60},
    }
    result = registered(run("dev", _dev_with_ingress(scheme="internet-facing", allowedCidrs=["0.0.0.0/0"], waf=waf)))
    keys = _rules(result)["rate-limit-caller"]["statement"]["rateBasedStatement"]["customKeys"]
    assert keys[1]["header"]["name"] == "x-api-key"


# --- network baselines ----------------------------------------------------------------------------------


def test_prod_vpc_has_flow_logs_to_cloudwatch_with_a_scoped_role(prod: StackRun) -> None:
    flow = inputs(prod, FLOW_LOG, "network-flow-log")
    group = prod.named(LOG_GROUP, "network-flow-logs")
    role = prod.named(ROLE, "network-flow-logs-role")
    assert flow["vpcId"] == prod.outputs["vpcId"]
    assert prod.named(FLOW_LOG, "network-flow-log").property_dependencies["vpcId"] == [
        prod.named(VPC, "network-vpc").urn
    ]
    assert flow["trafficType"] == "ALL"
    assert flow["logDestinationType"] == "cloud-watch-logs"
    assert flow["logDestination"] == group.outputs["arn"]
    assert flow["iamRoleArn"] == role.outputs["arn"]
    assert group.inputs["retentionInDays"] == 365
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "vpc-flow-logs.amazonaws.com"}
    assert trust["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"},
        "ArnLike": {"aws:SourceArn": "arn:aws:ec2:us-east-1:123456789012:vpc-flow-log/*"},
    }


def test_prod_default_security_group_is_managed_with_no_rules(prod: StackRun) -> None:
    sg = inputs(prod, DEFAULT_SG, "network-default-sg")
    assert sg["vpcId"] == prod.outputs["vpcId"]
    assert sg["ingress"] == [] and sg["egress"] == []


def test_dev_flow_log_retention_and_switching_flow_logs_off(run, stack_runs: dict[str, StackRun]) -> None:
    assert inputs(stack_runs["dev"], LOG_GROUP, "network-flow-logs")["retentionInDays"] == 30
    mapping = stack_mapping("dev")
    mapping[OBS]["vpcFlowLogs"] = {"enabled": False}
    off = registered(run("dev", mapping))
    assert off.of_type(FLOW_LOG) == []
    assert len(off.of_type(DEFAULT_SG)) == 1, "the default security group stays locked"
    mapping[OBS]["vpcFlowLogs"] = {"retentionDays": 31}
    bad = run("dev", mapping)
    assert bad.config_error is not None
    assert [i.path for i in bad.config_error.issues] == ["observability.vpcFlowLogs.retentionDays"]


# --- S3 baselines ---------------------------------------------------------------------------------------


def _bucket_named(run: StackRun, name: str) -> Registration:
    return run.named(BUCKET, name)


def test_prod_tls_and_lifecycle_buckets_log_into_the_access_log_bucket(prod: StackRun) -> None:
    target = _bucket_named(prod, "access-logs-bucket")
    tls = _bucket_named(prod, "operator-iam-tls")
    lifecycle = _bucket_named(prod, "hyperpod-lifecycle")
    loggings = {r.name: plain_inputs(r) for r in prod.of_type(BUCKET_LOGGING)}
    assert loggings == {
        "access-logs-tls-certificates": {
            "bucket": tls.outputs["bucket"],
            "targetBucket": target.outputs["bucket"],
            "targetPrefix": "tls-certificates/",
        },
        "access-logs-lifecycle-scripts": {
            "bucket": lifecycle.outputs["bucket"],
            "targetBucket": target.outputs["bucket"],
            "targetPrefix": "lifecycle-scripts/",
        },
    }
    policy = json.loads(inputs(prod, BUCKET_POLICY, "access-logs-bucket-policy")["policy"])
    delivery = policy["Statement"][0]
    assert delivery["Principal"] == {"Service": "logging.s3.amazonaws.com"}
    assert delivery["Action"] == "s3:PutObject"
    assert delivery["Resource"] == f"{target.outputs['arn']}/*"
    assert delivery["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    assert target.protect is True and target.inputs["forceDestroy"] is False


def plain_inputs(reg: Registration) -> dict[str, Any]:
    return {k: v for k, v in reg.inputs.items() if k != "region"}


def test_versioned_buckets_expire_noncurrent_versions_and_log_bucket_expires_logs(prod: StackRun) -> None:
    tls_rules = {r["id"]: r for r in inputs(prod, LIFECYCLE, "operator-iam-tls-lifecycle-rules")["rules"]}
    assert tls_rules["expire-noncurrent-versions"]["noncurrentVersionExpiration"] == {"noncurrentDays": 30}
    assert tls_rules["abort-incomplete-multipart-uploads"]["abortIncompleteMultipartUpload"] == {
        "daysAfterInitiation": 7
    }
    assert {r["status"] for r in tls_rules.values()} == {"Enabled"}
    assert "hyperpod-lifecycle-lifecycle-rules" in {r.name for r in prod.of_type(LIFECYCLE)}
    log_rules = {r["id"]: r for r in inputs(prod, LIFECYCLE, "access-logs-bucket-lifecycle-rules")["rules"]}
    assert log_rules["expire-objects"]["expiration"] == {"days": 365}
    assert "expire-noncurrent-versions" not in log_rules


def test_buckets_force_destroy_outside_prod_and_are_protected_in_prod(stack_runs: dict[str, StackRun]) -> None:
    for name in ("operator-iam-tls", "hyperpod-lifecycle", "access-logs-bucket"):
        dev, prod = stack_runs["dev"].named(BUCKET, name), stack_runs["prod"].named(BUCKET, name)
        assert (dev.inputs["forceDestroy"], dev.protect) == (True, False), name
        assert (prod.inputs["forceDestroy"], prod.protect) == (False, True), name
    assert inputs(stack_runs["dev"], LIFECYCLE, "access-logs-bucket-lifecycle-rules")["rules"][1]["expiration"] == {
        "days": 90
    }


# --- the new policies, one at a time ----------------------------------------------------------------------

Mutation = Callable[[list[Registration]], None]


def _added(
    stack_runs: dict[str, StackRun], mutate: Mutation, env: str = "prod", stack: str = "prod"
) -> list[PolicyResult]:
    regs = stack_runs[stack].registrations
    assert len(regs) > 0
    before = evaluate(POLICIES, regs, env)
    changed = copy.deepcopy(regs)
    mutate(changed)
    after = evaluate(POLICIES, changed, env)
    return [r for r in after if r not in before]


def _only(results: list[PolicyResult], policy: str, level: str) -> list[PolicyResult]:
    assert results, f"expected {policy} to report a violation"
    assert {r.policy for r in results} == {policy}, [r.render() for r in results]
    assert {r.level for r in results} == {level}, [r.render() for r in results]
    return results


def _drop(typ: str, name: str | None = None) -> Mutation:
    def mutate(regs: list[Registration]) -> None:
        found = [r for r in regs if r.type == typ and (name is None or r.name == name)]
        assert found, f"no {typ} {name or ''} to remove"
        for r in found:
            regs.remove(r)

    return mutate


def _edit(typ: str, name: str, change: Callable[[dict[str, Any]], None]) -> Mutation:
    def mutate(regs: list[Registration]) -> None:
        found = [r for r in regs if r.type == typ and r.name == name]
        assert len(found) == 1, f"{len(found)} {typ} {name}"
        change(found[0].inputs)

    return mutate


def _both(*mutations: Mutation) -> Mutation:
    def mutate(regs: list[Registration]) -> None:
        for m in mutations:
            m(regs)

    return mutate


def _set(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda props: props.update(values)


@pytest.mark.parametrize(("env", "level"), [("prod", "mandatory"), ("staging", "advisory"), ("dev", "advisory")])
def test_alb_waf_attached_caught_alone_at_the_env_level(stack_runs, env: str, level: str) -> None:
    results = _only(_added(stack_runs, _drop(ASSOC), env), "alb-waf-attached", level)
    assert [(r.resource_type, r.resource_name) for r in results] == [(ALB, "front-door-alb")]
    assert "no AWS WAF WebACL" in results[0].message


def test_alb_waf_attached_nearest_valid_variants(stack_runs) -> None:
    # an internal ALB needs no WebACL; nor does a network load balancer
    assert _added(stack_runs, _both(_drop(ASSOC), _edit(ALB, "front-door-alb", _set(internal=True)))) == []
    assert _added(stack_runs, _both(_drop(ASSOC), _edit(ALB, "front-door-alb", _set(loadBalancerType="network")))) == []
    # an association naming another load balancer does not count
    alb_arn = stack_runs["prod"].named(ALB, "front-door-alb").outputs["arn"]

    def retarget(regs: list[Registration]) -> None:
        assoc = next(r for r in regs if r.type == ASSOC)
        assoc.property_dependencies = {}
        assoc.inputs["resourceArn"] = alb_arn.replace("hpi-prod-alb", "other-alb")

    _only(_added(stack_runs, retarget), "alb-waf-attached", "mandatory")


@pytest.mark.parametrize(("env", "level"), [("prod", "mandatory"), ("dev", "advisory")])
def test_vpc_flow_logs_caught_alone(stack_runs, env: str, level: str) -> None:
    results = _only(_added(stack_runs, _drop(FLOW_LOG), env), "vpc-flow-logs-enabled", level)
    assert [r.resource_name for r in results] == ["network-vpc"]
    accept = _only(
        _added(stack_runs, _edit(FLOW_LOG, "network-flow-log", _set(trafficType="ACCEPT")), env),
        "vpc-flow-logs-enabled",
        level,
    )
    assert [r.resource_name for r in accept] == ["network-flow-log"]


def test_vpc_flow_logs_nearest_valid_variant(stack_runs) -> None:
    assert _added(stack_runs, _edit(FLOW_LOG, "network-flow-log", _set(trafficType="REJECT"))) == []


@pytest.mark.parametrize(("env", "level"), [("prod", "mandatory"), ("dev", "advisory")])
def test_default_security_group_caught_alone(stack_runs, env: str, level: str) -> None:
    missing = _only(_added(stack_runs, _drop(DEFAULT_SG), env), "default-security-group-closed", level)
    assert [r.resource_name for r in missing] == ["network-vpc"]
    rule = {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}
    with_ingress = _only(
        _added(stack_runs, _edit(DEFAULT_SG, "network-default-sg", _set(ingress=[rule])), env),
        "default-security-group-closed",
        level,
    )
    assert with_ingress[0].message == "default security group has ingress rules; it must have none"
    with_egress = _added(stack_runs, _edit(DEFAULT_SG, "network-default-sg", _set(egress=[rule])), env)
    assert _only(with_egress, "default-security-group-closed", level)[0].message.startswith(
        "default security group has egress"
    )


def test_default_security_group_nearest_valid_variant(stack_runs) -> None:
    # rules given as None (the provider default when omitted is "no rules" too) pass
    assert _added(stack_runs, _edit(DEFAULT_SG, "network-default-sg", _set(ingress=None, egress=None))) == []


@pytest.mark.parametrize(("env", "level"), [("prod", "mandatory"), ("dev", "advisory")])
def test_bucket_access_logging_caught_alone(stack_runs, env: str, level: str) -> None:
    results = _only(
        _added(stack_runs, _drop(BUCKET_LOGGING, "access-logs-tls-certificates"), env),
        "s3-bucket-access-logging",
        level,
    )
    assert [r.resource_name for r in results] == ["operator-iam-tls"]


def test_bucket_access_logging_exempts_log_destinations_unless_configured(stack_runs, monkeypatch) -> None:
    # reference: the two log destinations (S3 access logs, ALB logs) are exempt, nothing reported
    assert [r for r in evaluate(POLICIES, stack_runs["prod"].registrations, "prod") if r.policy in NEW_POLICIES] == []
    config = engine.policy_pack_config("prod")
    config["s3-bucket-access-logging"] = {"enforcementLevel": "mandatory", "exemptLogDestinations": False}
    monkeypatch.setattr(engine, "policy_pack_config", lambda env: config)
    flagged = [r for r in evaluate(POLICIES, stack_runs["prod"].registrations, "prod") if r.policy in NEW_POLICIES]
    assert {(r.policy, r.resource_name) for r in flagged} == {
        ("s3-bucket-access-logging", "access-logs-bucket"),
        ("s3-bucket-access-logging", "front-door-logs"),
    }


@pytest.mark.parametrize(("env", "level"), [("prod", "mandatory"), ("dev", "advisory")])
def test_bucket_lifecycle_rules_caught_alone(stack_runs, env: str, level: str) -> None:
    missing = _only(
        _added(stack_runs, _drop(LIFECYCLE, "operator-iam-tls-lifecycle-rules"), env),
        "s3-bucket-lifecycle-rules",
        level,
    )
    assert [(r.resource_name, r.message) for r in missing] == [
        ("operator-iam-tls", "bucket has no lifecycle configuration with an enabled rule")
    ]

    def no_noncurrent(props: dict[str, Any]) -> None:
        props["rules"] = [r for r in props["rules"] if r["id"] != "expire-noncurrent-versions"]

    versions = _only(
        _added(stack_runs, _edit(LIFECYCLE, "operator-iam-tls-lifecycle-rules", no_noncurrent), env),
        "s3-bucket-lifecycle-rules",
        level,
    )
    assert "noncurrent" in versions[0].message

    def disabled(props: dict[str, Any]) -> None:
        for r in props["rules"]:
            r["status"] = "Disabled"

    _only(
        _added(stack_runs, _edit(LIFECYCLE, "hyperpod-lifecycle-lifecycle-rules", disabled), env),
        "s3-bucket-lifecycle-rules",
        level,
    )

    def second(regs: list[Registration]) -> None:
        extra = copy.deepcopy(next(r for r in regs if r.name == "operator-iam-tls-lifecycle-rules"))
        extra.name, extra.urn = "second-lifecycle", extra.urn + "-second"
        regs.append(extra)

    two = _only(_added(stack_runs, second, env), "s3-bucket-lifecycle-rules", level)
    assert "2 lifecycle configurations" in two[0].message


def test_bucket_lifecycle_rules_nearest_valid_variant(stack_runs) -> None:
    # an unversioned bucket needs any enabled rule, not a noncurrent-version rule
    def unversion(regs: list[Registration]) -> None:
        regs[:] = [r for r in regs if r.name != "operator-iam-tls-versioning"]
        lc = next(r for r in regs if r.name == "operator-iam-tls-lifecycle-rules")
        lc.inputs["rules"] = [r for r in lc.inputs["rules"] if r["id"] != "expire-noncurrent-versions"]

    assert _added(stack_runs, unversion) == []


def test_elasticache_backups_are_waived_with_a_reason_and_caught_when_enabled(stack_runs, monkeypatch) -> None:
    for env in ("dev", "staging", "prod"):
        entry = engine.policy_pack_config(env)["elasticache-automatic-backups"]
        assert entry["enforcementLevel"] == "disabled"
        assert "rebuildable" in entry["waiver"]
    assert stack_runs["prod"].of_type(REPLICATION_GROUP)
    assert [r for r in evaluate(POLICIES, stack_runs["prod"].registrations, "prod") if r.policy in NEW_POLICIES] == []
    config = engine.policy_pack_config("prod")
    config["elasticache-automatic-backups"] = {"enforcementLevel": "advisory"}
    monkeypatch.setattr(engine, "policy_pack_config", lambda env: config)
    results = _only(
        [r for r in evaluate(POLICIES, stack_runs["prod"].registrations, "prod") if r.policy in NEW_POLICIES],
        "elasticache-automatic-backups",
        "advisory",
    )
    assert [r.resource_type for r in results] == [REPLICATION_GROUP]


def test_elasticache_backups_nearest_valid_variant(stack_runs, monkeypatch) -> None:
    config = engine.policy_pack_config("prod")
    config["elasticache-automatic-backups"] = {"enforcementLevel": "advisory"}
    monkeypatch.setattr(engine, "policy_pack_config", lambda env: config)
    rg = next(r for r in stack_runs["prod"].registrations if r.type == REPLICATION_GROUP)
    changed = copy.deepcopy(stack_runs["prod"].registrations)
    next(r for r in changed if r.name == rg.name).inputs["snapshotRetentionLimit"] = 1
    assert [r for r in evaluate(POLICIES, changed, "prod") if r.policy == "elasticache-automatic-backups"] == []


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_new_policies_agree_with_the_cli_analyzer(stack_runs, env: str) -> None:
    """The same broken graph through pulumi_policy's analyzer servicer (proxied props, floats)."""
    regs = copy.deepcopy(stack_runs["prod"].registrations)
    for mutate in (
        _drop(ASSOC),
        _drop(FLOW_LOG),
        _edit(DEFAULT_SG, "network-default-sg", _set(egress=[{"protocol": "-1", "fromPort": 0, "toPort": 0}])),
        _drop(BUCKET_LOGGING, "access-logs-lifecycle-scripts"),
        _drop(LIFECYCLE, "operator-iam-tls-lifecycle-rules"),
    ):
        mutate(regs)
    offline = {(r.level, r.policy, r.resource_type, r.resource_name) for r in evaluate(POLICIES, regs, env)}
    analyzer = _analyzer_results(regs, env)
    assert offline == analyzer
    level = "mandatory" if env == "prod" else "advisory"
    mine = {(lvl, p, n) for lvl, p, _, n in analyzer if p in NEW_POLICIES}
    assert mine == {
        (level, "alb-waf-attached", "front-door-alb"),
        (level, "vpc-flow-logs-enabled", "network-vpc"),
        (level, "default-security-group-closed", "network-default-sg"),
        (level, "s3-bucket-access-logging", "hyperpod-lifecycle"),
        (level, "s3-bucket-lifecycle-rules", "operator-iam-tls"),
    }


def test_prod_plan_passes_every_new_policy(prod: StackRun) -> None:
    assert prod.of_type(WEBACL) and prod.of_type(FLOW_LOG) and prod.of_type(DEFAULT_SG)
    assert prod.of_type(BUCKET_LOGGING) and prod.of_type(LIFECYCLE)
    assert [r.render() for r in evaluate(POLICIES, prod.registrations, "prod") if r.policy in NEW_POLICIES] == []


# --- alb-tls-policy-recommended (FSBP ELB.17) ----------------------------------------------------------------


@pytest.mark.parametrize(("env", "level"), [("prod", "mandatory"), ("staging", "advisory"), ("dev", "advisory")])
def test_elb17_old_default_policy_caught_alone_at_the_env_level(stack_runs, env: str, level: str) -> None:
    old_default = _set(sslPolicy="ELBSecurityPolicy-TLS13-1-2-2021-06")
    results = _only(
        _added(stack_runs, _edit(LISTENER, "front-door-https", old_default), env), "alb-tls-policy-recommended", level
    )
    assert [r.resource_name for r in results] == ["front-door-https"]
    assert results[0].message.startswith(
        "HTTPS listener: security policy ELBSecurityPolicy-TLS13-1-2-2021-06 is not one FSBP ELB.17 recommends"
    )


def test_elb17_listener_without_a_policy_is_reported_with_the_api_default(stack_runs) -> None:
    def drop_policy(props: dict[str, Any]) -> None:
        del props["sslPolicy"]

    (result,) = _only(
        _added(stack_runs, _edit(LISTENER, "front-door-https", drop_policy)), "alb-tls-policy-recommended", "mandatory"
    )
    assert "none set (ELB then uses ELBSecurityPolicy-2016-08)" in result.message


def test_elb17_nearest_valid_variants(stack_runs) -> None:
    # TLS 1.3 only, and a post-quantum restricted policy, are recommended; an HTTP listener has no policy to check
    for policy in ("ELBSecurityPolicy-TLS13-1-3-2021-06", "ELBSecurityPolicy-TLS13-1-2-Res-PQ-2025-09"):
        assert _added(stack_runs, _edit(LISTENER, "front-door-https", _set(sslPolicy=policy))) == []
    assert _added(stack_runs, _edit(LISTENER, "front-door-http", _set(sslPolicy="ELBSecurityPolicy-2016-08"))) == []


def test_elb17_is_a_config_error_in_prod_only(run) -> None:
    mapping = _dev_with_ingress(sslPolicy="ELBSecurityPolicy-TLS13-1-2-2021-06")
    dev = registered(run("dev", mapping))
    assert inputs(dev, LISTENER, "front-door-https")["sslPolicy"] == "ELBSecurityPolicy-TLS13-1-2-2021-06"
    prod = stack_mapping("prod")
    prod[ING]["sslPolicy"] = "ELBSecurityPolicy-TLS13-1-3-2021-06"
    assert inputs(registered(run("prod", prod)), LISTENER, "front-door-https")["sslPolicy"] == (
        "ELBSecurityPolicy-TLS13-1-3-2021-06"
    )


# --- prompts through the WebACL (issue 47 item 3) -------------------------------------------------------------
# What each managed body rule matches in a prompt (AWS WAF "Baseline rule groups", "Use-case specific rule groups"):
# the prompt shapes a code assistant sends, and the rules that would block them as published.
PROMPT_SHAPES: dict[str, tuple[str, ...]] = {
    "<script>alert(1)</script>": ("CrossSiteScripting_BODY",),
    "open ../../etc/passwd": ("GenericLFI_BODY",),
    "curl http://169.254.169.254/latest/meta-data/": ("EC2MetaDataSSRF_BODY", "GenericRFI_BODY"),
    'log.info("${jndi:ldap://x}")': ("Log4JRCE_BODY",),
}
GROUP_LABELS = {
    "AWSManagedRulesCommonRuleSet": "awswaf:managed:aws:core-rule-set:",
    "AWSManagedRulesKnownBadInputsRuleSet": "awswaf:managed:aws:known-bad-inputs:",
}
RULE_GROUP = {
    "CrossSiteScripting_BODY": "AWSManagedRulesCommonRuleSet",
    "GenericLFI_BODY": "AWSManagedRulesCommonRuleSet",
    "GenericRFI_BODY": "AWSManagedRulesCommonRuleSet",
    "EC2MetaDataSSRF_BODY": "AWSManagedRulesCommonRuleSet",
    "Log4JRCE_BODY": "AWSManagedRulesKnownBadInputsRuleSet",
}


def _label(group: str, rule: str) -> str:
    """The label a managed rule adds: ``<group prefix><Rule>_Body`` (the guide's "Label:" lines)."""
    return GROUP_LABELS[group] + rule.removesuffix("_BODY") + "_Body"


def _normalized(path: str) -> str:
    out: list[str] = []
    for part in path.split("/"):
        if part == "..":
            out = out[:-1]
        elif part not in ("", "."):
            out.append(part)
    return "/" + "/".join(out)


def _holds(statement: dict[str, Any], path: str, labels: set[str]) -> bool:
    """A WAF statement of the rendered WebACL on a request (only the statement kinds the WebACL uses)."""
    if "andStatement" in statement:
        return all(_holds(s, path, labels) for s in statement["andStatement"]["statements"])
    if "orStatement" in statement:
        return any(_holds(s, path, labels) for s in statement["orStatement"]["statements"])
    if "notStatement" in statement:
        return not _holds(statement["notStatement"]["statement"], path, labels)
    if "labelMatchStatement" in statement:
        assert statement["labelMatchStatement"]["scope"] == "LABEL"
        return bool(statement["labelMatchStatement"]["key"] in labels)
    if "byteMatchStatement" in statement:
        match = statement["byteMatchStatement"]
        assert "uriPath" in match["fieldToMatch"] and match["positionalConstraint"] == "EXACTLY"
        assert [t["type"] for t in match["textTransformations"]] == ["NORMALIZE_PATH"]
        return bool(_normalized(path) == match["searchString"])
    raise AssertionError(f"statement kind the evaluator does not know: {sorted(statement)}")


def _verdict(acl: dict[str, Any], path: str, fired: tuple[str, ...]) -> str:
    """BLOCK or ALLOW for a request on ``path`` whose body the managed rules ``fired`` match, by the rendered rules
    in priority order (a rate rule never fires for one request; a managed rule blocks unless overridden to count,
    and adds its label either way)."""
    labels: set[str] = set()
    for rule in sorted(acl["rules"], key=lambda r: r["priority"]):
        statement = rule["statement"]
        if "rateBasedStatement" in statement:
            continue
        group = statement.get("managedRuleGroupStatement")
        if group is not None:
            if group["name"] not in GROUP_LABELS:
                continue
            counted = {o["name"] for o in group.get("ruleActionOverrides") or [] if "count" in o["actionToUse"]}
            mine = [f for f in fired if RULE_GROUP[f] == group["name"]]
            labels |= {_label(group["name"], f) for f in mine}
            if any(f not in counted for f in mine) and rule["overrideAction"] == {"none": {}}:
                return "BLOCK"
            continue
        if _holds(statement, path, labels) and "block" in rule["action"]:
            return "BLOCK"
    return "ALLOW"


@pytest.mark.parametrize("prompt", sorted(PROMPT_SHAPES))
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions", "/invocations"])
def test_an_inference_route_accepts_code_assistant_prompts(prod: StackRun, prompt: str, path: str) -> None:
    acl = inputs(prod, WEBACL, "edge-waf-acl")
    assert _verdict(acl, path, PROMPT_SHAPES[prompt]) == "ALLOW"


@pytest.mark.parametrize("prompt", sorted(PROMPT_SHAPES))
@pytest.mark.parametrize("path", ["/", "/admin", "/v1/chat/completions/../admin", "/v1/chat/completionsx"])
def test_other_paths_keep_the_body_rules_blocking(prod: StackRun, prompt: str, path: str) -> None:
    acl = inputs(prod, WEBACL, "edge-waf-acl")
    assert _verdict(acl, path, PROMPT_SHAPES[prompt]) == "BLOCK"


def test_without_inference_paths_the_groups_block_prompts_everywhere(run) -> None:
    """``inferencePaths: []``: no override beyond the 8 KB size rule, no label rule; the prompts get 403."""
    mapping = _dev_with_ingress(waf={"enabled": True, "inferencePaths": []})
    acl = inputs(registered(run("dev", mapping)), WEBACL, "edge-waf-acl")
    assert [r["name"] for r in acl["rules"]][-1] != "prompt-body-rules-outside-inference"
    for fired in PROMPT_SHAPES.values():
        assert _verdict(acl, "/v1/chat/completions", fired) == "BLOCK"


def test_the_evaluator_blocks_what_the_published_groups_block(prod: StackRun) -> None:
    """Not vacuous: the same rules without the overrides and the label rule block every prompt shape."""
    acl = copy.deepcopy(inputs(prod, WEBACL, "edge-waf-acl"))
    acl["rules"] = [r for r in acl["rules"] if r["name"] != "prompt-body-rules-outside-inference"]
    for rule in acl["rules"]:
        group = rule["statement"].get("managedRuleGroupStatement")
        if group:
            group.pop("ruleActionOverrides", None)
    for fired in PROMPT_SHAPES.values():
        assert _verdict(acl, "/v1/chat/completions", fired) == "BLOCK"


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        (["v1/chat"], "inferencePaths"),
        (["/v1/*"], "inferencePaths"),
        ([f"/p{i}" for i in range(11)], "inferencePaths"),
    ],
)
def test_inference_paths_are_exact_paths(run, paths: list[str], message: str) -> None:
    result = run("dev", _dev_with_ingress(waf={"enabled": True, "inferencePaths": paths}))
    assert result.config_error is not None and message in str(result.config_error)
