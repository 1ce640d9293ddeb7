"""RedriveExecution in the local runner (moto has none), checked against the service's rules.

A Pass state, then a task that waits for its token (the test answers it through SQS), then a
Pass state that shows the context object. The execution ends FAILED (the task's failure),
ABORTED (StopExecution) or TIMED_OUT (the state machine's timeout) while the task waits, and is
redriven: the task is entered again with the input it was first entered with, the Pass state
before it is not run again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hetero_constructs.local import LocalCloud
from tests.fixtures.redrive_parts import RedriveParts
from tests.fixtures.timeouts import Timeouts

#: The state machine's timeout: it elapses only when a test says so (the ``timeouts`` fixture),
#: so that no run races the clock.
TIMEOUT_SECONDS = 3600


def _template(queue: str) -> dict[str, Any]:
    definition = {
        "StartAt": "Prepare",
        "TimeoutSeconds": TIMEOUT_SECONDS,
        "States": {
            "Prepare": {
                "Type": "Pass",
                "Parameters": {"prepared.$": "$$.State.EnteredTime"},
                "ResultPath": "$.prepare",
                "Next": "Work",
            },
            "Work": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {
                    "QueueUrl": queue,
                    "MessageBody": {"token.$": "$$.Task.Token", "input.$": "$"},
                },
                "ResultPath": "$.work",
                "Next": "Report",
            },
            "Report": {
                "Type": "Pass",
                "Parameters": {
                    "execution.$": "$$.Execution",
                    "work.$": "$.work",
                    "prepare.$": "$.prepare",
                },
                "End": True,
            },
        },
    }
    return {
        "Resources": {
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {"DefinitionString": json.dumps(definition)},
            }
        }
    }


@pytest.fixture
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud("us-west-2", simulate="Completed") as local:
        yield local


class Machine:
    def __init__(self, cloud: LocalCloud) -> None:
        self.cloud = cloud
        self.sqs = cloud.client("sqs")
        self.stepfunctions = cloud.client("stepfunctions")
        self.queue = self.sqs.create_queue(QueueName="work")["QueueUrl"]
        cloud.deploy(_template(self.queue))

    def start(self, name: str) -> str:
        started = self.stepfunctions.start_execution(
            stateMachineArn=self.cloud.state_machine(), name=name
        )
        return str(started["executionArn"])

    def task(self) -> dict[str, Any]:
        """The next message of the waiting task: its token and input."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for message in self.sqs.receive_message(QueueUrl=self.queue).get("Messages", []):
                self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
                return dict(json.loads(message["Body"]))
            time.sleep(0.05)
        raise AssertionError("the task never sent its token")

    def ended(self, arn: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            described = dict(self.stepfunctions.describe_execution(executionArn=arn))
            if described["status"] != "RUNNING":
                return described
            time.sleep(0.05)
        raise AssertionError(f"{arn} did not end")

    def history(self, arn: str) -> list[dict[str, Any]]:
        return list(self.cloud.history(arn))

    def statuses(self, arn: str) -> list[str]:
        """The status changes reported to EventBridge for ``arn``, in order."""
        return [
            e["detail"]["status"]
            for e in list(self.cloud.bus.events)
            if e["source"] == "aws.states" and e["detail"]["executionArn"] == arn
        ]


def _end(machine: Machine, arn: str, how: str, token: str, timeouts: Timeouts) -> None:
    if how == "FAILED":
        machine.stepfunctions.send_task_failure(taskToken=token, error="Work.Failed", cause="c")
    elif how == "ABORTED":
        machine.stepfunctions.stop_execution(executionArn=arn, error="Stopped", cause="test")
    else:  # TIMED_OUT: the state machine's timeout, while the task waits.
        timeouts.elapse()


@pytest.mark.parametrize("how", ["FAILED", "ABORTED", "TIMED_OUT"])
def test_a_redrive_goes_on_from_the_state_the_run_ended_in(
    cloud: LocalCloud, timeouts: Timeouts, how: str
) -> None:
    machine = Machine(cloud)
    arn = machine.start(f"redrive-{how.lower()}")
    first = machine.task()
    _end(machine, arn, how, first["token"], timeouts)
    ended = machine.ended(arn)
    assert ended["status"] == how
    assert (ended["redriveCount"], ended["redriveStatus"]) == (0, "REDRIVABLE")
    assert "redriveDate" not in ended

    redriven = machine.stepfunctions.redrive_execution(executionArn=arn)
    described = machine.stepfunctions.describe_execution(executionArn=arn)
    assert described["status"] == "RUNNING"
    assert described["executionArn"] == arn and described["startDate"] == ended["startDate"]
    assert described["redriveCount"] == 1
    assert described["redriveDate"] == redriven["redriveDate"] >= ended["stopDate"]
    assert described["redriveStatus"] == "NOT_REDRIVABLE"
    assert described["redriveStatusReason"] == "Execution is RUNNING and cannot be redriven"
    assert "error" not in described and "stopDate" not in described

    second = machine.task()
    assert second["token"] != first["token"]
    assert second["input"] == first["input"]  # the input the task was first entered with
    with pytest.raises(ClientError) as late:  # the ended run's task is gone
        machine.stepfunctions.send_task_success(taskToken=first["token"], output="{}")
    assert late.value.response["Error"]["Code"] == "TaskDoesNotExist"
    machine.stepfunctions.send_task_success(taskToken=second["token"], output='{"ok": 2}')
    done = machine.ended(arn)
    assert done["status"] == "SUCCEEDED", done
    output = json.loads(done["output"])
    assert output["work"] == {"ok": 2} and output["prepare"] == first["input"]["prepare"]
    assert output["execution"]["RedriveCount"] == 1
    assert output["execution"]["RedriveTime"].endswith("Z")

    events = machine.history(arn)
    types = [e["type"] for e in events]
    end_type = {"FAILED": "ExecutionFailed", "ABORTED": "ExecutionAborted"}.get(
        how, "ExecutionTimedOut"
    )
    assert types.count("PassStateEntered") == 2  # Prepare once, Report once
    assert types.count("TaskStateEntered") == 2  # the task, again
    assert types.index(end_type) < types.index("ExecutionRedriven") < len(types) - 1
    assert types[-1] == "ExecutionSucceeded"
    (redrive_event,) = [e for e in events if e["type"] == "ExecutionRedriven"]
    assert redrive_event["executionRedrivenEventDetails"] == {"redriveCount": 1}
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    # EventBridge hears of the redriven run as of a new one: RUNNING, then its end.
    assert machine.statuses(arn) == ["RUNNING", how, "RUNNING", "SUCCEEDED"]


def test_a_redriven_run_is_redriven_again_and_counts(cloud: LocalCloud) -> None:
    machine = Machine(cloud)
    arn = machine.start("twice")
    for count in (1, 2):
        token = machine.task()["token"]
        machine.stepfunctions.send_task_failure(taskToken=token, error="Work.Failed")
        assert machine.ended(arn)["status"] == "FAILED"
        machine.stepfunctions.redrive_execution(executionArn=arn)
        assert machine.stepfunctions.describe_execution(executionArn=arn)["redriveCount"] == count
    machine.stepfunctions.send_task_success(taskToken=machine.task()["token"], output="{}")
    assert json.loads(machine.ended(arn)["output"])["execution"]["RedriveCount"] == 2
    (listed,) = machine.stepfunctions.list_executions(stateMachineArn=cloud.state_machine())[
        "executions"
    ]
    assert listed["redriveCount"] == 2 and "redriveDate" in listed


def test_what_cannot_be_redriven_is_refused_as_the_service_refuses_it(cloud: LocalCloud) -> None:
    machine = Machine(cloud)
    arn = machine.start("refused")
    token = machine.task()["token"]
    with pytest.raises(ClientError) as running:
        machine.stepfunctions.redrive_execution(executionArn=arn)
    assert running.value.response["Error"]["Code"] == "ExecutionNotRedrivable"
    assert "Execution is RUNNING and cannot be redriven" in str(running.value)
    machine.stepfunctions.send_task_success(taskToken=token, output="{}")
    done = machine.ended(arn)
    assert done["status"] == "SUCCEEDED"
    # The context object: RedriveCount 0 until a redrive, RedriveTime only after one.
    execution = json.loads(done["output"])["execution"]
    assert execution["RedriveCount"] == 0 and "RedriveTime" not in execution
    assert done["redriveStatus"] == "NOT_REDRIVABLE"
    assert done["redriveStatusReason"] == "Execution is SUCCEEDED and cannot be redriven"
    with pytest.raises(ClientError) as succeeded:
        machine.stepfunctions.redrive_execution(executionArn=arn)
    assert succeeded.value.response["Error"]["Code"] == "ExecutionNotRedrivable"
    assert "SUCCEEDED" in succeeded.value.response["Error"]["Message"]
    assert machine.stepfunctions.describe_execution(executionArn=arn)["redriveCount"] == 0
    with pytest.raises(ClientError) as missing:
        machine.stepfunctions.redrive_execution(executionArn=arn + "-missing")
    assert missing.value.response["Error"]["Code"] == "ExecutionDoesNotExist"
    assert machine.statuses(arn) == ["RUNNING", "SUCCEEDED"]


def _parallel_template(queue: str) -> dict[str, Any]:
    def branch(side: str) -> dict[str, Any]:
        waiting = {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {
                "QueueUrl": queue,
                "MessageBody": {"token.$": "$$.Task.Token", "side": side},
            },
            "End": True,
        }
        return {"StartAt": side, "States": {side: waiting}}

    definition = {
        "StartAt": "Both",
        "States": {
            "Both": {"Type": "Parallel", "Branches": [branch("Left"), branch("Right")], "End": True}
        },
    }
    properties = {"DefinitionString": json.dumps(definition)}
    return {
        "Resources": {
            "Machine": {"Type": "AWS::StepFunctions::StateMachine", "Properties": properties}
        }
    }


@pytest.mark.parametrize("how", ["FAILED", "ABORTED"])
def test_a_redriven_parallel_runs_only_the_branch_that_did_not_succeed(
    cloud: LocalCloud, redrive_parts: RedriveParts, how: str
) -> None:
    sqs, stepfunctions = cloud.client("sqs"), cloud.client("stepfunctions")
    queue = sqs.create_queue(QueueName="sides")["QueueUrl"]
    cloud.deploy(_parallel_template(queue))
    arn = stepfunctions.start_execution(stateMachineArn=cloud.state_machine(), name=how)[
        "executionArn"
    ]

    def tokens(count: int, wait: float = 60) -> dict[str, str]:
        found: dict[str, str] = {}
        deadline = time.monotonic() + wait
        while len(found) < count and time.monotonic() < deadline:
            for message in sqs.receive_message(QueueUrl=queue).get("Messages", []):
                sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
                body = json.loads(message["Body"])
                found[body["side"]] = body["token"]
        return found

    first = tokens(2)
    stepfunctions.send_task_success(taskToken=first["Left"], output='{"left": 1}')
    # The right branch ends the run once the left one's success is recorded (before that, the
    # left one is stopped with the run and is not a success).
    redrive_parts.wait_succeeded("Left")
    if how == "FAILED":
        stepfunctions.send_task_failure(taskToken=first["Right"], error="Right.Failed")
    else:
        stepfunctions.stop_execution(executionArn=arn)
    deadline = time.monotonic() + 60
    while stepfunctions.describe_execution(executionArn=arn)["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.05)

    stepfunctions.redrive_execution(executionArn=arn)
    again = tokens(1)
    assert list(again) == ["Right"]  # the left branch succeeded: it is not run again
    stepfunctions.send_task_success(taskToken=again["Right"], output='{"right": 2}')
    while (described := stepfunctions.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline + 60
        time.sleep(0.05)
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == [{"left": 1}, {"right": 2}]
    entered = [
        e["stateEnteredEventDetails"]["name"]
        for e in cloud.history(arn)
        if e["type"] == "TaskStateEntered"
    ]
    assert sorted(entered) == ["Left", "Right", "Right"]
    assert tokens(1, wait=1) == {}  # no late message of a left branch run again


def test_a_redriven_map_runs_only_the_iteration_that_did_not_succeed(
    cloud: LocalCloud, redrive_parts: RedriveParts
) -> None:
    sqs, stepfunctions = cloud.client("sqs"), cloud.client("stepfunctions")
    queue = sqs.create_queue(QueueName="items")["QueueUrl"]
    waiting = {
        "Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {
            "QueueUrl": queue,
            "MessageBody": {"token.$": "$$.Task.Token", "item.$": "$"},
        },
        "End": True,
    }
    definition = {
        "StartAt": "Each",
        "States": {
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "ItemProcessor": {"StartAt": "Work", "States": {"Work": waiting}},
                "End": True,
            }
        },
    }
    properties = {"DefinitionString": json.dumps(definition)}
    cloud.deploy(
        {"Resources": {"M": {"Type": "AWS::StepFunctions::StateMachine", "Properties": properties}}}
    )
    arn = stepfunctions.start_execution(
        stateMachineArn=cloud.state_machine(), name="map", input='{"items": [0, 1, 2]}'
    )["executionArn"]

    def tokens(count: int, wait: float = 60) -> dict[int, str]:
        found: dict[int, str] = {}
        deadline = time.monotonic() + wait
        while len(found) < count and time.monotonic() < deadline:
            for message in sqs.receive_message(QueueUrl=queue).get("Messages", []):
                sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
                body = json.loads(message["Body"])
                found[body["item"]] = body["token"]
        return found

    first = tokens(3)
    for item in (0, 2):
        stepfunctions.send_task_success(taskToken=first[item], output=json.dumps({"done": item}))
    redrive_parts.wait_succeeded(0, 2)
    deadline = time.monotonic() + 60
    stepfunctions.send_task_failure(taskToken=first[1], error="Item.Failed")
    while stepfunctions.describe_execution(executionArn=arn)["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.05)

    stepfunctions.redrive_execution(executionArn=arn)
    again = tokens(1)
    assert list(again) == [1]  # items 0 and 2 succeeded: they are not run again
    stepfunctions.send_task_success(taskToken=again[1], output='{"done": "1 again"}')
    while (described := stepfunctions.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline + 60
        time.sleep(0.05)
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == [{"done": 0}, {"done": "1 again"}, {"done": 2}]
    assert [e["type"] for e in cloud.history(arn)].count("TaskStateEntered") == 4
    assert tokens(1, wait=1) == {}
