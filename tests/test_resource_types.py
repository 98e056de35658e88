"""Resource-type records (policies/resource_types): one complete record for every type the reference stacks
register, strict files, and the joins the readers rely on (replacement rules, mock shapes, preflight look-ups)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from policies.readiness import load_readiness
from policies.replacement_rules import load_rules, rules_for
from policies.resource_types import RECORDS_DIR, RecordError, ResourceTypes, load_resource_types
from tests.conftest import ALL_STACKS
from tools.plan.harness import run_stack
from tools.plan.mocks import MOCK_SHAPES
from tools.preflight.checks import LOOKUPS
from tools.rehearse import expand

RECORDS = load_resource_types()


def _registered_keys() -> dict[str, set[str]]:
    """Record key -> the stacks that register it: every custom resource and remote component of every reference
    stack, remote components expanded into the children they create (the program's own ``hyperpod:`` components
    carry their knowledge in their files)."""
    readiness = load_readiness()
    found: dict[str, set[str]] = {}
    for stack in ALL_STACKS:
        for reg in expand(run_stack(stack).registrations):
            if not reg.custom and readiness.remote(reg.type) is None:
                continue
            found.setdefault(ResourceTypes.key_of(reg.type, reg.inputs), set()).add(stack)
    return found


@pytest.fixture(scope="module")
def registered() -> dict[str, set[str]]:
    return _registered_keys()


def test_every_stack_is_walked(registered: dict[str, set[str]]) -> None:
    assert set(ALL_STACKS) == {"dev", "staging", "prod", "attach", "global"}
    assert set().union(*registered.values()) == set(ALL_STACKS)
    assert "aws:elasticache/replicationGroup:ReplicationGroup" in registered  # prod's KV cache
    assert "aws:eks/cluster:Cluster" in registered  # a child of eks:index:Cluster


def test_every_registered_type_has_a_complete_record(registered: dict[str, set[str]]) -> None:
    """Complete: a record of its own; deploy actions or a reason it calls no AWS API (its own or its family's); its
    readiness stated (entries, or ``[]`` when a family's entry or the default applies); replacement rules joined."""
    missing: list[str] = []
    for key, stacks in sorted(registered.items()):
        where = f"{key} ({', '.join(sorted(stacks))})"
        record = RECORDS.types.get(key)
        if record is None:
            missing.append(f"{where}: no record")
            continue
        family_no_iam = any(r.no_iam for _, r in RECORDS.families(key))
        if record.deploy is None and record.no_iam is None and not family_no_iam:
            missing.append(f"{where}: neither `deploy` nor `no_iam` (its own or a family's)")
        if record.readiness is None:
            missing.append(f"{where}: no `readiness` (write [] when the default or a family's entry applies)")
        typ, _, kind = key.partition("#")
        if rules_for(typ, {"resourceKind": kind} if kind else None) is None:
            missing.append(f"{where}: no replacement rules under {record.replacement or key!r}")
    assert not missing, "incomplete resource-type records:\n" + "\n".join(missing)


def test_replacement_keys_name_generated_entries() -> None:
    generated = load_rules()["types"]
    for key, record in RECORDS.types.items():
        if record.replacement is not None:
            assert record.replacement in generated, f"{key}: replacement key {record.replacement!r} is not generated"


def test_mock_shapes_and_preflight_lookups_exist() -> None:
    for key, record in RECORDS.types.items():
        if record.mock is not None:
            assert record.mock.outputs in MOCK_SHAPES, f"{key}: no mock shape {record.mock.outputs!r}"
            assert (record.mock.outputs in ("ec2", "eip")) == bool(record.mock.id_prefix), key
        if record.preflight is not None:
            assert record.preflight.label in LOOKUPS, f"{key}: no preflight look-up {record.preflight.label!r}"
    labels = {r.preflight.label for r in RECORDS.types.values() if r.preflight is not None}
    assert labels == set(LOOKUPS), "a look-up no record uses, or a record without its look-up"


def test_physical_name_rules_have_their_providers_naming() -> None:
    for key, record in RECORDS.types.items():
        if record.physical_name is not None:
            assert key.split(":", 1)[0] in RECORDS.index.naming, key


def test_sources_start_with_a_defined_label_or_a_public_reference() -> None:
    """A source names a legend label (TF, CFN, DR, ...), a public document or this repository's file."""
    for key, record in RECORDS.types.items():
        texts = [record.deploy.source] if record.deploy else []
        texts += [e.source for e in record.readiness or []]
        texts += [w.source for e in record.readiness or [] for w in e.waits_for if w.source]
        for text in texts:
            head = text.split()[0].strip(":,;")
            assert "../shared" not in text, f"{key}: {text!r} cites a path outside the repository"
            if head.isupper() and head not in {"AWS", "EKS", "EC2", "HPCLI@0986f2cc"}:
                assert head in RECORDS.index.sources, f"{key}: source label {head!r} is not in index.yaml sources"


def test_dynamic_entries_match_their_resource_kind_only() -> None:
    readiness = load_readiness()
    wait = readiness.entry_for("pulumi-python:dynamic:Resource", {"resourceKind": "hyperpod:HyperPodNodeWait"})
    assert wait.label == "HyperPod node wait (dynamic provider)"
    deep = readiness.entry_for(
        "pulumi-python:dynamic:Resource", {"resourceKind": "hyperpod:HyperPodNodeWait", "deepHealthChecks": ["p5"]}
    )
    assert deep.program_create_timeout_minutes == 90  # the first match: the entry for deep health checks
    other = readiness.entry_for("pulumi-python:dynamic:Resource", {"resourceKind": "hyperpod:Unknown"})
    assert other is readiness.default


def test_families_come_after_exact_entries_most_specific_first() -> None:
    readiness = load_readiness()
    gateway = readiness.entry_for("kubernetes:inference.sagemaker.aws.amazon.com/v1alpha1:InferenceGatewayConfig", {})
    endpoint = readiness.entry_for("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig", {})
    anything = readiness.entry_for("kubernetes:apps/v1:Deployment", {})
    assert gateway.type == "kubernetes:inference.sagemaker.aws.amazon.com/v1alpha1:InferenceGatewayConfig"
    assert endpoint.type == "kubernetes:inference.sagemaker.aws.amazon.com/*"
    assert anything.type == "kubernetes:*"


# --- the loader refuses what it cannot read exactly ------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "records"
    shutil.copytree(RECORDS_DIR, target, ignore=shutil.ignore_patterns("*.py", "__pycache__", "*.md"))
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_an_entry_without_a_source_is_rejected(tmp_path: Path) -> None:
    records = _copy(tmp_path)
    _edit(
        records / "aws/elasticache.yaml",
        '        source: "DR row aws.elasticache.ReplicationGroup',
        '        label2: "DR row aws.elasticache.ReplicationGroup',
    )
    with pytest.raises(RecordError, match=r"elasticache\.yaml[\s\S]*readiness\.0\.source\n  Field required"):
        load_resource_types(records)


def test_a_misspelt_field_is_rejected_naming_the_file(tmp_path: Path) -> None:
    records = _copy(tmp_path)
    _edit(records / "aws/elasticache.yaml", "    mock: {outputs: replication_group}", "    mocks: {outputs: x}")
    with pytest.raises(RecordError, match=r"aws/elasticache\.yaml[\s\S]*mocks[\s\S]*Extra inputs are not permitted"):
        load_resource_types(records)


def test_a_type_written_twice_is_rejected(tmp_path: Path) -> None:
    records = _copy(tmp_path)
    (records / "aws/copy.yaml").write_text(
        'types:\n  "aws:elasticache/replicationGroup:ReplicationGroup":\n    readiness: []\n', encoding="utf-8"
    )
    with pytest.raises(RecordError, match=re.escape("written twice: aws/copy.yaml and aws/elasticache.yaml")):
        load_resource_types(records)


def test_deploy_and_no_iam_exclude_each_other(tmp_path: Path) -> None:
    records = _copy(tmp_path)
    _edit(
        records / "random.yaml",
        "    mock: {outputs: random_password}",
        '    mock: {outputs: random_password}\n    no_iam: "x"\n    deploy: {source: s, create: [], read: [], update: [], delete: [], delete_note: n}',
    )
    with pytest.raises(RecordError, match="exclude each other"):
        load_resource_types(records)
