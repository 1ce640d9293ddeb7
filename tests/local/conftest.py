"""The hand-built stacks, synthesized once per test session."""

from __future__ import annotations

import pytest

from tests.local.stacks import Synthesized


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    from tests.local.stacks import synthesize

    return synthesize(tmp_path_factory.mktemp("local-cdk.out"))
