"""RedriveExecution of a run whose training failed, end to end in the local runner.

The ``two-tasks`` state machine (``ManyTasksStack``): a first training task, then a second. The
second's job fails, so the execution ends FAILED; a redrive goes on from the second task (the
first is not run again): a fresh attempt with a new job name, whose job completes, and the
execution succeeds with that job's output. The old run's FAILED event, delivered again while the
redriven run trains, stops nothing (the events Lambda asks DescribeExecution first).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from botocore.exceptions import ClientError

from hetero_constructs import TrainingErrors
from hetero_constructs.contract import lifecycle
from hetero_constructs.local import ExecutionResult, LocalCloud
from tests.fixtures.composed_stacks import ManyTasksStack
from tests.fixtures.redrive_parts import RedriveParts

MACHINE = "two-tasks"
NAN = "Failed:AlgorithmError: loss is NaN"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("redrive.out")
    app = cdk.App(outdir=str(outdir))
    ManyTasksStack(app, "ManyTasks")
    app.synth()
    return outdir / "ManyTasks.template.json"


@pytest.fixture
def cloud(template: Path) -> Iterator[LocalCloud]:
    with LocalCloud(simulate="Completed") as local:
        local.deploy(template)
        yield local


def names(result: ExecutionResult) -> list[str]:
    return [request["TrainingJobName"] for request in result.submitted_requests]


def failed_run(cloud: LocalCloud, name: str) -> ExecutionResult:
    """A run whose first job completes and whose second job fails: the execution fails."""
    result = cloud.run(cloud.state_machine(MACHINE), {}, name=name, outcomes=["Completed", NAN])
    assert result.status == "FAILED", result.cause
    assert result.error == TrainingErrors.TRAINING_FAILED
    assert [job.status for job in result.jobs] == ["Completed", "Failed"]
    return result


def end_events(cloud: LocalCloud, execution_arn: str) -> list[dict[str, Any]]:
    return [
        event
        for event in list(cloud.bus.events)
        if event["source"] == lifecycle.EXECUTION_EVENT_SOURCE
        and event["detail"]["executionArn"] == execution_arn
    ]


def test_a_redriven_run_trains_a_new_job_and_succeeds_with_its_output(cloud: LocalCloud) -> None:
    failed = failed_run(cloud, "redriven")
    first_job, failed_job = names(failed)

    redriven = cloud.redrive(failed.execution_arn)
    assert redriven.status == "SUCCEEDED", redriven.cause
    assert redriven.execution_arn == failed.execution_arn
    # Only the second task ran again: one new attempt, with a name never used before.
    (new_job,) = names(redriven)
    assert new_job not in (first_job, failed_job)
    assert new_job.startswith("many-second-") and failed_job.startswith("many-second-")
    assert [job.status for job in redriven.jobs] == ["Completed"]
    # Its output is the new job's; the first task's output is the first run's.
    assert redriven.output["second"]["TrainingJobName"] == new_job
    assert redriven.output["second"]["ModelArtifacts"]["S3ModelArtifacts"].endswith(
        f"/{new_job}/output/model.tar.gz"
    )
    assert redriven.output["first"]["TrainingJobName"] == first_job
    described = cloud.client("stepfunctions").describe_execution(executionArn=failed.execution_arn)
    assert described["redriveCount"] == 1 and described["startDate"] < described["redriveDate"]
    types = [event["type"] for event in redriven.history]
    assert types.index("ExecutionFailed") < types.index("ExecutionRedriven")
    assert types[-1] == "ExecutionSucceeded"
    statuses = [event["detail"]["status"] for event in end_events(cloud, failed.execution_arn)]
    assert statuses == ["RUNNING", "FAILED", "RUNNING", "SUCCEEDED"]
    # The old failed job was never reported again, nor stopped.
    assert cloud.training.stopped_jobs == []
    assert cloud.training.attempt(failed_job).status == "Failed"


def test_the_old_failed_event_after_a_redrive_stops_nothing(cloud: LocalCloud) -> None:
    failed = failed_run(cloud, "stale-end")
    arn = failed.execution_arn
    (old_end,) = [e for e in end_events(cloud, arn) if e["detail"]["status"] == "FAILED"]
    stepfunctions = cloud.client("stepfunctions")
    known = len(cloud.training.attempts)
    stepfunctions.redrive_execution(executionArn=arn)
    new_job = _new_job_running(cloud, known)
    assert new_job not in names(failed)

    # The old run's FAILED event, delivered again (late, or replayed) while the new job trains.
    invoked = len(cloud.lambdas.invocations)
    cloud.bus.put(old_end)
    cloud.settle()
    handled = [i for i in cloud.lambdas.invocations[invoked:] if i.event == old_end]
    assert len(handled) == 1 and handled[0].error is None  # the events Lambda got it
    assert cloud.training.stopped_jobs == []
    assert cloud.training.attempt(new_job).status == "InProgress"
    # A reconcile pass finds the redriven run's task waiting: it stops nothing either.
    assert cloud.fire_schedules() == 1
    assert cloud.training.stopped_jobs == []

    cloud.end_training_job(new_job)  # Completed
    described = _ended(cloud, arn)
    assert described["status"] == "SUCCEEDED", described
    assert described["redriveCount"] == 1
    assert f'"TrainingJobName":"{new_job}"' in described["output"].replace(" ", "")


def test_a_run_stopped_mid_training_is_redriven_while_its_old_job_still_stops(
    cloud: LocalCloud,
) -> None:
    """StopExecution while the first job trains: the events Lambda stops the job. The redrive
    comes before SageMaker has ended it; its Stopped event, arriving during the redriven run, is
    reported to the old run's closed task, never to the new one, and stops nothing."""
    stepfunctions = cloud.client("stepfunctions")
    arn = stepfunctions.start_execution(
        stateMachineArn=cloud.state_machine(MACHINE), name="stopped-mid", input="{}"
    )["executionArn"]
    old_job = _new_job_running(cloud, 0)
    stepfunctions.stop_execution(executionArn=arn, error="Stopped", cause="by the test")
    cloud.settle()  # the ABORTED event: the events Lambda stops the job
    assert cloud.training.stopped_jobs == [old_job]
    assert cloud.training.attempt(old_job).status == "Stopping"

    known = len(cloud.training.attempts)
    stepfunctions.redrive_execution(executionArn=arn)
    new_job = _new_job_running(cloud, known)
    assert new_job != old_job and new_job.startswith("many-first-")
    cloud.end_training_job(old_job)  # SageMaker ends the stopped job now: its Stopped event
    assert cloud.training.attempt(old_job).status == "Stopped"
    assert cloud.training.attempt(new_job).status == "InProgress"
    assert cloud.training.stopped_jobs == [old_job]
    assert stepfunctions.describe_execution(executionArn=arn)["status"] == "RUNNING"

    described = _ended(cloud, arn, advance=True)  # both tasks' jobs complete
    assert described["status"] == "SUCCEEDED", described
    output = json.loads(described["output"])
    assert output["first"]["TrainingJobName"] == new_job
    assert cloud.training.stopped_jobs == [old_job]


def test_a_redriven_map_of_training_tasks_trains_again_only_the_item_whose_job_failed(
    cloud: LocalCloud, redrive_parts: RedriveParts
) -> None:
    """A Map of training tasks (one job per item): two jobs complete, the third fails, the Map
    and the execution fail. The redrive trains only the failed item again, with a new job; the
    output has the two first jobs and the new one."""
    stepfunctions = cloud.client("stepfunctions")
    arn = stepfunctions.start_execution(
        stateMachineArn=cloud.state_machine("mapped"),
        name="map-redrive",
        input=json.dumps({"items": [1, 2, 3]}),
    )["executionArn"]
    jobs = _jobs_running(cloud, 0, 3)
    for job in jobs[:2]:
        cloud.end_training_job(job, "Completed")
    # The third job fails once both others' successes are recorded (before that, they would be
    # stopped with the run and trained again).
    deadline = time.monotonic() + 60
    while len(redrive_parts.succeeded()) < 2:
        assert time.monotonic() < deadline, redrive_parts.succeeded()
        cloud.deliver_events()
        time.sleep(0.02)
    cloud.end_training_job(jobs[2], NAN)
    failed = _ended(cloud, arn)
    assert (failed["status"], failed.get("error")) == ("FAILED", TrainingErrors.TRAINING_FAILED)

    known = len(cloud.training.attempts)
    stepfunctions.redrive_execution(executionArn=arn)
    new_job = _new_job_running(cloud, known)
    assert new_job not in jobs
    cloud.end_training_job(new_job)
    described = _ended(cloud, arn)
    assert described["status"] == "SUCCEEDED", described
    trained = [output["TrainingJobName"] for output in json.loads(described["output"])]
    assert sorted(trained) == sorted([*jobs[:2], new_job])
    assert len(cloud.training.attempts) == known + 1  # no other item was trained again
    assert cloud.training.stopped_jobs == []


def test_a_succeeded_run_is_not_redriven(cloud: LocalCloud) -> None:
    result = cloud.run(cloud.state_machine(MACHINE), {}, name="succeeded")
    assert result.status == "SUCCEEDED", result.cause
    requests = len(cloud.training.requests)
    with pytest.raises(ClientError) as refused:
        cloud.redrive(result.execution_arn)
    assert refused.value.response["Error"]["Code"] == "ExecutionNotRedrivable"
    assert "SUCCEEDED" in refused.value.response["Error"]["Message"]
    described = cloud.client("stepfunctions").describe_execution(executionArn=result.execution_arn)
    assert (described["status"], described["redriveCount"]) == ("SUCCEEDED", 0)
    assert described["redriveStatus"] == "NOT_REDRIVABLE"
    assert len(cloud.training.requests) == requests  # no job was created


def _new_job_running(cloud: LocalCloud, known: int) -> str:
    """The job the redriven run created, once it runs and the run's code is idle."""
    (job,) = _jobs_running(cloud, known, 1)
    return job


def _jobs_running(cloud: LocalCloud, known: int, count: int, timeout: float = 60) -> list[str]:
    """The ``count`` jobs created after the first ``known``, once they run and the run's code
    is idle."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cloud.deliver_events()
        new = [a.name for a in cloud.training.attempts[known:] if a.status == "InProgress"]
        if len(new) >= count and not cloud.lambdas.running() and not cloud.bus.pending():
            assert len(new) == count, new
            return new
        time.sleep(0.02)
    raise AssertionError(f"the run did not create {count} jobs")


def _ended(
    cloud: LocalCloud, arn: str, timeout: float = 60, *, advance: bool = False
) -> dict[str, Any]:
    """DescribeExecution once ``arn`` has ended; with ``advance``, jobs end as they run."""
    stepfunctions = cloud.client("stepfunctions")
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    while time.monotonic() < deadline:
        if advance:
            cloud.advance(seen)
        else:
            cloud.deliver_events()
        described = dict(stepfunctions.describe_execution(executionArn=arn))
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.02)
    raise AssertionError(f"{arn} did not end")
