"""The policies of the hyperpod-inference pack, importable by tests and by ``tools.cli.preview``.

``policies/__main__.py`` wraps exactly this list in a ``PolicyPack``; never import that file (its
constructor starts a gRPC server and blocks).

Enforcement: each policy's ``enforcement_level`` in code is the prod behaviour; ``config.<env>.json``
(the ``--policy-pack-config`` file) relaxes what the issue's table allows outside prod. Policy config
defaults are applied in code (``cfg.get(x, default)``), because the Python SDK does not apply schema
defaults — so the offline engine and the CLI resolve the same behaviour.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, Policy

from .addon_builds import ADDON_BUILD_POLICIES
from .baselines import BASELINE_POLICIES
from .capacity import CAPACITY_POLICIES
from .cluster_versions import CLUSTER_VERSION_POLICIES
from .endpoint_policies import ENDPOINT_POLICIES
from .global_policies import GLOBAL_POLICIES
from .security_baselines import SECURITY_BASELINE_POLICIES

PACK_NAME = "hyperpod-inference"

# The pack-wide fallback for a policy without its own level (every policy here sets one).
PACK_ENFORCEMENT = EnforcementLevel.ADVISORY

POLICIES: list[Policy] = [
    *ENDPOINT_POLICIES,
    *BASELINE_POLICIES,
    *CLUSTER_VERSION_POLICIES,
    *ADDON_BUILD_POLICIES,
    *SECURITY_BASELINE_POLICIES,
    *GLOBAL_POLICIES,
    *CAPACITY_POLICIES,
]
