"""Lifecycle Lambda: finishes waiting tasks, stops orphaned jobs, and reconciles.

- "SageMaker Training Job State Change" (Completed, Failed, Stopped): settle the job: its
  waiting task gets its success or failure (the job is described again: the event is a hint).
- "Step Functions Execution Status Change" (ABORTED, TIMED_OUT, FAILED): stop every job of that
  execution once DescribeExecution confirms that the run the job belongs to has ended (the
  event may be late, replayed, or from before a redrive or a re-created state machine).
- The schedule (``{"action": "reconcile"}``): converge whatever events were lost. A waiting
  task whose job has ended is settled; a job whose execution is no longer running, or whose
  task no longer waits (its token refuses a heartbeat: a cancelled Parallel branch or Map
  iteration, a caught timeout), is stopped; a job item whose job was never created, or whose
  name is someone else's job, is forgotten; an item that does not parse is reported once.
- ``{"action": "replay-dead-letters"}``: process the events that failed before (the dead-letter
  queue), once the cause is fixed.

Every path is idempotent and safe to run concurrently with the others.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import boto3
from botocore.exceptions import ClientError

from hetero_constructs.contract import lifecycle
from hetero_constructs.contract.training_job import describe_training_job as _describe
from hetero_constructs.handlers import control, environment, outcome, task_history, token_store

T = TypeVar("T")
R = TypeVar("R")

# Longer names cannot be a job's, longer ARNs not a DynamoDB key (DynamoDB refuses the call).
MAX_JOB_NAME = 63
MAX_KEY = 2048
# A job item without its job is left alone this long: the submit Lambda may still be creating it.
CREATION_GRACE_SECONDS = 15 * 60
# An item that does not parse is kept this long after it is reported (for a look at it).
QUARANTINE_SECONDS = 14 * 24 * 3600


def _stop(sagemaker: Any, name: str) -> str:
    try:
        sagemaker.stop_training_job(TrainingJobName=name)
    except ClientError as error:
        # Already finished or stopping, or not created (yet): nothing to stop now.
        if outcome.error_code(error) not in ("ValidationException", "ResourceNotFound"):
            raise
        return f"not running: {name}"
    return f"stopped {name}"


def on_training_job_change(detail: dict[str, Any], dynamodb: Any) -> str:
    name = detail.get("TrainingJobName")
    if not isinstance(name, str) or len(name) > MAX_JOB_NAME:
        return "ignored: not a job name"
    if detail.get("TrainingJobStatus") not in outcome.TERMINAL:
        return "ignored: not terminal"
    item = token_store.get_job(dynamodb, name)
    if item is None:
        return "ignored: no waiting task"  # not ours, or already settled (a duplicate event)
    sagemaker = control.client(item.role_arn, "sagemaker")
    job = _describe(sagemaker, name)
    if job is None or job.get("TrainingJobStatus") not in outcome.TERMINAL:
        return "ignored: not ended yet"
    if not outcome.is_own_job(sagemaker, item, job):
        token_store.forget_job(dynamodb, item)  # the name is taken: the submit fails the task
        return "ignored: another job of this name"
    stepfunctions = control.client(item.role_arn, "stepfunctions")
    return f"reported {outcome.settle(dynamodb, stepfunctions, item, job)}"


def on_execution_end(detail: dict[str, Any], dynamodb: Any) -> str:
    if detail.get("status") not in lifecycle.STOPPING_EXECUTION_STATUSES:
        return "ignored: status"
    execution_arn = detail.get("executionArn")
    if not isinstance(execution_arn, str) or len(execution_arn) > MAX_KEY:
        return "ignored: no execution"
    items = token_store.jobs_of_execution(dynamodb, execution_arn)
    if not items:
        return "ignored: no job"
    # The job items stay: the jobs' Stopped events (or the reconciler) settle them. Each job on
    # its own: one that fails (a throttled call) does not keep the others running.
    done, failed = _one_by_one(items, _stop_own, lambda item: item.name)
    if failed:
        raise StopIncomplete(f"{'; '.join(done)}; not stopped ({len(failed)}): {failed[:10]}")
    return "; ".join(done)


def _one_by_one(
    items: Iterable[T], step: Callable[[T], R], name_of: Callable[[T], str]
) -> tuple[list[R], list[str]]:
    """``step`` on each item on its own: what it returned, and a line for each that failed (one
    item that fails must not leave the others unstopped or unsettled)."""
    results: list[R] = []
    failed: list[str] = []
    for item in items:
        try:
            results.append(step(item))
        except Exception as error:  # reported once the others are done
            failed.append(f"{name_of(item)}: {type(error).__name__}: {error}"[:500])
    return results, failed


class StopIncomplete(Exception):
    """Some jobs of an ended execution could not be stopped (the others were): the delivery
    fails, so that Lambda's retries, the dead-letter queue or the reconciler stop them."""


def _stop_own(item: token_store.JobItem) -> str:
    """Stop the job ``item`` waits for, never another job of the same name, and only once Step
    Functions confirms that the run it belongs to has ended."""
    stepfunctions = control.client(item.role_arn, "stepfunctions")
    if not outcome.run_has_ended(
        outcome.describe_execution(stepfunctions, item.execution_arn), item
    ):
        return f"run goes on: {item.name}"
    sagemaker = control.client(item.role_arn, "sagemaker")
    job = _describe(sagemaker, item.name)
    if job is None:
        return f"not running: {item.name}"
    if not outcome.is_own_job(sagemaker, item, job):
        return f"not ours: {item.name}"
    return _stop(sagemaker, item.name)


class ReconcileIncomplete(Exception):
    """Some items could not be reconciled (the pass went on with the others): it fails, so that
    the errors alarm and the Lambda's retries see it."""


def reconcile(dynamodb: Any, now: float | None = None) -> dict[str, int]:
    """One pass over every unsettled job; returns what it did, by kind.

    An item that fails (its control role gone, a throttled call) does not hold up the others:
    the pass goes on, then raises ``ReconcileIncomplete`` naming the items it could not reach.
    """
    now = time.time() if now is None else now
    parsed: list[token_store.JobItem] = []
    malformed: list[str] = []
    for raw in token_store.all_jobs(dynamodb):
        try:
            parsed.append(token_store.JobItem.parse(raw))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            key = str((raw.get("pk") or {}).get("S"))
            # Reported once (this pass fails: the errors alarm), then skipped; it expires.
            if token_store.quarantine(dynamodb, key, QUARANTINE_SECONDS):
                malformed.append(f"{key[:200]}: malformed item: {type(error).__name__}: {error}")
                print(json.dumps({"level": "ERROR", "malformed_item": key[:200]}), file=sys.stderr)
    kinds, failed = _one_by_one(
        parsed, lambda item: _reconcile_one(dynamodb, item, now), lambda item: item.name
    )
    failed = malformed + failed
    done = {"settled": 0, "stopped": 0, "cancelled": 0, "forgotten": 0, "running": 0}
    for kind in filter(None, kinds):
        done[kind] += 1
    if failed:
        raise ReconcileIncomplete(f"{done}; not reconciled ({len(failed)}): {failed[:10]}")
    return done


def _reconcile_one(dynamodb: Any, item: token_store.JobItem, now: float) -> str:
    """Converge one unsettled job; what was done ("" for nothing)."""
    sagemaker = control.client(item.role_arn, "sagemaker")
    stepfunctions = control.client(item.role_arn, "stepfunctions")
    job = _describe(sagemaker, item.name)
    if job is None:
        if now - item.created_at > CREATION_GRACE_SECONDS:
            token_store.forget_job(dynamodb, item)  # the job was never created
            return "forgotten"
        return ""
    ended = job.get("TrainingJobStatus") in outcome.TERMINAL
    orphaned = not ended and outcome.run_has_ended(
        outcome.describe_execution(stepfunctions, item.execution_arn), item
    )
    # A task that no longer waits (cancelled with its Parallel branch or Map iteration, or
    # timed out under a Catch) while its execution runs on: nobody will read this job.
    # Unless the attempt's call to the submit Lambda failed, and its retry is still coming to
    # take the job over (the token closed with the attempt, not with the task).
    cancelled = (
        not ended
        and not orphaned
        and not outcome.heartbeat(stepfunctions, item.task_token)
        and not task_history.retry_pending(stepfunctions, item.execution_arn, item.task_token, now)
    )
    if (ended or orphaned or cancelled) and not outcome.is_own_job(sagemaker, item, job):
        token_store.forget_job(dynamodb, item)  # someone else's job of this name
        return "forgotten"
    if ended:
        outcome.settle(dynamodb, stepfunctions, item, job)
        return "settled"
    if orphaned or cancelled:
        if cancelled:
            _release(dynamodb, item)
        if job.get("TrainingJobStatus") == "InProgress":
            _stop(sagemaker, item.name)
            return "cancelled" if cancelled else "stopped"
        return ""
    return "running"


def _release(dynamodb: Any, item: token_store.JobItem) -> None:
    """The slot no longer names a cancelled task's job: a retry of its task starts a fresh
    attempt instead of taking over a job that is being stopped."""
    slot = token_store.get_slot(dynamodb, item.slot)
    if slot is None or slot.job != item.name:
        return
    released = dataclasses.replace(slot, job=None, reported=False, completed=False)
    token_store.put_slot(dynamodb, released, outcome.SLOT_TTL_SECONDS, only_if_job=item.name)


def replay_dead_letters(dynamodb: Any, max_messages: int = 1000) -> dict[str, int]:
    """Process the dead-lettered events again; each is deleted once it went through."""
    sqs = boto3.client("sqs", region_name=environment.region())
    queue = environment.required("DEAD_LETTER_QUEUE")
    done = {"replayed": 0, "failed": 0}
    while done["replayed"] + done["failed"] < max_messages:
        messages = sqs.receive_message(
            QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=60
        ).get("Messages", [])
        if not messages:
            break
        for message in messages:
            try:
                dispatch(json.loads(message["Body"]), dynamodb)
            except Exception:  # left in the queue, visible again after its timeout
                done["failed"] += 1
                continue
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
            done["replayed"] += 1
    return done


def dispatch(event: dict[str, Any], dynamodb: Any) -> Any:
    # A direct invoke or a replayed message may hold anything: what is not an event is ignored
    # (an error would be retried, dead-lettered, and fail again at every replay).
    if not isinstance(event, dict):
        return "ignored: not an event"
    detail = event.get("detail") or {}
    if not isinstance(detail, dict):
        return "ignored: detail"
    if event.get("source") == lifecycle.JOB_EVENT_SOURCE:
        return on_training_job_change(detail, dynamodb)
    if event.get("source") == lifecycle.EXECUTION_EVENT_SOURCE:
        return on_execution_end(detail, dynamodb)
    action = event.get("action")
    if action == "reconcile":
        return reconcile(dynamodb)
    if action == "replay-dead-letters":
        return replay_dead_letters(dynamodb)
    return "ignored: source"


def handler(event: dict[str, Any], context: Any = None) -> Any:
    return dispatch(event, boto3.client("dynamodb", region_name=environment.region()))


__all__ = [
    "ReconcileIncomplete",
    "StopIncomplete",
    "dispatch",
    "handler",
    "on_execution_end",
    "on_training_job_change",
    "reconcile",
    "replay_dead_letters",
]
