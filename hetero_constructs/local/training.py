"""Training jobs as SageMaker runs them, in moto: created InProgress, ended when the run says.

moto marks a job Completed the moment it is created, accepts a name twice and has no
StopTrainingJob. Here a job stays ``InProgress`` until the local cloud ends it with the next
scripted ``Outcome`` (one per CreateTrainingJob attempt, in creation order; ``Completed`` once the
script runs out), its name is unique (``ResourceInUse``), StopTrainingJob moves it to
``Stopping`` (it then ends ``Stopped``), DescribeTrainingJob answers with every field of the
request as submitted, and each status change is an EventBridge "SageMaker Training Job State
Change" event as the service sends it.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hetero_constructs.local.patching import Patches
from hetero_constructs.local.simulation import (
    LogWriter,
    Stage,
    as_utc,
    host_lines,
    hosts,
    stages,
)
from hetero_constructs.local.telemetry import JobTelemetry

#: The outcomes a run can script, one per CreateTrainingJob attempt.
OUTCOME_STATUSES = ("Completed", "Failed", "Stopped", "ResourceLimitExceeded")
DEFAULT_FAILURE_REASON = "AlgorithmError: training script exited with code 1"
JOB_EVENT_SOURCE = "aws.sagemaker"
JOB_EVENT_TYPE = "SageMaker Training Job State Change"
#: Job statuses after which nothing changes any more.
TERMINAL_JOB_STATUSES = ("Completed", "Failed", "Stopped")

#: Receives each event the simulated service emits.
EventSink = Callable[[dict[str, Any]], None]


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
    planned: Outcome = field(default_factory=lambda: Outcome("Completed"))
    created: datetime | None = None
    length: timedelta = field(default_factory=timedelta)
    stages_applied: int = 1  # Starting, at creation
    trained_from: datetime | None = None  # when its instances started (Downloading)
    #: The last value of each metric once the job ended (DescribeTrainingJob's list).
    final_metrics: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The command line's ``jobs[]`` entry."""
        return {
            "name": self.name,
            "status": self.status,
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


class TrainingJobs:
    """The simulated training-job lifecycle (install once, inside moto)."""

    def __init__(self, emit: EventSink, account: str, region: str) -> None:
        self.attempts: list[TrainingJobAttempt] = []
        self.requests: list[dict[str, Any]] = []  # every CreateTrainingJob call, as submitted
        self.stopped_jobs: list[str] = []  # StopTrainingJob calls that stopped a running job
        self.failure_reason = DEFAULT_FAILURE_REASON
        #: Each job's length in wall-clock time; zero: it ends once the run's code is idle.
        self.job_duration = timedelta(0)
        self._logs = LogWriter(account, region)
        self._emit = emit
        self._account = account
        self._region = region
        self._outcomes: deque[Outcome] = deque()
        self._backend: Any = None
        self._lock = threading.RLock()
        #: Writes the hosts' metric lines and the job's metrics (set by the local cloud).
        self.telemetry: JobTelemetry | None = None

    # -- scripting ------------------------------------------------------------------------

    def script(
        self,
        outcomes: Iterable[str | Outcome] = (),
        *,
        failure_reason: str | None = None,
        job_duration: timedelta | None = None,
    ) -> None:
        """How the next attempts end, in creation order (then ``Completed``)."""
        with self._lock:
            self._outcomes = deque(Outcome.parse(outcome) for outcome in outcomes)
            if failure_reason is not None:
                self.failure_reason = failure_reason
            if job_duration is not None:
                self.job_duration = job_duration

    def running(self) -> list[str]:
        """Jobs that are InProgress or Stopping: the ones the run loop ends."""
        with self._lock:
            return [a.name for a in self.attempts if a.status in ("InProgress", "Stopping")]

    def due(self, name: str, now: datetime | None = None) -> bool:
        """Whether a running job has run its length (a stopping one always has)."""
        with self._lock:
            attempt = self.attempt(name)
            if attempt.status == "Stopping" or attempt.created is None:
                return True
            return (now or datetime.now(UTC)) >= as_utc(attempt.created) + attempt.length

    def tick(self, now: datetime | None = None) -> None:
        """Move each running job through the stages whose time has come (logs included)."""
        now = now or datetime.now(UTC)
        with self._lock:
            for attempt in self.attempts:
                if attempt.status != "InProgress" or attempt.created is None:
                    continue
                planned = self._stages(attempt, attempt.length)[:-1]  # the end is end()'s
                for stage in planned[attempt.stages_applied :]:
                    if as_utc(stage.at) > now:
                        break
                    self._enter(attempt, stage)

    def _stages(self, attempt: TrainingJobAttempt, length: timedelta) -> list[Stage]:
        assert attempt.created is not None
        outcome = attempt.planned
        reason = outcome.detail or self.failure_reason if outcome.status == "Failed" else None
        secondary = outcome.status if outcome.status != "Stopped" else outcome.detail or "Stopped"
        return stages(attempt.created, length, outcome.status, secondary, reason)

    def _enter(self, attempt: TrainingJobAttempt, stage: Stage, reason: str | None = None) -> None:
        """The job enters ``stage``: its transition, and what its hosts log."""
        job = self._backend.training_jobs[attempt.name]
        transitions = job.secondary_status_transitions
        if transitions:
            transitions[-1]["EndTime"] = stage.at
        transitions.append(
            {"Status": stage.status, "StartTime": stage.at, "StatusMessage": stage.message}
        )
        job.secondary_status = attempt.secondary_status = stage.status
        attempt.stages_applied += 1
        if stage.status == "Downloading":
            attempt.trained_from = job.training_start_time = stage.at
        if attempt.trained_from is None:
            return  # no instance is running: nothing is logged
        assert attempt.created is not None
        epoch = int(as_utc(attempt.created).timestamp())
        for host, group in hosts(attempt.request):
            lines = host_lines(stage.status, group, host, reason)
            self._logs.write(f"{attempt.name}/{host}-{epoch}", stage.at, lines)

    def attempt(self, name: str) -> TrainingJobAttempt:
        with self._lock:
            return next(a for a in reversed(self.attempts) if a.name == name)

    # -- the service side -------------------------------------------------------------------

    def install(self, patches: Patches) -> None:
        from moto.core.responses import ActionResult
        from moto.sagemaker import exceptions
        from moto.sagemaker.models import SageMakerModelBackend
        from moto.sagemaker.responses import SageMakerResponse

        create = SageMakerResponse.create_training_job
        describe = SageMakerModelBackend.describe_training_job
        jobs = self

        class ResourceLimitExceeded(exceptions.SagemakerClientError):
            code = "ResourceLimitExceeded"

        def create_training_job(response: Any) -> Any:
            request = json.loads(response.body)
            name = str(request.get("TrainingJobName"))
            backend = response.sagemaker_backend
            with jobs._lock:
                jobs._backend = backend
                jobs.requests.append(request)
                if name in backend.training_jobs:
                    arn = backend.training_jobs[name].arn
                    raise exceptions.ResourceInUseException(
                        message=f"Training job names must be unique within an AWS account and "
                        f"region, and a training job with this name already exists ({arn})"
                    )
                planned = jobs._outcomes.popleft() if jobs._outcomes else Outcome("Completed")
                attempt = TrainingJobAttempt(
                    name, "InProgress", instance_types(request), request, planned=planned
                )
                jobs.attempts.append(attempt)
                if planned.status == "ResourceLimitExceeded":
                    attempt.status = "ResourceLimitExceeded"
                    raise ResourceLimitExceeded(_quota_message(request))
                result = create(response)
                job = backend.training_jobs[name]
                job.training_job_status = attempt.status = "InProgress"
                job.secondary_status = attempt.secondary_status = "Starting"
                job.training_start_time = job.training_end_time = None
                job.secondary_status_transitions = [
                    {
                        "Status": "Starting",
                        "StartTime": job.creation_time,
                        "StatusMessage": "Launching requested ML instances",
                    }
                ]
                attempt.created = job.creation_time
                attempt.length = jobs.job_duration
                jobs._logs.ensure_group()
            jobs._emit(jobs.state_change_event(name))
            return result

        def describe_training_job(backend: Any, training_job_name: str) -> dict[str, Any]:
            described = dict(describe(backend, training_job_name))
            with jobs._lock:
                attempt = next(
                    (a for a in reversed(jobs.attempts) if a.name == training_job_name), None
                )
            if attempt is None:
                return described
            # Every member of the request as submitted (moto keeps only some, and alters some).
            described.update({k: v for k, v in attempt.request.items() if k != "Tags"})
            if attempt.status not in ("Completed", "Stopped"):
                described.pop("ModelArtifacts", None)
            if attempt.final_metrics:
                described["FinalMetricDataList"] = copy.deepcopy(attempt.final_metrics)
            return described

        def stop_training_job(response: Any) -> Any:
            name = response._get_param("TrainingJobName")
            backend = response.sagemaker_backend
            with jobs._lock:
                if name not in backend.training_jobs:
                    raise exceptions.ValidationError(
                        message=f"Requested resource not found: {name}"
                    )
                job = backend.training_jobs[name]
                attempt = jobs.attempt(name)
                if attempt.status != "InProgress":
                    raise exceptions.ValidationError(
                        message=f"The request was rejected because the training job is in "
                        f"status {attempt.status}."
                    )
                job.training_job_status = attempt.status = "Stopping"
                job.last_modified_time = datetime.now(UTC)
                jobs._enter(attempt, Stage("Stopping", "Stopping the training job", _now(job)))
                jobs.stopped_jobs.append(name)
            jobs._emit(jobs.state_change_event(name))
            return ActionResult({})

        patches.replace(SageMakerResponse, "create_training_job", create_training_job)
        patches.replace(SageMakerResponse, "stop_training_job", stop_training_job)
        patches.replace(SageMakerModelBackend, "describe_training_job", describe_training_job)

    # -- ending a job --------------------------------------------------------------------

    def end(self, name: str, outcome: str | Outcome | None = None) -> TrainingJobAttempt:
        """End a running job now: as stopped if it is Stopping, else with ``outcome`` (or its
        plan). Stages not yet entered are laid out over the time the job actually took."""
        with self._lock:
            attempt = self.attempt(name)
            if attempt.status not in ("InProgress", "Stopping"):
                raise ValueError(f"training job {name} has already ended ({attempt.status})")
            job = self._backend.training_jobs[name]
            end = _now(job)
            if attempt.status == "Stopping":
                attempt.planned = Outcome("Stopped")
                remaining = [Stage("Stopped", "Training job stopped", end)]
            else:
                if outcome is not None:
                    attempt.planned = Outcome.parse(outcome)
                assert attempt.created is not None
                remaining = self._stages(attempt, end - attempt.created)[attempt.stages_applied :]
            planned = attempt.planned
            if planned.status == "Failed":
                attempt.failure_reason = planned.detail or self.failure_reason
            for stage in remaining:
                self._enter(attempt, stage, attempt.failure_reason)
            attempt.status = job.training_job_status = planned.status
            job.secondary_status_transitions[-1]["EndTime"] = end
            if attempt.failure_reason:
                job.failure_reason = attempt.failure_reason
            job.training_end_time = job.last_modified_time = end
            # Wall-clock time from the instances' start, as the service reports it (the bill is
            # this times the instances); zero for a job whose instances never started.
            start = attempt.trained_from
            seconds = int((end - start).total_seconds()) if start is not None else 0
            job.training_time_in_seconds = job.billable_time_in_seconds = seconds
            if start is None:
                job.training_start_time = None
            elif self.telemetry is not None and attempt.created is not None:
                epoch = int(as_utc(attempt.created).timestamp())
                attempt.final_metrics = self.telemetry.ended(
                    name, attempt.request, as_utc(start), as_utc(end), epoch
                )
        self._emit(self.state_change_event(name))
        return attempt

    def state_change_event(self, name: str) -> dict[str, Any]:
        """The "SageMaker Training Job State Change" event for the job as it is now."""
        with self._lock:
            described = describe_plain(self._backend, name)
            tags = self._backend.training_jobs[name].tags or []
        detail = {key: value for key, value in described.items() if key != "Tags"}
        detail["Tags"] = {tag["Key"]: tag["Value"] for tag in tags}
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": JOB_EVENT_TYPE,
            "source": JOB_EVENT_SOURCE,
            "account": self._account,
            "time": _event_time(),
            "region": self._region,
            "resources": [described["TrainingJobArn"]],
            "detail": detail,
        }


def describe_plain(backend: Any, name: str) -> dict[str, Any]:
    """DescribeTrainingJob as the service's events carry it: times in epoch milliseconds."""
    return dict(epoch_millis(copy.deepcopy(backend.describe_training_job(name))))


def _instance_count(request: dict[str, Any]) -> int:
    resources = request.get("ResourceConfig") or {}
    groups = resources.get("InstanceGroups")
    if groups:
        return sum(int(group.get("InstanceCount", 1)) for group in groups)
    return int(resources.get("InstanceCount", 1))


def _quota_message(request: dict[str, Any]) -> str:
    kind = (instance_types(request) or ["ml.m5.large"])[0]
    count = _instance_count(request)
    return (
        f"The account-level service limit '{kind} for training job usage' is 0 Instances, with "
        f"current utilization of 0 Instances and a request delta of {count} Instances. Please "
        "use AWS Service Quotas to request an increase for this quota."
    )


def _now(job: Any) -> datetime:
    """Now, in the time zone of the job's own times (moto's may be naive), never before any."""
    now = datetime.now(UTC)
    if job.creation_time.tzinfo is None:
        now = now.replace(tzinfo=None)
    last: datetime = job.secondary_status_transitions[-1]["StartTime"]
    return max(now, last)


def _event_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = [
    "DEFAULT_FAILURE_REASON",
    "JOB_EVENT_SOURCE",
    "JOB_EVENT_TYPE",
    "OUTCOME_STATUSES",
    "TERMINAL_JOB_STATUSES",
    "EventSink",
    "Outcome",
    "TrainingJobAttempt",
    "TrainingJobs",
    "describe_plain",
    "epoch_millis",
    "instance_types",
]
