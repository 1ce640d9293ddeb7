"""Issue 21: each case that cost a GPU hour or a result under Step Functions' own semantics,
on the real handlers. Every test here fails on the handlers before the fix (a job kept running,
a stale event stopping a live run, a late invocation taking a newer attempt's job, two entries
sharing a job, two jobs for one attempt, a collision losing a run's item, a malformed item
failing every pass, an oversize cause, a miscounted MORE-VIOLATIONS)."""

from __future__ import annotations

from typing import Any

import pytest

from hetero_constructs.contract import lifecycle
from hetero_constructs.handlers import events, submit, token_store
from hetero_constructs.spec.violations import MORE_VIOLATIONS_RULE, Violation, bounded
from tests.fixtures.handler_world import HandlerWorld


def _execution_end(execution: str, status: str) -> dict[str, Any]:
    return {
        "source": lifecycle.EXECUTION_EVENT_SOURCE,
        "detail-type": lifecycle.EXECUTION_EVENT_TYPE,
        "detail": {"executionArn": execution, "status": status},
    }


def test_a_cancelled_tasks_job_is_stopped_by_one_reconcile_pass(world: HandlerWorld) -> None:
    """Case 1: the task's token is closed (its Parallel branch or Map iteration cancelled, its
    timeout caught) while the execution runs on."""
    execution = world.start("run-1")
    token = world.token()
    job = submit.handler(world.submit_event(execution, token))["TrainingJobName"]
    world.open_tokens.discard(token)  # Step Functions closed the task
    assert events.reconcile(world.dynamodb)["cancelled"] == 1
    assert world.status(job) == "Stopping"
    slot = token_store.get_slot(world.dynamodb, token_store.get_job(world.dynamodb, job).slot)  # type: ignore[union-attr]
    assert slot is not None and slot.job is None  # a retry of the task starts afresh


def test_a_retried_parallel_stops_the_cancelled_branchs_job_first(world: HandlerWorld) -> None:
    """Case 1, retried: the new entry's submit stops the closed entry's job before creating its
    own, so that one job runs at any time."""
    execution = world.start("run-1")
    first_token = world.token()
    first = submit.handler(world.submit_event(execution, first_token))["TrainingJobName"]
    world.open_tokens.discard(first_token)
    retried = world.submit_event(execution, world.token(), entered="2026-01-01T00:05:00Z")
    second = submit.handler(retried)["TrainingJobName"]
    assert second != first
    assert world.training.running() == [first, second]
    assert world.status(first) == "Stopping"
    assert world.status(second) == "InProgress"


def test_a_stale_execution_end_event_leaves_a_live_run_alone(world: HandlerWorld) -> None:
    """Case 2: a FAILED event delivered late (the execution runs: redriven, or never ended)."""
    execution = world.start("run-1")
    job = submit.handler(world.submit_event(execution, world.token()))["TrainingJobName"]
    answer = events.dispatch(_execution_end(execution, "FAILED"), world.dynamodb)
    assert answer == f"run goes on: {job}"
    assert world.status(job) == "InProgress"


def test_an_end_event_of_an_earlier_execution_of_the_same_arn_stops_nothing(
    world: HandlerWorld,
) -> None:
    """Case 2: the job's run started at another time than the execution that ended (a state
    machine re-created under the same name reuses the ARN)."""
    execution = world.start("run-1")
    event = world.submit_event(execution, world.token())
    event["context"]["executionStartTime"] = "2020-01-01T00:00:00.000Z"
    job = submit.handler(event)["TrainingJobName"]
    world.stepfunctions.stop_execution(executionArn=execution)
    events.dispatch(_execution_end(execution, "ABORTED"), world.dynamodb)
    assert world.status(job) == "InProgress"


def test_a_late_invocation_of_an_earlier_attempt_never_takes_the_job(world: HandlerWorld) -> None:
    """Case 3: attempt 1 took attempt 0's job over; attempt 0's delayed invocation arrives."""
    execution = world.start("run-1")
    token_0, token_1 = world.token(), world.token()
    late = world.submit_event(execution, token_0)
    job = submit.handler(late)["TrainingJobName"]
    world.open_tokens.discard(token_0)  # Step Functions closes attempt 0 before attempt 1
    assert submit.handler(world.submit_event(execution, token_1, retry_count=1))["resumed"]
    answer = submit.handler(late)
    assert "superseded" in answer
    item = token_store.get_job(world.dynamodb, job)
    assert item is not None and item.task_token == token_1
    world.training.end(job, "Completed")
    events.dispatch(world.job_event(job), world.dynamodb)
    assert [r.operation for r in world.reports_to(token_1)] == ["SendTaskSuccess"]
    assert len(world.training.requests) == 1


def test_map_entries_get_their_own_slots_and_jobs(world: HandlerWorld) -> None:
    """Case 4: two entries of one task in an inline Map, no job_key, the same entry time, each
    with its own item (overrides): each gets its own job and hears of it."""
    execution = world.start("run-1")
    tokens = [world.token(), world.token()]
    names = [
        submit.handler(
            world.submit_event(execution, token, execution_input={"hyperparameters": {"e": n}})
        )["TrainingJobName"]
        for token, n in zip(tokens, (1, 99), strict=True)
    ]
    assert names[0] != names[1]
    for name in names:
        world.training.end(name, "Completed")
        events.dispatch(world.job_event(name), world.dynamodb)
    for token, name in zip(tokens, names, strict=True):
        [report] = world.reports_to(token)
        assert report.body["TrainingJobName"] == name


def test_identical_map_entries_get_a_lane_each(world: HandlerWorld) -> None:
    """Item 5: iterations of an inline Map over identical items (the same overrides, no
    job_key, the same entry time) tell apart by their tokens alone: a job each, each heard by
    its own entry only; a duplicate invocation of one finds its own job."""
    execution = world.start("run-1")
    tokens = [world.token() for _ in range(3)]
    names = [submit.handler(world.submit_event(execution, t))["TrainingJobName"] for t in tokens]
    assert len(set(names)) == 3 and world.training.running() == names
    again = submit.handler(world.submit_event(execution, tokens[1]))
    assert again == {"TrainingJobName": names[1], "resumed": True}
    for name in names:
        world.training.end(name, "Completed")
        events.dispatch(world.job_event(name), world.dynamodb)
    for token, name in zip(tokens, names, strict=True):
        [report] = world.reports_to(token)
        assert report.body["TrainingJobName"] == name


def test_a_retry_of_an_identical_entry_never_takes_its_live_twins_job(
    world: HandlerWorld,
) -> None:
    execution = world.start("run-1")
    first, twin = world.token(), world.token()
    failed = submit.handler(world.submit_event(execution, first))["TrainingJobName"]
    running = submit.handler(world.submit_event(execution, twin))["TrainingJobName"]
    world.training.end(failed, "Failed:AlgorithmError: boom")
    events.dispatch(world.job_event(failed), world.dynamodb)  # closes the first task
    retry = world.token()
    retried = submit.handler(world.submit_event(execution, retry, retry_count=1))
    assert retried["TrainingJobName"] not in (failed, running)
    assert world.status(running) == "InProgress"
    world.training.end(running, "Completed")
    events.dispatch(world.job_event(running), world.dynamodb)
    assert [r.body["TrainingJobName"] for r in world.reports_to(twin)] == [running]
    assert world.reports_to(retry) == []


def test_a_late_invocation_that_never_claimed_makes_no_job_in_another_lane(
    world: HandlerWorld,
) -> None:
    """Attempt 0's first invocation failed before it wrote anything (throttled); the task was
    retried, attempt 1 holds lane 0; a delayed duplicate of attempt 0 arrives: it must not take
    a free lane as if it were another entry."""
    execution = world.start("run-1")
    first = world.token()
    world.open_tokens.discard(first)  # attempt 0 failed; Step Functions retried the task
    job = submit.handler(world.submit_event(execution, world.token(), retry_count=1))
    late = submit.handler(world.submit_event(execution, first))
    assert "superseded" in late
    assert [r["TrainingJobName"] for r in world.training.requests] == [job["TrainingJobName"]]


def test_a_success_one_identical_entry_heard_is_never_handed_to_another(
    world: HandlerWorld,
) -> None:
    execution = world.start("run-1")
    heard, cancelled = world.token(), world.token()
    done = submit.handler(world.submit_event(execution, heard))["TrainingJobName"]
    stopped = submit.handler(world.submit_event(execution, cancelled))["TrainingJobName"]
    world.training.end(done, "Completed")
    events.dispatch(world.job_event(done), world.dynamodb)
    world.open_tokens.discard(cancelled)  # its iteration was cancelled, then retried
    events.reconcile(world.dynamodb)
    assert world.status(stopped) == "Stopping"
    retry = world.token()
    answer = submit.handler(world.submit_event(execution, retry, retry_count=1))
    assert answer["TrainingJobName"] not in (done, stopped)
    assert world.reports_to(retry) == []
    assert [r.body["TrainingJobName"] for r in world.reports_to(heard)] == [done]


def test_a_job_of_another_request_is_never_an_entrys_own(world: HandlerWorld) -> None:
    """Case 4's second guard: the job's request digest (in its slot tag) must be the entry's."""
    from hetero_constructs.handlers import attempt

    execution = world.start("run-1")
    event = world.submit_event(execution, world.token())
    name = submit.handler(event)["TrainingJobName"]
    job = world.sagemaker.describe_training_job(TrainingJobName=name)
    run = attempt.Run.of(event)
    request, _ = attempt.prepare(event, lambda _prefix: name)
    assert attempt.is_ours(world.sagemaker, job, run, 0, request)
    other = {**request, "HyperParameters": {**request["HyperParameters"], "e": "99"}}
    assert not attempt.is_ours(world.sagemaker, job, run, 0, other)


def test_two_racing_invocations_create_one_job(
    world: HandlerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case 5: attempt 1 (a retry of a call that timed out) read the slot before attempt 0
    wrote it."""
    execution = world.start("run-1")
    first = world.token()
    job = submit.handler(world.submit_event(execution, first))["TrainingJobName"]
    world.open_tokens.discard(first)  # Step Functions closes attempt 0 before attempt 1
    real = token_store.get_slot
    reads: list[int] = []

    def read_before_the_write(dynamodb: Any, digest: str) -> Any:
        reads.append(1)
        return None if len(reads) == 1 else real(dynamodb, digest)

    monkeypatch.setattr(token_store, "get_slot", read_before_the_write)
    retry = world.token()
    answer = submit.handler(world.submit_event(execution, retry, retry_count=1))
    # It lost the claim, then found attempt 0's job and took it over: still one job.
    assert answer == {"TrainingJobName": job, "resumed": True}
    assert len(world.training.requests) == 1
    item = token_store.get_job(world.dynamodb, job)
    assert item is not None and item.task_token == retry


def test_a_job_name_collision_never_loses_the_first_runs_result(
    world: HandlerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case 6: two runs forced onto one job name."""
    monkeypatch.setattr(submit, "attempt_job_name", lambda *_: "hetero-test-collision")
    run_a, run_b = world.start("run-a"), world.start("run-b")
    token_a, token_b = world.token(), world.token()
    job = submit.handler(world.submit_event(run_a, token_a))["TrainingJobName"]
    submit.handler(world.submit_event(run_b, token_b))
    assert world.reports_to(token_b)[0].error == lifecycle.Errors.JOB_NAME_TAKEN
    world.training.end(job, "Completed")
    events.dispatch(world.job_event(job), world.dynamodb)
    assert [r.operation for r in world.reports_to(token_a)] == ["SendTaskSuccess"]


def test_a_malformed_item_is_reported_once_then_no_pass_fails(world: HandlerWorld) -> None:
    world.dynamodb.put_item(TableName="runs", Item={"pk": {"S": "job#broken"}})
    with pytest.raises(events.ReconcileIncomplete, match="job#broken"):
        events.reconcile(world.dynamodb)
    assert events.reconcile(world.dynamodb)["running"] == 0  # the next pass goes through
    assert all("expires_at" in item for item in world.items())


def test_an_oversize_failure_cause_is_cut_to_fit(world: HandlerWorld) -> None:
    from hetero_constructs.handlers import outcome

    token = world.token()
    cause = {
        "TrainingJobName": "job",
        "TrainingJobStatus": "Failed",
        "SecondaryStatus": "Failed",
        "FailureReason": "é" * 40_000,
    }
    outcome.send_failure(world.stepfunctions, token, "Err", cause)
    [report] = world.reports_to(token)
    assert len(report.text) <= outcome.MAX_CAUSE
    assert report.body["truncated"] is True
    assert report.body["FailureReason"].startswith("éé")


def test_more_violations_counts_what_an_earlier_bound_left_out() -> None:
    many = [Violation("R", f"p{i}", "problem", i, "allowed", "fix") for i in range(10_000)]
    twice = bounded(list(bounded(many)))
    assert twice[-1].rule == MORE_VIOLATIONS_RULE
    assert twice[-1].value == 10_000 - (len(twice) - 1)


def _ended_while_in_flight(world: HandlerWorld, execution: str, token: str, **event: Any) -> str:
    """An attempt's job ends and its success is heard while the attempt's submit call is still
    in flight (the events Lambda reports it); the job's name."""
    job = str(submit.handler(world.submit_event(execution, token, **event))["TrainingJobName"])
    world.training.end(job, "Completed")
    events.dispatch(world.job_event(job), world.dynamodb)
    assert [r.operation for r in world.reports_to(token)] == ["SendTaskSuccess"]
    return job


@pytest.mark.parametrize("kept", [False, True], ids=["call-failure-wins", "callback-wins"])
def test_a_success_heard_while_the_submit_call_was_in_flight_trains_no_second_job(
    world: HandlerWorld, kept: bool
) -> None:
    """Issue 33 item 7: the job's success is accepted while the submit call is in flight, then
    the call fails (``Lambda.ServiceException``). If the service lets the call's failure win,
    the task's retry hears the same job's success; if the callback closed the task, no retry
    comes, and an identical entry's retry never hears that success."""
    execution = world.start("run-1")
    first = world.token()
    job = _ended_while_in_flight(world, execution, first)
    if not kept:
        world.task_ends[first] = "TaskFailed"  # the call's failure won: the task retries
        retry = world.token()
        answer = submit.handler(world.submit_event(execution, retry, retry_count=1))
        assert answer["TrainingJobName"] == job
        (heard,) = world.reports_to(retry)
        assert heard.operation == "SendTaskSuccess"
        assert heard.body["TrainingJobName"] == job
        assert [a.name for a in world.training.attempts] == [job]
        return
    # An identical entry (same context) whose first attempt failed before any work.
    twin = world.token()
    world.task_ends[twin] = "TaskFailed"
    world.open_tokens.discard(twin)
    twins_retry = world.token()
    answer = submit.handler(world.submit_event(execution, twins_retry, retry_count=1))
    assert answer["TrainingJobName"] != job
    assert world.reports_to(twins_retry) == []
    assert len(world.training.attempts) == 2
