"""RedisKvCache: the ElastiCache (Valkey or Redis OSS) replication group LMCache uses as the L2 KV cache.

Why it looks the way it does:

- **Private and closed.** It lives in the private subnets and its security group admits the Redis port from
  the HyperPod nodes' security group only — KV blocks are model activations of user prompts.
- **Encrypted both ways.** TLS in transit (``transit_encryption_mode="required"``, so a plaintext client is
  refused rather than silently accepted) and at rest with a customer-managed KMS key this component creates
  (rotation on; protected against deletion in prod).
- **AUTH token, not an RBAC user group.** LMCache's Redis connector takes one connection URL
  (``LMCACHE_REMOTE_URL`` / ``remote_url``) and the operator's CRD has exactly one field for it
  (``kvCacheSpec.l2CacheSpec.l2CacheLocalUrl``); an AUTH token travels in that URL
  (``rediss://:<token>@host:port``) with no user name, which every Redis client parses. RBAC would add a
  user, a user group and a second secret for no gain: all workers share one identity either way.
  The token comes from ``pulumi_random.RandomPassword`` — alphanumeric only (ElastiCache rejects
  ``@ " /`` and spaces; ``# ? &`` would break the URL) and 64 characters (ElastiCache allows 16-128).
  It is a Pulumi secret end to end: ``auth_token`` and ``connection_url`` are secret Outputs, ``url``
  carries no credentials.
- **A cache, not a database.** ``maxmemory-policy allkeys-lru`` evicts the coldest KV blocks when full and
  no snapshots are kept (``snapshot_retention_limit=0``): a lost cache only costs prefill compute.
- **Highly available in prod.** Multi-AZ with automatic failover (the config contract refuses prod with
  zero replicas), so a primary failure promotes a replica instead of dropping every worker's L2 tier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_random as random

from .config.kvcache import RedisConfig, parameter_group_family

AUTH_TOKEN_LENGTH = 64


@dataclass(frozen=True)
class RedisKvCacheArgs:
    redis: RedisConfig
    vpc_id: pulumi.Input[str]
    subnet_ids: list[pulumi.Input[str]] = field(metadata={"doc": "The private subnets (one per AZ)."})
    node_security_group_id: pulumi.Input[str] = field(metadata={"doc": "The HyperPod nodes' SG (LMCache clients)."})
    name_prefix: str
    is_prod: bool
    tags: dict[str, str] = field(default_factory=dict)


class RedisKvCache(pulumi.ComponentResource):
    """An encrypted, private ElastiCache replication group for LMCache's remote (L2) tier."""

    url: pulumi.Output[str]
    connection_url: pulumi.Output[str]
    auth_token: pulumi.Output[str]
    primary_endpoint: pulumi.Output[str]
    port: int
    security_group_id: pulumi.Output[str]
    kms_key_arn: pulumi.Output[str]
    replication_group_id: pulumi.Output[str]

    def __init__(self, name: str, args: RedisKvCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:kv_cache:RedisKvCache", name, None, opts)
        cfg = args.redis
        child = pulumi.ResourceOptions(parent=self)
        rg_id = f"{args.name_prefix}-kv"  # ElastiCache ids: <= 40 chars, lowercase, hyphens

        def tags(resource: str) -> dict[str, str]:
            return {**args.tags, "Name": f"{name}-{resource}"}

        key = aws.kms.Key(
            f"{name}-kms",
            description=f"{rg_id}: at-rest encryption of the L2 KV cache",
            enable_key_rotation=True,
            deletion_window_in_days=30 if args.is_prod else 7,
            tags=tags("kms"),
            opts=pulumi.ResourceOptions(parent=self, protect=args.is_prod),
        )
        aws.kms.Alias(f"{name}-kms-alias", name=f"alias/{rg_id}", target_key_id=key.key_id, opts=child)

        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"{rg_id}: Redis port from the HyperPod nodes only",
            tags=tags("sg"),
            opts=child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-from-nodes",
            security_group_id=sg.id,
            referenced_security_group_id=args.node_security_group_id,
            ip_protocol="tcp",
            from_port=cfg.port,
            to_port=cfg.port,
            description="LMCache (HyperPod inference workers) to the L2 KV cache",
            tags=tags("from-nodes"),
            opts=child,
        )

        subnet_group = aws.elasticache.SubnetGroup(
            f"{name}-subnets",
            name=f"{rg_id}-subnets",
            description=f"{rg_id}: private subnets",
            subnet_ids=args.subnet_ids,
            tags=tags("subnets"),
            opts=child,
        )
        params = aws.elasticache.ParameterGroup(
            f"{name}-params",
            name=f"{rg_id}-{parameter_group_family(cfg.engine, cfg.engine_version).replace('.', '-')}",
            family=parameter_group_family(cfg.engine, cfg.engine_version),
            description=f"{rg_id}: cache semantics (LRU eviction over all keys)",
            parameters=[aws.elasticache.ParameterGroupParameterArgs(name="maxmemory-policy", value="allkeys-lru")],
            tags=tags("params"),
            opts=child,
        )

        token: pulumi.Output[str] | None = None
        if cfg.transit_encryption:
            password = random.RandomPassword(
                f"{name}-auth-token",
                length=AUTH_TOKEN_LENGTH,
                special=False,
                opts=child,
            )
            token = pulumi.Output.secret(password.result)

        highly_available = cfg.replicas >= 1
        group = aws.elasticache.ReplicationGroup(
            f"{name}-rg",
            replication_group_id=rg_id,
            description=f"{rg_id}: LMCache L2 KV cache",
            engine=cfg.engine,
            engine_version=cfg.engine_version,
            node_type=cfg.node_type,
            port=cfg.port,
            num_cache_clusters=1 + cfg.replicas,
            automatic_failover_enabled=highly_available,
            multi_az_enabled=highly_available,
            subnet_group_name=subnet_group.name,
            security_group_ids=[sg.id],
            parameter_group_name=params.name,
            at_rest_encryption_enabled=True,
            kms_key_id=key.arn,
            transit_encryption_enabled=cfg.transit_encryption,
            transit_encryption_mode="required" if cfg.transit_encryption else None,
            auth_token=token,
            snapshot_retention_limit=0,
            auto_minor_version_upgrade=True,
            apply_immediately=not args.is_prod,
            tags=tags("rg"),
            # Protected in prod: re-creating a Multi-AZ group takes long and cold-starts every worker's L2 tier.
            opts=pulumi.ResourceOptions(parent=self, protect=args.is_prod, additional_secret_outputs=["authToken"]),
        )

        scheme = "rediss" if cfg.transit_encryption else "redis"
        self.port = cfg.port
        self.primary_endpoint = group.primary_endpoint_address
        self.url = group.primary_endpoint_address.apply(lambda host: f"{scheme}://{host}:{cfg.port}")
        if token is not None:
            self.auth_token = token
            self.connection_url = pulumi.Output.secret(
                pulumi.Output.all(group.primary_endpoint_address, token).apply(
                    lambda v: f"{scheme}://:{v[1]}@{v[0]}:{cfg.port}"
                )
            )
        else:
            self.auth_token = pulumi.Output.secret("")
            self.connection_url = self.url
        self.security_group_id = sg.id
        self.kms_key_arn = key.arn
        self.replication_group_id = group.id
        self.register_outputs(
            {
                "url": self.url,
                "connectionUrl": self.connection_url,
                "authToken": self.auth_token,
                "securityGroupId": self.security_group_id,
                "kmsKeyArn": self.kms_key_arn,
            }
        )
