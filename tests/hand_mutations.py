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
PJ = "tests/test_plan_json.py"
PS = "tests/test_plan_state.py"
PP = "tests/test_plan_propagation.py"
TP = "tests/test_plan.py"
PR = "tests/test_policy_records.py"
RT = "tests/test_resource_types.py"
TO = "tests/test_ordering.py"


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
        "waits_for=[*objects, *role_policies])",
        "waits_for=[*objects, *role_policies[:1]])",
        ("tests/test_ordering.py::test_reference_stack_lacks_no_ordering_edge",),
        "the HyperPod cluster no longer waits for its execution role's inline policy",
    ),
    Mutation(
        "hyperpod-lifecycle-edge",
        "components/hyperpod_cluster.py",
        "waits_for=[*objects, *role_policies])",
        "waits_for=[*role_policies])",
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
        "tools/preflight/checks.py",
        "it is orchestrated by {orchestrator or 'no EKS cluster'}, not {eks_arn}",
        "it is orchestrated by {orchestrator}, not {eks_arn}",
        ("tests/test_preflight.py::test_existing_hyperpod_orchestrated_by_no_eks_cluster",),
        "preflight reports a cluster without an EKS orchestrator as orchestrated by 'None'",
    ),
    Mutation(
        "scaling-group-current-count",
        "tools/preflight/checks.py",
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
    Mutation(
        "verify-binding-generation",
        "tools/verify/traffic.py",
        "        if observed is None or observed != generation:",
        "        if observed is None:",
        ("tests/test_verify.py::test_binding_not_reconciled_fails",),
        "a TargetGroupBinding counts as bound once it has any status, even for an older generation",
    ),
    Mutation(
        "verify-initial-target-healthy",
        "tools/verify/traffic.py",
        '        healthy = [d for d in descs if (d.get("TargetHealth") or {}).get("State") == "healthy"]',
        '        healthy = [d for d in descs if (d.get("TargetHealth") or {}).get("State") != "unhealthy"]',
        ("tests/test_verify.py::test_a_target_still_initial_is_not_healthy",),
        "a target still `initial` (or `draining`) counts as healthy",
    ),
    Mutation(
        "verify-dualstack-alias",
        "tools/verify/traffic.py",
        '    if alias.removeprefix("dualstack.") != alb:',
        "    if alias != alb:",
        ("tests/test_verify.py::test_dns_alias_to_the_alb_holds",),
        "the `dualstack.` alias Route 53 records for an ALB reads as pointing elsewhere",
    ),
    Mutation(
        "verify-unauthenticated-any-4xx",
        "tools/verify/traffic.py",
        "        elif answer.status in expected:",
        "        elif answer.status >= 400:",
        ("tests/test_verify.py::test_unauthenticated_requests_are_refused_as_each_route_authenticates",),
        "a request without a token is judged by 'is it 4xx', not by the answer its route's authentication gives (a browser route's login redirect reads as let through)",
    ),
    Mutation(
        "verify-second-door-list-order",
        "tools/verify/second_door.py",
        '    ordered = sorted(actions, key=lambda a: a.get("Order", 50000))',
        "    ordered = list(actions)",
        ("tests/test_verify.py::test_a_load_balancer_that_authenticates_first_is_not_a_second_door",),
        "the second-door check trusts the list order of a rule's actions instead of their Order",
    ),
    Mutation(
        "verify-second-door-weighted-forward",
        "tools/verify/second_door.py",
        '        arns += [t["TargetGroupArn"] for t in (action.get("ForwardConfig") or {}).get("TargetGroups") or []]\n',
        "",
        ("tests/test_verify.py::test_a_weighted_forward_to_the_pods_is_a_second_door",),
        "a weighted forward (ForwardConfig.TargetGroups, no TargetGroupArn) is never followed to its targets",
    ),
    Mutation(
        "verify-allocatable-largest-node",
        "tools/verify/nodes.py",
        "            out[r] = min(out.get(r, v), v)",
        "            out[r] = max(out.get(r, v), v)",
        ("tests/test_verify.py::test_allocatable_below_the_model_fails_with_the_fix",),
        "a group's allocatable is its largest node's, so one small node passes",
    ),
    Mutation(
        "verify-running-counts-listed",
        "tools/verify/nodes.py",
        "        if len(running) < g.instance_count:",
        "        if len(mine) < g.instance_count:",
        ("tests/test_verify.py::test_nodes_not_yet_running_fail",),
        "a node listed but not Running counts toward the group's count",
    ),
    Mutation(
        "verify-event-log-planning",
        "tools/verify/report.py",
        '        if (pre := event.get("resourcePreEvent")) and not pre.get("planning"):',
        '        if pre := event.get("resourcePreEvent"):',
        ("tests/test_verify.py::test_event_log_parser_times_each_step_and_ignores_preview_steps",),
        "a preview step (planning) starts the create's clock",
    ),
    Mutation(
        "verify-settled-only-passing",
        "tools/verify/report.py",
        "    settled = sorted({i for r in results for i in r.settles})",
        '    settled = sorted({i for r in results if r.status == "PASS" for i in r.settles})',
        ("tests/test_verify.py::test_a_failing_row_settles_its_fact_too",),
        "a failing row settles nothing, though the fact it observed is known",
    ),
    Mutation(
        "verify-wait-never-retries",
        "tools/verify/__main__.py",
        '    while any(r.status == "FAIL" for c in retried for r in results[c.id]) and clock() < deadline:',
        '    while any(r.status == "FAIL" for c in retried for r in results[c.id]) and clock() > deadline:',
        ("tests/test_verify.py::test_wait_retries_the_traffic_checks_until_they_hold",),
        "--wait never retries",
    ),
    Mutation(
        "observed-service-any-name",
        "components/config/ingress.py",
        "    return seen if seen and (seen.namespace, seen.name) == (target.namespace, target.name) else None",
        "    return seen",
        ("tests/test_verify_cli.py::test_what_verify_saw_of_another_service_is_not_applied",),
        "what verify saw of one Service judges a route that now binds another",
    ),
    Mutation(
        "observed-allocatable-without-daemonsets",
        "policies/capacity_rules.py",
        "        allocatable={r: max(0, seen[r] - ds_total.get(r, 0)) for r in capacity},",
        "        allocatable={r: max(0, seen[r]) for r in capacity},",
        ("tests/test_verify_cli.py::test_the_allocatable_verify_saw_changes_the_capacity_check",),
        "the observed allocatable forgets the DaemonSets' requests",
    ),
    # --- issues 35/38: the URN generator, the engine's JSON shape, --diff-state, propagation ---
    Mutation(
        "urn-keeps-root-stack-type",
        "tools/plan/mocks.py",
        'qualified = f"{parent_type}${typ}" if parent_type and parent_type != ROOT_STACK_TYPE else typ',
        'qualified = f"{parent_type}${typ}" if parent_type else typ',
        (f"{PJ}::test_engine_urn_rule", f"{PJ}::test_every_urn_of_every_reference_stack_is_the_engines"),
        "URNs of top-level resources start with pulumi:pulumi:Stack$ (the SDK mock monitor's rule)",
    ),
    Mutation(
        "urn-parent-own-type-only",
        "tools/plan/mocks.py",
        'return parts[2] if len(parts) >= 3 else ""',
        'return parts[2].rsplit("$", 1)[-1] if len(parts) >= 3 else ""',
        (f"{PJ}::test_engine_urn_rule", f"{PJ}::test_every_urn_of_every_reference_stack_is_the_engines"),
        "a URN keeps only its parent's own type, not the whole chain",
    ),
    Mutation(
        "urn-default-provider-dots",
        "tools/plan/writer.py",
        "name = f\"default_{version.replace('.', '_')}\" if version else \"default\"",
        'name = f"default_{version}" if version else "default"',
        (f"{TP}::test_stack_step_first_and_default_providers_only_in_the_extension_block",),
        "a default provider named default_7.51.1 instead of the engine's default_7_51_1",
    ),
    Mutation(
        "json-empty-fields-written",
        "tools/plan/writer.py",
        'or v not in (None, "", False, [], {})}',
        "or v is not None}",
        (f"{PJ}::test_the_project_plan_reads_with_the_same_reader",),
        'ResourceV3\'s omitempty fields written empty (parent "", dependencies [])',
    ),
    Mutation(
        "json-detailed-diff-omitted",
        "tools/plan/writer.py",
        'out["detailedDiff"] = fields.get("detailedDiff") or None',
        'if fields.get("detailedDiff"):\n        out["detailedDiff"] = fields["detailedDiff"]',
        (f"{PJ}::test_the_project_plan_reads_with_the_same_reader",),
        "detailedDiff left out on creates (the engine always writes it, null)",
    ),
    Mutation(
        "json-no-root-stack-same",
        "tools/plan/diff.py",
        'steps = [s for s in shown if s["op"] != "same" or qualified_type(s["urn"]) == ROOT_STACK_TYPE]',
        'steps = [s for s in shown if s["op"] != "same"]',
        (f"{TP}::test_same_plan_diffs_to_nothing",),
        "the root Stack's same step dropped (the engine always shows it)",
    ),
    Mutation(
        "json-diagnostic-prefix",
        "tools/plan/writer.py",
        '"message": f"{severity}: {message}", "severity": severity}',
        '"message": message, "severity": severity}',
        ("tests/test_preview_cli.py::test_json_on_a_config_error_prints_json",),
        "a diagnostic's message without the prefix the engine writes into it",
    ),
    Mutation(
        "state-unknown-compared",
        "tools/plan/diff.py",
        "                if new == UNKNOWN_ID:\n                    continue",
        "                if new == UNKNOWN_ID and value_at(self.old_inputs, path) == UNKNOWN_ID:\n                    continue",
        (f"{PS}::test_the_deployed_stack_itself_is_all_same",),
        "a computed (unknown) value compared with the recorded one: every dependent of anything shows a change",
    ),
    Mutation(
        "state-secret-structure",
        "tools/plan/diff.py",
        "== SECRET and contains_secret(new):",
        "== SECRET and new == SECRET:",
        (f"{PS}::test_the_deployed_stack_itself_is_all_same",),
        "a recorded secret against a partly blinded new value (secret leaves inside) is a change",
    ),
    Mutation(
        "state-secret-printed",
        "tools/plan/state.py",
        "        if sig == SIG_SECRET:\n            return SECRET",
        '        if sig == SIG_SECRET:\n            return value.get("plaintext", SECRET)',
        (f"{PS}::test_a_changed_plain_value_recorded_as_a_secret_is_an_update",),
        "a --show-secrets export's plaintext printed in the diff",
    ),
    Mutation(
        "state-local-components-skipped",
        "tools/plan/state.py",
        'if not (s.get("newState") or {}).get("custom") and s.get("provider")',
        'if not (s.get("newState") or {}).get("custom")',
        (f"{PS}::test_one_addon_version_changed_is_exactly_one_update",),
        "every component counts as remote: nothing below HyperPodInference is compared",
    ),
    Mutation(
        "state-remote-children-deleted",
        "tools/plan/diff.py",
        'if s.get("op") != "delete" and s["urn"] not in skipped}',
        'if s.get("op") != "delete"}',
        (f"{PS}::test_the_deployed_stack_itself_is_all_same",),
        "a remote component's children in the state shown as deletes",
    ),
    Mutation(
        "state-resource-reference",
        "tools/plan/state.py",
        "        if sig == SIG_RESOURCE_REFERENCE:",
        '        if sig == SIG_SECRET + "x":',
        (f"{PS}::test_state_values_as_the_plan_writes_them",),
        "a resource reference in the state compared as its raw envelope",
    ),
    Mutation(
        "spread-not-from-created",
        "tools/plan/diff.py",
        'if dep_op not in ("create", "replace", "may-replace"):',
        'if dep_op not in ("replace", "may-replace"):',
        (f"{PP}::test_a_renamed_vpc_is_created_and_its_subnet_replaced",),
        "replacement does not spread from a dependency created anew (a renamed VPC)",
    ),
    Mutation(
        "spread-provider-only-replaced",
        "tools/plan/diff.py",
        'ops.get(provider_urn) in ("replace", "may-replace")',
        'ops.get(provider_urn) == "replace"',
        (f"{PP}::test_every_object_behind_a_provider_whose_cluster_may_be_replaced",),
        "objects behind a provider that may be replaced stay same (the prod guard relies on them)",
    ),
    Mutation(
        "state-pending-delete-joined",
        "tools/plan/state.py",
        '        if r.get("delete"):\n            continue',
        '        if r.get("delete") and False:\n            continue',
        (f"{PS}::test_a_copy_pending_deletion_is_not_the_live_resource",),
        "a resource pending deletion (delete: true) read as the live one (survived; test added)",
    ),
    # --- the governance and add-on checks of verify (after the merges) ---
    Mutation(
        "verify-labels-presence-only",
        "tools/verify/governance.py",
        "            if got.get(k) != v\n",
        "            if k not in got\n",
        ("tests/test_verify_governance.py::test_labels_the_operator_dropped_fail_and_settle",),
        "a Kueue label with another value (another queue or priority) counts as propagated",
    ),
    Mutation(
        "verify-controller-not-ready-passes",
        "tools/verify/governance.py",
        'status: Status = "PASS" if ready >= replicas else "FAIL"',
        'status: Status = "PASS"',
        ("tests/test_verify_governance.py::test_kueue_controller_recorded",),
        "a Kueue controller with no ready replica passes",
    ),
    Mutation(
        "verify-dynamo-any-deployment",
        "tools/verify/governance.py",
        "dynamo = [d for d in listed if labels(d).get(key) == value]",
        "dynamo = listed",
        ("tests/test_verify_governance.py::test_no_dynamo_operator_and_no_fluent_bit",),
        "every Deployment the list returns is taken for the Dynamo operator (the label selector trusted blindly)",
    ),
    Mutation(
        "verify-alb-logs-empty-passes",
        "tools/verify/report.py",
        'if objects.get("KeyCount") or objects.get("Contents"):',
        "if True:",
        ("tests/test_verify_governance.py::test_alb_access_logs_delivered_or_not_yet",),
        "an empty log prefix proves the bucket policy admits ELB's delivery",
    ),
    # --- issue 31: the deploy policy, judged by moto's IAM evaluation on the plan's own ARNs ---
    Mutation(
        "deployer-bucket-prefix-as-name-prefix",
        "policies/resource_types/aws/s3.yaml",
        "physical_name: {name: bucket, prefix: bucketPrefix, max: 63, lower: true, autonamed: true}\n    readiness:\n",
        "physical_name: {name: bucket, prefix: namePrefix, max: 63, lower: true, autonamed: true}\n    readiness:\n",
        (
            "tests/test_deployer_policy_eval.py::test_bucket_prefix_not_name_prefix_names_the_bucket",
            "tests/test_deployer_policy_eval.py::test_prod_bucket_names_are_the_prefixes_the_program_gives",
        ),
        "S3's bucketPrefix read as namePrefix (last round's bug): the moto evaluation on the mocks' ARNs alone lets "
        "it through (the mocks name buckets by the same table); the literal names kill it",
    ),
    Mutation(
        "deployer-passrole-any-service",
        "tools/cli/deployer_policy.py",
        'if action == "iam:PassRole" and self.passed_to:',
        'if action == "iam:PassRole" and False:',
        ("tests/test_deployer_policy_eval.py::test_each_role_can_be_passed_only_to_the_service_that_trusts_it",),
        "iam:PassRole without iam:PassedToService",
    ),
    Mutation(
        "deployer-boundary-not-required",
        "tools/cli/deployer_policy.py",
        "        if action in self.table.boundary_actions:\n",
        "        if action in () and self.table.boundary_actions:\n",
        (
            "tests/test_deployer_policy_eval.py::test_roles_only_with_the_boundary_and_service_linked_roles_only_for_the_stacks_services",
        ),
        "iam:CreateRole/PutRolePolicy allowed without the permissions boundary",
    ),
    Mutation(
        "deployer-quota-any-eks-cluster",
        "policies/resource_types/pulumi/dynamic.yaml",
        '"arn:{partition}:eks:{region}:{account}:cluster/{eks_cluster}"}\n        # cluster-scheduler-config',
        '"arn:{partition}:eks:{region}:{account}:cluster/*"}\n        # cluster-scheduler-config',
        (
            "tests/test_deployer_policy_eval.py::test_another_stacks_buckets_roles_policies_clusters_and_keys_are_denied",
        ),
        "the scheduler config's EKS actions on every cluster of the region (staging's role could delete dev's)",
    ),
    # --- issue 46: the deploy role has no escalation path ---
    Mutation(
        "deployer-attach-any-policy",
        "tools/cli/deployer_policy.py",
        '                cond["ArnEquals"] = {"iam:PolicyARN": attachable}\n',
        "                pass\n",
        ("tests/test_deploy_role_escalation.py::test_escalation_probes_fail",),
        "iam:AttachRolePolicy without iam:PolicyARN: AdministratorAccess (or the boundary itself) attaches",
    ),
    Mutation(
        "boundary-allows-assume-role",
        "tools/cli/deployer_policy.py",
        '    "sts:AssumeRole",\n    "sts:GetFederationToken",\n',
        '    "sts:GetFederationToken",\n',
        ("tests/test_deploy_role_escalation.py::test_pmapper_finds_no_escalation_path",),
        "a stack role (AWS managed policies count as Allow *) may assume the account's administrator role",
    ),
    Mutation(
        "deployer-claims-untagged-keys",
        "tools/cli/deployer_policy.py",
        "    if on_tagged:\n",
        "    if False:\n",
        ("tests/test_deploy_role_escalation.py::test_escalation_probes_fail",),
        "an untagged key or cluster of the account is reachable through the tag-scoped ARN patterns",
    ),
    # --- issues 34/38: the operator 3.4-3.7 overlays and their release gating ---
    Mutation(
        "overlay-inferred-mapping-trusted",
        "policies/crd_overlays.py",
        "    if release.operator_version_inferred and o.operator > _documented_operator():\n        return None\n",
        "",
        ("tests/test_crd_overlays.py::test_a_new_field_is_accepted_or_advised_where_the_pin_may_have_it",),
        "an inferred add-on -> operator mapping is trusted: a later field passes instead of being advised",
    ),
    Mutation(
        "overlay-gate-off-by-one",
        "policies/crd_overlays.py",
        "    return release.operator >= o.operator\n",
        "    return release.operator >= o.operator[:1]\n",
        ("tests/test_crd_overlays.py::test_a_new_field_is_refused_on_an_older_operator_naming_the_release",),
        "release gating compares only the major version (3.3 has every 3.x field)",
    ),
    Mutation(
        "overlay-null-counts-as-set",
        "policies/crd_overlays.py",
        "        if found and value is not None:\n            out.append((o, f))",
        "        if found:\n            out.append((o, f))",
        ("tests/test_crd_overlays.py::test_a_field_written_as_null_is_not_set",),
        "a field written as null counts as set (survived the existing tests; test added)",
    ),
    Mutation(
        "overlay-minimum-addon-ignored",
        "policies/crd_overlays.py",
        "    if f.minimum_addon is not None and _addon_index(addon_version) >= _addon_index(f.minimum_addon):",
        "    if False:",
        ("tests/test_crd_overlays.py::test_the_gateway_opt_in_holds_on_the_add_on_d4_names_without_an_advisory",),
        "the add-on builds a source names for a field (D4: inferenceGateway) are ignored: prod's gateway opt-in is advised",
    ),
    Mutation(
        "destroy-wait-empty-chain-changes",
        "components/destroy_waits.py",
        "changes=any((olds.get(k) or None) != (news.get(k) or None) for k in keys)",
        "changes=any(olds.get(k) != news.get(k) for k in keys)",
        ("tests/test_destroy_waits.py::test_an_empty_credential_value_is_no_change_but_a_real_one_updates_in_place",),
        "a state written before the chain inputs existed shows an update of both destroy waits on the next preview",
    ),
    Mutation(
        "addon-build-unknown-passes",
        "policies/addon_builds.py",
        '    if not rows:\n        return BuildVerdict(\n            "unknown",',
        '    if not rows:\n        return BuildVerdict(\n            "holds",',
        (
            "tests/test_addon_builds.py::test_no_row_for_the_add_on_and_version_is_unknown_not_a_pass",
            "tests/test_addon_builds.py::test_without_a_source_every_installed_prerequisite_is_advised_with_its_key",
        ),
        "a Kubernetes version no source lists builds for is judged as holding (unknown turned into ok)",
    ),
    Mutation(
        "addon-build-any-region",
        "components/config/observed.py",
        "if seen is None or seen.region != region:",
        "if seen is None:",
        ("tests/test_addon_builds.py::test_an_observation_from_another_region_says_nothing",),
        "a listing verify read in another region judges this stack's pins",
    ),
    Mutation(
        "addon-build-gitversion-unparsed",
        "tools/verify/operator.py",
        "    k8s = minor.group(1)",
        '    k8s = str(ctx.facts.get("kubernetesVersion"))',
        ("tests/test_addon_builds.py::test_verify_passes_listed_pins_and_records_the_listing",),
        "verify asks EKS for the API server's gitVersion (v1.34.2-eks-...) instead of the minor it lists builds for",
    ),
    Mutation(
        "default-provider-unversioned-only",
        "tools/plan/writer.py",
        'and logical(urn).startswith("default")',
        'and logical(urn) == "default"',
        ("tests/test_plan_default_providers.py::test_a_default_provider_version_bump_changes_no_shown_step",),
        "only an unversioned `default` provider is internal: a versioned one (default_7_51_1) shows as a step",
    ),
    Mutation(
        "redis-replicas-threshold-on-default",
        "components/config/kvcache.py",
        "if kv.creates_redis and redis.replicas < 1:",
        "if kv.creates_redis and redis.replicas < 2:",
        ("tests/test_defaults_at_thresholds.py::test_prod_redis_with_the_default_replica_count_is_valid",),
        "prod's Redis replica floor moved by one: the default (1) sits on the threshold and is refused",
    ),
    Mutation(
        "vpc-endpoints-default-ignores-adoption",
        "components/config/vpc_endpoints.py",
        "else (cfg.is_prod and cfg.network.existing is None)",
        "else cfg.is_prod",
        ("tests/test_adoption_matrix.py::test_adopted_layer_builds_in_every_environment",),
        "prod creates interface endpoints in an adopted VPC too (its owner's endpoints then collide on private DNS)",
    ),
    # --- issue 49, round 5: a fresh hand-made set on the code this round added (policy records, resource-type
    # records and their loaders, the docs generator, the new ordering rules) and on the six kinds of the issue
    Mutation(
        "record-level-missing-env",
        "policies/records/__init__.py",
        "missing = [e for e in ENVIRONMENTS if e not in self.levels]",
        'missing = [e for e in ENVIRONMENTS if e not in self.levels and e != "dev"]',
        (f"{PR}::test_loader_refuses",),
        "a policy record without a dev level loads (and fails later with a KeyError, not a record error)",
    ),
    Mutation(
        "record-escalates-everywhere",
        "policies/records/__init__.py",
        "if self.escalate is not None and environment in self.escalate.environments:\n            return self.escalate.to",
        "if self.escalate is not None:\n            return self.escalate.to",
        (PR,),
        "an escalating rule is raised to its escalated level in every environment, not only the listed ones",
    ),
    Mutation(
        "record-report-levels-mandatory-only",
        "policies/records/__init__.py",
        'else ("mandatory", "advisory")',
        'else ("mandatory",)',
        (PR,),
        "outside its escalation an escalating rule reports only mandatory findings (advisories vanish)",
    ),
    Mutation(
        "record-config-placeholder-literal",
        "policies/records/__init__.py",
        'entry[key] = environment if value == "{environment}" else value',
        "entry[key] = value",
        (PR,),
        "a config value `{environment}` is written literally into config.<env>.json",
    ),
    Mutation(
        "record-is-mandatory-ignores-escalation",
        "policies/records/__init__.py",
        'RECORDS[name].pack_level(env) == "mandatory"',
        'RECORDS[name].levels[env] == "mandatory"',
        (PR,),
        "is_mandatory reads the base level and misses an escalation to mandatory",
    ),
    Mutation(
        "record-name-not-the-file",
        "policies/records/__init__.py",
        "if record.name != path.stem:",
        "if not record.name:",
        (PR,),
        "a record whose name differs from its file name loads (samples() then reads another file)",
    ),
    Mutation(
        "record-http-source",
        "policies/records/__init__.py",
        'if not url.startswith("https://"):',
        'if not url.startswith("http"):',
        (f"{PR}::test_loader_refuses",),
        "a plain-http source is accepted as a public reference",
    ),
    Mutation(
        "record-waiver-prod-only",
        "policies/records/__init__.py",
        "if self.waiver is not None:",
        'if self.waiver is not None and environment == "prod":',
        (PR,),
        "a waiver is written into prod's pack config only",
    ),
    Mutation(
        "types-family-least-specific-first",
        "policies/resource_types/__init__.py",
        "return sorted(found, key=lambda item: -len(item[0]))",
        "return sorted(found, key=lambda item: len(item[0]))",
        (f"{RT}::test_families_of_a_key_most_specific_first_and_not_a_look_alike",),
        "the broadest glob record (kubernetes:*) wins over a more specific family",
    ),
    Mutation(
        "types-dynamic-kind-ignored",
        "policies/resource_types/__init__.py",
        'kind_match = [Condition(input="resourceKind", value=kind)] if kind else []',
        "kind_match = []",
        (f"{RT}::test_every_dynamic_entry_first_asks_for_its_resource_kind",),
        "a dynamic resource's readiness entry matches every dynamic resource, whatever its resourceKind",
    ),
    Mutation(
        "types-duplicate-key-last-wins",
        "policies/resource_types/__init__.py",
        "            if key in files:\n",
        "            if key in files and files[key] == rel:\n",
        (RT,),
        "a type written in two record files silently takes the later file's record",
    ),
    Mutation(
        "docs-outside-prod-shows-staging",
        "tools/generate/policy_docs.py",
        'outside_prod = dev if dev == staging else f"dev: {dev}, staging: {staging}"',
        "outside_prod = staging",
        (f"{PR}::test_a_docs_row_names_dev_and_staging_apart_when_their_levels_differ",),
        "the docs' dev / staging column shows staging's level even where dev differs",
    ),
    Mutation(
        "docs-global-table-every-record",
        "tools/generate/policy_docs.py",
        'return HEADER + "".join(row(r) for r in records if stack in r.scope.stacks)',
        'return HEADER + "".join(row(r) for r in records)',
        (PR,),
        "the global stack's policy table lists every regional policy too",
    ),
    Mutation(
        "docs-escalation-note-everywhere",
        "tools/generate/policy_docs.py",
        'return f"{level} ({up.when})" if up is not None and environment in up.environments else level',
        'return f"{level} ({up.when})" if up is not None else level',
        (PR,),
        "the escalation's note (kvaware only) is printed in environments that do not escalate",
    ),
    Mutation(
        "docs-drift-ignores-the-doc",
        "tools/generate/policy_docs.py",
        'return [path for path, text in expected(root).items() if (root / path).read_text(encoding="utf-8") != text]',
        'return [path for path, text in expected(root).items() if path != DOC and (root / path).read_text(encoding="utf-8") != text]',
        (PR,),
        "the drift check compares the config files only, so a hand-edited docs table passes CI",
    ),
    Mutation(
        "ordering-alb-log-wrong-path",
        "policies/readiness.yaml",
        "user_paths: [accessLogs.bucket]",
        "user_paths: [accessLogs.bucketName]",
        (TO,),
        "the ALB access-log ordering rule reads a field the provider does not have, so it never applies",
    ),
    Mutation(
        "ordering-secret-env-no-wildcard",
        "policies/readiness.yaml",
        "user_paths: [spec.worker.environmentVariables.*.valueFrom.secretKeyRef.name]",
        "user_paths: [spec.worker.environmentVariables.valueFrom.secretKeyRef.name]",
        (TO,),
        "the Secret ordering rule misses the list index, so no endpoint is ever its user",
    ),
    Mutation(
        "ordering-access-entry-by-cluster",
        "policies/readiness.yaml",
        '    user_paths: [principalArn]\n    provider: {type: "aws:eks/accessEntry:AccessEntry"}\n    provider_paths: [principalArn]',
        '    user_paths: [clusterName]\n    provider: {type: "aws:eks/accessEntry:AccessEntry"}\n    provider_paths: [clusterName]',
        (f"{TO}::test_access_policy_associations_wait_for_their_own_principals_entry_only",),
        "access-policy associations are joined to every access entry of the cluster, not their principal's",
    ),
    Mutation(
        "health-connectivity-threshold",
        "components/config/health_checks.py",
        "if instance_count < 2:",
        "if instance_count <= 2:",
        ("tests/test_node_wait_deep_health_checks.py::test_instance_connectivity_runs_on_two_instances_the_threshold",),
        "InstanceConnectivity refused on a two-instance group (the threshold moved by one)",
    ),
    Mutation(
        "redis-at-rest-only-when-false",
        "policies/baselines.py",
        'if not truthy(get(args.props, "atRestEncryptionEnabled")):',
        'if get(args.props, "atRestEncryptionEnabled") is False:',
        ("tests/test_omitted_security_inputs.py", "tests/test_policies.py"),
        "redis-encryption flags at-rest encryption only when set false, not when omitted (the provider's default)",
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
        vendored = ROOT / "vendor" / "crds"  # python -m tools.fetch.crds (gitignored, so not copied)
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
    import argparse

    ids = [m.id for m in MUTATIONS]
    parser = argparse.ArgumentParser(
        prog="python -m tests.hand_mutations",
        description="Apply each hand-written mutation in a copy of the repository and run the tests that must "
        "kill it (docs/mutation-testing.md). Exit 0 only when every chosen mutation is killed.",
    )
    parser.add_argument("ids", nargs="*", metavar="ID", help=f"mutations to run (default: all {len(ids)})")
    parser.add_argument("--list", action="store_true", help="print the mutation ids and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(ids))
        return 0
    unknown = [i for i in args.ids if i not in ids]
    if unknown:
        parser.error(f"unknown mutation id(s): {', '.join(unknown)}; --list prints the {len(ids)} ids")
    chosen = [m for m in MUTATIONS if not args.ids or m.id in args.ids]
    failed = 0
    for mutation in chosen:
        outcome = run(mutation)
        failed += outcome != "killed"
        print(f"{outcome:9} {mutation.id}: {mutation.why} ({', '.join(mutation.tests)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
