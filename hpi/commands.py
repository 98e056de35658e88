"""The one table of ``hpi``: each subcommand, the module whose ``main`` it runs, and its line in ``hpi --help``.

This is the only place that names a tool's module for the command line: when tools/ is rearranged by job (issue 36,
stage 2), the rearranging script rewrites these strings with every other import, and the subcommands stay.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """``hpi <name>``: runs ``<module>.main(argv)``."""

    name: str  # "preview", or "<group> <name>" for a maintenance command ("generate crd-models")
    module: str  # the module that defines main(); a package's main lives in its __main__ or __init__
    help: str  # the line under `hpi --help`; the subcommand's own --help is the tool's parser
    parser: bool = True  # main(argv) builds an argparse parser (hpi reuses it for --help and completion)
    argv: bool = True  # main takes argv (False: main() reads no arguments at all)

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.name.split())


GROUPS: dict[str, str] = {
    "generate": "regenerate a checked-in file from its source (models, rules, reference docs, schemas)",
    "fetch": "fetch a pinned upstream input into vendor/ (CRDs, the HyperPod dependencies chart)",
}

COMMANDS: tuple[Command, ...] = (
    Command(
        "preview", "tools.cli.preview", "offline preview: the program under mocks, policy pack, capacity, rehearsal"
    ),
    Command("rehearse", "tools.rehearse.__main__", "the deploy rehearsal of pulumi up (--destroy: pulumi destroy)"),
    Command("capacity", "tools.cli.capacity", "the capacity table: what each instance group's nodes fit"),
    Command(
        "preflight", "tools.preflight.regional", "read-only AWS checks before pulumi up (a global stack: its checks)"
    ),
    Command(
        "preflight-global", "tools.preflight.global_stack", "read-only AWS checks of a global stack and its members"
    ),
    Command("verify", "tools.verify", "post-deploy checks of a stack against the live account"),
    Command("policy", "tools.cli.policy", "the CrossGuard policy pack: its results for a stack, or its policies"),
    Command("deployer-policy", "tools.cli.deployer_policy", "the least-privilege IAM policy to deploy one stack"),
    Command(
        "guardduty-cleanup",
        "tools.preflight.guardduty_cleanup",
        "remove GuardDuty's VPC endpoint before pulumi destroy",
    ),
    Command(
        "unconfirmed",
        "tools.generate.unconfirmed",
        "list the UNCONFIRMED markers and check them against docs/first-deploy.md's checklist",
    ),
    Command(
        "generate crd-models", "tools.generate.crd_models", "components/config/crd.py and policies/crd_fields.json"
    ),
    Command("generate replacement-rules", "tools.generate.replacement_rules", "policies/replacement_rules.json"),
    Command("generate config-reference", "tools.generate.config_reference", "docs/configuration.md"),
    Command("generate config-schema", "components.config.schema", "stacks/schema.json and stacks/global.schema.json"),
    Command(
        "generate instance-types",
        "components.config.data.generate_instance_types",
        "components/config/data/instance_types.json: the hardware of each HyperPod instance type",
    ),
    Command(
        "generate config-namespaces",
        "components.config.data.generate_config_namespaces",
        "components/config/data/config_namespaces.json: the providers' config namespaces and keys",
    ),
    Command(
        "generate ci-matrix",
        "tools.generate.ci_matrix",
        "the pull-request workflow's stack matrix",
        parser=False,
        argv=False,
    ),
    Command("fetch crds", "tools.fetch.crds", "the CRDs the schema tests validate against, at pinned commits"),
    Command("fetch chart", "tools.fetch.chart", "the pinned HyperPod dependencies chart, into vendor/"),
)

BY_PATH: dict[tuple[str, ...], Command] = {c.path: c for c in COMMANDS}
