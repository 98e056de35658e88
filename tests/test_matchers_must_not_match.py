"""Every wildcard or prefix matcher is tested with a name it must NOT match, not only with one it must.

A single-level wildcard that also matches a deeper name, or a prefix that also matches a longer sibling, passes
every test that only shows it matching. Each matcher here gets its must-match and its must-not-match cases side
by side; the deeper or longer look-alike is always among the negatives.
"""

from __future__ import annotations

import fnmatch

import pytest

from policies.readiness import load_readiness
from policies.replacement_rules import _covers, rules_for
from tools.plan.writer import is_default_provider
from tools.rehearse.ordering import values_at

# --- dotted paths with a single-level `*` (ordering joins) ---------------------------------------------------


@pytest.mark.parametrize(
    ("data", "path", "expected"),
    [
        ({"groups": [{"uri": "s3://a/x/"}, {"uri": "s3://b/y/"}]}, "groups.*.uri", ["s3://a/x/", "s3://b/y/"]),
        # must not match: a value one level deeper than the wildcard allows
        ({"groups": [{"nested": {"uri": "s3://a/x/"}}]}, "groups.*.uri", []),
        # must not match: `*` walks list elements, not the keys of an object
        ({"groups": {"first": {"uri": "s3://a/x/"}}}, "groups.*.uri", []),
        # must not match: a key that only starts with the path's key
        ({"groupsAll": [{"uri": "s3://a/x/"}]}, "groups.*.uri", []),
    ],
)
def test_values_at_single_level_wildcard(data: dict, path: str, expected: list) -> None:
    assert values_at(data, path) == expected


# --- replacement-rule property paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "path", "covered"),
    [
        (("vpcConfig",), ("vpcConfig", "subnetIds"), True),  # a change inside a create-only object
        (("orchestrator", "eks"), ("orchestrator",), True),  # a changed object containing a create-only field
        (("tags", "*"), ("tags", "team"), True),
        (("a", "*", "c"), ("a", "x", "c"), True),
        # must not match: a sibling with a longer name, and a different leaf under the wildcard
        (("tags",), ("tagsAll",), False),
        (("tags", "*"), ("tagsAll", "team"), False),
        (("a", "*", "c"), ("a", "x", "d"), False),
        (("a", "*", "c"), ("b", "x", "c"), False),
    ],
)
def test_replacement_paths_cover_only_their_own_subtree(rule: tuple, path: tuple, covered: bool) -> None:
    assert _covers(rule, path) is covered


def test_replacement_globs_do_not_reach_a_longer_package_name() -> None:
    assert rules_for("hyperpod:network:Network") is not None
    assert rules_for("pulumi:providers:aws") is not None
    # must not match: a package whose name only starts with a glob's literal part
    assert rules_for("hyperpodx:network:Network") is None
    assert rules_for("pulumi:providersx:aws") is None


# --- readiness type globs ------------------------------------------------------------------------------------------


def test_every_readiness_type_glob_matches_some_type_and_not_its_look_alike() -> None:
    """Each glob in the readiness data is anchored: a token with a different package or module never matches."""
    globs = {e.type for e in load_readiness().resources if "*" in e.type and e.type != "*"}
    assert globs, "the readiness data has no type glob: nothing to check"
    for glob in globs:
        package = glob.split(":", 1)[0]
        assert not fnmatch.fnmatchcase(f"{package}x:core/v1:Thing", glob), glob
        assert not fnmatch.fnmatchcase(f"x{package}:core/v1:Thing", glob), glob


# --- default providers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "default"),
    [("default", True), ("default_7_51_1", True), ("defaults-for-eu", True), ("eks-k8s", False), ("x_default", False)],
)
def test_default_provider_is_a_name_prefix_of_provider_urns_only(name: str, default: bool) -> None:
    assert is_default_provider(f"urn:pulumi:s::p::pulumi:providers:kubernetes::{name}") is default
    assert not is_default_provider(f"urn:pulumi:s::p::kubernetes:core/v1:Namespace::{name}")
