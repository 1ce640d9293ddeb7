"""``TrainingRun``: start, follow, inspect, stop and redrive a training run from Python.

The API the ``hetero-train`` commands are built on, for scripts and notebooks (the SageMaker
SDK's ``estimator.fit(logs=True)`` habit)::

    from hetero_constructs import TrainingRun

    run = TrainingRun.start("my-training", input={"hyperparameters": {"epochs": 5}})
    status = run.wait(logs=True)          # group-labelled log lines as they come
    print(status.succeeded, status.jobs[-1].model_artifacts)
    run.logs(group="gpu")                 # every line of the gpu group's hosts
    run.metrics(group="gpu")              # samples/s, data wait, the spec's metrics over time
    TrainingRun.attach(run.arn).stop()
    TrainingRun.attach(failed_arn).redrive()   # a failed run goes on where it failed

Any boto3 clients serve: AWS through the standard chain, or a local account
(``hetero-train local serve``, with ``AWS_ENDPOINT_URL``). Nothing assumes a terminal: ``wait``
prints plain lines to ``out`` (standard output by default) or nowhere (``out=None``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from hetero_constructs.contract.metrics import final_metrics, is_simulated
from hetero_constructs.runs.clients import CLIENT_CONFIG, RunClients, new_session
from hetero_constructs.runs.execution import (
    TrainingJob,
    read_run,
    run_summary,
    utc_now,
)
from hetero_constructs.runs.inputs import (
    InputCheck,
    check_input,
    find_submit_tasks,
    overrides_to_check,
)
from hetero_constructs.runs.logs import LogLine
from hetero_constructs.runs.metrics import DEFAULT_PERIOD_SECONDS, MetricSeries, run_metrics
from hetero_constructs.runs.redrive import RedriveOutcome, redrive_run
from hetero_constructs.runs.stop import StopOutcome, stop_run
from hetero_constructs.runs.targets import resolve_execution, resolve_state_machine
from hetero_constructs.runs.watch import RunWatch
from hetero_constructs.spec.violations import Violation

_STDOUT = object()  # ``wait``'s default: standard output as it is when called


class RunInputError(ValueError):
    """The execution input would be refused by a training task: nothing was started."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        listed = "; ".join(f"[{v.rule}] {v.path or '(input)'}: {v.problem}" for v in violations)
        super().__init__(f"the execution input would be refused (nothing was started): {listed}")


@dataclass(frozen=True)
class InputReport:
    """What was checked of an execution input before starting: each task's check, and a
    one-line note for each task whose overrides could not be checked."""

    checks: list[InputCheck]
    notes: list[str]
    has_tasks: bool

    @property
    def violations(self) -> list[Violation]:
        return [v for check in self.checks for v in check.violations]


def check_run_input(
    definition: Mapping[str, Any], execution_input: Any, execution_name: str
) -> InputReport:
    """Check ``execution_input`` against every training task of ``definition`` as the task
    will see it (``runs.inputs``)."""
    tasks = find_submit_tasks(definition)
    checks: list[InputCheck] = []
    notes: list[str] = []
    for planned in overrides_to_check(tasks, execution_input):
        if planned.note:
            notes.append(planned.note)
        if planned.checked:
            checks.append(check_input(planned.task, planned.value, execution_name))
    return InputReport(checks, notes, bool(tasks))


@dataclass(frozen=True)
class JobStatus:
    """One training job of a run, as last described."""

    name: str
    attempt: str | None
    status: str | None
    secondary_status: str | None
    failure_reason: str | None
    model_artifacts: str | None
    billable_seconds: float | None
    instance_groups: dict[str, int]
    #: What the attempt ran on: per instance group its ``group``, ``instanceType`` and
    #: ``instanceCount`` (a fallback attempt shows its own types).
    instances: list[dict[str, Any]] = field(default_factory=list)
    #: ``FinalMetricDataList`` of a job that ended: metric name -> value.
    final_metrics: dict[str, float] = field(default_factory=dict)
    #: A drill: its end was scripted (a local account's ``--outcome``) and no code ran.
    simulated: bool = False


@dataclass(frozen=True)
class RunStatus:
    """A run as read now: its execution, its jobs and why it failed.

    ``summary`` is the same mapping ``hetero-train status --json`` prints.
    """

    execution_arn: str
    name: str
    status: str
    ended: bool
    succeeded: bool
    failure_reason: str | None
    jobs: list[JobStatus]
    summary: dict[str, Any]

    def __str__(self) -> str:
        text = f"{self.name}: {self.status}"
        return f"{text} ({self.failure_reason})" if self.failure_reason else text


def _job_status(job: TrainingJob, now: datetime) -> JobStatus:
    return JobStatus(
        job.name,
        job.attempt,
        job.status,
        job.secondary_status,
        job.failure_reason,
        job.model_artifacts,
        job.billable_seconds(now),
        job.instance_groups,
        job.instances,
        {value.name: value.value for value in final_metrics(job.description)},
        is_simulated(job.transitions),
    )


class TrainingRun:
    """One execution of a state machine with hetero-constructs training tasks."""

    def __init__(self, execution_arn: str, *, clients: RunClients | None = None) -> None:
        self.arn = execution_arn
        self.clients = clients or RunClients.create()
        #: When StartExecution started it (``start`` only).
        self.start_date: datetime | None = None

    def __repr__(self) -> str:
        return f"TrainingRun({self.arn!r})"

    @property
    def name(self) -> str:
        return self.arn.rsplit(":", 1)[-1]

    # -- starting and finding ---------------------------------------------------------------

    @classmethod
    def start(
        cls,
        state_machine: str,
        input: Any = None,
        *,
        name: str | None = None,
        check: bool = True,
        clients: RunClients | None = None,
    ) -> TrainingRun:
        """Start an execution of ``state_machine`` with ``input``: its ARN or name, or
        ``STACK/CONSTRUCT_ID`` of a training job, of a user's state machine or of a training
        task in one (``runs.targets``; ``LookupError`` naming the closest when none matches).

        With ``check`` (the default) the input is first checked as each training task will
        see it; ``RunInputError`` (with ``violations``) when a task would refuse it.
        """
        clients = clients or RunClients.create()
        arn = state_machine_arn(clients.stepfunctions, state_machine, clients.cloudformation)
        execution_input = {} if input is None else input
        name = name or f"run-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 9973}"
        if check:
            described = clients.stepfunctions.describe_state_machine(stateMachineArn=arn)
            report = check_run_input(json.loads(described["definition"]), execution_input, name)
            if report.violations:
                raise RunInputError(report.violations)
        started = clients.stepfunctions.start_execution(
            stateMachineArn=arn, name=name, input=json.dumps(execution_input)
        )
        run = cls(str(started["executionArn"]), clients=clients)
        run.start_date = started.get("startDate")
        return run

    @classmethod
    def attach(cls, run: str, *, clients: RunClients | None = None) -> TrainingRun:
        """The run of an execution that exists, by its ARN or name (``LookupError`` naming the
        closest runs when none matches)."""
        clients = clients or RunClients.create()
        return cls(resolve_execution(run, stepfunctions=clients.stepfunctions), clients=clients)

    # -- reading -------------------------------------------------------------------------------

    def status(self) -> RunStatus:
        """The execution and its training jobs, read now."""
        execution, jobs = read_run(self.clients.stepfunctions, self.clients.sagemaker, self.arn)
        now = utc_now()
        summary = run_summary(execution, jobs, now)
        return RunStatus(
            execution.arn,
            execution.name,
            execution.status,
            execution.ended,
            execution.status == "SUCCEEDED",
            summary["failureReason"],
            [_job_status(job, now) for job in jobs],
            summary,
        )

    def jobs(self) -> list[TrainingJob]:
        """The run's training jobs (every attempt), each described now."""
        return read_run(self.clients.stepfunctions, self.clients.sagemaker, self.arn)[1]

    def logs(self, group: str | None = None) -> list[LogLine]:
        """Every log line of the run's jobs so far, in time order, labelled with host and
        instance group; ``group``: that instance group's hosts only."""
        watch = RunWatch(self.clients, self.arn, read_history=False)
        lines = watch.poll().lines
        return [line for line in lines if group is None or line.group == group]

    def metrics(
        self,
        group: str | None = None,
        *,
        period: int = DEFAULT_PERIOD_SECONDS,
        cloudwatch: Any = None,
    ) -> dict[str, list[MetricSeries]]:
        """Each metric of each of the run's jobs over time, with its final value (as
        ``hetero-train metrics``): job name -> its metrics. ``group``: that instance group's
        built-in metrics and the spec's own. ``cloudwatch``: a client (default: one in the
        region of this run's clients, from the standard chain)."""
        if cloudwatch is None:
            region = self.clients.sagemaker.meta.region_name
            cloudwatch = new_session(region=region).client("cloudwatch", config=CLIENT_CONFIG)
        return run_metrics(
            self.clients.stepfunctions,
            self.clients.sagemaker,
            cloudwatch,
            self.arn,
            group=group,
            period=period,
        )

    def wait(
        self,
        logs: bool = False,
        *,
        out: TextIO | Any | None = _STDOUT,
        poll_seconds: float = 5.0,
        timeout: float | None = None,
        log_grace: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> RunStatus:
        """Wait for the run to end and return its status; ``TimeoutError`` after ``timeout``.

        Prints each job's status changes (and, with ``logs``, every host's lines labelled
        with host and instance group) to ``out`` as they come. After the run ends, its jobs'
        streams are read on for up to ``log_grace`` seconds, until two polls bring nothing.
        """
        stream: TextIO | None = sys.stdout if out is _STDOUT else out
        watch = RunWatch(self.clients, self.arn, read_history=False, log_grace=log_grace)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            update = watch.poll(logs=logs)
            if stream is not None:
                shown = [
                    (
                        transition.get("StartTime"),
                        f"{job.name} {transition.get('Status')}: "
                        + str(transition.get("StatusMessage") or ""),
                    )
                    for job, transition in update.transitions
                ]
                shown += [
                    (line.timestamp, f"[{line.label()}] {line.message}") for line in update.lines
                ]
                # In time order (stable: at equal times, a status before the lines it brings).
                for moment, text in sorted(shown, key=lambda item: _seconds(item[0])):
                    stream.write(f"{_clock(moment)} {text}\n")
                stream.flush()
            if watch.ended and watch.drained:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} had not ended after {timeout} s")
            sleep(poll_seconds)
        status = self.status()
        if stream is not None:
            stream.write(f"{status}\n")
            stream.flush()
        return status

    # -- steering ---------------------------------------------------------------------------

    def stop(self, cause: str = "Stopped from TrainingRun.stop") -> StopOutcome:
        """Stop the execution and its training jobs still in progress."""
        return stop_run(self.clients, self.arn, cause=cause)

    def redrive(self, *, force: bool = False) -> RedriveOutcome:
        """Redrive a run that ended FAILED, ABORTED or TIMED_OUT: it goes on from the state it
        did not get through, under the same ARN, and a training task there starts a fresh
        attempt with a new job name. ``ClientError`` (``ExecutionNotRedrivable``) for a run
        that is running or succeeded. A run that failed in a ``Fail`` state would fail again at
        once: ``RedriveWouldFail`` says what to run instead (``force``: redrive it anyway).
        Then ``wait`` as for a started run."""
        return redrive_run(self.clients, self.arn, force=force)


def state_machine_arn(stepfunctions: Any, state_machine: str, cloudformation: Any = None) -> str:
    """The ARN of the state machine ``state_machine`` names (``runs.targets``: an ARN, a name,
    or with ``cloudformation`` STACK/CONSTRUCT_ID); ``LookupError`` naming the closest."""
    return resolve_state_machine(
        state_machine, stepfunctions=stepfunctions, cloudformation=cloudformation
    ).arn


def _seconds(moment: Any) -> float:
    if not isinstance(moment, datetime):
        return float("inf")
    # To the millisecond, as CloudWatch stamps log lines (a status's microseconds would put
    # it after the lines it brings).
    return float(int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp() * 1000))


def _clock(moment: Any) -> str:
    return moment.strftime("%H:%M:%S") if isinstance(moment, datetime) else "--:--:--"


__all__ = [
    "InputReport",
    "JobStatus",
    "RunInputError",
    "RunStatus",
    "TrainingRun",
    "check_run_input",
    "state_machine_arn",
]
