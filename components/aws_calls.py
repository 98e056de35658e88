"""How this project calls AWS: boto3 clients with botocore's retry modes, paginators for listed results, and the
error codes that mean "denied" in one place. The dynamic providers (``dynamic_provider.py``, ``destroy_waits.py``),
preflight (``tools/preflight``) and verify (``tools/verify``) all use it.

- Retries are botocore's: :data:`PROVIDER_RETRIES` (``adaptive``: the providers poll for tens of minutes during
  ``pulumi up``, so the client also rate-limits itself after a throttle) and :data:`TOOL_RETRIES` (``standard``) for
  the one-shot tools (botocore docs, "Retries": throttling, transient and 5xx errors are retried with exponential
  backoff and jitter, up to ``total_max_attempts`` in all).
- Listed results come from the service model's paginators (``NextToken``, ``nextToken``, ``Marker``/``NextMarker``
  as each operation defines them), which botocore's Stubber drives like a live endpoint.
- Operation names map to boto3 method names with ``botocore.xform_name``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore import xform_name
from botocore.config import Config
from botocore.exceptions import ClientError

# Error codes that mean the caller lacks a permission (IAM, EC2's, S3's bare 403, CloudTrail's event form).
DENIED_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "Client.UnauthorizedOperation",
        "UnauthorizedException",
        "403",
    }
)
NOT_FOUND_CODES = frozenset({"ResourceNotFound", "ResourceNotFoundException"})

PROVIDER_RETRIES = Config(retries={"mode": "adaptive", "total_max_attempts": 10})
TOOL_RETRIES = Config(retries={"mode": "standard", "total_max_attempts": 5})

__all__ = [
    "DENIED_CODES",
    "NOT_FOUND_CODES",
    "PROVIDER_RETRIES",
    "TOOL_RETRIES",
    "error_code",
    "error_message",
    "items",
    "method_name",
    "pages",
]


def error_code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def error_message(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Message", "") or err)


def method_name(operation: str) -> str:
    """``CreateClusterSchedulerConfig`` -> ``create_cluster_scheduler_config`` (boto3's own mapping)."""
    return xform_name(operation)


def pages(client: Any, method: str, **params: Any) -> Iterator[dict[str, Any]]:
    """Every page of ``client.<method>(**params)``, through the operation's paginator."""
    yield from client.get_paginator(method).paginate(**params)


def items(client: Any, method: str, key: str, **params: Any) -> Iterator[Any]:
    """Every entry under ``key`` of every page."""
    for page in pages(client, method, **params):
        yield from page.get(key) or []
