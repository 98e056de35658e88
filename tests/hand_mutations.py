"""Replay the hand-made mutations that once survived the suite, and show that a test now kills each one.

    python -m tests.hand_mutations            # all of them
    python -m tests.hand_mutations alb-order  # one, by id

Each mutation is a realistic bug written as an exact text replacement in one source file. The tool copies
the tracked files into a temporary directory, applies one mutation there, runs the tests named for it and
expects them to FAIL (the mutant is killed). It never edits the working tree. Exit 0 when every mutant is
killed, 1 otherwise; a replacement whose text is no longer in the file is reported as stale (exit 1), so the
list cannot silently rot when the code changes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    id: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "alb-order",
        "policies/baselines.py",
        'key=lambda ia: (get(ia[1], "order", default=1e9), ia[0])',
        "key=lambda ia: ia[0]",
        ("tests/test_policies.py::test_alb_requires_authentication_follows_the_order_field_not_list_order",),
        "alb-requires-authentication trusts list order instead of the actions' order field",
    ),
    Mutation(
        "kv-cache-other-engine",
        "policies/rules.py",
        'if engine != "vllm" and _kv_cache_on(spec, ctx.addon_version):',
        'if engine == "sglang" and _kv_cache_on(spec, ctx.addon_version):',
        ("tests/test_rules.py::test_kv_cache_requires_vllm_every_engine",),
        "kv-cache-requires-vllm only catches sglang, not an `other` engine",
    ),
    Mutation(
        "router-metrics-and",
        "policies/rules.py",
        "if not _routing(spec)[0] and not _kv_cache_on(spec):",
        "if not _routing(spec)[0] or not _kv_cache_on(spec):",
        ("tests/test_rules.py::test_router_metrics_port_every_branch",),
        "the router-metrics port rule only judged when routing AND the KV cache are on",
    ),
    Mutation(
        "empty-instance-types",
        "policies/rules.py",
        "    if ctx.instance_types is None:\n        return []\n    have =",
        "    if not ctx.instance_types:\n        return []\n    have =",
        ("tests/test_rules.py::test_empty_instance_type_set_is_not_unknown",),
        "an empty set of instance groups treated like unknown groups",
    ),
    Mutation(
        "subnet-overlap",
        "components/config/network.py",
        "if len(blocks) < len(azs) + 1:",
        "if len(blocks) < len(azs):",
        ("tests/test_subnet_plan.py",),
        "plan_subnets lets the public block be the last private subnet",
    ),
    # --- issue 28: ordering edges a first `pulumi up` races on (tests/test_ordering.py derives them from the
    # `ordering:` rules of policies/readiness.yaml for every reference stack) ---
    Mutation(
        "cr-namespace-edge",
        "components/endpoints.py",
        "            if endpoint.namespace in self.namespaces:\n                depends.append(self.namespaces[endpoint.namespace])\n",
        "",
        ("tests/test_ordering.py::test_reference_stack_lacks_no_ordering_edge",),
        "an endpoint's custom resource no longer waits for its Namespace",
    ),
    Mutation(
        "hyperpod-inline-policy-edge",
        "components/hyperpod_cluster.py",
        "depends_on=[*objects, managed, inline],",
        "depends_on=[*objects, managed],",
        ("tests/test_ordering.py::test_reference_stack_lacks_no_ordering_edge",),
        "the HyperPod cluster no longer waits for its execution role's inline policy",
    ),
    Mutation(
        "hyperpod-lifecycle-edge",
        "components/hyperpod_cluster.py",
        "depends_on=[*objects, managed, inline],",
        "depends_on=[managed, inline],",
        ("tests/test_ordering.py::test_reference_stack_lacks_no_ordering_edge",),
        "the HyperPod cluster no longer waits for its lifecycle scripts (the S3 objects)",
    ),
    Mutation(
        "s3-csi-attachment-edge",
        "components/operator_prerequisites.py",
        "self._role_deps.setdefault(addon, []).extend([role, attachment])",
        "self._role_deps.setdefault(addon, []).extend([role])",
        ("tests/test_ordering.py::test_reference_stack_lacks_no_ordering_edge",),
        "the S3 CSI add-on no longer waits for its role's policy attachment (the ARN keeps only the role edge)",
    ),
    Mutation(
        "irsa-arn-before-attachments",
        "components/operator_iam.py",
        "pulumi.Output.all(role.arn, *[a.id for a in attachments])",
        "pulumi.Output.all(role.arn)",
        ("tests/test_ordering.py::test_helm_mode_controllers_wait_for_their_roles_attachments",),
        "the ALB controller / KEDA charts (helm mode) get their IRSA role's ARN before its attachments exist",
    ),
    # --- issue 28: branches no test exercised ---
    Mutation(
        "adopted-no-orchestrator",
        "components/existing_hyperpod_cluster.py",
        "is orchestrated by {actual or 'no EKS cluster'}, not by",
        "is orchestrated by {actual}, not by",
        ("tests/test_adoption.py::test_hyperpod_cluster_orchestrated_by_no_eks_cluster_is_a_config_error",),
        "an adopted HyperPod cluster orchestrated by no EKS cluster is reported as orchestrated by 'None'",
    ),
    Mutation(
        "preflight-no-orchestrator",
        "tools/preflight_checks.py",
        "it is orchestrated by {orchestrator or 'no EKS cluster'}, not {eks_arn}",
        "it is orchestrated by {orchestrator}, not {eks_arn}",
        ("tests/test_preflight.py::test_existing_hyperpod_orchestrated_by_no_eks_cluster",),
        "preflight reports a cluster without an EKS orchestrator as orchestrated by 'None'",
    ),
    Mutation(
        "scaling-group-current-count",
        "tools/preflight_checks.py",
        'target = real.get("TargetCount", real.get("CurrentCount"))',
        'target = real.get("CurrentCount", real.get("TargetCount"))',
        ("tests/test_preflight.py::test_scaling_group_is_judged_by_its_target_count",),
        "a scaling instance group is compared by its current count, not the count it is scaling to",
    ),
    Mutation(
        "gateway-changed-tag-value",
        "components/dynamic_provider.py",
        "changed = {k: v for k, v in sorted(new_tags.items()) if old_tags.get(k) != v}",
        "changed = {k: v for k, v in sorted(new_tags.items()) if k not in old_tags}",
        ("tests/test_global_gateway.py::test_update_changes_the_value_of_an_existing_tag",),
        "a changed value of an existing tag on the Global Inference Gateway is never sent",
    ),
    Mutation(
        "gateway-update-outputs",
        "components/global_inference_gateway.py",
        "return dynamic.UpdateResult(self._outs(news, gw))",
        "return dynamic.UpdateResult(self._outs(olds, gw))",
        ("tests/test_global_gateway.py::test_update_to_default_weights_sends_empty_weights",),
        "an update returns the old inputs as outputs (the default-weights test had no assertion)",
    ),
    Mutation(
        "zone-suffix-without-dot",
        "components/config/ingress.py",
        'return name == zone or name.endswith("." + zone)',
        "return name == zone or name.endswith(zone)",
        ("tests/test_ingress.py::test_a_name_ending_with_the_zone_name_is_not_in_the_zone",),
        "api.notexample.com counts as inside the hosted zone example.com",
    ),
    Mutation(
        "prod-public-access-cidrs",
        "components/eks_cluster.py",
        "    if is_prod:\n        return []\n    access = cluster.deployer_access",
        "    access = cluster.deployer_access",
        ("tests/test_cluster.py::test_public_access_cidrs_are_none_in_prod_whatever_the_config_lists",),
        "public_access_cidrs loses its prod guard (the EKS endpoint would open to the listed CIDRs in prod)",
    ),
)


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for name in files:
        src = ROOT / name
        if src.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def run(mutation: Mutation) -> str:
    """``killed``, ``survived`` or ``stale`` for one mutation."""
    with tempfile.TemporaryDirectory(prefix="hand-mutation-") as tmp:
        # the copy sits beside ../shared so tests that read the operator's CRDs find them as usual
        work = Path(tmp) / "repo"
        _copy_tree(work)
        shared = ROOT.parent / "shared"
        if shared.is_dir():
            (Path(tmp) / "shared").symlink_to(shared)
        vendored = ROOT / "vendor" / "crds"  # python -m tools.fetch_crds (gitignored, so not copied)
        if vendored.is_dir():
            (work / "vendor").mkdir(exist_ok=True)
            (work / "vendor" / "crds").symlink_to(vendored)
        path = work / mutation.file
        text = path.read_text(encoding="utf-8")
        if text.count(mutation.old) != 1:
            return "stale"
        path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *mutation.tests],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
        return "killed" if result.returncode == 1 else "survived"


def main(argv: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not argv or m.id in argv]
    failed = 0
    for mutation in chosen:
        outcome = run(mutation)
        failed += outcome != "killed"
        print(f"{outcome:9} {mutation.id}: {mutation.why} ({', '.join(mutation.tests)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
