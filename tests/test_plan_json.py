"""The plan speaks the engine's language: its URNs, and ``pulumi preview --json``'s exact shape (issue 35).

The URN rule is the engine's (pulumi/pulumi@0ac56e876614aedf12771d73ef7e80959b8a6fd4, tag v3.259.0:
pkg/resource/deploy/deployment.go ``generateURN``, sdk/go/common/resource/urn/urn.go ``New`` and urn_test.go);
the shape is read by one strict reader (tools/plan/reader.py) from a recorded real preview
(tests/fixtures/preview/pulumi-preview.json, written from the engine's structs: see its README) and from this
project's plans.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cached_scope
from tools.cli.preview import preview
from tools.plan.mocks import engine_urn, qualified_type
from tools.plan.reader import PreviewJSONError, read_preview
from tools.plan.writer import EXTENSION

RECORDED = Path(__file__).parent / "fixtures" / "preview" / "pulumi-preview.json"
P = "urn:pulumi:prod::hyperpod-inference::"


def _plan(stack: str, diff: Path | None = None) -> dict[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert preview(stack, as_json=True, diff=diff) in (0, 1)
    plan: dict[str, Any] = json.loads(buf.getvalue())
    return plan


@pytest.fixture(scope=cached_scope("module"))
def prod_plan() -> dict[str, Any]:
    return _plan("prod")


# --- URNs -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parent", "typ", "name", "expected"),
    [
        # urn_test.go TestURNRoundTripping / TestURNRoundTripping2 / TestIsValid's parentless and parented cases
        ("", "bang:boom/fizzle:MajorResource", "a-swell-resource", "bang:boom/fizzle:MajorResource::a-swell-resource"),
        (
            "urn:pulumi:s::p::parent$type::x",
            "bang:boom/fizzle:MajorResource",
            "a-swell-resource::with_awkward$names",
            "parent$type$bang:boom/fizzle:MajorResource::a-swell-resource::with_awkward$names",
        ),
        # generateURN: the root Stack's type is never part of the chain
        (
            "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s",
            "hyperpod:index:HyperPodInference",
            "hpi",
            "hyperpod:index:HyperPodInference::hpi",
        ),
        # ... and every other ancestor is, in order
        (
            "urn:pulumi:s::p::hyperpod:index:HyperPodInference$hyperpod:network:Network::network",
            "aws:ec2/vpc:Vpc",
            "network-vpc",
            "hyperpod:index:HyperPodInference$hyperpod:network:Network$aws:ec2/vpc:Vpc::network-vpc",
        ),
    ],
    ids=["no-parent", "parent-chain-awkward-name", "under-the-stack", "three-deep"],
)
def test_engine_urn_rule(parent: str, typ: str, name: str, expected: str) -> None:
    assert engine_urn("s", "p", parent, typ, name) == f"urn:pulumi:s::p::{expected}"


def test_qualified_type_of_a_name_with_colons() -> None:
    assert qualified_type("urn:pulumi:s::p::a:b:C$d:e:F::x::y") == "a:b:C$d:e:F"


@pytest.fixture(scope=cached_scope("module"))
def every_run(every_stack_run: dict[str, Any]) -> dict[str, Any]:
    return every_stack_run


def test_every_urn_of_every_reference_stack_is_the_engines(every_run) -> None:
    """Recomputed here from the parent links alone: the chain of every ancestor's own type, the Stack left out."""
    assert set(every_run) >= {"dev", "staging", "prod", "attach", "global"}
    for stack, run in every_run.items():
        by_urn = {r.urn: r for r in run.registrations}
        stack_urn = f"urn:pulumi:{stack}::hyperpod-inference::pulumi:pulumi:Stack::hyperpod-inference-{stack}"
        for reg in run.registrations:
            chain = [reg.type]
            parent = reg.parent
            while parent and parent != stack_urn:
                chain.insert(0, by_urn[parent].type)
                parent = by_urn[parent].parent
            assert parent == stack_urn, f"{reg.name}: its ancestors end at the root Stack"
            assert reg.urn == f"urn:pulumi:{stack}::hyperpod-inference::{'$'.join(chain)}::{reg.name}", stack
            assert "pulumi:pulumi:Stack$" not in reg.urn
            if reg.provider:  # an explicit provider reference names the provider's own (engine) URN
                assert reg.provider.rsplit("::", 1)[0] in by_urn, reg.name


def test_prod_urns_as_a_real_stack_names_them(prod_plan) -> None:
    urns = {s["urn"] for s in prod_plan["steps"]}
    assert f"{P}hyperpod:index:HyperPodInference$hyperpod:network:Network$aws:ec2/vpc:Vpc::network-vpc" in urns
    assert f"{P}hyperpod:index:HyperPodInference::hyperpod-inference" in urns
    k8s = [
        s
        for s in prod_plan["steps"]
        if s["urn"].endswith(
            "$kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig::endpoints-inference-qwen-sglang"
        )
    ]
    assert len(k8s) == 1
    provider = k8s[0]["provider"].rsplit("::", 1)[0]
    assert provider.startswith(f"{P}hyperpod:index:HyperPodInference$") and provider.endswith(
        "$pulumi:providers:kubernetes::eks-k8s"
    )
    assert provider in urns, "the explicit provider's step has the URN its resources reference"


# --- the JSON -------------------------------------------------------------------------------------------


def test_the_recorded_preview_reads() -> None:
    digest = read_preview(json.loads(RECORDED.read_text(encoding="utf-8")))
    assert [s.op for s in digest.steps] == ["same", "update", "replace", "create", "delete"]
    update = digest.steps[1]
    assert update.diff_reasons == ["addonVersion"] and update.replace_reasons == []
    assert update.detailed_diff == {"addonVersion": {"kind": "update", "inputDiff": False}}
    assert digest.steps[3].detailed_diff is None and digest.steps[3].old_state is None
    assert digest.duration_ns == 18234567890
    assert digest.change_summary["same"] == 203
    assert digest.diagnostics[0]["message"].startswith("warning: ")
    assert digest.extension is None


def test_the_project_plan_reads_with_the_same_reader(prod_plan) -> None:
    digest = read_preview(prod_plan)
    assert len(digest.steps) == len(prod_plan["steps"]) > 150
    assert {s.op for s in digest.steps} == {"create"}
    assert all(s.detailed_diff is None for s in digest.steps)
    assert digest.steps[0].new_state == {
        "type": "pulumi:pulumi:Stack",
        "urn": f"{P}pulumi:pulumi:Stack::hyperpod-inference-prod",
        "custom": False,
    }
    assert digest.duration_ns > 0
    assert digest.extension is not None and digest.extension["stack"] == "prod"
    assert set(prod_plan) - {EXTENSION} <= {"config", "steps", "diagnostics", "duration", "changeSummary"}


def test_a_diffed_plan_reads_and_maps_may_replace_to_replace(tmp_path, prod_plan) -> None:
    base = copy.deepcopy(prod_plan)
    (hp,) = [s for s in base["steps"] if s["urn"].endswith("aws-native:sagemaker:Cluster::hyperpod-cluster")]
    hp["newState"]["inputs"]["vpcConfig"]["subnets"][0] = "subnet-0aaaaaaaaaaaaaaa0"
    # the ALB's subnets: the ALB branch of the provider's CustomizeDiff was not read -> may-replace
    (alb,) = [s for s in base["steps"] if s["urn"].endswith("aws:lb/loadBalancer:LoadBalancer::front-door-alb")]
    alb["newState"]["inputs"]["subnets"] = ["subnet-0aaaaaaaaaaaaaaa0"]
    path = tmp_path / "base.json"
    path.write_text(json.dumps(base), encoding="utf-8")
    digest = read_preview(_plan("prod", diff=path))
    ops = {s.urn.rsplit("::", 1)[-1]: (s.op, s.engine_op) for s in digest.steps}
    assert ops["hyperpod-cluster"] == ("replace", "replace")
    assert ops["front-door-alb"] == ("may-replace", "replace")
    assert ops["hyperpod-inference-prod"] == ("same", "same")
    changed = [s for s in digest.steps if s.op not in ("same",)]
    assert all(s.detailed_diff for s in changed)


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (lambda d: d["steps"][3]["newState"].update(parent=""), "steps[3].newState.parent: an empty value"),
        (lambda d: d["steps"][3]["newState"].update(dependencies=[]), "steps[3].newState.dependencies: an empty"),
        (lambda d: d["steps"][3].pop("detailedDiff"), "steps[3]: missing field detailedDiff"),
        (lambda d: d["steps"][3].update(changes=[]), "steps[3]: unknown field(s) changes"),
        (lambda d: d["steps"][3].update(op="may-create"), "'may-create' is no engine op"),
        (lambda d: d.update(policyResults=[]), "PreviewDigest: unknown field(s) policyResults"),
        (lambda d: d["diagnostics"][0].update(prefix=""), "diagnostics[0].prefix: an empty value"),
        (lambda d: d["steps"][1]["detailedDiff"]["addonVersion"].update(kind="change"), "'change' is no DiffKind"),
        (lambda d: d["steps"][1]["newState"].update(urn=d["steps"][0]["urn"]), "is not the step's"),
        (lambda d: d["steps"][0]["newState"].pop("custom"), "missing field custom"),
    ],
    ids=["empty-parent", "empty-dependencies", "no-detailed-diff", "own-step-field", "unknown-op",
         "own-top-level-key", "empty-prefix", "unknown-diff-kind", "other-urn", "no-custom"],
)  # fmt: skip
def test_the_reader_refuses_what_the_engine_never_writes(edit, error) -> None:
    doc = json.loads(RECORDED.read_text(encoding="utf-8"))
    read_preview(copy.deepcopy(doc))  # as recorded: fine
    edit(doc)
    with pytest.raises(PreviewJSONError) as err:
        read_preview(doc)
    assert error in str(err.value)
