"""Prerequisite add-on builds per Kubernetes version (issue 33 item 8): three outcomes, in the config and the pack.

EKS refuses CreateAddon with a build DescribeAddonVersions does not list for the cluster's version. The facts come
from sourced rows (policies/compatibility.yaml ``prerequisiteBuilds``) or from what verify read in a live account
(``verified/<stack>.json`` ``addonBuilds``); with neither, the check is advisory.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from components.config import ConfigError
from components.config.loader import parse_stack_mapping
from components.config.operator import PREREQUISITES
from components.config.validation import run_advisories
from policies import addon_builds
from policies.addon_builds import Listing, verdict
from policies.engine import evaluate
from policies.pack import POLICIES
from tests.conftest import stack_mapping
from tests.verify_cluster import STAGING_PREREQUISITE_PINS, StubbedClients, context, staging
from tools.plan.harness import StackRun
from tools.verify import operator, report

FSX = "aws-fsx-csi-driver"
ROW = Listing(FSX, "1.35", ("v1.7.0-eksbuild.1", "v1.8.0-eksbuild.2"), "a DescribeAddonVersions answer (us-west-2)")


def test_the_pack_and_the_config_name_the_same_four_prerequisites() -> None:
    assert addon_builds.PREREQUISITE_ADDONS == (
        "aws-mountpoint-s3-csi-driver",
        "aws-fsx-csi-driver",
        "metrics-server",
        "cert-manager",
    )
    assert tuple(p.addon_name for p in PREREQUISITES) == addon_builds.PREREQUISITE_ADDONS


def test_a_listed_build_holds() -> None:
    found = verdict(FSX, "v1.7.0-eksbuild.1", "1.35", [ROW])
    assert found.outcome == "holds"
    assert found.text == (
        "aws-fsx-csi-driver v1.7.0-eksbuild.1 is listed for Kubernetes 1.35 (a DescribeAddonVersions answer (us-west-2))"
    )


def test_an_unlisted_build_is_refused_naming_the_listed_ones_newest_first() -> None:
    found = verdict(FSX, "v1.6.0-eksbuild.1", "1.35", [ROW])
    assert found.outcome == "refused"
    assert found.allowed == ("v1.8.0-eksbuild.2", "v1.7.0-eksbuild.1")
    assert found.text == (
        "EKS does not list aws-fsx-csi-driver v1.6.0-eksbuild.1 for Kubernetes 1.35 (a DescribeAddonVersions answer "
        "(us-west-2)); pin one it lists: v1.8.0-eksbuild.2, v1.7.0-eksbuild.1"
    )


@pytest.mark.parametrize(
    "listings",
    [
        [],
        [Listing(FSX, "1.33", ("v1.6.0-eksbuild.1",), "s")],  # another Kubernetes version
        [Listing("metrics-server", "1.35", ("v1.6.0-eksbuild.1",), "s")],  # another add-on
    ],
)
def test_no_row_for_the_add_on_and_version_is_unknown_not_a_pass(listings: list[Listing]) -> None:
    found = verdict(FSX, "v1.6.0-eksbuild.1", "1.35", listings)
    assert found.outcome == "unknown"
    assert "not known offline" in found.text


def test_a_build_any_source_lists_holds() -> None:
    other = Listing(FSX, "1.35", ("v1.6.0-eksbuild.1",), "observed 2026-12-04 by verify (dev, us-west-2)")
    assert verdict(FSX, "v1.6.0-eksbuild.1", "1.35", [ROW, other]).outcome == "holds"


def test_the_stored_table_has_no_row_without_a_source() -> None:
    for row in addon_builds.table_listings():
        assert row.source.strip() and row.builds, row


# --- the config check --------------------------------------------------------------------------------------


def _verified(folder: Path, stack: str, region: str, builds: dict[str, list[str]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "schema": "hyperpod-inference/verified/v1",
        "stack": stack,
        "observedOn": "2026-12-04",
        "addonBuilds": {"region": region, "kubernetesVersion": "1.35", "builds": builds},
    }
    (folder / f"{stack}.json").write_text(json.dumps(doc), encoding="utf-8")


@pytest.fixture
def verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "verified"
    monkeypatch.setenv("HPI_VERIFIED_DIR", str(folder))
    return folder


def _build_advisories(stack: str, mapping: dict[str, Any] | None = None) -> dict[str, str]:
    cfg = parse_stack_mapping(stack, mapping or stack_mapping(stack))
    return {a.path: a.render() for a in run_advisories(cfg) if a.rule == "prerequisite-build-listed-offline"}


def test_without_a_source_every_installed_prerequisite_is_advised_with_its_key(verified: Path) -> None:
    advised = _build_advisories("dev")
    assert sorted(advised) == [
        "operator.certManagerVersion",
        "operator.fsxCsiDriverVersion",
        "operator.metricsServerVersion",
        "operator.s3CsiDriverVersion",
    ]
    assert advised["operator.fsxCsiDriverVersion"] == (
        "hyperpod-inference:operator.fsxCsiDriverVersion: no source lists the aws-fsx-csi-driver builds EKS offers "
        "for Kubernetes 1.35 (policies/compatibility.yaml prerequisiteBuilds, or a verify run): whether EKS accepts "
        "v1.6.0-eksbuild.1 is not known offline [prerequisite-build-listed-offline; checked by python -m "
        "tools.preflight.regional (check add-on versions: aws eks describe-addon-versions --addon-name aws-fsx-csi-driver "
        "--kubernetes-version 1.35)]"
    )


def test_a_prerequisite_the_cluster_already_has_is_not_judged(verified: Path) -> None:
    # attach adopts its cluster and lists cert-manager and metrics-server in operator.existingPrerequisites
    advised = _build_advisories("attach")
    assert sorted(advised) == ["operator.fsxCsiDriverVersion", "operator.s3CsiDriverVersion"]
    assert "on the adopted cluster" in advised["operator.s3CsiDriverVersion"]
    assert "--kubernetes-version <the cluster's version>" in advised["operator.s3CsiDriverVersion"]


def test_an_observed_listing_refuses_an_unlisted_pin_naming_the_key_and_the_builds(verified: Path) -> None:
    _verified(verified, "staging", "us-west-2", {FSX: ["v1.7.0-eksbuild.1", "v1.8.0-eksbuild.2"]})
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping("dev", stack_mapping("dev"))
    assert [i.render() for i in err.value.issues] == [
        "hyperpod-inference:operator.fsxCsiDriverVersion: EKS does not list aws-fsx-csi-driver v1.6.0-eksbuild.1 "
        "for Kubernetes 1.35 (observed 2026-12-04 by verify (staging, us-west-2)); pin one it lists: "
        "v1.8.0-eksbuild.2, v1.7.0-eksbuild.1"
    ]


def test_an_observed_listing_that_has_the_pin_holds_and_drops_the_advisory(verified: Path) -> None:
    _verified(verified, "staging", "us-west-2", {FSX: ["v1.6.0-eksbuild.1", "v1.7.0-eksbuild.1"]})
    advised = _build_advisories("dev")
    assert "operator.fsxCsiDriverVersion" not in advised
    assert len(advised) == 3


def test_an_observation_from_another_region_says_nothing(verified: Path) -> None:
    _verified(verified, "eu", "eu-west-1", {FSX: ["v1.7.0-eksbuild.1"]})
    assert "operator.fsxCsiDriverVersion" in _build_advisories("dev")


def test_a_table_row_refuses_like_an_observation(verified: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(addon_builds, "table_listings", lambda: (ROW,))
    mapping = copy.deepcopy(stack_mapping("dev"))
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping("dev", mapping)
    assert [i.path for i in err.value.issues] == ["operator.fsxCsiDriverVersion"]
    mapping["hyperpod-inference:operator"]["fsxCsiDriverVersion"] = "v1.8.0-eksbuild.2"
    assert "operator.fsxCsiDriverVersion" not in _build_advisories("dev", mapping)


# --- the policy pack ---------------------------------------------------------------------------------------


def _pack(run: StackRun, env: str) -> list[tuple[str, str, str]]:
    assert len(run.registrations) > 20
    return [
        (r.policy, r.level, r.resource_name)
        for r in evaluate(POLICIES, run.registrations, env)
        if r.policy.startswith("prerequisite-build")
    ]


def test_the_pack_advises_each_prerequisite_add_on_of_a_stack_without_a_source(stack_runs: dict[str, StackRun]) -> None:
    assert sorted(_pack(stack_runs["prod"], "prod")) == [
        ("prerequisite-build-listed-offline", "advisory", "operator-prereqs-aws-fsx-csi-driver"),
        ("prerequisite-build-listed-offline", "advisory", "operator-prereqs-aws-mountpoint-s3-csi-driver"),
        ("prerequisite-build-listed-offline", "advisory", "operator-prereqs-cert-manager"),
        ("prerequisite-build-listed-offline", "advisory", "operator-prereqs-metrics-server"),
    ]


def test_the_pack_refuses_an_unlisted_pin_where_a_row_exists(
    stack_runs: dict[str, StackRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(addon_builds, "table_listings", lambda: (ROW,))
    found = _pack(stack_runs["prod"], "prod")
    assert ("prerequisite-build-listed", "mandatory", "operator-prereqs-aws-fsx-csi-driver") in found
    assert ("prerequisite-build-listed-offline", "advisory", "operator-prereqs-aws-fsx-csi-driver") not in found
    assert len(found) == 4


def test_the_pack_says_nothing_where_the_cluster_is_adopted(stack_runs: dict[str, StackRun]) -> None:
    # the adopted cluster's version is not in the plan; the config check and preflight speak for it
    assert _pack(stack_runs["attach"], "dev") == []


# --- verify: what EKS lists, read after up and recorded for the offline checks -----------------------------

STAGING_PINS = STAGING_PREREQUISITE_PINS  # staging's pins (stacks/Pulumi.staging.yaml, the defaults)


def _verify(listed: dict[str, list[str]], k8s: str | None = "1.35") -> tuple[list[Any], Any]:
    clients = StubbedClients()
    for addon, builds in listed.items():
        clients.queue(
            "eks",
            "describe_addon_versions",
            {"addons": [{"addonName": addon, "addonVersions": [{"addonVersion": b} for b in builds]}]},
            {"addonName": addon, "kubernetesVersion": "1.35"},
        )
    ctx = context(staging(), None, clients)  # type: ignore[arg-type]  # the check reads no Kubernetes API
    if k8s:
        ctx.facts["kubernetesVersion"] = k8s
    results = operator.prerequisite_builds(ctx)
    clients.assert_all_used()
    return results, ctx


def test_verify_passes_listed_pins_and_records_the_listing() -> None:
    listed = {a: [b, "v9.9.9-eksbuild.1"] for a, b in STAGING_PINS.items()}
    results, ctx = _verify(listed, k8s="v1.35.2-eks-3025e55")  # the API server's gitVersion, as verify reads it
    assert [(r.check, r.status) for r in results] == [("prerequisite-builds", "PASS")] * 4
    assert results[1].detail == (
        "aws-fsx-csi-driver v1.6.0-eksbuild.1 is listed for Kubernetes 1.35 (DescribeAddonVersions in eu-west-2)"
    )
    assert ctx.addon_builds == {"region": "eu-west-2", "kubernetesVersion": "1.35", "builds": listed}


def test_verify_fails_an_unlisted_pin_naming_the_key_and_a_version_with_no_build() -> None:
    listed = {a: [b] for a, b in STAGING_PINS.items()}
    listed["aws-fsx-csi-driver"] = ["v1.8.0-eksbuild.2"]
    listed["cert-manager"] = []
    results, _ = _verify(listed)
    assert [(r.status, r.fix) for r in results] == [
        ("PASS", ""),
        ("FAIL", "set operator.fsxCsiDriverVersion to one of the listed builds"),
        ("PASS", ""),
        ("FAIL", "install it another way and list it in operator.existingPrerequisites"),
    ]
    assert results[3].detail == "EKS lists no cert-manager build for Kubernetes 1.35 in eu-west-2"


def test_verify_skips_without_the_clusters_version() -> None:
    results, ctx = _verify({}, k8s=None)
    assert [(r.status, r.detail) for r in results] == [("SKIP", "the cluster's Kubernetes version was not read")]
    assert ctx.addon_builds == {}


def test_what_verify_records_is_what_the_offline_check_reads(verified: Path) -> None:
    listed = {a: ["v1.8.0-eksbuild.2"] for a in STAGING_PINS}
    _, ctx = _verify(listed)
    doc = report.observations(ctx, [])
    assert doc["addonBuilds"]["builds"]["aws-fsx-csi-driver"] == ["v1.8.0-eksbuild.2"]
    verified.mkdir(parents=True)
    (verified / "staging.json").write_text(json.dumps(doc, default=str), encoding="utf-8")
    mapping = stack_mapping("staging")
    with pytest.raises(ConfigError) as err:
        parse_stack_mapping("staging", mapping)
    assert sorted(i.path for i in err.value.issues) == [
        "operator.certManagerVersion",
        "operator.fsxCsiDriverVersion",
        "operator.metricsServerVersion",
        "operator.s3CsiDriverVersion",
    ]
