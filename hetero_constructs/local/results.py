"""What a local run gives back: its result, and the clients a follow display reads it with."""

from __future__ import annotations

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
]
