"""Reading the project's YAML data files (readiness, deploy actions, compatibility) and the CRDs.

One place decides the loader: libyaml's ``CSafeLoader`` when PyYAML was built with it (the published wheels
are), else the pure-Python ``SafeLoader``. Both build the same data; libyaml is 10-15x faster, which matters for
the CRDs (hundreds of KB each) and for files read on every run. Stack files are different: they need key lines
and duplicate-key errors, and have their own loaders in ``components/config/stackfile.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SAFE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml_file(path: Path) -> Any:
    """The data of one YAML document at ``path`` (safe tags only)."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
