"""Fixtures for hetero-train's tests: a fake training stack in moto (in-process)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hetero_constructs.cli.aws import AwsOptions
from tests.fixtures.fake_stack import MOTO_CONFIG, REGION, FakeStack, moto_gaps


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "HETERO_TRAIN_ENDPOINT_URL"):
        monkeypatch.delenv(key, raising=False)
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def stack(aws_env: Any) -> Iterator[FakeStack]:
    """The fake stack deployed into moto in this process (``mock_aws``)."""
    from moto import mock_aws

    with mock_aws(config=MOTO_CONFIG), moto_gaps():  # type: ignore[arg-type]
        # The CLI's sessions share one loader of service models: so does the fake's.
        fake = FakeStack(AwsOptions().session())
        fake.deploy()
        yield fake
