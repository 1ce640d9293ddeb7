"""Telling CDK tokens apart from concrete values, cheaply.

The core skips every check on a value that is a token; it is resolved at deploy time.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Token

_MARKERS = ("${Token[", "#{Token[")


def is_token(value: Any) -> bool:
    """True for a CDK token, or a string, list or map that contains one."""
    if isinstance(value, str):
        return any(marker in value for marker in _MARKERS)
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, float):
        return bool(Token.is_unresolved(value))
    if isinstance(value, list | tuple):
        return any(is_token(item) for item in value)
    if isinstance(value, dict):
        return any(is_token(item) for item in value.values())
    return False
