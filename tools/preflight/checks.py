"""The preflight checks: read-only AWS calls that catch what ``pulumi up`` would otherwise fail on late.

Each check is a small function ``(clients, cfg) -> list[CheckResult]`` decorated with :func:`check`, so
tests call it directly (against moto, or a client with a botocore ``Stubber`` attached) and ``main()``
runs them all. A denied call becomes a FAIL row naming the IAM action that is missing; any other AWS
error becomes a FAIL row with AWS's message. Missing credentials are not caught here: they abort the
whole run with one message (see ``tools.preflight.regional``).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, PartialCredentialsError
from pydantic import SecretStr

from components import aws_calls
from components.aws_calls import DENIED_CODES, error_code
from components.config import PROJECT, StackConfig
from components.config import cluster as cluster_config
from components.config import operator as operator_config
from components.config.capacity import zone_names
from components.config.cluster import InstanceGroup, is_accelerated
from policies import capacity_rules
from policies.resource_types import load_resource_types
from policies.resource_types.tokens import EKS_ADDON

Status = Literal["PASS", "FAIL", "WARN", "SKIP"]

# The EKS add-on of the HyperPod Inference Operator; its pin is ``operator.addonVersion``.
INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference"
# Fallback when ``components.config.operator`` has no PREREQUISITES table: add-on -> ``operator`` attribute.
PREREQUISITE_ADDONS: dict[str, str] = {
    "aws-mountpoint-s3-csi-driver": "s3_csi_driver_version",
    "aws-fsx-csi-driver": "fsx_csi_driver_version",
    "metrics-server": "metrics_server_version",
    "cert-manager": "cert_manager_version",
}
# Core EKS add-ons -> the ``cluster.addons`` attribute pinning each (as components/eks_cluster.py installs them).
CORE_ADDONS: dict[str, str] = {
    "vpc-cni": "vpc_cni",
    "kube-proxy": "kube_proxy",
    "coredns": "coredns",
    "eks-pod-identity-agent": "pod_identity_agent",
}
# Error codes AWS APIs use for "the caller may not do this".
# botocore operation -> the IAM action it needs, where they differ.
IAM_ACTION_OVERRIDES = {("s3", "HeadBucket"): "s3:ListBucket"}
# Training-plan states in which a plan can still back an instance group.
USABLE_PLAN_STATES = frozenset({"Active", "Scheduled"})


@dataclass(frozen=True)
class CheckResult:
    """One row of the preflight table."""

    check: str
    status: Status
    detail: str
    action: str = ""


class Clients:
    """boto3 clients for one region, created once each (tests attach Stubbers to them)."""

    def __init__(self, session: boto3.Session, region: str) -> None:
        self.session = session
        self.region = region
        self._clients: dict[str, Any] = {}
        self._identity: dict[str, Any] | None = None

    @property
    def identity(self) -> dict[str, Any]:
        """The caller (STS GetCallerIdentity, which needs no IAM permission)."""
        if self._identity is None:
            self._identity = dict(self("sts").get_caller_identity())
        return self._identity

    @property
    def account_id(self) -> str:
        return str(self.identity["Account"])

    @property
    def partition(self) -> str:
        return str(self.identity.get("Arn", "arn:aws:").split(":")[1])

    def __call__(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self.session.client(
                service, region_name=self.region, config=aws_calls.TOOL_RETRIES
            )
        return self._clients[service]


class Denied(Exception):
    """An AWS call was refused for lack of an IAM permission."""

    def __init__(self, action: str, message: str) -> None:
        super().__init__(message)
        self.action = action
        self.message = message


def iam_action(client: Any, operation: str) -> str:
    """The IAM action a botocore operation needs (``servicequotas:ListServiceQuotas``)."""
    prefix = client.meta.service_model.signing_name
    return IAM_ACTION_OVERRIDES.get((prefix, operation), f"{prefix}:{operation}")


@contextlib.contextmanager
def denied_named(client: Any) -> Iterator[None]:
    """An access-denied error of ``client`` inside becomes :class:`Denied`, naming the IAM action it lacks."""
    try:
        yield
    except ClientError as err:
        if error_code(err) in DENIED_CODES:
            raise Denied(iam_action(client, err.operation_name), str(err)) from None
        raise


def call(client: Any, method: str, **kwargs: Any) -> Any:
    """``client.<method>(**kwargs)``, an access-denied error as :class:`Denied`."""
    with denied_named(client):
        return getattr(client, method)(**kwargs)


def listed(client: Any, method: str, key: str, **kwargs: Any) -> list[Any]:
    """Every entry under ``key`` of every page of ``client.<method>`` (its paginator), access denied as
    :class:`Denied`."""
    with denied_named(client):
        return list(aws_calls.items(client, method, key, **kwargs))


CheckFn = Callable[[Clients, StackConfig], list[CheckResult]]
CHECKS: list[CheckFn] = []


def check(title: str) -> Callable[[CheckFn], CheckFn]:
    """Register a check; an AWS error inside it becomes one FAIL row titled ``title``."""

    def wrap(fn: CheckFn) -> CheckFn:
        @functools.wraps(fn)
        def run(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
            try:
                return fn(clients, cfg)
            except Denied as err:
                return [
                    CheckResult(
                        title,
                        "FAIL",
                        f"access denied: the caller lacks {err.action}, so this could not be checked",
                        f"grant {err.action} to the credentials running preflight (read-only), then rerun",
                    )
                ]
            except ClientError as err:
                msg = err.response.get("Error", {}).get("Message", str(err))
                return [
                    CheckResult(
                        title, "FAIL", f"{err.operation_name} failed: {error_code(err)}: {msg}", "fix and rerun"
                    )
                ]
            except (NoCredentialsError, PartialCredentialsError):
                raise
            except BotoCoreError as err:
                return [CheckResult(title, "FAIL", f"AWS call failed: {err}", "check network access to AWS and rerun")]

        CHECKS.append(run)
        return run

    return wrap


ADOPTED_GROUPS_SKIP = "the HyperPod cluster is adopted (cluster.existing.hyperpodClusterArn): no group is created"


def adopts_hyperpod(cfg: StackConfig) -> bool:
    """The stack adopts an existing HyperPod cluster: its groups exist, none is created."""
    return cfg.cluster.existing is not None and cfg.cluster.existing.hyperpod_cluster_arn is not None


def group_az(cfg: StackConfig, group: InstanceGroup) -> str:
    """The AZ ID a group lands in: its own, else the first network AZ ID (as the cluster layer does)."""
    return group.availability_zone_id or cfg.network.az_ids[0]


def ec2_type(instance_type: str) -> str:
    """``ml.p5.48xlarge`` -> ``p5.48xlarge``: HyperPod types are EC2 types with an ``ml.`` prefix."""
    return instance_type.removeprefix("ml.")


# --- capacity -----------------------------------------------------------------------------------------


def _offered_az_ids(ec2: Any, instance_type: str, az_ids: Iterable[str] | None = None) -> set[str]:
    filters = [{"Name": "instance-type", "Values": [instance_type]}]
    if az_ids is not None:
        filters.append({"Name": "location", "Values": list(az_ids)})
    offerings = listed(
        ec2,
        "describe_instance_type_offerings",
        "InstanceTypeOfferings",
        LocationType="availability-zone-id",
        Filters=filters,
    )
    return {o["Location"] for o in offerings}


@check("instance type offered")
def check_instance_offerings(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """Every group's type must be offered in its AZ ID: the commonest HyperPod create failure."""
    if adopts_hyperpod(cfg):
        return [CheckResult("offering", "SKIP", ADOPTED_GROUPS_SKIP)]
    ec2 = clients("ec2")
    out: list[CheckResult] = []
    for i, group in enumerate(cfg.cluster.instance_groups):
        az, etype = group_az(cfg, group), ec2_type(group.instance_type)
        name = f"offering {group.name}"
        if az in _offered_az_ids(ec2, etype, [az]):
            out.append(CheckResult(name, "PASS", f"{etype} is offered in {az}"))
            continue
        elsewhere = sorted(_offered_az_ids(ec2, etype))
        where = f"it is offered in {', '.join(elsewhere)}" if elsewhere else f"it is offered in no AZ of {cfg.region}"
        out.append(
            CheckResult(
                name,
                "FAIL",
                f"{etype} is not offered in {az} ({cfg.region}); {where}",
                f"set cluster.instanceGroups[{i}].availabilityZoneId to an AZ ID that offers it "
                "(and list it in network.availabilityZoneIds), or pick another instance type"
                if elsewhere
                else "pick another instance type or region",
            )
        )
    return out


def _sagemaker_quotas(sq: Any) -> dict[str, dict[str, Any]]:
    """SageMaker quotas by name: applied values over AWS defaults (applied ones are only listed when known)."""
    quotas: dict[str, dict[str, Any]] = {}
    for method in ("list_aws_default_service_quotas", "list_service_quotas"):
        quotas.update({q["QuotaName"]: q for q in listed(sq, method, "Quotas", ServiceCode="sagemaker")})
    return quotas


@check("service quota")
def check_quotas(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """The per-type "<type> for cluster usage" quotas must cover the summed instance counts."""
    if adopts_hyperpod(cfg):
        return [CheckResult("service quota", "SKIP", ADOPTED_GROUPS_SKIP)]
    needed: dict[str, int] = defaultdict(int)
    for group in cfg.cluster.instance_groups:
        needed[group.instance_type] += group.instance_count
    needed = {t: n for t, n in needed.items() if n > 0}
    if not needed:
        return [CheckResult("service quota", "SKIP", "every instance group has instanceCount 0")]
    quotas = _sagemaker_quotas(clients("service-quotas"))
    out: list[CheckResult] = []
    for itype, count in sorted(needed.items()):
        qname = f"{itype} for cluster usage"
        name = f"quota {itype}"
        quota = quotas.get(qname)
        if quota is None:
            out.append(
                CheckResult(
                    name,
                    "FAIL",
                    f'no SageMaker quota named "{qname}" in {cfg.region}: HyperPod may not offer this type here',
                    "check the Service Quotas console for SageMaker in this region, or pick another type/region",
                )
            )
            continue
        value = int(quota.get("Value", 0))
        if value >= count:
            out.append(
                CheckResult(
                    name,
                    "PASS",
                    f"quota {value} covers {count} instance(s) (instances other clusters already use count too)",
                )
            )
        else:
            out.append(
                CheckResult(
                    name,
                    "FAIL",
                    f'"{qname}" is {value}, the stack needs {count}',
                    f"request an increase: aws service-quotas request-service-quota-increase --service-code sagemaker "
                    f"--quota-code {quota.get('QuotaCode', '?')} --desired-value {count} --region {cfg.region}",
                )
            )
    return out


# --- EKS add-on versions ---------------------------------------------------------------------------------


def addon_pins(cfg: StackConfig) -> tuple[dict[str, str], str]:
    """Every pinned add-on version the stack installs, and a note naming pins that could not be found."""
    pins = {INFERENCE_ADDON: cfg.operator.addon_version}
    prerequisites = getattr(operator_config, "PREREQUISITES", None)
    if prerequisites:
        dumped = cfg.operator.model_dump(by_alias=True)
        pins.update({p.addon_name: dumped[p.config_key] for p in prerequisites})
    else:
        pins.update({name: getattr(cfg.operator, attr) for name, attr in PREREQUISITE_ADDONS.items()})
    for name in cfg.operator.existing_prerequisites:  # installed by someone else: see check_existing_prerequisites
        pins.pop(name, None)
    if cfg.cluster.existing is not None:  # an adopted EKS cluster's core add-ons are its owner's
        return pins, ""
    core = getattr(cfg.cluster, "addons", None)
    missing = [name for name, attr in CORE_ADDONS.items() if not isinstance(getattr(core, attr, None), str)]
    pins.update({name: getattr(core, attr) for name, attr in CORE_ADDONS.items() if name not in missing})
    note = f"no pin for {', '.join(missing)} in cluster.addons: not checked" if missing else ""
    return pins, note


def _iam_mode(eks: Any, addon: str, version: str, requires_iam: bool) -> str:
    conf = call(eks, "describe_addon_configuration", addonName=addon, addonVersion=version)
    pod_identity = conf.get("podIdentityConfiguration") or []
    if pod_identity:
        parts = [
            f"{p.get('serviceAccount', '?')} ({', '.join(p.get('recommendedManagedPolicies') or []) or 'no managed policy'})"
            for p in pod_identity
        ]
        return "IAM: pod identity for " + "; ".join(parts)
    if requires_iam:
        return "IAM: needs permissions but offers no pod identity association: use IRSA (or the add-on's role key)"
    return "IAM: none required"


def addon_versions_for(eks: Any, addon: str, kubernetes_version: str) -> list[dict[str, Any]]:
    """Every ``addonVersions`` entry EKS lists for ``addon`` on ``kubernetes_version`` (all pages)."""
    addons = listed(eks, "describe_addon_versions", "addons", addonName=addon, kubernetesVersion=kubernetes_version)
    return [version for info in addons for version in info.get("addonVersions", [])]


@check("add-on versions")
def check_addon_versions(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """Pinned add-on versions must exist for the cluster's Kubernetes version; also say how each wants IAM."""
    eks = clients("eks")
    k8s = cfg.cluster.kubernetes_version
    if cfg.cluster.existing is not None:  # the adopted cluster's own version, not a pin of this stack
        found = _describe_eks(clients, cfg.cluster.existing.eks_cluster_name)
        if found is None:
            return [CheckResult("add-on versions", "SKIP", "the adopted EKS cluster was not found (see its check)")]
        k8s = str(found.get("version", k8s))
    pins, note = addon_pins(cfg)
    out: list[CheckResult] = []
    for addon, version in pins.items():
        name = f"add-on {addon}"
        versions = addon_versions_for(eks, addon, k8s)
        match = next((v for v in versions if v.get("addonVersion") == version), None)
        if match is None:
            available = [v["addonVersion"] for v in versions if "addonVersion" in v]
            detail = (
                f"{version} is not available for Kubernetes {k8s} in {cfg.region}; available: {', '.join(available[:5])}"
                if available
                else f"{addon} has no version for Kubernetes {k8s} in {cfg.region}"
            )
            out.append(CheckResult(name, "FAIL", detail, "pin a listed version (or change cluster.kubernetesVersion)"))
            continue
        iam = _iam_mode(eks, addon, version, bool(match.get("requiresIamPermissions")))
        out.append(CheckResult(name, "PASS", f"{version} exists for Kubernetes {k8s}; {iam}"))
    if note:
        out.append(CheckResult("add-on core pins", "SKIP", note))
    return out


# --- name clashes ----------------------------------------------------------------------------------------

# Resource types the program gives a fixed physical name are those whose record has `preflight:` (its label names
# the look-up in LOOKUPS; the name input is the record's). Names are taken from a mock run of the real program
# (tools.plan.harness), so they cannot drift from the components; every other resource is auto-named by Pulumi
# (random suffix) and cannot clash.
PlannedNames = dict[str, tuple[str, ...]]  # kind (the record's preflight label) -> fixed names
_NAMES_CACHE: dict[tuple[str, str, str], PlannedNames] = {}


def _stack_mapping(cfg: StackConfig) -> dict[str, Any]:
    """The stack-file ``config:`` mapping that validates to ``cfg`` (what the user set; secrets as ``secure:``)."""

    def plain(value: Any) -> Any:
        if isinstance(value, SecretStr):
            return {"secure": "v1:preflight-placeholder"}
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        return str(value)  # IPv4Network, HttpUrl, ...

    dumped = cfg.model_dump(by_alias=True, exclude_unset=True)
    mapping = {f"{PROJECT}:{k}": plain(v) for k, v in dumped.items()}
    mapping["aws:region"] = cfg.region
    return mapping


def named_types() -> list[tuple[str, str, str]]:
    """(type, name input, label) of every record with a preflight look-up."""
    out = []
    for typ, record in load_resource_types().types.items():
        if record.preflight is not None:
            rule = record.physical_name
            field = record.preflight.name_input or (rule.name if rule is not None else "name")
            out.append((typ, field, record.preflight.label))
    return out


def planned_names(cfg: StackConfig, account_id: str) -> PlannedNames:
    """Fixed names the program would create for ``cfg`` in ``account_id``, from a mock run of the program."""
    from tools.plan.harness import run_stack  # the Pulumi runtime is only loaded when names are needed
    from tools.plan.mocks import ACCOUNT_ID

    key = (cfg.stack, cfg.model_dump_json(), account_id)
    if key not in _NAMES_CACHE:
        run = run_stack(cfg.stack, _stack_mapping(cfg))
        if run.config_error is not None:
            raise ValueError(f"the program rejected the config under mocks: {run.config_error}")
        names: dict[str, list[str]] = {}
        for typ, field, kind in named_types():
            for reg in run.of_type(typ):
                value = reg.inputs.get(field)
                if isinstance(value, str) and value not in names.setdefault(kind, []):
                    names[kind].append(value.replace(ACCOUNT_ID, account_id))
        _NAMES_CACHE[key] = {k: tuple(v) for k, v in names.items()}
    return _NAMES_CACHE[key]


def _not_found(err: ClientError, *codes: str) -> bool:
    return error_code(err) in codes


def _eks_cluster(clients: Clients, name: str) -> str | None:
    try:
        return f"status {call(clients('eks'), 'describe_cluster', name=name)['cluster'].get('status', '?')}"
    except ClientError as err:
        if _not_found(err, "ResourceNotFoundException"):
            return None
        raise


def _hyperpod_cluster(clients: Clients, name: str) -> str | None:
    for summary in listed(clients("sagemaker"), "list_clusters", "ClusterSummaries", NameContains=name):
        if summary.get("ClusterName") == name:
            return f"status {summary.get('ClusterStatus', '?')}"
    return None


def _bucket(clients: Clients, name: str) -> str | None:
    try:
        clients("s3").head_bucket(Bucket=name)
    except ClientError as err:
        if _not_found(err, "404", "NoSuchBucket", "NotFound"):
            return None
        if error_code(err) in ("403", "AccessDenied"):
            return "it exists and this account may not read it (bucket names are global), or the caller lacks s3:ListBucket"
        raise
    return "it exists in this account"


def _iam_role(clients: Clients, name: str) -> str | None:
    try:
        call(clients("iam"), "get_role", RoleName=name)
    except ClientError as err:
        if _not_found(err, "NoSuchEntity"):
            return None
        raise
    return "IAM names are global to the account: another region's stack of the same name counts"


def _iam_policy(clients: Clients, name: str) -> str | None:
    arn = f"arn:{clients.partition}:iam::{clients.account_id}:policy/{name}"
    try:
        call(clients("iam"), "get_policy", PolicyArn=arn)
    except ClientError as err:
        if _not_found(err, "NoSuchEntity"):
            return None
        raise
    return "IAM names are global to the account: another region's stack of the same name counts"


def _kms_alias(clients: Clients, name: str) -> str | None:
    try:
        key = call(clients("kms"), "describe_key", KeyId=name)["KeyMetadata"]
    except ClientError as err:
        if _not_found(err, "NotFoundException"):
            return None
        raise
    return f"it points at key {key.get('KeyId', '?')}"


def _load_balancer(clients: Clients, name: str) -> str | None:
    try:
        found = call(clients("elbv2"), "describe_load_balancers", Names=[name])["LoadBalancers"]
    except ClientError as err:
        if _not_found(err, "LoadBalancerNotFound"):
            return None
        raise
    return f"{found[0].get('LoadBalancerArn', '?')}" if found else None


def _replication_group(clients: Clients, name: str) -> str | None:
    try:
        found = call(clients("elasticache"), "describe_replication_groups", ReplicationGroupId=name)
    except ClientError as err:
        if _not_found(err, "ReplicationGroupNotFoundFault"):
            return None
        raise
    groups = found.get("ReplicationGroups") or [{}]
    return f"status {groups[0].get('Status', '?')}"


LOOKUPS: dict[str, Callable[[Clients, str], str | None]] = {
    "EKS cluster": _eks_cluster,
    "HyperPod cluster": _hyperpod_cluster,
    "S3 bucket": _bucket,
    "IAM role": _iam_role,
    "IAM policy": _iam_policy,
    "KMS alias": _kms_alias,
    "load balancer": _load_balancer,
    "ElastiCache replication group": _replication_group,
}


@check("names")
def check_names(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """Every fixed name the stack would create must be free, or ``pulumi up`` fails with "already exists"."""
    try:
        names = planned_names(cfg, clients.account_id)
    except Exception as err:  # noqa: BLE001 - any failure of the mock run is reported, never a traceback
        return [CheckResult("names", "FAIL", f"could not derive the stack's names: {err}", "run tools.cli.preview")]
    out: list[CheckResult] = []
    for kind, lookup in LOOKUPS.items():
        for name in names.get(kind, ()):
            found = lookup(clients, name)
            if found is None:
                out.append(CheckResult(f"name {kind} {name}", "PASS", f"free in {cfg.region}"))
            else:
                out.append(
                    CheckResult(
                        f"name {kind} {name}",
                        "FAIL",
                        f"{kind} {name} already exists: {found}",
                        "import it into this stack (pulumi import), delete it if it is left over, "
                        "or use another stack name",
                    )
                )
    return out


# --- ingress: certificate and hosted zone --------------------------------------------------------------------


def _covers(pattern: str, domain: str) -> bool:
    pattern, domain = pattern.lower().rstrip("."), domain.lower().rstrip(".")
    if pattern.startswith("*."):
        head, _, rest = domain.partition(".")
        return bool(head) and rest == pattern[2:]
    return pattern == domain


@check("ACM certificate")
def check_certificate(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """The ALB can only use an ACM certificate from its own region, issued and covering the domain."""
    ingress = cfg.ingress
    arn = ingress.certificate_arn
    if not ingress.enabled or not arn:
        return [CheckResult("ingress certificate", "SKIP", "ingress is off or ingress.certificateArn is not set")]
    parts = arn.split(":")
    cert_region = parts[3] if len(parts) > 5 and parts[2] == "acm" else None
    if cert_region != cfg.region:
        return [
            CheckResult(
                "ingress certificate",
                "FAIL",
                f"{arn} is in {cert_region or 'no region (not an ACM ARN)'}, the stack is in {cfg.region}",
                f"request or import the certificate in {cfg.region} and set ingress.certificateArn to it",
            )
        ]
    try:
        cert = call(clients("acm"), "describe_certificate", CertificateArn=arn)["Certificate"]
    except ClientError as err:
        if error_code(err) == "ResourceNotFoundException":
            return [
                CheckResult(
                    "ingress certificate",
                    "FAIL",
                    f"no certificate {arn} in {cfg.region}",
                    "fix ingress.certificateArn",
                )
            ]
        raise
    status = cert.get("Status", "?")
    if status != "ISSUED":
        return [
            CheckResult(
                "ingress certificate",
                "FAIL",
                f"certificate status is {status}, not ISSUED",
                "complete DNS validation (or renew/re-import) before deploying",
            )
        ]
    names = [*(cert.get("SubjectAlternativeNames") or []), cert.get("DomainName", "")]
    if ingress.domain_name and not any(_covers(n, ingress.domain_name) for n in names if n):
        return [
            CheckResult(
                "ingress certificate",
                "FAIL",
                f"the certificate covers {', '.join(sorted(set(filter(None, names))))}, not {ingress.domain_name}",
                "use a certificate for ingress.domainName",
            )
        ]
    return [CheckResult("ingress certificate", "PASS", f"issued in {cfg.region} for {cert.get('DomainName', '?')}")]


@check("hosted zone")
def check_hosted_zone(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """ingress.domainName must sit inside ingress.hostedZoneId, or the DNS record cannot be created."""
    ingress = cfg.ingress
    if not ingress.enabled or not ingress.hosted_zone_id or not ingress.domain_name:
        return [
            CheckResult("ingress hosted zone", "SKIP", "ingress is off or ingress.hostedZoneId / domainName is not set")
        ]
    try:
        zone = call(clients("route53"), "get_hosted_zone", Id=ingress.hosted_zone_id)["HostedZone"]
    except ClientError as err:
        if error_code(err) == "NoSuchHostedZone":
            return [
                CheckResult(
                    "ingress hosted zone",
                    "FAIL",
                    f"no hosted zone {ingress.hosted_zone_id} in this account",
                    "fix ingress.hostedZoneId",
                )
            ]
        raise
    zone_name = zone["Name"].rstrip(".").lower()
    domain = ingress.domain_name.rstrip(".").lower()
    configured = (ingress.hosted_zone_name or "").rstrip(".").lower()
    if configured and configured != zone_name:
        return [
            CheckResult(
                "ingress hosted zone",
                "FAIL",
                f"ingress.hostedZoneName is {configured} but zone {ingress.hosted_zone_id} is {zone_name}",
                "make ingress.hostedZoneName and ingress.hostedZoneId name the same zone",
            )
        ]
    hosts = [domain, *(r.host.rstrip(".").lower() for r in ingress.routes if r.host)]
    outside = [h for h in dict.fromkeys(hosts) if h != zone_name and not h.endswith("." + zone_name)]
    if outside:
        return [
            CheckResult(
                "ingress hosted zone",
                "FAIL",
                f"{', '.join(outside)} is not inside the zone {zone_name} ({ingress.hosted_zone_id})",
                "set ingress.hostedZoneId to the zone that holds ingress.domainName and the route hosts",
            )
        ]
    if zone.get("Config", {}).get("PrivateZone") and ingress.scheme == "internet-facing":
        return [
            CheckResult(
                "ingress hosted zone",
                "WARN",
                f"{zone_name} is a private zone but the ALB is internet-facing: the name won't resolve publicly",
                "use a public hosted zone, or ingress.scheme: internal",
            )
        ]
    return [CheckResult("ingress hosted zone", "PASS", f"{domain} is in {zone_name}")]


# --- training plans ---------------------------------------------------------------------------------------------


def _zone_ids(ec2: Any, names: set[str]) -> dict[str, str]:
    if not names:
        return {}
    zones = call(ec2, "describe_availability_zones", ZoneNames=sorted(names))["AvailabilityZones"]
    return {z["ZoneName"]: z["ZoneId"] for z in zones}


@check("training plans")
def check_training_plans(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """A group's training plan must reserve its instance type in its AZ, for HyperPod, enough of them."""
    if adopts_hyperpod(cfg):
        return [CheckResult("training plans", "SKIP", ADOPTED_GROUPS_SKIP)]
    groups = [(i, g) for i, g in enumerate(cfg.cluster.instance_groups) if g.training_plan_arn]
    if not groups:
        return [CheckResult("training plans", "SKIP", "no instance group sets trainingPlanArn")]
    out: list[CheckResult] = []
    for i, group in groups:
        arn = group.training_plan_arn or ""
        name = f"training plan {group.name}"
        key = f"cluster.instanceGroups[{i}].trainingPlanArn"
        plan_region = arn.split(":")[3]
        if plan_region != cfg.region:
            out.append(
                CheckResult(name, "FAIL", f"the plan is in {plan_region}, the stack in {cfg.region}", f"fix {key}")
            )
            continue
        try:
            plan = call(clients("sagemaker"), "describe_training_plan", TrainingPlanName=arn.rsplit("/", 1)[-1])
        except ClientError as err:
            if error_code(err) in ("ResourceNotFound", "ResourceNotFoundException"):
                out.append(CheckResult(name, "FAIL", f"no training plan {arn}", f"fix {key}"))
                continue
            raise
        problems: list[str] = []
        if "hyperpod-cluster" not in (plan.get("TargetResources") or []):
            problems.append(f"it targets {', '.join(plan.get('TargetResources') or ['nothing'])}, not hyperpod-cluster")
        if plan.get("Status") not in USABLE_PLAN_STATES:
            problems.append(f"its status is {plan.get('Status', '?')}")
        summaries = plan.get("ReservedCapacitySummaries") or []
        names_only = {
            s["AvailabilityZone"] for s in summaries if not s.get("AvailabilityZoneId") and s.get("AvailabilityZone")
        }
        ids = _zone_ids(clients("ec2"), names_only)
        az = group_az(cfg, group)
        typed = [s for s in summaries if s.get("InstanceType") == group.instance_type]
        here = [s for s in typed if (s.get("AvailabilityZoneId") or ids.get(s.get("AvailabilityZone", ""))) == az]
        if not typed:
            reserved = sorted({s.get("InstanceType", "?") for s in summaries})
            problems.append(f"it reserves {', '.join(reserved) or 'nothing'}, not {group.instance_type}")
        elif not here:
            where = sorted({s.get("AvailabilityZoneId") or ids.get(s.get("AvailabilityZone", ""), "?") for s in typed})
            problems.append(f"its {group.instance_type} capacity is in {', '.join(where)}, the group in {az}")
        else:
            reserved_count = sum(int(s.get("TotalInstanceCount", 0)) for s in here)
            if reserved_count < group.instance_count:
                problems.append(
                    f"it reserves {reserved_count} instance(s) in {az}, the group wants {group.instance_count}"
                )
        if problems:
            out.append(
                CheckResult(
                    name,
                    "FAIL",
                    "; ".join(problems),
                    f"fix {key} or the group's instanceType/availabilityZoneId/instanceCount to match the plan",
                )
            )
        else:
            out.append(CheckResult(name, "PASS", f"{plan.get('Status')} plan reserves {group.instance_type} in {az}"))
    return out


@check("capacity levers")
def check_capacity_levers(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """What the account has to get the GPUs of each accelerated group that takes none from a training plan.

    On-demand p5/p6 often meet InsufficientCapacity on the first `up` (issue 47 item 10). The levers:
    ``trainingPlanArn`` (reserved capacity: ListTrainingPlans lists the Active or Scheduled plans of the account
    that target hyperpod-cluster and reserve the group's type), ``minInstanceCount`` (partial provisioning: InService
    with fewer) and ``cluster.nodeProvisioningMode: Continuous`` (the cluster keeps retrying while InService).
    Reported, never refused: a group may well get on-demand capacity."""
    if adopts_hyperpod(cfg):
        return [CheckResult("capacity levers", "SKIP", ADOPTED_GROUPS_SKIP)]
    groups = [
        (i, g)
        for i, g in enumerate(cfg.cluster.instance_groups)
        if g.instance_count > 0 and not g.training_plan_arn and is_accelerated(g.instance_type)
    ]
    if not groups:
        return [CheckResult("capacity levers", "SKIP", "no accelerated group takes on-demand capacity")]
    plans: list[dict[str, Any]] = []
    for page in clients("sagemaker").get_paginator("list_training_plans").paginate():
        plans.extend(page.get("TrainingPlanSummaries") or [])
    usable = [
        p
        for p in plans
        if p.get("Status") in USABLE_PLAN_STATES and "hyperpod-cluster" in (p.get("TargetResources") or [])
    ]
    continuous = cfg.cluster.node_provisioning_mode == "Continuous"
    out = []
    for i, group in groups:
        key = f"cluster.instanceGroups[{i}]"
        matching = [
            p
            for p in usable
            if any(s.get("InstanceType") == group.instance_type for s in p.get("ReservedCapacitySummaries") or [])
        ]
        levers = [
            *([f"minInstanceCount {group.min_instance_count}"] if group.min_instance_count is not None else []),
            *(["nodeProvisioningMode Continuous"] if continuous else []),
        ]
        uses = f"; the stack uses {', '.join(levers)}" if levers else ""
        if matching:
            names = ", ".join(
                f"{p.get('TrainingPlanName')} ({p.get('Status')}, {p.get('AvailableInstanceCount', '?')} available)"
                for p in matching
            )
            out.append(
                CheckResult(
                    f"capacity {group.name}",
                    "WARN",
                    f"on demand {group.instance_count} x {group.instance_type}, while the account has training "
                    f"plan(s) reserving it: {names}{uses}",
                    f"set {key}.trainingPlanArn to one of them (then `hpi preflight` checks its AZ and count)",
                )
            )
        else:
            status: Status = "PASS" if levers else "WARN"
            out.append(
                CheckResult(
                    f"capacity {group.name}",
                    status,
                    f"on demand {group.instance_count} x {group.instance_type}; no Active or Scheduled training plan "
                    f"of the account reserves it{uses}",
                    ""
                    if levers
                    else f"for a first `up` that may meet InsufficientCapacity: {key}.minInstanceCount (partial "
                    "provisioning), cluster.nodeProvisioningMode: Continuous, or a training plan (docs/capacity.md)",
                )
            )
    return out


# --- adoption: existing EKS / HyperPod clusters, prerequisites, the inference add-on -------------------------


def _describe_eks(clients: Clients, name: str) -> dict[str, Any] | None:
    """EKS DescribeCluster's ``cluster``, or None when there is no such cluster."""
    try:
        found: dict[str, Any] = call(clients("eks"), "describe_cluster", name=name)["cluster"]
    except ClientError as err:
        if _not_found(err, "ResourceNotFoundException"):
            return None
        raise
    return found


def eks_cluster_name(cfg: StackConfig) -> str:
    """The EKS cluster the stack installs into: the adopted one, or the one it creates."""
    return cfg.cluster.existing.eks_cluster_name if cfg.cluster.existing is not None else f"{cfg.name_prefix}-eks"


@check("existing EKS cluster")
def check_existing_eks(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """An adopted EKS cluster must exist, be ACTIVE, in network.existing's VPC, with a mode and version HyperPod supports."""
    existing = cfg.cluster.existing
    if existing is None:
        return [CheckResult("existing EKS cluster", "SKIP", "the stack creates its EKS cluster (no cluster.existing)")]
    name = existing.eks_cluster_name
    title = f"existing EKS cluster {name}"
    found = _describe_eks(clients, name)
    if found is None:
        return [
            CheckResult(
                title, "FAIL", f"no EKS cluster {name} in {cfg.region}", f"fix {cluster_config.EXISTING_EKS_KEY}"
            )
        ]
    problems: list[str] = []
    status = found.get("status", "?")
    if status != "ACTIVE":
        problems.append(f"its status is {status}, not ACTIVE")
    mode = (found.get("accessConfig") or {}).get("authenticationMode")
    accept = cfg.cluster.accept_unlisted_kubernetes_version
    issues = cluster_config.eks_compatibility_issues(name, mode, found.get("version"), accept_unlisted=accept)
    problems.extend(i.message for i in issues)
    vpc = (found.get("resourcesVpcConfig") or {}).get("vpcId")
    if cfg.network.existing is not None and vpc != cfg.network.existing.vpc_id:
        problems.append(f"it runs in {vpc}, network.existing.vpcId is {cfg.network.existing.vpc_id}")
    if problems:
        return [CheckResult(title, "FAIL", "; ".join(problems), "adopt a compatible cluster or fix it first")]
    return [
        CheckResult(title, "PASS", f"ACTIVE, authentication mode {mode}, Kubernetes {found.get('version')}, in {vpc}")
    ]


@check("EKS OIDC provider")
def check_oidc_provider(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """IRSA needs one IAM OIDC provider for the adopted cluster's issuer: existing, or created by the stack."""
    existing = cfg.cluster.existing
    if existing is None:
        return [CheckResult("EKS OIDC provider", "SKIP", "the stack creates its EKS cluster and OIDC provider")]
    found = _describe_eks(clients, existing.eks_cluster_name)
    issuer = ((found or {}).get("identity") or {}).get("oidc", {}).get("issuer")
    if not issuer:
        return [CheckResult("EKS OIDC provider", "SKIP", "the adopted EKS cluster (or its issuer) was not found")]
    host_path = issuer.removeprefix("https://")
    providers = call(clients("iam"), "list_open_id_connect_providers").get("OpenIDConnectProviderList", [])
    exists = any(str(p.get("Arn", "")).endswith(f":oidc-provider/{host_path}") for p in providers)
    key = "cluster.existing.createOidcProvider"
    if exists and existing.create_oidc_provider:
        return [
            CheckResult(
                "EKS OIDC provider", "FAIL", f"an IAM OIDC provider for {issuer} already exists", f"set {key}: false"
            )
        ]
    if not exists and not existing.create_oidc_provider:
        return [
            CheckResult(
                "EKS OIDC provider",
                "FAIL",
                f"no IAM OIDC provider for {issuer}: the operator's IRSA roles could not be assumed",
                f"set {key}: true (the stack creates it), or create it yourself",
            )
        ]
    how = "exists" if exists else "will be created by the stack"
    return [CheckResult("EKS OIDC provider", "PASS", f"the provider for {issuer} {how}")]


def _taints(items: Iterable[dict[str, Any]]) -> set[tuple[str, str | None, str]]:
    return {(t.get("Key", ""), t.get("Value"), t.get("Effect", "")) for t in items}


def _compare_group(i: int, group: InstanceGroup, real: dict[str, Any], running: int) -> tuple[list[str], list[str]]:
    """(failures, warnings) of one declared group against DescribeCluster's and ListClusterNodes' view."""
    fails: list[str] = []
    warns: list[str] = []
    if real.get("InstanceType") != group.instance_type:
        fails.append(
            f"its type is {real.get('InstanceType')}, cluster.instanceGroups[{i}] declares {group.instance_type}"
        )
    target = real.get("TargetCount", real.get("CurrentCount"))
    if target != group.instance_count:
        fails.append(f"it targets {target} instance(s), cluster.instanceGroups[{i}] declares {group.instance_count}")
    elif running < group.instance_count:
        warns.append(f"{running} of {group.instance_count} node(s) are Running")
    k8s = real.get("KubernetesConfig") or {}
    if "CurrentLabels" in k8s and dict(k8s.get("CurrentLabels") or {}) != dict(group.labels):
        fails.append(f"its labels are {dict(k8s.get('CurrentLabels') or {})}, declared {dict(group.labels)}")
    declared_taints = {(t.key, t.value, t.effect) for t in group.taints}
    if "CurrentTaints" in k8s and _taints(k8s.get("CurrentTaints") or []) != declared_taints:
        fails.append("its taints differ from the declared ones")
    return fails, warns


def _running_nodes(clients: Clients, arn: str) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for node in listed(clients("sagemaker"), "list_cluster_nodes", "ClusterNodeSummaries", ClusterName=arn):
        if (node.get("InstanceStatus") or {}).get("Status") == "Running":
            counts[node.get("InstanceGroupName", "")] += 1
    return counts


@check("existing HyperPod cluster")
def check_existing_hyperpod(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """An adopted HyperPod cluster: InService, orchestrated by the adopted EKS cluster, its groups as declared."""
    existing = cfg.cluster.existing
    if existing is None or existing.hyperpod_cluster_arn is None:
        return [CheckResult("existing HyperPod cluster", "SKIP", "the stack creates its HyperPod cluster")]
    arn = existing.hyperpod_cluster_arn
    try:
        cluster = call(clients("sagemaker"), "describe_cluster", ClusterName=arn)
    except ClientError as err:
        if error_code(err) in ("ResourceNotFound", "ResourceNotFoundException", "ValidationException"):
            return [
                CheckResult(
                    "existing HyperPod cluster",
                    "FAIL",
                    f"no HyperPod cluster {arn}",
                    f"fix {cluster_config.EXISTING_HYPERPOD_KEY}",
                )
            ]
        raise
    title = f"existing HyperPod cluster {cluster.get('ClusterName', arn)}"
    problems: list[str] = []
    if cluster.get("ClusterStatus") != "InService":
        problems.append(f"its status is {cluster.get('ClusterStatus', '?')}, not InService")
    eks_arn = f"arn:{clients.partition}:eks:{cfg.region}:{clients.account_id}:cluster/{existing.eks_cluster_name}"
    orchestrator = ((cluster.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
    if orchestrator != eks_arn:
        problems.append(f"it is orchestrated by {orchestrator or 'no EKS cluster'}, not {eks_arn}")
    tiered = (cluster.get("TieredStorageConfig") or {}).get("Mode")
    if cfg.kv_cache.l2_backend == "tieredstorage" and tiered != "Enable":
        problems.append("kvCache.l2Backend is tieredstorage but the cluster's TieredStorageConfig is not enabled")
    out = [
        CheckResult(title, "FAIL", "; ".join(problems), "adopt the right cluster or fix it first")
        if problems
        else CheckResult(title, "PASS", f"InService, orchestrated by {existing.eks_cluster_name}")
    ]
    real = {g.get("InstanceGroupName"): g for g in cluster.get("InstanceGroups") or []}
    running = _running_nodes(clients, arn)
    for i, group in enumerate(cfg.cluster.instance_groups):
        name = f"declared group {group.name}"
        if group.name not in real:
            out.append(
                CheckResult(name, "FAIL", f"the cluster has no group {group.name} (it has {', '.join(sorted(real)) or 'none'})",
                            f"fix cluster.instanceGroups[{i}].name")
            )  # fmt: skip
            continue
        fails, warns = _compare_group(i, group, real[group.name], running.get(group.name, 0))
        if fails:
            out.append(
                CheckResult(name, "FAIL", "; ".join(fails), f"make cluster.instanceGroups[{i}] describe the real group")
            )
        elif warns:
            out.append(CheckResult(name, "WARN", "; ".join(warns), "endpoints may stay Pending until the nodes join"))
        else:
            out.append(CheckResult(name, "PASS", f"{group.instance_count} x {group.instance_type}, as declared"))
    for extra in sorted(set(real) - {g.name for g in cfg.cluster.instance_groups}):
        out.append(
            CheckResult(f"declared group {extra}", "WARN", f"the cluster's group {extra} is not declared",
                        "declare it in cluster.instanceGroups so the endpoint and capacity checks know it")
        )  # fmt: skip
    return out


# What the inference add-on's install check looks for per prerequisite (operator_prerequisites.py docstring; D6/D7),
# as a command for what the AWS API cannot see (a self-managed install).
PRESENCE_COMMANDS: dict[str, str] = {
    "aws-mountpoint-s3-csi-driver": "kubectl get csidriver s3.csi.aws.com",
    "aws-fsx-csi-driver": "kubectl get csidriver fsx.csi.aws.com",
    "metrics-server": "kubectl get deployment metrics-server -n kube-system",
    "cert-manager": "kubectl get crd certificaterequests.cert-manager.io",
    "aws-load-balancer-controller": "kubectl get deployment aws-load-balancer-controller -n kube-system",
    "keda": "kubectl get crd scaledobjects.keda.sh",
    "eks-pod-identity-agent": "kubectl get daemonset eks-pod-identity-agent -n kube-system",
}


@check("existing prerequisites")
def check_existing_prerequisites(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """Prerequisites marked existing must be on the cluster: EKS add-ons are checked, self-managed ones can't be."""
    op = cfg.operator
    wanted: list[str] = list(op.existing_prerequisites)
    if op.load_balancer_controller.mode == "existing":
        wanted.append("aws-load-balancer-controller")
    if op.keda.mode == "existing":
        wanted.append("keda")
    if cfg.cluster.existing is not None and cfg.observability.enabled:
        # the observability add-on gets its credentials through EKS Pod Identity (components/observability.py);
        # an adopted cluster's pod identity agent is its owner's
        wanted.append("eks-pod-identity-agent")
    if not wanted:
        return [CheckResult("existing prerequisites", "SKIP", "no prerequisite is marked existing")]
    cluster = eks_cluster_name(cfg)
    if _describe_eks(clients, cluster) is None:
        return [
            CheckResult(
                "existing prerequisites", "FAIL", f"no EKS cluster {cluster} to look in", "fix the cluster first"
            )
        ]
    minimums = {p.addon_name: p.minimum for p in operator_config.PREREQUISITES}
    out: list[CheckResult] = []
    for addon in wanted:
        name = f"existing {addon}"
        unverified = f"verify it yourself: `{PRESENCE_COMMANDS[addon]}` (the Kubernetes API is not reachable from here)"
        try:
            found = call(clients("eks"), "describe_addon", clusterName=cluster, addonName=addon)["addon"]
        except ClientError as err:
            if not _not_found(err, "ResourceNotFoundException", "InvalidParameterException"):
                raise
            out.append(
                CheckResult(name, "WARN", f"{addon} is not an EKS add-on of {cluster} (self-managed?)", unverified)
            )
            continue
        version, status = found.get("addonVersion", "?"), found.get("status", "?")
        minimum = minimums.get(addon)
        if status != "ACTIVE":
            out.append(
                CheckResult(name, "FAIL", f"the EKS add-on is {status}, not ACTIVE", "repair it before deploying")
            )
        elif minimum and operator_config.parse_eks_version(version) < operator_config.parse_eks_version(minimum):
            out.append(
                CheckResult(name, "FAIL", f"{version} is below the minimum the inference add-on requires ({minimum})",
                            f"upgrade it: aws eks update-addon --cluster-name {cluster} --addon-name {addon} "
                            f"--addon-version {minimum}")
            )  # fmt: skip
        else:
            out.append(CheckResult(name, "PASS", f"EKS add-on {version}, ACTIVE"))
    return out


def engine_urn(stack: str, project: str, reg: Any, by_urn: dict[str, Any]) -> str:
    """The URN the Pulumi engine gives a registration: ``urn:pulumi:<stack>::<project>::<qualified type>::<name>``.

    The qualified type is every ancestor's type below the root stack joined with ``$`` (Pulumi docs, "Resource
    names": URNs). The mock monitor abbreviates it to the parent's own type, so it is rebuilt from the parents.
    """
    types = [reg.type]
    parent = by_urn.get(reg.parent or "")
    while parent is not None and parent.type != "pulumi:pulumi:Stack":
        types.insert(0, parent.type)
        parent = by_urn.get(parent.parent or "")
    return f"urn:pulumi:{stack}::{project}::{'$'.join(types)}::{reg.name}"


def planned_addons(cfg: StackConfig) -> list[tuple[str, str, str | None]]:
    """(resource name, add-on name, the parent's engine URN) of every EKS add-on the program creates (mock run)."""
    from tools.plan.harness import run_stack

    run = run_stack(cfg.stack, _stack_mapping(cfg))
    if run.config_error is not None:
        raise ValueError(f"the program rejected the config under mocks: {run.config_error}")
    by_urn = {r.urn: r for r in run.registrations}
    out: list[tuple[str, str, str | None]] = []
    for reg in run.of_type(EKS_ADDON):
        parent = by_urn.get(reg.parent or "")
        parent_urn = engine_urn(cfg.stack, PROJECT, parent, by_urn) if parent is not None else None
        out.append((reg.name, str(reg.inputs.get("addonName")), parent_urn))
    return out


def import_command(stack: str, resource_name: str, cluster: str, addon: str, parent_urn: str | None) -> str:
    """The exact ``pulumi import`` that adopts an installed EKS add-on into this stack's resource.

    Import ID ``<cluster>:<addon>`` (pulumi-aws docs, aws.eks.Addon "Import"); ``--parent name=urn`` puts it
    under its component, ``--protect=false`` matches the program (pulumi import protects by default).
    """
    parent = ""
    if parent_urn:
        parent = f" --parent '{parent_urn.rsplit('::', 1)[-1]}={parent_urn}'"
    return f"pulumi import --stack {stack} {EKS_ADDON} {resource_name} {cluster}:{addon}{parent} --protect=false"


@check("add-ons not yet installed")
def check_addons_not_installed(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """Every add-on the stack creates (the inference add-on first) must not be installed already, or be adopted."""
    cluster = eks_cluster_name(cfg)
    if _describe_eks(clients, cluster) is None:
        return [CheckResult("add-ons not yet installed", "PASS", f"the EKS cluster {cluster} does not exist yet")]
    try:
        planned = planned_addons(cfg)
    except Exception as err:  # noqa: BLE001 - any failure of the mock run is reported, never a traceback
        return [
            CheckResult(
                "add-ons not yet installed",
                "FAIL",
                f"could not derive the stack's add-ons: {err}",
                "run tools.cli.preview",
            )
        ]
    planned.sort(key=lambda a: (a[1] != INFERENCE_ADDON, a[1]))  # the inference add-on first, then by name
    out: list[CheckResult] = []
    for resource_name, addon, parent in planned:
        name = f"add-on {addon} absent"
        try:
            found = call(clients("eks"), "describe_addon", clusterName=cluster, addonName=addon)["addon"]
        except ClientError as err:
            if _not_found(err, "ResourceNotFoundException"):
                out.append(CheckResult(name, "PASS", f"not installed on {cluster}"))
                continue
            raise
        if (found.get("tags") or {}).get("hyperpod-inference:stack") == cfg.stack:
            out.append(CheckResult(name, "PASS", f"installed by this stack ({found.get('addonVersion', '?')})"))
            continue
        action = f"adopt it into this stack: {import_command(cfg.stack, resource_name, cluster, addon, parent)}"
        if addon in {p.addon_name for p in operator_config.PREREQUISITES}:
            action += "; or list it in operator.existingPrerequisites"
        out.append(
            CheckResult(name, "FAIL", f"{addon} {found.get('addonVersion', '?')} is already installed on {cluster} "
                        "by someone else: creating it would fail", action)
        )  # fmt: skip
    return out


# --- what the stack file cannot know: zone names, model buckets' Regions ------------------------------------


def _endpoint_groups(cfg: StackConfig, spec: dict[str, Any]) -> list[InstanceGroup]:
    """The groups an endpoint may use by instance type (instanceType, instanceTypes, nodeAffinity instance-type)."""
    types = (
        {spec["instanceType"]} if isinstance(spec.get("instanceType"), str) else set(spec.get("instanceTypes") or [])
    )
    required = (spec.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == capacity_rules.INSTANCE_TYPE_LABEL and expr.get("operator") == "In":
                types.update(str(v) for v in expr.get("values") or [])
    groups = [g for g in cfg.cluster.instance_groups if g.instance_count > 0]
    return [g for g in groups if not types or g.instance_type in types]


@check("endpoint zone names")
def check_endpoint_zones(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """An endpoint's ``topology.kubernetes.io/zone`` names must be zones its groups' nodes are in. Zone names map
    to zone IDs differently in each account (EC2 User Guide, "Availability Zone IDs"), so only the account can say:
    DescribeAvailabilityZones gives each name's ID, compared with the groups' ``availabilityZoneId``."""
    wanted = [(i, ep, zone_names(ep.spec_dict())) for i, ep in enumerate(cfg.endpoints)]
    wanted = [w for w in wanted if w[2]]
    if not wanted:
        return [CheckResult("endpoint zone names", "SKIP", "no endpoint selects nodes by zone name")]
    zones = call(clients("ec2"), "describe_availability_zones")["AvailabilityZones"]
    ids = {z["ZoneName"]: z["ZoneId"] for z in zones}
    out: list[CheckResult] = []
    for i, ep, names in wanted:
        title = f"zones of endpoints[{i}] {ep.name}"
        unknown = sorted({z for _, z in names if z not in ids})
        nodes = {group_az(cfg, g): g.name for g in _endpoint_groups(cfg, ep.spec_dict())}
        hits = sorted({f"{z} = {ids[z]} (group {nodes[ids[z]]})" for _, z in names if ids.get(z) in nodes})
        if hits:
            detail = f"{', '.join(hits)}" + (f"; {', '.join(unknown)} not zones of {cfg.region}" if unknown else "")
            out.append(CheckResult(title, "WARN" if unknown else "PASS", detail))
            continue
        mapped = ", ".join(f"{z} = {ids[z]}" for z in sorted({z for _, z in names if z in ids})) or "none"
        out.append(
            CheckResult(
                title,
                "FAIL",
                f"in this account the zone names map to {mapped}"
                + (f" ({', '.join(unknown)} are not zones of {cfg.region})" if unknown else "")
                + f"; the endpoint's groups are in {', '.join(sorted(nodes)) or 'no AZ (no running group)'}: "
                "its pods would stay Pending",
                f"select the zone names of {', '.join(sorted(nodes))} "
                f"({', '.join(n for n, zid in sorted(ids.items()) if zid in nodes)}) in endpoints[{i}].spec.nodeAffinity",
            )
        )
    return out


def _bucket_region(s3: Any, bucket: str) -> str:
    """GetBucketLocation's answer as a Region (None means us-east-1, EU means eu-west-1: S3 API Reference)."""
    constraint = call(s3, "get_bucket_location", Bucket=bucket).get("LocationConstraint")
    return {None: "us-east-1", "": "us-east-1", "EU": "eu-west-1"}.get(constraint, str(constraint))


@check("model buckets")
def check_model_buckets(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """Each endpoint's model bucket exists and is in the Region ``s3Storage.region`` says (the operator downloads
    from there); a bucket outside the stack's Region works, but costs inter-Region transfer (a WARN)."""
    out: list[CheckResult] = []
    for i, ep in enumerate(cfg.endpoints):
        s3 = (ep.spec_dict().get("modelSourceConfig") or {}).get("s3Storage")
        if not isinstance(s3, dict) or not s3.get("bucketName"):
            continue
        bucket, said = str(s3["bucketName"]), str(s3.get("region"))
        title = f"model bucket of endpoints[{i}] {ep.name}"
        try:
            real = _bucket_region(clients("s3"), bucket)
        except ClientError as err:
            if error_code(err) in ("NoSuchBucket", "404"):
                out.append(CheckResult(title, "FAIL", f"bucket {bucket} does not exist", "create it or fix bucketName"))
                continue
            raise
        if real != said:
            out.append(
                CheckResult(
                    title,
                    "FAIL",
                    f"bucket {bucket} is in {real}, s3Storage.region says {said}",
                    f"set endpoints[{i}].spec.modelSourceConfig.s3Storage.region to {real}",
                )
            )
        elif real != cfg.region:
            out.append(
                CheckResult(
                    title,
                    "WARN",
                    f"bucket {bucket} is in {real}, the stack in {cfg.region}: model downloads cross Regions",
                    "copy the model to a bucket in the stack's Region to save transfer cost and start-up time",
                )
            )
        else:
            out.append(CheckResult(title, "PASS", f"bucket {bucket} is in {real}"))
    return out or [CheckResult("model buckets", "SKIP", "no endpoint reads its model from S3")]


# --- the way back from the cluster's subnets to the runner ------------------------------------------------


def _return_targets() -> dict[str, str]:
    """EC2 ``Route`` member -> required id prefix of targets that reach a private network, from the readiness data
    the rehearsal uses (its keys are the provider's camelCase inputs; the API's members are PascalCase)."""
    from policies.readiness import load_readiness

    targets = load_readiness().deployer_access.routing.return_targets
    return {k[0].upper() + k[1:]: v for k, v in targets.items()}


def _route_back(table: dict[str, Any], cidr: ipaddress.IPv4Network) -> tuple[bool, str]:
    """Whether ``table`` sends ``cidr`` (longest prefix match, active routes) to a target that reaches a private
    network; and what its best route is."""
    best: tuple[ipaddress.IPv4Network, dict[str, Any]] | None = None
    for route in table.get("Routes") or []:
        dest = route.get("DestinationCidrBlock")
        if not dest or route.get("State", "active") != "active":
            continue
        net = ipaddress.IPv4Network(dest)
        if cidr.subnet_of(net) and (best is None or net.prefixlen > best[0].prefixlen):
            best = (net, route)
    if best is None:
        return False, "no route"
    net, route = best
    for member, prefix in _return_targets().items():
        value = route.get(member)
        if value and str(value).startswith(prefix):
            return True, f"{net} via {value}"
    target = next((f"{k} {v}" for k, v in route.items() if k.endswith("Id") and v), "local")
    return False, f"{net} via {target}"


def _subnet_table(ec2: Any, vpc_id: str, subnet: str) -> dict[str, Any] | None:
    """The route table a subnet uses: its explicit association, else the VPC's main table."""
    found = call(ec2, "describe_route_tables", Filters=[{"Name": "association.subnet-id", "Values": [subnet]}])
    tables = found.get("RouteTables") or []
    if not tables:
        main = call(
            ec2,
            "describe_route_tables",
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "association.main", "Values": ["true"]}],
        )
        tables = main.get("RouteTables") or []
    return tables[0] if tables else None


@check("deployer routes")
def check_deployer_routes(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """The control plane answers the runner from the private subnets: their route tables must send each runner CIDR
    outside the VPC to a transit gateway, peering connection, VPN or Cloud WAN (DescribeRouteTables, for a VPC this
    stack adopts); the targets of the routes the stack creates must exist (DescribeTransitGateways, DescribeVpcs)."""
    title = "deployer routes"
    access = cfg.cluster.deployer_access
    if cfg.cluster.existing is not None or access is None or not access.cidrs:
        return [
            CheckResult(title, "SKIP", "no runner CIDR declared (cluster.deployerAccess.cidrs) for a created cluster")
        ]
    vpc = cfg.network.vpc_cidr
    outside = [c for c in access.cidrs if not c.subnet_of(vpc)]
    if not outside:
        return [CheckResult(title, "PASS", f"the runner's {', '.join(map(str, access.cidrs))} is inside the VPC {vpc}")]
    ec2 = clients("ec2")
    existing = cfg.network.existing
    out: list[CheckResult] = []
    if existing is not None:
        for az, subnet in sorted(existing.private_subnets.items()):
            table = _subnet_table(ec2, existing.vpc_id, subnet)
            name = f"route back from {subnet} ({az})"
            if table is None:
                out.append(CheckResult(name, "FAIL", f"no route table found for {subnet}", "fix network.existing"))
                continue
            for cidr in outside:
                ok, best = _route_back(table, cidr)
                if ok:
                    out.append(CheckResult(name, "PASS", f"{table['RouteTableId']} sends {cidr} to {best}"))
                else:
                    out.append(
                        CheckResult(
                            name,
                            "FAIL",
                            f"{table['RouteTableId']} sends {cidr} to {best}: the control plane's replies to the runner "
                            "cannot come back (a NAT or internet gateway cannot carry them to a private network)",
                            f"add a route for {cidr} to your transit gateway, peering connection or VPN in "
                            f"{table['RouteTableId']}, or run `pulumi up` from inside {vpc}",
                        )
                    )
        return out
    for cidr in outside:
        if not any(cidr.subnet_of(r.cidr) for r in access.routes):
            out.append(
                CheckResult(
                    title,
                    "FAIL",
                    f"the runner's {cidr} is outside the new VPC {vpc} and no cluster.deployerAccess.routes entry "
                    "covers it: the control plane's replies would go to the NAT gateway",
                    f"add cluster.deployerAccess.routes: [{{cidr: {cidr}, transitGatewayId: tgw-...}}] (or peerVpcId)",
                )
            )
    for i, route in enumerate(access.routes):
        key = f"cluster.deployerAccess.routes[{i}]"
        if route.transit_gateway_id is not None:
            tgw = route.transit_gateway_id
            found = call(ec2, "describe_transit_gateways", TransitGatewayIds=[tgw]).get("TransitGateways") or []
            state = found[0].get("State") if found else None
            if state == "available":
                out.append(CheckResult(f"{key} {tgw}", "PASS", f"transit gateway {tgw} is available"))
            else:
                out.append(
                    CheckResult(
                        f"{key} {tgw}",
                        "FAIL",
                        f"transit gateway {tgw} is {state or 'not visible to this account'}",
                        f"fix {key}.transitGatewayId (a gateway of another account must be shared with this one)",
                    )
                )
        elif route.peer_vpc_id is not None:
            peer = route.peer_vpc_id
            try:
                vpcs = call(ec2, "describe_vpcs", VpcIds=[peer]).get("Vpcs") or []
            except ClientError as err:
                if error_code(err) != "InvalidVpcID.NotFound":
                    raise
                vpcs = []
            if vpcs and str(vpcs[0].get("OwnerId")) == clients.account_id:
                out.append(CheckResult(f"{key} {peer}", "PASS", f"{peer} is a VPC of this account in {cfg.region}"))
            else:
                out.append(
                    CheckResult(
                        f"{key} {peer}",
                        "FAIL",
                        f"{peer} is not a VPC of this account in {cfg.region} (the stack accepts the peering itself)",
                        f"fix {key}.peerVpcId, or use transitGatewayId",
                    )
                )
    if not access.routes:
        return out
    out.append(
        CheckResult(
            title,
            "WARN",
            "the far side (the transit gateway's route tables, the peer VPC's routes back to "
            f"{vpc}) is not this stack's and was not checked",
            "confirm it routes the VPC's CIDR back to the runner's network",
        )
    )
    return out


# --- GuardDuty's VPC endpoint, which blocks the destroy of the network -------------------------------------

EKS_RUNTIME_FEATURES = ("EKS_RUNTIME_MONITORING", "RUNTIME_MONITORING")


def _detector_adds_endpoints(detector: dict[str, Any]) -> bool:
    """Runtime Monitoring for EKS with automated agent configuration (EKS_ADDON_MANAGEMENT) on: GuardDuty then
    creates a VPC endpoint and a security group in the VPC of every monitored cluster (GuardDuty user guide, "How
    Runtime Monitoring works with Amazon EKS clusters")."""
    for feature in detector.get("Features") or []:
        if feature.get("Name") not in EKS_RUNTIME_FEATURES or feature.get("Status") != "ENABLED":
            continue
        for extra in feature.get("AdditionalConfiguration") or []:
            if extra.get("Name") == "EKS_ADDON_MANAGEMENT" and extra.get("Status") == "ENABLED":
                return True
    return False


@check("GuardDuty VPC endpoint")
def check_guardduty(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """Whether GuardDuty will put a VPC endpoint into the VPC this stack creates (it then blocks `pulumi destroy`)."""
    title = "GuardDuty VPC endpoint"
    if cfg.network.existing is not None:
        return [CheckResult(title, "SKIP", "the VPC is adopted (network.existing): the stack never deletes it")]
    gd = clients("guardduty")
    detectors = [str(d) for d in listed(gd, "list_detectors", "DetectorIds")]
    adding = [d for d in detectors if _detector_adds_endpoints(call(gd, "get_detector", DetectorId=d))]
    if adding:
        return [
            CheckResult(
                title,
                "WARN",
                f"GuardDuty detector {', '.join(adding)} runs EKS Runtime Monitoring with automated agent "
                f"configuration: it will add a guardduty-data VPC endpoint and a security group to the stack's VPC, "
                "which block deleting its subnets, security groups and the VPC",
                "`pulumi destroy` removes them after the EKS cluster (guardduty-endpoint-cleanup); if a destroy stops on "
                f"the subnets, run `python -m tools.preflight.guardduty_cleanup --stack {cfg.stack}` and destroy again",
            )
        ]
    if not detectors:
        return [CheckResult(title, "PASS", f"no GuardDuty detector in {cfg.region}")]
    return [
        CheckResult(
            title,
            "PASS",
            f"GuardDuty detector {', '.join(detectors)} does not manage the EKS agent: it adds no VPC endpoint",
        )
    ]


def run_all(clients: Clients, cfg: StackConfig) -> list[CheckResult]:
    """Every registered check, in order."""
    results: list[CheckResult] = []
    for fn in CHECKS:
        results.extend(fn(clients, cfg))
    return results


if __name__ == "__main__":
    from tools.report.cli import not_a_command

    not_a_command("tools.preflight.checks", "python -m tools.preflight.regional --stack <name>")
