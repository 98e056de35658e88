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
from tools.generate.replacement_rules import generate, parse_go_schema, sdk_input_names, sdk_path
from tools.plan.harness import ROOT, run_stack

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
    data = generate(crds_dir=shared if shared.is_dir() else None)
    assert json.dumps(data, indent=2, sort_keys=True) + "\n" == RULES_FILE.read_text(encoding="utf-8"), (
        "stale: run python -m tools.generate.replacement_rules --write"
    )


@pytest.mark.skipif(
    not (os.environ.get("HPI_TF_AWS_SOURCE") and os.environ.get("HPI_TF_AWS_COMMIT")),
    reason="HPI_TF_AWS_SOURCE (a terraform-provider-aws tree) and HPI_TF_AWS_COMMIT (its commit) not set",
)
def test_terraform_facts_match_the_go_source() -> None:
    """With a terraform-provider-aws tree, every entry read at its commit is re-read from its Go file by the
    generator's parser and must come out as recorded (e.g. the tree of tag v5.1.0, 985efd5d)."""
    from tools.generate.replacement_rules import reread_terraform

    source, commit = Path(os.environ["HPI_TF_AWS_SOURCE"]), os.environ["HPI_TF_AWS_COMMIT"]
    compared = []
    for token, entry in load_rules()["types"].items():
        tf = entry.get("tf")
        if not (tf and tf.get("read") and tf.get("commit") == commit):
            continue
        again = reread_terraform(token, tf, source)
        assert sorted(again["forceNew"]) == sorted(tf["forceNew"]), token
        assert sorted(c["path"] for c in again["conditional"]) == sorted(c["path"] for c in tf["conditional"]), token
        assert sorted(again["notInCopy"]) == sorted(tf.get("notInCopy", [])), token
        compared.append(token)
    assert compared, f"no entry was read at {commit}"


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
            assert {m["path"].split(".")[0] for m in entry.get("mayReplace", [])} <= names, token
        else:
            assert entry["other"] == "may-replace", token


def test_every_pulumi_aws_type_is_read_from_its_go_file() -> None:
    unread = sorted(
        token
        for token, entry in load_rules()["types"].items()
        if entry.get("owner") == "terraform-provider-aws" and not entry["tf"]["read"]
    )
    assert unread == []
    assert len([e for e in load_rules()["types"].values() if e.get("owner") == "terraform-provider-aws"]) == 58


def test_sdk_names_walk_the_nested_args_and_the_plural_blocks() -> None:
    assert sdk_path("aws:lb/listener:Listener", "default_action.target_group_arn") == "defaultActions.targetGroupArn"
    assert sdk_path("aws:lb/loadBalancer:LoadBalancer", "subnet_mapping.subnet_id") == "subnetMappings.subnetId"
    assert sdk_path("aws:iam/openIdConnectProvider:OpenIdConnectProvider", "client_id_list") == "clientIdLists"
    assert sdk_path("aws:s3/bucket:Bucket", "no_such_attribute") is None
    # s3.BucketLoggingArgs is the nested type of Bucket.logging; the resource's own args are BucketLoggingInitArgs
    assert {"bucket", "targetBucket", "targetPrefix", "expectedBucketOwner"} <= (
        sdk_input_names("aws:s3/bucketLogging:BucketLogging") or set()
    )


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
    assert dashboard is not None
    assert dashboard.classify(("dashboardBody",))[0] == "update"
    assert dashboard.classify(("dashboardName",))[0] == "replace"
    role = rules_for("aws:iam/role:Role")
    assert role is not None
    assert [role.classify((k,))[0] for k in ("name", "path", "assumeRolePolicy", "tags", "inlinePolicies")] == [
        "replace",
        "replace",
        "update",
        "update",
        "update",
    ]
    listener = rules_for("aws:lb/listener:Listener")
    assert listener is not None
    assert listener.classify(("defaultActions", 0, "authenticateOidc", "clientId"))[0] == "update"
    assert listener.classify(("sslPolicy",))[0] == "update"
    assert listener.classify(("loadBalancerArn",))[0] == "replace"
    assert listener.classify(("mutualAuthentication", "mode"))[0] == "may-replace"
    bucket = rules_for("aws:s3/bucket:Bucket")
    assert bucket is not None
    assert [bucket.classify((k,))[0] for k in ("bucket", "objectLockEnabled", "bucketNamespace", "forceDestroy")] == [
        "replace",
        "replace",
        "may-replace",
        "update",
    ]
    lb = rules_for("aws:lb/loadBalancer:LoadBalancer")
    assert lb is not None
    assert [lb.classify((k,))[0] for k in ("customerOwnedIpv4Pool", "subnets", "idleTimeout")] == [
        "replace",
        "may-replace",
        "update",
    ]
    alarm = rules_for("aws:cloudwatch/metricAlarm:MetricAlarm")
    assert alarm is not None and alarm.classify(("name",))[0] == "replace"
    assert alarm.classify(("alarmActions",))[0] == "update"
    # every Region-aware pulumi-aws type replaces on a new region; IAM is global and has no region input
    assert bucket.classify(("region",))[0] == "replace"
    assert role.classify(("region",))[0] == "update"


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
    parsed = parse_go_schema(GO_SCHEMA, {"AttrName": "name", "AttrTags": "tags"})
    assert parsed == {
        "forceNew": ["block.inner_id", "name"],
        "conditional": [],
        "attributes": ["block", "name", "plain", "tags"],
    }


FIXTURES = Path(__file__).parent / "fixtures" / "terraform"


@pytest.mark.parametrize(
    ("fixture", "force_new", "conditional", "attributes"),
    [
        # SDKv2 ForceNew: true, with gofmt alignment, a comment holding a URL and a func literal in the schema
        ("cloudwatch_dashboard.go.txt", ["dashboard_name"], [], ["dashboard_arn", "dashboard_body", "dashboard_name"]),
        # plugin framework: stringplanmodifier.RequiresReplace() among other plan modifiers; blocks
        (
            "s3_bucket_lifecycle_configuration.go.txt",
            ["bucket", "expected_bucket_owner"],
            [],
            ["bucket", "expected_bucket_owner", "id", "rule", "transition_default_minimum_object_size"],
        ),
        # nested ForceNew, names.Attr* keys without attr_consts.go, a CustomizeDiff diff.ForceNew("...")
        (
            "ec2_vpc_endpoint.go.txt",
            ["dns_options.private_dns_preference", "service_name", "vpc_id"],
            ["private_dns_enabled"],
            ["dns_options", "policy", "private_dns_enabled", "service_name", "subnet_ids", "vpc_id"],
        ),
        # file constants as keys
        (
            "ec2_vpc_route.go.txt",
            ["destination_cidr_block", "destination_ipv6_cidr_block", "route_table_id"],
            [],
            ["destination_cidr_block", "destination_ipv6_cidr_block", "gateway_id", "route_table_id"],
        ),
        # ForceNew: false is not ForceNew; an excerpt cut inside a literal
        ("elbv2_listener_rule.go.txt", ["listener_arn"], [], ["listener_arn", "priority", "transform"]),
    ],
)
def test_go_schema_parser_on_real_provider_excerpts(fixture, force_new, conditional, attributes) -> None:
    text = (FIXTURES / fixture).read_text(encoding="utf-8")
    assert text.startswith("// hashicorp/terraform-provider-aws@"), "each excerpt names its source"
    parsed = parse_go_schema(text)
    assert parsed["forceNew"] == force_new
    assert [c["path"] for c in parsed["conditional"]] == conditional
    assert parsed["attributes"] == attributes


def test_go_schema_parser_conditional_forms() -> None:
    text = """
    CustomizeDiff: customdiff.Sequence(
        customdiff.ForceNewIfChange("alias", func(_ context.Context, old, new, meta any) bool { return true }),
    ),
    Schema: map[string]*schema.Schema{
        "alias": {Type: schema.TypeString, Optional: true},
        names.AttrTags: tftags.TagsSchemaForceNew(),
    },
    Attributes: map[string]schema.Attribute{
        "engine": schema.StringAttribute{
            PlanModifiers: []planmodifier.String{
                stringplanmodifier.RequiresReplaceIf(engineChanged, "", ""),
            },
        },
    },
    func (r *ruleResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
        resp.RequiresReplace = append(resp.RequiresReplace, path.Root("cidr_ipv4"))
    }
    """
    parsed = parse_go_schema(text, {"AttrTags": "tags"})
    assert parsed["forceNew"] == ["tags"]
    assert [(c["path"], c["why"]) for c in parsed["conditional"]] == [
        ("alias", "CustomizeDiff customdiff.ForceNewIfChange"),
        ("cidr_ipv4", "ModifyPlan sets RequiresReplace under a condition"),
        ("engine", "plan modifier RequiresReplaceIf"),
    ]
