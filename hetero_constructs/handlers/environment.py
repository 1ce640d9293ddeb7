"""The function's environment variables, as the handlers read them.

In Lambda they are the process's environment. The local runner runs several functions in one
process, beside threads of its own that create AWS clients: it passes each invocation its
function's environment here (``function_environment``) instead of changing ``os.environ``
under those threads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

_GIVEN: ContextVar[Mapping[str, str] | None] = ContextVar("function_environment", default=None)


def variables() -> Mapping[str, str]:
    """The invocation's environment: the one given to it, else the process's."""
    given = _GIVEN.get()
    return os.environ if given is None else given


def required(name: str) -> str:
    """A variable the function cannot run without (``KeyError`` names it)."""
    return variables()[name]


def region() -> str | None:
    """The function's region (``AWS_REGION``, as Lambda sets it)."""
    found = variables()
    return found.get("AWS_REGION") or found.get("AWS_DEFAULT_REGION")


@contextmanager
def function_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Run the handlers of this context (this thread) with ``values`` as their environment,
    merged over the process's."""
    token = _GIVEN.set({**os.environ, **values})
    try:
        yield
    finally:
        _GIVEN.reset(token)


__all__ = ["function_environment", "region", "required", "variables"]
