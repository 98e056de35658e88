"""The policies of the hyperpod-inference pack, importable by tests and by ``tools.preview``.

``policies/__main__.py`` wraps exactly this list in a ``PolicyPack``; never import that file (its
constructor starts a gRPC server and blocks).
"""

from __future__ import annotations

from pulumi_policy import Policy

PACK_NAME = "hyperpod-inference"

POLICIES: list[Policy] = []
