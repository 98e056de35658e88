"""Privilege-escalation analysis of one stack's deploy role with NCC Group's PMapper (principalmapper 1.1.5, pinned
in requirements-dev.txt): its offline graph (``graphing/*_edges.generate_edges_locally``, ``gathering.
update_admin_status``), on the principals the plan creates plus the principals any account has.

The graph's nodes:

- the deploy role, holding the parts ``hpi deployer-policy`` writes (no boundary: nothing bounds it);
- every role the plan registers, with its trust, its inline and managed policies and the stack's permissions
  boundary (``tools.cli.deployer_policy.boundary_document``). AWS managed policies are not available offline: each
  counts as ``Allow *`` (the worst case), so only the boundary limits what such a role can do;
- the account's other principals an attacker would aim for: an administrator role the account trusts, and an
  administrator role each service PMapper models (EC2 with an instance profile, Lambda, SageMaker, CloudFormation,
  CodeBuild, Auto Scaling) trusts, an administrator user, and a role outside the stack holding the stack's managed
  policies (a caller of the global gateway's invoke policy: no boundary holds it).

A finding is: the deploy role or a stack role is an administrator (PMapper's test: it can change its own
policies, attach AdministratorAccess, create a role with it, or write a new version of a policy it holds); or an
edge (PMapper's reasons: trust rewrite, access keys, passwords, sts:AssumeRole, PassRole to compute it controls)
leads from the deploy role or a stack role to a principal outside the stack. Edges inside the stack (the deploy
role passing the stack's roles to their services) are what deploying means; the boundary bounds them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tests import iam_eval

# tests.iam_eval restores collections.Mapping, which principalmapper 1.1.5 imports (Python >= 3.10 removed it)
assert iam_eval.allowed

from principalmapper.common import Edge, Node, Policy  # noqa: E402
from principalmapper.graphing import (  # noqa: E402
    autoscaling_edges,
    cloudformation_edges,
    codebuild_edges,
    ec2_edges,
    iam_edges,
    lambda_edges,
    sagemaker_edges,
    ssm_edges,
    sts_edges,
)
from principalmapper.graphing.gathering import update_admin_status  # noqa: E402

ADMIN = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
# Services PMapper's edge checks pass a role to (ec2, lambda, sagemaker, cloudformation, codebuild, autoscaling).
OUTSIDE_SERVICES = (
    "ec2.amazonaws.com",
    "lambda.amazonaws.com",
    "sagemaker.amazonaws.com",
    "cloudformation.amazonaws.com",
    "codebuild.amazonaws.com",
    "autoscaling.amazonaws.com",
)


@dataclass
class Analysis:
    nodes: list[Node]
    edges: list[Edge]
    inside: set[str]  # ARNs of the deploy role and the stack's roles

    def findings(self) -> list[str]:
        out = [f"{n.arn} is an administrator (PMapper)" for n in self.nodes if n.arn in self.inside and n.is_admin]
        out += [
            f"{e.source.arn} {e.reason} {e.destination.arn}"
            for e in self.edges
            if e.source.arn in self.inside and e.destination.arn not in self.inside
        ]
        return sorted(out)


def _doc(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value or {})


def _trust(service: str | None, account: str) -> dict[str, Any]:
    principal: dict[str, Any] = {"Service": service} if service else {"AWS": f"arn:aws:iam::{account}:root"}
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole"}],
    }


def _node(arn: str, policies: list[Policy], trust: dict[str, Any] | None, **kw: Any) -> Node:
    return Node(
        arn=arn,
        id_value=arn.rsplit("/", 1)[-1].upper(),
        attached_policies=policies,
        group_memberships=[],
        trust_policy=trust,
        instance_profile=kw.get("instance_profile"),
        num_access_keys=kw.get("access_keys", 0),
        active_password=kw.get("password", False),
        is_admin=False,
        permissions_boundary=kw.get("boundary"),
        has_mfa=False,
        tags={},
    )


def analyse(
    deploy_parts: list[dict[str, Any]],
    boundary: dict[str, Any],
    registrations: Iterable[Any],
    *,
    stack: str,
    account: str,
) -> Analysis:
    """Build the graph for one stack (registrations of its mock run, expanded) and run PMapper's checks."""
    regs = [r for r in registrations if r.custom]
    deployer = _node(
        f"arn:aws:iam::{account}:role/hpi-{stack}-deployer",
        [
            Policy(f"arn:aws:iam::{account}:role/hpi-{stack}-deployer", f"part{n}", d)
            for n, d in enumerate(deploy_parts)
        ],
        _trust(None, account),
    )
    boundary_policy = Policy(f"arn:aws:iam::{account}:policy/hpi-{stack}-role-boundary", "boundary", boundary)
    managed = {
        str(r.outputs.get("arn")): _doc(r.inputs.get("policy")) for r in regs if r.type == "aws:iam/policy:Policy"
    }
    by_role: dict[str, list[Policy]] = {}
    for r in regs:
        if r.type == "aws:iam/rolePolicy:RolePolicy":
            by_role.setdefault(str(r.inputs.get("role")), []).append(
                Policy(r.urn, r.name, _doc(r.inputs.get("policy")))
            )
        if r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
            arn = str(r.inputs.get("policyArn"))
            by_role.setdefault(str(r.inputs.get("role")), []).append(Policy(arn, arn, managed.get(arn, ADMIN)))
    stack_roles: list[Node] = []
    for r in regs:
        if r.type != "aws:iam/role:Role":
            continue
        name = str(r.outputs.get("name") or r.inputs.get("name"))
        policies = list(by_role.get(name, [])) + list(by_role.get(str(r.outputs.get("id")), []))
        policies += [Policy(a, a, managed.get(a, ADMIN)) for a in r.inputs.get("managedPolicyArns") or []]
        for inline in r.inputs.get("inlinePolicies") or []:
            policies.append(Policy(f"{name}/inline", "inline", _doc(inline.get("policy"))))
        stack_roles.append(
            _node(str(r.outputs["arn"]), policies, _doc(r.inputs.get("assumeRolePolicy")), boundary=boundary_policy)
        )
    outside = [
        _node(
            f"arn:aws:iam::{account}:role/Administrator",
            [Policy("admin", "AdministratorAccess", ADMIN)],
            _trust(None, account),
        ),
        _node(
            f"arn:aws:iam::{account}:user/administrator",
            [Policy("admin", "AdministratorAccess", ADMIN)],
            None,
            access_keys=1,
            password=True,
        ),
    ]
    for service in OUTSIDE_SERVICES:
        label = service.split(".", 1)[0]
        profile = [f"arn:aws:iam::{account}:instance-profile/{label}-admin"] if label == "ec2" else None
        outside.append(
            _node(
                f"arn:aws:iam::{account}:role/{label}-admin",
                [Policy("admin", "AdministratorAccess", ADMIN)],
                _trust(service, account),
                instance_profile=profile,
            )
        )
    # a caller outside the stack holding every managed policy of the stack (the global invoke policy's callers)
    if managed:
        outside.append(
            _node(
                f"arn:aws:iam::{account}:role/outside-caller",
                [Policy(a, a, d) for a, d in managed.items()],
                _trust(None, account),
            )
        )
    nodes = [deployer, *stack_roles, *outside]
    update_admin_status(nodes)
    edges: list[Edge] = []
    for module in (iam_edges, sts_edges, ec2_edges, sagemaker_edges, ssm_edges):
        edges += module.generate_edges_locally(nodes)
    edges += lambda_edges.generate_edges_locally(nodes, [])
    edges += codebuild_edges.generate_edges_locally(nodes, codebuild_projects=[])
    edges += cloudformation_edges.generate_edges_locally(nodes, [])
    edges += autoscaling_edges.generate_edges_locally(nodes, launch_configs=[])
    return Analysis(nodes, edges, {deployer.arn, *(n.arn for n in stack_roles)})
