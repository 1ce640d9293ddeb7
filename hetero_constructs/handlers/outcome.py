"""Reporting a finished training job to its waiting task, exactly once in effect.

``settle`` is shared by the events handler, the reconciler and a resumed submit: it records the
end in the job's slot, sends the task its success or failure, then forgets the job. Sending twice
is harmless (the second finds the task gone), and a crash between the steps is finished by the
next event or reconcile pass, because the job item is deleted last.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hetero_constructs.contract import lifecycle
from hetero_constructs.contract.training_job import error_code
from hetero_constructs.handlers import token_store

TERMINAL = lifecycle.TERMINAL_JOB_STATUSES
MAX_CAUSE = 32768
# What an oversize cause keeps of each of its four documented keys.
_CUT_CAUSE_VALUE = 4096
_TASK_GONE = ("TaskDoesNotExist", "TaskTimedOut", "InvalidToken")
# A slot outlives its jobs: it is kept for the longest a run can retry (28-day jobs and more).
SLOT_TTL_SECONDS = 60 * 24 * 3600


def send_failure(stepfunctions: Any, task_token: str, error: str, cause: dict[str, Any]) -> str:
    """Fail the task with an error name and a JSON cause (cut to Step Functions' limit)."""
    text = json.dumps(cause, default=str)
    if len(text) > MAX_CAUSE:
        text = json.dumps(_cut_cause(cause), default=str)
    try:
        stepfunctions.send_task_failure(taskToken=task_token, error=error, cause=text)
    except ClientError as failure:
        if error_code(failure) not in _TASK_GONE:
            raise
        return "task gone"
    return error


def _cut_cause(cause: dict[str, Any]) -> dict[str, Any]:
    """The four documented keys of a cause, each cut so that its JSON takes at most
    ``_CUT_CAUSE_VALUE`` characters (JSON writes one character as at most 12)."""
    cut: dict[str, Any] = {}
    for key in ("TrainingJobName", "TrainingJobStatus", "SecondaryStatus", "FailureReason"):
        value = cause.get(key)
        if value is None:
            cut[key] = None
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        fitted = text[:_CUT_CAUSE_VALUE]
        if len(json.dumps(fitted)) > _CUT_CAUSE_VALUE:
            fitted = text[: _CUT_CAUSE_VALUE // 12]
        cut[key] = fitted
    return {**cut, "truncated": True}


def heartbeat(stepfunctions: Any, task_token: str) -> bool:
    """Whether the task holding ``task_token`` still waits: a token whose task was closed by any
    cause (its execution ended, its Parallel branch or Map iteration was cancelled, its own
    timeout) answers an error."""
    try:
        stepfunctions.send_task_heartbeat(taskToken=task_token)
    except ClientError as failure:
        if error_code(failure) not in _TASK_GONE:
            raise
        return False
    return True


def describe_execution(stepfunctions: Any, execution_arn: str) -> dict[str, Any] | None:
    """DescribeExecution, or None for an execution that does not exist (any more)."""
    try:
        return dict(stepfunctions.describe_execution(executionArn=execution_arn))
    except ClientError as failure:
        if error_code(failure) == "ExecutionDoesNotExist":
            return None
        raise


def same_moment(recorded: str, described: Any) -> bool:
    """Whether the execution start the task's context gave (ISO 8601 text) is DescribeExecution's
    ``startDate`` (an empty ``recorded``, from an item written before it was kept, matches)."""
    if not recorded:
        return True
    try:
        then = datetime.fromisoformat(recorded.replace("Z", "+00:00"))
    except ValueError:
        return bool(recorded == str(described))
    if not isinstance(described, datetime):
        return False
    if then.tzinfo is None or described.tzinfo is None:
        then, described = then.replace(tzinfo=None), described.replace(tzinfo=None)
    return bool(abs((then - described).total_seconds()) < 0.001)


def run_has_ended(execution: dict[str, Any] | None, item: token_store.JobItem) -> bool:
    """Whether Step Functions confirms that the run ``item``'s job belongs to has ended: the
    execution is gone, or it has ended and is the run the job was created in (its start date;
    a redrive since counts too, the job's run ended before it)."""
    if execution is None:
        return True
    if execution.get("status") == "RUNNING":
        return False  # still running, or redriven: the task's token says whether it waits
    if not same_moment(item.execution_start, execution.get("startDate")):
        return False  # another execution of the same ARN (a re-created state machine)
    return int(execution.get("redriveCount") or 0) >= item.redrive_count


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
    slot, _, digest = found.get(lifecycle.TAG_SLOT, "").partition(lifecycle.SLOT_TAG_SEPARATOR)
    return (
        found.get(lifecycle.TAG_EXECUTION) == item.execution_arn
        and slot == item.slot
        and found.get(lifecycle.TAG_ATTEMPT) == str(item.attempt)
        and (not item.request_digest or digest == item.request_digest)
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
    dynamodb: Any,
    stepfunctions: Any,
    item: token_store.JobItem,
    job: dict[str, Any],
) -> str:
    """Record, report and forget a job that has ended (``job`` as DescribeTrainingJob gives it).

    A success marks the slot ``completed``: other entries' retries keep off the lane, unless
    the task that heard it did not keep it (``lanes``, ``task_history``)."""
    capacity = (
        job.get("TrainingJobStatus") != "Completed"
        and lifecycle.failure_error(job) == lifecycle.Errors.CAPACITY
    )
    slot = token_store.get_slot(dynamodb, item.slot)
    # A settle repeated after a crash must not count the same failure twice.
    counted = slot is not None and slot.job == item.name and slot.reported
    failures = (slot.capacity_failures if slot else 0) + (1 if capacity and not counted else 0)

    def record(reported: bool) -> None:
        written = token_store.SlotItem(
            item.slot,
            item.name,
            item.attempt,
            item.variant,
            reported,
            failures if reported else (slot.capacity_failures if slot else 0),
            holder=max(slot.holder if slot else 0, item.token_holder),
            completed=reported and job.get("TrainingJobStatus") == "Completed",
        )
        if slot is None:
            written = written.held_by(item.task_token)
        else:
            written = dataclasses.replace(
                written, version=slot.version, token=slot.token, chain=slot.chain
            )
        token_store.put_slot(dynamodb, written, SLOT_TTL_SECONDS, only_if_job=item.name)

    record(True)
    status = report(stepfunctions, item.task_token, job, item.attempt, item.variant)
    if status == "task gone" and not counted:
        # Nobody heard it (the task was between two of its attempts): the next attempt's
        # submit finds the job unreported and reports it then, instead of creating another.
        # A repeated settle (the job item outlived an earlier one, e.g. its delete failed)
        # finds the task gone because that one was heard: rewinding would hand this job's
        # end to the next attempt (a Retry of the task) as if it were its own.
        record(False)
    token_store.forget_job(dynamodb, item)
    return status


__all__ = [
    "SLOT_TTL_SECONDS",
    "TERMINAL",
    "describe_execution",
    "error_code",
    "execution_running",
    "heartbeat",
    "is_own_job",
    "report",
    "run_has_ended",
    "same_moment",
    "send_failure",
    "settle",
]
