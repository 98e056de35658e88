"""The policy records (``policies/records/<name>.yaml``): the pack, the config check, the generated files and the
samples all come from them.

Every record's samples are run through its validator: each disallowed sample is refused, each allowed one passes,
and every record has both kinds. The generated ``policies/config.<env>.json`` and the tables of
``docs/policies.md`` must be what ``python -m tools.generate.policy_docs`` writes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

from policies import records, rules
from policies.capacity_rules import CAPACITY_RULE_NAMES
from policies.engine import PolicyResult, enforcement_for, evaluate
from policies.pack import POLICIES
from policies.records import ENVIRONMENTS, RECORDS, PolicyRecord, RecordError, Samples, load
from tools.generate import policy_docs
from tools.plan.mocks import Registration

ROOT = Path(__file__).resolve().parents[1]
SAMPLED = [
    pytest.param(record, kind, i, sample, id=f"{record.name}-{kind}-{i}")
    for record in RECORDS.values()
    for kind in ("allowed", "disallowed")
    for i, sample in enumerate(getattr(record.samples(), kind))
]


# --- the records build the pack ----------------------------------------------------------------------------


def test_the_pack_is_the_records() -> None:
    assert [p.name for p in POLICIES] == list(RECORDS)
    for policy in POLICIES:
        record = RECORDS[policy.name]
        assert policy.description == record.description
        assert policy.severity is not None and policy.severity.value == record.severity
        assert policy.enforcement_level is not None
        assert policy.enforcement_level.value == record.pack_level("prod"), policy.name
        stack = record.kind in ("stack", "capacity") or (record.kind == "endpoint" and bool(record.needs))
        assert isinstance(policy, StackValidationPolicy if stack else ResourceValidationPolicy), policy.name


def test_every_record_names_public_sources_and_its_offline_outcome() -> None:
    """Sources a reader of the repository can follow: public URLs, no design notes beside the repository."""
    for record in RECORDS.values():
        assert record.checked_by.strip() and record.doc.strip(), record.name
        assert record.sources, f"{record.name}: no sources"
        for text in (record.description, record.doc, record.checked_by):
            for private in ("../shared", "seed", "anchors", "operator-facts", "deploy-readiness"):
                assert private not in text, (record.name, private)


def test_a_capacity_record_has_one_level_everywhere(tmp_path: Path) -> None:
    """The capacity plan's findings carry one level, so a capacity record cannot relax it in one environment."""
    for name in CAPACITY_RULE_NAMES:
        assert len(set(RECORDS[name].levels.values())) == 1, name
    data = RECORDS["endpoint-pod-fits-node"].model_dump(mode="json", exclude_defaults=True)
    data["levels"] = {"dev": "advisory", "staging": "mandatory", "prod": "mandatory"}
    (tmp_path / "endpoint-pod-fits-node.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(RecordError, match="the same in every environment"):
        load(tmp_path)


def test_the_endpoint_rules_are_the_endpoint_records() -> None:
    assert list(rules.RULES) == [r.name for r in RECORDS.values() if r.kind == "endpoint"]
    for name, rule in rules.RULES.items():
        assert rule.fn is RECORDS[name].function()
        assert rule.enforcement == RECORDS[name].levels


def test_only_the_escalating_rule_reports_a_subset_of_its_levels() -> None:
    escalating = [r.name for r in RECORDS.values() if r.escalate is not None]
    assert escalating == ["image-compatible-with-operator"]
    record = RECORDS["image-compatible-with-operator"]
    assert record.pack_config("prod") == {
        "enforcementLevel": "mandatory",
        "environment": "prod",
        "reportLevels": ["mandatory"],
    }
    assert record.pack_config("dev") == {
        "enforcementLevel": "advisory",
        "environment": "dev",
        "reportLevels": ["mandatory", "advisory"],
    }


def test_a_waiver_is_written_into_the_config_and_fsbp_waivers_disable() -> None:
    backups = RECORDS["elasticache-automatic-backups"]
    assert backups.fsbp == "ElastiCache.1" and backups.waiver
    for env in ENVIRONMENTS:
        assert backups.pack_config(env) == {"enforcementLevel": "disabled", "waiver": backups.waiver}
    logging = RECORDS["s3-bucket-access-logging"].pack_config("dev")
    assert logging["exemptLogDestinations"] is True and "log bucket" in logging["waiver"]


# --- generated files ------------------------------------------------------------------------------------------


def test_generated_files_match_the_records() -> None:
    assert policy_docs.drifted(ROOT) == [], "run python -m tools.generate.policy_docs --write"


def test_the_generator_reports_drift(tmp_path: Path) -> None:
    for path, text in policy_docs.expected(ROOT).items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    assert policy_docs.drifted(tmp_path) == []
    prod = tmp_path / "policies" / "config.prod.json"
    prod.write_text(prod.read_text(encoding="utf-8").replace('"mandatory"', '"advisory"', 1), encoding="utf-8")
    doc = tmp_path / "docs" / "policies.md"
    doc.write_text(doc.read_text(encoding="utf-8").replace("| `redis-encryption` |", "| `redis-crypt` |"), "utf-8")
    assert policy_docs.drifted(tmp_path) == [Path("policies/config.prod.json"), Path("docs/policies.md")]


def test_docs_rows_are_the_records_in_both_tables() -> None:
    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    for record in RECORDS.values():
        assert policy_docs.row(record) in text, record.name
    assert "| `image-compatible-with-operator` |" in policy_docs.table("regional", RECORDS.values())
    assert "| mandatory (kvaware only) | advisory |" in policy_docs.row(RECORDS["image-compatible-with-operator"])
    assert "global-gateway-min-members" not in policy_docs.table("regional", RECORDS.values())
    assert "global-gateway-min-members" in policy_docs.table("global", RECORDS.values())


def test_a_docs_row_names_dev_and_staging_apart_when_their_levels_differ() -> None:
    """Hand mutation ``docs-outside-prod-shows-staging``: no record differs between dev and staging today, so the
    row of one that does is built here (one level per environment, written once in the record)."""
    base = RECORDS["alb-tls-policy-recommended"]
    split = base.model_copy(update={"levels": {"dev": "disabled", "staging": "advisory", "prod": "mandatory"}})
    assert "| mandatory | dev: disabled, staging: advisory |" in policy_docs.row(split)
    same = base.model_copy(update={"levels": {"dev": "advisory", "staging": "advisory", "prod": "mandatory"}})
    assert "| mandatory | advisory |" in policy_docs.row(same)


# --- the loader refuses a bad record ------------------------------------------------------------------------


def _write(folder: Path, file: str, **changes: Any) -> None:
    data = RECORDS["redis-encryption"].model_dump(mode="json", exclude_defaults=True)
    data.update(changes)
    data = {k: v for k, v in data.items() if v is not None}
    (folder / f"{file}.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")


def test_loader_reads_a_record_and_refuses_a_misspelt_field(tmp_path: Path) -> None:
    _write(tmp_path, "redis-encryption")
    assert list(load(tmp_path)) == ["redis-encryption"]
    with pytest.raises(RecordError, match="1 YAML documents; the record, then --- and its samples"):
        load(tmp_path)["redis-encryption"].samples(tmp_path)
    _write(tmp_path, "redis-encryption", severty="high")
    with pytest.raises(RecordError, match=r"(?s)redis-encryption.yaml: .*severty"):
        load(tmp_path)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"levels": {"dev": "advisory", "prod": "mandatory"}}, "no level for staging"),
        ({"levels": {"staging": "advisory", "prod": "mandatory"}}, "no level for dev"),  # record-level-missing-env
        ({"levels": {"dev": "advisory", "staging": "advisory", "prod": "strict"}}, "levels.prod"),
        ({"name": "redis-encryption-2"}, "not the file's name"),
        ({"sources": ["../shared/docs/operator-facts.md"]}, "not a public https URL"),
        ({"sources": ["http://docs.aws.amazon.com/x.html"]}, "not a public https URL"),  # record-http-source
        ({"needs": ["addon"]}, "only endpoint rules"),
        ({"samples": {"allowed": []}}, "samples"),  # samples go in the second document, after ---
    ],
)
def test_loader_refuses(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    _write(tmp_path, "redis-encryption", **changes)
    with pytest.raises(RecordError, match=message):
        load(tmp_path)


# --- samples -------------------------------------------------------------------------------------------------


def test_every_record_has_both_kinds_of_sample() -> None:
    """Both kinds, or (for disallowed) the reason no offline input can be refused: only one record has one."""
    samples = {name: record.samples() for name, record in RECORDS.items()}
    missing = [name for name, s in samples.items() if not s.allowed]
    missing += [name for name, s in samples.items() if not s.disallowed and not s.no_disallowed]
    assert missing == []
    assert [name for name, s in samples.items() if s.no_disallowed] == ["prerequisite-build-listed"]


def _context(sample: dict[str, Any]) -> rules.RuleContext:
    ctx = sample.get("context", {})
    types = ctx.get("instanceTypes")
    return rules.RuleContext(
        environment=ctx.get("environment", "prod"),
        addon_version=ctx.get("addonVersion", ""),
        instance_types=frozenset(types) if types is not None else None,
    )


def _registrations(sample: dict[str, Any]) -> list[Registration]:
    """A sample's resources as the mock monitor records them; ``dependsOn: {input: [resource names]}`` says which
    resource an input's value came from (property dependencies)."""
    urns = {r["name"]: f"urn:pulumi:sample::hyperpod-inference::{r['type']}::{r['name']}" for r in sample["resources"]}
    return [
        Registration(
            type=r["type"],
            name=r["name"],
            urn=urns[r["name"]],
            custom=True,
            parent=None,
            inputs=copy.deepcopy(r.get("inputs", {})),
            dependencies=[urns[n] for names in r.get("dependsOn", {}).values() for n in names],
            property_dependencies={k: [urns[n] for n in names] for k, names in r.get("dependsOn", {}).items()},
            protect=bool(r.get("protect", False)),
        )
        for r in sample["resources"]
    ]


def sample_violations(record: PolicyRecord, sample: dict[str, Any]) -> list[str]:
    """What the record's validator reports on one sample (every level: a waived policy still judges)."""
    if record.kind == "endpoint":
        return [str(v) for v in record.function()(copy.deepcopy(sample["resource"]), _context(sample))]
    policy = next(p for p in POLICIES if p.name == record.name)
    environment = sample.get("environment", "prod")
    config = {**record.pack_config(environment), **sample.get("config", {}), "enforcementLevel": "mandatory"}
    forced = {record.name: config}
    results: list[PolicyResult] = evaluate([policy], _registrations(sample), environment, pack_config=forced)
    assert enforcement_for(policy, forced)[0] == "mandatory"
    return [r.message for r in results]


@pytest.mark.parametrize(("record", "kind", "index", "sample"), SAMPLED)
def test_sample(record: PolicyRecord, kind: str, index: int, sample: dict[str, Any]) -> None:
    found = sample_violations(record, sample)
    if kind == "allowed":
        assert found == [], found
    else:
        assert found, f"{record.name}: disallowed sample {index} passed"
        if "expect" in sample:
            assert any(sample["expect"] in m for m in found), found


# --- the worked example of docs/contributing.md ------------------------------------------------------------


def test_the_contributing_example_is_a_working_rule_and_record() -> None:
    """The "Adding a policy" example: its function refuses its disallowed sample and passes its allowed one."""
    import re
    import textwrap

    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    section = text.split("## Adding a policy", 1)[1].split("\n## ", 1)[0]
    code = textwrap.dedent(re.findall(r"```python\n(.*?)```", section, re.S)[0])
    record_doc, samples_doc = yaml.safe_load_all(textwrap.dedent(re.findall(r"```yaml\n(.*?)```", section, re.S)[0]))
    namespace = dict(vars(rules))
    exec(code, namespace)
    record = PolicyRecord.model_validate(record_doc)
    assert record.name not in RECORDS  # an example, not a policy of the pack
    function = namespace[record.validator.split(":")[1]]
    samples = Samples.model_validate(samples_doc)
    for sample in samples.allowed:
        assert function(sample["resource"], _context(sample)) == []
    for sample in samples.disallowed:
        assert any(sample["expect"] in v for v in function(sample["resource"], _context(sample)))


def test_is_mandatory_reads_the_record() -> None:
    """What a config-time check of a pack rule asks instead of hard-coding an environment."""
    assert records.is_mandatory("alb-tls-policy-recommended", "prod")
    assert not records.is_mandatory("alb-tls-policy-recommended", "staging")
    assert not records.is_mandatory("alb-tls-policy-recommended", "qa")
    assert records.is_mandatory("image-compatible-with-operator", "prod")  # escalates kvaware endpoints there
    assert not records.is_mandatory("elasticache-automatic-backups", "prod")  # waived
