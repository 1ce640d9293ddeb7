"""moto's gaps, filled: the training-job lifecycle and the context object, checked directly."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hetero_constructs.local import LocalCloud

REQUEST: dict[str, Any] = {
    "TrainingJobName": "gap-job",
    "AlgorithmSpecification": {"TrainingImage": "image:1", "TrainingInputMode": "File"},
    "RoleArn": "arn:aws:iam::123456789012:role/r",
    "OutputDataConfig": {"S3OutputPath": "s3://b/out/"},
    "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 10},
    "StoppingCondition": {"MaxRuntimeInSeconds": 600},
    "RetryStrategy": {"MaximumRetryAttempts": 2},
    "Tags": [{"Key": "team", "Value": "ml"}],
}


@pytest.fixture
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud("us-east-2", simulate="Completed") as local:
        yield local


def test_a_job_runs_until_its_end_is_simulated(cloud: LocalCloud) -> None:
    sagemaker = cloud.client("sagemaker")
    arn = sagemaker.create_training_job(**REQUEST)["TrainingJobArn"]
    job = sagemaker.describe_training_job(TrainingJobName="gap-job")
    assert (job["TrainingJobStatus"], job["SecondaryStatus"]) == ("InProgress", "Starting")
    assert job["RetryStrategy"] == {"MaximumRetryAttempts": 2}  # every member of the request
    assert "ModelArtifacts" not in job
    with pytest.raises(ClientError, match="ResourceInUse"):
        sagemaker.create_training_job(**REQUEST)
    assert {"Key": "team", "Value": "ml"} in sagemaker.list_tags(ResourceArn=arn)["Tags"]
    sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": "run", "Value": "1"}])
    assert {"Key": "run", "Value": "1"} in sagemaker.list_tags(ResourceArn=arn)["Tags"]
    cloud.end_training_job("gap-job", "Failed:CapacityError: no capacity")
    job = sagemaker.describe_training_job(TrainingJobName="gap-job")
    assert job["TrainingJobStatus"] == "Failed"
    assert job["FailureReason"] == "CapacityError: no capacity"
    # A capacity failure never trains: it ends in Starting and bills nothing.
    assert job["BillableTimeInSeconds"] == job["TrainingTimeInSeconds"] == 0
    assert [t["Status"] for t in job["SecondaryStatusTransitions"]] == ["Starting", "Failed"]
    assert "TrainingStartTime" not in job
    assert not cloud.client("logs").describe_log_streams(
        logGroupName="/aws/sagemaker/TrainingJobs", logStreamNamePrefix="gap-job/"
    )["logStreams"]
    starting, ended = [e for e in cloud.bus.events if e["source"] == "aws.sagemaker"]
    assert starting["detail"]["TrainingJobStatus"] == "InProgress"
    assert ended["detail-type"] == "SageMaker Training Job State Change"
    assert ended["resources"] == [arn] and ended["region"] == "us-east-2"
    assert ended["detail"]["FailureReason"] == "CapacityError: no capacity"
    assert isinstance(ended["detail"]["TrainingEndTime"], int)  # epoch milliseconds
    assert ended["detail"]["Tags"] == {"team": "ml", "run": "1"}


def test_a_job_that_runs_goes_through_its_stages_in_time_and_logs_per_host(
    cloud: LocalCloud,
) -> None:
    sagemaker, logs = cloud.client("sagemaker"), cloud.client("logs")
    request = {
        **REQUEST,
        "TrainingJobName": "staged",
        "ResourceConfig": {
            "InstanceGroups": [
                {"InstanceGroupName": "data", "InstanceType": "ml.c5.xlarge", "InstanceCount": 1},
                {"InstanceGroupName": "gpu", "InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
            ],
            "VolumeSizeInGB": 10,
        },
    }
    # The job's clock is driven (tick's ``now``), not slept through: an hour-long job is never
    # due in the wall-clock seconds this test takes, however loaded the machine.
    length = timedelta(hours=1)
    cloud.training.job_duration = length
    sagemaker.create_training_job(**request)
    assert not cloud.training.due("staged")
    created = sagemaker.describe_training_job(TrainingJobName="staged")["CreationTime"]
    cloud.training.tick(now=created + length / 2)
    # Half-way: past Starting, Downloading and Training; not yet Uploading.
    job = sagemaker.describe_training_job(TrainingJobName="staged")
    assert (job["TrainingJobStatus"], job["SecondaryStatus"]) == ("InProgress", "Training")
    cloud.training.tick(now=created + length * 0.95)
    # (CreationTime is to the millisecond: a second past the hour is past the job's end.)
    assert cloud.training.due("staged", now=created + length + timedelta(seconds=1))
    cloud.end_training_job("staged")
    job = sagemaker.describe_training_job(TrainingJobName="staged")
    transitions = job["SecondaryStatusTransitions"]
    assert [t["Status"] for t in transitions] == [
        "Starting", "Downloading", "Training", "Uploading", "Completed"
    ]  # fmt: skip
    starts = [t["StartTime"] for t in transitions]
    assert starts == sorted(starts) and job["TrainingEndTime"] >= starts[-1]
    # Billed from the instances' start (Downloading, at 0.1 of its length) to its end, which
    # comes no earlier than its last stage (Uploading, at 0.9): 0.8 of the hour.
    assert job["BillableTimeInSeconds"] == 0.8 * 3600 and job["TrainingStartTime"] == starts[1]
    streams = logs.describe_log_streams(
        logGroupName="/aws/sagemaker/TrainingJobs", logStreamNamePrefix="staged/"
    )["logStreams"]
    assert sorted(s["logStreamName"].split("/")[1].rsplit("-", 1)[0] for s in streams) == [
        "algo-1", "algo-2", "algo-3"
    ]  # fmt: skip
    first_lines = {
        s["logStreamName"].split("/")[1].rsplit("-", 1)[0]: logs.get_log_events(
            logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=s["logStreamName"]
        )["events"][0]["message"]
        for s in streams
    }
    # A drill (the cloud simulates every job): each line says so, and still names its group.
    assert first_lines == {
        "algo-1": "[simulated] SM_CURRENT_INSTANCE_GROUP=data",
        "algo-2": "[simulated] SM_CURRENT_INSTANCE_GROUP=gpu",
        "algo-3": "[simulated] SM_CURRENT_INSTANCE_GROUP=gpu",
    }
    assert all(t["StatusMessage"].startswith("simulated: ") for t in transitions)


def test_stop_training_job(cloud: LocalCloud) -> None:
    sagemaker = cloud.client("sagemaker")
    sagemaker.create_training_job(**REQUEST)
    sagemaker.stop_training_job(TrainingJobName="gap-job")
    assert sagemaker.describe_training_job(TrainingJobName="gap-job")["TrainingJobStatus"] == (
        "Stopping"
    )
    with pytest.raises(ClientError, match="status Stopping"):
        sagemaker.stop_training_job(TrainingJobName="gap-job")
    cloud.end_training_job("gap-job")
    job = sagemaker.describe_training_job(TrainingJobName="gap-job")
    assert (job["TrainingJobStatus"], job["SecondaryStatus"]) == ("Stopped", "Stopped")
    assert cloud.training.stopped_jobs == ["gap-job"]


def test_resource_limit_exceeded_is_scripted_per_attempt(cloud: LocalCloud) -> None:
    sagemaker = cloud.client("sagemaker")
    cloud.training.script(["ResourceLimitExceeded"])
    with pytest.raises(ClientError, match="ResourceLimitExceeded"):
        sagemaker.create_training_job(**REQUEST)
    sagemaker.create_training_job(**REQUEST)  # the next attempt is accepted
    assert [a.status for a in cloud.training.attempts] == ["ResourceLimitExceeded", "InProgress"]


def test_bad_outcomes_say_what_is_allowed() -> None:
    from hetero_constructs.local import Outcome

    with pytest.raises(ValueError, match="Completed, Failed, Stopped, ResourceLimitExceeded"):
        Outcome.parse("Crashed")
    with pytest.raises(ValueError, match="takes no detail"):
        Outcome.parse("Completed:fine")
    assert Outcome.parse("Stopped:MaxWaitTimeExceeded") == Outcome("Stopped", "MaxWaitTimeExceeded")


def _template(definition: dict[str, Any]) -> dict[str, Any]:
    return {
        "Resources": {
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {"DefinitionString": json.dumps(definition)},
            }
        }
    }


def test_context_object_fields_in_jsonpath_and_retries(cloud: LocalCloud) -> None:
    fields = {
        "entered.$": "$$.State.EnteredTime",
        "retries.$": "$$.State.RetryCount",
        "start.$": "$$.Execution.StartTime",
        "id.$": "$$.Execution.Id",
        "name.$": "$$.Execution.Name",
        "machine.$": "$$.StateMachine.Id",
    }
    cloud.deploy(
        _template(
            {
                "StartAt": "Context",
                "States": {
                    "Context": {
                        "Type": "Pass",
                        "Parameters": fields,
                        "ResultPath": "$.pass",
                        "Next": "Fail twice",
                    },
                    "Fail twice": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::aws-sdk:sagemaker:describeTrainingJob",
                        "Parameters": {
                            "TrainingJobName.$": "States.Format('missing-{}', $$.State.RetryCount)"
                        },
                        "Retry": [
                            {
                                "ErrorEquals": ["States.ALL"],
                                "IntervalSeconds": 1,
                                "BackoffRate": 1,
                                "MaxAttempts": 2,
                            }
                        ],
                        "Catch": [
                            {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Done"}
                        ],
                    },
                    "Done": {
                        "Type": "Pass",
                        "Parameters": {
                            "retries.$": "$$.State.RetryCount",
                            "error.$": "$.error.Cause",
                        },
                        "ResultPath": "$.done",
                        "End": True,
                    },
                },
            }
        )
    )
    result = cloud.run(None, {}, name="context")
    assert result.status == "SUCCEEDED", result.cause
    context = result.output["pass"]
    assert context["retries"] == 0
    assert context["name"] == "context" and context["id"] == result.execution_arn
    assert context["machine"] == cloud.state_machine()
    for key in ("entered", "start"):
        assert context[key].endswith("Z") and len(context[key]) == len("2026-01-01T00:00:00.000Z")
    # The third attempt asked for the job named after its retry count.
    assert "missing-2" in result.output["done"]["error"]


def _waiting_on(queue: str) -> dict[str, Any]:
    """A task that waits until the test answers the token it sends to ``queue``."""
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"QueueUrl": queue, "MessageBody": {"token.$": "$$.Task.Token"}},
        "TimeoutSeconds": 600,
        "End": True,
    }


def _token(sqs: Any, queue: str) -> str:
    """The token that a ``_waiting_on(queue)`` task sent."""
    deadline = time.monotonic() + 60
    messages: list[dict[str, Any]] = []
    while not messages:
        assert time.monotonic() < deadline, f"no token on {queue}"
        messages = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", [])
    return str(json.loads(messages[0]["Body"])["token"])


def _wait_for_state(cloud: LocalCloud, arn: str, event: str, state: str) -> None:
    """Until the execution's history holds ``event`` of ``state`` (a ceiling, not a pace)."""
    deadline = time.monotonic() + 60
    while not any(
        e["type"] == event and e.get("stateEnteredEventDetails", {}).get("name") == state
        for e in cloud.history(arn)
    ):
        assert time.monotonic() < deadline, f"no {event} of {state}"
        time.sleep(0.05)


def test_a_heartbeat_is_taken_while_the_task_waits_and_refused_once_it_is_closed(
    cloud: LocalCloud,
) -> None:
    """A Parallel whose failing branch is caught cancels its waiting sibling while the execution
    runs on: the sibling's token then refuses SendTaskHeartbeat (moto refuses it throughout) and
    SendTaskSuccess / SendTaskFailure (moto accepts them and records the task's end after the
    Parallel's), and nothing is recorded. Each step happens when the test says so: the failing
    branch fails when the test fails its task, and the execution lingers until it is stopped."""
    sqs = cloud.client("sqs")
    tokens = sqs.create_queue(QueueName="tokens")["QueueUrl"]
    failures = sqs.create_queue(QueueName="failures")["QueueUrl"]
    cloud.deploy(
        _template(
            {
                "StartAt": "Both",
                "States": {
                    "Both": {
                        "Type": "Parallel",
                        "Branches": [
                            {"StartAt": "Waiting", "States": {"Waiting": _waiting_on(tokens)}},
                            {"StartAt": "Failing", "States": {"Failing": _waiting_on(failures)}},
                        ],
                        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Linger"}],
                    },
                    "Linger": {"Type": "Wait", "Seconds": 600, "End": True},
                },
            }
        )
    )
    stepfunctions = cloud.client("stepfunctions")
    arn = stepfunctions.start_execution(stateMachineArn=cloud.state_machine(), name="hb")[
        "executionArn"
    ]
    token = _token(sqs, tokens)
    stepfunctions.send_task_heartbeat(taskToken=token)  # the branch waits
    stepfunctions.send_task_failure(taskToken=_token(sqs, failures), error="Boom", cause="test")
    _wait_for_state(cloud, arn, "WaitStateEntered", "Linger")
    assert stepfunctions.describe_execution(executionArn=arn)["status"] == "RUNNING"
    with pytest.raises(ClientError, match="TaskTimedOut"):
        stepfunctions.send_task_heartbeat(taskToken=token)
    recorded = len(cloud.history(arn))
    with pytest.raises(ClientError, match="TaskTimedOut"):
        stepfunctions.send_task_success(taskToken=token, output="{}")
    with pytest.raises(ClientError, match="TaskTimedOut"):
        stepfunctions.send_task_failure(taskToken=token, error="Late", cause="after the cancel")
    # A report moto had accepted would be recorded by the branch's thread within moments; the
    # refusals above are the contract, this only looks for a stray record (it cannot race).
    time.sleep(0.2)
    assert len(cloud.history(arn)) == recorded
    with pytest.raises(ClientError, match="InvalidToken"):
        stepfunctions.send_task_heartbeat(taskToken="never-issued")
    stepfunctions.stop_execution(executionArn=arn)


@pytest.mark.parametrize(
    ("failing", "status"), [(2, "SUCCEEDED"), (3, "FAILED")], ids=["at-threshold", "over"]
)
def test_a_distributed_map_fails_once_its_failed_items_exceed_the_threshold(
    cloud: LocalCloud, failing: int, status: str
) -> None:
    """ToleratedFailurePercentage 50 over four items: two failed items are tolerated, three fail
    the Map Run with States.ExceedToleratedFailureThreshold (moto never fails a Map Run, and
    refuses an integer percentage)."""
    iteration = {
        "StartAt": "Fail?",
        "States": {
            "Fail?": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.fail", "BooleanEquals": True, "Next": "Boom"}],
                "Default": "Fine",
            },
            "Boom": {"Type": "Fail", "Error": "Boom"},
            "Fine": {"Type": "Succeed"},
        },
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
    }
    cloud.deploy(
        _template(
            {
                "StartAt": "Each",
                "States": {
                    "Each": {
                        "Type": "Map",
                        "ItemProcessor": iteration,
                        "ToleratedFailurePercentage": 50,  # as aws-cdk-lib renders it
                        "End": True,
                    }
                },
            }
        )
    )
    items = [{"fail": index < failing} for index in range(4)]
    result = cloud.run(None, items, name=f"tolerate-{failing}")
    assert result.status == status, result.cause
    if status == "FAILED":
        assert result.error == "States.ExceedToleratedFailureThreshold"


def test_a_task_whose_call_failed_refuses_its_token(cloud: LocalCloud) -> None:
    """A waitForTaskToken task whose Lambda call itself fails is closed at once (its Catch runs
    on): its token refuses heartbeats and reports (moto did not know the token, answered
    InvalidToken to a heartbeat and accepted a report nobody would read)."""
    function = f"arn:aws:lambda:{cloud.region}:{cloud.account}:function:missing"
    cloud.deploy(
        _template(
            {
                "StartAt": "Call",
                "States": {
                    "Call": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                        "Parameters": {
                            "FunctionName": function,
                            "Payload": {"token.$": "$$.Task.Token"},
                        },
                        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Linger"}],
                    },
                    # Until the test stops it: the token is asked about while the execution
                    # still runs, however long the machine takes to get there.
                    "Linger": {"Type": "Wait", "Seconds": 600, "End": True},
                },
            }
        )
    )
    stepfunctions = cloud.client("stepfunctions")
    execution = stepfunctions.start_execution(stateMachineArn=cloud.state_machine(), name="call")
    _wait_for_state(cloud, execution["executionArn"], "WaitStateEntered", "Linger")
    history = cloud.history(execution["executionArn"])
    (scheduled,) = [e for e in history if e["type"] == "TaskScheduled"]
    parameters = json.loads(scheduled["taskScheduledEventDetails"]["parameters"])
    token = parameters["Payload"]["token"]
    with pytest.raises(ClientError, match="TaskTimedOut"):
        stepfunctions.send_task_heartbeat(taskToken=token)
    with pytest.raises(ClientError, match="TaskTimedOut"):
        stepfunctions.send_task_success(taskToken=token, output="{}")
    stepfunctions.stop_execution(executionArn=execution["executionArn"])
