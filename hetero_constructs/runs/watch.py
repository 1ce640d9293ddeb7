"""Reading a run as it goes: each poll returns what is new since the last one.

``RunWatch`` reads the execution, its history, the training jobs it created (by their tags) and
their hosts' log lines; a ``RunUpdate`` is what one poll found. Any boto3 clients serve (AWS,
moto in-process, a moto server).

CloudWatch delivers lines late: a job that has ended is read on until two polls in a row bring
nothing new from it, for at most ``log_grace`` seconds after the run's end was seen (``drained``
says when every job is done), so the last lines of a failure are never cut off.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hetero_constructs.runs.clients import RunClients
from hetero_constructs.runs.execution import (
    Clock,
    Execution,
    JobFinder,
    TrainingJob,
    describe_execution,
    describe_job,
    execution_history,
    merge_jobs,
    run_summary,
    utc_now,
)
from hetero_constructs.runs.logs import TRAINING_LOG_GROUP, HostGroups, JobLogs, LogLine, sort_lines

#: Seconds an ended run's logs are read on for lines CloudWatch delivers late (``--log-grace``).
DEFAULT_LOG_GRACE = 60.0
_QUIET_POLLS = 2


@dataclass
class RunUpdate:
    """What one poll found that was not shown before."""

    events: list[dict[str, Any]] = field(default_factory=list)
    new_jobs: list[TrainingJob] = field(default_factory=list)
    transitions: list[tuple[TrainingJob, dict[str, Any]]] = field(default_factory=list)
    lines: list[LogLine] = field(default_factory=list)


class RunWatch:
    """One run, polled: each history event, job, status transition and log line is new once."""

    def __init__(
        self,
        clients: RunClients,
        execution_arn: str,
        *,
        log_group: str = TRAINING_LOG_GROUP,
        clock: Clock = utc_now,
        read_history: bool = True,
        log_grace: float = DEFAULT_LOG_GRACE,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clients = clients
        self.execution_arn = execution_arn
        self.log_group = log_group
        self.clock = clock
        self.read_history = read_history
        self.execution: Execution | None = None
        self.jobs: list[TrainingJob] = []
        self._finder = JobFinder(clients.sagemaker)
        self._logs: dict[str, JobLogs] = {}
        self.log_grace = log_grace
        self._monotonic = monotonic
        self._drained: set[str] = set()
        self._quiet: dict[str, int] = {}  # ended job -> polls in a row that brought nothing
        self._ended_seen: float | None = None
        self._last_event = 0
        self._seen_transitions: set[tuple[str, str, str]] = set()
        #: Job name -> metric name -> the latest value its log lines gave (as SageMaker reads
        #: them: each metric definition's regex over each line, the first group's number).
        self.latest_metrics: dict[str, dict[str, float]] = {}
        self._definitions: dict[str, list[tuple[str, re.Pattern[str]]]] = {}

    @property
    def ended(self) -> bool:
        return self.execution is not None and self.execution.ended

    @property
    def drained(self) -> bool:
        """Every job's log read to its end: two quiet polls after the job ended, or the grace
        period since the run's end was seen has passed."""
        if self._ended_seen is not None and (
            self._monotonic() - self._ended_seen >= self.log_grace
        ):
            return True
        return all(job.name in self._drained for job in self.jobs)

    def poll(self, *, logs: bool = True) -> RunUpdate:
        """What is new since the last poll; ``logs=False``: the execution and its jobs only."""
        update = RunUpdate()
        execution = describe_execution(self.clients.stepfunctions, self.execution_arn)
        self.execution = execution
        if execution.ended and self._ended_seen is None:
            self._ended_seen = self._monotonic()
        if self.read_history:
            for event in execution_history(self.clients.stepfunctions, self.execution_arn):
                if int(event.get("id", 0)) > self._last_event:
                    update.events.append(event)
                    self._last_event = int(event["id"])
        if execution.start is not None:
            self._finder.search(execution.start)
        known = {job.name: job for job in self.jobs}
        for job in merge_jobs(self._finder.jobs_of(execution.arn), execution.job_reports()):
            if job.name not in known:
                self.jobs.append(job)
                update.new_jobs.append(job)
        for job in self.jobs:
            if not job.ended or job in update.new_jobs:
                describe_job(self.clients.sagemaker, job)
            for transition in job.transitions:
                key = (job.name, str(transition.get("Status")), str(transition.get("StartTime")))
                if key not in self._seen_transitions:
                    self._seen_transitions.add(key)
                    update.transitions.append((job, transition))
        if logs:
            update.lines = self._poll_logs()
            self._read_metrics(update.lines)
        return update

    def _patterns(self, job_name: str) -> list[tuple[str, re.Pattern[str]]]:
        if job_name not in self._definitions:
            job = next((j for j in self.jobs if j.name == job_name), None)
            algorithm = (job.description if job else {}).get("AlgorithmSpecification") or {}
            patterns = []
            for definition in algorithm.get("MetricDefinitions") or []:
                try:
                    patterns.append((str(definition["Name"]), re.compile(definition["Regex"])))
                except (KeyError, TypeError, re.error):
                    continue  # the rules refuse such a definition; a job made elsewhere may not
            self._definitions[job_name] = patterns
        return self._definitions[job_name]

    def _read_metrics(self, lines: list[LogLine]) -> None:
        for line in lines:
            for name, pattern in self._patterns(line.job):
                found = pattern.search(line.message)
                if found is None or not found.groups():
                    continue
                try:
                    value = float(found.group(1))
                except (TypeError, ValueError):
                    continue
                self.latest_metrics.setdefault(line.job, {})[name] = value

    def _poll_logs(self) -> list[LogLine]:
        lines: list[LogLine] = []
        for job in self.jobs:
            if job.name in self._drained:
                continue
            reader = self._logs.get(job.name)
            if reader is None:
                reader = JobLogs(
                    self.clients.logs,
                    job.name,
                    HostGroups(job.instance_groups),
                    attempt=job.attempt,
                    log_group=self.log_group,
                )
                self._logs[job.name] = reader
            reader.groups.update_counts(job.instance_groups)
            new = reader.poll()
            if job.ended:
                # Read on after the end (lines arrive late) until two polls bring nothing.
                self._quiet[job.name] = 0 if new else self._quiet.get(job.name, 0) + 1
                if self._quiet[job.name] >= _QUIET_POLLS:
                    self._drained.add(job.name)
            lines.extend(new)
        return sort_lines(lines)

    def host_groups(self, job_name: str) -> HostGroups | None:
        reader = self._logs.get(job_name)
        return reader.groups if reader else None

    def summary(self) -> dict[str, Any]:
        assert self.execution is not None
        return run_summary(self.execution, self.jobs, self.clock())


__all__ = [
    "DEFAULT_LOG_GRACE",
    "RunUpdate",
    "RunWatch",
]
