"""How one attempt of a training task ended, as its execution's history records it.

A success sent to a task can be accepted while Step Functions' call to the submit Lambda is
still in flight (the job ended in the meantime). If that call then fails
(``Lambda.ServiceException`` after the handler ran), which answer the service keeps is not
documented: the callback may close the task (``TaskSucceeded``), or the call's failure may win
(``TaskFailed``: the task's retrier runs, the accepted success is discarded; the local engine
does this). Only the history tells which, so a retry that meets a lane whose success was heard
asks it: a success its task did not keep is heard again by the retry, never trained again.
"""

from __future__ import annotations

import json
from typing import Any

#: The events that close one attempt of a task, and whether it kept a success.
TASK_ENDS = {
    "TaskSucceeded": True,
    "TaskFailed": False,
    "TaskTimedOut": False,
    "TaskStartFailed": False,
    "TaskSubmitFailed": False,
}
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
    events: dict[int, dict[str, Any]] = {}
    scheduled: int | None = None
    pages = stepfunctions.get_paginator("get_execution_history").paginate(
        executionArn=execution_arn, includeExecutionData=True
    )
    for page in pages:
        for event in page.get("events", []):
            events[int(event["id"])] = event
            found = scheduled is None and event.get("type") == "TaskScheduled"
            if found and _token_of(event) == task_token:
                scheduled = int(event["id"])
    if scheduled is None:
        return None
    for event in events.values():
        kept = TASK_ENDS.get(str(event.get("type")))
        if kept is not None and _scheduled_by(events, event) == scheduled:
            return kept
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


__all__ = ["TASK_ENDS", "kept_success"]
