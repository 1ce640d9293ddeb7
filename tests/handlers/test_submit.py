"""The submit handler, called directly: one job per attempt, failures the task can act on."""

from __future__ import annotations

from hetero_constructs.contract import lifecycle
from hetero_constructs.handlers import submit, token_store
from tests.fixtures.handler_world import HandlerWorld


def test_creates_one_tagged_job_and_remembers_it_before_the_end(world: HandlerWorld) -> None:
    execution = world.start("run-1")
    token = world.token()
    answer = submit.handler(world.submit_event(execution, token))
    name = answer["TrainingJobName"]
    assert answer["attempt"] == 0
    assert world.status(name) == "InProgress"
    tags = world.sagemaker.list_tags(
        ResourceArn=world.sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]
    )["Tags"]
    found = {tag["Key"]: tag["Value"] for tag in tags}
    assert found[lifecycle.TAG_EXECUTION] == execution
    assert found[lifecycle.TAG_ATTEMPT] == "0"
    item = token_store.get_job(world.dynamodb, name)
    assert item is not None and item.task_token == token and item.execution_arn == execution
    slot = token_store.get_slot(world.dynamodb, item.slot)
    assert slot is not None and slot.job == name and not slot.reported
    assert world.reports == []  # the task waits for the job's end


def test_a_repeated_invocation_of_an_attempt_continues_its_job(world: HandlerWorld) -> None:
    execution = world.start("run-1")
    token = world.token()
    first = submit.handler(world.submit_event(execution, token))
    again = submit.handler(world.submit_event(execution, token))
    assert again == {"TrainingJobName": first["TrainingJobName"], "resumed": True}
    assert len(world.training.requests) == 1


def test_a_retry_after_a_failed_job_gets_a_new_job_name(world: HandlerWorld) -> None:
    from hetero_constructs.handlers import events

    execution = world.start("run-1")
    first = submit.handler(world.submit_event(execution, world.token()))["TrainingJobName"]
    world.training.end(first, "Failed:AlgorithmError: boom")
    events.dispatch(world.job_event(first), world.dynamodb)
    retry = submit.handler(world.submit_event(execution, world.token(), retry_count=1))
    assert retry["attempt"] == 1
    assert retry["TrainingJobName"] != first
    assert [a.name for a in world.training.attempts] == [first, retry["TrainingJobName"]]


def test_invalid_overrides_fail_the_task_and_create_no_job(world: HandlerWorld) -> None:
    execution = world.start("run-1")
    token = world.token()
    event = world.submit_event(execution, token, execution_input={"instance_count": "many"})
    answer = submit.handler(event)
    assert answer["failed"] == lifecycle.Errors.INVALID_OVERRIDES
    [report] = world.reports_to(token)
    assert report.error == lifecycle.Errors.INVALID_OVERRIDES
    assert report.body["violations"]
    assert world.training.requests == []
    assert world.items("job#") == []


def test_a_quota_refusal_fails_the_task_and_moves_the_slot_on(world: HandlerWorld) -> None:
    execution = world.start("run-1")
    token = world.token()
    world.training.script(["ResourceLimitExceeded"])
    answer = submit.handler(world.submit_event(execution, token))
    assert answer["failed"] == lifecycle.Errors.RESOURCE_LIMIT_EXCEEDED
    assert world.reports_to(token)[0].error == lifecycle.Errors.RESOURCE_LIMIT_EXCEEDED
    [slot] = world.items("slot#")
    assert slot["capacity_failures"]["N"] == "1"
    assert world.items("job#") == []


def test_a_job_created_for_an_ended_execution_is_stopped(world: HandlerWorld) -> None:
    execution = world.start("run-1")
    event = world.submit_event(execution, world.token())
    world.stepfunctions.stop_execution(executionArn=execution)
    name = submit.handler(event)["TrainingJobName"]
    assert world.status(name) == "Stopping"
