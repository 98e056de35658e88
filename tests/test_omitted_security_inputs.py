"""An insecure provider default reached by LEAVING AN INPUT OUT is caught like the input set wrong.

A policy that flags ``atRestEncryptionEnabled: false`` but not a resource without the key passes the provider's
insecure default. The sweep removes, one at a time, every security-relevant input (by name: encryption, KMS,
TLS, public access, protection, retention, logging, authentication) of every AWS resource and of the EKS
component in the reference stacks, runs the policy pack as the CLI would for that stack's environment, and
demands a new finding, unless the omission is listed in ``OMISSION_IS_SAFE`` with the provider or AWS default
that makes it safe, and its source. A new security input therefore cannot slip in unexamined, and an entry that
no longer occurs fails too.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator

import pytest

from policies.engine import PolicyResult, evaluate
from policies.pack import POLICIES
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration

SECURITY_INPUT = re.compile(
    r"encrypt|kms|tls|ssl|publicAccess|blockPublic|ignorePublic|restrictPublic|mapPublicIp|secure|protect"
    r"|retention|deletion|privateDns|authentication|logTypes|accessLogs|logging",
    re.IGNORECASE,
)
EKS_COMPONENT = "eks:index:Cluster"  # a remote component: the pack sees its inputs
ENV = {"prod": "prod", "staging": "staging", "dev": "dev"}

# (type, input) -> why leaving it out is not a weakening, with the default's source.
OMISSION_IS_SAFE: dict[tuple[str, str], str] = {
    ("aws:cloudwatch/logGroup:LogGroup", "retentionInDays"): (
        "omitted = kept forever (CloudWatch Logs API PutRetentionPolicy: 'by default, log data is stored "
        "indefinitely'), above every retention floor"
    ),
    (EKS_COMPONENT, "deletionProtection"): (
        "judged in prod only (eks-deletion-protection): dev and staging leave it off by design, so leaving it out "
        "there is the same value"
    ),
    ("aws:kms/key:Key", "deletionWindowInDays"): (
        "omitted = 30 days, the longest window (KMS API ScheduleKeyDeletion PendingWindowInDays: 7-30, default 30)"
    ),
    ("aws:ec2/subnet:Subnet", "mapPublicIpOnLaunch"): (
        "omitted = false (EC2 API ModifySubnetAttribute MapPublicIpOnLaunch; terraform-provider-aws "
        "aws_subnet map_public_ip_on_launch default false)"
    ),
    ("aws:ec2/vpcEndpoint:VpcEndpoint", "privateDnsEnabled"): (
        "only the endpoints FSBP EC2.10 and the nodes need are checked (vpc-interface-endpoints: ec2, ecr.api, "
        "ecr.dkr, eks-auth, sagemaker.api); the optional sts endpoint falls back to the public STS name, which "
        "the NAT route reaches"
    ),
    ("aws:elasticache/replicationGroup:ReplicationGroup", "kmsKeyId"): (
        "omitted = encrypted at rest with an AWS owned key (ElastiCache API CreateReplicationGroup KmsKeyId: "
        "'The ID of the KMS key used to encrypt the disk in the cluster'; atRestEncryptionEnabled is required "
        "by redis-encryption)"
    ),
    ("aws:elasticache/replicationGroup:ReplicationGroup", "transitEncryptionMode"): (
        "omitted with TransitEncryptionEnabled = required (ElastiCache API CreateReplicationGroup "
        "TransitEncryptionMode: 'preferred' must be asked for; redis-encryption refuses preferred)"
    ),
    (EKS_COMPONENT, "endpointPublicAccess"): (
        "omitted = true (pulumi-eks ClusterOptions endpointPublicAccess default true), which eks-endpoint-private "
        "judges like an explicit true: caught in prod (set false there), the same value elsewhere"
    ),
    (EKS_COMPONENT, "authenticationMode"): (
        "omitted = CONFIG_MAP (EKS API CreateCluster accessConfig.authenticationMode); the stack's access "
        "entries then fail at create (CreateAccessEntry needs API or API_AND_CONFIG_MAP): loud, not weaker"
    ),
}

# Omissions no policy catches yet (each is a finding to build; the list must shrink to nothing).
KNOWN_GAPS: dict[tuple[str, str], str] = {
    ("aws:elasticache/replicationGroup:ReplicationGroup", "snapshotRetentionLimit"): "ElastiCache.1",
    (EKS_COMPONENT, "enabledClusterLogTypes"): "EKS.8 control-plane logs",
    ("aws:lb/loadBalancer:LoadBalancer", "enableDeletionProtection"): "ALB deletion protection",
}


def _security_inputs(regs: list[Registration]) -> Iterator[tuple[int, str]]:
    for index, reg in enumerate(regs):
        if reg.type.startswith("kubernetes:") or not (reg.custom or reg.type == EKS_COMPONENT):
            continue
        for key in reg.inputs:
            if SECURITY_INPUT.search(key):
                yield index, key


def _added_by_omitting(
    regs: list[Registration], env: str, index: int, key: str, before: set[PolicyResult] | None = None
) -> list[PolicyResult]:
    before = before if before is not None else set(evaluate(POLICIES, regs, env))
    changed = list(regs)
    reg = copy.deepcopy(regs[index])
    del reg.inputs[key]
    changed[index] = reg
    return [r for r in evaluate(POLICIES, changed, env) if r not in before]


@pytest.mark.parametrize("stack", sorted(ENV))
def test_every_omitted_security_input_is_caught_or_safe(stack_runs: dict[str, StackRun], stack: str) -> None:
    regs = stack_runs[stack].registrations
    silent: set[tuple[str, str]] = set()
    caught: set[tuple[str, str]] = set()
    before = set(evaluate(POLICIES, regs, ENV[stack]))
    for index, key in _security_inputs(regs):
        pair = (regs[index].type, key)
        if _added_by_omitting(regs, ENV[stack], index, key, before):
            caught.add(pair)
        else:
            silent.add(pair)
    assert caught, "the sweep found no caught omission at all: it tests nothing"
    unexplained = sorted(silent - set(OMISSION_IS_SAFE) - set(KNOWN_GAPS))
    assert not unexplained, f"{stack}: leaving these out passes every policy: {unexplained}"


def test_every_listed_omission_still_occurs(stack_runs: dict[str, StackRun]) -> None:
    seen = {
        (stack_runs[s].registrations[i].type, k) for s in ENV for i, k in _security_inputs(stack_runs[s].registrations)
    }
    assert set(OMISSION_IS_SAFE) <= seen, sorted(set(OMISSION_IS_SAFE) - seen)
    assert set(KNOWN_GAPS) <= seen, sorted(set(KNOWN_GAPS) - seen)


def test_prod_redis_without_encryption_keys_is_refused_like_false(stack_runs: dict[str, StackRun]) -> None:
    """The instance: redis-encryption on an omitted key (the provider's default: false) and on an explicit false."""
    regs = stack_runs["prod"].registrations
    index = next(i for i, r in enumerate(regs) if r.type == "aws:elasticache/replicationGroup:ReplicationGroup")
    for key in ("atRestEncryptionEnabled", "transitEncryptionEnabled"):
        omitted = _added_by_omitting(regs, "prod", index, key)
        assert [(r.policy, r.level) for r in omitted] == [("redis-encryption", "mandatory")], key
        wrong = list(regs)
        reg = copy.deepcopy(regs[index])
        reg.inputs[key] = False
        wrong[index] = reg
        before = set(evaluate(POLICIES, regs, "prod"))
        added = [r for r in evaluate(POLICIES, wrong, "prod") if r not in before]
        assert [(r.policy, r.level) for r in added] == [("redis-encryption", "mandatory")], key
        assert omitted[0].message == added[0].message
