"""``python -m tools.verify --stack STACK``: after ``pulumi up``, prove with read-only calls that the stack serves.

One module per group of checks, each registering its checks (``tools/verify/base.py``) in the order they run:
``traffic`` (Service, binding, target health, DNS, a request), ``operator`` (add-on, CRD fields, endpoint status,
worker pods, metrics, gateway), ``nodes`` (HyperPod nodes, allocatable, system pods), ``governance`` (Kueue labels, priority classes,
controller; what the add-on runs besides the operator), ``second_door`` (another
way in that skips the front door's authentication), ``report`` (the event log, the deploy role's denials, WAF,
add-on logs, and ``verified/<stack>.json``). ``__main__`` is the command line.
"""

from . import governance, nodes, operator, report, second_door, traffic  # noqa: F401 - registers the checks (__main__.GROUPS orders them)
from .base import CHECKS

__all__ = ["CHECKS"]
