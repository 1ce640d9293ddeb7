"""Training jobs as SageMaker runs them, in moto: created InProgress, ended as they end.

moto marks a job Completed the moment it is created, accepts a name twice and has no
StopTrainingJob. Here a job stays ``InProgress`` until it ends: a real one (the default) as its
hosts end (``real_jobs``: the job's code runs on this machine), a drill with its scripted
``Outcome`` (one per CreateTrainingJob attempt, in creation order; then ``otherwise``), every
status message of a drill saying ``simulated``. Its name is unique (``ResourceInUse``),
StopTrainingJob moves it to ``Stopping`` (it then ends ``Stopped``), DescribeTrainingJob answers
with every field of the request as submitted, and each status change is an EventBridge
"SageMaker Training Job State Change" event as the service sends it.
"""

from __future__ import annotations

import copy
import json
import tempfile
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hetero_constructs.contract.metrics import SIMULATED_STATUS_PREFIX
from hetero_constructs.local.attempts import (
    DEFAULT_FAILURE_REASON,
    OUTCOME_STATUSES,
    Outcome,
    TrainingJobAttempt,
    epoch_millis,
    instance_types,
    quota_message,
)
from hetero_constructs.local.hosts.data import MotoStorage, empty_channel
from hetero_constructs.local.patching import Patches
from hetero_constructs.local.real_jobs import RealJobs
from hetero_constructs.local.simulation import (
    LogWriter,
    Stage,
    as_utc,
    host_lines,
    hosts,
    stages,
)

JOB_EVENT_SOURCE = "aws.sagemaker"
JOB_EVENT_TYPE = "SageMaker Training Job State Change"
#: Job statuses after which nothing changes any more.
TERMINAL_JOB_STATUSES = ("Completed", "Failed", "Stopped")

#: Receives each event the simulated service emits.
EventSink = Callable[[dict[str, Any]], None]


class OnDemandJob(ValueError):
    """A spot reclaim asked of a job on on-demand instances, which SageMaker never reclaims."""


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
        #: How attempts beyond the scripted ones end: None, they run for real (the default);
        #: an outcome, they are drills that end so.
        self.otherwise: Outcome | None = None
        #: Where real jobs' hosts get their folders (set by the local cloud).
        self.scratch: Path | None = None
        self.real = RealJobs(self._logs, self._scratch)
        self._interrupted: set[str] = set()

    def _scratch(self) -> Path:
        if self.scratch is None:
            self.scratch = Path(tempfile.mkdtemp(prefix="hetero-local-jobs-"))
        return self.scratch

    def close(self) -> None:
        """Every running job's hosts killed: nothing outlives the local cloud."""
        self.real.close()

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

    def scripted(self) -> list[Outcome]:
        """The outcomes scripted for the next attempts, in creation order (not yet taken)."""
        with self._lock:
            return list(self._outcomes)

    def running(self) -> list[str]:
        """Jobs that are InProgress or Stopping: the ones the run loop ends."""
        with self._lock:
            return [a.name for a in self.attempts if a.status in ("InProgress", "Stopping")]

    def due(self, name: str, now: datetime | None = None) -> bool:
        """Whether a running job has run its length (a stopping one always has)."""
        with self._lock:
            attempt = self.attempt(name)
            if not attempt.simulated:
                if name in self._interrupted:
                    return False  # its hosts are being replaced
                job = self.real.job(name)
                return job is None or job.finished.is_set()
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
                if not attempt.simulated:
                    continue  # its stages come from its hosts
                planned = self._stages(attempt, attempt.length)[:-1]  # the end is end()'s
                for stage in planned[attempt.stages_applied :]:
                    if as_utc(stage.at) > now:
                        break
                    self._enter(attempt, stage)

    def _stages(self, attempt: TrainingJobAttempt, length: timedelta) -> list[Stage]:
        assert attempt.created is not None
        outcome = attempt.planned or Outcome("Completed")
        reason = outcome.detail or self.failure_reason if outcome.status == "Failed" else None
        secondary = outcome.status if outcome.status != "Stopped" else outcome.detail or "Stopped"
        return stages(attempt.created, length, outcome.status, secondary, reason)

    def _enter(self, attempt: TrainingJobAttempt, stage: Stage, reason: str | None = None) -> None:
        """The job enters ``stage``: its transition, and what its hosts log."""
        job = self._backend.training_jobs[attempt.name]
        transitions = job.secondary_status_transitions
        if transitions:
            transitions[-1]["EndTime"] = stage.at
        # A drill says so wherever its statuses show (no code ran).
        prefix = SIMULATED_STATUS_PREFIX if attempt.simulated else ""
        message = f"{prefix}{stage.message}"
        transitions.append(
            {"Status": stage.status, "StartTime": stage.at, "StatusMessage": message}
        )
        job.secondary_status = attempt.secondary_status = stage.status
        attempt.stages_applied += 1
        if stage.status == "Downloading" and attempt.trained_from is None:
            # Once: a job restarted after a spot reclaim keeps its start and its billed time.
            attempt.trained_from = job.training_start_time = stage.at
        if attempt.trained_from is None or not attempt.simulated:
            return  # no instance is running, or its hosts log for themselves
        assert attempt.created is not None
        epoch = int(as_utc(attempt.created).timestamp())
        for host, group in hosts(attempt.request):
            lines = [
                f"[simulated] {line}" for line in host_lines(stage.status, group, host, reason)
            ]
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
                planned = jobs._outcomes[0] if jobs._outcomes else jobs.otherwise
                if planned is None:  # a real job: refused as the service refuses it
                    empty = empty_channel(
                        MotoStorage(jobs._account), request.get("InputDataConfig") or []
                    )
                    if empty is not None:
                        raise exceptions.ValidationError(message=empty)
                if jobs._outcomes:
                    jobs._outcomes.popleft()
                attempt = TrainingJobAttempt(
                    name, "InProgress", instance_types(request), request, planned=planned
                )
                jobs.attempts.append(attempt)
                if planned is not None and planned.status == "ResourceLimitExceeded":
                    attempt.status = "ResourceLimitExceeded"
                    raise ResourceLimitExceeded(quota_message(request))
                result = create(response)
                job = backend.training_jobs[name]
                job.training_job_status = attempt.status = "InProgress"
                job.secondary_status = attempt.secondary_status = "Starting"
                job.training_start_time = job.training_end_time = None
                job.final_metric_data_list = None  # moto's own (train:progress) never shows
                job.secondary_status_transitions = [
                    {
                        "Status": "Starting",
                        "StartTime": job.creation_time,
                        "StatusMessage": (SIMULATED_STATUS_PREFIX if attempt.simulated else "")
                        + "Launching requested ML instances",
                    }
                ]
                attempt.created = job.creation_time
                attempt.length = jobs.job_duration
                jobs._logs.ensure_group()
                if planned is None:
                    epoch = int(as_utc(job.creation_time).timestamp())
                    jobs.real.start(name, request, epoch, jobs._real_stage)
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
            described.pop("FinalMetricDataList", None)
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
                running = jobs.real.job(name) if not attempt.simulated else None
                if running is not None:
                    running.stop()
            jobs._emit(jobs.state_change_event(name))
            return ActionResult({})

        patches.replace(SageMakerResponse, "create_training_job", create_training_job)
        patches.replace(SageMakerResponse, "stop_training_job", stop_training_job)
        patches.replace(SageMakerModelBackend, "describe_training_job", describe_training_job)

    # -- ending a job --------------------------------------------------------------------

    def end(self, name: str, outcome: str | Outcome | None = None) -> TrainingJobAttempt:
        """End a running job now: as stopped if it is Stopping, else with ``outcome`` (or its
        plan; a real job: as its hosts ended, or killed first when ``outcome`` is given).
        A drill's stages not yet entered are laid out over the time it actually took."""
        with self._lock:
            attempt = self.attempt(name)
            if attempt.status not in ("InProgress", "Stopping"):
                raise ValueError(f"training job {name} has already ended ({attempt.status})")
            running = None if attempt.simulated else self.real.job(name)
        if running is not None and (outcome is not None or not running.finished.is_set()):
            running.kill()
            running.wait(60)
        with self._lock:
            job = self._backend.training_jobs[name]
            end = _now(job)
            if running is not None and running.ending is not None and outcome is None:
                self._end_real(attempt, job, running.ending, end)
            else:
                self._end_planned(attempt, job, outcome, end)
        self._emit(self.state_change_event(name))
        return attempt

    def _end_planned(
        self, attempt: TrainingJobAttempt, job: Any, outcome: str | Outcome | None, end: datetime
    ) -> None:
        if attempt.status == "Stopping":
            attempt.planned = Outcome("Stopped")
            remaining = [Stage("Stopped", "Training job stopped", end)]
        else:
            if outcome is not None:
                attempt.planned = Outcome.parse(outcome)
            assert attempt.created is not None
            remaining = self._stages(attempt, end - attempt.created)[attempt.stages_applied :]
        planned = attempt.planned or Outcome("Completed")
        if planned.status == "Failed":
            attempt.failure_reason = planned.detail or self.failure_reason
        for stage in remaining:
            self._enter(attempt, stage, attempt.failure_reason)
        self._close(attempt, job, planned.status, end)

    def _end_real(self, attempt: TrainingJobAttempt, job: Any, ending: Any, end: datetime) -> None:
        """The job ends as its hosts ended (``hosts.Ending``)."""
        end = max(end, _like(job, ending.ended))
        if ending.trained_from is not None and attempt.trained_from is None:
            attempt.trained_from = _like(job, ending.trained_from)
        message = {"Completed": "Training job completed", "Stopped": "Training job stopped"}
        attempt.failure_reason = ending.reason
        text = ending.reason if ending.status == "Failed" else message.get(ending.status, "")
        self._enter(attempt, Stage(ending.secondary, text or "", end))
        if ending.model_artifacts:
            job.model_artifacts = {"S3ModelArtifacts": ending.model_artifacts}
        attempt.final_metrics = self.real.final_metrics(attempt.name)
        job.final_metric_data_list = copy.deepcopy(attempt.final_metrics) or None
        self._close(attempt, job, ending.status, end)

    def _close(self, attempt: TrainingJobAttempt, job: Any, status: str, end: datetime) -> None:
        attempt.status = job.training_job_status = status
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

    def interrupt(self, name: str) -> None:
        """A spot reclaim of a running real job, as managed spot training handles it: every
        host killed at once (checkpoints copied so far are kept), secondary status
        ``Interrupted``, then the same job starts again on fresh hosts (``Starting``), its
        checkpoints restored. ``ValueError`` for a job that is not running for real, or that
        runs on on-demand instances (``OnDemandJob``: SageMaker reclaims only spot ones)."""
        with self._lock:
            attempt = self.attempt(name)
            running = None if attempt.simulated else self.real.job(name)
            if not attempt.simulated and not attempt.request.get("EnableManagedSpotTraining"):
                raise OnDemandJob(
                    f"training job {name} cannot be interrupted as a spot reclaim: it runs on "
                    "on-demand instances (EnableManagedSpotTraining is not set), which SageMaker "
                    "does not reclaim. Fix: train on spot (use_spot_instances=True with max_wait, "
                    "and a checkpoint_s3_uri to resume from), or stop the job instead"
                )
            if attempt.status != "InProgress" or running is None:
                raise ValueError(
                    f"training job {name} cannot be interrupted: it is {attempt.status}"
                    + (" (a drill: no host runs)" if attempt.simulated else "")
                )
            self._interrupted.add(name)
        running.kill("Interrupted")
        running.wait(60)
        with self._lock:
            self._interrupted.discard(name)
            job = self._backend.training_jobs[name]
            at = _now(job)
            self._enter(attempt, Stage("Interrupted", "Job interrupted due to Spot reclaim", at))
            self._enter(attempt, Stage("Starting", "Launching requested ML instances", _now(job)))
            epoch = int(as_utc(job.creation_time).timestamp())
            self.real.start(name, attempt.request, epoch, self._real_stage)

    def _real_stage(self, name: str, status: str, moment: datetime, message: str) -> None:
        """A real job entered a stage (from its watching thread)."""
        with self._lock:
            attempt = self.attempt(name)
            if attempt.status != "InProgress":
                return  # stopping: SageMaker shows no later stage but the end
            job = self._backend.training_jobs[name]
            self._enter(attempt, Stage(status, message, max(_like(job, moment), _now(job))))

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


def _now(job: Any) -> datetime:
    """Now, in the time zone of the job's own times (moto's may be naive), never before any."""
    now = datetime.now(UTC)
    if job.creation_time.tzinfo is None:
        now = now.replace(tzinfo=None)
    last: datetime = job.secondary_status_transitions[-1]["StartTime"]
    return max(now, last)


def _like(job: Any, moment: datetime) -> datetime:
    """``moment`` in the time zone of the job's own times (moto's may be naive UTC)."""
    aware = as_utc(moment).astimezone(UTC)
    return aware.replace(tzinfo=None) if job.creation_time.tzinfo is None else aware


def _event_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = [
    "DEFAULT_FAILURE_REASON",
    "JOB_EVENT_SOURCE",
    "JOB_EVENT_TYPE",
    "OUTCOME_STATUSES",
    "TERMINAL_JOB_STATUSES",
    "EventSink",
    "OnDemandJob",
    "Outcome",
    "TrainingJobAttempt",
    "TrainingJobs",
    "describe_plain",
    "epoch_millis",
    "instance_types",
]
