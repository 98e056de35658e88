"""IAM policy evaluation with an engine this project did not write: NCC Group's PMapper (principalmapper 1.1.5,
``principalmapper/querying/local_policy_simulation.py``), pinned in requirements-dev.txt.

Why not moto: moto 5.2.5's ``moto/iam/access_control.py`` evaluates only ``StringEquals`` conditions (its
``policy_conditions.CONDITION_OPERATIONS``), treats every other operator as satisfied, and answers DENIED (not
"not applicable") when an Allow statement's condition fails. The deploy policy's least privilege is in its
conditions (ArnLike/StringLike, Null, IfExists), so moto would pass what IAM refuses. PMapper evaluates String*,
Arn*, Bool, Null, Numeric, Date and IpAddress operators with IfExists and ForAllValues/ForAnyValue, matches actions
case-insensitively and Resource wildcards (* and ?) as IAM does.

PMapper 1.1.5 imports ``collections.Mapping`` (removed in Python 3.10): the two aliases below restore it before
the import; nothing else is patched.

:func:`allowed` is IAM's identity-policy rule for one request (IAM user guide, "Policy evaluation logic"): an
explicit Deny wins, else an Allow is needed.
"""

from __future__ import annotations

import collections
import collections.abc
from typing import Any

for _name in ("Mapping", "MutableMapping"):
    if not hasattr(collections, _name):
        setattr(collections, _name, getattr(collections.abc, _name))

from principalmapper.querying.local_policy_simulation import policy_has_matching_statement  # noqa: E402
from principalmapper.util.case_insensitive_dict import CaseInsensitiveDict  # noqa: E402


def allowed(documents: list[dict[str, Any]], action: str, resource: str, context: dict[str, Any] | None = None) -> bool:
    """Whether the policies (attached side by side) allow ``action`` on ``resource`` with the request context."""
    ctx = CaseInsensitiveDict(dict(context or {}))
    if any(policy_has_matching_statement(d, "Deny", action, resource, ctx) for d in documents):
        return False
    return any(policy_has_matching_statement(d, "Allow", action, resource, ctx) for d in documents)
