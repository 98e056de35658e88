"""AWS naming rules that the program's inputs must follow: S3 bucket names and locations, resource tags.

Pure functions, one place, used by the stack-config checks (``components/config``) and the policy pack
(``policies/rules.py``). Each returns ``(problem, fix)`` texts, empty when the value is fine.

Sources:

* S3 bucket names — Amazon S3 User Guide, "General purpose bucket naming rules"
  (docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html): 3-63 characters; only lowercase letters,
  numbers, periods and hyphens; begin and end with a letter or number; no two adjacent periods; not formatted as an
  IP address; not starting with ``xn--``, ``sthree-`` or ``amzn-s3-demo-``; not ending with ``-s3alias``,
  ``--ol-s3``, ``.mrap``, ``--x-s3`` or ``--table-s3`` (reserved for access point aliases, Object Lambda, Multi-Region
  Access Points, directory buckets and table buckets). Buckets created in us-east-1 before 2018-03-01 may have
  legacy names (uppercase, underscores); they are refused here like every other non-conforming name.
* Tags — "Tagging AWS resources and Tag Editor" user guide, "Tag naming limits and requirements"
  (docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html): at most 50 user-created tags per resource; keys
  1-128 and values 0-256 Unicode characters; letters, numbers, spaces and ``_ . : / = + - @``; the ``aws:`` prefix
  (any case) is reserved for AWS and cannot be used in keys. API pattern of the same rule:
  ``^([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)$`` (e.g. CloudWatch API Reference, ``Tag``).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Mapping

BUCKET_NAME_RULES = "S3 User Guide, 'General purpose bucket naming rules'"
TAG_RULES = "Tag Editor user guide, 'Tag naming limits and requirements'"

_BUCKET_CHARS = re.compile(r"^[a-z0-9.-]+$")
RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")

MAX_TAGS = 50
MAX_TAG_KEY = 128
MAX_TAG_VALUE = 256
RESERVED_TAG_PREFIX = "aws:"
_TAG_SYMBOLS = set("_.:/=+-@")


def s3_uri_parts(value: str) -> tuple[str, str] | None:
    """``s3://bucket/key/prefix`` -> ``("bucket", "key/prefix")``; ``None`` when ``value`` is not an ``s3://`` URI."""
    if not value.lower().startswith("s3://"):
        return None
    bucket, _, key = value[5:].partition("/")
    return bucket, key


def bucket_name_problems(name: str) -> list[str]:
    """Why ``name`` is not a valid general purpose bucket name (empty when it is)."""
    parts = s3_uri_parts(name)
    if parts is not None:
        return [f"{name!r} is an S3 URI, not a bucket name: write the bucket name only ({parts[0]!r})"]
    out: list[str] = []
    if not 3 <= len(name) <= 63:
        out.append(f"{name!r} has {len(name)} characters; bucket names have 3 to 63")
    if not _BUCKET_CHARS.match(name):
        bad = sorted({c for c in name if not (c.islower() and c.isascii()) and not c.isdigit() and c not in ".-"})
        out.append(f"{name!r} contains {' '.join(repr(c) for c in bad)}; only lowercase letters, numbers, '.' and '-'")
    if name and not (name[0].isalnum() and name[-1].isalnum()):
        out.append(f"{name!r} must begin and end with a letter or number")
    if ".." in name:
        out.append(f"{name!r} contains two adjacent periods")
    try:
        ipaddress.IPv4Address(name)
        out.append(f"{name!r} is formatted as an IP address")
    except ValueError:
        pass
    out.extend(
        f"{name!r} starts with the reserved prefix {p!r}" for p in RESERVED_BUCKET_PREFIXES if name.startswith(p)
    )
    out.extend(f"{name!r} ends with the reserved suffix {s!r}" for s in RESERVED_BUCKET_SUFFIXES if name.endswith(s))
    return out


def key_prefix_problems(location: str) -> list[str]:
    """An object key prefix inside a bucket (``modelLocation``): not an ``s3://`` URI."""
    parts = s3_uri_parts(location)
    if parts is None:
        return []
    return [
        f"{location!r} is an S3 URI; modelLocation is the key prefix inside s3Storage.bucketName: write {parts[1]!r}"
        f" and put the bucket {parts[0]!r} in s3Storage.bucketName"
    ]


def _tag_chars_ok(text: str) -> bool:
    return all(c in _TAG_SYMBOLS or unicodedata.category(c)[0] in "LNZ" for c in text)


def tag_problems(
    tags: Mapping[str, str], stack_tags: Mapping[str, str] | None = None, *, user_wins: bool = False
) -> list[tuple[str, str]]:
    """``(tag key, problem)`` for user tags. ``stack_tags`` are the tags the stack adds: they count to the limit,
    and unless ``user_wins`` (an endpoint's own ``spec.tags`` override them) a user tag with one of their keys
    would be overwritten silently, so it is refused."""
    added = dict(stack_tags or {})
    out: list[tuple[str, str]] = []
    total = len(set(tags) | set(added))
    if total > MAX_TAGS:
        out.append(("", f"{total} tags ({len(added)} set by the stack); AWS allows at most {MAX_TAGS} per resource"))
    for key, value in tags.items():
        if key.lower().startswith(RESERVED_TAG_PREFIX):
            out.append((key, f"tag key {key!r}: the aws: prefix is reserved for AWS and cannot be used"))
        if key in added and not user_wins:
            out.append((key, f"tag key {key!r} is set by the stack itself (value {added[key]!r}); use another key"))
        if not 1 <= len(key) <= MAX_TAG_KEY:
            out.append((key, f"tag key {key!r} has {len(key)} characters; keys have 1 to {MAX_TAG_KEY}"))
        if len(str(value)) > MAX_TAG_VALUE:
            out.append((key, f"the value of tag {key!r} has {len(str(value))} characters; at most {MAX_TAG_VALUE}"))
        if not _tag_chars_ok(key) or not _tag_chars_ok(str(value)):
            out.append((key, f"tag {key!r}: only letters, numbers, spaces and _ . : / = + - @ are allowed"))
    return out
