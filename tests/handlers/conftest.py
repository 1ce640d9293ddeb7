"""Each handler test gets a fresh moto account (``tests.fixtures.handler_world``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.handler_world import HandlerWorld, handler_world


@pytest.fixture
def world(monkeypatch: Any) -> Iterator[HandlerWorld]:
    with handler_world(monkeypatch) as created:
        yield created
