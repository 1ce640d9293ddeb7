"""The run lifecycle under faults (issue 9): nothing lost, nothing orphaned, nothing adopted.

Every test runs the example app's state machine in the local cloud with the real Lambdas and
injects one fault of issue 9 item 10, then checks what a user and an operator would see: the
execution's end, the jobs that exist, the reports sent to the task, and the run table.

The task's own Retry waits (2 s doubling, full jitter) are compressed by the local cloud
(``LocalCloud.retry_waits``), so that retries to the end stay fast.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest

from hetero_constructs.constructs.retries import DEFAULT_CAPACITY_RETRY
from hetero_constructs.contract import lifecycle
from hetero_constructs.local import ExecutionResult, LocalCloud
from tests.fixtures.example_app import Synthesized
from tests.fixtures.harness import Harness, on_calls, reconcile_passes, record_calls


def answer(status: int, parsed: dict[str, Any]) -> Any:
    """What a ``before-call`` handler returns so that the call gets ``parsed`` with HTTP
    ``status`` instead of sending its request."""
    from botocore.awsrequest import AWSResponse

    metadata = {"ResponseMetadata": {"HTTPStatusCode": status}}
    return AWSResponse("https://local.invalid/", status, {}, None), {**parsed, **metadata}


@pytest.fixture
def harness(example: Synthesized) -> Iterator[Harness]:
    with LocalCloud(simulate="Completed") as cloud:
        cloud.deploy(example.template, template_dir=example.outdir)
        (machine,) = cloud.state_machines
        events = cloud.lambdas.find("events.handler")
        harness = Harness(cloud, machine, events.environment["TOKEN_TABLE"], events.name)
        record_calls(harness)
        yield harness


# -- helpers ------------------------------------------------------------------------------------

CAPACITY = "CapacityError: Unable to provision requested ML compute capacity."
#: The example's first attempt and its capacity retries.
CAPACITY_ATTEMPTS = 1 + DEFAULT_CAPACITY_RETRY.max_attempts


def created(result: ExecutionResult) -> list[str]:
    """The names of the jobs a run created (a refused CreateTrainingJob creates none)."""
    return [job.name for job in result.jobs if job.status != "ResourceLimitExceeded"]


def cause(result: ExecutionResult) -> dict[str, Any]:
    return dict(json.loads(result.cause or "{}"))


def history_types(result: ExecutionResult) -> list[str]:
    return [event["type"] for event in result.history]


# -- the execution is stopped while the submit Lambda runs ---------------------------------------

ALL_EXECUTION_EVENTS = {"source": [lifecycle.EXECUTION_EVENT_SOURCE]}


def test_stop_during_submit_the_submit_stops_its_job(harness: Harness) -> None:
    cloud = harness.cloud
    # Without the execution's end event, only the submit's own check can see the stop.
    dropped = cloud.faults.drop_events(ALL_EXECUTION_EVENTS, times=10)
    cloud.faults.stop_execution_during("submit.handler")
    result = harness.run("stopped-during-submit")
    assert result.status == "ABORTED"
    (job,) = created(result)  # the Lambda went on and created it
    assert dropped.times < 10
    assert cloud.training.stopped_jobs == [job]
    assert reconcile_passes(cloud) == 0
    assert harness.status(job) == "Stopped"
    assert harness.job_items() == []  # its Stopped event settled it (nobody to tell)
    assert harness.reports() == []


def test_stop_during_submit_missed_by_the_submit_is_stopped_by_one_reconcile_pass(
    harness: Harness,
) -> None:
    cloud = harness.cloud
    cloud.faults.drop_events(ALL_EXECUTION_EVENTS, times=10)
    cloud.faults.stop_execution_during("submit.handler")
    # The submit sees the execution ended, but its StopTrainingJob fails: the job runs on.
    cloud.faults.throttle("sagemaker", "StopTrainingJob")
    result = harness.run("stop-missed")
    assert result.status == "ABORTED"
    (job,) = created(result)
    harness.orphan_is_stopped_by_one_reconcile_pass(job)


# -- every event dropped: the reconciler alone finishes every run --------------------------------


#: How a run's jobs end, and what the run must end with: (outcomes, status, error). The
#: example retries capacity failures (``CapacityRetry``), each time with a new job.
ENDINGS = [
    (["Completed"], "SUCCEEDED", None),
    (["Failed:AlgorithmError: exit 1"], "FAILED", lifecycle.Errors.TRAINING_FAILED),
    ([f"Failed:{CAPACITY}", "Completed"], "SUCCEEDED", None),
    ([f"Failed:{CAPACITY}"] * CAPACITY_ATTEMPTS, "FAILED", lifecycle.Errors.CAPACITY),
    (["Stopped:MaxRuntimeExceeded"], "FAILED", lifecycle.Errors.MAX_RUNTIME),
    (["Stopped"], "FAILED", lifecycle.Errors.STOPPED),
]


def test_every_event_dropped_the_reconciler_finishes_every_run(harness: Harness) -> None:
    cloud = harness.cloud
    dropped = cloud.faults.drop_events(times=1000)
    for number, (outcomes, status, error) in enumerate(ENDINGS):
        result = harness.run(f"lost-{number}", outcomes=outcomes, reconcile_every=0.2)
        assert (result.status, result.error) == (status, error), outcomes
        jobs = created(result)
        assert len(jobs) == len(outcomes)  # one job per attempt
        if error is None:
            assert result.output["TrainingJobName"] == jobs[-1]
            assert result.output["ModelArtifacts"]["S3ModelArtifacts"].endswith(
                f"/{jobs[-1]}/output/model.tar.gz"
            )
        else:
            assert cause(result)["TrainingJobName"] == jobs[-1]
    attempts = sum(len(outcomes) for outcomes, _, _ in ENDINGS)
    assert dropped.times <= 1000 - 2 * attempts  # every job's start and end, at least
    delivered = [d for d in cloud.bus.deliveries if d.outcome == "delivered"]
    assert {d.event["detail-type"] for d in delivered} == {"Scheduled Event"}  # only these
    assert reconcile_passes(cloud) >= attempts
    assert len(harness.reports()) == attempts  # each job's end reported once, by the reconciler
    assert all(a.status in ("Completed", "Failed", "Stopped") for a in cloud.training.attempts)
    assert harness.job_items() == []


def test_every_event_dropped_a_stopped_execution_s_job_is_stopped(harness: Harness) -> None:
    cloud = harness.cloud
    cloud.faults.drop_events(times=1000)
    result = harness.run("lost-stop", stop_execution=True)
    assert result.status == "ABORTED"
    (job,) = created(result)
    assert harness.status(job) == "InProgress"  # nobody heard of the execution's end
    harness.reconcile()
    assert cloud.training.stopped_jobs == [job]
    harness.stopped_jobs_end()
    assert harness.status(job) == "Stopped"
    assert harness.job_items() == [f"job#{job}"]  # its Stopped event was lost too
    harness.reconcile()
    assert harness.job_items() == []
    assert harness.reports() == []  # the task had ended


def unreachable_job_item(harness: Harness, execution_arn: str) -> None:
    """A run table item as the submit writes it, older than the grace, whose control role can
    no longer be assumed (its task was removed by a redeploy while the item was open). Its key
    sorts first (moto scans and queries in key order), so that a pass meets it first."""
    cloud = harness.cloud
    removed = f"arn:aws:iam::{cloud.account}:role/hetero-control/removed-task"
    dynamodb = boto3.session.Session().client("dynamodb", region_name=cloud.region)
    dynamodb.put_item(
        TableName=harness.table,
        Item={
            "pk": {"S": "job#a-removed-task-job"},
            "task_token": {"S": "a-token"},
            "execution_arn": {"S": execution_arn},
            "slot": {"S": "0" * 32},
            "attempt": {"N": "0"},
            "variant": {"N": "0"},
            "role_arn": {"S": removed},
            "created_at": {"N": "1"},
            "expires_at": {"N": str(int(time.time()) + 3600)},
        },
    )

    def deny(params: dict[str, Any], **_: Any) -> Any:
        if params.get("body", {}).get("RoleArn") != removed:
            return None
        return answer(
            403,
            {"Error": {"Code": "AccessDenied", "Message": "not authorized to assume the role"}},
        )

    on_calls("before-call.sts.AssumeRole", deny)


def test_a_job_item_the_reconciler_cannot_reach_does_not_stop_it_for_the_others(
    harness: Harness,
) -> None:
    """A job item whose control role can no longer be assumed (its task was removed by a
    redeploy while the item was open) fails in every reconcile pass. The pass goes on with the
    other items: with every event lost, the run still ends by the reconciler, and the pass
    fails (the errors alarm) with what it could not reach."""
    cloud = harness.cloud
    unreachable_job_item(
        harness, f"arn:aws:states:{cloud.region}:{cloud.account}:execution:gone:run"
    )
    cloud.faults.drop_events(times=1000)
    result = harness.run("beside-an-unreachable-item", reconcile_every=0.2, timeout=120)
    assert result.status == "SUCCEEDED", result.cause
    (job,) = created(result)
    assert result.output["TrainingJobName"] == job
    assert harness.job_items() == ["job#a-removed-task-job"]  # left for its TTL
    passes = [i for i in cloud.lambdas.invocations if i.event == {"action": "reconcile"}]
    assert passes and {i.error for i in passes} == {"ReconcileIncomplete"}


def test_a_malformed_job_item_does_not_stop_the_reconciler_for_the_others(
    harness: Harness,
) -> None:
    """An item of the run table that does not parse (written by hand, or by another version):
    with every event lost, the run still ends by the reconciler; the first pass fails (the
    errors alarm) naming that item, which is quarantined with a TTL, and no later pass fails
    (issue 21: every pass failed forever)."""
    cloud = harness.cloud
    dynamodb = boto3.session.Session().client("dynamodb", region_name=cloud.region)
    dynamodb.put_item(
        TableName=harness.table,
        Item={"pk": {"S": "job#a-malformed-item"}, "attempt": {"S": "not a number"}},
    )
    cloud.faults.drop_events(times=1000)
    result = harness.run("beside-a-malformed-item", reconcile_every=0.2, timeout=120)
    assert result.status == "SUCCEEDED", result.cause
    assert harness.job_items() == ["job#a-malformed-item"]
    (item,) = harness.items("job#")
    assert "expires_at" in item and "quarantined" in item
    passes = [i for i in cloud.lambdas.invocations if i.event == {"action": "reconcile"}]
    assert len(passes) > 1
    assert [i.error for i in passes] == ["ReconcileIncomplete"] + [None] * (len(passes) - 1)


def test_an_execution_s_job_is_stopped_beside_one_that_cannot_be_reached(
    harness: Harness,
) -> None:
    """The execution ends (stopped) while one of its job items cannot be reached: its other
    jobs are stopped all the same, and the delivery fails (retried, then dead-lettered)."""
    cloud = harness.cloud
    machine = harness.machine.replace(":stateMachine:", ":execution:")
    unreachable_job_item(harness, f"{machine}:stopped-beside")
    result = harness.run("stopped-beside", stop_execution=True)
    assert result.status == "ABORTED"
    (job,) = created(result)
    assert cloud.training.stopped_jobs == [job]
    ends = [
        i
        for i in cloud.lambdas.invocations
        if isinstance(i.event, dict) and i.event.get("source") == lifecycle.EXECUTION_EVENT_SOURCE
    ]
    assert ends and {i.error for i in ends} == {"StopIncomplete"}


# -- DynamoDB throttling or failing, then recovering ---------------------------------------------


def _arm(
    harness: Harness, operation: str, times: int, *, after: tuple[str, str, int] | None
) -> None:
    """Throttle ``times`` DynamoDB ``operation`` calls, now or after another call."""
    faults = harness.cloud.faults
    if after is None:
        faults.throttle("dynamodb", operation, times=times)
    else:
        harness.after(*after, then=lambda: faults.throttle("dynamodb", operation, times=times))


@pytest.mark.parametrize(
    ("operation", "times", "after", "stop"),
    [
        # The submit: reading its slot, writing its slot, writing its job item.
        pytest.param("GetItem", 1, None, False, id="submit-get-slot"),
        pytest.param("PutItem", 2, None, False, id="submit-put-slot-twice"),
        pytest.param("PutItem", 1, ("dynamodb", "PutItem", 1), False, id="submit-put-job"),
        # The job's end: every delivery of the event fails (it is dead-lettered).
        pytest.param("GetItem", 3, ("sagemaker", "CreateTrainingJob", 1), False, id="event-get"),
        pytest.param("PutItem", 1, ("sagemaker", "CreateTrainingJob", 1), False, id="settle-put"),
        pytest.param("DeleteItem", 1, ("sfn", "SendTaskSuccess", 1), False, id="settle-delete"),
        # The execution's end: its jobs cannot be found (Query), every delivery fails. The
        # submit's own look for the execution's cancelled jobs (best effort) takes the first.
        pytest.param("Query", 4, None, True, id="execution-end-query"),
    ],
)
def test_dynamodb_failing_then_recovering(
    harness: Harness,
    operation: str,
    times: int,
    after: tuple[str, str, int] | None,
    stop: bool,
) -> None:
    cloud = harness.cloud
    _arm(harness, operation, times, after=after)
    result = harness.run(f"dynamodb-{operation.lower()}", stop_execution=stop)
    throttled = [c for c in harness.calls if c.operation == operation and c.error]
    assert len(throttled) == times
    assert len(cloud.training.requests) == 1  # one CreateTrainingJob call: no duplicate job
    (job,) = created(result)
    if stop:
        assert result.status == "ABORTED"
        assert harness.status(job) == "InProgress"  # the execution's end was not processed
        harness.reconcile()
        harness.stopped_jobs_end()
        assert harness.status(job) == "Stopped"
        assert harness.reports() == []
    else:
        assert result.status == "SUCCEEDED", result.cause
        assert result.output["TrainingJobName"] == job
        assert [c.operation for c in harness.reports()] == ["SendTaskSuccess"]
    assert harness.job_items() == []


def with_task_retry(template: dict[str, Any], error: str, interval: int) -> dict[str, Any]:
    """The template with a Retry on ``error`` added to its training task, as a user's
    ``task.add_retry(errors=[error], interval=..., max_attempts=1)`` renders it."""
    copied = json.loads(json.dumps(template))
    for resource in copied["Resources"].values():
        if resource["Type"] == "AWS::StepFunctions::StateMachine":
            parts = resource["Properties"]["DefinitionString"]["Fn::Join"][1]
            retry = {"ErrorEquals": [error], "IntervalSeconds": interval, "MaxAttempts": 1}
            assert '"Retry":[' in parts[0]
            parts[0] = parts[0].replace('"Retry":[', '"Retry":[' + json.dumps(retry) + ",", 1)
    return copied


def test_a_repeated_settle_does_not_hand_the_old_end_to_the_task_s_retry(
    example: Synthesized,
) -> None:
    """The job item outlives its report (its delete is throttled); the events Lambda's own retry
    settles it again. The task's Retry must still create a new job, not get the old failure."""
    with LocalCloud(simulate="Completed") as cloud:
        # 60 s between the task's attempts (1 s here): the Lambda's own retry comes first.
        cloud.retry_waits.cap = 1.0
        template = with_task_retry(example.template, lifecycle.Errors.TRAINING_FAILED, 60)
        cloud.deploy(template, template_dir=example.outdir)
        events = cloud.lambdas.find("events.handler")
        harness = Harness(cloud, cloud.state_machines[0], events.environment["TOKEN_TABLE"], "")
        record_calls(harness)
        harness.after(
            "sfn",
            "SendTaskFailure",
            1,
            then=lambda: cloud.faults.throttle("dynamodb", "DeleteItem"),
        )
        result = harness.run("retried", outcomes=["Failed", "Completed"])
        assert cloud.retry_waits.requested == [60]
        assert [c.operation for c in harness.reports_refused()] == [
            "SendTaskFailure"  # the repeated settle found the task answered
        ]
        assert result.status == "SUCCEEDED", result.cause
        first, second = created(result)
        assert harness.status(first) == "Failed"
        assert result.output["TrainingJobName"] == second
        assert result.output["Attempt"] == 1
        assert harness.job_items() == []


# -- a reused execution name after the state machine is re-created -------------------------------


def test_a_reused_execution_name_after_a_redeploy_gets_a_new_job(harness: Harness) -> None:
    cloud = harness.cloud
    stepfunctions = cloud.client("stepfunctions")
    first = harness.run("nightly")
    assert first.status == "SUCCEEDED"
    (old_job,) = created(first)
    # A redeploy that replaces the state machine: same name, same ARN, same execution names.
    machine = stepfunctions.describe_state_machine(stateMachineArn=harness.machine)
    stepfunctions.delete_state_machine(stateMachineArn=harness.machine)
    recreated = stepfunctions.create_state_machine(
        name=machine["name"],
        definition=machine["definition"],
        roleArn=machine["roleArn"],
    )["stateMachineArn"]
    assert recreated == harness.machine
    second = cloud.run(recreated, name="nightly", timeout=120)
    assert second.execution_arn == first.execution_arn  # the very same execution ARN
    assert second.status == "SUCCEEDED", second.cause
    (new_job,) = created(second)
    assert new_job != old_job
    # The readable part is the same: the digest (execution start time) tells them apart.
    assert new_job.rsplit("-", 1)[0] == old_job.rsplit("-", 1)[0]
    assert second.output["TrainingJobName"] == new_job
    assert second.output["ModelArtifacts"]["S3ModelArtifacts"].endswith(
        f"/{new_job}/output/model.tar.gz"
    )
    assert old_job not in json.dumps(second.output)
    assert harness.job_items() == []


# -- a job pre-created under the run's name by someone else ---------------------------------------

SOMEONE_ELSES_OUTPUT = "s3://someone-elses-bucket/artifacts/"


def squat(
    harness: Harness, *, copy_markers: bool, completed: bool, meanwhile: str | None = None
) -> list[str]:
    """Just before the submit's first CreateTrainingJob, someone else creates a job of that
    name (their role and bucket; with ``copy_markers``, every tag of ours too). ``meanwhile``:
    what runs at that moment (on AWS the Lambdas run concurrently): the reconciler
    (``"reconcile"``), the delivery of their job's end event (``"event"``) or of an end event
    of the run's execution (``"execution-end"``), which stops the execution's jobs."""
    cloud = harness.cloud
    squatted: list[str] = []
    # Their own session: their call is not ours (no fault, no record).
    theirs = boto3.session.Session().client("sagemaker", region_name=cloud.region)

    def before_create(params: dict[str, Any], **_: Any) -> None:
        if squatted:
            return
        request = json.loads(json.dumps(params))
        ours = {tag["Key"]: tag["Value"] for tag in request["Tags"]}
        request["RoleArn"] = f"arn:aws:iam::{cloud.account}:role/someone-else"
        request["OutputDataConfig"] = {"S3OutputPath": SOMEONE_ELSES_OUTPUT}
        if not copy_markers:
            request["Tags"] = [{"Key": "owner", "Value": "someone-else"}]
        theirs.create_training_job(**request)
        squatted.append(request["TrainingJobName"])
        name = request["TrainingJobName"]
        if completed:
            cloud.training.end(name, "Completed")
        if meanwhile == "reconcile":
            cloud.lambdas.invoke(harness.events_function, json.dumps({"action": "reconcile"}))
        elif meanwhile == "event":
            event = cloud.training.state_change_event(name)
            cloud.lambdas.invoke(harness.events_function, json.dumps(event))
        elif meanwhile == "execution-end":
            event = {
                "source": lifecycle.EXECUTION_EVENT_SOURCE,
                "detail-type": lifecycle.EXECUTION_EVENT_TYPE,
                "detail": {"status": "ABORTED", "executionArn": ours[lifecycle.TAG_EXECUTION]},
            }
            answer = cloud.lambdas.invoke(harness.events_function, json.dumps(event))
            # The execution runs on: the forged end stops nothing (nor would a real one theirs).
            assert json.loads(answer) == f"run goes on: {name}"

    on_calls("before-parameter-build.sagemaker.CreateTrainingJob", before_create)
    return squatted


@pytest.mark.parametrize(
    ("copy_markers", "completed", "meanwhile"),
    [
        pytest.param(False, False, None, id="running"),
        pytest.param(True, False, None, id="running-our-tags"),
        pytest.param(False, True, "reconcile", id="completed-reconciled-meanwhile"),
        pytest.param(True, True, "reconcile", id="completed-our-tags-reconciled-meanwhile"),
        pytest.param(True, True, "event", id="completed-our-tags-event-meanwhile"),
        pytest.param(True, False, "execution-end", id="running-our-tags-execution-end-meanwhile"),
    ],
)
def test_a_job_pre_created_under_our_name_is_never_adopted(
    harness: Harness, copy_markers: bool, completed: bool, meanwhile: str | None
) -> None:
    cloud = harness.cloud
    squatted = squat(harness, copy_markers=copy_markers, completed=completed, meanwhile=meanwhile)
    result = harness.run("squatted")
    (name,) = squatted
    assert result.status == "FAILED"
    assert result.error == lifecycle.Errors.JOB_NAME_TAKEN
    assert cause(result)["TrainingJobName"] == name
    assert "not created by this run" in cause(result)["FailureReason"]
    # Nothing of their job reached the run: no success, no artifacts, no output.
    assert result.output is None
    assert "TaskSucceeded" not in history_types(result)
    assert "someone-elses-bucket" not in json.dumps(result.history, default=str)
    assert [c.operation for c in harness.reports()] == ["SendTaskFailure"]
    # Their job is left alone (never stopped by us), and the run keeps no item for it.
    assert name not in cloud.training.stopped_jobs
    assert harness.job_items() == []


def take_the_slot_s_first_name(harness: Harness, *, completed: bool = False) -> str:
    """Someone creates a job under the name of the run's first attempt, with every marker tag a
    run would give it (computed with ``hetero_constructs.contract.naming`` from what the execution
    shows), their role and their bucket; ``completed``: their job has already ended so."""
    from hetero_constructs.contract.naming import RunSlot, attempt_job_name

    cloud = harness.cloud
    theirs = boto3.session.Session().client("sagemaker", region_name=cloud.region)
    submit = next(i.event for i in cloud.lambdas.invocations if "context" in i.event)
    context = submit["context"]
    slot = RunSlot(
        context["executionArn"],
        context["executionStartTime"],
        context["stateName"],
        context["stateEnteredTime"],
    )
    name = attempt_job_name(submit["jobNamePrefix"], slot, 0)
    markers = {
        lifecycle.TAG_RUNNER: submit["runnerId"],
        lifecycle.TAG_EXECUTION: slot.execution_arn,
        lifecycle.TAG_SLOT: slot.digest,
        lifecycle.TAG_ATTEMPT: "0",
    }
    theirs.create_training_job(
        TrainingJobName=name,
        RoleArn=f"arn:aws:iam::{cloud.account}:role/someone-else",
        AlgorithmSpecification={"TrainingImage": "their/image:1", "TrainingInputMode": "File"},
        OutputDataConfig={"S3OutputPath": SOMEONE_ELSES_OUTPUT},
        ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 5},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
        Tags=[{"Key": k, "Value": v} for k, v in markers.items()],
    )
    if completed:
        cloud.training.end(name, "Completed")
    return name


def test_a_job_created_under_the_slot_s_name_between_two_attempts_is_not_resumed(
    harness: Harness,
) -> None:
    """The first submit claims its slot, then fails before creating its job (its job item's put
    is throttled; the slot is claimed first, issue 21). Before the retry, someone creates a job
    of that name with every marker tag a run would give it. The retry must not continue it as
    its own: it starts a new attempt, under a new name, and the run ends with its own job."""
    cloud = harness.cloud
    squatted: list[str] = []
    faults = cloud.faults
    harness.after("dynamodb", "PutItem", 1, then=lambda: faults.throttle("dynamodb", "PutItem"))
    harness.after(
        "dynamodb", "PutItem", 2, then=lambda: squatted.append(take_the_slot_s_first_name(harness))
    )
    result = harness.run("between-attempts")
    (name,) = squatted
    (refused,) = [
        c.params["Item"]["pk"]["S"] for c in harness.calls if c.error and c.operation == "PutItem"
    ]
    assert refused.startswith("job#")
    assert result.status == "SUCCEEDED", result.cause
    assert "someone-elses-bucket" not in json.dumps(result.output)
    assert "their/image" not in json.dumps(result.output)
    theirs_and_own = created(result)  # every job created meanwhile, theirs first
    assert theirs_and_own[0] == name
    (own,) = theirs_and_own[1:]
    assert result.output["TrainingJobName"] == own
    assert result.output["Attempt"] == 1
    assert name not in cloud.training.stopped_jobs  # theirs, left alone
    assert harness.job_items() == []


def test_a_completed_job_under_a_refused_attempt_s_name_is_not_reported(harness: Harness) -> None:
    """The first attempt's CreateTrainingJob is refused (ResourceLimitExceeded: no job, and its
    slot records that attempt as reported). Before the capacity retry, someone creates a job of
    that name with every marker tag a run would give it, and it completes. The retry must not
    report their job as the run's success: it starts its own attempt."""
    squatted: list[str] = []
    harness.after(
        "sagemaker",
        "CreateTrainingJob",
        1,
        then=lambda: squatted.append(take_the_slot_s_first_name(harness, completed=True)),
    )
    result = harness.run("refused-then-taken", outcomes=["ResourceLimitExceeded"])
    (name,) = squatted
    assert result.status == "SUCCEEDED", result.cause
    assert "someone-elses-bucket" not in json.dumps(result.output)
    assert "their/image" not in json.dumps(result.output)
    assert result.output["TrainingJobName"] != name
    own = created(result)[-1]
    assert own != name
    assert result.output["TrainingJobName"] == own
    assert result.output["Attempt"] == 1
    # The refusal, then the success of the run's own job: nothing of theirs was reported.
    assert [c.operation for c in harness.reports()] == ["SendTaskFailure", "SendTaskSuccess"]
    assert name not in harness.cloud.training.stopped_jobs  # theirs, left alone
    assert harness.job_items() == []


# -- CreateTrainingJob failing -------------------------------------------------------------------

#: The task's own retry of a throttled submission: the first attempt and six retries.
SUBMIT_ATTEMPTS = 7


@pytest.mark.parametrize(
    ("code", "times", "status", "error"),
    [
        pytest.param(
            "ThrottlingException",
            SUBMIT_ATTEMPTS,
            "FAILED",
            lifecycle.Errors.THROTTLED,
            id="throttled-to-the-end",
        ),
        pytest.param("InternalFailure", 1, "SUCCEEDED", None, id="500-once"),
        pytest.param(
            "ServiceUnavailable",
            SUBMIT_ATTEMPTS,
            "FAILED",
            lifecycle.Errors.THROTTLED,
            id="503-to-the-end",
        ),
        pytest.param(
            "ValidationException", 1, "FAILED", lifecycle.Errors.TRAINING_FAILED, id="refused"
        ),
    ],
)
def test_create_training_job_failing_leaves_no_token(
    harness: Harness, code: str, times: int, status: str, error: str | None
) -> None:
    cloud = harness.cloud
    fault = cloud.faults.throttle("sagemaker", "CreateTrainingJob", times=times, error_code=code)
    result = harness.run(f"create-{code.lower()}")
    assert fault.times == 0
    assert result.status == status, result.cause
    assert result.error == error
    creates = [c.error for c in harness.calls if c.operation == "CreateTrainingJob"]
    if error is None:  # recovered: the task's retry created the job
        assert creates == [code, None]
        (job,) = created(result)
        assert result.output["TrainingJobName"] == job
    elif error == lifecycle.Errors.THROTTLED:  # transient to the end: every attempt retried
        assert creates == [code] * SUBMIT_ATTEMPTS
        assert created(result) == []
    else:  # refused: no retry, the task fails with the API's answer
        assert creates == [code]
        assert created(result) == []
        assert code in cause(result)["FailureReason"]
    assert harness.job_items() == []


def answer_create_with_an_error_after_creating(harness: Harness, failure: str) -> None:
    """The next CreateTrainingJob creates its job, then its caller gets ``failure`` instead of
    the answer: ``"500"`` (InternalFailure, after the SDK's retries) or ``"timeout"`` (the read
    timed out). Either way the job exists."""
    from botocore.exceptions import ReadTimeoutError

    cloud = harness.cloud
    service = boto3.session.Session().client("sagemaker", region_name=cloud.region)
    done: list[str] = []

    def before_call(params: dict[str, Any], **_: Any) -> Any:
        if done:
            return None
        request = json.loads(params["body"])
        service.create_training_job(**request)
        done.append(request["TrainingJobName"])
        if failure == "timeout":
            raise ReadTimeoutError(endpoint_url="https://api.sagemaker.local.invalid/")
        return answer(
            500, {"Error": {"Code": "InternalFailure", "Message": "internal error (local fault)"}}
        )

    on_calls("before-call.sagemaker.CreateTrainingJob", before_call)


@pytest.mark.parametrize(
    ("failure", "stop"),
    [
        pytest.param("timeout", False, id="read-timeout"),
        pytest.param("timeout", True, id="read-timeout-execution-stopped"),
        pytest.param("500", True, id="500-execution-stopped"),
    ],
)
def test_a_job_created_although_create_training_job_failed_is_never_orphaned(
    harness: Harness, failure: str, stop: bool
) -> None:
    """CreateTrainingJob created the job but its answer was lost. The submit must not drop its
    record of the job: it continues the job (the run ends with it), or, if the execution was
    stopped meanwhile, the job is stopped."""
    cloud = harness.cloud
    answer_create_with_an_error_after_creating(harness, failure)
    if stop:
        cloud.faults.stop_execution_during("submit.handler")
    result = harness.run(f"created-then-{failure}-{stop}".lower())
    (job,) = created(result)
    assert len(cloud.training.requests) == 1
    if stop:
        assert result.status == "ABORTED"
        assert cloud.training.stopped_jobs == [job]  # by the submit, once it found the job
        harness.stopped_jobs_end()
        assert harness.reports() == []
    else:
        assert result.status == "SUCCEEDED", result.cause
        assert result.output["TrainingJobName"] == job
    assert harness.job_items() == []


def test_resource_limit_exceeded_leaves_no_token(harness: Harness) -> None:
    # Retried with the next fallback (the example's CapacityRetry), refused every time.
    result = harness.run("quota", outcomes=["ResourceLimitExceeded"] * CAPACITY_ATTEMPTS)
    assert result.status == "FAILED"
    assert result.error == lifecycle.Errors.RESOURCE_LIMIT
    assert created(result) == []
    assert len(harness.cloud.training.requests) == CAPACITY_ATTEMPTS
    assert "ResourceLimitExceeded" in cause(result)["FailureReason"]
    assert harness.job_items() == []


# -- duplicated events, and Lambdas failing after their work --------------------------------------


def test_duplicated_events_are_reported_once(harness: Harness) -> None:
    cloud = harness.cloud
    duplicated = cloud.faults.duplicate_events(times=1000)
    result = harness.run("twice")
    assert result.status == "SUCCEEDED"
    (job,) = created(result)
    ends = [
        i
        for i in cloud.lambdas.invocations
        if i.event.get("source") == lifecycle.JOB_EVENT_SOURCE
        and i.event["detail"]["TrainingJobStatus"] == "Completed"
    ]
    assert len(ends) == 2 and all(i.error is None for i in ends)
    assert [c.operation for c in harness.reports()] == ["SendTaskSuccess"]
    assert history_types(result).count("TaskSucceeded") == 1
    assert duplicated.times < 1000
    # An aborted execution's duplicated end: its job is stopped once, without an error.
    stopped = harness.run("twice-stopped", stop_execution=True)
    assert stopped.status == "ABORTED"
    (job,) = created(stopped)
    aborts = [
        i
        for i in cloud.lambdas.invocations
        if i.event.get("source") == lifecycle.EXECUTION_EVENT_SOURCE
    ]
    assert len(aborts) == 2 and all(i.error is None for i in aborts)
    assert cloud.training.stopped_jobs == [job]
    assert harness.job_items() == []


@pytest.mark.parametrize(
    ("function", "times"),
    [("submit.handler", 2), ("events.handler", 1), ("events.handler", 3)],
    ids=["submit-twice", "events-once", "events-every-delivery"],
)
def test_a_lambda_failing_after_its_work_makes_one_job(
    harness: Harness, function: str, times: int
) -> None:
    cloud = harness.cloud
    fault = cloud.faults.fail_lambda(function, after_work=True, times=times)
    result = harness.run(f"after-work-{function.split('.')[0]}-{times}")
    assert fault.times == 0
    assert result.status == "SUCCEEDED", result.cause
    (job,) = created(result)
    assert len(cloud.training.requests) == 1
    assert result.output["TrainingJobName"] == job
    assert history_types(result).count("TaskSucceeded") == 1
    assert harness.job_items() == []


def land_the_next_create_late(harness: Harness, *, land: bool = True) -> list[str]:
    """The next CreateTrainingJob answers success at once, but its job appears only after the
    first DescribeTrainingJob of that name that follows (the invocation that sent it ran on
    while its caller had already given up); never, unless ``land`` (it died before sending).
    Returns the names of jobs landed so."""

    cloud = harness.cloud
    service = boto3.session.Session().client("sagemaker", region_name=cloud.region)
    in_flight: list[dict[str, Any]] = []
    landed: list[str] = []

    def before_create(params: dict[str, Any], **_: Any) -> Any:
        if in_flight or landed:
            return None
        request = json.loads(params["body"])
        in_flight.append(request)
        arn = f"arn:aws:sagemaker:{cloud.region}:{cloud.account}:training-job/x"
        return answer(200, {"TrainingJobArn": arn})

    def before_describe(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["described-name"] = params.get("TrainingJobName")

    def after_describe(context: dict[str, Any], **_: Any) -> None:
        if land and in_flight and context.get("described-name") == in_flight[0]["TrainingJobName"]:
            request = in_flight.pop()
            service.create_training_job(**request)
            landed.append(request["TrainingJobName"])

    on_calls("before-call.sagemaker.CreateTrainingJob", before_create)
    on_calls("before-parameter-build.sagemaker.DescribeTrainingJob", before_describe)
    on_calls("after-call.sagemaker.DescribeTrainingJob", after_describe)
    return landed


def test_a_retry_waits_for_the_job_an_earlier_invocation_is_still_creating(
    harness: Harness,
) -> None:
    """Step Functions' call to the submit Lambda fails (Lambda.ServiceException) while the
    invocation runs on and creates the job a moment later. The task's retry finds the slot's job
    not there yet: it must wait for it and continue it, not start a second job beside it."""
    cloud = harness.cloud
    cloud.faults.fail_lambda("submit.handler", after_work=True)
    landed = land_the_next_create_late(harness)
    result = harness.run("still-creating", timeout=60)
    assert result.status == "SUCCEEDED", result.cause
    (job,) = landed
    assert created(result) == [job]
    assert len(cloud.training.requests) == 1
    assert result.output["TrainingJobName"] == job
    assert result.output["Attempt"] == 0
    assert harness.job_items() == []


def test_a_retry_starts_a_new_attempt_once_an_earlier_invocation_can_no_longer_create(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, but the earlier invocation died before its request left: the retry waits out
    the window in which it could still have created the job (shortened here), then runs a new
    attempt. The job item of the job never created stays for the reconciler, which forgets it
    after its grace period."""
    monkeypatch.setattr(lifecycle, "CREATION_WINDOW_SECONDS", 4)
    cloud = harness.cloud
    cloud.faults.fail_lambda("submit.handler", after_work=True)
    landed = land_the_next_create_late(harness, land=False)
    started = time.monotonic()
    result = harness.run("never-created", timeout=60)
    assert result.status == "SUCCEEDED", result.cause
    assert time.monotonic() - started >= 3  # it waited (the window minus the retry's delay)
    assert landed == []
    (job,) = created(result)
    assert result.output["TrainingJobName"] == job
    assert result.output["Attempt"] == 1
    (never,) = harness.job_items()
    assert never != f"job#{job}"


# -- dead-lettered events, replayed with the documented action -----------------------------------


def test_dead_lettered_events_are_replayed_and_the_run_completes(harness: Harness) -> None:
    cloud = harness.cloud
    # Between two reconcile passes: only the replay can finish this run.
    (schedule,) = [rule for rule in cloud.bus.rules if rule.schedule]
    schedule.enabled = False
    events = cloud.lambdas.find(harness.events_function)
    queue = events.environment["DEAD_LETTER_QUEUE"]
    sqs = boto3.session.Session().client("sqs", region_name=cloud.region)
    # Every delivery of the job's end fails (the Lambda's own two retries too): dead-lettered.
    failing = cloud.faults.fail_lambda("events.handler", after_work=False, times=3)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(harness.run, "dead-lettered", timeout=120)
        waiting = time.monotonic() + 60
        while failing.times or not _visible_messages(sqs, queue):
            assert time.monotonic() < waiting, "the job's end event was never dead-lettered"
            assert not running.done(), running.result()
            time.sleep(0.05)
        # docs/reliability.md: aws lambda invoke --function-name <events function>
        #   --payload '{"action":"replay-dead-letters"}' out.json
        answer = cloud.client("lambda").invoke(
            FunctionName=harness.events_function,
            Payload=json.dumps({"action": "replay-dead-letters"}),
        )
        assert "FunctionError" not in answer
        assert json.loads(answer["Payload"].read()) == {"replayed": 1, "failed": 0}
        result = running.result()
    assert result.status == "SUCCEEDED", result.cause
    (job,) = created(result)
    assert result.output["TrainingJobName"] == job
    assert _visible_messages(sqs, queue) == 0
    assert harness.job_items() == []


def _visible_messages(sqs: Any, queue: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


# -- many executions at once ---------------------------------------------------------------------

CONCURRENT = 32


def test_concurrent_executions_get_unique_jobs_and_leave_no_tokens(harness: Harness) -> None:
    cloud = harness.cloud
    stepfunctions = cloud.client("stepfunctions")
    together = threading.Barrier(CONCURRENT)

    def start(name: str) -> str:
        together.wait()
        started = stepfunctions.start_execution(stateMachineArn=harness.machine, name=name)
        return str(started["executionArn"])

    with ThreadPoolExecutor(CONCURRENT) as pool:
        executions = list(pool.map(start, [f"concurrent-{n}" for n in range(CONCURRENT)]))
    _wait(lambda: len(cloud.training.running()) == CONCURRENT, "every job created")
    for job in cloud.training.running():
        cloud.end_training_job(job)
    _wait(
        lambda: all(_status(stepfunctions, arn) != "RUNNING" for arn in executions),
        "every execution ended",
    )
    outputs = [
        json.loads(stepfunctions.describe_execution(executionArn=arn).get("output") or "null")
        for arn in executions
    ]
    assert [_status(stepfunctions, arn) for arn in executions] == ["SUCCEEDED"] * CONCURRENT
    jobs = [output["TrainingJobName"] for output in outputs]
    assert len(set(jobs)) == CONCURRENT
    # One job per execution, each tagged with its own execution, and nothing else created.
    assert sorted(attempt.name for attempt in cloud.training.attempts) == sorted(jobs)
    for execution, job in zip(executions, jobs, strict=True):
        tags = {t["Key"]: t["Value"] for t in cloud.training.attempt(job).request["Tags"]}
        assert tags[lifecycle.TAG_EXECUTION] == execution
    assert harness.job_items() == []


def _status(stepfunctions: Any, execution: str) -> str:
    return str(stepfunctions.describe_execution(executionArn=execution)["status"])


def _wait(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds:.0f} s: {what}"
        time.sleep(0.05)


# -- hostile events: ignored, never a failure that is retried and dead-lettered ------------------

LONG = "x" * 100_000
HOSTILE_EVENTS = {
    "list": [],
    "string": "aws.sagemaker",
    "null": None,
    "detail-not-an-object": {"source": lifecycle.JOB_EVENT_SOURCE, "detail": "Completed"},
    "detail-a-list": {"source": lifecycle.EXECUTION_EVENT_SOURCE, "detail": ["ABORTED"]},
    "status-a-list": {
        "source": lifecycle.JOB_EVENT_SOURCE,
        "detail": {"TrainingJobName": "job", "TrainingJobStatus": ["Completed"]},
    },
    "huge-job-name": {
        "source": lifecycle.JOB_EVENT_SOURCE,
        "detail": {"TrainingJobName": LONG, "TrainingJobStatus": "Completed"},
    },
    "huge-execution-arn": {
        "source": lifecycle.EXECUTION_EVENT_SOURCE,
        "detail": {"status": "ABORTED", "executionArn": LONG},
    },
    "source-a-list": {"source": [lifecycle.JOB_EVENT_SOURCE], "action": {"reconcile": 1}},
}


@pytest.mark.parametrize("event", HOSTILE_EVENTS.values(), ids=HOSTILE_EVENTS.keys())
def test_a_malformed_event_is_ignored_not_failed(harness: Harness, event: Any) -> None:
    """An event of the wrong shape (a direct invoke, a replayed message) is answered "ignored":
    a failure would be retried, dead-lettered, and fail again at every replay."""
    answer = harness.cloud.lambdas.invoke(harness.events_function, json.dumps(event))
    assert json.loads(answer).startswith("ignored"), answer
    # DynamoDB refuses a key over 2,048 bytes (moto does not): a huge name is never looked up.
    assert not [c for c in harness.calls if LONG in json.dumps(c.params)]


def test_a_job_that_ends_while_its_submit_call_is_in_flight_is_the_run_s_one_job(
    harness: Harness,
) -> None:
    """The job ends while Step Functions' call to the submit Lambda is still in flight: the
    events Lambda reports its success (accepted), then the call fails
    (``Lambda.ServiceException`` after the handler ran). Whichever answer the service keeps,
    the run trains one job and ends with its result: here (the local engine lets the call's
    failure win) the task's retry hears the job's success again instead of training another."""
    cloud = harness.cloud
    fault = cloud.faults.fail_lambda("submit.handler", after_work=True)

    def end_the_job_meanwhile() -> None:
        (job,) = cloud.training.running()
        cloud.training.end(job, "Completed")
        event = cloud.training.state_change_event(job)
        answer = cloud.lambdas.invoke(harness.events_function, json.dumps(event))
        assert json.loads(answer) == "reported Completed"  # accepted while the call runs

    harness.after("sagemaker", "CreateTrainingJob", 1, then=end_the_job_meanwhile)
    result = harness.run("ended-in-flight")
    assert fault.times == 0
    assert result.status == "SUCCEEDED", result.cause
    (job,) = created(result)
    assert len(cloud.training.requests) == 1
    assert result.output["TrainingJobName"] == job
    assert result.output["Attempt"] == 0
    assert history_types(result).count("TaskSucceeded") == 1
    assert harness.job_items() == []


def test_a_reconcile_pass_in_the_retry_window_leaves_the_attempt_s_job_to_its_retry(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The submit's call fails after it created its job (its token closes with the attempt);
    a reconcile pass lands in the retrier's wait, before the retry takes the job over. The job
    is not a cancelled task's: the pass leaves it running, the retry continues it (issue 28's
    stop: the pass stopped it and the retry started a second job)."""
    cloud = harness.cloud
    fault = cloud.faults.fail_lambda("submit.handler", after_work=True)
    waits = cloud.retry_waits
    passes: list[dict[str, int]] = []
    sleep = waits.sleep

    def reconcile_then_sleep(seconds: float) -> None:
        if not passes:
            answer = cloud.lambdas.invoke(harness.events_function, '{"action": "reconcile"}')
            passes.append(json.loads(answer))
        sleep(seconds)

    monkeypatch.setattr(waits, "sleep", reconcile_then_sleep)
    result = harness.run("reconciled-in-the-retry-window")
    assert fault.times == 0
    (done,) = passes
    assert done["cancelled"] == 0 and done["running"] == 1
    assert result.status == "SUCCEEDED", result.cause
    (job,) = created(result)
    assert cloud.training.stopped_jobs == []
    assert result.output["TrainingJobName"] == job
    assert harness.job_items() == []
