"""How a job that ended without completing is named: ``lifecycle.failure_error``.

The inputs are DescribeTrainingJob-shaped (the events Lambda and the reconciler describe the job
and pass the answer as it is). "Stopped while pending for capacity", as the code defines it: the
job is Stopped, the last secondary status before Stopping/Stopped is a pending one (Starting,
Pending, LaunchingMLInstances), and the FailureReason or a transition's StatusMessage speaks of
capacity (MaxPendingTimeInSeconds ran out). A job stopped after it trained was stopped by
someone: ``HeteroTraining.Stopped``, never retried as capacity.
"""

from __future__ import annotations

from typing import Any

import pytest

from hetero_constructs.contract.lifecycle import Errors, failure_error

LAUNCHING = {"Status": "Starting", "StatusMessage": "Launching requested ML instances"}
WAITING = {
    "Status": "Pending",
    "StatusMessage": "Waiting for capacity: insufficient capacity for ml.p5.48xlarge",
}
TRAINING = {"Status": "Training", "StatusMessage": "Training image download completed."}
STOPPING = {"Status": "Stopping", "StatusMessage": "Stopping the training job"}
STOPPED = {"Status": "Stopped", "StatusMessage": "Training job stopped"}


def job(
    status: str,
    secondary: str,
    transitions: list[dict[str, str]],
    reason: str | None = None,
) -> dict[str, Any]:
    described: dict[str, Any] = {
        "TrainingJobName": "train-1",
        "TrainingJobStatus": status,
        "SecondaryStatus": secondary,
        "SecondaryStatusTransitions": transitions,
    }
    if reason is not None:
        described["FailureReason"] = reason
    return described


@pytest.mark.parametrize(
    ("secondary", "transitions"),
    [
        pytest.param("Stopped", [LAUNCHING, WAITING, STOPPING, STOPPED], id="stopped-pending"),
        pytest.param("Pending", [LAUNCHING, WAITING], id="still-pending"),
        pytest.param(
            "Starting",
            [LAUNCHING, WAITING, {"Status": "Starting", "StatusMessage": "Preparing instances"}],
            id="starting-again-after-the-wait",
        ),
        pytest.param(
            "Stopped",
            [
                {
                    "Status": "LaunchingMLInstances",
                    "StatusMessage": "Insufficient capacity, retrying",
                },
                STOPPED,
            ],
            id="launching",
        ),
    ],
)
def test_stopped_while_pending_for_capacity_is_a_capacity_error(
    secondary: str, transitions: list[dict[str, str]]
) -> None:
    assert failure_error(job("Stopped", secondary, transitions)) == Errors.CAPACITY_ERROR


def test_capacity_named_only_by_the_failure_reason_is_a_capacity_error() -> None:
    reason = "Training job exceeded MaxPendingTimeInSeconds waiting for capacity"
    described = job("Stopped", "Stopped", [LAUNCHING, STOPPING, STOPPED], reason)
    assert failure_error(described) == Errors.CAPACITY_ERROR


@pytest.mark.parametrize(
    ("transitions", "reason"),
    [
        # It waited for capacity, got it and trained: whoever stopped it then, it was not capacity.
        pytest.param([LAUNCHING, WAITING, TRAINING, STOPPING, STOPPED], None, id="after-training"),
        # Stopped while starting, with no word of capacity: someone stopped it.
        pytest.param([LAUNCHING, STOPPING, STOPPED], None, id="starting-no-capacity"),
        pytest.param([], None, id="no-transitions"),
        pytest.param([STOPPING, STOPPED], None, id="only-stopping"),
    ],
)
def test_a_job_stopped_otherwise_is_stopped(
    transitions: list[dict[str, str]], reason: str | None
) -> None:
    assert failure_error(job("Stopped", "Stopped", transitions, reason)) == Errors.STOPPED


def test_spot_max_wait_exceeded_is_a_capacity_error_whatever_the_transitions() -> None:
    # Spot: no capacity within MaxWaitTimeInSeconds; SageMaker names it in the secondary status.
    described = job("Stopped", "MaxWaitTimeExceeded", [LAUNCHING, TRAINING, STOPPED])
    assert failure_error(described) == Errors.CAPACITY_ERROR


@pytest.mark.parametrize(
    ("status", "secondary", "transitions", "reason", "error"),
    [
        ("Stopped", "MaxRuntimeExceeded", [LAUNCHING, TRAINING], None, Errors.MAX_RUNTIME_EXCEEDED),
        (
            "Failed",
            "Failed",
            [LAUNCHING, {"Status": "Failed"}],
            "CapacityError: Unable to provision requested ML compute capacity.",
            Errors.CAPACITY_ERROR,
        ),
        (
            "Failed",
            "Failed",
            [LAUNCHING, TRAINING, {"Status": "Failed"}],
            "AlgorithmError: loss is NaN",
            Errors.TRAINING_FAILED,
        ),
        # A failure is never capacity for a word in a transition: only its reason says so.
        ("Failed", "Failed", [LAUNCHING, WAITING], "ClientError: bad", Errors.TRAINING_FAILED),
    ],
)
def test_the_other_endings(
    status: str,
    secondary: str,
    transitions: list[dict[str, str]],
    reason: str | None,
    error: str,
) -> None:
    assert failure_error(job(status, secondary, transitions, reason)) == error


def test_every_error_name_has_its_attribute_named_after_it() -> None:
    """``HeteroTraining.CapacityError`` is ``Errors.CAPACITY_ERROR``, and so on for each."""
    for name in Errors.ALL:
        suffix = name.removeprefix("HeteroTraining.")
        attribute = "".join(f"_{c}" if c.isupper() else c.upper() for c in suffix).lstrip("_")
        assert getattr(Errors, attribute) == name, attribute
    assert len(set(Errors.ALL)) == len(Errors.ALL) == 8
    # The earlier names still answer, with the same values.
    assert (Errors.CAPACITY, Errors.RESOURCE_LIMIT, Errors.MAX_RUNTIME) == (
        Errors.CAPACITY_ERROR,
        Errors.RESOURCE_LIMIT_EXCEEDED,
        Errors.MAX_RUNTIME_EXCEEDED,
    )
