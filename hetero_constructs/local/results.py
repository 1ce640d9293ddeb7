"""What a local run gives back: its result, and the clients a follow display reads it with."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hetero_constructs.local.training import TrainingJobAttempt


@dataclass
class Clients:
    """boto3 clients bound to the local cloud, for a follow display."""

    stepfunctions: Any
    sagemaker: Any
    logs: Any


#: A follow display: called in its own thread with the clients and the execution ARN once the
#: execution has started; it should return when the execution has ended.
Follow = Callable[[Clients, str], None]


def start_follow(
    follow: Follow | None, client: Callable[[str], Any], execution_arn: str
) -> threading.Thread | None:
    """``follow`` in its own thread, with clients made by ``client`` (a service's name)."""
    if follow is None:
        return None
    clients = Clients(client("stepfunctions"), client("sagemaker"), client("logs"))
    thread = threading.Thread(target=follow, args=(clients, execution_arn), daemon=True)
    thread.start()
    return thread


def give_up(stepfunctions: Any, execution_arn: str, follower: threading.Thread | None) -> None:
    """A run past its timeout: its execution is stopped, so that a follow display sees its end
    (instead of polling on after the local cloud closes)."""
    stepfunctions.stop_execution(
        executionArn=execution_arn, error="LocalRun.Timeout", cause="the local run's timeout passed"
    )
    if follower is not None:
        follower.join(timeout=10)


@dataclass
class ExecutionResult:
    """What a local run did: the execution's end, its history, and the training jobs it made."""

    status: str
    output: Any
    error: str | None
    cause: str | None
    history: list[dict[str, Any]]
    training_jobs: list[dict[str, Any]]  # DescribeTrainingJob of each job the run created
    submitted_requests: list[dict[str, Any]] = field(default_factory=list)  # every call, as sent
    jobs: list[TrainingJobAttempt] = field(default_factory=list)  # one per attempt, in order
    execution_arn: str = ""

    @classmethod
    def of(
        cls,
        description: dict[str, Any],
        history: list[dict[str, Any]],
        sagemaker: Any,
        attempts: list[TrainingJobAttempt],
        requests: list[dict[str, Any]],
    ) -> ExecutionResult:
        """The result of an ended execution (DescribeExecution), with the attempts and
        requests its run made; each job it created is described now."""
        created = dict.fromkeys(a.name for a in attempts if a.status != "ResourceLimitExceeded")
        return cls(
            status=description["status"],
            output=json.loads(description["output"]) if description.get("output") else None,
            error=description.get("error"),
            cause=description.get("cause"),
            history=history,
            training_jobs=[sagemaker.describe_training_job(TrainingJobName=n) for n in created],
            submitted_requests=requests,
            jobs=attempts,
            execution_arn=str(description["executionArn"]),
        )

    def to_json(self) -> dict[str, Any]:
        """The command line's ``--json`` object."""
        return {
            "status": self.status,
            "output": self.output,
            "error": self.error,
            "cause": self.cause,
            "jobs": [job.to_json() for job in self.jobs],
        }


__all__ = [
    "Clients",
    "ExecutionResult",
    "Follow",
    "give_up",
    "start_follow",
]
