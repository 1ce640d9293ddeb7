"""Training jobs that run: each unscripted CreateTrainingJob starts its hosts on this machine.

``RealJobs`` starts a ``hosts.LocalJob`` for a job, its code, data and artifacts in the local
account's S3 (moto's backend, in this process). Each line a host writes goes to the job's log
stream ``<job>/algo-N-<epoch>`` of ``/aws/sagemaker/TrainingJobs`` as it is written, and through
the job's ``MetricDefinitions`` (``job_metrics``); each stage the job enters is handed to the
training-job lifecycle (``on_stage``), which records it as SageMaker's secondary status.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from hetero_constructs.local.hosts import LocalJob, MotoStorage, private_mounts
from hetero_constructs.local.job_metrics import JobMetrics
from hetero_constructs.local.simulation import LogWriter

#: ``(job, secondary status, when, message)``
StageHook = Callable[[str, str, datetime, str], None]


class RealJobs:
    """The jobs of one local account that run for real."""

    def __init__(self, logs: LogWriter, root: Callable[[], Path]) -> None:
        self._logs = logs
        self._root = root
        self._jobs: dict[str, LocalJob] = {}
        self._metrics: dict[str, JobMetrics] = {}
        self._count = 0
        self._lock = threading.Lock()
        #: Which Python runs the entry points (``--python``); this one by default.
        self.python: str = sys.executable
        #: Seconds between SIGTERM and SIGKILL when a job is stopped.
        self.grace: float = 10.0
        #: Said once per account: whether hosts get their own /opt/ml.
        self._notes: list[str] = []
        #: Variables every host gets (a served account: where its AWS clients find it).
        self.environment: dict[str, str] = {}

    def start(
        self, name: str, request: Mapping[str, Any], epoch: int, on_stage: StageHook
    ) -> LocalJob:
        """Start job ``name``'s hosts (its stages and end come through ``on_stage`` and the
        returned job's ``finished``)."""
        _, note = private_mounts()
        if not self._notes:
            self._notes.append(note)
        definitions = (request.get("AlgorithmSpecification") or {}).get("MetricDefinitions") or []
        metrics = JobMetrics(name, definitions, self._logs.account, self._logs.region)

        def line(host: str, moment: datetime, text: str) -> None:
            self._logs.write(f"{name}/{host}-{epoch}", moment, [text])
            metrics.line(moment, text)

        with self._lock:
            self._count += 1  # a restarted job (spot) gets fresh hosts
            root = self._root() / f"{name}-{self._count}"
            job = LocalJob(
                name,
                request,
                MotoStorage(self._logs.account),
                root,
                on_line=line,
                on_stage=lambda status, moment, message: on_stage(name, status, moment, message),
                python=self.python,
                grace=self.grace,
                environment=self.environment,
            )
            self._jobs[name] = job
            metrics = self._metrics.setdefault(name, metrics)  # a restart keeps the values
        job.start()
        return job

    @property
    def notes(self) -> list[str]:
        """What to tell the user: whether hosts get their own /opt/ml, and each job's notes
        on what runs differently here (``Pipe`` read as ``File``, ...)."""
        with self._lock:
            jobs = list(self._jobs.items())
        return [*self._notes, *(f"{name}: {note}" for name, job in jobs for note in job.notes)]

    def job(self, name: str) -> LocalJob | None:
        with self._lock:
            return self._jobs.get(name)

    def final_metrics(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            metrics = self._metrics.get(name)
        return metrics.final() if metrics is not None else []

    def close(self) -> None:
        """Every job's hosts killed (the account is closing): nothing outlives it."""
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.kill()
        for job in jobs:
            job.wait(30)


__all__ = ["RealJobs", "StageHook"]
