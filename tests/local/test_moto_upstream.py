"""moto's gaps that the local account fills, reproduced on bare moto: one minimal reproduction
each, fit to file upstream (docs/local-runs.md lists them with what the service does).

Each test asserts what bare moto does today. When one fails on a new moto release, that release
closed the gap: drop the replacement that fills it (hetero_constructs/local/moto_targets.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/sfn"


@pytest.fixture
def sfn(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A Step Functions client of bare moto (no local account), executing state machines."""
    import boto3
    from moto import mock_aws

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        yield boto3.client("stepfunctions", region_name=REGION)


def _machine(sfn: Any, definition: dict[str, Any], name: str = "m") -> str:
    made = sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE)
    return str(made["stateMachineArn"])


def _ended(sfn: Any, arn: str, within: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while (described := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the execution did not end"
        time.sleep(0.05)
    return dict(described)


def _history(sfn: Any, arn: str) -> list[dict[str, Any]]:
    return list(sfn.get_execution_history(executionArn=arn)["events"])


def _waiting_task(queue_url: str, **fields: Any) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"QueueUrl": queue_url, "MessageBody": {"token.$": "$$.Task.Token"}},
        **fields,
    }


def _queue_and_token(sfn: Any, definition_of: Any) -> tuple[str, str]:
    """Start a machine whose task sends its token to a queue; (execution ARN, token)."""
    import boto3

    sqs = boto3.client("sqs", region_name=REGION)
    queue = sqs.create_queue(QueueName="tokens")["QueueUrl"]
    arn = sfn.start_execution(stateMachineArn=_machine(sfn, definition_of(queue)))["executionArn"]
    deadline = time.monotonic() + 60
    while True:
        messages = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", [])
        if messages:
            return arn, json.loads(messages[0]["Body"])["token"]
        assert time.monotonic() < deadline, "no token"


def test_jsonata_is_not_evaluated(sfn: Any) -> None:
    """Service: the execution succeeds with 2. moto: its JSONata evaluator is a JVM bridge left
    None (``_eval_jsonata``), so every JSONata expression fails."""
    arn = _machine(
        sfn,
        {
            "QueryLanguage": "JSONata",
            "StartAt": "P",
            "States": {"P": {"Type": "Pass", "Output": "{% 1 + 1 %}", "End": True}},
        },
    )
    ended = _ended(sfn, sfn.start_execution(stateMachineArn=arn)["executionArn"])
    assert ended["status"] == "FAILED"


def test_retry_count_is_missing_outside_task_states(sfn: Any) -> None:
    """Service: ``$$.State.RetryCount`` is 0 in a Pass state. moto: the path does not exist."""
    arn = _machine(
        sfn,
        {
            "StartAt": "P",
            "States": {
                "P": {"Type": "Pass", "Parameters": {"n.$": "$$.State.RetryCount"}, "End": True}
            },
        },
    )
    ended = _ended(sfn, sfn.start_execution(stateMachineArn=arn)["executionArn"])
    assert ended["status"] == "FAILED"


def test_a_camel_case_integration_is_not_normalised(sfn: Any) -> None:
    """Service: ``states:startExecution`` starts the child and returns ``ExecutionArn`` and
    ``StartDate``. moto: its parameters reach boto3 unnormalised and the task fails."""
    child = _machine(
        sfn, {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}, name="child"
    )
    parent = _machine(
        sfn,
        {
            "StartAt": "Start",
            "States": {
                "Start": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::states:startExecution",
                    "Parameters": {"StateMachineArn": child},
                    "End": True,
                }
            },
        },
        name="parent",
    )
    ended = _ended(sfn, sfn.start_execution(stateMachineArn=parent)["executionArn"])
    assert ended["status"] == "FAILED"


def test_send_task_failure_drops_the_cause(sfn: Any) -> None:
    """Service: the TaskFailed event keeps the cause given. moto: its response passes on only
    the error."""
    arn, token = _queue_and_token(
        sfn,
        lambda queue: {"StartAt": "W", "States": {"W": {**_waiting_task(queue), "End": True}}},
    )
    sfn.send_task_failure(taskToken=token, error="Boom", cause="the cause")
    assert _ended(sfn, arn)["status"] == "FAILED"
    (failed,) = [e for e in _history(sfn, arn) if e["type"] == "TaskFailed"]
    assert "cause" not in failed["taskFailedEventDetails"]


def test_a_token_answers_twice(sfn: Any) -> None:
    """Service: a task is closed at its first answer; a second SendTaskSuccess or
    SendTaskFailure answers ``TaskTimedOut``. moto: the second is accepted while the execution
    runs on (and replaces the first if the task has not read it yet)."""
    arn, token = _queue_and_token(
        sfn,
        lambda queue: {
            "StartAt": "W",
            "States": {
                "W": {
                    **_waiting_task(queue),
                    "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Linger"}],
                    "End": True,
                },
                "Linger": {"Type": "Wait", "Seconds": 3, "End": True},
            },
        },
    )
    sfn.send_task_failure(taskToken=token, error="Boom")
    sfn.send_task_success(taskToken=token, output="{}")  # no TaskTimedOut
    _ended(sfn, arn)


def test_an_execution_started_without_a_name_is_the_first_one_again(sfn: Any) -> None:
    """Service: each StartExecution without a name starts a new execution, named with a UUID.
    moto: the name is None, and a second nameless start with the same input returns the first
    execution (as a start with the same name and input does)."""
    waits = {"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 5, "End": True}}}
    arn = _machine(sfn, waits)
    first = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    assert sfn.start_execution(stateMachineArn=arn)["executionArn"] == first


def test_stop_execution_leaves_a_waiting_execution_running(sfn: Any) -> None:
    """Service: StopExecution ends the execution ABORTED at once, with an ExecutionAborted
    event. moto: it stays RUNNING while its task waits on its token."""
    arn, _ = _queue_and_token(
        sfn,
        lambda queue: {"StartAt": "W", "States": {"W": {**_waiting_task(queue), "End": True}}},
    )
    sfn.stop_execution(executionArn=arn, error="Stopped", cause="by the user")
    assert sfn.describe_execution(executionArn=arn)["status"] != "ABORTED"
    assert "ExecutionAborted" not in [e["type"] for e in _history(sfn, arn)]


def test_a_heartbeat_without_heartbeat_seconds_is_an_invalid_token(sfn: Any) -> None:
    """Service: SendTaskHeartbeat is accepted for any task waiting on its token. moto: only for
    a task with ``HeartbeatSeconds``."""
    _, token = _queue_and_token(
        sfn,
        lambda queue: {"StartAt": "W", "States": {"W": {**_waiting_task(queue), "End": True}}},
    )
    with pytest.raises(ClientError, match="InvalidToken"):
        sfn.send_task_heartbeat(taskToken=token)


def test_a_retried_callback_task_reuses_its_token(sfn: Any) -> None:
    """Service: each attempt of a retried ``waitForTaskToken`` task has a new token and waits on
    it. moto: the retry waits on the first token, whose failure it reads again at once: one
    SendTaskFailure fails both attempts."""
    retry = [{"ErrorEquals": ["Boom"], "IntervalSeconds": 1, "MaxAttempts": 1}]
    arn, token = _queue_and_token(
        sfn,
        lambda queue: {
            "StartAt": "W",
            "States": {"W": {**_waiting_task(queue, Retry=retry), "End": True}},
        },
    )
    sfn.send_task_failure(taskToken=token, error="Boom")
    assert _ended(sfn, arn)["status"] == "FAILED"
    assert [e["type"] for e in _history(sfn, arn)].count("TaskFailed") == 2


@pytest.mark.parametrize(
    ("fields", "moto_error", "service_error"),
    [
        ({"TimeoutSeconds": 1}, "States.Runtime", "States.Timeout"),
        (
            {"TimeoutSeconds": 30, "HeartbeatSeconds": 1},
            "States.Runtime",
            "States.HeartbeatTimeout",
        ),
    ],
    ids=["timeout", "heartbeat"],
)
def test_a_caught_timeout_re_raised_by_a_fail_state_is_a_runtime_error(
    sfn: Any, fields: dict[str, Any], moto_error: str, service_error: str
) -> None:
    """Service: the execution fails with the caught error (``States.Timeout``,
    ``States.HeartbeatTimeout``). moto: ``CustomErrorName`` refuses a ``States.`` name, so the
    Fail state fails with ``States.Runtime`` (and a heartbeat timeout is named ``States.Timeout``
    in the first place)."""
    arn, _ = _queue_and_token(
        sfn,
        lambda queue: {
            "StartAt": "W",
            "States": {
                "W": {
                    **_waiting_task(queue, **fields),
                    "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Failed"}],
                    "End": True,
                },
                "Failed": {"Type": "Fail", "ErrorPath": "$.Error", "CausePath": "$.Cause"},
            },
        },
    )
    ended = _ended(sfn, arn, within=90)
    assert ended["error"] == moto_error != service_error


def test_an_integer_tolerated_failure_percentage_is_refused(sfn: Any) -> None:
    """Service (and aws-cdk-lib, which renders it so): ``"ToleratedFailurePercentage": 50`` is
    valid. moto: CreateStateMachine fails (its grammar takes only a number with a point)."""
    iteration = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}
    definition = {
        "StartAt": "M",
        "States": {
            "M": {
                "Type": "Map",
                "ItemProcessor": {
                    **iteration,
                    "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                },
                "ToleratedFailurePercentage": 50,
                "End": True,
            }
        },
    }
    with pytest.raises(ClientError, match="ASLParserException"):
        _machine(sfn, definition)


def test_a_distributed_map_never_fails_its_map_run(sfn: Any) -> None:
    """Service: every item failing with no tolerated failure fails the execution with
    ``States.ExceedToleratedFailureThreshold``. moto: the Map Run, and the execution, succeed."""
    iteration = {
        "StartAt": "Boom",
        "States": {"Boom": {"Type": "Fail", "Error": "Boom"}},
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
    }
    arn = _machine(
        sfn,
        {"StartAt": "M", "States": {"M": {"Type": "Map", "ItemProcessor": iteration, "End": True}}},
    )
    ended = _ended(sfn, sfn.start_execution(stateMachineArn=arn, input="[1, 2]")["executionArn"])
    assert ended["status"] == "SUCCEEDED"


def test_redrive_execution_is_not_implemented(sfn: Any) -> None:
    """Service: RedriveExecution goes on from the state a FAILED execution did not get through.
    moto: the action is not implemented."""
    arn = _machine(sfn, {"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "E"}}})
    execution = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    assert _ended(sfn, execution)["status"] == "FAILED"
    with pytest.raises(Exception, match=r"not been implemented"):
        sfn.redrive_execution(executionArn=execution)


def test_stop_training_job_is_not_implemented(sfn: Any) -> None:
    """Service: StopTrainingJob moves an InProgress job to Stopping, then Stopped. moto: the
    action is not implemented (and a created job is Completed at once)."""
    import boto3

    sagemaker = boto3.client("sagemaker", region_name=REGION)
    sagemaker.create_training_job(
        TrainingJobName="j",
        AlgorithmSpecification={"TrainingImage": "image:1", "TrainingInputMode": "File"},
        RoleArn=ROLE,
        OutputDataConfig={"S3OutputPath": "s3://b/out/"},
        ResourceConfig={"InstanceType": "ml.m5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 10},
        StoppingCondition={"MaxRuntimeInSeconds": 600},
    )
    with pytest.raises(Exception, match=r"not been implemented"):
        sagemaker.stop_training_job(TrainingJobName="j")


def test_entered_time_is_not_in_the_services_format(sfn: Any) -> None:
    """Service: ``$$.State.EnteredTime`` is ``2026-01-01T00:00:00.000Z`` (milliseconds, Z).
    moto: Python's ``isoformat`` of the time."""
    arn = _machine(
        sfn,
        {
            "StartAt": "P",
            "States": {
                "P": {"Type": "Pass", "Parameters": {"t.$": "$$.State.EnteredTime"}, "End": True}
            },
        },
    )
    ended = _ended(sfn, sfn.start_execution(stateMachineArn=arn)["executionArn"])
    entered = json.loads(ended["output"])["t"]
    assert not (entered.endswith("Z") and len(entered) == len("2026-01-01T00:00:00.000Z"))


def _moto_matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    from moto.events.models import EventPattern

    return bool(EventPattern.load(json.dumps(pattern)).matches_event(event))


def test_event_patterns_differ_on_arrays_of_objects_booleans_and_unknown_matchers() -> None:
    """Service: a field inside an array of objects is matched in each object; ``true`` matches
    only ``true``; PutRule refuses an unknown matcher. moto's ``EventPattern``: the array is not
    looked into; ``1`` matches ``true`` (Python's ``1 == True``); an unknown matcher matches
    everything (the local account checks the pattern first)."""
    items = {"detail": {"items": [{"a": "x"}]}}
    assert not _moto_matches({"detail": {"items": {"a": ["x"]}}}, items)  # the service: a match
    assert _moto_matches({"detail": {"flag": [1]}}, {"detail": {"flag": True}})  # service: none
    assert _moto_matches({"detail": {"flag": [{"prefx": "z"}]}}, {"detail": {"flag": "a"}})
