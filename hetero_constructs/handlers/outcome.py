"""Reporting a finished training job to its waiting task, exactly once in effect.

``settle`` is shared by the events handler, the reconciler and a resumed submit: it records the
end in the job's slot, sends the task its success or failure, then forgets the job. Sending twice
is harmless (the second finds the task gone), and a crash between the steps is finished by the
next event or reconcile pass, because the job item is deleted last.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from hetero_constructs.handlers import token_store
from hetero_constructs.run import lifecycle

TERMINAL = lifecycle.TERMINAL_JOB_STATUSES
MAX_CAUSE = 32768
_TASK_GONE = ("TaskDoesNotExist", "TaskTimedOut", "InvalidToken")
# A slot outlives its jobs: it is kept for the longest a run can retry (28-day jobs and more).
SLOT_TTL_SECONDS = 60 * 24 * 3600


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def send_failure(stepfunctions: Any, task_token: str, error: str, cause: dict[str, Any]) -> str:
    """Fail the task with an error name and a JSON cause (cut to Step Functions' limit)."""
    text = json.dumps(cause, default=str)
    if len(text) > MAX_CAUSE:
        text = json.dumps({**{k: cause.get(k) for k in list(cause)[:4]}, "truncated": True})
    try:
        stepfunctions.send_task_failure(taskToken=task_token, error=error, cause=text)
    except ClientError as failure:
        if error_code(failure) not in _TASK_GONE:
            raise
        return "task gone"
    return error


def execution_running(stepfunctions: Any, execution_arn: str) -> bool:
    """Whether the execution still runs (a job of an ended execution has no reader)."""
    try:
        status = stepfunctions.describe_execution(executionArn=execution_arn).get("status")
    except ClientError as failure:
        if error_code(failure) == "ExecutionDoesNotExist":
            return False
        raise
    return bool(status == "RUNNING")


def is_own_job(sagemaker: Any, item: token_store.JobItem, job: dict[str, Any]) -> bool:
    """Whether ``job`` (DescribeTrainingJob) is the one ``item`` waits for, not another job of
    the same name: its marker tags name the item's execution, slot and attempt, and its role and
    output path are the run's (markers can be copied, the role and output path cannot).

    The item is written before the job is created: until the submit finds the name taken
    (HeteroTraining.JobNameTaken) and forgets it, an event or a reconcile pass may meet it with
    someone else's job, which is never reported nor stopped.
    """
    if item.execution_role and job.get("RoleArn") != item.execution_role:
        return False
    if item.output_path and (job.get("OutputDataConfig") or {}).get("S3OutputPath") != (
        item.output_path
    ):
        return False
    tags = sagemaker.list_tags(ResourceArn=job["TrainingJobArn"]).get("Tags", [])
    found = {tag["Key"]: tag["Value"] for tag in tags}
    return (
        found.get(lifecycle.TAG_EXECUTION) == item.execution_arn
        and found.get(lifecycle.TAG_SLOT) == item.slot
        and found.get(lifecycle.TAG_ATTEMPT) == str(item.attempt)
    )


def report(
    stepfunctions: Any, task_token: str, job: dict[str, Any], attempt: int, variant: int
) -> str:
    """Success with the task output for a completed job, the failure's error name otherwise."""
    if job.get("TrainingJobStatus") == "Completed":
        output = lifecycle.task_output(job, attempt, variant)
        try:
            stepfunctions.send_task_success(
                taskToken=task_token, output=json.dumps(output, default=str)
            )
        except ClientError as failure:
            if error_code(failure) not in _TASK_GONE:
                raise
            return "task gone"
        return "Completed"
    cause = lifecycle.failure_cause(job, Attempt=attempt, Variant=variant)
    return send_failure(stepfunctions, task_token, lifecycle.failure_error(job), cause)


def settle(
    dynamodb: Any, stepfunctions: Any, item: token_store.JobItem, job: dict[str, Any]
) -> str:
    """Record, report and forget a job that has ended (``job`` as DescribeTrainingJob gives it)."""
    capacity = (
        job.get("TrainingJobStatus") != "Completed"
        and lifecycle.failure_error(job) == lifecycle.Errors.CAPACITY
    )
    slot = token_store.get_slot(dynamodb, item.slot)
    # A settle repeated after a crash must not count the same failure twice.
    counted = slot is not None and slot.job == item.name and slot.reported
    failures = (slot.capacity_failures if slot else 0) + (1 if capacity and not counted else 0)

    def record(reported: bool) -> None:
        token_store.put_slot(
            dynamodb,
            token_store.SlotItem(
                item.slot,
                item.name,
                item.attempt,
                item.variant,
                reported,
                failures if reported else (slot.capacity_failures if slot else 0),
            ),
            SLOT_TTL_SECONDS,
            only_if_job=item.name,
        )

    record(True)
    status = report(stepfunctions, item.task_token, job, item.attempt, item.variant)
    if status == "task gone" and not counted:
        # Nobody heard it (the task was between two of its attempts): the next attempt's
        # submit finds the job unreported and reports it then, instead of creating another.
        # A repeated settle (the job item outlived an earlier one, e.g. its delete failed)
        # finds the task gone because that one was heard: rewinding would hand this job's
        # end to the next attempt (a Retry of the task) as if it were its own.
        record(False)
    token_store.forget_job(dynamodb, item.name)
    return status


__all__ = [
    "SLOT_TTL_SECONDS",
    "TERMINAL",
    "error_code",
    "execution_running",
    "is_own_job",
    "report",
    "send_failure",
    "settle",
]
