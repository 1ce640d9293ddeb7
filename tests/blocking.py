"""Calls that must not block: run in a thread, the test fails instead of hanging the suite."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def outcome(call: Callable[[], Any], seconds: float = 5.0) -> Any:
    """The call's result or the exception it raised; fails if it blocks."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(call())
        except Exception as error:  # handed back to the test
            result.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the call blocked"
    return result[0]


def finishes(call: Callable[[], Any], seconds: float = 5.0) -> Any:
    """The call's result (what it raised is raised here); fails if it blocks."""
    result = outcome(call, seconds)
    if isinstance(result, Exception):
        raise result
    return result
