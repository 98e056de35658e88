"""Region data the stack config is checked against, kept in one place.

* ``AZ_ID_PREFIX``: the prefix every availability-zone ID of a region carries (``usw2-az1`` is in
  ``us-west-2``). AZ *IDs* (not names) are stable across accounts, so the stack files use them; this table
  lets a typo such as ``use1-az2`` in a us-west-2 stack fail before AWS rejects the subnet.
* :func:`hyperpod_instance_types`: the instance types SageMaker HyperPod offers per region, read from the
  data cfn-lint ships (``aws_sagemaker_cluster/instancetype_enum.json``), so the config check and the
  CloudFormation lint of the rendered cluster agree by construction. Bump ``cfn-lint`` to refresh it.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

# Regions where HyperPod is offered (the keys of cfn-lint's instance-type table) plus a few neighbours.
AZ_ID_PREFIX: dict[str, str] = {
    "us-east-1": "use1",
    "us-east-2": "use2",
    "us-west-1": "usw1",
    "us-west-2": "usw2",
    "ca-central-1": "cac1",
    "sa-east-1": "sae1",
    "eu-central-1": "euc1",
    "eu-central-2": "euc2",
    "eu-north-1": "eun1",
    "eu-south-1": "eus1",
    "eu-south-2": "eus2",
    "eu-west-1": "euw1",
    "eu-west-2": "euw2",
    "eu-west-3": "euw3",
    "ap-northeast-1": "apne1",
    "ap-northeast-2": "apne2",
    "ap-northeast-3": "apne3",
    "ap-south-1": "aps1",
    "ap-south-2": "aps2",
    "ap-southeast-1": "apse1",
    "ap-southeast-2": "apse2",
    "ap-southeast-3": "apse3",
    "ap-southeast-4": "apse4",
    "ap-southeast-5": "apse5",
}

# cfn-lint's per-region HyperPod instance types, read as a data file. Importing the ``cfnlint`` package
# would load its whole linter (and sympy, ~1 s), so the file is located without executing the package.
_CFN_LINT_TABLE = ("data", "schemas", "extensions", "aws_sagemaker_cluster", "instancetype_enum.json")


def az_id_prefix(region: str) -> str | None:
    """The AZ-ID prefix of ``region`` (``usw2`` for us-west-2), or None when the region is not in the table."""
    return AZ_ID_PREFIX.get(region)


def az_id_in_region(az_id: str, region: str) -> bool:
    prefix = az_id_prefix(region)
    return prefix is not None and az_id.startswith(f"{prefix}-az")


@cache
def _instance_type_table() -> dict[str, frozenset[str]]:
    spec = importlib.util.find_spec("cfnlint")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("cfn-lint is not installed; it is a runtime dependency (requirements.txt)")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*_CFN_LINT_TABLE)
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {region: frozenset(v["enum"]) for region, v in raw.items() if isinstance(v, dict) and "enum" in v}


def hyperpod_regions() -> list[str]:
    """Regions cfn-lint knows HyperPod instance types for."""
    return sorted(_instance_type_table())


def hyperpod_instance_types(region: str) -> frozenset[str]:
    """Instance types HyperPod offers in ``region`` (empty when HyperPod is not offered there)."""
    return _instance_type_table().get(region, frozenset())
