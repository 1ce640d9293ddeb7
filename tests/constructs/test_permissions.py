"""Policy statements merged without widening them."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hetero_constructs.constructs.permissions import allow, document, merged

OUTPUT = "arn:aws:s3:::bucket/output/*"
CHECKPOINTS = "arn:aws:s3:::bucket/checkpoints/*"
PREFIX_ONLY = {"StringLike": {"s3:prefix": ["train/*"]}}


def test_same_actions_and_conditions_become_one_statement_with_both_resources() -> None:
    statements = [
        allow(["s3:PutObject", "s3:AbortMultipartUpload"], [OUTPUT]),
        allow(["s3:GetObject"], ["arn:aws:s3:::bucket/train/*"]),
        allow(["s3:AbortMultipartUpload", "s3:PutObject"], [CHECKPOINTS]),  # same set of actions
        allow(["s3:GetObject"], ["arn:aws:s3:::bucket/train/*"]),  # a duplicate
    ]
    assert merged(statements) == [
        allow(["s3:PutObject", "s3:AbortMultipartUpload"], [OUTPUT, CHECKPOINTS]),
        allow(["s3:GetObject"], ["arn:aws:s3:::bucket/train/*"]),
    ]
    assert document(statements)["Statement"] == merged(statements)


def test_different_conditions_or_extra_keys_are_never_merged() -> None:
    listing = allow(["s3:ListBucket"], ["arn:aws:s3:::bucket"], PREFIX_ONLY)
    other_prefix = allow(
        ["s3:ListBucket"], ["arn:aws:s3:::other"], {"StringLike": {"s3:prefix": ["x/*"]}}
    )
    unconditional = allow(["s3:ListBucket"], ["arn:aws:s3:::third"])
    with_sid = {**allow(["s3:ListBucket"], ["arn:aws:s3:::fourth"]), "Sid": "Mine"}
    statements = [listing, other_prefix, unconditional, with_sid]
    assert merged(statements) == statements


def _grants(statements: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Every (action, resource, condition) a list of statements allows."""
    return {
        (action, resource, repr(s.get("Condition")))
        for s in statements
        for action in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        for resource in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    }


_ACTIONS = st.lists(
    st.sampled_from(["s3:GetObject", "s3:PutObject", "logs:PutLogEvents"]), min_size=1, max_size=2
)
_RESOURCES = st.lists(st.sampled_from(["arn:a", "arn:b", "arn:c", "*"]), min_size=1, max_size=3)
_CONDITIONS = st.sampled_from([None, PREFIX_ONLY, {"Bool": {"aws:SecureTransport": "true"}}])


@given(st.lists(st.tuples(_ACTIONS, _RESOURCES, _CONDITIONS), max_size=12))
def test_merging_grants_exactly_what_the_statements_grant(
    raw: list[tuple[list[str], list[str], Any]],
) -> None:
    statements = [allow(sorted(set(a)), list(dict.fromkeys(r)), c) for a, r, c in raw]
    result = merged(statements)
    assert _grants(result) == _grants(statements)
    keys = [(sorted(_as_list(s["Action"])), repr(s.get("Condition"))) for s in result]
    assert len(keys) == len(set(map(repr, keys)))  # nothing left to merge


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
