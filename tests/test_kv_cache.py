"""RedisKvCache: encryption, network isolation, its RBAC user and group, and how the URL and credentials reach LMCache.

The components run inside a small program (``SERVING_PROGRAM``: the real Network, a stand-in node SG and
add-on, then RedisKvCache, InferenceEndpoints and InferenceGateway exactly as ``__main__.py`` wires them)
through the same harness as the real program, so these tests do not depend on the other layers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.config.endpoints import lmcache_redis_acl
from tests.conftest import cached_scope, registered, stack_mapping
from tools.plan.harness import StackRun, run_stack

SERVING_PROGRAM = """
import pulumi
import pulumi_aws as aws

from components.config import load_stack_config
from components.config.endpoints import lmcache_redis_acl
from components.endpoints import InferenceEndpoints, InferenceEndpointsArgs, RedisConnection
from components.inference_gateway import InferenceGateway, InferenceGatewayArgs
from components.kv_cache import RedisKvCache, RedisKvCacheArgs
from components.network import Network, NetworkArgs

cfg = load_stack_config()
network = Network(
    "network",
    NetworkArgs(network=cfg.network, region=cfg.region, nat_per_az=False, eks_cluster_name="eks", tags={}),
)
node_sg = aws.ec2.SecurityGroup("stand-in-node-sg", vpc_id=network.vpc_id)
addon = aws.eks.Addon("stand-in-addon", cluster_name="eks", addon_name="amazon-sagemaker-hyperpod-inference")
redis = None
if cfg.kv_cache.l2_backend == "redis":
    redis = RedisKvCache(
        "kv-cache",
        RedisKvCacheArgs(
            redis=cfg.kv_cache.redis,
            vpc_id=network.vpc_id,
            subnet_ids=list(network.private_subnet_ids.values()),
            node_security_group_id=node_sg.id,
            name_prefix=cfg.name_prefix,
            is_prod=cfg.is_prod,
            lmcache_commands=lmcache_redis_acl(cfg.endpoints)[0],
            tags=cfg.common_tags,
        ),
    )
    pulumi.export("kvCacheUrl", redis.url)
    pulumi.export("nodeSg", node_sg.id)
    pulumi.export(
        "secretness",
        pulumi.Output.all(
            pulumi.Output.from_input(redis.password.is_secret() if redis.password is not None else False),
            pulumi.Output.from_input(redis.connection_url.is_secret()),
            pulumi.Output.from_input(redis.url.is_secret()),
        ),
    )
InferenceEndpoints(
    "endpoints",
    InferenceEndpointsArgs(
        endpoints=cfg.endpoints,
        tags=cfg.common_tags,
        tls_bucket="hyperpod-tls-standin",
        redis=RedisConnection(address=redis.url, username=redis.username, password=redis.password) if redis else None,
        depends_on=[addon],
    ),
)
if cfg.gateway.enabled:
    from components.config.gateway import gateway_namespace

    InferenceGateway(
        "gateway", InferenceGatewayArgs(gateway=cfg.gateway, namespace=gateway_namespace(cfg), depends_on=[addon])
    )
"""

SECRET_SIG = "4dabf18193072939515e22adb298388d"
RG = "aws:elasticache/replicationGroup:ReplicationGroup"


def rid(run: StackRun, typ: str, name: str) -> str:
    """The physical id the mocks gave a resource."""
    return str(run.monitor.resources[run.named(typ, name).urn].id)


def is_secret_input(value: Any) -> bool:
    return isinstance(value, dict) and SECRET_SIG in value


def unwrap(value: Any) -> Any:
    return value["value"] if is_secret_input(value) else value


@pytest.fixture(scope=cached_scope("session"))
def serving_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("serving") / "program.py"
    path.write_text(SERVING_PROGRAM, encoding="utf-8")
    return path


@pytest.fixture(scope=cached_scope("session"))
def prod_serving(serving_program: Path) -> StackRun:
    return registered(run_stack("prod", main=serving_program))


def test_replication_group_encrypted_private_and_a_cache(prod_serving: StackRun) -> None:
    rg = prod_serving.named(RG, "kv-cache-rg").inputs
    key = prod_serving.named("aws:kms/key:Key", "kv-cache-kms")
    assert rg["engine"] == "valkey" and rg["engineVersion"] == "8.0"
    assert rg["transitEncryptionEnabled"] is True
    assert rg["transitEncryptionMode"] == "required"
    assert rg["atRestEncryptionEnabled"] is True
    assert rg["kmsKeyId"] == key.outputs["arn"]
    assert key.inputs["enableKeyRotation"] is True
    assert key.protect is True  # prod
    assert prod_serving.named(RG, "kv-cache-rg").protect is True
    assert rg["snapshotRetentionLimit"] == 0
    # prod: replicas 2 -> 3 nodes, Multi-AZ with automatic failover
    assert rg["numCacheClusters"] == 3
    assert rg["multiAzEnabled"] is True and rg["automaticFailoverEnabled"] is True
    params = prod_serving.named("aws:elasticache/parameterGroup:ParameterGroup", "kv-cache-params").inputs
    assert params["family"] == "valkey8"
    assert params["parameters"] == [{"name": "maxmemory-policy", "value": "allkeys-lru"}]
    assert rg["parameterGroupName"] == params["name"]
    subnets = prod_serving.named("aws:elasticache/subnetGroup:SubnetGroup", "kv-cache-subnets").inputs
    private = {
        rid(prod_serving, "aws:ec2/subnet:Subnet", r.name)
        for r in prod_serving.of_type("aws:ec2/subnet:Subnet")
        if "private" in r.name
    }
    assert set(subnets["subnetIds"]) == private and len(private) == 3


def test_security_group_admits_redis_port_only_from_the_node_sg(prod_serving: StackRun) -> None:
    sg = prod_serving.named("aws:ec2/securityGroup:SecurityGroup", "kv-cache-sg")
    sg_id = rid(prod_serving, "aws:ec2/securityGroup:SecurityGroup", "kv-cache-sg")
    assert "ingress" not in sg.inputs and "egress" not in sg.inputs
    rules = [
        r
        for r in prod_serving.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.inputs["securityGroupId"] == sg_id
    ]
    assert len(rules) == 1
    rule = rules[0].inputs
    node_sg = rid(prod_serving, "aws:ec2/securityGroup:SecurityGroup", "stand-in-node-sg")
    assert rule["referencedSecurityGroupId"] == node_sg
    assert (rule["fromPort"], rule["toPort"], rule["ipProtocol"]) == (6379, 6379, "tcp")
    assert not any(k in rule for k in ("cidrIpv4", "cidrIpv6", "prefixListId"))
    rg = prod_serving.named(RG, "kv-cache-rg").inputs
    assert rg["securityGroupIds"] == [sg_id]


USER = "aws:elasticache/user:User"
USER_GROUP = "aws:elasticache/userGroup:UserGroup"
PASSWORD = "random:index/randomPassword:RandomPassword"
IEC = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
SECRET = "kubernetes:core/v1:Secret"
# LMCache v0.4.3's Redis connector sends GET, SET, EXISTS and DEL only (components/config/kvcache.py cites it).
LMCACHE_ACCESS = "on ~* -@all +get +set +exists +del"
CREDENTIAL_URL = "rediss://$(HPI_KV_CACHE_USERNAME):$(HPI_KV_CACHE_PASSWORD)@{host}:6379"


def test_rbac_user_group_replaces_the_auth_token(prod_serving: StackRun) -> None:
    rg = prod_serving.named(RG, "kv-cache-rg").inputs
    assert "authToken" not in rg
    assert rg["userGroupIds"] == ["hpi-prod-kv-users"]
    group = prod_serving.named(USER_GROUP, "kv-cache-users").inputs
    assert (group["userGroupId"], group["engine"]) == ("hpi-prod-kv-users", "redis")
    assert group["userIds"] == ["hpi-prod-kv-default", "hpi-prod-kv-lmcache"]
    default = prod_serving.named(USER, "kv-cache-default-user").inputs
    assert (default["userId"], default["userName"], default["engine"]) == ("hpi-prod-kv-default", "default", "redis")
    assert default["accessString"] == "off -@all", "a connection that does not AUTH as LMCache can do nothing"
    lmcache = prod_serving.named(USER, "kv-cache-lmcache-user").inputs
    assert (lmcache["userId"], lmcache["userName"]) == ("hpi-prod-kv-lmcache", "hpi-prod-kv-lmcache")
    assert lmcache["accessString"] == LMCACHE_ACCESS
    results = set()
    for who, user in (("default", default), ("lmcache", lmcache)):
        password = prod_serving.named(PASSWORD, f"kv-cache-{who}-password")
        assert password.inputs["special"] is False and password.inputs["length"] == 64
        assert is_secret_input(user["passwords"])
        assert unwrap(user["passwords"]) == [password.outputs["result"]]
        results.add(password.outputs["result"])
    assert len(results) == 2
    # password and connection_url are secret Outputs; the plain url carries no credentials.
    assert prod_serving.outputs["secretness"] == [True, True, False]
    host = prod_serving.named(RG, "kv-cache-rg").outputs["primaryEndpointAddress"]
    assert prod_serving.outputs["kvCacheUrl"] == f"rediss://{host}:6379"


def test_rbac_requests_validate_against_the_elasticache_model(prod_serving: StackRun) -> None:
    """The users and the group as CreateUser/CreateUserGroup requests (botocore's model is the API's contract)."""
    import botocore.session
    from botocore.validate import validate_parameters

    model = botocore.session.get_session().get_service_model("elasticache")
    for name in ("kv-cache-default-user", "kv-cache-lmcache-user"):
        u = prod_serving.named(USER, name).inputs
        params = {
            "UserId": u["userId"],
            "UserName": u["userName"],
            "Engine": u["engine"],
            "AccessString": u["accessString"],
            "Passwords": unwrap(u["passwords"]),
        }
        validate_parameters(params, model.operation_model("CreateUser").input_shape)
    g = prod_serving.named(USER_GROUP, "kv-cache-users").inputs
    validate_parameters(
        {"UserGroupId": g["userGroupId"], "Engine": g["engine"], "UserIds": g["userIds"]},
        model.operation_model("CreateUserGroup").input_shape,
    )


def test_the_custom_resource_carries_no_credential(prod_serving: StackRun) -> None:
    crs = {r.inputs["metadata"]["name"]: r for r in prod_serving.registrations if r.type == IEC}
    assert set(crs) == {"llama-70b-kvaware", "llama-70b-dpd", "qwen-sglang"}
    password = prod_serving.named(PASSWORD, "kv-cache-lmcache-password").outputs["result"]
    host = prod_serving.named(RG, "kv-cache-rg").outputs["primaryEndpointAddress"]
    asked = crs["llama-70b-kvaware"].inputs["spec"]
    assert not is_secret_input(asked), "no credential in the spec: it need not be a secret"
    assert password not in str(asked)
    url = CREDENTIAL_URL.format(host=host)
    assert asked["kvCacheSpec"]["l2CacheSpec"] == {"l2CacheBackend": "redis", "l2CacheLocalUrl": url}
    ref = {"name": "hpi-kv-cache-credentials"}
    assert asked["worker"]["environmentVariables"] == [
        {"name": "HPI_KV_CACHE_USERNAME", "valueFrom": {"secretKeyRef": {**ref, "key": "username"}}},
        {"name": "HPI_KV_CACHE_PASSWORD", "valueFrom": {"secretKeyRef": {**ref, "key": "password"}}},
        {"name": "LMCACHE_REMOTE_URL", "value": url},
        {"name": "LMCACHE_LOG_LEVEL", "value": "WARNING"},
    ]
    for name in ("llama-70b-dpd", "qwen-sglang"):
        spec = crs[name].inputs["spec"]
        assert "l2CacheSpec" not in spec.get("kvCacheSpec", {})
        assert "HPI_KV_CACHE" not in str(spec) and password not in str(spec)


def test_the_credentials_secret(prod_serving: StackRun) -> None:
    (secret,) = prod_serving.of_type(SECRET)
    assert secret.inputs["metadata"]["name"] == "hpi-kv-cache-credentials"
    assert secret.inputs["metadata"]["namespace"] == "inference"
    assert secret.inputs["type"] == "Opaque"
    assert is_secret_input(secret.inputs["stringData"])
    password = prod_serving.named(PASSWORD, "kv-cache-lmcache-password").outputs["result"]
    assert unwrap(secret.inputs["stringData"]) == {"username": "hpi-prod-kv-lmcache", "password": password}
    cr = next(r for r in prod_serving.registrations if r.type == IEC and r.name.endswith("llama-70b-kvaware"))
    assert secret.urn in cr.dependencies, "the Secret exists before the pod that reads it"
    ns = prod_serving.named("kubernetes:core/v1:Namespace", "endpoints-ns-inference")
    assert ns.urn in secret.dependencies


def test_plaintext_dev_redis_has_no_users_and_no_secret(serving_program: Path) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:environment"] = "dev"
    mapping["hyperpod-inference:kvCache"]["redis"]["transitEncryption"] = False
    run = registered(run_stack("prod", mapping, main=serving_program))
    assert run.of_type(USER) == [] and run.of_type(USER_GROUP) == [] and run.of_type(SECRET) == []
    assert "userGroupIds" not in run.named(RG, "kv-cache-rg").inputs
    host = run.named(RG, "kv-cache-rg").outputs["primaryEndpointAddress"]
    cr = next(r for r in run.registrations if r.type == IEC and r.name.endswith("llama-70b-kvaware"))
    assert cr.inputs["spec"]["kvCacheSpec"]["l2CacheSpec"]["l2CacheLocalUrl"] == f"redis://{host}:6379"
    assert "environmentVariables" not in cr.inputs["spec"]["worker"]


def test_an_endpoint_setting_the_wired_variables_is_a_config_error() -> None:
    mapping = stack_mapping("prod")
    worker = mapping["hyperpod-inference:endpoints"][0]["spec"]["worker"]
    worker["environmentVariables"] = [{"name": "LMCACHE_REMOTE_URL", "value": "rediss://other:6379"}]
    issues = _issues(mapping)
    assert (
        "hyperpod-inference:endpoints[0].spec.worker.environmentVariables[0].name: LMCACHE_REMOTE_URL is wired by this "
        "stack for the Redis L2 cache (its URL and credentials come from the Secret hpi-kv-cache-credentials); "
        "remove it"
    ) in issues


def test_an_endpoint_choosing_its_own_lmcache_log_level_keeps_it() -> None:
    from components.config.kvcache import credential_env

    env = credential_env([{"name": "LMCACHE_LOG_LEVEL", "value": "DEBUG"}], "rediss://u")
    assert [e["name"] for e in env] == ["HPI_KV_CACHE_USERNAME", "HPI_KV_CACHE_PASSWORD", "LMCACHE_REMOTE_URL"]


def test_dev_has_no_redis_and_tieredstorage_needs_no_url(serving_program: Path) -> None:
    run = registered(run_stack("dev", main=serving_program))
    assert run.of_type(RG) == []
    assert run.of_type("random:index/randomPassword:RandomPassword") == []
    (cr,) = [r for r in run.registrations if r.type.endswith(":InferenceEndpointConfig")]
    assert cr.inputs["spec"]["kvCacheSpec"]["l2CacheSpec"] == {"l2CacheBackend": "tieredstorage"}


def test_single_node_dev_redis_has_no_failover(serving_program: Path) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:kvCache"] = {
        "l2Backend": "redis",
        "redis": {"replicas": 0, "engine": "redis", "engineVersion": "7.1"},
    }
    run = registered(run_stack("dev", mapping, main=serving_program))
    rg = run.named(RG, "kv-cache-rg").inputs
    assert rg["numCacheClusters"] == 1
    assert rg["multiAzEnabled"] is False and rg["automaticFailoverEnabled"] is False
    assert rg["engine"] == "redis" and rg["transitEncryptionEnabled"] is True
    assert run.named("aws:elasticache/parameterGroup:ParameterGroup", "kv-cache-params").inputs["family"] == "redis7"
    assert run.named("aws:kms/key:Key", "kv-cache-kms").protect is False


def _issues(mapping: dict[str, Any], stack: str = "prod") -> list[str]:
    """The config errors the program reports for ``mapping`` (nothing is registered then)."""
    run = run_stack(stack, mapping)
    assert run.config_error is not None, "expected a config error"
    assert run.registrations == []
    return [i.render() for i in run.config_error.issues]


def test_prod_redis_needs_a_replica_and_tls() -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:kvCache"]["redis"].update(replicas=0, transitEncryption=False)
    # without TLS the stack's own URL is redis://, which the endpoint's L2 rule refuses in prod as well
    assert _issues(mapping) == [
        "hyperpod-inference:kvCache.redis.replicas: prod needs at least 1 replica (Multi-AZ with automatic "
        "failover); 0 leaves every worker's L2 tier on one node",
        "hyperpod-inference:kvCache.redis.transitEncryption: must be true in prod: KV blocks are derived from user "
        "prompts and the Redis credentials need TLS",
        "hyperpod-inference:endpoints[0].spec.kvCacheSpec.l2CacheSpec.l2CacheLocalUrl: prod needs a TLS Redis URL "
        "(rediss://...); got redis:// [l2-redis-wired]",
    ]


def test_unpinned_engine_version_is_a_config_error() -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:kvCache"]["redis"]["engineVersion"] = "9.9"
    assert _issues(mapping) == [
        "hyperpod-inference:kvCache.redis.engineVersion: valkey 9.9 is not a pinned ElastiCache version; "
        "allowed: 7.2, 8.0, 8.1"
    ]


def test_user_url_conflicting_with_the_stacks_redis_is_a_config_error() -> None:
    mapping = stack_mapping("prod")
    l2 = mapping["hyperpod-inference:endpoints"][0]["spec"]["kvCacheSpec"]["l2CacheSpec"]
    l2["l2CacheLocalUrl"] = "redis://other-redis.example.com:6379"
    url_key = "hyperpod-inference:endpoints[0].spec.kvCacheSpec.l2CacheSpec.l2CacheLocalUrl"
    assert _issues(mapping) == [
        f"{url_key}: prod needs a TLS Redis URL (rediss://...); got redis:// [l2-redis-wired]",
        f"{url_key}: this stack creates the Redis L2 cache (kvCache.l2Backend: redis) and fills in its URL and "
        "AUTH token; remove l2CacheLocalUrl (a second Redis would split the cache)",
    ]


@pytest.mark.parametrize("backend", ["none", "tieredstorage"])
def test_redis_endpoint_without_stack_redis_is_a_config_error(backend: str) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:kvCache"] = {"l2Backend": backend}
    l2 = "hyperpod-inference:endpoints[0].spec.kvCacheSpec.l2CacheSpec"
    assert _issues(mapping) == [
        f"{l2}.l2CacheLocalUrl: l2CacheBackend redis needs l2CacheLocalUrl (the Redis/Valkey URL) [l2-redis-wired]",
        f"{l2}.l2CacheBackend: redis needs a Redis URL: kvCache.l2Backend: redis (the stack's ElastiCache, or "
        f"kvCache.redis.external), or the endpoint's own l2CacheLocalUrl; kvCache.l2Backend is {backend}",
    ]


def test_real_program_admits_only_the_hyperpod_node_sg(stack_runs: dict[str, StackRun]) -> None:
    """Wired in __main__.py: the ingress rule references the cluster layer's node SG, nothing else."""
    run = stack_runs["prod"]
    (component,) = [r for r in run.registrations if r.type == "hyperpod:node_security_group:NodeSecurityGroup"]
    node_sgs = [r for r in run.of_type("aws:ec2/securityGroup:SecurityGroup") if r.parent == component.urn]
    assert len(node_sgs) == 1
    node_sg_id = rid(run, "aws:ec2/securityGroup:SecurityGroup", node_sgs[0].name)
    redis_sg_id = rid(run, "aws:ec2/securityGroup:SecurityGroup", "kv-cache-sg")
    rules = [
        r.inputs
        for r in run.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.inputs["securityGroupId"] == redis_sg_id
    ]
    assert rules == [
        {
            "securityGroupId": redis_sg_id,
            "referencedSecurityGroupId": node_sg_id,
            "ipProtocol": "tcp",
            "fromPort": 6379,
            "toPort": 6379,
            "description": "LMCache (HyperPod inference workers) to the L2 KV cache",
            "tags": rules[0]["tags"],
        }
    ]
    assert run.outputs["kvCacheUrl"].startswith("rediss://master.hpi-prod-kv.")
    assert stack_runs["dev"].of_type(RG) == []


def test_readiness_knows_every_new_serving_type(prod_serving: StackRun) -> None:
    """Each type this layer added has its own readiness entry (not the generic fallbacks)."""
    from policies.readiness import load_readiness

    readiness = load_readiness()
    expected = {
        USER: "ElastiCache RBAC user",
        USER_GROUP: "ElastiCache RBAC user group",
        SECRET: "Secret (Redis credentials for LMCache)",
        "kubernetes:rbac.authorization.k8s.io/v1:Role": "Role (endpoint viewer)",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": "RoleBinding (endpoint viewers group)",
    }
    for typ, label in expected.items():
        found = prod_serving.of_type(typ)
        assert found, f"prod's serving program registers no {typ}"
        assert readiness.entry_for(typ, found[0].inputs).label == label


# --- the ACL follows the image's LMCache release (issue 47 item 6) ----------------------------------------------


def _lmcache_advisories(mapping: dict[str, Any]) -> list[Any]:
    from components.config.loader import parse_stack_mapping
    from components.config.validation import run_advisories

    return [
        a for a in run_advisories(parse_stack_mapping("prod", mapping)) if a.rule == "lmcache-redis-commands-unknown"
    ]


def _redis_endpoints(mapping: dict[str, Any]) -> list[int]:
    eps = mapping["hyperpod-inference:endpoints"]
    return [
        i
        for i, ep in enumerate(eps)
        if ((ep.get("spec") or {}).get("kvCacheSpec") or {}).get("l2CacheSpec", {}).get("l2CacheBackend") == "redis"
    ]


@pytest.mark.parametrize("tag", ["v0.4.3", "v0.5.6"])
def test_a_listed_lmcache_release_needs_no_advisory(tag: str) -> None:
    mapping = stack_mapping("prod")
    (i, *_) = _redis_endpoints(mapping)
    mapping["hyperpod-inference:endpoints"][i]["spec"]["worker"]["image"] = f"lmcache/vllm-openai:{tag}"
    assert _lmcache_advisories(mapping) == []


@pytest.mark.parametrize("image", ["lmcache/vllm-openai:v0.5.2", "vllm/vllm-openai:v0.19.1"])
def test_an_unread_lmcache_release_is_an_advisory_naming_the_verify_check(image: str) -> None:
    mapping = stack_mapping("prod")
    (i, *_) = _redis_endpoints(mapping)
    mapping["hyperpod-inference:endpoints"][i]["spec"]["worker"]["image"] = image
    (advisory,) = _lmcache_advisories(mapping)
    assert advisory.path == f"endpoints[{i}].spec.worker.image"
    assert advisory.message.startswith(f"{image} does not name an LMCache release whose Redis commands are known")
    assert "GET, SET, EXISTS, DEL only" in advisory.message
    assert advisory.checked_by.startswith("tools.verify check endpoint-pods (NOPERM in the worker's log)")


def test_the_acl_is_the_union_of_the_endpoints_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release that sends another command widens the ACL by exactly that command; the others keep theirs."""
    from components.config.kvcache import lmcache_access_string
    from components.config.loader import parse_stack_mapping
    from policies import compatibility as compat

    table = compat.load_compatibility()
    newer = compat.LmcacheRedisCommands(
        lmcache="0.9.0", commands=("get", "set", "exists", "del", "mget"), source="LMC056"
    )
    monkeypatch.setattr(
        compat,
        "load_compatibility",
        lambda: table.model_copy(update={"lmcache_redis_commands": (*table.lmcache_redis_commands, newer)}),
    )
    mapping = stack_mapping("prod")
    cfg = parse_stack_mapping("prod", mapping)
    assert lmcache_redis_acl(cfg.endpoints) == (("get", "set", "exists", "del"), [])  # type: ignore[union-attr]
    (i, *_) = _redis_endpoints(mapping)
    mapping["hyperpod-inference:endpoints"][i]["spec"]["worker"]["image"] = "lmcache/vllm-openai:v0.9.0"
    commands, unknown = lmcache_redis_acl(parse_stack_mapping("prod", mapping).endpoints)  # type: ignore[union-attr]
    assert lmcache_access_string(commands) == "on ~* -@all +get +set +exists +del +mget" and unknown == []
