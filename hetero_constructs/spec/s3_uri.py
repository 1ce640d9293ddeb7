"""S3 locations: ``s3://bucket/key`` split, bucket names checked, prefixes matched at a boundary.

A prefix is granted at a path boundary: ``s3://b/train`` (or ``s3://b/train/``) covers
``s3://b/train/v2/`` but never ``s3://b/train-nightly/``. ``key_patterns`` gives the IAM
patterns of such a grant and ``covers`` decides containment with the same semantics, so what
the execution role is granted and what an override may name never drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SCHEME = "s3://"

# S3 user guide, "General purpose bucket naming rules".
BUCKET_NAME_LENGTH = (3, 63)
_BUCKET_CHARACTERS = re.compile(r"[a-z0-9.-]+")
_IP_ADDRESS = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}")
RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
# Reserved for access point and Object Lambda aliases, Multi-Region Access Points, directory
# buckets and table buckets. None of them is a general purpose bucket, which is what the
# execution role's s3:GetObject/PutObject grants (arn:aws:s3:::bucket/...) address.
RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


@dataclass(frozen=True)
class S3Uri:
    """An ``s3://`` URI: the bucket and the key (or key prefix), which may be empty."""

    bucket: str
    key: str

    @staticmethod
    def parse(uri: str) -> S3Uri | None:
        """``s3://bucket/key`` split; ``None`` for anything else (``https://``, no bucket)."""
        bucket = bucket_of(uri)
        return None if bucket is None else S3Uri(bucket, uri[len(SCHEME) + len(bucket) + 1 :])

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.key}"


def bucket_of(uri: object) -> str | None:
    """The bucket of an ``s3://bucket/key`` URI; ``None`` for anything else (as ``S3Uri.parse``)."""
    if not isinstance(uri, str) or not uri.startswith(SCHEME):
        return None
    return uri[len(SCHEME) :].partition("/")[0] or None


def key_patterns(prefix: str) -> list[str]:
    """The IAM key patterns that grant ``prefix`` at a path boundary.

    ``""`` -> ``["*"]`` (the whole bucket); ``"train/"`` -> ``["train/*"]``;
    ``"train"`` -> ``["train", "train/*"]`` (the object itself and everything below it,
    never ``train*``, which would also cover ``train-nightly/``).
    """
    if not prefix:
        return ["*"]
    if prefix.endswith("/"):
        return [f"{prefix}*"]
    return [prefix, f"{prefix}/*"]


def covers(granted: S3Uri, uri: S3Uri) -> bool:
    """Whether the grant of ``granted`` (``key_patterns``) covers everything ``uri`` names.

    SageMaker reads every object whose key starts with the channel's key, so ``uri``'s key
    itself must start at or below the granted boundary.
    """
    if granted.bucket != uri.bucket:
        return False
    prefix = granted.key
    if not prefix:
        return True
    boundary = prefix if prefix.endswith("/") else f"{prefix}/"
    return uri.key == prefix or uri.key.startswith(boundary)


def has_dot_segment(key: str) -> bool:
    """A ``.`` or ``..`` path segment, which some clients resolve before S3 sees the key."""
    return any(segment in (".", "..") for segment in key.split("/"))


def bucket_name_problem(name: str) -> str | None:
    """Why ``name`` is not a general purpose bucket name, or ``None`` when it is one."""
    low, high = BUCKET_NAME_LENGTH
    if not low <= len(name) <= high:
        return f"it has {len(name)} characters"
    if not _BUCKET_CHARACTERS.fullmatch(name):
        return "it has characters other than lowercase letters, digits, dots and hyphens"
    if not (name[0].isalnum() and name[-1].isalnum()):
        return "it does not begin and end with a letter or digit"
    if ".." in name:
        return "it has two adjacent dots"
    if name[0].isdigit() and _IP_ADDRESS.fullmatch(name):  # an address starts with a digit
        return "it is formatted as an IP address"
    if name.startswith(RESERVED_BUCKET_PREFIXES):  # one call for all; which one, below
        prefix = next(p for p in RESERVED_BUCKET_PREFIXES if name.startswith(p))
        return f"the prefix {prefix} is reserved"
    if name.endswith(RESERVED_BUCKET_SUFFIXES):
        suffix = next(s for s in RESERVED_BUCKET_SUFFIXES if name.endswith(s))
        return f"the suffix {suffix} is reserved"
    return None


BUCKET_NAME_RULES = (
    f"{BUCKET_NAME_LENGTH[0]} to {BUCKET_NAME_LENGTH[1]} lowercase letters, digits, dots and "
    "hyphens, beginning and ending with a letter or digit, no two adjacent dots, not an IP "
    "address, not starting with "
    + ", ".join(RESERVED_BUCKET_PREFIXES)
    + ", not ending with "
    + ", ".join(RESERVED_BUCKET_SUFFIXES)
)


__all__ = [
    "BUCKET_NAME_LENGTH",
    "BUCKET_NAME_RULES",
    "RESERVED_BUCKET_PREFIXES",
    "RESERVED_BUCKET_SUFFIXES",
    "SCHEME",
    "S3Uri",
    "bucket_name_problem",
    "bucket_of",
    "covers",
    "has_dot_segment",
    "key_patterns",
]
