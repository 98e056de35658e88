"""The hyperpod-inference CrossGuard pack, as the Pulumi CLI starts it.

``pulumi preview --policy-pack policies`` launches ``python -m pulumi.policy <engine> policies``, which
``runpy.run_path``s this folder; the repository root is put on ``sys.path`` so the pack shares the rule
functions (``policies.rules``, ``policies.compatibility``) with the stack-config checks. Only the pack
lives here: the policies are in importable modules (``policies.pack``). Never import this file — the
``PolicyPack`` constructor starts a gRPC server and blocks.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pulumi_policy import PolicyPack  # noqa: E402

from policies.pack import PACK_ENFORCEMENT, PACK_NAME, POLICIES  # noqa: E402

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=PACK_ENFORCEMENT)
