"""The shared dynamic-provider base (issue 39, issue 33 item 3): the stack's credential chain reaches every dynamic
resource, assume-role chains are assumed in order through STS (botocore's Stubber checks each request against the
real sts model), keys the providers cannot honour are config errors naming the key, and a changed chain is an
update, never a replacement."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from components import dynamic_provider as base
from components.config import ConfigError
from components.config.aws_chain import aws_chain_issues, duration_seconds
from components.config.loader import parse_stack_mapping
from components.global_inference_gateway import GlobalInferenceGatewayProvider
from components.hyperpod_node_wait import HyperPodNodeWaitProvider
from tests.conftest import registered, stack_mapping
from tools.plan.mocks import unwrap_secrets

DYNAMIC = "pulumi-python:dynamic:Resource"
ROLE_A = "arn:aws:iam::111111111111:role/deployer"
ROLE_B = "arn:aws:iam::222222222222:role/inference-admin"


# --- the config: honoured keys pass, the others are refused by name ----------------------------------------------


@pytest.mark.parametrize(
    ("key", "fix"),
    [
        ("aws:accessKey", "AWS_ACCESS_KEY_ID"),
        ("aws:secretKey", "AWS_SECRET_ACCESS_KEY"),
        ("aws:token", "AWS_SESSION_TOKEN"),
        ("aws:assumeRoleWithWebIdentity", "AWS_WEB_IDENTITY_TOKEN_FILE"),
        ("aws:sharedCredentialsFiles", "AWS_SHARED_CREDENTIALS_FILE"),
        ("aws:sharedConfigFiles", "AWS_CONFIG_FILE"),
    ],
)
def test_keys_the_dynamic_providers_cannot_honour_are_refused(key: str, fix: str) -> None:
    mapping = stack_mapping("dev")
    mapping[key] = "AKIAEXAMPLE" if key.endswith("Key") else "x"
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping("dev", mapping)
    [issue] = [i for i in err.value.issues if i.path == key]
    assert issue.render().startswith(f"{key}: not supported by this program")
    assert fix in issue.message


def test_the_global_stack_refuses_them_too() -> None:
    mapping = stack_mapping("global")
    mapping["aws:accessKey"] = "AKIAEXAMPLE"
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping("global", mapping)
    assert [i.path for i in err.value.issues] == ["aws:accessKey"]


def test_assume_roles_entries_are_checked() -> None:
    issues = aws_chain_issues(
        {
            "aws:assumeRoles": [
                {"roleArn": ROLE_A, "duration": "1h"},
                {"roleArn": "deployer", "duration": "5m", "sesionName": "x"},
                {"roleArn": ROLE_B, "duration": "soon"},
            ]
        },
        kubernetes=False,  # the entries themselves; the kubeconfig's limits have their own test
    )
    assert [(i.path, i.message.split(";")[0].split(":")[0]) for i in issues] == [
        ("aws:assumeRoles[1].sesionName", "unknown key"),
        ("aws:assumeRoles[1].roleArn", "required"),
        ("aws:assumeRoles[1].duration", "must be between 15 minutes and 12 hours (15m to 12h)"),
        ("aws:assumeRoles[2].duration", "'soon' is not a duration such as 1h or 90m"),
    ]
    assert aws_chain_issues({"aws:assumeRoles": '{"roleArn": "x"}'})[0].message.startswith("must be a list")
    assert aws_chain_issues({"aws:profile": "p", "aws:assumeRoles": [{"roleArn": ROLE_A}]}) == []


@pytest.mark.parametrize(("text", "seconds"), [("1h", 3600), ("90m", 5400), ("1h30m", 5400), ("900s", 900)])
def test_durations_read_as_the_aws_provider_writes_them(text: str, seconds: int) -> None:
    assert duration_seconds(text) == seconds


def test_the_chain_reaches_every_dynamic_resource(run: Any) -> None:
    mapping = stack_mapping("dev")
    mapping["aws:profile"] = "inference-admin"
    mapping["aws:assumeRoles"] = [{"roleArn": ROLE_B, "sessionName": "ci"}]
    mapping["aws:stsRegion"] = "us-east-1"
    result = registered(run("dev", mapping))
    kinds = {"hyperpod:HyperPodNodeWait", "hyperpod:LoadBalancerControllerDrain", "hyperpod:GuardDutyEndpointCleanup"}
    waits = [r for r in result.of_type(DYNAMIC) if r.inputs.get("resourceKind") in kinds]
    assert {r.inputs["resourceKind"] for r in waits} == kinds, "a wait is not registered"
    for reg in waits:
        assert reg.inputs["awsProfile"] == "inference-admin"
        assert reg.inputs["awsAssumeRoles"] == [{"roleArn": ROLE_B, "sessionName": "ci"}]
        assert reg.inputs["awsStsRegion"] == "us-east-1"


# --- the Kubernetes provider runs as the assumed role too (issue 47 item 2) ----------------------------------------


def _get_token_args(kubeconfig: Any) -> list[str]:
    doc = json.loads(kubeconfig) if isinstance(kubeconfig, str) else kubeconfig
    return list(doc["users"][0]["user"]["exec"]["args"])


def test_the_kubeconfig_takes_the_assumed_role_and_the_profile(run: Any) -> None:
    """pulumi-eks copies only a profile into the kubeconfig by default; providerCredentialOpts.roleArn makes its
    get-token call `--role <arn>` (pulumi-eks generateKubeconfig), so the chart and the custom resources are
    applied as the role that created the cluster, its only admin."""
    mapping = stack_mapping("dev")
    mapping["aws:profile"] = "inference-admin"
    mapping["aws:assumeRoles"] = [{"roleArn": ROLE_B, "sessionName": "ci"}]
    result = registered(run("dev", mapping))
    (cluster,) = result.of_type("eks:index:Cluster")
    assert cluster.inputs["providerCredentialOpts"] == {"profileName": "inference-admin", "roleArn": ROLE_B}
    (provider,) = result.of_type("pulumi:providers:kubernetes")
    args = _get_token_args(unwrap_secrets(provider.inputs["kubeconfig"]))
    assert args[-4:] == ["--role", ROLE_B, "--profile", "inference-admin"]


def test_without_a_role_the_kubeconfig_is_pulumi_eks_default(run: Any) -> None:
    result = registered(run("dev", stack_mapping("dev")))
    (cluster,) = result.of_type("eks:index:Cluster")
    assert "providerCredentialOpts" not in cluster.inputs


def test_an_adopted_cluster_kubeconfig_takes_them_too() -> None:
    from components.existing_eks_cluster import kubeconfig

    args = _get_token_args(kubeconfig("c", "https://e", "ca", "us-west-2", profile="p", role_arn=ROLE_B))
    assert args == [
        "eks", "get-token", "--cluster-name", "c", "--region", "us-west-2", "--output", "json",
        "--role-arn", ROLE_B, "--profile", "p",
    ]  # fmt: skip
    assert "--role-arn" not in _get_token_args(kubeconfig("c", "https://e", "ca", "us-west-2"))


@pytest.mark.parametrize(
    ("roles", "path", "start"),
    [
        (
            [{"roleArn": ROLE_A}, {"roleArn": ROLE_B}],
            "aws:assumeRoles",
            "2 roles chained: the Kubernetes provider's token comes from `aws eks get-token --role-arn`",
        ),
        ([{"roleArn": ROLE_B, "externalId": "e"}], "aws:assumeRoles[0].externalId", "`aws eks get-token --role-arn`"),
        ([{"roleArn": ROLE_B, "policyArns": ["arn:aws:iam::aws:policy/x"]}], "aws:assumeRoles[0].policyArns", "`aws"),
    ],
)
def test_what_the_kubeconfig_cannot_follow_is_refused_with_the_fix(roles: Any, path: str, start: str) -> None:
    mapping = stack_mapping("dev")
    mapping["aws:assumeRoles"] = roles
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping("dev", mapping)
    (issue,) = [i for i in err.value.issues if i.path == path]
    assert issue.message.startswith(start) and "aws:profile" in issue.message


def test_a_global_stack_may_chain_roles() -> None:
    """No Kubernetes call there: the chain is the dynamic provider's alone."""
    mapping = stack_mapping("global")
    mapping["aws:assumeRoles"] = [{"roleArn": ROLE_A}, {"roleArn": ROLE_B, "externalId": "e"}]
    parse_stack_mapping("global", mapping)


def test_the_global_gateway_gets_the_chain(run: Any) -> None:
    mapping = stack_mapping("global")
    mapping["aws:assumeRoles"] = [{"roleArn": ROLE_B}]
    result = registered(run("global", mapping))
    gateway = result.named(DYNAMIC, "global-gateway")
    assert gateway.inputs["awsAssumeRoles"] == [{"roleArn": ROLE_B}]
    assert "awsProfile" not in gateway.inputs


# --- assume-role chains through STS --------------------------------------------------------------------------------


class _Sessions:
    """Stands in for boto3.Session: records how each session is built; STS clients are real, stubbed clients."""

    def __init__(self, expected: list[dict[str, Any]]) -> None:
        self.expected = expected
        self.made: list[dict[str, Any]] = []
        self.stubs: list[Stubber] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.made.append(kwargs)
        sessions = self

        class _Session:
            def client(self, service: str, region_name: str | None = None) -> Any:
                creds = kwargs.get("botocore_session")
                real = boto3.session.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret")
                client = real.client(service, region_name=region_name)
                client.made_with = creds  # type: ignore[attr-defined]
                if service == "sts":
                    stub = Stubber(client)
                    params = sessions.expected[len(sessions.stubs)]
                    stub.add_response(
                        "assume_role",
                        {
                            "Credentials": {
                                "AccessKeyId": f"ASIA{len(sessions.stubs)}EXAMPLEEXAMPLE",
                                "SecretAccessKey": "s" * 40,
                                "SessionToken": "token",
                                "Expiration": dt.datetime(2030, 1, 1, tzinfo=dt.UTC),
                            }
                        },
                        params,
                    )
                    stub.activate()
                    sessions.stubs.append(stub)
                return client

        return _Session()


def test_roles_are_assumed_in_order_with_the_profile_first(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = [
        {"RoleArn": ROLE_A, "RoleSessionName": "ci", "DurationSeconds": 3600},
        {
            "RoleArn": ROLE_B,
            "RoleSessionName": "hyperpod-inference-dynamic-provider-1",
            "ExternalId": "ext-42",
            "Tags": [{"Key": "team", "Value": "ml"}],
        },
    ]
    sessions = _Sessions(expected)
    monkeypatch.setattr(boto3, "Session", sessions)
    roles = [
        {"roleArn": ROLE_A, "sessionName": "ci", "duration": "1h"},
        {"roleArn": ROLE_B, "externalId": "ext-42", "tags": {"team": "ml"}},
    ]
    client = base.session_for("deployer", roles, "us-west-2", "us-east-1").client("sagemaker", region_name="us-west-2")
    assert sessions.made[0] == {"profile_name": "deployer"}
    assert len(sessions.stubs) == 2
    for stub in sessions.stubs:
        stub.assert_no_pending_responses()
    # the last session carries the second role's credentials
    final = sessions.made[-1]["botocore_session"].get_credentials().get_frozen_credentials()
    assert final.access_key == "ASIA1EXAMPLEEXAMPLE"
    assert client.made_with is sessions.made[-1]["botocore_session"]


def test_no_chain_is_the_process_default(monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = _Sessions([])
    monkeypatch.setattr(boto3, "Session", sessions)
    base.session_for(None, [], "us-west-2")
    assert sessions.made == [{}]


# --- the base's plumbing ---------------------------------------------------------------------------------------------


def test_a_new_chain_drops_the_clients_of_the_old_one() -> None:
    provider = HyperPodNodeWaitProvider(client_factory=lambda _s, region: object())
    props = {"region": "us-east-1", "awsProfile": "a"}
    provider._use(props)
    first = provider._client("us-east-1")
    assert provider._client("us-east-1") is first
    provider._use(props)
    assert provider._client("us-east-1") is first  # same chain: same client
    provider._use({**props, "awsAssumeRoles": [{"roleArn": ROLE_A}]})
    assert provider._client("us-east-1") is not first
    assert provider._profile == "a"


@pytest.mark.parametrize("provider_cls", [HyperPodNodeWaitProvider, GlobalInferenceGatewayProvider])
@pytest.mark.parametrize("key", base.CREDENTIAL_KEYS)
def test_a_changed_chain_is_an_update_not_a_replacement(provider_cls: type, key: str) -> None:
    olds = {"region": "us-east-1", "clusterArn": "c", "name": "n", "executionRoleArn": "r"}
    diff = provider_cls().diff("id", olds, {**olds, key: "x"})
    assert diff.changes is True
    assert not diff.replaces
    assert provider_cls().diff("id", olds, dict(olds)).changes is False


def test_clients_retry_in_botocores_adaptive_mode() -> None:
    """Throttling is botocore's to retry (components/aws_calls.py), not a loop of the provider's."""
    provider = HyperPodNodeWaitProvider()
    provider._use({"region": "us-east-1"})
    assert provider._client("us-east-1").meta.config.retries == {"mode": "adaptive", "total_max_attempts": 10}


def _sagemaker_stub(*codes: str) -> tuple[Any, Stubber]:
    client = boto3.client("sagemaker", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    stub = Stubber(client)
    for code in codes:
        stub.add_client_error("list_clusters", service_error_code=code)
    stub.activate()
    return client, stub


def test_throttling_that_outlasts_botocores_retries_is_one_error_at_once() -> None:
    client, stub = _sagemaker_stub("ThrottlingException")
    slept: list[float] = []
    provider = base.DynamicProviderBase(client_factory=lambda _s, _r: client, sleep=slept.append, log=lambda m: None)
    with pytest.raises(RuntimeError, match=r"ListClusters failed \(ThrottlingException\)"):
        provider._call("us-east-1", "ListClusters")
    assert slept == []
    stub.assert_no_pending_responses()


def test_a_retry_code_botocore_does_not_retry_is_retried_with_backoff_then_one_error() -> None:
    client, stub = _sagemaker_stub(*["ConflictException"] * (base.MAX_RETRIES + 1))
    slept: list[float] = []
    provider = base.DynamicProviderBase(client_factory=lambda _s, _r: client, sleep=slept.append, log=lambda m: None)
    provider.retry_codes = frozenset({"ConflictException"})
    with pytest.raises(RuntimeError, match=r"ListClusters failed \(ConflictException\)"):
        provider._call("us-east-1", "ListClusters")
    assert slept == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    stub.assert_no_pending_responses()


def test_the_destroy_waits_call_aws_on_the_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The LB-controller drain's and GuardDuty cleanup's clients come from the resource's chain (issue 33 item 3):
    the profile first, then each role; the same chain reuses its client, another one makes a new one."""
    from components import destroy_waits

    made: list[tuple[Any, ...]] = []

    class _Session:
        def client(self, service: str, region_name: str, config: Any) -> tuple[str, str]:
            assert config.retries == {"mode": "adaptive", "total_max_attempts": 10}
            return (service, region_name)

    def session_for(profile: Any, roles: Any, region: str, sts_region: Any = None) -> _Session:
        made.append((profile, roles, region, sts_region))
        return _Session()

    monkeypatch.setattr(base, "session_for", session_for)
    provider = destroy_waits.GuardDutyEndpointCleanupProvider()
    props = {
        "region": "eu-west-2",
        "awsProfile": "deployer",
        "awsAssumeRoles": [{"roleArn": ROLE_A}],
        "awsStsRegion": None,
    }
    assert provider._aws("ec2", props) == ("ec2", "eu-west-2")
    provider._aws("ec2", props)
    assert made == [("deployer", ({"roleArn": ROLE_A},), "eu-west-2", None)]
    provider._aws("ec2", {**props, "awsAssumeRoles": [{"roleArn": ROLE_B}]})
    assert made[-1] == ("deployer", ({"roleArn": ROLE_B},), "eu-west-2", None)
