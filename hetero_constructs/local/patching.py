"""Patching moto for a local cloud: replaced attributes, restored when the cloud closes."""

from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Iterator
from typing import Any

from hetero_constructs.local.moto_targets import require, unfit


class Patches:
    """Replaced attributes of moto, restored in reverse order when the stack closes.

    Made only when the installed moto has every target of ``moto_targets`` as declared (else
    ``UnsupportedMoto``, before anything is replaced); each replacement must be one of
    ``moto_targets.REPLACED``, and is made once.
    """

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self._stack = stack
        self._checked = require()
        self._replaced: set[tuple[Any, str]] = set()

    def replace(self, owner: Any, name: str, replacement: Any) -> Any:
        """Set ``owner.name`` to ``replacement``; return the original (None where moto has
        none: the target is declared ``absent``)."""
        key = (owner, name)
        target = self._checked.get(key)
        if target is None:
            raise LookupError(
                f"{getattr(owner, '__qualname__', owner)}.{name} is not declared in "
                "moto_targets.REPLACED: declare it there, with the shape the replacement is "
                "written for, so that the local account checks it at start"
            )
        if key in self._replaced:
            raise LookupError(f"{target.name} is replaced twice: wrap it once")
        self._replaced.add(key)
        missing = object()
        current = getattr(owner, name, None)
        if callable(current) and callable(replacement):
            problem = unfit(current, replacement)
            if problem is not None:
                raise TypeError(f"the replacement of {target.name} {problem}")
        # A class's own attribute is put back; one it inherits is hidden, then unhidden.
        saved = owner.__dict__.get(name, missing) if isinstance(owner, type) else missing
        if saved is missing and not isinstance(owner, type):
            saved = getattr(owner, name, missing)
        original = getattr(owner, name, missing) if saved is missing else saved
        setattr(owner, name, replacement)
        self._stack.callback(_restore, owner, name, saved, missing)
        return None if original is missing else original


def _restore(owner: Any, name: str, original: Any, missing: object) -> None:
    if original is missing:
        with contextlib.suppress(AttributeError):
            delattr(owner, name)
    else:
        setattr(owner, name, original)


@contextlib.contextmanager
def environment_variable(key: str, value: str | None) -> Iterator[None]:
    """``os.environ[key]`` set to ``value`` (unset for ``None``) while the context lasts."""
    previous = os.environ.get(key)
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = previous


def aws_timestamp(moment: datetime.datetime) -> str:
    """ISO 8601 with milliseconds and ``Z``, as the context object carries times."""
    utc = moment.astimezone(datetime.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def epoch_millis(moment: datetime.datetime | None) -> int | None:
    """Milliseconds since the epoch, as EventBridge events carry times."""
    return int(moment.timestamp() * 1000) if moment is not None else None


__all__ = [
    "Patches",
    "aws_timestamp",
    "environment_variable",
    "epoch_millis",
]
