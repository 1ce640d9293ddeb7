"""Issue 21: the local runner gives this library's in-process functions their environment
without changing ``os.environ`` (other threads create clients meanwhile; a concurrent run
failed with ``KeyError: 'TOKEN_TABLE'``)."""

from __future__ import annotations

import os
from typing import Any

from hetero_constructs.local import LocalCloud
from tests.fixtures.harness import on_calls


def test_the_handlers_run_without_touching_os_environ(example: Any) -> None:
    seen: list[str | None] = []

    def during_a_handler_call(**_: Any) -> None:
        seen.append(os.environ.get("TOKEN_TABLE"))

    with LocalCloud(simulate="Completed") as cloud:
        cloud.deploy(example.template, template_dir=example.outdir)
        (machine,) = cloud.state_machines
        on_calls("before-call.dynamodb", during_a_handler_call, unique_id="environment-test")
        result = cloud.run(machine, None, name="environment", timeout=120)
    assert result.status == "SUCCEEDED"
    assert seen  # the handlers read and wrote the run table
    assert set(seen) == {None}
