"""RedisKvCache: the ElastiCache (Valkey or Redis OSS) replication group LMCache uses as the L2 KV cache.

Why it looks the way it does:

- **Private and closed.** It lives in the private subnets and its security group admits the Redis port from
  the HyperPod nodes' security group only — KV blocks are model activations of user prompts.
- **Encrypted both ways.** TLS in transit (``transit_encryption_mode="required"``, so a plaintext client is
  refused rather than silently accepted) and at rest with a customer-managed KMS key this component creates
  (rotation on; protected against deletion in prod).
- **An RBAC user with only LMCache's commands, not the AUTH token.** With TLS on, the group authenticates
  through an ElastiCache user group (``user_group_ids``): a ``default`` user switched off (``off -@all``; every
  user group must contain a user named ``default``) and one LMCache user whose access string allows only the
  commands LMCache's Redis connector sends (``on ~* -@all +get +set +exists +del``:
  ``policies/compatibility.yaml`` ``lmcacheRedisCommands`` lists them per LMCache release, read from its wheel). A leaked
  password then cannot FLUSHALL, CONFIG, KEYS or SCAN the cache. Users and the group use engine ``redis``,
  which ElastiCache accepts for Valkey and Redis OSS groups alike (ElastiCache RBAC page). Passwords come from
  ``pulumi_random.RandomPassword`` — alphanumeric (no character that needs URL-encoding) and 64 characters —
  and are Pulumi secrets end to end: ``password`` and ``connection_url`` are secret Outputs, ``url`` carries no
  credentials. How they reach the workers without entering the custom resource: ``components/endpoints.py``.
- **A cache, not a database.** ``maxmemory-policy allkeys-lru`` evicts the coldest KV blocks when full and
  no snapshots are kept (``snapshot_retention_limit=0``): a lost cache only costs prefill compute.
- **Highly available in prod.** Multi-AZ with automatic failover (the config contract refuses prod with
  zero replicas), so a primary failure promotes a replica instead of dropping every worker's L2 tier.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_random as random

from .config.kvcache import (
    DEFAULT_USER_ACCESS_STRING,
    RedisConfig,
    lmcache_access_string,
    parameter_group_family,
)

PASSWORD_LENGTH = 64
RBAC_ENGINE = "redis"  # users and user groups: "redis" works for Valkey and Redis OSS replication groups


@dataclass(frozen=True)
class RedisKvCacheArgs:
    redis: RedisConfig
    vpc_id: pulumi.Input[str]
    subnet_ids: list[pulumi.Input[str]] = field(metadata={"doc": "The private subnets (one per AZ)."})
    node_security_group_id: pulumi.Input[str] = field(metadata={"doc": "The HyperPod nodes' SG (LMCache clients)."})
    name_prefix: str
    is_prod: bool
    lmcache_commands: tuple[str, ...] = field(
        metadata={
            "doc": "The Redis commands the endpoints' LMCache releases send (config.endpoints.lmcache_redis_acl)."
        }
    )
    tags: dict[str, str] = field(default_factory=dict)


class RedisKvCache(pulumi.ComponentResource):
    """An encrypted, private ElastiCache replication group for LMCache's remote (L2) tier."""

    url: pulumi.Output[str]
    connection_url: pulumi.Output[str]
    username: str
    password: pulumi.Output[str] | None
    primary_endpoint: pulumi.Output[str]
    port: int
    security_group_id: pulumi.Output[str]
    kms_key_arn: pulumi.Output[str]
    replication_group_id: pulumi.Output[str]

    def __init__(self, name: str, args: RedisKvCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("hyperpod:kv_cache:RedisKvCache", name, None, opts)
        cfg = args.redis
        rg_id = f"{args.name_prefix}-kv"  # ElastiCache ids: <= 40 chars, lowercase, hyphens

        def tags(resource: str) -> dict[str, str]:
            return {**args.tags, "Name": f"{name}-{resource}"}

        key = self._encryption_key(name, args, rg_id, tags)
        sg = self._security_group(name, args, rg_id, tags)
        subnet_group, params = self._subnets_and_parameters(name, args, rg_id, tags)
        user_group: aws.elasticache.UserGroup | None = None
        self.username = f"{rg_id}-lmcache"
        self.password = None
        if cfg.transit_encryption:
            user_group = self._rbac(name, rg_id, tags, args.lmcache_commands)
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
            user_group_ids=[user_group.user_group_id] if user_group is not None else None,
            snapshot_retention_limit=0,
            auto_minor_version_upgrade=True,
            apply_immediately=not args.is_prod,
            tags=tags("rg"),
            # Protected in prod: re-creating a Multi-AZ group takes long and cold-starts every worker's L2 tier.
            opts=pulumi.ResourceOptions(parent=self, protect=args.is_prod),
        )

        scheme = "rediss" if cfg.transit_encryption else "redis"
        self.port = cfg.port
        self.primary_endpoint = group.primary_endpoint_address
        self.url = group.primary_endpoint_address.apply(lambda host: f"{scheme}://{host}:{cfg.port}")
        if self.password is not None:
            user, password = self.username, self.password
            self.connection_url = pulumi.Output.secret(
                pulumi.Output.all(group.primary_endpoint_address, password).apply(
                    lambda v: f"{scheme}://{user}:{v[1]}@{v[0]}:{cfg.port}"
                )
            )
        else:
            self.connection_url = self.url
        self.security_group_id = sg.id
        self.kms_key_arn = key.arn
        self.replication_group_id = group.id
        self.register_outputs(
            {
                "url": self.url,
                "connectionUrl": self.connection_url,
                "username": self.username,
                "password": self.password,
                "securityGroupId": self.security_group_id,
                "kmsKeyArn": self.kms_key_arn,
            }
        )

    def _encryption_key(
        self, name: str, args: RedisKvCacheArgs, rg_id: str, tags: Callable[[str], dict[str, str]]
    ) -> aws.kms.Key:
        """The customer-managed key of at-rest encryption (protected in prod), and its alias."""
        key = aws.kms.Key(
            f"{name}-kms",
            description=f"{rg_id}: at-rest encryption of the L2 KV cache",
            enable_key_rotation=True,
            deletion_window_in_days=30 if args.is_prod else 7,
            tags=tags("kms"),
            opts=pulumi.ResourceOptions(parent=self, protect=args.is_prod),
        )
        aws.kms.Alias(
            f"{name}-kms-alias",
            name=f"alias/{rg_id}",
            target_key_id=key.key_id,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return key

    def _security_group(
        self, name: str, args: RedisKvCacheArgs, rg_id: str, tags: Callable[[str], dict[str, str]]
    ) -> aws.ec2.SecurityGroup:
        """The group's security group: the Redis port from the HyperPod nodes' security group only."""
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"{rg_id}: Redis port from the HyperPod nodes only",
            tags=tags("sg"),
            opts=pulumi.ResourceOptions(parent=self),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-from-nodes",
            security_group_id=sg.id,
            referenced_security_group_id=args.node_security_group_id,
            ip_protocol="tcp",
            from_port=args.redis.port,
            to_port=args.redis.port,
            description="LMCache (HyperPod inference workers) to the L2 KV cache",
            tags=tags("from-nodes"),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return sg

    def _subnets_and_parameters(
        self, name: str, args: RedisKvCacheArgs, rg_id: str, tags: Callable[[str], dict[str, str]]
    ) -> tuple[aws.elasticache.SubnetGroup, aws.elasticache.ParameterGroup]:
        """The private subnet group, and the parameter group that makes Redis a cache (LRU over all keys)."""
        cfg = args.redis
        subnet_group = aws.elasticache.SubnetGroup(
            f"{name}-subnets",
            name=f"{rg_id}-subnets",
            description=f"{rg_id}: private subnets",
            subnet_ids=args.subnet_ids,
            tags=tags("subnets"),
            opts=pulumi.ResourceOptions(parent=self),
        )
        params = aws.elasticache.ParameterGroup(
            f"{name}-params",
            name=f"{rg_id}-{parameter_group_family(cfg.engine, cfg.engine_version).replace('.', '-')}",
            family=parameter_group_family(cfg.engine, cfg.engine_version),
            description=f"{rg_id}: cache semantics (LRU eviction over all keys)",
            parameters=[aws.elasticache.ParameterGroupParameterArgs(name="maxmemory-policy", value="allkeys-lru")],
            tags=tags("params"),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return subnet_group, params

    def _rbac(
        self, name: str, rg_id: str, tags: Callable[[str], dict[str, str]], commands: tuple[str, ...]
    ) -> aws.elasticache.UserGroup:
        """The user group: ``default`` switched off, and the LMCache user limited to LMCache's commands."""
        child = pulumi.ResourceOptions(parent=self)
        passwords = {
            who: random.RandomPassword(f"{name}-{who}-password", length=PASSWORD_LENGTH, special=False, opts=child)
            for who in ("default", "lmcache")
        }
        default_password: pulumi.Output[str] = pulumi.Output.secret(passwords["default"].result)
        lmcache_password: pulumi.Output[str] = pulumi.Output.secret(passwords["lmcache"].result)
        default = aws.elasticache.User(
            f"{name}-default-user",
            user_id=f"{rg_id}-default",
            user_name="default",
            engine=RBAC_ENGINE,
            access_string=DEFAULT_USER_ACCESS_STRING,
            passwords=[default_password],
            tags=tags("default-user"),
            opts=child,
        )
        lmcache = aws.elasticache.User(
            f"{name}-lmcache-user",
            user_id=self.username,
            user_name=self.username,
            engine=RBAC_ENGINE,
            access_string=lmcache_access_string(commands),
            passwords=[lmcache_password],
            tags=tags("lmcache-user"),
            opts=child,
        )
        self.password = lmcache_password
        return aws.elasticache.UserGroup(
            f"{name}-users",
            user_group_id=f"{rg_id}-users",
            engine=RBAC_ENGINE,
            user_ids=[default.user_id, lmcache.user_id],
            tags=tags("users"),
            opts=child,
        )
