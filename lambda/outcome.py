"""Reporting a finished training job to the waiting state-machine task."""

from __future__ import annotations

import json
from typing import Any

from hetero_constructs.core import lifecycle

TERMINAL = lifecycle.TERMINAL_JOB_STATUSES
_REPORTED = (
    "TrainingJobName",
    "TrainingJobArn",
    "TrainingJobStatus",
    "SecondaryStatus",
    "ModelArtifacts",
    "CreationTime",
    "TrainingStartTime",
    "TrainingEndTime",
    "LastModifiedTime",
    "BillableTimeInSeconds",
    "FailureReason",
)
MAX_CAUSE = 32768


def _plain(value: Any) -> Any:
    """Times from DescribeTrainingJob are datetimes; events carry strings or numbers."""
    return value.isoformat() if hasattr(value, "isoformat") else value


def summary(job: dict[str, Any]) -> dict[str, Any]:
    return {key: _plain(job[key]) for key in _REPORTED if key in job}


def report(stepfunctions: Any, task_token: str, job: dict[str, Any]) -> str:
    """Send task success for a completed job, task failure with its reason otherwise."""
    status = job.get("TrainingJobStatus")
    details = summary(job)
    if status == "Completed":
        stepfunctions.send_task_success(taskToken=task_token, output=json.dumps(details))
    else:
        error = "TrainingJobStopped" if status == "Stopped" else "TrainingJobFailed"
        reason = job.get("FailureReason") or f"training job {status}"
        cause = json.dumps({**details, "FailureReason": reason})[:MAX_CAUSE]
        stepfunctions.send_task_failure(taskToken=task_token, error=error, cause=cause)
    return str(status)
