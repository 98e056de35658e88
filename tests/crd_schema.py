"""Re-export of :mod:`tools.plan.crd_schema` (the CRD validation helpers moved there so ``--out`` can use them)."""

from tools.plan.crd_schema import (  # noqa: F401
    CRD_FILES,
    classify_cr,
    classify_spec,
    crd_path,
    crd_spec_schema,
    spec_validator,
    strict,
    validate_cr,
    validate_spec,
    with_overlays,
)
