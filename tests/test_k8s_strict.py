"""Strict validation of core Kubernetes kinds (issue 38, item 5): an unknown field makes the object invalid.

The older test misspells a *required* field (``verbz``), which fails with or without strict mode; these misspell
optional ones (a Secret's ``stringData``, a Namespace's ``metadata.labels``), which only strict mode refuses, on a
made-up object and on the Secret prod really renders (the L2 cache's credentials)."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest

from tools.plan.k8s_schema import validate_object
from tools.plan.render import kubernetes_manifests

SECRET: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "s", "namespace": "inference"},
    "type": "Opaque",
    "stringData": {"password": "x"},
}


def _misspelt(obj: dict[str, Any], key: str, wrong: str) -> dict[str, Any]:
    bad = copy.deepcopy(obj)
    bad[wrong] = bad.pop(key)
    return bad


def test_a_secret_with_string_data_is_valid() -> None:
    result = validate_object(SECRET, crds_dir=None)
    assert (result.outcome, result.errors) == ("valid", [])
    assert result.schema == "Kubernetes 1.35.0 OpenAPI (kubernetes-validate)"


@pytest.mark.parametrize("wrong", ["stringdata", "stringDate", "string_data"])
def test_a_misspelt_string_data_makes_the_secret_invalid(wrong: str) -> None:
    bad = _misspelt(SECRET, "stringData", wrong)
    # what makes it invalid is strictness: the schema without it takes the object (an unknown field is ignored)
    kubernetes_validate.validate(bad, "1.35.0", strict=False)
    result = validate_object(bad, crds_dir=None)
    assert result.outcome == "invalid"
    assert len(result.errors) == 1
    assert f"Additional properties are not allowed ('{wrong}' was unexpected)" in result.errors[0]


def test_an_unknown_metadata_field_is_invalid() -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "lables": {"a": "b"}}}
    kubernetes_validate.validate(namespace, "1.35.0", strict=False)
    result = validate_object(namespace, crds_dir=None)
    assert result.outcome == "invalid"
    assert result.errors[0].startswith("metadata: ")
    assert "'lables' was unexpected" in result.errors[0]
    namespace["metadata"]["labels"] = namespace["metadata"].pop("lables")
    assert validate_object(namespace, crds_dir=None).outcome == "valid"


def test_prods_rendered_secret_valid_and_misspelt(stack_runs) -> None:
    (secret,) = [m for m in kubernetes_manifests(stack_runs["prod"].registrations) if m["kind"] == "Secret"]
    assert secret["metadata"]["name"] == "hpi-kv-cache-credentials"
    assert "stringData" in secret
    assert validate_object(secret, crds_dir=None, kubernetes_version="1.34").outcome == "valid"
    result = validate_object(_misspelt(secret, "stringData", "stringdata"), crds_dir=None, kubernetes_version="1.34")
    assert result.outcome == "invalid"
    assert "'stringdata' was unexpected" in result.errors[0]
