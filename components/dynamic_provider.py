"""The one base of this package's Pulumi dynamic providers: AWS clients on the stack's credential chain, retries, diff.

Why one base: the node wait (``hyperpod_node_wait.py``), the Global Inference Gateway (``global_inference_gateway.py``)
and the cluster scheduler config (``cluster_scheduler_config.py``) all drive the SageMaker API with boto3 from the
process that runs ``pulumi up``. Each used to make its own client, retry throttling its own way and diff by hand.

**Credentials (issue 33 item 3).** boto3 in a dynamic provider does not see the ``aws`` provider's configuration: with
nothing passed it runs as whatever the process's default chain finds, possibly another principal or account than the
rest of the stack. So the program passes the chain the ``aws`` provider is configured with as inputs of every dynamic
resource (:func:`credential_inputs`):

- ``awsProfile`` — ``aws:profile`` (a named profile of the shared config/credentials files);
- ``awsAssumeRoles`` — ``aws:assumeRoles``, assumed **in order**, each with the credentials of the one before, as the
  aws provider does (pulumi-aws 7.51.1 ``config/outputs.py`` ``AssumeRoles``: roleArn, sessionName, externalId,
  duration, policy, policyArns, tags, transitiveTagKeys, sourceIdentity); the sessions refresh themselves
  (botocore ``RefreshableCredentials``), so a wait longer than a session's duration keeps working;
- ``awsStsRegion`` — ``aws:stsRegion``, where the STS calls go (else the resource's region).

Keys of the ``aws`` namespace the dynamic providers cannot honour are refused by the config
(``components/config/aws_chain.py``): static keys (``aws:accessKey``/``secretKey``/``token``) would have to be stored
in the state as inputs — and a delete runs with the inputs of the state, so a rotated key would break it — and
``aws:assumeRoleWithWebIdentity`` / ``sharedConfigFiles`` / ``sharedCredentialsFiles`` change where credentials come
from in ways the process's boto3 would not follow. The refusal names the alternative (a profile, or the
``AWS_*`` environment variables, which both the aws provider and boto3 read).

A dynamic provider's ``read`` and ``delete`` get the inputs saved in the state: a changed chain is therefore an
*update* of every dynamic resource (no AWS call beyond the resource's own update), so the state always holds the
chain the last ``pulumi up`` ran with.

**Retries.** Throttling (and, where the API documents it, ConflictException) is retried with exponential backoff up
to :data:`MAX_RETRIES` times on top of botocore's own retries; every other error becomes one message through the
subclass's :meth:`DynamicProviderBase.error`.

Nothing AWS-related is held at construction: the provider is pickled into the state, clients are made on first use
and dropped from the pickle. ``client_factory``/``sleep``/``clock``/``log`` are injectable for tests.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
from botocore.exceptions import ClientError
from pulumi import dynamic

from .config.aws_chain import duration_seconds

THROTTLING_CODES = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"})
DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
NOT_FOUND_CODES = frozenset({"ResourceNotFound", "ResourceNotFoundException"})
MAX_RETRIES = 6
MAX_BACKOFF_SECONDS = 30.0
# Inputs every dynamic resource carries for the credential chain (see the module docstring).
CREDENTIAL_KEYS: tuple[str, ...] = ("awsProfile", "awsAssumeRoles", "awsStsRegion")
DEFAULT_SESSION_NAME = "hyperpod-inference-dynamic-provider"


def error_code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def error_message(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Message", "") or err)


def snake(operation: str) -> str:
    """``CreateClusterSchedulerConfig`` -> ``create_cluster_scheduler_config`` (the boto3 method name)."""
    out = ""
    for i, ch in enumerate(operation):
        if ch.isupper() and i:
            out += "_"
        out += ch.lower()
    return out


def assume_role_params(entry: Mapping[str, Any], index: int) -> dict[str, Any]:
    """STS ``AssumeRole`` parameters of one ``aws:assumeRoles`` entry."""
    params: dict[str, Any] = {"RoleArn": str(entry["roleArn"])}
    params["RoleSessionName"] = str(entry.get("sessionName") or f"{DEFAULT_SESSION_NAME}-{index}")
    if entry.get("externalId"):
        params["ExternalId"] = str(entry["externalId"])
    if entry.get("duration"):
        params["DurationSeconds"] = duration_seconds(str(entry["duration"]))
    if entry.get("policy"):
        params["Policy"] = str(entry["policy"])
    if entry.get("policyArns"):
        params["PolicyArns"] = [{"arn": str(a)} for a in entry["policyArns"]]
    if entry.get("tags"):
        params["Tags"] = [{"Key": str(k), "Value": str(v)} for k, v in sorted(dict(entry["tags"]).items())]
    if entry.get("transitiveTagKeys"):
        params["TransitiveTagKeys"] = [str(k) for k in entry["transitiveTagKeys"]]
    if entry.get("sourceIdentity"):
        params["SourceIdentity"] = str(entry["sourceIdentity"])
    return params


def credential_inputs(config: pulumi.Config | None = None) -> dict[str, Any]:
    """The ``aws`` provider's credential chain as dynamic-resource inputs (program side; see the module docstring).

    ``aws:assumeRoles`` arrives as JSON text (structured config); the config layer has already validated it."""
    aws = config or pulumi.Config("aws")
    roles = aws.get_object("assumeRoles")
    return {
        "awsProfile": aws.get("profile"),
        "awsAssumeRoles": [dict(r) for r in roles] if isinstance(roles, list) and roles else None,
        "awsStsRegion": aws.get("stsRegion"),
    }


def kubeconfig_credentials(config: pulumi.Config | None = None) -> tuple[str | None, str | None]:
    """``(aws:profile, the one aws:assumeRoles roleArn)`` for the Kubernetes provider's ``aws eks get-token``.

    The config layer refused what get-token cannot follow (components/config/aws_chain.py, issue 47 item 2), so
    there is at most one role here."""
    aws = config or pulumi.Config("aws")
    roles = aws.get_object("assumeRoles")
    role = (
        roles[0].get("roleArn") if isinstance(roles, list) and len(roles) == 1 and isinstance(roles[0], dict) else None
    )
    return aws.get("profile") or None, str(role) if role else None


def chain_of(props: Mapping[str, Any]) -> tuple[str | None, tuple[dict[str, Any], ...], str | None]:
    """(profile, assume-role entries, STS region) of a resource's inputs."""
    roles = props.get("awsAssumeRoles") or []
    return (
        props.get("awsProfile") or None,
        tuple(dict(r) for r in roles if isinstance(r, Mapping)),
        props.get("awsStsRegion") or None,
    )


def session_for(
    profile: str | None, roles: Sequence[Mapping[str, Any]], region: str, sts_region: str | None = None
) -> Any:
    """A boto3 session: the profile (or the process's default chain), then each role of ``roles`` in order."""
    import boto3
    from botocore.credentials import RefreshableCredentials
    from botocore.session import get_session

    session = boto3.Session(profile_name=profile) if profile else boto3.Session()
    for index, entry in enumerate(roles):
        params = assume_role_params(entry, index)
        sts = session.client("sts", region_name=sts_region or region)

        def refresh(sts: Any = sts, params: dict[str, Any] = params) -> dict[str, str]:
            creds = sts.assume_role(**params)["Credentials"]
            expiry = creds["Expiration"]
            return {
                "access_key": creds["AccessKeyId"],
                "secret_key": creds["SecretAccessKey"],
                "token": creds["SessionToken"],
                "expiry_time": expiry.isoformat() if isinstance(expiry, dt.datetime) else str(expiry),
            }

        botocore_session = get_session()
        botocore_session._credentials = RefreshableCredentials.create_from_metadata(
            metadata=refresh(), refresh_using=refresh, method="assume-role"
        )
        session = boto3.Session(botocore_session=botocore_session, region_name=region)
    return session


class DynamicProviderBase(dynamic.ResourceProvider):
    """Clients on the resource's credential chain, retried API calls, waits and a key-list diff.

    Subclasses set :attr:`service` (boto3 service name), :attr:`replace_keys` and :attr:`update_keys` (for
    :meth:`diff_keys`), :attr:`retry_codes` (extra error codes worth retrying) and implement :meth:`error`.
    """

    service = "sagemaker"
    retry_codes: frozenset[str] = frozenset()
    replace_keys: tuple[str, ...] = ()
    update_keys: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        client_factory: Callable[[str], Any] | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self._client_factory = client_factory
        self._sleep = sleep
        self._clock = clock
        self._log = log
        self._clients: dict[str, Any] = {}
        self._chain: tuple[str | None, tuple[dict[str, Any], ...], str | None] = (None, (), None)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_clients"] = {}
        return state

    # credentials and clients

    @property
    def _profile(self) -> str | None:
        return self._chain[0]

    def _use(self, props: Mapping[str, Any]) -> str:
        """The API Region of these props; also takes their credential chain (clients of another chain are dropped)."""
        chain = chain_of(props)
        if chain != self._chain:
            self._chain = chain
            self._clients = {}
        return str(props["region"])

    def _client(self, region: str) -> Any:
        if region not in self._clients:
            if self._client_factory is not None:
                self._clients[region] = self._client_factory(region)
            else:
                profile, roles, sts_region = self._chain
                self._clients[region] = session_for(profile, roles, region, sts_region).client(
                    self.service, region_name=region
                )
        return self._clients[region]

    # time and logs (injectable)

    def _now(self) -> float:
        return (self._clock or time.monotonic)()

    def _wait(self, seconds: float) -> None:
        (self._sleep or time.sleep)(seconds)

    def _info(self, message: str) -> None:
        (self._log or pulumi.log.info)(message)

    # API calls

    def error(self, operation: str, params: Mapping[str, Any], err: ClientError) -> Exception:
        """One clear error for a failed call (subclasses name the IAM action and the fix)."""
        return RuntimeError(f"{operation} failed ({error_code(err)}): {error_message(err)}")

    def _call(self, region: str, operation: str, *, missing_ok: bool = False, **params: Any) -> Any:
        """One API call: throttling (and :attr:`retry_codes`) retried with backoff, errors through :meth:`error`.

        ``missing_ok``: a ResourceNotFound answer returns None instead of raising.
        """
        method = getattr(self._client(region), snake(operation))
        delay = 1.0
        retryable = THROTTLING_CODES | self.retry_codes
        for attempt in range(MAX_RETRIES + 1):
            try:
                return method(**params)
            except ClientError as err:
                code = error_code(err)
                if missing_ok and code in NOT_FOUND_CODES:
                    return None
                if code in retryable and attempt < MAX_RETRIES:
                    self._info(f"{operation}: {code}, retrying in {delay:g}s")
                    self._wait(delay)
                    delay = min(delay * 2, MAX_BACKOFF_SECONDS)
                    continue
                raise self.error(operation, params, err) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _sync_tags(self, region: str, arn: str, olds: Mapping[str, Any] | None, news: Mapping[str, Any] | None) -> None:
        """``DeleteTags`` for keys gone, ``AddTags`` for keys new or changed (SageMaker's tag API)."""
        old_tags, new_tags = dict(olds or {}), dict(news or {})
        gone = sorted(k for k in old_tags if k not in new_tags)
        if gone:
            self._call(region, "DeleteTags", ResourceArn=arn, TagKeys=gone)
        changed = {k: v for k, v in sorted(new_tags.items()) if old_tags.get(k) != v}
        if changed:
            self._call(
                region, "AddTags", ResourceArn=arn, Tags=[{"Key": k, "Value": str(v)} for k, v in changed.items()]
            )

    # diff

    def diff_keys(
        self, olds: Mapping[str, Any], news: Mapping[str, Any], *, extra_changes: Sequence[str] = ()
    ) -> dynamic.DiffResult:
        """Replace on :attr:`replace_keys`, update on :attr:`update_keys` and on a changed credential chain (so the
        state holds the chain ``read``/``delete`` run with); an empty value and a missing one are the same."""
        replaces = [k for k in self.replace_keys if olds.get(k) != news.get(k)]
        changed = [k for k in (*self.update_keys, *CREDENTIAL_KEYS) if (olds.get(k) or None) != (news.get(k) or None)]
        changed.extend(extra_changes)
        return dynamic.DiffResult(changes=bool(replaces or changed), replaces=replaces)
