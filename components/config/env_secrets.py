"""A secret written into an endpoint's environment variables (issue 46 item 3): by its name or its value's shape.

A plain ``value`` lands in the stack file, ``plan.json``, the ``--out`` YAML and the endpoint's custom resource, which
the viewers group can read. The fix is a Kubernetes Secret reference (``valueFrom.secretKeyRef``, Kubernetes API
reference, EnvVarSource), which the InferenceEndpointConfig's ``worker.environmentVariables`` (Kubernetes EnvVar
objects) takes; a JumpStartModel's ``environmentVariables`` are name/value pairs only, so a secret there needs an
InferenceEndpointConfig. Pure functions; the check that uses them is in ``components/config/endpoints.py``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

# Name segments (split on `_`, `-`, `.`) that say "secret"; whole segments, so MAX_NUM_BATCHED_TOKENS (TOKENS) or
# KEEPALIVE do not match.
SECRET_NAME_SEGMENTS = frozenset(
    {"TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PWD", "KEY", "APIKEY", "CREDENTIAL", "CREDENTIALS", "AUTH"}
)
# Value shapes of well-known credentials (each issuer's documented prefix and length).
SECRET_VALUE_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^hf_[A-Za-z0-9]{30,}$"), "a Hugging Face access token (hf_...)"),
    (re.compile(r"^(AKIA|ASIA)[A-Z0-9]{16}$"), "an AWS access key ID (AKIA.../ASIA...)"),
    (re.compile(r"^gh[pousr]_[A-Za-z0-9]{36,}$"), "a GitHub token (ghp_...)"),
    (re.compile(r"^sk-[A-Za-z0-9_-]{20,}$"), "an API secret key (sk-...)"),
    (re.compile(r"^-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key (PEM)"),
)
# A random-looking string: long, one token of base64/hex characters, mixed, and near the entropy of random text.
HIGH_ENTROPY_MIN_LENGTH = 32
HIGH_ENTROPY_BITS_PER_CHAR = 4.5
_TOKEN = re.compile(r"^[A-Za-z0-9+/=_-]+$")


def shannon_bits(text: str) -> float:
    """Shannon entropy per character of ``text`` (0 for an empty string)."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) if text else 0.0


def secret_reason(name: str, value: Any) -> str | None:
    """Why the variable ``name=value`` looks like a secret written in plain text, or None."""
    if not isinstance(value, str) or not value:
        return None
    for shape, what in SECRET_VALUE_SHAPES:
        if shape.match(value):
            return f"its value is {what}"
    segments = {s.upper() for s in re.split(r"[_.-]+", name) if s}
    named = sorted(segments & SECRET_NAME_SEGMENTS)
    if named:
        return f"its name says it holds a secret ({', '.join(named)})"
    mixed = any(c.isdigit() for c in value) and any(c.islower() for c in value) and any(c.isupper() for c in value)
    if (
        len(value) >= HIGH_ENTROPY_MIN_LENGTH
        and _TOKEN.match(value)
        and mixed
        and shannon_bits(value) >= HIGH_ENTROPY_BITS_PER_CHAR
    ):
        return f"its value looks random ({shannon_bits(value):.1f} bits per character over {len(value)})"
    return None


def env_secret_reason(var: Mapping[str, Any]) -> str | None:
    """The reason for one EnvVar mapping; a ``valueFrom`` reference is the fix, never a finding."""
    if "valueFrom" in var:
        return None
    return secret_reason(str(var.get("name") or ""), var.get("value"))
