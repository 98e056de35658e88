"""Integer bounds the AWS APIs set on stack keys, with the owner's figure: botocore's service models (``min`` /
``max`` of the shape each key becomes). One place: the config models take them from here, and
``tests/test_new_user.py`` reads botocore's models (the owner) and fails when a figure here differs, e.g. after a
botocore bump. A bound the program sets tighter than the API's says so where it is used.

The shapes are read from botocore 1.44.8 (requirements.txt), ``botocore/data/<service>/<date>/service-2.json``.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class ApiBound(NamedTuple):
    service: str
    shape: str
    minimum: int
    maximum: int

    def field(self) -> dict[str, Any]:
        """``Field(**bound.field())``: the pydantic bounds (the JSON schema's minimum/maximum)."""
        return {"ge": self.minimum, "le": self.maximum}


API_BOUNDS: dict[str, ApiBound] = {
    # CreateCluster ClusterInstanceGroupSpecification.InstanceCount
    "cluster.instanceGroups[].instanceCount": ApiBound("sagemaker", "ClusterInstanceCount", 0, 6758),
    # ClusterInstanceGroupSpecification.InstanceStorageConfigs[].EbsVolumeConfig.VolumeSizeInGB
    "cluster.instanceGroups[].ebsVolumeSizeGb": ApiBound("sagemaker", "ClusterEbsVolumeSizeInGB", 1, 16384),
    # RateBasedStatement.Limit
    "ingress.waf.rateLimit.limit": ApiBound("wafv2", "RateLimit", 10, 2_000_000_000),
}
"""Stack key -> the botocore shape it is sent as, with that shape's min and max."""


if __name__ == "__main__":
    raise SystemExit(
        "components.config.api_bounds is a data module; python -m tools.cli.preview --stack <name> uses it"
    )
