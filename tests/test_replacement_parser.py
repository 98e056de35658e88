"""The replacement-rule generator's Go-schema parser on a fixture of the three cases (issue 38, item 6):
``ForceNew`` attributes, conditional replacement in a ``CustomizeDiff`` (``customdiff.ForceNewIf``,
``customdiff.ForceNewIfChange``, ``d.ForceNew``), and both on one attribute (always replaced wins over "may
replace"). The fixture is made up in the provider's SDKv2 shape (tests/fixtures/terraform/made_up_customize_diff.go.txt);
the verbatim provider excerpts are in tests/test_replacement_rules.py. Then the same file through the generator's
re-read (:func:`tools.generate.replacement_rules.reread_terraform`) and entry builder, as policies/replacement_rules.json gets it.
"""

from __future__ import annotations

from pathlib import Path

from tools.generate.replacement_rules import NOT_IN_COPY, _terraform_entry, parse_go_schema, reread_terraform

FIXTURE = Path(__file__).parent / "fixtures" / "terraform" / "made_up_customize_diff.go.txt"


def test_force_new_conditional_and_both_at_once() -> None:
    parsed = parse_go_schema(FIXTURE.read_text(encoding="utf-8"), {"AttrName": "name", "AttrTags": "tags"})
    # ForceNew: true at the top and inside an Elem; ForceNew: false is not; kms_key_id is ForceNew AND in a
    # ForceNewIfChange: it is replaced, so it is not "conditional" as well
    assert parsed["forceNew"] == ["compute_config.pool_id", "kms_key_id", "name"]
    assert parsed["conditional"] == [
        {"path": "compute_config.node_role_arn", "why": "CustomizeDiff customdiff.ForceNewIfChange"},
        {"path": "encryption_config", "why": "CustomizeDiff customdiff.ForceNewIfChange"},
        {"path": "engine_version", "why": "CustomizeDiff customdiff.ForceNewIf"},
        {"path": "size", "why": "CustomizeDiff calls ForceNew under a condition"},
    ]
    assert parsed["attributes"] == [
        "compute_config",
        "encryption_config",
        "engine_version",
        "kms_key_id",
        "name",
        "size",
        "tags",
    ]


def test_without_the_customize_diff_nothing_is_conditional() -> None:
    """The other direction: the same schema without its CustomizeDiff has ForceNew attributes only."""
    text = FIXTURE.read_text(encoding="utf-8")
    start = text.index("\t\tCustomizeDiff:")
    schema_only = text[:start] + text[text.index("\t\tSchema:") :]
    schema_only = schema_only[: schema_only.index("func resourceWidgetCustomizeDiff")]
    parsed = parse_go_schema(schema_only, {"AttrName": "name"})
    assert parsed["forceNew"] == ["compute_config.pool_id", "kms_key_id", "name"]
    assert parsed["conditional"] == []


def test_the_generator_turns_the_fixture_into_sdk_rules(tmp_path: Path) -> None:
    """reread_terraform + _terraform_entry for aws_eks_cluster read from this fixture: the attributes the SDK has
    become ``replace`` / ``mayReplace`` under their pulumi-aws names; those it lacks are dropped."""
    (tmp_path / "internal" / "service" / "eks").mkdir(parents=True)
    (tmp_path / "internal" / "service" / "eks" / "cluster.go").write_text(
        FIXTURE.read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "names").mkdir()
    (tmp_path / "names" / "attr_consts_gen.go").write_text(
        'package names\n\nconst (\n\tAttrName = "name"\n\tAttrTags = "tags"\n)\n', encoding="utf-8"
    )
    tf = {
        "repo": "made-up/terraform-provider-aws",
        "path": "internal/service/eks/cluster.go",
        "resource": "aws_eks_cluster",
        "commit": "0" * 40,
    }
    reread = reread_terraform("aws:eks/cluster:Cluster", tf, tmp_path)
    assert reread["forceNew"] == ["name"]  # pool_id, kms_key_id: no such aws.eks.Cluster input
    assert reread["conditional"] == [
        {"path": "compute_config.node_role_arn", "why": "CustomizeDiff customdiff.ForceNewIfChange"},
        {"path": "encryption_config", "why": "CustomizeDiff customdiff.ForceNewIfChange"},
    ]
    entry = _terraform_entry("aws:eks/cluster:Cluster", reread)
    assert entry["replace"] == ["name", "region"]
    assert [m for m in entry["mayReplace"] if m["why"] != NOT_IN_COPY] == [
        {"path": "computeConfig.nodeRoleArn", "why": "CustomizeDiff customdiff.ForceNewIfChange"},
        {"path": "encryptionConfig", "why": "CustomizeDiff customdiff.ForceNewIfChange"},
    ]
    assert entry["other"] == "update"
