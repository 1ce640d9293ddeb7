"""Reporting a job's end: the cause fits Step Functions' limit, a gone task is no error."""

from __future__ import annotations

from hetero_constructs.handlers import outcome
from tests.fixtures.handler_world import HandlerWorld


def test_a_failure_cause_is_sent_as_json(world: HandlerWorld) -> None:
    token = world.token()
    cause = {"TrainingJobName": "job", "FailureReason": "boom"}
    assert outcome.send_failure(world.stepfunctions, token, "Err", cause) == "Err"
    [report] = world.reports_to(token)
    assert (report.error, report.body) == ("Err", cause)


def test_a_report_to_a_closed_task_is_task_gone(world: HandlerWorld) -> None:
    token = world.token()
    world.open_tokens.discard(token)
    assert outcome.send_failure(world.stepfunctions, token, "Err", {}) == "task gone"
    assert world.reports == []


def test_execution_running_follows_the_execution(world: HandlerWorld) -> None:
    execution = world.start("run-1")
    assert outcome.execution_running(world.stepfunctions, execution)
    world.stepfunctions.stop_execution(executionArn=execution)
    assert not outcome.execution_running(world.stepfunctions, execution)
    gone = execution.replace("run-1", "never-started")
    assert not outcome.execution_running(world.stepfunctions, gone)
