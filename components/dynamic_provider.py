"""The one base of this package's Pulumi dynamic providers: AWS clients on the stack's credential chain, retries, diff.

Why one base: the node wait (``hyperpod_node_wait.py``), the Global Inference Gateway (``global_inference_gateway.py``),
the cluster scheduler config (``cluster_scheduler_config.py``) and the destroy waits (``destroy_waits.py``) all drive
AWS APIs with boto3 from the process that runs ``pulumi up``. Each used to make its own client, retry throttling its
own way and diff by hand.

**Credentials.** boto3 in a dynamic provider does not see the ``aws`` provider's configuration: with
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

**Retries.** Throttling and transient errors are botocore's: every client runs in the ``adaptive`` retry mode
(``components/aws_calls.py``). Only what botocore does not retry and the API documents as retryable
(:attr:`DynamicProviderBase.retry_codes`, ConflictException) is retried here, up to :data:`MAX_RETRIES` times with
exponential backoff; every other error becomes one message through the subclass's :meth:`DynamicProviderBase.error`.
Listed results come through the operations' paginators (:meth:`DynamicProviderBase._items`).

Nothing AWS-related is held at construction: the provider is pickled into the state, clients are made on first use
and dropped from the pickle. ``client_factory``/``sleep``/``clock``/``log`` are injectable for tests.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pulumi
from botocore.exceptions import ClientError
from pulumi import dynamic

from . import aws_calls
from .aws_calls import DENIED_CODES, NOT_FOUND_CODES, error_code, error_message
from .config.aws_chain import duration_seconds

__all__ = ["DENIED_CODES", "NOT_FOUND_CODES", "DynamicProviderBase", "error_code", "error_message"]

# Error codes that mean botocore's own retries (adaptive mode) ran out on a throttle: named in the error message.
THROTTLING_CODES = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"})
THROTTLED = f"still throttled after botocore's {aws_calls.PROVIDER_RETRIES.retries['total_max_attempts']} attempts"
MAX_RETRIES = 6  # of retry_codes (ConflictException), which botocore does not retry
MAX_BACKOFF_SECONDS = 30.0
# Inputs every dynamic resource carries for the credential chain (see the module docstring).
CREDENTIAL_KEYS: tuple[str, ...] = ("awsProfile", "awsAssumeRoles", "awsStsRegion")
DEFAULT_SESSION_NAME = "hyperpod-inference-dynamic-provider"


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

    Subclasses set :attr:`service` (the boto3 service :meth:`_call` uses), :attr:`replace_keys` and
    :attr:`update_keys` (for :meth:`diff_keys`), :attr:`retry_codes` (error codes worth retrying that botocore does
    not retry) and implement :meth:`error`. ``client_factory(service, region)`` replaces the real clients in tests.
    """

    service = "sagemaker"
    retry_codes: frozenset[str] = frozenset()
    replace_keys: tuple[str, ...] = ()
    update_keys: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        client_factory: Callable[[str, str], Any] | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self._client_factory = client_factory
        self._sleep = sleep
        self._clock = clock
        self._log = log
        self._clients: dict[tuple[str, str], Any] = {}
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

    def _client(self, region: str, service: str | None = None) -> Any:
        """A client of ``service`` (default :attr:`service`) in ``region`` on the chain :meth:`_use` took."""
        key = (service or self.service, region)
        if key not in self._clients:
            if self._client_factory is not None:
                self._clients[key] = self._client_factory(*key)
            else:
                profile, roles, sts_region = self._chain
                session = session_for(profile, roles, region, sts_region)
                self._clients[key] = session.client(key[0], region_name=region, config=aws_calls.PROVIDER_RETRIES)
        return self._clients[key]

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
        """One API call (botocore retries throttling); :attr:`retry_codes` retried with backoff, errors through
        :meth:`error`.

        ``missing_ok``: a ResourceNotFound answer returns None instead of raising.
        """
        method = getattr(self._client(region), aws_calls.method_name(operation))
        delay = 1.0
        for attempt in range(MAX_RETRIES + 1):
            try:
                return method(**params)
            except ClientError as err:
                code = error_code(err)
                if missing_ok and code in NOT_FOUND_CODES:
                    return None
                if code in self.retry_codes and attempt < MAX_RETRIES:
                    self._info(f"{operation}: {code}, retrying in {delay:g}s")
                    self._wait(delay)
                    delay = min(delay * 2, MAX_BACKOFF_SECONDS)
                    continue
                raise self.error(operation, params, err) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _pages(self, region: str, operation: str, **params: Any) -> Iterator[Any]:
        """Every page of ``operation`` (its paginator), errors through :meth:`error`."""
        try:
            yield from aws_calls.pages(self._client(region), aws_calls.method_name(operation), **params)
        except ClientError as err:
            raise self.error(operation, params, err) from None

    def _items(self, region: str, operation: str, key: str, **params: Any) -> Iterator[Any]:
        """Every entry under ``key`` of every page of ``operation``."""
        for page in self._pages(region, operation, **params):
            yield from page.get(key) or []

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
