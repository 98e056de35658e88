"""Pulumi mocks that behave like a small, honest AWS: realistic ids, ARNs and endpoints.

Used by the test suite and by ``tools.cli.preview``. ``RecordingMocks`` answers resource registrations and
provider calls; ``GraphMonitor`` records every registration request (type, name, parent, dependencies,
options) so tests, the policy pack bridge, the graph writer and the critical-path tool see the same graph.

Outputs are a deterministic function of (type, name, inputs): two runs of a stack give the same ids.
To teach the mocks a new resource type, give its record (``policies/resource_types``) a ``mock:`` naming one of
the shapes in ``MOCK_SHAPES`` (or add a shape there).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import rpc, settings
from pulumi.runtime.mocks import MockMonitor

# One helper for the policy engine, the renderer and the tests; it lives in policies/ (policies never import tools/).
from components.config.regions import az_id_prefix
from policies.graph import unwrap_secrets  # noqa: F401 - re-exported for tools.plan.render and the tests
from policies.physical_names import physical_name
from policies.resource_types import load_resource_types
from policies.resource_types.tokens import (
    GET_CALLER_IDENTITY,
    GET_EKS_CLUSTER,
    GET_HYPERPOD_CLUSTER,
    GET_PARTITION,
    GET_REGION,
)

ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-west-2"


def _hex(*parts: str, n: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


def _refs(value: Any) -> Any:
    """Resource-reference inputs (e.g. pulumi-eks's ``clusterSecurityGroup``) as plain data.

    The mock monitor deserializes a resource reference into the SDK's resource object; the graph keeps a
    JSON- and copy-safe marker with its type token instead (the dependency itself is in ``dependencies``).
    """
    if isinstance(value, pulumi.Resource):
        return {"resourceReference": getattr(type(value), "pulumi_type", type(value).__name__)}
    if isinstance(value, dict):
        return {k: _refs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_refs(v) for v in value]
    return value


def _ints(value: Any) -> Any:
    """Inputs cross a protobuf Struct, so integers arrive as floats; give them back as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


@dataclass
class MockContext:
    region: str
    typ: str
    name: str
    inputs: dict[str, Any]
    id_prefix: str = ""  # the record's `mock.id_prefix` (EC2-style IDs)
    partition: str = "aws"

    @property
    def physical_name(self) -> str:
        """The name AWS gives the resource (its record's physical_name: name, prefix or auto-name), else the
        ``name`` input or ``<logical>-<7 hex>``."""
        known = physical_name(self.typ, self.name, self.inputs)
        if known is not None:
            return known
        given = self.inputs.get("name")
        return given if isinstance(given, str) and given else f"{self.name}-{_hex(self.typ, self.name, n=7)}"

    def arn(self, service: str, resource: str, region: bool = True) -> str:
        return f"arn:{self.partition}:{service}:{self.region if region else ''}:{ACCOUNT_ID}:{resource}"


OutputFn = Callable[[MockContext], dict[str, Any]]


def _ec2(ctx: MockContext) -> dict[str, Any]:
    """An EC2 ID (``<id_prefix>-<17 hex>``: sg-, rtb-, vpce-, ...) and its ARN."""
    rid = f"{ctx.id_prefix}-{_hex(ctx.typ, ctx.name)}"
    return {"id": rid, "arn": ctx.arn("ec2", f"{ctx.id_prefix}/{rid}")}


def _eip(ctx: MockContext) -> dict[str, Any]:
    return {**_ec2(ctx), "publicIp": "203.0.113." + str(int(_hex(ctx.name, n=2), 16) % 250 + 1)}


def _route(ctx: MockContext) -> dict[str, Any]:
    """terraform-provider-aws aws_route ids: r-<route table id><hash of the destination>."""
    destination = int(_hex(str(ctx.inputs.get("destinationCidrBlock")), n=8), 16)
    return {"id": f"r-{ctx.inputs.get('routeTableId')}{destination}"}


def _certificate_validation(ctx: MockContext) -> dict[str, Any]:
    return {"id": ctx.inputs.get("certificateArn", "")}


def _role(ctx: MockContext) -> dict[str, Any]:
    name = ctx.physical_name
    return {
        "id": name,
        "name": name,
        "arn": ctx.arn("iam", f"role/{name}", region=False),
        "uniqueId": "AROA" + _hex(name).upper(),
    }


def _policy(ctx: MockContext) -> dict[str, Any]:
    name = ctx.physical_name
    arn = ctx.arn("iam", f"policy/{name}", region=False)
    return {"id": arn, "name": name, "arn": arn}


def _bucket(ctx: MockContext) -> dict[str, Any]:
    name = ctx.physical_name
    return {
        "id": name,
        "bucket": name,
        "arn": f"arn:{ctx.partition}:s3:::{name}",
        "bucketRegionalDomainName": f"{name}.s3.{ctx.region}.amazonaws.com",
    }


def _kms(ctx: MockContext) -> dict[str, Any]:
    key_id = f"{_hex(ctx.name, n=8)}-{_hex(ctx.name, 'a', n=4)}-{_hex(ctx.name, 'b', n=4)}-{_hex(ctx.name, 'c', n=4)}-{_hex(ctx.name, 'd', n=12)}"
    return {"id": key_id, "keyId": key_id, "arn": ctx.arn("kms", f"key/{key_id}")}


def _kms_alias(ctx: MockContext) -> dict[str, Any]:
    """``alias/<name>``: the alias's ARN is ``arn:aws:kms:<region>:<account>:alias/<name>`` (the name has the prefix)."""
    name = ctx.physical_name
    key = str(ctx.inputs.get("targetKeyId") or "")
    return {"id": name, "name": name, "arn": ctx.arn("kms", name), "targetKeyArn": ctx.arn("kms", f"key/{key}")}


def _vpc(ctx: MockContext) -> dict[str, Any]:
    rid = f"vpc-{_hex(ctx.typ, ctx.name)}"
    return {
        "id": rid,
        "arn": ctx.arn("ec2", f"vpc/{rid}"),
        "defaultSecurityGroupId": f"sg-{_hex(rid, 'default')}",
        "mainRouteTableId": f"rtb-{_hex(rid, 'main')}",
    }


def _subnet(ctx: MockContext) -> dict[str, Any]:
    rid = f"subnet-{_hex(ctx.typ, ctx.name)}"
    az_id = ctx.inputs.get("availabilityZoneId") or "usw2-az1"
    return {
        "id": rid,
        "arn": ctx.arn("ec2", f"subnet/{rid}"),
        "availabilityZone": f"{ctx.region}{'abcdef'[int(az_id[-1]) - 1]}",
    }


def _eks_cluster(ctx: MockContext) -> dict[str, Any]:
    name = ctx.inputs.get("name") or ctx.physical_name
    oidc_id = _hex(name, "oidc", n=32).upper()
    issuer = f"https://oidc.eks.{ctx.region}.amazonaws.com/id/{oidc_id}"
    endpoint = f"https://{_hex(name, n=32).upper()}.gr7.{ctx.region}.eks.amazonaws.com"
    return {
        "id": name,
        "name": name,
        "arn": ctx.arn("eks", f"cluster/{name}"),
        "endpoint": endpoint,
        "identities": [{"oidcs": [{"issuer": issuer}]}],
        "certificateAuthority": {"data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"},
        "vpcConfig": {**(ctx.inputs.get("vpcConfig") or {}), "clusterSecurityGroupId": f"sg-{_hex(name, 'cluster')}"},
        "status": "ACTIVE",
    }


def hyperpod_cluster_arn(region: str, cluster_name: str, partition: str = "aws") -> str:
    """The ARN these mocks give a HyperPod cluster of that name (its id: a hash of the name, like AWS's 12 chars)."""
    return f"arn:{partition}:sagemaker:{region}:{ACCOUNT_ID}:cluster/{_hex(cluster_name, n=12)}"


def _sagemaker_cluster(ctx: MockContext) -> dict[str, Any]:
    arn = hyperpod_cluster_arn(ctx.region, ctx.inputs.get("clusterName") or ctx.physical_name, ctx.partition)
    return {"id": arn, "clusterArn": arn, "clusterStatus": "InService"}


def _pulumi_eks_cluster(ctx: MockContext) -> dict[str, Any]:
    """pulumi-eks ``eks:index:Cluster`` (a remote component: no children under mocks, only these outputs)."""
    name = ctx.inputs.get("name") or ctx.physical_name
    oidc_id = _hex(name, "oidc", n=32).upper()
    issuer = f"oidc.eks.{ctx.region}.amazonaws.com/id/{oidc_id}"
    endpoint = f"https://{_hex(name, n=32).upper()}.gr7.{ctx.region}.eks.amazonaws.com"
    ca = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
    # pulumi-eks generateKubeconfig (nodejs/eks/cluster.ts): providerCredentialOpts.roleArn -> `--role <arn>`,
    # profileName -> `--profile <name>`
    creds = ctx.inputs.get("providerCredentialOpts") or {}
    extra = [*(["--role", creds["roleArn"]] if creds.get("roleArn") else [])]
    extra += ["--profile", creds["profileName"]] if creds.get("profileName") else []
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubernetes", "cluster": {"server": endpoint, "certificate-authority-data": ca}}],
        "contexts": [{"name": "aws", "context": {"cluster": "kubernetes", "user": "aws"}}],
        "current-context": "aws",
        "users": [
            {
                "name": "aws",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", name, "--output", "json", *extra],
                    }
                },
            }
        ],
    }
    return {
        "id": name,
        "kubeconfig": kubeconfig,
        "kubeconfigJson": json.dumps(kubeconfig),
        "oidcProviderArn": ctx.arn("iam", f"oidc-provider/{issuer}", region=False),
        "oidcProviderUrl": f"https://{issuer}",
        "oidcIssuer": issuer,
        "clusterSecurityGroupId": f"sg-{_hex(name, 'cluster')}",
        "nodeSecurityGroupId": f"sg-{_hex(name, 'node')}",
        "clusterIngressRuleId": f"sgr-{_hex(name, 'ingress')}",
    }


def _replication_group(ctx: MockContext) -> dict[str, Any]:
    rg = ctx.inputs.get("replicationGroupId") or ctx.physical_name
    short = {"us-west-2": "usw2", "us-east-1": "use1", "us-east-2": "use2", "eu-west-1": "euw1"}.get(ctx.region, "usw2")
    suffix = _hex(rg, "cache", n=6)
    tls = "master." if ctx.inputs.get("transitEncryptionEnabled") else ""
    return {
        "id": rg,
        "arn": ctx.arn("elasticache", f"replicationgroup:{rg}"),
        "primaryEndpointAddress": f"{tls}{rg}.{suffix}.{short}.cache.amazonaws.com",
        "readerEndpointAddress": f"replica.{rg}.{suffix}.{short}.cache.amazonaws.com",
        "port": ctx.inputs.get("port", 6379),
        "memberClusters": [f"{rg}-{i + 1:03d}" for i in range(int(ctx.inputs.get("numCacheClusters") or 1))],
    }


def _random_password(ctx: MockContext) -> dict[str, Any]:
    length = int(ctx.inputs.get("length") or 32)
    seed = hashlib.sha256(f"password/{ctx.name}".encode()).hexdigest()
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
    value = "".join(alphabet[int(seed[i % 64], 16) * 3 % len(alphabet)] for i in range(length))
    return {"id": "none", "result": value, "bcryptHash": "$2a$10$" + _hex(value, n=53)}


# Route 53 hosted-zone IDs of ALBs per region (Elastic Load Balancing endpoints and quotas).
ALB_ZONE_IDS = {"us-east-1": "Z35SXDOTRQ7X7K", "us-east-2": "Z3AADJGX6KTTL2", "us-west-2": "Z1H1FL5HABSF5"}


def _alb(ctx: MockContext) -> dict[str, Any]:
    name = ctx.physical_name
    lb_id = _hex(ctx.name, "alb", n=16)
    dns = f"{'internal-' if ctx.inputs.get('internal') else ''}{name}-{int(_hex(name, n=8), 16) % 10**10}"
    arn = ctx.arn("elasticloadbalancing", f"loadbalancer/app/{name}/{lb_id}")
    return {
        "id": arn,
        "arn": arn,
        "arnSuffix": f"app/{name}/{lb_id}",
        "dnsName": f"{dns}.{ctx.region}.elb.amazonaws.com",
        "zoneId": ALB_ZONE_IDS.get(ctx.region, "Z1H1FL5HABSF5"),
    }


def _target_group(ctx: MockContext) -> dict[str, Any]:
    name = ctx.physical_name
    arn = ctx.arn("elasticloadbalancing", f"targetgroup/{name}/{_hex(ctx.name, 'tg', n=16)}")
    return {"id": arn, "arn": arn, "arnSuffix": arn.split(":")[-1]}


def _listener(ctx: MockContext) -> dict[str, Any]:
    # Like AWS: listener/app/<lb-name>/<lb-id>/<listener-id>, the load balancer's part taken from its ARN.
    lb_arn = str(ctx.inputs.get("loadBalancerArn") or "")
    lb = (
        lb_arn.split(":loadbalancer/", 1)[1] if ":loadbalancer/" in lb_arn else f"app/{ctx.name}/{_hex(ctx.name, n=16)}"
    )
    arn = ctx.arn("elasticloadbalancing", f"listener/{lb}/{_hex(ctx.name, 'l', n=16)}")
    return {"id": arn, "arn": arn}


def _listener_rule(ctx: MockContext) -> dict[str, Any]:
    arn = ctx.arn(
        "elasticloadbalancing", f"listener-rule/app/{ctx.name}/{_hex(ctx.name, n=16)}/{_hex(ctx.name, 'r', n=16)}"
    )
    return {"id": arn, "arn": arn}


def _acm_certificate(ctx: MockContext) -> dict[str, Any]:
    cid = f"{_hex(ctx.name, n=8)}-{_hex(ctx.name, 'a', n=4)}-{_hex(ctx.name, 'b', n=4)}-{_hex(ctx.name, 'c', n=4)}-{_hex(ctx.name, 'd', n=12)}"
    arn = ctx.arn("acm", f"certificate/{cid}")
    names = [ctx.inputs.get("domainName") or "example.com", *(ctx.inputs.get("subjectAlternativeNames") or [])]
    options = [
        {
            "domainName": n,
            "resourceRecordName": f"_{_hex(n, 'acm', n=32)}.{n}.",
            "resourceRecordType": "CNAME",
            "resourceRecordValue": f"_{_hex(n, 'acmv', n=32)}.mhbtsbpdnt.acm-validations.aws.",
        }
        for n in names
    ]
    return {"id": arn, "arn": arn, "domainValidationOptions": options, "status": "PENDING_VALIDATION"}


def _route53_record(ctx: MockContext) -> dict[str, Any]:
    name = str(ctx.inputs.get("name") or ctx.name).rstrip(".")
    return {"id": f"{ctx.inputs.get('zoneId')}_{name}_{ctx.inputs.get('type')}", "fqdn": name}


def _eks_addon(ctx: MockContext) -> dict[str, Any]:
    cluster, addon = ctx.inputs.get("clusterName"), ctx.inputs.get("addonName")
    uid = f"{_hex(ctx.name, n=8)}-{_hex(ctx.name, 'a', n=4)}-{_hex(ctx.name, 'b', n=4)}-{_hex(ctx.name, 'c', n=4)}-{_hex(ctx.name, 'd', n=12)}"
    return {"id": f"{cluster}:{addon}", "arn": ctx.arn("eks", f"addon/{cluster}/{addon}/{uid}")}


def _eks_access_entry(ctx: MockContext) -> dict[str, Any]:
    cluster, principal = ctx.inputs.get("clusterName"), str(ctx.inputs.get("principalArn") or "")
    role = principal.rsplit("/", 1)[-1]
    arn = ctx.arn("eks", f"access-entry/{cluster}/role/{ACCOUNT_ID}/{role}/{_hex(ctx.name, n=8)}")
    return {"id": f"{cluster}:{principal}", "accessEntryArn": arn, "userName": principal}


def _oidc_provider(ctx: MockContext) -> dict[str, Any]:
    # IAM names an OIDC provider by its issuer without the scheme.
    arn = ctx.arn("iam", f"oidc-provider/{str(ctx.inputs.get('url', '')).removeprefix('https://')}", region=False)
    return {"id": arn, "arn": arn}


def eks_cluster_read(region: str, name: str, **overrides: Any) -> dict[str, Any]:
    """What ``aws.eks.get_cluster`` returns for an existing cluster (DescribeCluster's shape, camelCase)."""
    issuer = f"https://oidc.eks.{region}.amazonaws.com/id/{_hex(name, 'oidc', n=32).upper()}"
    vpc = f"vpc-{_hex(name, 'vpc')}"
    read = {
        "id": name,
        "name": name,
        "arn": f"arn:aws:eks:{region}:{ACCOUNT_ID}:cluster/{name}",
        "endpoint": f"https://{_hex(name, n=32).upper()}.gr7.{region}.eks.amazonaws.com",
        "certificateAuthorities": [{"data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"}],
        "identities": [{"oidcs": [{"issuer": issuer}]}],
        "accessConfigs": [
            {"authenticationMode": "API_AND_CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": False}
        ],
        "version": "1.33",
        "platformVersion": "eks.10",
        "status": "ACTIVE",
        "roleArn": f"arn:aws:iam::{ACCOUNT_ID}:role/{name}-cluster",
        "vpcConfig": {
            "clusterSecurityGroupId": f"sg-{_hex(name, 'cluster')}",
            "controlPlaneEgressMode": "",
            "endpointPrivateAccess": True,
            "endpointPublicAccess": False,
            "publicAccessCidrs": [],
            "securityGroupIds": [],
            "subnetIds": [],
            "vpcId": vpc,
        },
        "tags": {},
    }
    read.update(overrides)
    return read


def hyperpod_cluster_read(region: str, arn: str, eks_cluster_arn: str, **overrides: Any) -> dict[str, Any]:
    """What ``aws_native.sagemaker.get_cluster`` returns for an existing EKS-orchestrated HyperPod cluster."""
    read = {
        "clusterArn": arn,
        "clusterStatus": "InService",
        "orchestrator": {"eks": {"clusterArn": eks_cluster_arn}},
        "nodeRecovery": "Automatic",
    }
    read.update(overrides)
    return read


def mock_member_export(member: str, region: str) -> dict[str, Any]:
    """MOCK ``globalGatewayMember`` of a regional stack with a JWT-protected prod gateway in ``region`` (what a
    stack of this program named like ``member`` would export under these mocks). The offline tools use it only for
    a member they have no outputs for, and say so (``tools/plan/member_outputs.py``)."""
    stack = member.rsplit("/", 1)[-1]
    return {
        "gatewayEnabled": True,
        "name": "inference-gateway",
        "namespace": "inference",  # the gateway sits with its endpoints (components/config/gateway.py)
        "region": region,
        "jwtRequired": True,
        "environment": "prod",
        "clusterArn": hyperpod_cluster_arn(region, f"hpi-{stack}-hp"),
        # the reference prod stack's three AZs, named for ``region``
        "internalElbAzIds": [f"{az_id_prefix(region)}-az{n}" for n in (2, 4, 6)],
    }


# Test fixtures: the outputs a StackReference gets in a bare `run_stack` (the members of stacks/Pulumi.global.yaml;
# tests patch this mapping). The offline tools pass their own (`RecordingMocks.stack_outputs`, from
# --member-outputs, the members' stack files or mock values: tools/plan/member_outputs.py) and report mock values.
STACK_OUTPUTS: dict[str, dict[str, Any]] = {
    "acme/hyperpod-inference/prod": {"globalGatewayMember": mock_member_export("prod", "us-east-1")},
    "acme/hyperpod-inference/prod-usw2": {"globalGatewayMember": mock_member_export("prod-usw2", "us-west-2")},
}


def _stack_reference(ctx: MockContext, given: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    name = str(ctx.inputs.get("name") or ctx.name)
    table = STACK_OUTPUTS if given is None else given
    return {"id": name, "outputs": json.loads(json.dumps(table.get(name, {}))), "secretOutputNames": []}


def _hyperpod_node_wait(ctx: MockContext) -> dict[str, Any]:
    """The node wait (a dynamic provider): every group at its target (Running)."""
    return {"id": str(ctx.inputs.get("clusterArn") or ctx.physical_name), "runningNodes": ctx.inputs.get("groups")}


def _global_inference_gateway(ctx: MockContext) -> dict[str, Any]:
    """The Global Inference Gateway (a dynamic provider): what its provider returns once ACTIVE."""
    region = str(ctx.inputs.get("region") or ctx.region)
    gid = _hex(ctx.typ, str(ctx.inputs.get("name")), n=12)
    return {
        "id": gid,
        "gatewayId": gid,
        "arn": f"arn:aws:sagemaker:{region}:{ACCOUNT_ID}:global-inference-gateway/{gid}",
        "status": "ACTIVE",
        # format of the model's EndpointUrl example (botocore sagemaker, GlobalInferenceGatewayEndpointUrl)
        "endpointUrl": f"https://{gid}.001.sm-gateway.{region}.on.aws",
        "vpcEndpointServiceName": f"com.amazonaws.vpce.{region}.vpce-svc-{_hex(gid, n=17)}",
    }


def _amp_workspace(ctx: MockContext) -> dict[str, Any]:
    """AMP: id ``ws-<uuid>``, endpoint ``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/``."""
    h = _hex(ctx.name, n=32)
    ws = f"ws-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    return {
        "id": ws,
        "arn": ctx.arn("aps", f"workspace/{ws}"),
        "prometheusEndpoint": f"https://aps-workspaces.{ctx.region}.amazonaws.com/workspaces/{ws}/",
    }


def _log_group(ctx: MockContext) -> dict[str, Any]:
    """CloudWatch Logs: ``arn:aws:logs:<region>:<account>:log-group:<name>`` (the provider drops ``:*``)."""
    prefix = ctx.inputs.get("namePrefix")
    name = ctx.inputs.get("name") or (f"{prefix}{_hex(ctx.name, n=8)}" if prefix else ctx.physical_name)
    return {"id": name, "name": name, "arn": ctx.arn("logs", f"log-group:{name}")}


def _sns_topic(ctx: MockContext) -> dict[str, Any]:
    """SNS: ``arn:aws:sns:<region>:<account>:<topic name>`` (no ``topic/``); the ID is the ARN."""
    arn = ctx.arn("sns", ctx.physical_name)
    return {"id": arn, "arn": arn}


def _web_acl(ctx: MockContext) -> dict[str, Any]:
    """WAFv2: ``arn:aws:wafv2:<region>:<account>:<regional|global>/webacl/<name>/<id>`` (AWS WAF developer guide)."""
    wid = f"{_hex(ctx.name, n=8)}-{_hex(ctx.name, 'a', n=4)}-{_hex(ctx.name, 'b', n=4)}-{_hex(ctx.name, 'c', n=4)}-{_hex(ctx.name, 'd', n=12)}"
    scope = "global" if ctx.inputs.get("scope") == "CLOUDFRONT" else "regional"
    name = ctx.physical_name
    return {"id": wid, "arn": ctx.arn("wafv2", f"{scope}/webacl/{name}/{wid}"), "capacity": 0}


# Output shapes by name: a resource-type record's `mock: {outputs: <name>}` picks one (policies/resource_types).
# A type without one gets a generic id (and an ARN for aws: types).
MOCK_SHAPES: dict[str, OutputFn] = {
    "sns_topic": _sns_topic,
    "web_acl": _web_acl,
    "log_group": _log_group,
    "amp_workspace": _amp_workspace,
    "hyperpod_node_wait": _hyperpod_node_wait,
    "global_inference_gateway": _global_inference_gateway,
    "vpc": _vpc,
    "subnet": _subnet,
    "ec2": _ec2,
    "eip": _eip,
    "route": _route,
    "role": _role,
    "policy": _policy,
    "bucket": _bucket,
    "kms": _kms,
    "kms_alias": _kms_alias,
    "eks_cluster": _eks_cluster,
    "sagemaker_cluster": _sagemaker_cluster,
    "replication_group": _replication_group,
    "random_password": _random_password,
    "pulumi_eks_cluster": _pulumi_eks_cluster,
    "alb": _alb,
    "target_group": _target_group,
    "listener": _listener,
    "listener_rule": _listener_rule,
    "acm_certificate": _acm_certificate,
    "certificate_validation": _certificate_validation,
    "route53_record": _route53_record,
    "oidc_provider": _oidc_provider,
}


class RecordingMocks(pulumi.runtime.Mocks):
    """Answers registrations with realistic outputs and records what was registered."""

    def __init__(
        self,
        region: str = DEFAULT_REGION,
        stack_outputs: dict[str, dict[str, Any]] | None = None,
        partition: str = "aws",
    ) -> None:
        self.region = region
        # What aws:getPartition answers and the mocked ARNs carry (a test runs a stack in another partition).
        self.partition = partition
        # StackReference outputs by stack name (the offline tools' member outputs); None: STACK_OUTPUTS.
        self.stack_outputs = stack_outputs
        # Reads of existing clusters (data sources): name/ARN -> fields that differ from the realistic default.
        self.eks_overrides: dict[str, dict[str, Any]] = {}
        self.hyperpod_overrides: dict[str, dict[str, Any]] = {}
        self.calls: list[pulumi.runtime.MockCallArgs] = []
        self.resources: list[tuple[str, str, dict[str, Any]]] = []
        self.inputs_by_key: dict[tuple[str, str], dict[str, Any]] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        inputs = _ints(dict(args.inputs))
        recorded = _refs(inputs)  # the state echoes the objects (the SDK type-checks them); the graph keeps data
        self.resources.append((args.typ, args.name, recorded))
        self.inputs_by_key[(args.typ, args.name)] = recorded
        record = load_resource_types().record(args.typ, recorded)
        mock = record.mock if record is not None else None
        ctx = MockContext(self.region, args.typ, args.name, recorded, (mock and mock.id_prefix) or "", self.partition)
        fn = MOCK_SHAPES[mock.outputs] if mock is not None else None
        if args.typ == "pulumi:pulumi:StackReference":
            extra = _stack_reference(ctx, self.stack_outputs)
        elif fn is not None:
            extra = fn(ctx)
        elif args.typ.startswith("aws:"):
            service = args.typ.split(":")[1].split("/")[0]
            extra = {
                "id": ctx.physical_name,
                "arn": ctx.arn(service, f"{args.typ.rsplit(':', 1)[-1].lower()}/{ctx.physical_name}"),
            }
        else:
            extra = {"id": ctx.physical_name}
        rid = extra.pop("id", ctx.physical_name)
        return rid, {**inputs, **extra}

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        self.calls.append(args)
        if args.token == GET_CALLER_IDENTITY:
            arn = f"arn:{self.partition}:iam::{ACCOUNT_ID}:user/preview"
            return {"accountId": ACCOUNT_ID, "arn": arn, "userId": "AIDAPREVIEW"}
        if args.token == GET_REGION:
            return {"name": self.region, "region": self.region, "id": self.region}
        if args.token == GET_PARTITION:
            return {"partition": self.partition, "dnsSuffix": "amazonaws.com"}
        if args.token == GET_EKS_CLUSTER:  # an adopted EKS cluster
            name = str(args.args["name"])
            return eks_cluster_read(self.region, name, **self.eks_overrides.get(name, {}))
        if args.token == GET_HYPERPOD_CLUSTER:  # an adopted HyperPod cluster, orchestrated by EKS
            arn = str(args.args["clusterArn"])
            # By default the EKS cluster the stack adopts, as read above (the stack's only `eks:getCluster` call).
            eks_names = [c.args["name"] for c in self.calls if c.token == GET_EKS_CLUSTER]
            eks_arn = f"arn:aws:eks:{self.region}:{ACCOUNT_ID}:cluster/{eks_names[-1] if eks_names else 'unknown'}"
            return hyperpod_cluster_read(self.region, arn, eks_arn, **self.hyperpod_overrides.get(arn, {}))
        return {}


@dataclass
class Registration:
    """One resource registration as the engine saw it."""

    type: str
    name: str
    urn: str
    custom: bool
    parent: str | None
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)
    dependencies: list[str] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    protect: bool = False
    provider: str | None = None
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    additional_secret_outputs: list[str] = field(default_factory=list)
    # What the mock returned as the resource's ID, and the replacement options the program set.
    id: str | None = None
    replace_on_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool = False


ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
# The engine's rule, pulumi/pulumi@0ac56e876614aedf12771d73ef7e80959b8a6fd4 (tag v3.259.0, the newest release in
# the mirror; the SDK pin 3.272.0 is not tagged there, and these lines did not change up to master
# 1b5949891b3cefcb9974752b24a5ecef0acc86c8): pkg/resource/deploy/deployment.go `generateURN` passes the parent's
# whole qualified type unless the parent is the root Stack, and sdk/go/common/resource/urn/urn.go `New` joins
# `<parent qualified type>$<type>` (`TypeDelimiter`) and writes `urn:pulumi:<stack>::<project>::<type>::<name>`.
URN_PREFIX = "urn:pulumi:"


def qualified_type(urn: str) -> str:
    """The URN's type part: every ancestor's type below the root Stack and its own, ``$``-joined
    (``URN.QualifiedType``: the third ``::`` component, urn.go)."""
    parts = urn.removeprefix(URN_PREFIX).split("::", 3)
    return parts[2] if len(parts) >= 3 else ""


def engine_urn(stack: str, project: str, parent: str, typ: str, name: str) -> str:
    """The URN the engine gives a resource of ``typ`` named ``name`` under the resource whose URN is ``parent``
    (``""`` for none): the parent's qualified type and ``$``, unless the parent is the root Stack."""
    parent_type = qualified_type(parent) if parent else ""
    qualified = f"{parent_type}${typ}" if parent_type and parent_type != ROOT_STACK_TYPE else typ
    return f"{URN_PREFIX}{stack}::{project}::{qualified}::{name}"


class GraphMonitor(MockMonitor):
    """A mock monitor that keeps every registration request, in order, and names resources as the engine does."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.recording = mocks
        self.registrations: list[Registration] = []

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The engine's URN (:func:`engine_urn`). The SDK's mock monitor keeps only the parent's last type and
        prefixes ``pulumi:pulumi:Stack$`` to top-level resources (pulumi 3.272.0 ``runtime/mocks.py`` make_urn),
        which names none of the resources a real stack has."""
        return engine_urn(settings.get_stack(), settings.get_project(), parent, type_, name)

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        # The mock monitor has just deserialized these inputs for new_resource; reuse them (deserializing
        # twice doubled the per-resource cost of large custom resources).
        known = self.recording.inputs_by_key.get((request.type, request.name))
        inputs = known if known is not None else _refs(_ints(rpc.deserialize_properties(request.object)))
        timeouts = {}
        if request.HasField("customTimeouts"):
            ct = request.customTimeouts
            timeouts = {k: v for k, v in (("create", ct.create), ("update", ct.update), ("delete", ct.delete)) if v}
        reg = self.resources.get(response.urn)
        self.registrations.append(
            Registration(
                type=request.type,
                name=request.name,
                urn=response.urn,
                custom=bool(request.custom),
                parent=request.parent or None,
                inputs=inputs,
                outputs=_refs(_ints(dict(reg.state))) if reg is not None else {},
                dependencies=list(request.dependencies),
                property_dependencies={k: list(v.urns) for k, v in request.propertyDependencies.items()},
                protect=bool(request.protect),
                provider=request.provider or None,
                custom_timeouts=timeouts,
                additional_secret_outputs=list(request.additionalSecretOutputs),
                id=reg.id if reg is not None else None,
                replace_on_changes=list(request.replaceOnChanges),
                delete_before_replace=bool(request.deleteBeforeReplace),
            )
        )
        return response

    def of_type(self, typ: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == typ]

    def named(self, typ: str, name: str) -> Registration:
        found = [r for r in self.registrations if r.type == typ and r.name == name]
        if len(found) != 1:
            raise LookupError(f"{len(found)} registrations of {typ} named {name!r}")
        return found[0]


def secret_values(registrations: list[Registration], config_placeholders: tuple[str, ...] = ()) -> frozenset[str]:
    """The string values a run treats as secret: config placeholders and every output a resource marks secret.

    Generated SDKs mark provider-secret outputs with ``additional_secret_outputs`` (e.g. RandomPassword
    ``result``); the mocks echo them back as outputs. The plan uses these to blind exactly the secret leaves
    inside a secret-wrapped input and keep the rest of its structure readable.
    """
    found = {p for p in config_placeholders if p}
    for r in registrations:
        for key in r.additional_secret_outputs:
            value = r.outputs.get(key)
            if isinstance(value, str) and value:
                found.add(value)
    return frozenset(found)


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.plan.mocks", "python -m tools.cli.preview --stack <name> (the program under these mocks)")
