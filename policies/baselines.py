"""Security baselines on the provider resources every layer registers.

Each policy checks the provider's real input shape (camelCase, as the engine passes it) and names the
AWS document it encodes. Levels, severity and descriptions are in each policy's record
(``policies/records/<name>.yaml``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
)

from .graph import (
    BUCKET_POLICY,
    BUCKETS,
    EKS_ADDON,
    EKS_CLUSTER,
    EKS_COMPONENT,
    HYPERPOD_CLUSTER,
    IAM_ROLE,
    INFERENCE_ADDON,
    LISTENER_RULES,
    LISTENERS,
    PUBLIC_ACCESS_BLOCK,
    REPLICATION_GROUP,
    SECURITY_GROUP,
    SG_EGRESS_RULE,
    SG_INGRESS_RULE,
    SG_RULE,
    SNS_TOPIC,
    SSE_CONFIGS,
    as_json,
    as_list,
    crd_kind,
    depends_on,
    deps,
    get,
    of_type,
    truthy,
)

# --- gateway-requires-jwt ---------------------------------------------------------------------------


GATEWAY_REQUIRES_JWT = "gateway-requires-jwt"


def gateway_jwt_violations(spec: Any) -> list[str]:
    """What an InferenceGatewayConfig ``spec`` lacks for JWT validation (the rule, shared with the config check)."""
    provider = get(spec, "auth", "jwt", "provider")
    if provider is None:
        return ["spec.auth.jwt is not set: the gateway then accepts any request from inside the VPC"]
    missing = [k for k in ("name", "issuer") if not get(provider, k)]
    if not get(provider, "remoteJWKS", "uri"):
        missing.append("remoteJWKS.uri")
    return [f"spec.auth.jwt.provider is missing {', '.join(missing)}"] if missing else []


def _gateway_requires_jwt(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if crd_kind(args.resource_type) != "InferenceGatewayConfig":
        return
    for message in gateway_jwt_violations(get(args.props, "spec")):
        report(message, None)


# --- gateway-fronts-its-endpoints --------------------------------------------------------------------

GATEWAY_FRONTS_ITS_ENDPOINTS = "gateway-fronts-its-endpoints"


def _gateway_fronts_its_endpoints(args: StackValidationArgs, report: ReportViolation) -> None:
    gateways = {
        (get(r.props, "metadata", "namespace", default="default"), get(r.props, "metadata", "name"))
        for r in args.resources
        if crd_kind(r.resource_type) == "InferenceGatewayConfig"
    }
    if not gateways:
        return  # no gateway of this stack (a disabled one is the config's `gateway.enabled` check)
    for resource in args.resources:
        if crd_kind(resource.resource_type) not in ("InferenceEndpointConfig", "JumpStartModel"):
            continue
        opt_in = get(resource.props, "spec", "inferenceGateway", default={})
        if not truthy(get(opt_in, "enabled", default=False)):
            continue
        namespace = get(resource.props, "metadata", "namespace", default="default")
        name = get(opt_in, "name")
        if (namespace, name) in gateways:
            continue
        where = ", ".join(f"{ns}/{n}" for ns, n in sorted(gateways, key=str))
        report(
            f"opts into Inference Gateway {name or '(unnamed: the operator generates one)'} in {namespace}, but "
            f"this stack's InferenceGatewayConfig is {where}: an InferencePool selects pods in its own namespace only",
            resource.urn,
        )


# --- alb-requires-authentication --------------------------------------------------------------------

ALB_REQUIRES_AUTHENTICATION = "alb-requires-authentication"
# The actions that authenticate a request before the ALB forwards it, and their settings block: ELB user guide,
# "Authenticate users using an Application Load Balancer" (authenticate-oidc / authenticate-cognito) and "Verify
# JWTs using an Application Load Balancer" (jwt-validation: the request goes on only with a valid token).
AUTH_ACTIONS: dict[str, str] = {
    "authenticate-oidc": "authenticateOidc",
    "authenticate-cognito": "authenticateCognito",
    "jwt-validation": "jwtValidation",
}
# OnUnauthenticatedRequest "allow": "Allow the request to be forwarded to the target" (botocore elbv2 model,
# AuthenticateOidcActionConfig / AuthenticateCognitoActionConfig): the forward is then reached without a login.
LETS_UNAUTHENTICATED_THROUGH = "allow"
_AUTH_NAMES = "an authenticate-oidc, authenticate-cognito or jwt-validation action"


def unauthenticated_forward(actions: Any) -> str | None:
    """Why a forward among ``actions`` can be reached without authentication, or None when none can.

    The ALB performs actions by ``order``, lowest first (list position where it is missing or equal). The first
    authenticating action decides, unless it lets unauthenticated requests through (``onUnauthenticatedRequest:
    allow``). One rule for two callers: the config check on the planned actions (``components/config/ingress.py``)
    and the pack on every registered HTTPS listener and rule. Actions are the provider's camelCase inputs.
    """
    listed = [a for a in as_list(actions) if isinstance(a, Mapping)]
    ordered = sorted(enumerate(listed), key=lambda ia: (get(ia[1], "order", default=1e9), ia[0]))
    lets_through: str | None = None
    for _, action in ordered:
        kind = str(get(action, "type", default="")).lower()
        if kind in AUTH_ACTIONS:
            unauthenticated = str(get(action, AUTH_ACTIONS[kind], "onUnauthenticatedRequest", default="")).lower()
            if unauthenticated != LETS_UNAUTHENTICATED_THROUGH:
                return None
            lets_through = kind
        elif kind == "forward" or get(action, "targetGroupArn") or get(action, "forward"):
            if lets_through is not None:
                return (
                    f"forwards after {lets_through} with onUnauthenticatedRequest: allow, which lets requests without "
                    "a login through"
                )
            return f"forwards without {_AUTH_NAMES} before it"
    return None


def _is_https(listener: PolicyResource) -> bool:
    return str(get(listener.props, "protocol", default="")).upper() == "HTTPS"


def _alb_requires_authentication(args: StackValidationArgs, report: ReportViolation) -> None:
    listeners = of_type(args, *LISTENERS)
    for listener in listeners:
        if not _is_https(listener):
            continue
        reason = unauthenticated_forward(get(listener.props, "defaultActions"))
        if reason is not None:
            report(f"HTTPS listener's default action {reason}", listener.urn)
    for rule in of_type(args, *LISTENER_RULES):
        parents = deps(rule, "listenerArn", *LISTENERS)
        if parents and not any(_is_https(p) for p in parents):
            continue  # an HTTP listener cannot authenticate; its rules only redirect
        reason = unauthenticated_forward(get(rule.props, "actions"))
        if reason is not None:
            report(f"listener rule {reason}", rule.urn)


# --- execution-role-name-prefix ---------------------------------------------------------------------

ROLE_PREFIX = "SageMakerHyperPodInference"
OPERATOR_SERVICE_ACCOUNT = "hyperpod-inference-controller-manager"


def _role_name_from_arn(arn: str) -> str:
    return arn.rsplit("/", 1)[-1] if ":role/" in arn else arn


def _role_names(role: PolicyResource) -> list[str]:
    """The names the role can have: its ``name``, or its ``namePrefix`` (the generated suffix follows)."""
    return [str(v) for v in (get(role.props, "name"), get(role.props, "namePrefix")) if v]


def _execution_role_name_prefix(args: StackValidationArgs, report: ReportViolation) -> None:
    prefix = str(args.get_config().get("prefix", ROLE_PREFIX))
    for addon in of_type(args, EKS_ADDON):
        if get(addon.props, "addonName") != INFERENCE_ADDON:
            continue
        # The roles configurationValues was built from that the operator's service account assumes.
        execution = [
            r
            for r in deps(addon, "configurationValues", IAM_ROLE)
            if OPERATOR_SERVICE_ACCOUNT in str(get(r.props, "assumeRolePolicy"))
        ]
        for role in execution:
            if not any(n.startswith(prefix) for n in _role_names(role)):
                report(f"operator execution role {_role_names(role) or [role.name]} is not named {prefix}*", role.urn)
        arn = get(as_json(get(addon.props, "configurationValues")), "executionRoleArn")
        if not isinstance(arn, str) or not arn:
            if not execution:
                report("add-on configurationValues sets no executionRoleArn", addon.urn)
            continue
        name = _role_name_from_arn(arn)
        if name.startswith(prefix) or any(n.startswith(prefix) for r in execution for n in _role_names(r)):
            continue
        if not execution:
            report(
                f"add-on executionRoleArn names role {name!r}; the operator chart (isAddOn) and the managed "
                f"policy's iam:PassRole need a role named {prefix}*",
                addon.urn,
            )


# --- efa-security-group-self-rules ------------------------------------------------------------------

ALL_PROTOCOLS = ("-1", "all")


def _all_traffic(protocol: Any, from_port: Any = None, to_port: Any = None) -> bool:
    if str(protocol).lower() in ALL_PROTOCOLS:
        return True
    return False


def _inline_self(sg: PolicyResource, direction: str) -> bool:
    return any(
        isinstance(rule, Mapping) and truthy(get(rule, "self")) and _all_traffic(get(rule, "protocol"))
        for rule in as_list(get(sg.props, direction))
    )


def _standalone_self(args: StackValidationArgs, sg: PolicyResource, direction: str) -> bool:
    typ = SG_INGRESS_RULE if direction == "ingress" else SG_EGRESS_RULE
    for rule in of_type(args, typ):
        if not depends_on(rule, "securityGroupId", sg):
            continue
        own = get(rule.props, "securityGroupId")
        refers_to_self = depends_on(rule, "referencedSecurityGroupId", sg, literal=own)
        if refers_to_self and _all_traffic(get(rule.props, "ipProtocol")):
            return True
    for rule in of_type(args, SG_RULE):
        if get(rule.props, "type") != direction or not depends_on(rule, "securityGroupId", sg):
            continue
        own = get(rule.props, "securityGroupId")
        refers_to_self = truthy(get(rule.props, "self")) or depends_on(rule, "sourceSecurityGroupId", sg, literal=own)
        if refers_to_self and _all_traffic(get(rule.props, "protocol")):
            return True
    return False


def _efa_security_group_self_rules(args: StackValidationArgs, report: ReportViolation) -> None:
    for cluster in of_type(args, HYPERPOD_CLUSTER):
        for sg in deps(cluster, "vpcConfig", SECURITY_GROUP):
            missing = [d for d in ("ingress", "egress") if not (_inline_self(sg, d) or _standalone_self(args, sg, d))]
            if missing:
                report(
                    f"HyperPod node security group (vpcConfig.securityGroupIds of {cluster.name}) has no "
                    f"all-traffic self-referencing {' or '.join(missing)} rule; EFA needs both",
                    sg.urn,
                )


# --- redis-encryption -------------------------------------------------------------------------------


def _redis_encryption(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != REPLICATION_GROUP:
        return
    problems = []
    if not truthy(get(args.props, "transitEncryptionEnabled")):
        problems.append("transitEncryptionEnabled is not true")
    elif str(get(args.props, "transitEncryptionMode", default="required")).lower() == "preferred":
        problems.append("transitEncryptionMode is preferred (plaintext clients still accepted)")
    if not truthy(get(args.props, "atRestEncryptionEnabled")):
        problems.append("atRestEncryptionEnabled is not true")
    if problems:
        report("; ".join(problems), None)


# --- s3-bucket-private-encrypted --------------------------------------------------------------------

PAB_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
SSE_ALGORITHMS = ("aws:kms", "aws:kms:dsse", "AES256")


def _attached(resource: PolicyResource, bucket: PolicyResource) -> bool:
    return depends_on(resource, "bucket", bucket, literal=get(bucket.props, "bucket"))


def _sse_ok(rules: Any) -> bool:
    return any(
        get(rule, "applyServerSideEncryptionByDefault", "sseAlgorithm") in SSE_ALGORITHMS for rule in as_list(rules)
    )


def _tls_only(policy: Any) -> bool:
    """A Deny statement conditioned on aws:SecureTransport false."""
    doc = as_json(policy)
    for stmt in as_list(get(doc, "Statement")):
        if get(stmt, "Effect") != "Deny":
            continue
        for values in (get(stmt, "Condition", "Bool") or {}, get(stmt, "Condition", "BoolIfExists") or {}):
            if str(values.get("aws:SecureTransport", "")).lower() == "false":
                return True
    return False


def _s3_bucket_private_encrypted(args: StackValidationArgs, report: ReportViolation) -> None:
    pabs = of_type(args, PUBLIC_ACCESS_BLOCK)
    sses = of_type(args, *SSE_CONFIGS)
    policies = of_type(args, BUCKET_POLICY)
    for bucket in of_type(args, *BUCKETS):
        missing = []
        if not any(_attached(p, bucket) and all(truthy(get(p.props, f)) for f in PAB_FLAGS) for p in pabs):
            missing.append(f"a public-access block with {', '.join(PAB_FLAGS)} all true")
        inline_sse = get(bucket.props, "serverSideEncryptionConfiguration", "rule")
        if not (
            any(_attached(s, bucket) and _sse_ok(get(s.props, "rules")) for s in sses) or _sse_ok(as_list(inline_sse))
        ):
            missing.append("default encryption (SSE-S3 or SSE-KMS)")
        if not (
            any(_attached(p, bucket) and _tls_only(get(p.props, "policy")) for p in policies)
            or _tls_only(get(bucket.props, "policy"))
        ):
            missing.append("a bucket policy denying aws:SecureTransport=false")
        if missing:
            report(f"bucket lacks {'; '.join(missing)}", bucket.urn)


# --- eks-endpoint-private ---------------------------------------------------------------------------


def open_to_world(cidrs: Iterable[Any]) -> bool:
    """Whether any CIDR is ``/0`` (the whole internet). Shared with the config check of cluster.deployerAccess."""
    for cidr in cidrs:
        try:
            if ipaddress.ip_network(str(cidr), strict=False).prefixlen == 0:
                return True
        except ValueError:
            continue
    return False


HTTPS = 443


def _covers_https(protocol: Any, from_port: Any, to_port: Any) -> bool:
    if _all_traffic(protocol):
        return True
    if str(protocol).lower() not in ("tcp", "6"):
        return False
    try:
        return float(from_port) <= HTTPS <= float(to_port)
    except (TypeError, ValueError):
        return False


def _node_security_groups(args: StackValidationArgs) -> list[PolicyResource]:
    """The HyperPod nodes' security groups (their 443 rule reaches the API for the kubelet, not for Pulumi)."""
    return [sg for hp in of_type(args, HYPERPOD_CLUSTER) for sg in deps(hp, "vpcConfig", SECURITY_GROUP)]


def _api_security_groups(cluster: PolicyResource) -> list[PolicyResource]:
    """The security groups on the control plane's ENIs that this stack creates."""
    if cluster.resource_type == EKS_COMPONENT:
        # pulumi-eks takes the SG as a resource reference (clusterSecurityGroup); the program also lists it in
        # dependsOn, which is what a graph without resource references records.
        found = deps(cluster, "clusterSecurityGroup", SECURITY_GROUP)
        found += [d for d in cluster.dependencies or [] if d.resource_type == SECURITY_GROUP]
        return found
    return deps(cluster, "vpcConfig", SECURITY_GROUP)


def _deployer_ingress(args: StackValidationArgs, cluster: PolicyResource) -> bool:
    """An ingress rule on the cluster's API security group admitting 443 from something other than the nodes."""
    targets = [cluster, *_api_security_groups(cluster)]
    nodes = {sg.urn for sg in _node_security_groups(args)}

    def on_api_sg(rule: PolicyResource) -> bool:
        return any(depends_on(rule, "securityGroupId", t) for t in targets)

    def from_nodes(rule: PolicyResource, key: str) -> bool:
        return any(d.urn in nodes for d in deps(rule, key))

    for rule in of_type(args, SG_INGRESS_RULE):
        p = rule.props
        if not on_api_sg(rule) or not _covers_https(get(p, "ipProtocol"), get(p, "fromPort"), get(p, "toPort")):
            continue
        if any(get(p, k) for k in ("cidrIpv4", "cidrIpv6", "prefixListId")):
            return True
        if get(p, "referencedSecurityGroupId") and not from_nodes(rule, "referencedSecurityGroupId"):
            return True
    for rule in of_type(args, SG_RULE):
        p = rule.props
        if get(p, "type") != "ingress" or not on_api_sg(rule):
            continue
        if not _covers_https(get(p, "protocol"), get(p, "fromPort"), get(p, "toPort")):
            continue
        if as_list(get(p, "cidrBlocks")) or as_list(get(p, "prefixListIds")):
            return True
        if get(p, "sourceSecurityGroupId") and not from_nodes(rule, "sourceSecurityGroupId"):
            return True
    return False


def _eks_endpoint_private(args: StackValidationArgs, report: ReportViolation) -> None:
    components = of_type(args, EKS_COMPONENT)
    component_urns = {c.urn for c in components}
    raw = [c for c in of_type(args, EKS_CLUSTER) if c.parent is None or c.parent.urn not in component_urns]
    for cluster in [*components, *raw]:
        if cluster.resource_type == EKS_COMPONENT:
            public = get(cluster.props, "endpointPublicAccess", default=True)
            cidrs, where = as_list(get(cluster.props, "publicAccessCidrs")), ""
        else:
            vpc = get(cluster.props, "vpcConfig", default={})
            public = get(vpc, "endpointPublicAccess", default=True)
            cidrs, where = as_list(get(vpc, "publicAccessCidrs")), "vpcConfig."
        if truthy(public):
            if not cidrs:
                report(
                    f"{where}endpointPublicAccess is on and {where}publicAccessCidrs defaults to 0.0.0.0/0", cluster.urn
                )
            elif open_to_world(cidrs):
                report(
                    f"{where}publicAccessCidrs opens the public Kubernetes API endpoint to the internet ({cidrs})",
                    cluster.urn,
                )
            continue  # public access limited to listed CIDRs: the deployer comes from one of them
        if not _deployer_ingress(args, cluster):
            report(
                "the API endpoint is private and no security-group rule admits a deployer on 443 (only the HyperPod "
                "nodes): `pulumi up` cannot reach the API to create Kubernetes objects; declare "
                "hyperpod-inference:cluster.deployerAccess (an in-VPC runner's security group or CIDRs)",
                cluster.urn,
            )


# --- stateful-resources-protected -------------------------------------------------------------------

STATEFUL = {HYPERPOD_CLUSTER: "HyperPod cluster", REPLICATION_GROUP: "ElastiCache replication group"}
STATEFUL.update({b: "S3 bucket" for b in BUCKETS})


def _stateful_resources_protected(args: ResourceValidationArgs, report: ReportViolation) -> None:
    what = STATEFUL.get(args.resource_type)
    if what is not None and not args.opts.protect:
        report(f"{what} is not protected (ResourceOptions(protect=True)); a stray destroy would delete its state", None)


# --- eks-secrets-encrypted / eks-deletion-protection ------------------------------------------------


def _eks_secrets_key(props: Mapping[str, Any], resource_type: str) -> Any:
    """The KMS key that envelope-encrypts the cluster's Secrets (None when the input is left out)."""
    if resource_type == EKS_COMPONENT:
        return get(props, "encryptionConfigKeyArn")
    configs = as_list(get(props, "encryptionConfig"))
    return next(
        (get(c, "provider", "keyArn") for c in configs if "secrets" in as_list(get(c, "resources"))),
        None,
    )


def _eks_secrets_encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (EKS_COMPONENT, EKS_CLUSTER):
        return
    if not _eks_secrets_key(args.props, args.resource_type):
        report("Kubernetes Secrets are not envelope-encrypted with a KMS key (the input is missing or empty)", None)


def _eks_deletion_protection(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (EKS_COMPONENT, EKS_CLUSTER):
        return
    if not truthy(get(args.props, "deletionProtection")):
        report("deletionProtection is not true (EKS's default is false: one DeleteCluster removes the cluster)", None)


# --- sns-topic-encrypted ----------------------------------------------------------------------------


def _sns_topic_encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == SNS_TOPIC and not get(args.props, "kmsMasterKeyId"):
        report("the topic has no kmsMasterKeyId: SNS stores its messages unencrypted (the API's default)", None)
