"""Issue 47 item 7: every ARN the program writes takes its partition from the provider (``aws.get_partition``), and
the LMCache password is no stack output.

AWS partitions (``aws``, ``aws-us-gov``, ``aws-cn``; botocore ``data/endpoints.json`` ``partitions[].partition``)
put the partition in every ARN, AWS managed policies included (``arn:aws-us-gov:iam::aws:policy/...``). The mocks
answer ``getPartition`` with the partition a run names, and their own ARNs carry it, so any ``arn:aws:`` left in
a rendered input was hard-coded by the program.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from components.config.stackfile import load_stack_file, stack_path
from tests.conftest import registered
from tools.plan.harness import StackRun, run_stack

GOV = "aws-us-gov"


def _strings(value: Any) -> Iterator[str]:
    """Every string of a rendered input, JSON documents (policies) opened."""
    if isinstance(value, str):
        try:
            inner = json.loads(value)
        except ValueError:
            yield value
            return
        if isinstance(inner, dict | list):
            yield from _strings(inner)
        else:
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _arns(run: StackRun) -> list[tuple[str, str]]:
    return [(f"{r.type} {r.name}", s) for r in run.registrations for s in _strings(r.inputs) if "arn:" in s]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_no_hard_coded_commercial_partition(stack: str) -> None:
    run = registered(run_stack(stack, partition=GOV))
    arns = _arns(run)
    # What the stack file itself supplies (an ACM certificate, a Cognito pool) is the user's, not the program's.
    config_text = json.dumps(load_stack_file(stack_path(stack)))
    hard_coded = [(where, s) for where, s in arns if "arn:aws:" in s and s not in config_text]
    assert hard_coded == []
    # Not vacuous: the managed policies, the EKS access policy and the KEDA/S3 documents were rendered in GovCloud.
    texts = [s for _, s in arns]
    assert f"arn:{GOV}:iam::aws:policy/AmazonSageMakerHyperPodInferenceAccess" in texts
    assert f"arn:{GOV}:eks::aws:cluster-access-policy/AmazonSagemakerHyperpodInferenceMonitoringPolicy" in texts
    assert any(s.startswith(f"arn:{GOV}:s3:::") for s in texts)


def test_the_commercial_partition_renders_arn_aws() -> None:
    """The other direction: in ``aws`` the same ARNs say ``arn:aws:`` (the partition is read, not replaced)."""
    run = registered(run_stack("dev"))
    texts = [s for _, s in _arns(run)]
    assert "arn:aws:iam::aws:policy/AmazonSageMakerHyperPodInferenceAccess" in texts
    assert not any(f"arn:{GOV}:" in s for s in texts)


def test_lmcache_password_is_no_stack_output(stack_runs: dict[str, StackRun]) -> None:
    prod = stack_runs["prod"]
    # prod creates the ElastiCache group with an LMCache user: its URL and user name are exported, never the password.
    assert "kvCacheUrl" in prod.outputs and "kvCacheUsername" in prod.outputs
    assert not [k for k in prod.outputs if "password" in k.lower()]
    passwords = [r for r in prod.registrations if r.type == "random:index/randomPassword:RandomPassword"]
    assert passwords, "prod creates the cache's passwords"
