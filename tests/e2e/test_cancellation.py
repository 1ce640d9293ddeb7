"""A task that Step Functions closes while its execution runs on: its job is stopped within one
reconcile pass, end to end in the local runner (issue 21, "must hold" 2).

Step Functions closes a waiting training task without ending the execution when its Parallel
branch is cancelled (a sibling branch failed, the Parallel's error caught), when its Map
iteration is cancelled (another iteration failed, the Map's error caught), and when its own
``TimeoutSeconds`` elapses under a Catch. Nobody will read that task's job any more; it must not
train on until ``MaxRuntimeInSeconds``. The reconcile pass heartbeats every open task token: a
closed task's token answers ``TaskTimedOut``, and its job is stopped. A retried Parallel
re-enters the task while the cancelled entry's job still runs: the new entry's submit stops that
job before it creates its own, so that one job runs at any time. A Distributed Map that
tolerates the failed item cancels nothing: its other iterations' jobs run on and report; one
that tolerates none closes them as an inline Map does.

Each state machine (``tests/fixtures/cancelling_stacks.py``) parks the execution in a held
state once the task is closed, so that each step is observed while the execution is RUNNING;
jobs run until the test ends or stops them (``tests/fixtures/cancellation.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from hetero_constructs.local import LocalCloud
from tests.fixtures.cancellation import (
    Gates,
    in_progress,
    job_running,
    job_token,
    reports_to,
    start,
    status,
    wait_for,
)
from tests.fixtures.cancelling_stacks import GATE_ERROR, CancellingStack
from tests.fixtures.harness import Harness, on_calls, reconcile_passes, record_calls
from tests.fixtures.timeouts import Timeouts


@pytest.fixture(scope="module")
def cancelling(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthesized template's path (synthesized once for the module)."""
    outdir = tmp_path_factory.mktemp("cancelling.out")
    app = cdk.App(outdir=str(outdir))
    CancellingStack(app, "Cancelling")
    app.synth()
    return outdir / "Cancelling.template.json"


@pytest.fixture
def harness(cancelling: Path) -> Iterator[Harness]:
    with LocalCloud(simulate="Completed") as cloud:
        cloud.deploy(cancelling)
        events = cloud.lambdas.find("events.handler")
        harness = Harness(cloud, "", events.environment["TOKEN_TABLE"], events.name)
        record_calls(harness)
        yield harness


def tokens_of(harness: Harness, jobs: list[str]) -> dict[str, str]:
    """Each running job's task token (read from its job item before anything settles it)."""
    return {job: job_token(harness, job) for job in jobs}


def stopped_by_one_reconcile_pass(harness: Harness, execution: str, jobs: dict[str, str]) -> None:
    """The closed tasks' ``jobs`` (name: token) run until one reconcile pass, which stops them
    while the execution runs on; none of them ever reports to its closed task."""
    cloud = harness.cloud
    cloud.settle()  # whatever the closing caused has been delivered: the jobs still run
    assert status(cloud, execution) == "RUNNING"
    assert sorted(in_progress(cloud)) == sorted(jobs)
    assert reconcile_passes(cloud) == 0
    harness.reconcile()  # one pass, as the schedule delivers it
    assert sorted(cloud.training.stopped_jobs) == sorted(jobs)
    assert in_progress(cloud) == []
    assert status(cloud, execution) == "RUNNING"
    harness.stopped_jobs_end()
    assert all(harness.status(job) == "Stopped" for job in jobs)
    assert harness.job_items() == []  # their Stopped events settled them
    for job, token in jobs.items():
        assert reports_to(harness, token) == [], f"{job} reported to its closed task"


def released(harness: Harness, gates: Gates, execution: str) -> dict[str, Any]:
    """Release the held execution; it succeeds. Its output (the caught error in ``failure``)."""
    cloud = harness.cloud
    gates.open("hold")
    wait_for(cloud, lambda: status(cloud, execution) != "RUNNING")
    described = cloud.client("stepfunctions").describe_execution(executionArn=execution)
    assert described["status"] == "SUCCEEDED", described.get("cause")
    return dict(json.loads(described["output"]))


def test_a_parallel_branch_cancelled_by_its_failing_sibling_loses_its_job(
    harness: Harness,
) -> None:
    cloud, gates = harness.cloud, Gates(harness.cloud)
    execution = start(cloud, "cancel-parallel", "parallel")
    jobs = tokens_of(harness, job_running(harness))
    gates.fail("sibling")  # the Parallel fails, its Catch goes on to the held state
    gates.waiting("hold")
    stopped_by_one_reconcile_pass(harness, execution, jobs)
    assert released(harness, gates, execution)["failure"]["Error"] == GATE_ERROR


def test_a_branch_cancelled_while_its_submit_runs_loses_the_job_it_then_creates(
    harness: Harness,
) -> None:
    """The sibling fails while the submit Lambda is about to create the job: the job is created
    for a task that is already closed (the submit cannot tell), and one pass stops it."""
    cloud, gates = harness.cloud, Gates(harness.cloud)
    closed_before_creation: list[bool] = []

    def close_the_branch(**_: Any) -> None:
        if not closed_before_creation:
            gates.fail_from_a_handler("sibling")
            closed_before_creation.append(True)

    on_calls("before-call.sagemaker.CreateTrainingJob", close_the_branch)
    execution = start(cloud, "cancel-parallel", "parallel-submitting")
    jobs = tokens_of(harness, job_running(harness))
    assert closed_before_creation == [True]
    stopped_by_one_reconcile_pass(harness, execution, jobs)
    assert released(harness, gates, execution)["failure"]["Error"] == GATE_ERROR


def test_map_iterations_cancelled_by_a_failing_iteration_lose_their_jobs(
    harness: Harness,
) -> None:
    cloud, gates = harness.cloud, Gates(harness.cloud)
    items = [{"role": "train"}, {"role": "train"}, {"role": "fail"}]
    execution = start(cloud, "cancel-map", "map", {"items": items})
    jobs = tokens_of(harness, job_running(harness, count=2))
    assert len(jobs) == 2
    gates.fail("item")  # the Map fails and cancels the training iterations; its Catch holds
    gates.waiting("hold")
    stopped_by_one_reconcile_pass(harness, execution, jobs)
    assert released(harness, gates, execution)["failure"]["Error"] == GATE_ERROR


def test_a_tolerated_failed_item_cancels_no_other_iteration(harness: Harness) -> None:
    """The counterpart: a Distributed Map that tolerates one failed item goes on, so its other
    iteration's task still waits; the reconcile pass leaves that job running, and it reports."""
    cloud, gates = harness.cloud, Gates(harness.cloud)
    items = [{"role": "train"}, {"role": "fail"}]
    execution = start(cloud, "tolerant-map", "tolerant", {"items": items})
    (job,) = job_running(harness)
    token = job_token(harness, job)
    gates.fail("item")
    wait_for(cloud, lambda: failed_items(cloud, execution) == 1)
    cloud.settle()
    assert status(cloud, execution) == "RUNNING"
    harness.reconcile()
    assert cloud.training.stopped_jobs == []
    assert in_progress(cloud) == [job]
    cloud.end_training_job(job, "Completed")
    wait_for(cloud, lambda: status(cloud, execution) != "RUNNING")
    assert status(cloud, execution) == "SUCCEEDED"
    assert reports_to(harness, token) == ["SendTaskSuccess"]
    assert harness.job_items() == []


def test_a_distributed_map_over_its_tolerated_failures_closes_its_other_iterations(
    harness: Harness,
) -> None:
    """The same items in a Distributed Map that tolerates no failed item (the default): the Map
    Run fails (``States.ExceedToleratedFailureThreshold``) and the training iteration is closed."""
    cloud, gates = harness.cloud, Gates(harness.cloud)
    items = [{"role": "train"}, {"role": "fail"}]
    execution = start(cloud, "intolerant-map", "intolerant", {"items": items})
    jobs = tokens_of(harness, job_running(harness))
    gates.fail("item")
    gates.waiting("hold")
    stopped_by_one_reconcile_pass(harness, execution, jobs)
    failure = released(harness, gates, execution)["failure"]
    assert failure["Error"] == "States.ExceedToleratedFailureThreshold"


def test_a_task_timed_out_under_a_catch_loses_its_job(harness: Harness, timeouts: Timeouts) -> None:
    cloud, gates = harness.cloud, Gates(harness.cloud)
    execution = start(cloud, "cancel-timeout", "timeout")
    jobs = tokens_of(harness, job_running(harness))
    # Nothing answers the task: its TimeoutSeconds (max_run + margin) elapses once its job runs,
    # however long the submit took; the Catch holds.
    timeouts.elapse_state()
    gates.waiting("hold")
    stopped_by_one_reconcile_pass(harness, execution, jobs)
    assert released(harness, gates, execution)["failure"]["Error"] == "States.Timeout"


def test_a_retried_parallel_runs_one_job_at_any_time(harness: Harness) -> None:
    """The Parallel's Retry re-enters the training branch while the cancelled entry's job still
    runs: the new entry's submit stops it before it creates its own job."""
    cloud, gates = harness.cloud, Gates(harness.cloud)
    running_at_creation: list[list[str]] = []
    on_calls(
        "before-call.sagemaker.CreateTrainingJob",
        lambda **_: running_at_creation.append(in_progress(cloud)),
    )
    execution = start(cloud, "cancel-retried", "retried")
    (first,) = job_running(harness)
    first_token = job_token(harness, first)
    gates.fail("sibling")  # the Parallel fails; its Retry enters both branches again
    wait_for(cloud, lambda: len(cloud.training.attempts) == 2 and not cloud.lambdas.running())
    second = cloud.training.attempts[1].name
    assert running_at_creation == [[], []]  # no job ran when either was created
    assert cloud.training.stopped_jobs == [first]
    assert reconcile_passes(cloud) == 0  # the submit stopped it, not a pass
    assert status(cloud, execution) == "RUNNING"
    harness.stopped_jobs_end()
    harness.reconcile()  # a pass leaves the new entry's job alone: its task waits
    assert in_progress(cloud) == [second]
    cloud.end_training_job(second, "Completed")
    gates.open("sibling", 2)
    wait_for(cloud, lambda: status(cloud, execution) != "RUNNING")
    described = cloud.client("stepfunctions").describe_execution(executionArn=execution)
    assert described["status"] == "SUCCEEDED", described.get("cause")
    trained, _ = json.loads(described["output"])
    assert trained["TrainingJobName"] == second
    assert reports_to(harness, first_token) == []
    assert harness.job_items() == []


def test_a_retried_parallel_whose_submit_cannot_look_relies_on_one_pass(harness: Harness) -> None:
    """The new entry's look at the other jobs is throttled (the submit never fails for it): both
    jobs run until the next reconcile pass, which stops the cancelled entry's."""
    cloud, gates = harness.cloud, Gates(harness.cloud)
    execution = start(cloud, "cancel-retried", "retried-throttled")
    (first,) = job_running(harness)
    first_token = job_token(harness, first)
    throttled = cloud.faults.throttle("stepfunctions", "SendTaskHeartbeat")
    gates.fail("sibling")
    wait_for(cloud, lambda: len(cloud.training.attempts) == 2 and not cloud.lambdas.running())
    second = cloud.training.attempts[1].name
    assert throttled.times == 0
    assert in_progress(cloud) == [first, second]
    harness.reconcile()
    assert cloud.training.stopped_jobs == [first]
    assert in_progress(cloud) == [second]
    harness.stopped_jobs_end()
    cloud.end_training_job(second, "Completed")
    gates.open("sibling", 2)
    wait_for(cloud, lambda: status(cloud, execution) != "RUNNING")
    assert status(cloud, execution) == "SUCCEEDED"
    assert reports_to(harness, first_token) == []


def failed_items(cloud: LocalCloud, execution: str) -> int:
    """How many items of the execution's Map Run have failed (DescribeMapRun)."""
    stepfunctions = cloud.client("stepfunctions")
    (run,) = stepfunctions.list_map_runs(executionArn=execution)["mapRuns"]
    described = stepfunctions.describe_map_run(mapRunArn=run["mapRunArn"])
    return int(described["itemCounts"]["failed"])
