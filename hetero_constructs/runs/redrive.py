"""Redriving a training run: an execution that ended unsuccessfully goes on where it ended."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from hetero_constructs.runs.clients import RunClients


@dataclass(frozen=True)
class RedriveOutcome:
    """What ``redrive_run`` did: when, and how often the execution has been redriven now."""

    execution_arn: str
    redrive_date: datetime
    redrive_count: int
    status: str


def redrive_run(clients: RunClients, execution_arn: str) -> RedriveOutcome:
    """RedriveExecution: a run that ended FAILED, ABORTED or TIMED_OUT goes on from the state
    it did not get through, under the same ARN. A training task entered again starts a fresh
    attempt: a new job name, never the failed job. Step Functions refuses a run that is running
    or succeeded (``ExecutionNotRedrivable``, raised as the client's ``ClientError``)."""
    stepfunctions = clients.stepfunctions
    redriven = stepfunctions.redrive_execution(executionArn=execution_arn)
    described = stepfunctions.describe_execution(executionArn=execution_arn)
    return RedriveOutcome(
        execution_arn,
        redriven["redriveDate"],
        int(described.get("redriveCount") or 0),
        str(described["status"]),
    )


__all__ = ["RedriveOutcome", "redrive_run"]
