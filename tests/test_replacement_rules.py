"""The replacement-rule data: current with its generator, and covering every type the program can register."""

from __future__ import annotations

import ast
import importlib
import os
from pathlib import Path

import pulumi
import pytest

from policies.replacement_rules import RULES_FILE, load_rules, rules_for
from tests.conftest import ALL_STACKS
from tools.harness import ROOT, run_stack
from tools.replacement_rules import generate, parse_go_schema, sdk_input_names

# Types other branches add at integration (notes/parallel-work.md): their rules are here already.
PLANNED_TYPES = (
    "aws:ec2/route:Route",
    "aws:ec2/vpcEndpoint:VpcEndpoint",
    "aws:elasticache/user:User",
    "aws:elasticache/userGroup:UserGroup",
    "kubernetes:rbac.authorization.k8s.io/v1:Role",
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
    "kubernetes:core/v1:Secret",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
)


def test_the_data_file_is_what_the_generator_writes() -> None:
    import json

    shared = ROOT.parent / "shared" / "crds"
    data = generate(json.loads(RULES_FILE.read_text(encoding="utf-8")), crds_dir=shared if shared.is_dir() else None)
    assert json.dumps(data, indent=2, sort_keys=True) + "\n" == RULES_FILE.read_text(encoding="utf-8"), (
        "stale: run python -m tools.replacement_rules --write"
    )


@pytest.mark.skipif(
    not os.environ.get("HPI_TF_AWS_SOURCE"), reason="HPI_TF_AWS_SOURCE (a terraform-provider-aws checkout) not set"
)
def test_terraform_facts_match_the_go_source() -> None:
    """With a checkout of terraform-provider-aws, every read entry's ForceNew list is re-read from its Go file."""
    from tools.replacement_rules import reread_terraform

    source = Path(os.environ["HPI_TF_AWS_SOURCE"])
    for token, entry in load_rules()["types"].items():
        tf = entry.get("tf")
        if tf and tf.get("read"):
            assert sorted(reread_terraform(tf, source)["forceNew"]) == sorted(tf["forceNew"]), token


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_registered_type_has_rules(stack: str) -> None:
    run = run_stack(stack)
    assert run.registrations, stack
    missing = sorted({r.type for r in run.registrations if rules_for(r.type, r.inputs) is None})
    assert missing == []


def _constructed_sdk_types() -> set[str]:
    """Type tokens of every SDK resource class the components construct (a static scan of components/)."""
    aliases = {"aws": "pulumi_aws", "aws_native": "pulumi_aws_native", "k8s": "pulumi_kubernetes"}
    aliases |= {"eks": "pulumi_eks", "random": "pulumi_random", "sagemaker": "pulumi_aws_native.sagemaker"}
    found: set[str] = set()
    for path in sorted((ROOT / "components").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            parts: list[str] = []
            cur: ast.expr = node.func
            while isinstance(cur, ast.Attribute):
                parts.insert(0, cur.attr)
                cur = cur.value
            if not isinstance(cur, ast.Name) or cur.id not in aliases or not parts[-1][:1].isupper():
                continue
            module = importlib.import_module(".".join([aliases[cur.id], *parts[:-1]]))
            cls = getattr(module, parts[-1], None)
            token = getattr(cls, "pulumi_type", None)
            if isinstance(cls, type) and issubclass(cls, pulumi.Resource) and isinstance(token, str):
                found.add(token)
    return found


def test_every_constructed_type_and_every_planned_type_has_rules() -> None:
    types = _constructed_sdk_types()
    assert "aws:ec2/subnet:Subnet" in types and "eks:index:Cluster" in types, "the scan found the components"
    missing = sorted(t for t in {*types, *PLANNED_TYPES} if rules_for(t) is None)
    assert missing == []
    assert all(rules_for(t) is not None for t in PLANNED_TYPES)


def test_a_type_without_rules_is_reported() -> None:
    assert rules_for("aws:made/up:Thing") is None
    assert rules_for("pulumi-python:dynamic:Resource", {"resourceKind": "hyperpod:Unknown"}) is None


def test_terraform_entries_name_their_source_and_sdk_inputs() -> None:
    for token, entry in load_rules()["types"].items():
        if entry.get("owner") != "terraform-provider-aws":
            continue
        tf = entry["tf"]
        assert tf["path"].startswith("internal/service/") and tf["resource"].startswith("aws_"), token
        if tf["read"]:
            assert len(tf["commit"]) == 40 and tf["commit"] in entry["source"], token
            names = sdk_input_names(token)
            assert names and {p.split(".")[0] for p in entry["replace"]} <= names, token
        else:
            assert entry["other"] == "may-replace", token


def test_literal_rules() -> None:
    subnet = rules_for("aws:ec2/subnet:Subnet")
    assert subnet is not None
    assert subnet.classify(("cidrBlock",))[0] == "replace"
    assert subnet.classify(("mapPublicIpOnLaunch",))[0] == "update"
    assert subnet.classify(("ipv6CidrBlock",))[0] == "may-replace"
    hp = rules_for("aws-native:sagemaker:Cluster")
    assert hp is not None
    assert hp.classify(("vpcConfig", "subnets", 0))[0] == "replace"
    assert hp.classify(("instanceGroups", 0, "overrideVpcConfig", "subnets", 0))[0] == "update"
    tgb = rules_for("kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding")
    assert tgb is not None and tgb.classify(("spec", "targetGroupARN"))[0] == "replace"
    assert tgb.classify(("spec", "serviceRef", "port"))[0] == "update"
    gw = rules_for("pulumi-python:dynamic:Resource", {"resourceKind": "hyperpod:GlobalInferenceGateway"})
    assert gw is not None
    assert [gw.classify((k,))[0] for k in ("name", "routingWeights", "accountId")] == ["replace", "update", "ignore"]
    dashboard = rules_for("aws:cloudwatch/dashboard:Dashboard")
    assert dashboard is not None and dashboard.classify(("dashboardBody",))[0] == "may-replace"


GO_SCHEMA = """
func resourceThing() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			"plain": {
				Type:     schema.TypeString,
				Optional: true,
			},
			names.AttrName: {
				Type:     schema.TypeString,
				Required: true,
				ForceNew: true,
			},
			"block": {
				Type: schema.TypeList,
				Elem: &schema.Resource{
					Schema: map[string]*schema.Schema{
						"inner_id": {
							Type:     schema.TypeString,
							ForceNew: true,
						},
						"inner_free": {Type: schema.TypeString, Optional: true},
					},
				},
			},
			names.AttrTags: tftags.TagsSchema(),
		},
	}
}
"""


def test_go_schema_parser_finds_force_new_at_every_depth() -> None:
    assert parse_go_schema(GO_SCHEMA, {"AttrName": "name", "AttrTags": "tags"}) == ["block.inner_id", "name"]
