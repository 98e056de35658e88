"""AWS Foundational Security Best Practices (FSBP) controls on the registered graph: edge, network, S3.

Each validator checks the provider's real input shapes for one FSBP control (AWS Security Hub user guide, "AWS
Foundational Security Best Practices standard", the control's page). The control, the levels per environment and a
waiver (a control disabled on purpose, and why) are in the policy's record, ``policies/records/<name>.yaml``.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
)

from .graph import BUCKETS, LISTENERS, REPLICATION_GROUP, as_list, depends_on, get, of_type, truthy
from .resource_types.tokens import (
    ALB_LOAD_BALANCER,
    BUCKET_LIFECYCLE,
    BUCKET_LIFECYCLE_V2,
    BUCKET_LOGGING_V2,
    BUCKET_VERSIONING,
    BUCKET_VERSIONING_V2,
    DEFAULT_SECURITY_GROUP,
    FLOW_LOG,
    LOAD_BALANCER,
    VPC,
    VPC_ENDPOINT,
    WEB_ACL_ASSOCIATION,
)
from .resource_types.tokens import BUCKET_LOGGING as _BUCKET_LOGGING

LOAD_BALANCERS = (LOAD_BALANCER, ALB_LOAD_BALANCER)
DEFAULT_SG = DEFAULT_SECURITY_GROUP
BUCKET_LOGGING = (_BUCKET_LOGGING, BUCKET_LOGGING_V2)
LIFECYCLE = (BUCKET_LIFECYCLE, BUCKET_LIFECYCLE_V2)
VERSIONING = (BUCKET_VERSIONING, BUCKET_VERSIONING_V2)


def _refers(resource: PolicyResource, key: str, target: PolicyResource, literal_key: str) -> bool:
    return depends_on(resource, key, target, literal=get(target.props, literal_key))


# --- alb-waf-attached (ELB.16) ------------------------------------------------------------------------


def _is_internet_facing_alb(lb: PolicyResource) -> bool:
    kind = str(get(lb.props, "loadBalancerType", default="application"))
    return kind == "application" and not truthy(get(lb.props, "internal", default=False))


def _alb_waf_attached(args: StackValidationArgs, report: ReportViolation) -> None:
    associations = of_type(args, WEB_ACL_ASSOCIATION)
    for lb in of_type(args, *LOAD_BALANCERS):
        if not _is_internet_facing_alb(lb):
            continue
        if not any(_refers(a, "resourceArn", lb, "arn") and get(a.props, "webAclArn") for a in associations):
            report(
                "internet-facing ALB has no AWS WAF WebACL associated (aws.wafv2.WebAclAssociation); enable "
                "ingress.waf or set ingress.wafWebAclArn",
                lb.urn,
            )


# --- vpc-flow-logs-enabled (EC2.6) -------------------------------------------------------------------------


def _vpc_flow_logs_enabled(args: StackValidationArgs, report: ReportViolation) -> None:
    flow_logs = of_type(args, FLOW_LOG)
    for vpc in of_type(args, VPC):
        if not any(_refers(f, "vpcId", vpc, "id") for f in flow_logs):
            report("VPC has no flow log (aws.ec2.FlowLog with vpcId); see observability.vpcFlowLogs", vpc.urn)
    for flow in flow_logs:
        if get(flow.props, "trafficType") not in ("ALL", "REJECT"):
            report("flow log records neither ALL nor REJECT traffic (EC2.6 asks for at least REJECT)", flow.urn)


# --- default-security-group-closed (EC2.2) ----------------------------------------------------------------


def _default_security_group_closed(args: StackValidationArgs, report: ReportViolation) -> None:
    defaults = of_type(args, DEFAULT_SG)
    for vpc in of_type(args, VPC):
        if not any(_refers(d, "vpcId", vpc, "id") for d in defaults):
            report(
                "the VPC's default security group is not managed (aws.ec2.DefaultSecurityGroup with no rules); "
                "AWS creates it allowing all traffic between its members and all egress",
                vpc.urn,
            )
    for sg in defaults:
        rules = [k for k in ("ingress", "egress") if as_list(get(sg.props, k))]
        if rules:
            report(f"default security group has {' and '.join(rules)} rules; it must have none", sg.urn)


# --- s3-bucket-access-logging (S3.9) ---------------------------------------------------------------------


def _log_destinations(args: StackValidationArgs, buckets: list[PolicyResource]) -> set[str]:
    """URNs of buckets that receive S3 server access logs or ALB access logs."""
    found: set[str] = set()
    for bucket in buckets:
        for logging in of_type(args, *BUCKET_LOGGING):
            if _refers(logging, "targetBucket", bucket, "bucket"):
                found.add(bucket.urn)
        for lb in of_type(args, *LOAD_BALANCERS):
            access = get(lb.props, "accessLogs", default={})
            if truthy(get(access, "enabled", default=False)) and _refers(lb, "accessLogs", bucket, "bucket"):
                found.add(bucket.urn)
            elif truthy(get(access, "enabled", default=False)) and get(access, "bucket") == get(bucket.props, "bucket"):
                found.add(bucket.urn)
    return found


def _s3_bucket_access_logging(args: StackValidationArgs, report: ReportViolation) -> None:
    exempt_destinations = truthy(args.get_config().get("exemptLogDestinations", True))
    buckets = of_type(args, *BUCKETS)
    destinations = _log_destinations(args, buckets) if exempt_destinations else set()
    loggings = of_type(args, *BUCKET_LOGGING)
    for bucket in buckets:
        if bucket.urn in destinations:
            continue
        inline = get(bucket.props, "loggings") or get(bucket.props, "logging")
        if inline or any(_refers(lg, "bucket", bucket, "bucket") and get(lg.props, "targetBucket") for lg in loggings):
            continue
        report("bucket has no server access logging (aws.s3.BucketLogging with a targetBucket)", bucket.urn)


# --- s3-bucket-lifecycle-rules (S3.13) -------------------------------------------------------------------


def _enabled_rules(lifecycle: PolicyResource) -> list[Any]:
    return [r for r in as_list(get(lifecycle.props, "rules")) if get(r, "status") == "Enabled"]


def _versioned(args: StackValidationArgs, bucket: PolicyResource) -> bool:
    if truthy(get(bucket.props, "versioning", "enabled", default=False)):
        return True
    return any(
        _refers(v, "bucket", bucket, "bucket") and get(v.props, "versioningConfiguration", "status") == "Enabled"
        for v in of_type(args, *VERSIONING)
    )


def _s3_bucket_lifecycle_rules(args: StackValidationArgs, report: ReportViolation) -> None:
    lifecycles = of_type(args, *LIFECYCLE)
    for bucket in of_type(args, *BUCKETS):
        mine = [lc for lc in lifecycles if _refers(lc, "bucket", bucket, "bucket")]
        rules = [r for lc in mine for r in _enabled_rules(lc)]
        if not rules:
            report("bucket has no lifecycle configuration with an enabled rule", bucket.urn)
        elif _versioned(args, bucket) and not any(get(r, "noncurrentVersionExpiration") for r in rules):
            report(
                "versioned bucket has no rule expiring noncurrent versions (noncurrentVersionExpiration)", bucket.urn
            )
        if len(mine) > 1:
            report(f"bucket has {len(mine)} lifecycle configurations; S3 keeps only the last one written", bucket.urn)


# --- elasticache-automatic-backups (ElastiCache.1) — waived -------------------------------------------------


def _elasticache_automatic_backups(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != REPLICATION_GROUP:
        return
    if not float(get(args.props, "snapshotRetentionLimit", default=0) or 0) > 0:
        report("replication group keeps no automatic backups (snapshotRetentionLimit is 0)", None)


# --- alb-tls-policy-recommended (ELB.17) ---------------------------------------------------------------

# FSBP ELB.17's `sslPolicies` parameter ("not customizable"), AWS Security Hub user guide, elb-controls.md#elb-17
# (current copy). An older copy of the page also listed ELBSecurityPolicy-TLS13-1-2-2021-06 and
# ELBSecurityPolicy-TLS13-1-2-FIPS-2023-04; the current one does not, so a listener on those now fails ELB.17.
ELB17_POLICIES: tuple[str, ...] = (
    "ELBSecurityPolicy-TLS13-1-3-2021-06",
    "ELBSecurityPolicy-TLS13-1-3-FIPS-2023-04",
    "ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
    "ELBSecurityPolicy-TLS13-1-2-Res-FIPS-2023-04",
    "ELBSecurityPolicy-TLS13-1-2-Res-PQ-2025-09",
    "ELBSecurityPolicy-TLS13-1-3-PQ-2025-09",
    "ELBSecurityPolicy-TLS13-1-2-Res-FIPS-PQ-2025-09",
    "ELBSecurityPolicy-TLS13-1-3-FIPS-PQ-2025-09",
)
# What ELB uses when an HTTPS listener is created without a policy through the API, CloudFormation or the CDK
# (Elastic Load Balancing user guide, "Security policies for your Application Load Balancer", Considerations).
ELB_API_DEFAULT_POLICY = "ELBSecurityPolicy-2016-08"
ALB_TLS_POLICY_RECOMMENDED = "alb-tls-policy-recommended"


def elb17_violation(ssl_policy: str | None) -> str | None:
    """Why ``ssl_policy`` on an HTTPS/TLS listener fails FSBP ELB.17, or None (shared with the config check)."""
    if ssl_policy in ELB17_POLICIES:
        return None
    shown = ssl_policy or f"none set (ELB then uses {ELB_API_DEFAULT_POLICY})"
    return f"security policy {shown} is not one FSBP ELB.17 recommends; use one of {', '.join(ELB17_POLICIES)}"


def _alb_tls_policy_recommended(args: StackValidationArgs, report: ReportViolation) -> None:
    for listener in of_type(args, *LISTENERS):
        if str(get(listener.props, "protocol", default="")).upper() not in ("HTTPS", "TLS"):
            continue
        policy = get(listener.props, "sslPolicy")
        message = elb17_violation(str(policy) if policy else None)
        if message:
            report(f"{str(get(listener.props, 'protocol')).upper()} listener: {message}", listener.urn)


# --- vpc-interface-endpoints (EC2.10, EC2.55, EC2.56; HyperPod private subnets) ---------------------------

# Interface endpoint services (com.amazonaws.<region>.<service>) a VPC of this package gets, and why. `required`:
# a documented control or requirement; the policy checks those. sts is created by default (IRSA token exchange
# stays off the NAT path) but no control requires it.
INTERFACE_ENDPOINT_SERVICES: dict[str, tuple[bool, str]] = {
    "ec2": (True, "FSBP EC2.10 (serviceNames ec2, not customizable), Security Hub ec2-controls"),
    "ecr.api": (True, "FSBP EC2.55 'VPCs should be configured with an interface endpoint for ECR API'"),
    "ecr.dkr": (True, "FSBP EC2.56 'VPCs should be configured with an interface endpoint for Docker Registry'"),
    "sts": (False, "IRSA: AssumeRoleWithWebIdentity from the pods (no control requires it)"),
    "sagemaker.api": (
        True,
        "AWS docs sagemaker-eks-operator-install: nodes in a private VPC need PrivateLink endpoints for the "
        "SageMaker AI API (com.amazonaws.<region>.sagemaker.api) and EKS Auth, or 'the add-on installation can fail'",
    ),
    "eks-auth": (True, "AWS docs sagemaker-eks-operator-install (as sagemaker.api): EKS Pod Identity's EKS Auth API"),
}
REQUIRED_INTERFACE_ENDPOINTS: tuple[str, ...] = tuple(s for s, (req, _) in INTERFACE_ENDPOINT_SERVICES.items() if req)
VPC_INTERFACE_ENDPOINTS = "vpc-interface-endpoints"


def _service_suffix(service_name: Any) -> str:
    """``com.amazonaws.us-east-1.ecr.api`` -> ``ecr.api`` (the part after the region)."""
    parts = str(service_name or "").split(".")
    return ".".join(parts[3:]) if len(parts) > 3 and parts[:2] == ["com", "amazonaws"] else ""


def _vpc_interface_endpoints(args: StackValidationArgs, report: ReportViolation) -> None:
    endpoints = of_type(args, VPC_ENDPOINT)
    for vpc in of_type(args, VPC):
        mine = [
            e
            for e in endpoints
            if _refers(e, "vpcId", vpc, "id") and str(get(e.props, "vpcEndpointType", default="Gateway")) == "Interface"
        ]
        found = {_service_suffix(get(e.props, "serviceName")): e for e in mine}
        missing = [s for s in REQUIRED_INTERFACE_ENDPOINTS if s not in found]
        if missing:
            report(
                f"VPC has no interface endpoint for {', '.join(missing)} (FSBP EC2.10/EC2.55/EC2.56; HyperPod add-ons "
                "in private subnets need sagemaker.api and eks-auth); enable network.interfaceEndpoints",
                vpc.urn,
            )
        for service in REQUIRED_INTERFACE_ENDPOINTS:
            endpoint = found.get(service)
            if endpoint is not None and not truthy(get(endpoint.props, "privateDnsEnabled", default=False)):
                report(
                    f"interface endpoint for {service} has private DNS off: clients keep resolving the public "
                    "hostname and go through the NAT gateway",
                    endpoint.urn,
                )
