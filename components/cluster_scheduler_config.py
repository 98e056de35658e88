"""ClusterSchedulerConfig: a Pulumi dynamic resource for HyperPod task governance's cluster policy.

No provider has it (pulumi-aws 7.51.1 and pulumi-aws-native 1.84.0 have no cluster scheduler config resource; the
CloudFormation type ``AWS::SageMaker::ClusterSchedulerConfig`` exists in cfn-lint 1.58's schemas but not in the
aws-native SDK installed here), so this provider drives the SageMaker API with boto3 on the shared base
(``components/dynamic_provider.py``: the stack's credential chain, retries, tags, diff). Every request is built by
``components/config/governance.py`` and validated against botocore's ``sagemaker`` model before it is sent
(:func:`~components.config.governance.request_problems`), so a request the API would refuse never leaves.

Lifecycle (botocore ``sagemaker`` model, operations Create/Describe/Update/DeleteClusterSchedulerConfig;
``SchedulerResourceStatus``: Creating, Created, CreateFailed, Updating, Updated, UpdateFailed, Deleting, Deleted ...):

- create: ``CreateClusterSchedulerConfig`` (Name, ClusterArn, SchedulerConfig, Tags), then ``Describe`` every
  ``pollSeconds`` until ``Created`` (``CreateFailed`` is one error with ``FailureReason``), within
  ``waitTimeoutSeconds``. A HyperPod cluster has one cluster policy: a second one is refused by the API (its
  message is passed on).
- read: ``Describe``; ResourceNotFound or ``Deleted`` reads as gone.
- diff: the name, the cluster and the region replace (createOnly in the CloudFormation schema); the scheduler config
  and the tags update; a changed credential chain updates (the base).
- update: ``UpdateClusterSchedulerConfig`` with the version Describe reports as ``TargetVersion`` (the API's
  optimistic lock), then until ``Updated``; tags with AddTags/DeleteTags.
- delete: ``DeleteClusterSchedulerConfig``, then until ResourceNotFound or ``Deleted``.

Create, update and delete need what the CloudFormation handlers list besides the operation itself (cfn-lint 1.58
``AWS::SageMaker::ClusterSchedulerConfig`` handlers: ``eks:AssociateAccessPolicy`` & co., the service acting on the
EKS cluster with the caller's credentials): see its record, ``policies/resource_types/pulumi/dynamic.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi
from botocore.exceptions import ClientError
from pulumi import dynamic

from .config.governance import request_problems
from .dynamic_provider import (
    DENIED_CODES,
    MAX_RETRIES,
    NOT_FOUND_CODES,
    THROTTLED,
    THROTTLING_CODES,
    DynamicProviderBase,
)
from .dynamic_provider import error_code as _code
from .dynamic_provider import error_message as _message

RESOURCE_KIND = "hyperpod:ClusterSchedulerConfig"
POLL_SECONDS = 10.0
DEFAULT_TIMEOUT_SECONDS = 15 * 60
CREATED, UPDATED, DELETED = "Created", "Updated", "Deleted"
FAILED = frozenset({"CreateFailed", "CreateRollbackFailed", "UpdateFailed", "UpdateRollbackFailed", "DeleteFailed"})


class SchedulerConfigError(Exception):
    """One clear, actionable message for a failed cluster policy operation."""


def create_request(props: Mapping[str, Any]) -> dict[str, Any]:
    """``CreateClusterSchedulerConfig`` parameters from the resource's inputs."""
    request: dict[str, Any] = {
        "Name": str(props["name"]),
        "ClusterArn": str(props["clusterArn"]),
        "SchedulerConfig": dict(props["schedulerConfig"]),
    }
    if props.get("description"):
        request["Description"] = str(props["description"])
    tags = [{"Key": str(k), "Value": str(v)} for k, v in sorted((props.get("tags") or {}).items())]
    if tags:
        request["Tags"] = tags
    return request


def update_request(config_id: str, version: int, props: Mapping[str, Any]) -> dict[str, Any]:
    """``UpdateClusterSchedulerConfig`` parameters: the new SchedulerConfig against ``version``."""
    request: dict[str, Any] = {
        "ClusterSchedulerConfigId": config_id,
        "TargetVersion": int(version),
        "SchedulerConfig": dict(props["schedulerConfig"]),
    }
    if props.get("description"):
        request["Description"] = str(props["description"])
    return request


class ClusterSchedulerConfigProvider(DynamicProviderBase):
    """CRUD for one cluster policy; ``client_factory``/``sleep``/``clock``/``log`` are for tests."""

    replace_keys = ("name", "clusterArn", "region")
    update_keys = ("schedulerConfig", "description", "tags", "waitTimeoutSeconds")
    retry_codes = frozenset({"ConflictException"})

    def __init__(
        self,
        *,
        client_factory: Callable[[str, str], Any] | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        log: Callable[[str], None] | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        super().__init__(client_factory=client_factory, sleep=sleep, clock=clock, log=log)
        self._poll = poll_seconds

    def error(self, operation: str, params: Mapping[str, Any], err: ClientError) -> Exception:
        code, message = _code(err), _message(err)
        if code in DENIED_CODES:
            return SchedulerConfigError(
                f"access denied: the credentials running `pulumi up` need IAM action sagemaker:{operation} (and, for "
                f"create/update/delete, eks:AssociateAccessPolicy/eks:DescribeAccessEntry on the EKS cluster): {message}"
            )
        if code in THROTTLING_CODES:
            return SchedulerConfigError(f"{operation}: {THROTTLED}: {message}")
        if code in self.retry_codes:
            return SchedulerConfigError(f"{operation}: {code} after {MAX_RETRIES} retries: {message}")
        if code in NOT_FOUND_CODES:
            return SchedulerConfigError(f"{operation}: not found: {message}")
        return SchedulerConfigError(f"{operation} failed ({code}): {message}")

    def _checked(self, operation: str, params: Mapping[str, Any]) -> None:
        problems = request_problems(operation, params)
        if problems:
            raise SchedulerConfigError(
                f"{operation}: the request does not match botocore's model: {'; '.join(problems)}"
            )

    def _describe(self, region: str, config_id: str) -> dict[str, Any] | None:
        got: dict[str, Any] | None = self._call(
            region, "DescribeClusterSchedulerConfig", missing_ok=True, ClusterSchedulerConfigId=config_id
        )
        if got is not None and got.get("Status") == DELETED:
            return None
        return got

    def _until(self, region: str, config_id: str, props: Mapping[str, Any], done: str, what: str) -> dict[str, Any]:
        started = self._now()
        deadline = started + float(props.get("waitTimeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
        while True:
            got = self._describe(region, config_id)
            if got is None:
                raise SchedulerConfigError(f"{what}: cluster policy {config_id} disappeared while waiting for {done}")
            status = str(got.get("Status", ""))
            if status == done:
                self._info(f"{what}: cluster policy {got.get('Name', config_id)} is {status}")
                return got
            if status in FAILED:
                raise SchedulerConfigError(
                    f"{what}: cluster policy {got.get('Name', config_id)} is {status}: "
                    f"{got.get('FailureReason', 'no reason given')}"
                )
            if self._now() >= deadline:
                raise SchedulerConfigError(
                    f"{what}: cluster policy {config_id} still {status} after {self._now() - started:.0f}s; check "
                    f"`aws sagemaker describe-cluster-scheduler-config --cluster-scheduler-config-id {config_id}`, "
                    "then `pulumi refresh` and rerun"
                )
            self._info(f"{what}: cluster policy {config_id} is {status}, waiting")
            self._wait(self._poll)

    @staticmethod
    def _outs(props: Mapping[str, Any], got: Mapping[str, Any]) -> dict[str, Any]:
        return {
            **props,
            "arn": got.get("ClusterSchedulerConfigArn", ""),
            "configId": got.get("ClusterSchedulerConfigId", ""),
            "version": int(got.get("ClusterSchedulerConfigVersion", 0) or 0),
            "status": got.get("Status", ""),
        }

    # CRUD

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        region = self._use(props)
        request = create_request(props)
        self._checked("CreateClusterSchedulerConfig", request)
        self._info(f"creating cluster policy {request['Name']} on {request['ClusterArn']}")
        created = self._call(region, "CreateClusterSchedulerConfig", **request)
        config_id = str(created["ClusterSchedulerConfigId"])
        got = self._until(region, config_id, props, CREATED, "create")
        return dynamic.CreateResult(config_id, self._outs(props, got))

    def read(self, id_: str, props: dict[str, Any]) -> dynamic.ReadResult:
        got = self._describe(self._use(props), id_)
        if got is None:
            return dynamic.ReadResult("", {})  # deleted outside Pulumi: the engine drops it
        return dynamic.ReadResult(id_, self._outs({**props, "schedulerConfig": got.get("SchedulerConfig")}, got))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        return self.diff_keys(olds, news)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        region = self._use(news)
        got = self._describe(region, id_)
        if got is None:
            raise SchedulerConfigError(f"update: cluster policy {id_} no longer exists; run `pulumi refresh`")
        if olds.get("schedulerConfig") != news.get("schedulerConfig") or olds.get("description") != news.get(
            "description"
        ):
            request = update_request(id_, int(got.get("ClusterSchedulerConfigVersion", 0) or 0), news)
            self._checked("UpdateClusterSchedulerConfig", request)
            self._info(f"updating cluster policy {news['name']}")
            self._call(region, "UpdateClusterSchedulerConfig", **request)
            got = self._until(region, id_, news, UPDATED, "update")
        if (olds.get("tags") or {}) != (news.get("tags") or {}):
            self._sync_tags(region, str(got["ClusterSchedulerConfigArn"]), olds.get("tags"), news.get("tags"))
        return dynamic.UpdateResult(self._outs(news, got))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        region = self._use(props)
        self._info(f"deleting cluster policy {props.get('name', id_)}")
        if self._call(region, "DeleteClusterSchedulerConfig", missing_ok=True, ClusterSchedulerConfigId=id_) is None:
            return
        started = self._now()
        deadline = started + float(props.get("waitTimeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
        while True:
            got = self._describe(region, id_)
            if got is None:
                return
            if str(got.get("Status")) in FAILED:
                raise SchedulerConfigError(
                    f"delete: cluster policy {id_} is {got.get('Status')}: {got.get('FailureReason', 'no reason')}"
                )
            if self._now() >= deadline:
                raise SchedulerConfigError(f"delete: cluster policy {id_} still {got.get('Status')}")
            self._wait(self._poll)


class ClusterSchedulerConfig(dynamic.Resource):
    """The cluster policy. Inputs (camelCase, also read by the rehearsal and the policy pack): ``name``,
    ``clusterArn``, ``region``, ``schedulerConfig`` (the API's ``SchedulerConfig``), ``description``, ``tags``,
    ``waitTimeoutSeconds`` and the credential chain (:func:`components.dynamic_provider.credential_inputs`)."""

    arn: pulumi.Output[str]
    configId: pulumi.Output[str]  # outputs keep their property names
    version: pulumi.Output[int]
    status: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: ClusterSchedulerConfigProvider | None = None,
    ) -> None:
        inputs: dict[str, Any] = {
            **props,
            "resourceKind": RESOURCE_KIND,
            "arn": None,
            "configId": None,
            "version": None,
            "status": None,
        }
        super().__init__(provider or ClusterSchedulerConfigProvider(), name, inputs, opts)
