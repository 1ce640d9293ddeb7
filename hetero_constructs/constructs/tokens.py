"""CDK tokens: telling them apart from concrete values, cheaply, and values made at synth.

The core skips every check on a value that is a token; it is resolved at deploy time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsii
from aws_cdk import IStableAnyProducer, Lazy, Token

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


@jsii.implements(IStableAnyProducer)
class _Produce:
    def __init__(self, produce: Callable[[], Any]) -> None:
        self._produce = produce

    def produce(self) -> Any:
        return self._produce()


def at_synth(produce: Callable[[], Any]) -> Any:
    """A value computed when the template is rendered, after every task has registered."""
    return Lazy.any(_Produce(produce))


__all__ = ["at_synth", "is_token"]
