"""The lifecycle handler, called directly: job ends settle their task once, ended executions
stop their jobs, the reconcile pass converges what events missed."""

from __future__ import annotations

from typing import Any

from hetero_constructs.contract import lifecycle
from hetero_constructs.handlers import events, submit, token_store
from tests.fixtures.handler_world import HandlerWorld


def _submitted(world: HandlerWorld, name: str = "run-1") -> tuple[str, str, str]:
    """(execution, token, job) of a run whose job is InProgress."""
    execution = world.start(name)
    token = world.token()
    job = submit.handler(world.submit_event(execution, token))["TrainingJobName"]
    return execution, token, job


def _execution_event(execution: str, status: str) -> dict[str, Any]:
    return {
        "source": lifecycle.EXECUTION_EVENT_SOURCE,
        "detail-type": lifecycle.EXECUTION_EVENT_TYPE,
        "detail": {"executionArn": execution, "status": status},
    }


def test_a_completed_job_succeeds_its_task_once(world: HandlerWorld) -> None:
    _, token, job = _submitted(world)
    world.training.end(job, "Completed")
    event = world.job_event(job)
    assert events.dispatch(event, world.dynamodb) == "reported Completed"
    assert events.dispatch(event, world.dynamodb) == "ignored: no waiting task"
    [report] = world.reports_to(token)
    assert report.operation == "SendTaskSuccess"
    assert report.body["TrainingJobName"] == job
    assert world.items("job#") == []
    [slot] = world.items("slot#")
    assert slot["reported"]["BOOL"] is True


def test_a_failed_job_fails_its_task_with_the_error_name(world: HandlerWorld) -> None:
    _, token, job = _submitted(world)
    world.training.end(job, "Failed:AlgorithmError: boom")
    events.dispatch(world.job_event(job), world.dynamodb)
    [report] = world.reports_to(token)
    assert report.error == lifecycle.Errors.TRAINING_FAILED
    assert report.body["TrainingJobName"] == job


def test_an_event_of_a_running_job_or_of_no_job_changes_nothing(world: HandlerWorld) -> None:
    _, _, job = _submitted(world)
    assert events.dispatch(world.job_event(job), world.dynamodb) == "ignored: not terminal"
    forged = {"source": lifecycle.JOB_EVENT_SOURCE, "detail": {"TrainingJobName": "x" * 64}}
    assert events.dispatch(forged, world.dynamodb) == "ignored: not a job name"
    assert events.dispatch(["not", "an", "event"], world.dynamodb) == "ignored: not an event"  # type: ignore[arg-type]
    assert world.reports == []
    assert world.status(job) == "InProgress"


def test_an_aborted_execution_stops_its_job(world: HandlerWorld) -> None:
    execution, _, job = _submitted(world)
    world.stepfunctions.stop_execution(executionArn=execution)
    assert events.dispatch(_execution_event(execution, "ABORTED"), world.dynamodb) == (
        f"stopped {job}"
    )
    assert world.status(job) == "Stopping"
    # The item stays until the job's Stopped event settles it.
    assert token_store.get_job(world.dynamodb, job) is not None


def test_reconcile_settles_a_job_whose_end_event_was_lost(world: HandlerWorld) -> None:
    _, token, job = _submitted(world)
    world.training.end(job, "Completed")  # its event is never delivered
    assert events.reconcile(world.dynamodb)["settled"] == 1
    assert [r.operation for r in world.reports_to(token)] == ["SendTaskSuccess"]
    assert world.items("job#") == []


def test_reconcile_stops_the_job_of_an_execution_that_ended(world: HandlerWorld) -> None:
    execution, _, job = _submitted(world)
    world.stepfunctions.stop_execution(executionArn=execution)  # its event is never delivered
    assert events.reconcile(world.dynamodb)["stopped"] == 1
    assert world.status(job) == "Stopping"


def test_reconcile_leaves_a_running_job_of_a_running_task_alone(world: HandlerWorld) -> None:
    _, _, job = _submitted(world)
    assert events.reconcile(world.dynamodb) == {
        "settled": 0,
        "stopped": 0,
        "cancelled": 0,
        "forgotten": 0,
        "running": 1,
    }
    assert world.status(job) == "InProgress"
