"""One training-job attempt of a local run, and the outcomes a drill can script for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

#: The outcomes a run can script, one per CreateTrainingJob attempt.
OUTCOME_STATUSES = ("Completed", "Failed", "Stopped", "ResourceLimitExceeded")
DEFAULT_FAILURE_REASON = "AlgorithmError: training script exited with code 1"


@dataclass(frozen=True)
class Outcome:
    """How one training-job attempt ends.

    ``Completed``; ``Failed`` with its ``FailureReason`` (``detail``); ``Stopped`` with its
    ``SecondaryStatus`` (``detail``, default ``Stopped``); ``ResourceLimitExceeded``: the
    CreateTrainingJob call itself is refused with that error and no job exists.
    """

    status: str
    detail: str | None = None

    @classmethod
    def parse(cls, text: str | Outcome) -> Outcome:
        """``STATUS[:DETAIL]``, e.g. ``Failed:CapacityError: Unable to provision ...``."""
        if isinstance(text, Outcome):
            return text
        status, _, detail = text.partition(":")
        status, detail = status.strip(), detail.strip()
        if status not in OUTCOME_STATUSES:
            raise ValueError(
                f"outcome {text!r}: the status must be one of {', '.join(OUTCOME_STATUSES)} "
                "(optionally Failed:REASON or Stopped:SECONDARY_STATUS), e.g. "
                "'Failed:CapacityError: Unable to provision requested ML compute capacity.'"
            )
        if detail and status in ("Completed", "ResourceLimitExceeded"):
            raise ValueError(
                f"outcome {text!r}: {status} takes no detail; only Failed:REASON and "
                "Stopped:SECONDARY_STATUS do"
            )
        return cls(status, detail or None)


@dataclass
class TrainingJobAttempt:
    """One CreateTrainingJob attempt of a run: the request as submitted and how it ended."""

    name: str
    status: str
    instance_types: list[str]
    request: dict[str, Any]
    secondary_status: str | None = None
    failure_reason: str | None = None
    #: How it was scripted to end (a drill: no code runs); None: its hosts run for real.
    planned: Outcome | None = None
    created: datetime | None = None
    length: timedelta = field(default_factory=timedelta)
    stages_applied: int = 1  # Starting, at creation
    trained_from: datetime | None = None  # when its instances started (Downloading)
    #: The last value of each metric once the job ended (DescribeTrainingJob's list).
    final_metrics: list[dict[str, Any]] = field(default_factory=list)

    @property
    def simulated(self) -> bool:
        """Whether its end was scripted (a drill) rather than what its hosts did."""
        return self.planned is not None

    def to_json(self) -> dict[str, Any]:
        """The command line's ``jobs[]`` entry."""
        return {
            "name": self.name,
            "status": self.status,
            "simulated": self.simulated,
            "instance_types": self.instance_types,
            "request": self.request,
        }


def instance_types(request: dict[str, Any]) -> list[str]:
    """The instance types a request asks for, one per instance group (or the single type)."""
    resources = request.get("ResourceConfig") or {}
    groups = resources.get("InstanceGroups")
    if groups:
        return [str(group.get("InstanceType")) for group in groups]
    return [str(resources["InstanceType"])] if resources.get("InstanceType") else []


def epoch_millis(value: Any) -> Any:
    """Datetimes anywhere in ``value`` as epoch milliseconds (EventBridge's SageMaker events)."""
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, dict):
        return {key: epoch_millis(item) for key, item in value.items()}
    if isinstance(value, list):
        return [epoch_millis(item) for item in value]
    return value


def _instance_count(request: dict[str, Any]) -> int:
    resources = request.get("ResourceConfig") or {}
    groups = resources.get("InstanceGroups")
    if groups:
        return sum(int(group.get("InstanceCount", 1)) for group in groups)
    return int(resources.get("InstanceCount", 1))


def quota_message(request: dict[str, Any]) -> str:
    kind = (instance_types(request) or ["ml.m5.large"])[0]
    count = _instance_count(request)
    return (
        f"The account-level service limit '{kind} for training job usage' is 0 Instances, with "
        f"current utilization of 0 Instances and a request delta of {count} Instances. Please "
        "use AWS Service Quotas to request an increase for this quota."
    )


__all__ = [
    "DEFAULT_FAILURE_REASON",
    "OUTCOME_STATUSES",
    "Outcome",
    "TrainingJobAttempt",
    "epoch_millis",
    "instance_types",
    "quota_message",
]
