"""Clients acting as a job's control role: assumed once, cached, forgotten on demand."""

from __future__ import annotations

from typing import Any

import boto3

from hetero_constructs.handlers import control
from tests.fixtures.handler_world import CONTROL_ROLE, HandlerWorld


def test_the_role_is_assumed_once_and_its_clients_reused(world: HandlerWorld) -> None:
    assumed: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        assumed.append(params["RoleArn"])

    session = boto3.DEFAULT_SESSION
    assert session is not None
    session.events.register("provide-client-params.sts.AssumeRole", count)
    first = control.client(CONTROL_ROLE, "sagemaker")
    assert control.client(CONTROL_ROLE, "sagemaker") is first
    assert control.client(CONTROL_ROLE, "stepfunctions") is not first
    assert assumed == [CONTROL_ROLE]
    control.forget()
    assert control.client(CONTROL_ROLE, "sagemaker") is not first
    assert assumed == [CONTROL_ROLE, CONTROL_ROLE]
