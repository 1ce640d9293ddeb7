"""Redriving a training run: an execution that ended unsuccessfully goes on where it ended."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hetero_constructs.runs.clients import RunClients
from hetero_constructs.runs.execution import execution_history


@dataclass(frozen=True)
class RedriveOutcome:
    """What ``redrive_run`` did: when, and how often the execution has been redriven now."""

    execution_arn: str
    redrive_date: datetime
    redrive_count: int
    status: str


class RedriveWouldFail(Exception):
    """The run failed in a ``Fail`` state (reached after a caught error, or by a ``Choice``): a
    redrive re-enters that state and fails again at once. The message says what to run
    instead; ``redrive_run(..., force=True)`` redrives it all the same."""


#: The longest execution input shown in the command to run instead.
_SHOWN_INPUT = 300


def redrive_dead_end(stepfunctions: Any, execution_arn: str) -> str | None:
    """Why redriving the run would fail again at once (None when it would not): it ended
    FAILED in a ``Fail`` state, which a redrive re-enters."""
    described = stepfunctions.describe_execution(executionArn=execution_arn)
    if described.get("status") != "FAILED":
        return None
    events = execution_history(stepfunctions, execution_arn)
    entered = [e for e in events if str(e.get("type", "")).endswith("StateEntered")]
    if not entered or entered[-1].get("type") != "FailStateEntered":
        return None
    state = (entered[-1].get("stateEnteredEventDetails") or {}).get("name", "?")
    machine = str(described.get("stateMachineArn", "")).rsplit(":", 1)[-1]
    text = str(described.get("input") or "{}")
    given = (
        f" --input '{text}'"
        if len(text) <= _SHOWN_INPUT and "'" not in text
        else (" --input @input.json (the run's input: hetero-train status RUN --json)")
    )
    return (
        f"{described.get('name')} failed in its Fail state {state!r}: a redrive re-enters that "
        f"state and fails again at once ({described.get('error') or 'its error'}). Fix: start "
        f"a new run instead: hetero-train run {machine}{given} (or redrive it anyway: --force)"
    )


def redrive_run(clients: RunClients, execution_arn: str, *, force: bool = False) -> RedriveOutcome:
    """RedriveExecution: a run that ended FAILED, ABORTED or TIMED_OUT goes on from the state
    it did not get through, under the same ARN. A training task entered again starts a fresh
    attempt: a new job name, never the failed job. Step Functions refuses a run that is running
    or succeeded (``ExecutionNotRedrivable``, raised as the client's ``ClientError``). A run
    that failed in a ``Fail`` state would fail again at once: ``RedriveWouldFail`` says what to
    run instead, unless ``force``."""
    stepfunctions = clients.stepfunctions
    if not force:
        dead_end = redrive_dead_end(stepfunctions, execution_arn)
        if dead_end is not None:
            raise RedriveWouldFail(dead_end)
    redriven = stepfunctions.redrive_execution(executionArn=execution_arn)
    described = stepfunctions.describe_execution(executionArn=execution_arn)
    return RedriveOutcome(
        execution_arn,
        redriven["redriveDate"],
        int(described.get("redriveCount") or 0),
        str(described["status"]),
    )


__all__ = ["RedriveOutcome", "RedriveWouldFail", "redrive_dead_end", "redrive_run"]
