"""The hyperpod-inference CrossGuard pack, as the Pulumi CLI starts it.

``pulumi preview --policy-pack policies`` launches ``python -m pulumi.policy <engine> policies``, which
``runpy.run_path``s this folder. The project is installed as packages (``-e .`` in requirements.txt), so the pack
imports the same rule functions (``policies.rules``, ``policies.compatibility``) as the stack-config checks from
wherever the CLI starts it. Only the pack lives here: the policies are in importable modules (``policies.pack``).
Never import this file — the ``PolicyPack`` constructor starts a gRPC server and blocks.
"""

from pulumi_policy import PolicyPack

from policies.pack import PACK_ENFORCEMENT, PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=PACK_ENFORCEMENT)
