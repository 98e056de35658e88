"""Resource-type records (policies/resource_types): one complete record for every type the reference stacks
register, strict files, and the joins the readers rely on (replacement rules, mock shapes, preflight look-ups)."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from policies.readiness import load_readiness
from policies.replacement_rules import load_rules, rules_for
from policies.resource_types import RECORDS_DIR, RecordError, ResourceTypes, load_resource_types
from tests.conftest import ALL_STACKS, cached_scope
from tools.generate.type_tokens import TOKENS_FILE, render
from tools.plan.harness import StackRun
from tools.plan.mocks import MOCK_SHAPES
from tools.preflight.checks import LOOKUPS
from tools.rehearse import expand

RECORDS = load_resource_types()


def _registered_keys(runs: dict[str, StackRun]) -> dict[str, set[str]]:
    """Record key -> the stacks that register it: every custom resource and remote component of every reference
    stack, remote components expanded into the children they create (the program's own ``hyperpod:`` components
    carry their knowledge in their files)."""
    readiness = load_readiness()
    found: dict[str, set[str]] = {}
    for stack in ALL_STACKS:
        for reg in expand(runs[stack].registrations):
            if not reg.custom and readiness.remote(reg.type) is None:
                continue
            found.setdefault(ResourceTypes.key_of(reg.type, reg.inputs), set()).add(stack)
    return found


@pytest.fixture(scope=cached_scope("module"))
def registered(every_stack_run: dict[str, StackRun]) -> dict[str, set[str]]:
    return _registered_keys(every_stack_run)


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
            if head.isupper() and head not in {"AWS", "EKS", "EC2", "HPCLI@0986f2cc"}:
                assert head in RECORDS.index.sources, f"{key}: source label {head!r} is not in index.yaml sources"


def test_sources_are_public() -> None:
    """No record (nor the cluster-level readiness) cites a document outside the repository or this project's issue
    tracker: a reader follows a URL, a repo@commit path or a file of this repository."""
    for path in [*sorted(RECORDS_DIR.rglob("*.yaml")), RECORDS_DIR.parent / "readiness.yaml"]:
        text = path.read_text(encoding="utf-8")
        for pattern in (r"\.\./shared", r"\bissue \d+", r"\b(?:DR|OPF)\b"):
            assert not re.search(pattern, text), f"{path.name}: {re.search(pattern, text)!r}"


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


def test_every_dynamic_entry_first_asks_for_its_resource_kind() -> None:
    """Hand mutation ``types-dynamic-kind-ignored``: a record keyed ``<dynamic>#<resourceKind>`` gives its entries
    the condition on that kind, so a drain's entry never times a GuardDuty cleanup or an unknown kind."""
    dynamic = [e for e in RECORDS.readiness_entries() if e.type == "pulumi-python:dynamic:Resource"]
    assert dynamic, "no dynamic resource has a readiness entry"
    kinds = {k.partition("#")[2] for k, r in RECORDS.types.items() if "#" in k and r.readiness}
    for entry in dynamic:
        first = entry.match[0]
        assert (first.input, first.op) == ("resourceKind", "eq") and first.value in kinds, entry.label


def test_families_of_a_key_most_specific_first_and_not_a_look_alike() -> None:
    """Hand mutation ``types-family-least-specific-first``: the operator's family wins over ``kubernetes:*``."""
    endpoint = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
    assert [p for p, _ in RECORDS.families(endpoint)][:2] == [
        "kubernetes:inference.sagemaker.aws.amazon.com/*",
        "kubernetes:*",
    ]
    assert [p for p, _ in RECORDS.families("kubernetes:apps/v1:Deployment")] == ["kubernetes:*"]
    assert RECORDS.families("aws:s3/bucket:Bucket") == []


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
        '        source: "TF-AWS website/docs/r/elasticache_replication_group.html.markdown (Timeouts)"',
        '        label2: "TF-AWS website/docs/r/elasticache_replication_group.html.markdown (Timeouts)"',
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


# --- a type token is written in its record, and generated from there ---------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
# Type tokens as the providers spell them: aws:<module>/<resource>:<Type> (data sources: :get<Name>),
# aws-native:<service>:<Type>, kubernetes:<group/version>:<Kind>, eks:index:<Type>, random:index/<r>:<Type>, and the
# dynamic resource's token.
TOKEN = re.compile(
    r"(?<![\w-])(?:aws:[a-z0-9]+/[A-Za-z0-9]+:[A-Za-z]\w*"
    r"|aws-native:[a-z0-9]+:[A-Za-z]\w*"
    r"|kubernetes:[a-z0-9.-]+(?:/[a-z0-9]+)?:[A-Z]\w*"
    r"|(?:eks|random):index(?:/[A-Za-z]+)?:[A-Z]\w*"
    r"|pulumi-python:dynamic:Resource)"
)
# Where a token may be written in program code: the components that register the types (they also look up their
# own readiness by it), the records' loader (the key of a dynamic resource) and the generated constants.
TOKEN_HOMES = ("components/*.py", "policies/resource_types/__init__.py", "policies/resource_types/tokens.py")


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module except docstrings (documentation may show a token as an example)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_no_type_token_outside_its_record_and_component() -> None:
    """Program code names a type by the constant its record gives it (policies/resource_types/tokens.py)."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("venv", "tests", "vendor") or any(rel.match(home) for home in TOKEN_HOMES):
            continue
        for line, text in _string_literals(path):
            found += [f"{rel}:{line}: {token}" for token in TOKEN.findall(text)]
    assert not found, "type tokens outside their records (name a `constant:` in the record instead):\n" + "\n".join(
        found
    )


def test_the_token_scan_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""A docstring may say aws:eks/addon:Addon."""\n'
        'A = "aws:eks/addon:Addon"\nB = f"x {A} kubernetes:core/v1:Namespace"\nC = "aws:kms:dsse"\n'
        'D = "eks:AssociateAccessPolicy/eks:DescribeAccessEntry"\nE = "aws-native:sagemaker:getCluster"\n',
        encoding="utf-8",
    )
    tokens = sorted(t for _, text in _string_literals(module) for t in TOKEN.findall(text))
    assert tokens == ["aws-native:sagemaker:getCluster", "aws:eks/addon:Addon", "kubernetes:core/v1:Namespace"]


def test_the_generated_tokens_are_current() -> None:
    assert TOKENS_FILE.read_text(encoding="utf-8") == render(RECORDS), (
        "stale: run python -m tools.generate.type_tokens --write"
    )


def test_every_constant_names_its_records_token() -> None:
    from policies.resource_types import tokens

    for key, record in [*RECORDS.types.items(), *RECORDS.invokes.items()]:
        if record.constant:
            assert getattr(tokens, record.constant) == key
