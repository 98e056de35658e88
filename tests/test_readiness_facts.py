"""Readiness facts (issue 23 item 9): each hand-written fact of policies/readiness.yaml as its source states it,
and what no source states marked as such. Expected values are literals taken from the sources named."""

from __future__ import annotations

from policies.readiness import Toleration, load_readiness
from tests.conftest import stack_mapping
from tools.rehearse import rehearse

HYPERPOD = "aws-native:sagemaker:Cluster"
IGWC = "kubernetes:inference.sagemaker.aws.amazon.com/v1alpha1:InferenceGatewayConfig"
IEC = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"


def test_health_monitoring_agent_tolerates_every_noschedule_and_noexecute_taint() -> None:
    """aws/sagemaker-hyperpod-cli@b01cf906 charts/health-monitoring-agent/templates/health-monitoring-agent.yaml
    lines 162-166: ``- effect: NoSchedule / operator: Exists`` and ``- effect: NoExecute / operator: Exists``."""
    pod = load_readiness().pod("health-monitoring-agent")
    assert pod.tolerations == [
        Toleration(operator="Exists", effect="NoSchedule"),
        Toleration(operator="Exists", effect="NoExecute"),
    ]
    assert "b01cf90676553a711ab1a8ac51422adbb09aef6b" in pod.source and "162-166" in pod.source
    tolerations = pod.effective_tolerations({})
    assert tolerations is not None
    for key, value, effect in [
        ("dedicated", "llm", "NoSchedule"),
        ("sagemaker.amazonaws.com/node-health-status", "UnschedulablePendingReplacement", "NoExecute"),
        ("nvidia.com/gpu", None, "NoSchedule"),
    ]:
        assert any(t.tolerates(key, value, effect) for t in tolerations), (key, effect)
    # PreferNoSchedule is not listed (it never keeps a pod off a node anyway).
    assert not any(t.tolerates("dedicated", "llm", "PreferNoSchedule") for t in tolerations)


def test_hyperpod_create_time_is_marked_third_party_only() -> None:
    entry = load_readiness().entry_for(HYPERPOD, {})
    assert entry.create_minutes == 25
    assert entry.create_minutes_third_party is True
    assert "third-party page only" in entry.source and "alchemy.run" in entry.source
    # Other typical times keep their own (non third-party) sources.
    assert load_readiness().entry_for("aws:eks/cluster:Cluster", {}).create_minutes_third_party is False


def test_rehearsal_says_which_typical_time_is_third_party(stack_runs) -> None:
    result = rehearse(stack_runs["prod"], mapping=stack_mapping("prod"))
    assert (
        "hyperpod-cluster: its typical create time (25 min) comes from a third-party page only, no AWS source "
        "gives one (policies/readiness.yaml)"
    ) in result.notes


def test_inference_gateway_config_has_no_public_crd_in_the_data() -> None:
    r = load_readiness()
    igwc = r.entry_for(IGWC, {})
    assert igwc.label == "InferenceGatewayConfig (managed Inference Gateway)"
    assert "no public CRD" in igwc.source
    webhook = [w for w in igwc.waits_for if w.kind == "webhook"]
    assert len(webhook) == 1 and webhook[0].detail.startswith("NO PUBLIC CRD: whether InferenceGatewayConfig uses")
    # The endpoint kinds keep the conversion webhook their public CRDs declare.
    iec = r.entry_for(IEC, {})
    assert iec.label == "inference operator custom resource"
    assert any(w.kind == "webhook" and "conversion strategy Webhook" in w.detail for w in iec.waits_for)
    # ... and a sourced status to wait for (issue 45 item 4); the gateway config has none of its own
    assert [w.expression for w in iec.ready_when] == [
        "jsonpath={.status.state}=DeploymentComplete",
        "jsonpath={.status.inferenceGateway.state}=Ready",
    ]
    assert igwc.ready_when == []
