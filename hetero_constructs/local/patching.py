"""Patching moto for a local cloud: replaced attributes, restored when the cloud closes."""

from __future__ import annotations

import contextlib
import datetime
from typing import Any


class Patches:
    """Replaced attributes, restored in reverse order when the stack closes."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self._stack = stack

    def replace(self, owner: Any, name: str, replacement: Any) -> Any:
        """Set ``owner.name`` to ``replacement``; return the original."""
        missing = object()
        original = owner.__dict__.get(name, missing) if isinstance(owner, type) else missing
        if original is missing:
            original = getattr(owner, name, missing)
        setattr(owner, name, replacement)
        self._stack.callback(_restore, owner, name, original, missing)
        return None if original is missing else original


def _restore(owner: Any, name: str, original: Any, missing: object) -> None:
    if original is missing:
        with contextlib.suppress(AttributeError):
            delattr(owner, name)
    else:
        setattr(owner, name, original)


def aws_timestamp(moment: datetime.datetime) -> str:
    """ISO 8601 with milliseconds and ``Z``, as the context object carries times."""
    utc = moment.astimezone(datetime.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


__all__ = [
    "Patches",
    "aws_timestamp",
]
