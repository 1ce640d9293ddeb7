"""How a simulated training job spends its time: its secondary statuses and its hosts' logs.

A job's life is laid out over its length (``--job-duration``; zero: it ends as soon as the run's
code is idle, its stages compressed into the time it actually took), in wall-clock time, so every
timestamp a display shows is in order with the execution's own. As the service does:

- a capacity failure (a ``CapacityError`` reason, a spot job's ``MaxWaitTimeExceeded``) never
  leaves ``Starting``: no instance ever ran, nothing is billed, no host logs;
- a job that runs goes ``Starting``, ``Downloading``, ``Training`` (and ``Uploading`` when it
  completes), billed from ``Downloading`` to its end (wall-clock seconds; the bill is this times
  the instance count);
- each host writes its stream ``{job}/algo-{N}-{epoch}`` of ``/aws/sagemaker/TrainingJobs``,
  first the line the training toolkit prints with its instance group
  (``SM_CURRENT_INSTANCE_GROUP=...``), so displays can label it.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

TRAINING_LOG_GROUP = "/aws/sagemaker/TrainingJobs"

#: (secondary status, status message, fraction of the job's length at which it starts)
_RUNNING_STAGES = (
    ("Starting", "Launching requested ML instances", 0.0),
    ("Downloading", "Downloading input data", 0.1),
    ("Training", "Training image download completed. Training in progress.", 0.2),
)
_UPLOADING = ("Uploading", "Uploading generated training model", 0.9)


def as_utc(moment: datetime) -> datetime:
    """moto keeps naive UTC times: aware ones, for epoch seconds and comparisons."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def is_capacity_failure(status: str, secondary: str, reason: str | None) -> bool:
    """A job that ended for want of instances (a capacity error, a spot job's wait run out):
    it never left ``Starting``."""
    if status == "Stopped":
        return secondary == "MaxWaitTimeExceeded"
    return status == "Failed" and (reason or "").startswith("CapacityError")


@dataclass(frozen=True)
class Stage:
    status: str
    message: str
    at: datetime


def stages(
    created: datetime, length: timedelta, status: str, secondary: str, reason: str | None
) -> list[Stage]:
    """The job's secondary statuses from ``created`` to its end after ``length``."""
    if is_capacity_failure(status, secondary, reason):
        return [
            Stage(
                "Starting", "Insufficient capacity to launch the requested ML instances", created
            ),
            Stage(secondary, reason or "", created + length),
        ]
    planned = [*_RUNNING_STAGES, *([_UPLOADING] if status == "Completed" else [])]
    if status == "Stopped":
        planned.append(("Stopping", "Stopping the training job", 0.95))
    result = [
        Stage(name, message, created + length * fraction) for name, message, fraction in planned
    ]
    final = {
        "Completed": "Training job completed",
        "Failed": reason or "Training job failed",
        "Stopped": "Training job stopped",
    }.get(status, "")
    result.append(Stage(secondary, final, created + length))
    return result


def hosts(request: dict[str, Any]) -> list[tuple[str, str | None]]:
    """``(algo-N, instance group)`` of each host the request asks for."""
    resources = request.get("ResourceConfig") or {}
    groups = resources.get("InstanceGroups")
    if groups:
        named = [
            str(group.get("InstanceGroupName"))
            for group in groups
            for _ in range(int(group.get("InstanceCount", 1)))
        ]
    else:
        named = [None] * int(resources.get("InstanceCount", 1))  # type: ignore[list-item]
    return [(f"algo-{number}", group) for number, group in enumerate(named, 1)]


def host_lines(stage: str, group: str | None, host: str, reason: str | None) -> list[str]:
    """What a host logs when its job enters ``stage``."""
    if stage == "Downloading":
        return [f"SM_CURRENT_INSTANCE_GROUP={group or 'homogeneousCluster'}"]
    if stage == "Training":
        return [f"{host}: training started (local simulation)"]
    if stage == "Uploading":
        return [f"{host}: training finished, saving the model"]
    if stage == "Failed":
        return [f"{host}: {reason or 'the training script failed'}"]
    if stage in ("Stopping", "Stopped"):
        return [f"{host}: received SIGTERM, stopping"]
    return []


class LogWriter:
    """Writes host lines into moto's CloudWatch Logs backend directly (no client: this runs
    inside moto's own request handling)."""

    def __init__(self, account: str, region: str) -> None:
        self.account = account
        self.region = region
        # Real jobs' hosts write from a thread each: one write at a time into moto.
        self._lock = threading.Lock()

    def _backend(self) -> Any:
        from moto.logs.models import logs_backends

        backend = logs_backends[self.account][self.region]
        if TRAINING_LOG_GROUP not in backend.groups:
            backend.create_log_group(TRAINING_LOG_GROUP, {})
        return backend

    def ensure_group(self) -> None:
        """The training log group, as SageMaker creates it for an account's first job."""
        self._backend()

    def write(self, stream: str, moment: datetime, messages: list[str]) -> None:
        if not messages:
            return
        from moto.logs.exceptions import ResourceAlreadyExistsException

        millis = int(as_utc(moment).timestamp() * 1000)
        events = [{"timestamp": millis, "message": message} for message in messages]
        with self._lock:
            backend = self._backend()
            with contextlib.suppress(ResourceAlreadyExistsException):
                backend.create_log_stream(TRAINING_LOG_GROUP, stream)
            backend.put_log_events(TRAINING_LOG_GROUP, stream, events)


__all__ = [
    "TRAINING_LOG_GROUP",
    "LogWriter",
    "Stage",
    "as_utc",
    "host_lines",
    "hosts",
    "is_capacity_failure",
    "stages",
]
