"""IngressAlb: the authenticated HTTPS front door for the inference endpoints.

The operator's own ``loadBalancer`` spec has no authentication fields, so we own the ALB: its security
group, an HTTPS listener with a TLS 1.2+ policy whose rules each authenticate *first* and only then
``forward`` — ``authenticate-oidc`` or ``authenticate-cognito`` for browsers, ``jwt-validation`` (issuer, JWKS
endpoint, required claims) for programs, chosen per route —, an HTTP listener that only redirects to HTTPS, access
logs in an SSE-S3, private, TLS-only bucket (ALB log delivery supports SSE-S3 only), a DNS-validated ACM
certificate, Route 53 alias records and an optional WAF association.

Targets: one ``ip`` target group per routed endpoint, filled by the AWS Load Balancer Controller (installed
by the operator add-on) through a ``TargetGroupBinding`` on the Service the operator serves the endpoint
with: its router's Service (in ``hyperpod-inference-system``) when intelligent routing is on, so requests
go through the router and not straight to worker pods; otherwise the Service named in config (required in
prod, because no source names it; ``components/config/ingress.py`` cites what is known). The binding's
``networking`` block lets the controller open the pods' security group to this ALB only.

Ordering: each binding depends on the controller (its CRD and its ``failurePolicy: Fail`` webhooks), on
its Namespace when this package creates it, and on the endpoint's custom resource — so it is created after
the resource whose reconcile makes the Service, and deleted before it (the controller's finalizer
``elbv2.k8s.aws/resources`` then deregisters the targets while the controller still runs).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from policies.readiness import program_create_timeout
from policies.replacement_rules import replace_paths

from .access_logs import alb_log_delivery_statement
from .config.endpoints import EndpointConfig
from .config.ingress import (
    ALL_TCP,
    AUTH_ORDER,
    FINAL_ORDER,
    Authentication,
    IngressConfig,
    ServiceTarget,
    authentication_keys,
    binding_ports,
    catch_all_route,
    default_authentication,
    route_authentication,
    service_target,
    target_port_range,
)
from .dynamic_provider import credential_inputs
from .private_bucket import PrivateBucket, PrivateBucketArgs
from .target_health_wait import RESOURCE_KIND as HEALTH_KIND
from .target_health_wait import TargetHealthWait

TARGET_GROUP_BINDING = "kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding"
DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"


# Rule priorities leave gaps so a hand-made rule can be slotted in during an incident.
RULE_PRIORITY_STEP = 10
ALB_LOG_PREFIX = "alb"


@dataclass(frozen=True)
class IngressAlbArgs:
    ingress: IngressConfig
    endpoints: list[EndpointConfig]
    vpc_id: pulumi.Input[str]
    vpc_cidr: str
    subnet_ids: list[pulumi.Input[str]] = field(
        metadata={"doc": "Public subnets for internet-facing, private subnets for internal (one per AZ)."}
    )
    name_prefix: str
    is_prod: bool
    k8s_provider: k8s.Provider | None = field(
        default=None, metadata={"doc": "The EKS cluster's provider; TargetGroupBindings are created through it."}
    )
    k8s_depends_on: list[pulumi.Resource] = field(
        default_factory=list,
        metadata={"doc": "What installs the AWS Load Balancer Controller and its TargetGroupBinding CRD."},
    )
    endpoint_resources: Mapping[str, pulumi.Resource] = field(
        default_factory=dict, metadata={"doc": "Endpoint name -> its custom resource (the binding waits for it)."}
    )
    namespaces: Mapping[str, pulumi.Resource] = field(
        default_factory=dict, metadata={"doc": "Namespace name -> the Namespace this package creates."}
    )
    web_acl_arn: pulumi.Input[str] | None = field(
        default=None,
        metadata={"doc": "The WebACL the stack created (components/web_acl.py); else ingress.wafWebAclArn."},
    )
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Target:
    endpoint: EndpointConfig
    service: ServiceTarget
    target_port: int


@dataclass(frozen=True)
class _ActionArgs:
    """The SDK's typed classes of one action list: listener default actions, or listener-rule actions."""

    action: Any
    oidc: Any
    cognito: Any
    jwt: Any
    claim: Any


_DEFAULT_ACTION_ARGS = _ActionArgs(
    aws.lb.ListenerDefaultActionArgs,
    aws.lb.ListenerDefaultActionAuthenticateOidcArgs,
    aws.lb.ListenerDefaultActionAuthenticateCognitoArgs,
    aws.lb.ListenerDefaultActionJwtValidationArgs,
    aws.lb.ListenerDefaultActionJwtValidationAdditionalClaimArgs,
)
_RULE_ACTION_ARGS = _ActionArgs(
    aws.lb.ListenerRuleActionArgs,
    aws.lb.ListenerRuleActionAuthenticateOidcArgs,
    aws.lb.ListenerRuleActionAuthenticateCognitoArgs,
    aws.lb.ListenerRuleActionJwtValidationArgs,
    aws.lb.ListenerRuleActionJwtValidationAdditionalClaimArgs,
)


class IngressAlb(pulumi.ComponentResource):
    """The ALB, its listeners and rules, certificate, DNS records, log bucket and target bindings."""

    dns_name: pulumi.Output[str]
    zone_id: pulumi.Output[str]
    https_listener_arn: pulumi.Output[str]
    certificate_arn: pulumi.Output[str]
    target_group_arns: dict[str, pulumi.Output[str]]
    url: str

    def __init__(self, name: str, args: IngressAlbArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:ingress:IngressAlb", name, None, opts)
        cfg = args.ingress
        assert cfg.domain_name and cfg.hosted_zone_id, "validated by components.config.ingress"
        tags = {**args.tags, "hyperpod-inference:component": "ingress"}
        targets = self._targets(args)

        sg = self._security_group(name, args, targets, tags)
        logs = self._log_bucket(name, args, tags)
        alb = self._load_balancer(name, args, sg, logs, tags)
        certificate_arn = self._certificate(name, cfg, tags)

        target_groups = {t.endpoint.name: self._target_group(name, args, t, tags) for t in targets}
        self.target_group_arns = {ep: tg.arn for ep, tg in target_groups.items()}
        https = self._listeners(name, cfg, alb, certificate_arn=certificate_arn, target_groups=target_groups, tags=tags)
        rules = self._route_rules(name, cfg, https, target_groups, tags)
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
        for t in targets:
            binding = self._binding(name, args, t, target_groups[t.endpoint.name], sg)
            # `up` is done when the front door reaches the endpoint: a healthy target in its target group (the
            # binding's CRD has no status to wait on). After the listener and its rules: a target group no
            # listener uses reports its targets `unused`.
            TargetHealthWait(
                f"{name}-healthy-{t.endpoint.name}",
                {
                    "region": region,
                    "targetGroupArn": target_groups[t.endpoint.name].arn,
                    "endpoint": t.endpoint.name,
                    "timeoutSeconds": int(program_create_timeout(DYNAMIC_TYPE, {"resourceKind": HEALTH_KIND}) * 60),
                    "pollSeconds": 15,
                    **credential_inputs(),
                },
                opts=pulumi.ResourceOptions(parent=self, depends_on=[binding, https, *rules]),
            )
        self._dns_and_waf(name, args, alb)

        self.dns_name = alb.dns_name
        self.zone_id = alb.zone_id
        self.https_listener_arn = https.arn
        self.certificate_arn = pulumi.Output.from_input(certificate_arn)
        self.url = f"https://{cfg.domain_name}"
        self.register_outputs(
            {
                "dnsName": self.dns_name,
                "zoneId": self.zone_id,
                "httpsListenerArn": self.https_listener_arn,
                "certificateArn": self.certificate_arn,
                "targetGroupArns": self.target_group_arns,
                "url": self.url,
            }
        )

    def _child(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self)

    # --- the load balancer, its listeners and rules ----------------------------------------------------

    def _load_balancer(
        self, name: str, args: IngressAlbArgs, sg: aws.ec2.SecurityGroup, logs: PrivateBucket, tags: dict[str, str]
    ) -> aws.lb.LoadBalancer:
        cfg = args.ingress
        return aws.lb.LoadBalancer(
            f"{name}-alb",
            name=f"{args.name_prefix}-alb",
            load_balancer_type="application",
            internal=cfg.scheme == "internal",
            subnets=args.subnet_ids,
            security_groups=[sg.id],
            drop_invalid_header_fields=True,
            enable_deletion_protection=(
                cfg.deletion_protection if cfg.deletion_protection is not None else args.is_prod
            ),
            idle_timeout=cfg.idle_timeout,
            access_logs=aws.lb.LoadBalancerAccessLogsArgs(bucket=logs.bucket_name, prefix=ALB_LOG_PREFIX, enabled=True),
            tags={**tags, "Name": f"{args.name_prefix}-alb"},
            # ELB checks at creation that it may write to the log bucket: wait for the bucket policy (inside the
            # component).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[logs]),
        )

    def _listeners(
        self,
        name: str,
        cfg: IngressConfig,
        alb: aws.lb.LoadBalancer,
        *,
        certificate_arn: pulumi.Input[str],
        target_groups: dict[str, aws.lb.TargetGroup],
        tags: dict[str, str],
    ) -> aws.lb.Listener:
        """HTTPS (authenticate, then the catch-all route or a 404) and the HTTP -> HTTPS redirect."""
        # The terminal action runs second when an authenticate action precedes it (config.ingress.planned_actions).
        default_auth = default_authentication(cfg)
        final_order = _final_order(default_auth)
        catch_all = catch_all_route(cfg)
        if catch_all is not None:
            final = aws.lb.ListenerDefaultActionArgs(
                type="forward", order=final_order, target_group_arn=target_groups[catch_all.endpoint].arn
            )
        else:
            final = aws.lb.ListenerDefaultActionArgs(
                type="fixed-response",
                order=final_order,
                fixed_response=aws.lb.ListenerDefaultActionFixedResponseArgs(
                    content_type="application/json", status_code="404", message_body='{"error":"no route"}'
                ),
            )
        https = aws.lb.Listener(
            f"{name}-https",
            load_balancer_arn=alb.arn,
            port=443,
            protocol="HTTPS",
            ssl_policy=cfg.ssl_policy,
            certificate_arn=certificate_arn,
            default_actions=[*self._default_auth_actions(cfg, default_auth), final],
            tags=tags,
            opts=self._child(),
        )
        aws.lb.Listener(
            f"{name}-http",
            load_balancer_arn=alb.arn,
            port=80,
            protocol="HTTP",
            default_actions=[
                aws.lb.ListenerDefaultActionArgs(
                    type="redirect",
                    redirect=aws.lb.ListenerDefaultActionRedirectArgs(
                        protocol="HTTPS", port="443", status_code="HTTP_301"
                    ),
                )
            ],
            tags=tags,
            opts=self._child(),
        )
        return https

    def _route_rules(
        self,
        name: str,
        cfg: IngressConfig,
        https: aws.lb.Listener,
        target_groups: dict[str, aws.lb.TargetGroup],
        tags: dict[str, str],
    ) -> list[aws.lb.ListenerRule]:
        """One listener rule per route but the catch-all: host/path conditions, its authentication, forward."""
        rules: list[aws.lb.ListenerRule] = []
        priority = 0
        for index, route in enumerate(cfg.routes):
            if route.is_catch_all:
                continue
            priority += RULE_PRIORITY_STEP
            conditions = []
            if route.host is not None:
                conditions.append(
                    aws.lb.ListenerRuleConditionArgs(
                        host_header=aws.lb.ListenerRuleConditionHostHeaderArgs(values=[route.host])
                    )
                )
            if route.path is not None:
                conditions.append(
                    aws.lb.ListenerRuleConditionArgs(
                        path_pattern=aws.lb.ListenerRuleConditionPathPatternArgs(values=[route.path])
                    )
                )
            auth = route_authentication(cfg, route)
            rule = aws.lb.ListenerRule(
                f"{name}-route-{index}",
                listener_arn=https.arn,
                priority=priority,
                actions=[
                    *self._rule_auth_actions(cfg, auth),
                    aws.lb.ListenerRuleActionArgs(
                        type="forward", order=_final_order(auth), target_group_arn=target_groups[route.endpoint].arn
                    ),
                ],
                conditions=conditions,
                tags={**tags, "hyperpod-inference:endpoint": route.endpoint},
                opts=self._child(),
            )
            rules.append(rule)
        return rules

    def _dns_and_waf(self, name: str, args: IngressAlbArgs, alb: aws.lb.LoadBalancer) -> None:
        """Route 53 aliases for the domain and every route host; the WAF association."""
        cfg = args.ingress
        for host in [cfg.domain_name, *cfg.route_hosts]:
            aws.route53.Record(
                f"{name}-alias-{host}",
                zone_id=cfg.hosted_zone_id,
                name=host,
                type="A",
                aliases=[
                    aws.route53.RecordAliasArgs(name=alb.dns_name, zone_id=alb.zone_id, evaluate_target_health=True)
                ],
                opts=self._child(),
            )
        web_acl_arn = args.web_acl_arn if args.web_acl_arn is not None else cfg.waf_web_acl_arn
        if web_acl_arn is not None:
            aws.wafv2.WebAclAssociation(
                f"{name}-waf", resource_arn=alb.arn, web_acl_arn=web_acl_arn, opts=self._child()
            )

    # --- targets -----------------------------------------------------------------------------------

    @staticmethod
    def _targets(args: IngressAlbArgs) -> list[_Target]:
        """One target per routed endpoint, in first-route order."""
        by_name = {e.name: e for e in args.endpoints}
        out: dict[str, _Target] = {}
        for route in args.ingress.routes:
            if route.endpoint in out:
                continue
            endpoint = by_name[route.endpoint]
            out[route.endpoint] = _Target(
                endpoint=endpoint, service=service_target(route, endpoint), target_port=endpoint.port
            )
        return list(out.values())

    def _target_group(self, name: str, args: IngressAlbArgs, t: _Target, tags: dict[str, str]) -> aws.lb.TargetGroup:
        ep = t.endpoint
        return aws.lb.TargetGroup(
            f"{name}-tg-{ep.name}",
            name=_target_group_name(args.name_prefix, ep.name, t.target_port),
            target_type="ip",
            protocol="HTTP",
            protocol_version="HTTP1",
            port=t.target_port,
            vpc_id=args.vpc_id,
            load_balancing_algorithm_type=ep.routing_algorithm,
            deregistration_delay=30,
            health_check=aws.lb.TargetGroupHealthCheckArgs(
                enabled=True,
                protocol="HTTP",
                port="traffic-port",
                path=ep.health_check_path,
                matcher="200",
                interval=15,
                timeout=5,
                healthy_threshold=2,
                unhealthy_threshold=3,
            ),
            tags={**tags, "hyperpod-inference:endpoint": ep.name},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _binding(
        self, name: str, args: IngressAlbArgs, t: _Target, tg: aws.lb.TargetGroup, sg: aws.ec2.SecurityGroup
    ) -> k8s.apiextensions.CustomResource:
        """The LB controller registers the Service's pod IPs in the target group and opens their SG to the ALB.

        The networking rule's ports are :func:`binding_ports`: the pod port (worker targets: the container port;
        router targets: ``targetPort`` when configured), else no port (the controller then opens all TCP ports,
        from this ALB's security group only). The ALB security group's egress opens the same range.

        The controller's validating webhook refuses a change of ``spec.targetGroupARN``, ``spec.targetType``,
        ``spec.vpcID`` or ``spec.ipAddressType`` (failurePolicy Fail), so Pulumi must replace the binding instead
        (``replace_on_changes``; the paths are ``policies/replacement_rules.json``'s, one place), deleting the old one
        first: the new binding has the same name (``delete_before_replace``).
        """
        ep, svc = t.endpoint, t.service
        depends: list[pulumi.Resource] = list(args.k8s_depends_on)
        if svc.namespace in args.namespaces:
            depends.append(args.namespaces[svc.namespace])
        if ep.name in args.endpoint_resources:
            depends.append(args.endpoint_resources[ep.name])
        rule: dict[str, Any] = {"from": [{"securityGroup": {"groupID": sg.id}}], "ports": binding_ports(svc)}
        return k8s.apiextensions.CustomResource(
            f"{name}-tgb-{ep.name}",
            api_version="elbv2.k8s.aws/v1beta1",
            kind="TargetGroupBinding",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"{ep.name}-front-door"[:63].rstrip("-"),
                namespace=svc.namespace,
                labels={"app.kubernetes.io/managed-by": "pulumi", "hyperpod-inference/endpoint": ep.name},
            ),
            spec={
                "serviceRef": {"name": svc.name, "port": svc.port},
                "targetGroupARN": tg.arn,
                "targetType": "ip",
                "vpcID": args.vpc_id,
                "networking": {"ingress": [rule]},
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.k8s_provider,
                depends_on=depends,
                replace_on_changes=replace_paths(TARGET_GROUP_BINDING),
                delete_before_replace=True,
            ),
        )

    # --- network and logs ---------------------------------------------------------------------------

    def _security_group(
        self, name: str, args: IngressAlbArgs, targets: list[_Target], tags: dict[str, str]
    ) -> aws.ec2.SecurityGroup:
        cfg = args.ingress
        child = pulumi.ResourceOptions(parent=self)
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"{args.name_prefix} inference ALB: 80/443 in from allowed CIDRs, targets in the VPC",
            tags={**tags, "Name": f"{args.name_prefix}-alb"},
            opts=child,
        )
        cidrs = [str(c) for c in cfg.allowed_cidrs] if cfg.allowed_cidrs is not None else [args.vpc_cidr]
        for cidr in cidrs:
            for port in (443, 80):
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-sg-in-{port}-{cidr}",
                    security_group_id=sg.id,
                    ip_protocol="tcp",
                    from_port=port,
                    to_port=port,
                    cidr_ipv4=cidr,
                    description=f"HTTP{'S' if port == 443 else ' (redirected to HTTPS)'} from {cidr}",
                    opts=child,
                )
        # Where health checks and traffic go: each target's pod port, or every TCP port for a router target whose
        # port no one names (the binding opens the same range on the pods: config.ingress.target_port_range).
        ranges = {target_port_range(t.service) for t in targets}
        if ALL_TCP in ranges:
            ranges = {ALL_TCP}
        for low, high in sorted(ranges):
            all_tcp = (low, high) == ALL_TCP
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-sg-out-{'all-tcp' if all_tcp else low}",
                security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                cidr_ipv4=args.vpc_cidr,
                description=(
                    "router pods in the VPC (their port is unknown: all TCP, as the binding opens)"
                    if all_tcp
                    else f"model servers (port {low}) in the VPC"
                ),
                opts=child,
            )
        if set(authentication_keys(cfg)) - {"none"}:
            # authenticate-oidc/-cognito: the ALB itself calls the IdP's token and user-info endpoints;
            # jwt-validation: it fetches the IdP's public JWKS (ELB user guide, listener-verify-jwt).
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-sg-out-idp",
                security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=443,
                to_port=443,
                cidr_ipv4="0.0.0.0/0",
                description="HTTPS to the identity provider (token and user-info endpoints)",
                opts=child,
            )
        return sg

    def _log_bucket(self, name: str, args: IngressAlbArgs, tags: dict[str, str]) -> PrivateBucket:
        """Access-log bucket: SSE-S3 (the only encryption ALB log delivery supports), private, TLS-only."""
        cfg = args.ingress
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOutputOptions(parent=self)
        where = pulumi.Output.all(
            aws.get_caller_identity_output(opts=invoke).account_id,
            aws.get_region_output(opts=invoke).region,
            aws.get_partition_output(opts=invoke).partition,
        )
        logs = PrivateBucket(
            f"{name}-logs",
            PrivateBucketArgs(
                bucket_prefix=f"{args.name_prefix}-alb-logs-",
                # Access logs are audit evidence: a stray destroy must not take them in prod.
                protect=args.is_prod,
                versioned=False,
                extra_statements=lambda arn: where.apply(
                    lambda v: [alb_log_delivery_statement(arn, ALB_LOG_PREFIX, v[0], v[1], v[2])]
                ),
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        bucket = logs.bucket
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-logs-expiry",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="expire-access-logs",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=f"{ALB_LOG_PREFIX}/"),
                    expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(
                        days=cfg.access_log_retention_days
                    ),
                )
            ],
            opts=child,
        )
        return logs

    def _certificate(self, name: str, cfg: IngressConfig, tags: dict[str, str]) -> pulumi.Input[str]:
        """An existing ARN, or a new certificate for the domain and route hosts, validated by DNS in the zone."""
        if cfg.certificate_arn is not None:
            return cfg.certificate_arn
        assert cfg.domain_name and cfg.hosted_zone_id
        names = [cfg.domain_name, *cfg.route_hosts]
        cert = aws.acm.Certificate(
            f"{name}-cert",
            domain_name=cfg.domain_name,
            subject_alternative_names=names[1:],
            validation_method="DNS",
            key_algorithm="RSA_2048",
            tags={**tags, "Name": cfg.domain_name},
            opts=pulumi.ResourceOptions(parent=self),
        )
        records = []
        for host in names:
            option = cert.domain_validation_options.apply(functools.partial(_validation_option, host=host))
            records.append(
                aws.route53.Record(
                    f"{name}-cert-validation-{host}",
                    zone_id=cfg.hosted_zone_id,
                    name=option.apply(lambda o: o["resource_record_name"]),
                    type=option.apply(lambda o: o["resource_record_type"]),
                    records=[option.apply(lambda o: o["resource_record_value"])],
                    ttl=300,
                    allow_overwrite=True,
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        validation = aws.acm.CertificateValidation(
            f"{name}-cert-validation",
            certificate_arn=cert.arn,
            validation_record_fqdns=[r.fqdn for r in records],
            opts=pulumi.ResourceOptions(parent=self),
        )
        return validation.certificate_arn

    # --- authentication ----------------------------------------------------------------------------

    @staticmethod
    def _client_secret(cfg: IngressConfig) -> pulumi.Output[str]:
        assert cfg.oidc is not None and cfg.oidc.client_secret is not None
        return pulumi.Output.secret(cfg.oidc.client_secret.get_secret_value())

    def _default_auth_actions(
        self, cfg: IngressConfig, authentication: Authentication
    ) -> list[aws.lb.ListenerDefaultActionArgs]:
        return self._auth_actions(cfg, authentication, _DEFAULT_ACTION_ARGS)

    def _rule_auth_actions(
        self, cfg: IngressConfig, authentication: Authentication
    ) -> list[aws.lb.ListenerRuleActionArgs]:
        return self._auth_actions(cfg, authentication, _RULE_ACTION_ARGS)

    def _auth_actions(self, cfg: IngressConfig, authentication: Authentication, sdk: _ActionArgs) -> list[Any]:
        """The authenticate step (order 1) before a forward, for one route's ``authentication``.

        Listener default actions and listener-rule actions are distinct typed classes in the SDK with the
        same fields, so the classes are passed in (``sdk``) and the settings are written once.
        """
        if authentication == "oidc":
            assert cfg.oidc is not None
            o = cfg.oidc
            oidc = sdk.oidc(
                issuer=str(o.issuer),
                authorization_endpoint=str(o.authorization_endpoint),
                token_endpoint=str(o.token_endpoint),
                user_info_endpoint=str(o.user_info_endpoint),
                client_id=o.client_id,
                client_secret=self._client_secret(cfg),
                scope=o.scope,
                session_timeout=o.session_timeout,
                on_unauthenticated_request=o.on_unauthenticated_request,
            )
            return [sdk.action(type="authenticate-oidc", order=AUTH_ORDER, authenticate_oidc=oidc)]
        if authentication == "cognito":
            assert cfg.cognito is not None
            c = cfg.cognito
            cognito = sdk.cognito(
                user_pool_arn=c.user_pool_arn,
                user_pool_client_id=c.user_pool_client_id,
                user_pool_domain=c.user_pool_domain,
                scope=c.scope,
                session_timeout=c.session_timeout,
                on_unauthenticated_request=c.on_unauthenticated_request,
            )
            return [sdk.action(type="authenticate-cognito", order=AUTH_ORDER, authenticate_cognito=cognito)]
        if authentication == "jwt":
            assert cfg.jwt is not None
            j = cfg.jwt
            jwt = sdk.jwt(
                issuer=j.issuer,
                jwks_endpoint=j.jwks_uri,
                additional_claims=[
                    sdk.claim(name=claim.name, format=claim.format, values=list(claim.values))
                    for claim in j.required_claims
                ],
            )
            return [sdk.action(type="jwt-validation", order=AUTH_ORDER, jwt_validation=jwt)]
        return []


def _final_order(authentication: Authentication) -> int | None:
    """The terminal action's ``order``: second behind an authenticate step, unset when there is none."""
    return FINAL_ORDER if authentication != "none" else None


def _target_group_name(prefix: str, endpoint: str, port: int) -> str:
    """Target-group names are at most 32 characters; a hash keeps them unique and changes with the port."""
    digest = hashlib.sha256(f"{endpoint}:{port}".encode()).hexdigest()[:6]
    head = f"{prefix}-{endpoint}"[: 32 - len(digest) - 1].rstrip("-")
    return f"{head}-{digest}"


def _validation_option(options: Any, host: str) -> dict[str, str]:
    """The DNS record ACM asks for to prove control of ``host``."""

    def field(opt: Any, snake: str, camel: str) -> Any:
        # typed output objects expose snake_case properties; a raw provider dict has camelCase keys
        return getattr(opt, snake) if hasattr(opt, snake) else opt.get(camel)

    for opt in options or []:
        if field(opt, "domain_name", "domainName") == host:
            return {
                "resource_record_name": field(opt, "resource_record_name", "resourceRecordName"),
                "resource_record_type": field(opt, "resource_record_type", "resourceRecordType"),
                "resource_record_value": field(opt, "resource_record_value", "resourceRecordValue"),
            }
    raise ValueError(f"ACM returned no DNS validation option for {host}")
