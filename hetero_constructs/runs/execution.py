"""A training run as read from AWS: the execution, its history and the jobs it created.

Every training job a run creates is tagged ``hetero-constructs:execution`` (the execution's
ARN) and ``hetero-constructs:attempt`` (``"0"``, ``"1"``, ...). A run may create several jobs
(retries after capacity failures, several training tasks in one state machine); they are found
by listing the jobs created since the execution started (less a margin for clock skew) and
reading their tags. The execution's output (or its failure cause) names the job too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from hetero_constructs.contract import lifecycle
from hetero_constructs.contract.metrics import final_metrics, is_simulated
from hetero_constructs.contract.training_job import describe_training_job, error_code

EXECUTION_TAG = lifecycle.TAG_EXECUTION
ATTEMPT_TAG = lifecycle.TAG_ATTEMPT
# Jobs are searched from this long before the execution started (clocks differ a little).
JOB_SEARCH_MARGIN = timedelta(minutes=5)
ENDED_EXECUTION_STATUSES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})
ENDED_JOB_STATUSES = frozenset(lifecycle.TERMINAL_JOB_STATUSES)
# What the events Lambda reports about a job (execution output, or the failure's cause).
_JOB_FIELDS = (
    "TrainingJobName",
    "TrainingJobArn",
    "TrainingJobStatus",
    "SecondaryStatus",
    "ModelArtifacts",
    "FailureReason",
    "BillableTimeInSeconds",
    "TrainingStartTime",
    "TrainingEndTime",
)

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    """Seconds from ``start`` to ``end`` (naive times are UTC); None when either is unknown."""
    if start is None or end is None:
        return None

    def utc(moment: datetime) -> datetime:
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment

    return (utc(end) - utc(start)) / timedelta(seconds=1)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _parse_json(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested beyond the parser: no report
        return None


def _job_reports(value: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    """Mappings that describe a training job, found in an execution's output or cause."""
    if depth > 4:
        return
    if isinstance(value, Mapping):
        if isinstance(value.get("TrainingJobName"), str):
            yield value
            return
        for inner in value.values():
            yield from _job_reports(inner, depth + 1)
    elif isinstance(value, list):
        for inner in value:
            yield from _job_reports(inner, depth + 1)
    elif isinstance(value, str) and value[:1] in "{[":
        yield from _job_reports(_parse_json(value), depth + 1)


@dataclass
class Execution:
    """DescribeExecution, with what the run's end says about its jobs and its failure."""

    description: dict[str, Any]

    @property
    def arn(self) -> str:
        return str(self.description["executionArn"])

    @property
    def name(self) -> str:
        return str(self.description.get("name") or self.arn.rsplit(":", 1)[-1])

    @property
    def state_machine_arn(self) -> str:
        return str(self.description.get("stateMachineArn", ""))

    @property
    def status(self) -> str:
        return str(self.description.get("status", "UNKNOWN"))

    @property
    def ended(self) -> bool:
        return self.status in ENDED_EXECUTION_STATUSES

    @property
    def start(self) -> datetime | None:
        value = self.description.get("startDate")
        return value if isinstance(value, datetime) else None

    @property
    def stop(self) -> datetime | None:
        value = self.description.get("stopDate")
        return value if isinstance(value, datetime) else None

    @property
    def error(self) -> str | None:
        return _text(self.description.get("error"))

    @property
    def cause(self) -> str | None:
        return _text(self.description.get("cause"))

    @property
    def output(self) -> Any:
        return _parse_json(self.description.get("output"))

    def job_reports(self) -> list[Mapping[str, Any]]:
        """The jobs its output (success) or cause (failure) reports."""
        return [*_job_reports(self.output), *_job_reports(self.cause)]

    def violations(self) -> list[dict[str, Any]]:
        """The submit Lambda's violations when it refused the input (from the cause)."""
        cause = _parse_json(self.cause)
        if isinstance(cause, Mapping) and "violations" not in cause:
            cause = _parse_json(cause.get("errorMessage"))
        found = cause.get("violations") if isinstance(cause, Mapping) else None
        return [v for v in found if isinstance(v, dict)] if isinstance(found, list) else []

    def duration(self, now: datetime) -> float | None:
        return seconds_between(self.start, self.stop or now)

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            "executionArn": self.arn,
            "name": self.name,
            "stateMachineArn": self.state_machine_arn,
            "status": self.status,
            "startDate": self.start,
            "stopDate": self.stop,
            "durationSeconds": self.duration(now),
            "error": self.error,
            "cause": self.cause,
        }


@dataclass
class TrainingJob:
    """One training job of a run: its latest DescribeTrainingJob (or the run's report of it)."""

    name: str
    arn: str | None = None
    attempt: str | None = None
    description: dict[str, Any] = field(default_factory=dict)

    def _get(self, key: str) -> Any:
        return self.description.get(key)

    @property
    def status(self) -> str | None:
        return _text(self._get("TrainingJobStatus"))

    @property
    def secondary_status(self) -> str | None:
        return _text(self._get("SecondaryStatus"))

    @property
    def ended(self) -> bool:
        return self.status in ENDED_JOB_STATUSES

    @property
    def failure_reason(self) -> str | None:
        return _text(self._get("FailureReason"))

    @property
    def model_artifacts(self) -> str | None:
        artifacts = self._get("ModelArtifacts")
        if isinstance(artifacts, Mapping):
            return artifacts.get("S3ModelArtifacts")
        return None

    @property
    def transitions(self) -> list[dict[str, Any]]:
        return list(self._get("SecondaryStatusTransitions") or [])

    @property
    def instance_count(self) -> int | None:
        resources = self._get("ResourceConfig") or {}
        groups = resources.get("InstanceGroups")
        if groups:
            return sum(int(g.get("InstanceCount", 0)) for g in groups)
        count = resources.get("InstanceCount")
        return int(count) if count is not None else None

    @property
    def instance_groups(self) -> dict[str, int]:
        """Group name to instance count (empty for a homogeneous job)."""
        resources = self._get("ResourceConfig") or {}
        return {
            str(g["InstanceGroupName"]): int(g.get("InstanceCount", 0))
            for g in resources.get("InstanceGroups") or []
        }

    @property
    def instances(self) -> list[dict[str, Any]]:
        """What the job ran on, as its ``ResourceConfig`` says: per instance group (in its
        order) its name, instance type and count; a homogeneous job's one entry has no group."""
        resources = self._get("ResourceConfig") or {}
        groups = resources.get("InstanceGroups") or []
        if not groups and resources.get("InstanceType"):
            groups = [resources]
        return [
            {
                "group": group.get("InstanceGroupName"),
                "instanceType": group.get("InstanceType"),
                "instanceCount": int(group.get("InstanceCount", 0)),
            }
            for group in groups
        ]

    @property
    def instances_text(self) -> str:
        """``data 2 x ml.c5.xlarge, gpu 1 x ml.p4d.24xlarge`` ("" when not known yet)."""
        parts = []
        for entry in self.instances:
            group = f"{entry['group']} " if entry["group"] else ""
            parts.append(f"{group}{entry['instanceCount']} x {entry['instanceType']}")
        return ", ".join(parts)

    def billable_seconds(self, now: datetime) -> float | None:
        """The service's billable time once known; while training, the time since the
        instances started training (what will be billed, before any spot savings)."""
        billable = self._get("BillableTimeInSeconds")
        if billable is not None:
            return float(billable)
        start = self._get("TrainingStartTime")
        if not isinstance(start, datetime):
            return None
        end = self._get("TrainingEndTime")
        return seconds_between(start, end if isinstance(end, datetime) else now)

    def elapsed(self, now: datetime) -> float | None:
        created = self._get("CreationTime")
        end = self._get("TrainingEndTime")
        if not isinstance(created, datetime):
            return None
        return seconds_between(created, end if isinstance(end, datetime) and self.ended else now)

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            "name": self.name,
            "arn": self.arn or self._get("TrainingJobArn"),
            "attempt": self.attempt,
            "status": self.status,
            "secondaryStatus": self.secondary_status,
            "failureReason": self.failure_reason,
            "modelArtifacts": self.model_artifacts,
            "billableTimeInSeconds": self.billable_seconds(now),
            "instanceCount": self.instance_count,
            "instanceGroups": self.instance_groups,
            "instances": self.instances,
            "creationTime": self._get("CreationTime"),
            "trainingStartTime": self._get("TrainingStartTime"),
            "trainingEndTime": self._get("TrainingEndTime"),
            "secondaryStatusTransitions": self.transitions,
            "finalMetricDataList": [v.to_dict() for v in final_metrics(self.description)],
            "simulated": is_simulated(self.transitions),  # a drill (--outcome): no code ran
        }


def describe_execution(stepfunctions: Any, execution_arn: str) -> Execution:
    return Execution(stepfunctions.describe_execution(executionArn=execution_arn))


def execution_history(stepfunctions: Any, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    paginator = stepfunctions.get_paginator("get_execution_history")
    for page in paginator.paginate(executionArn=execution_arn, includeExecutionData=True):
        events.extend(page["events"])
    return events


class JobFinder:
    """Finds the jobs of one or more executions by their tags; each job's tags are read once."""

    def __init__(self, sagemaker: Any) -> None:
        self.sagemaker = sagemaker
        self._checked: set[str] = set()
        self._found: dict[str, list[TrainingJob]] = {}

    def jobs_of(self, execution_arn: str) -> list[TrainingJob]:
        return list(self._found.get(execution_arn, []))

    def search(self, since: datetime) -> None:
        """Read the tags of every job created since ``since`` not read before."""
        paginator = self.sagemaker.get_paginator("list_training_jobs")
        for page in paginator.paginate(CreationTimeAfter=since - JOB_SEARCH_MARGIN):
            for summary in page["TrainingJobSummaries"]:
                arn = summary["TrainingJobArn"]
                if arn in self._checked:
                    continue
                tags = self._tags(arn)
                if tags is None:
                    continue
                self._checked.add(arn)
                owner = tags.get(EXECUTION_TAG)
                if owner:
                    job = TrainingJob(
                        summary["TrainingJobName"], arn, tags.get(ATTEMPT_TAG), dict(summary)
                    )
                    self._found.setdefault(owner, []).append(job)

    def _tags(self, arn: str) -> dict[str, str] | None:
        tags: dict[str, str] = {}
        try:
            for page in self.sagemaker.get_paginator("list_tags").paginate(ResourceArn=arn):
                tags.update({t["Key"]: t["Value"] for t in page.get("Tags", [])})
        except ClientError as error:
            # Deleted meanwhile, or not ours to read: not a job of this run we can show.
            if error_code(error) in ("ResourceNotFound", "ValidationException"):
                return {}
            if error_code(error) == "AccessDeniedException":
                return None
            raise
        return tags


def describe_job(sagemaker: Any, job: TrainingJob) -> None:
    """Refresh ``job`` with DescribeTrainingJob (kept as it was when the job is gone)."""
    description = describe_training_job(sagemaker, job.name)
    if description is None:
        return
    job.description = description
    job.arn = job.arn or description.get("TrainingJobArn")


def _attempt_order(job: TrainingJob) -> tuple[int, str]:
    digits = re.fullmatch(r"\d+", job.attempt or "")
    return (int(job.attempt) if digits and job.attempt else 1 << 30, job.name)


def merge_jobs(tagged: list[TrainingJob], reports: list[Mapping[str, Any]]) -> list[TrainingJob]:
    """The tagged jobs plus any job only the execution's output reports, by attempt."""
    jobs = {job.name: job for job in tagged}
    for report in reports:
        name = str(report["TrainingJobName"])
        if name not in jobs:
            jobs[name] = TrainingJob(
                name,
                report.get("TrainingJobArn"),
                None,
                {k: report[k] for k in _JOB_FIELDS if k in report},
            )
        elif not jobs[name].failure_reason and report.get("FailureReason"):
            jobs[name].description.setdefault("FailureReason", report["FailureReason"])
    return sorted(jobs.values(), key=_attempt_order)


def read_run(
    stepfunctions: Any, sagemaker: Any, execution_arn: str, finder: JobFinder | None = None
) -> tuple[Execution, list[TrainingJob]]:
    """The execution and its jobs, each job described."""
    execution = describe_execution(stepfunctions, execution_arn)
    finder = finder or JobFinder(sagemaker)
    if execution.start is not None:
        finder.search(execution.start)
    jobs = merge_jobs(finder.jobs_of(execution.arn), execution.job_reports())
    for job in jobs:
        describe_job(sagemaker, job)
    return execution, jobs


def failure_reason(execution: Execution, jobs: list[TrainingJob]) -> str | None:
    """Why the run failed: the last failed job's reason, else the execution's error and cause.

    None for a run that succeeded (a failed attempt it recovered from is no reason; each job's
    own status still says how it ended).
    """
    if execution.status == "SUCCEEDED":
        return None
    for job in reversed(jobs):
        if job.status in ("Failed", "Stopped") and job.failure_reason:
            return job.failure_reason
    if execution.status in ("FAILED", "TIMED_OUT", "ABORTED"):
        for report in reversed(execution.job_reports()):
            if report.get("FailureReason"):
                return str(report["FailureReason"])
        parts = [p for p in (execution.error, readable_cause(execution.cause)) if p]
        return ": ".join(parts) if parts else f"the execution ended {execution.status}"
    return None


def readable_cause(cause: str | None) -> str | None:
    """A failure's cause as a person reads it: a JSON cause (a submit's refusal, a Lambda's
    error, a caught error passed on) as its reason, or its fields ``key: value; ...`` (the
    violations are listed on their own), never the JSON text."""
    parsed = _parse_json(cause)
    if not isinstance(parsed, Mapping):
        return cause
    if parsed.get("FailureReason"):
        return str(parsed["FailureReason"])
    if parsed.get("errorMessage"):
        kind = parsed.get("errorType")
        return f"{kind}: {parsed['errorMessage']}" if kind else str(parsed["errorMessage"])
    fields = []
    for key, value in parsed.items():
        if value in (None, "", [], {}) or key == "violations":
            continue
        shown = value if isinstance(value, str | int | float) else json.dumps(value, default=str)
        fields.append(f"{key}: {shown}")
    return "; ".join(fields) or None


def run_summary(execution: Execution, jobs: list[TrainingJob], now: datetime) -> dict[str, Any]:
    """The run as one JSON-ready mapping (``status --json``, the end of ``run --json``)."""
    return {
        **execution.to_dict(now),
        "succeeded": execution.status == "SUCCEEDED",
        "failureReason": failure_reason(execution, jobs),
        "violations": execution.violations(),
        "jobs": [job.to_dict(now) for job in jobs],
    }


def describe_event(event: Mapping[str, Any]) -> str:
    """One line for a history event, e.g. ``entered "Run training job"``."""
    kind = str(event.get("type", ""))
    for key, value in event.items():
        if key.endswith("EventDetails") and isinstance(value, Mapping):
            details = value
            break
    else:
        details = {}
    # "ExecutionSucceeded" -> "succeeded": the display labels these lines "execution".
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", kind).lower().removeprefix("execution ")
    if kind.endswith("StateEntered"):
        return f'entered "{details.get("name", "?")}"'
    if kind.endswith("StateExited"):
        return f'left "{details.get("name", "?")}"'
    text = words
    if kind == "TaskScheduled":
        text = f"task scheduled: {details.get('resourceType')}:{details.get('resource')}"
    error = details.get("error")
    if error:
        text += f": {error}"
    cause = details.get("cause")
    if isinstance(cause, str) and cause:
        reports = list(_job_reports(_parse_json(cause)))
        if reports:
            cause = str(reports[0].get("FailureReason") or reports[0]["TrainingJobName"])
        else:
            cause = readable_cause(cause) or cause
        text += f" ({cause if len(cause) <= 200 else cause[:197] + '...'})"
    return text


__all__ = [
    "ATTEMPT_TAG",
    "ENDED_EXECUTION_STATUSES",
    "ENDED_JOB_STATUSES",
    "EXECUTION_TAG",
    "JOB_SEARCH_MARGIN",
    "Clock",
    "Execution",
    "JobFinder",
    "TrainingJob",
    "describe_event",
    "describe_execution",
    "describe_job",
    "execution_history",
    "failure_reason",
    "merge_jobs",
    "read_run",
    "readable_cause",
    "run_summary",
    "seconds_between",
    "utc_now",
]
