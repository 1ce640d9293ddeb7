"""How one attempt of a training task ended, as its execution's history records it.

A success sent to a task can be accepted while Step Functions' call to the submit Lambda is
still in flight (the job ended in the meantime). If that call then fails
(``Lambda.ServiceException`` after the handler ran), which answer the service keeps is not
documented: the callback may close the task (``TaskSucceeded``), or the call's failure may win
(``TaskFailed``: the task's retrier runs, the accepted success is discarded; the local engine
does this). Only the history tells which, so a retry that meets a lane whose success was heard
asks it: a success its task did not keep is heard again by the retry, never trained again.

The same history tells the reconciler (and another task's submit) that a job's closed token
belongs to an attempt whose call failed, whose retry is coming to take the job over: the job is
not a cancelled task's, and is not stopped in that window (``retry_pending``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hetero_constructs.contract import lifecycle

#: The events that close one attempt of a task, and whether it kept a success.
TASK_ENDS = {
    "TaskSucceeded": True,
    "TaskFailed": False,
    "TaskTimedOut": False,
    "TaskStartFailed": False,
    "TaskSubmitFailed": False,
}
#: The errors the training task's own retrier retries (``constructs.retries``).
RETRIED_ERRORS = frozenset((*lifecycle.LAMBDA_INVOKE_ERRORS, lifecycle.Errors.THROTTLED))
# TaskScheduled, TaskStarted, TaskSubmitted, then the end: a few links back at most.
_MAX_LINKS = 8


def _token_of(scheduled: dict[str, Any]) -> str | None:
    """The task token the submit Lambda was given in a ``TaskScheduled`` event."""
    text = (scheduled.get("taskScheduledEventDetails") or {}).get("parameters") or ""
    try:
        payload = json.loads(text).get("Payload") or {}
        token = (payload.get("context") or {}).get("taskToken")
    except (ValueError, AttributeError):
        return None
    return token if isinstance(token, str) else None


def kept_success(stepfunctions: Any, execution_arn: str, task_token: str) -> bool | None:
    """Whether the task attempt given ``task_token`` ended keeping a success: True
    (``TaskSucceeded``), False (it failed or timed out: a success sent to it was discarded),
    None (not ended, or not found: its Map iteration or Parallel branch was cancelled, or the
    execution ended with it)."""
    end = attempt_end(stepfunctions, execution_arn, task_token)
    return None if end is None else TASK_ENDS[str(end["type"])]


def retry_pending(stepfunctions: Any, execution_arn: str, task_token: str, now: float) -> bool:
    """Whether the task attempt given ``task_token`` failed because Step Functions' call to the
    submit Lambda failed (``Lambda.ServiceException`` and the like, ``HeteroTraining.Throttled``)
    less than ``RETRY_TAKEOVER_SECONDS`` before ``now``: the task's retry is coming and takes the
    attempt's job over, so its closed token does not make the job a cancelled task's."""
    end = attempt_end(stepfunctions, execution_arn, task_token)
    if end is None or end.get("type") != "TaskFailed":
        return False
    error = (end.get("taskFailedEventDetails") or {}).get("error")
    if error not in RETRIED_ERRORS:
        return False
    failed_at = end.get("timestamp")
    if not isinstance(failed_at, datetime):
        return False
    return bool(now - failed_at.timestamp() < lifecycle.RETRY_TAKEOVER_SECONDS)


def attempt_end(stepfunctions: Any, execution_arn: str, task_token: str) -> dict[str, Any] | None:
    """The history event that closed the task attempt given ``task_token`` (one of
    ``TASK_ENDS``), or None."""
    events, scheduled = _history(stepfunctions, execution_arn, task_token)
    if scheduled is None:
        return None
    for event in events.values():
        if event.get("type") in TASK_ENDS and _scheduled_by(events, event) == int(scheduled["id"]):
            return event
    return None


def _history(
    stepfunctions: Any, execution_arn: str, task_token: str
) -> tuple[dict[int, dict[str, Any]], dict[str, Any] | None]:
    """The execution's history events by id, and the ``TaskScheduled`` event of the task
    attempt given ``task_token`` (None when the history has none)."""
    events: dict[int, dict[str, Any]] = {}
    scheduled: dict[str, Any] | None = None
    pages = stepfunctions.get_paginator("get_execution_history").paginate(
        executionArn=execution_arn, includeExecutionData=True
    )
    for page in pages:
        for event in page.get("events", []):
            events[int(event["id"])] = event
            found = scheduled is None and event.get("type") == "TaskScheduled"
            if found and _token_of(event) == task_token:
                scheduled = event
    return events, scheduled


def overrides_origin(
    stepfunctions: Any, execution_arn: str, task_token: str, overrides: Any
) -> str | None:
    """Where a task's overrides came from when an earlier state produced them: ``state
    'Prepare' output $.prepared`` (the state the task's entry followed, and the path of the
    overrides in its output); None when they are the execution's input, or are not found."""
    events, event = _history(stepfunctions, execution_arn, task_token)
    for _ in range(_MAX_LINKS):  # back to the task's entry, then the state before it
        if event is None:
            return None
        event = events.get(int(event.get("previousEventId") or 0))
        if event is not None and str(event.get("type", "")).endswith("StateExited"):
            break
    else:
        return None
    if event is None:
        return None
    details = event.get("stateExitedEventDetails") or {}
    try:
        output = json.loads(details.get("output") or "null")
    except ValueError:
        return None
    path = _path_of(output, overrides, "$")
    return f"state {details.get('name')!r} output {path}" if path else None


def _path_of(value: Any, wanted: Any, path: str, depth: int = 0) -> str | None:
    """The JSONPath of ``wanted`` inside ``value`` (the first match, breadth of a few levels)."""
    if value == wanted:
        return path
    if depth >= _MAX_LINKS:
        return None
    if isinstance(value, dict):
        for key, inner in value.items():
            found = _path_of(inner, wanted, f"{path}.{key}", depth + 1)
            if found:
                return found
    if isinstance(value, list):
        for index, inner in enumerate(value):
            found = _path_of(inner, wanted, f"{path}[{index}]", depth + 1)
            if found:
                return found
    return None


def _scheduled_by(events: dict[int, dict[str, Any]], event: dict[str, Any]) -> int | None:
    """The ``TaskScheduled`` event an attempt's event follows from (``previousEventId``)."""
    for _ in range(_MAX_LINKS):
        previous = events.get(int(event.get("previousEventId") or 0))
        if previous is None:
            return None
        if previous.get("type") == "TaskScheduled":
            return int(previous["id"])
        event = previous
    return None


__all__ = [
    "RETRIED_ERRORS",
    "TASK_ENDS",
    "attempt_end",
    "kept_success",
    "overrides_origin",
    "retry_pending",
]
