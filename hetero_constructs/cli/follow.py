"""Following a training run until it ends: the reusable display of ``hetero-train run --follow``.

``follow_run(clients, execution_arn)`` takes any boto3 clients (AWS, moto in-process, a moto
server) and shows, until the execution ends: its state transitions, each training job's name
and secondary-status transitions with timestamps, a progress line (elapsed, status, billable
time so far; on a terminal only) and every host's log lines labelled with host and, where it can
be known, instance group. Ctrl-C asks whether to stop the run or only stop following; without a
terminal to ask on, it stops following.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from botocore.exceptions import ClientError
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from hetero_constructs.cli.aws import RunClients, error_code
from hetero_constructs.cli.logs import TRAINING_LOG_GROUP, HostGroups, JobLogs, LogLine, sort_lines
from hetero_constructs.cli.output import (
    clock_text,
    date_text,
    duration_text,
    json_default,
    make_console,
    print_renderable,
)
from hetero_constructs.cli.runs import (
    Clock,
    Execution,
    JobFinder,
    TrainingJob,
    describe_event,
    describe_execution,
    describe_job,
    execution_history,
    failure_reason,
    merge_jobs,
    run_summary,
    utc_now,
)

EXIT_SUCCEEDED = 0
EXIT_FAILED = 1
# Stopped following with Ctrl-C: the run goes on (the shell's code for SIGINT).
EXIT_INTERRUPTED = 130
_STOP_ERROR = "hetero-train.Stopped"
_GROUP_COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "bright_red")
_STATUS_STYLES = {
    "SUCCEEDED": "bold green",
    "Completed": "green",
    "RUNNING": "bold cyan",
    "InProgress": "cyan",
    "FAILED": "bold red",
    "Failed": "red",
    "TIMED_OUT": "bold red",
    "ABORTED": "bold yellow",
    "Stopped": "yellow",
    "Stopping": "yellow",
}


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
        self._drained: set[str] = set()
        self._last_event = 0
        self._seen_transitions: set[tuple[str, str, str]] = set()

    @property
    def ended(self) -> bool:
        return self.execution is not None and self.execution.ended

    def poll(self, *, logs: bool = True) -> RunUpdate:
        """What is new since the last poll; ``logs=False``: the execution and its jobs only."""
        update = RunUpdate()
        execution = describe_execution(self.clients.stepfunctions, self.execution_arn)
        self.execution = execution
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
        return update

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
            # A job that has ended and logged nothing new since is read no more.
            if job.ended and not new:
                self._drained.add(job.name)
            lines.extend(new)
        return sort_lines(lines)

    def host_groups(self, job_name: str) -> HostGroups | None:
        reader = self._logs.get(job_name)
        return reader.groups if reader else None

    def summary(self) -> dict[str, Any]:
        assert self.execution is not None
        return run_summary(self.execution, self.jobs, self.clock())


@dataclass(frozen=True)
class StopOutcome:
    """What ``stop_run`` did."""

    execution_status: str
    stopped_execution: bool
    stopped_jobs: list[str]
    notes: list[str]


def stop_run(clients: RunClients, execution_arn: str, *, cause: str) -> StopOutcome:
    """Stop the execution and ask SageMaker to stop its jobs still in progress.

    The stack's events Lambda stops an aborted execution's job too; asking here as well makes
    the stop immediate and covers a job whose stop event was missed. Both are idempotent.
    """
    execution = describe_execution(clients.stepfunctions, execution_arn)
    notes: list[str] = []
    stopped = False
    if not execution.ended:
        clients.stepfunctions.stop_execution(
            executionArn=execution_arn, error=_STOP_ERROR, cause=cause[:32768]
        )
        stopped = True
    finder = JobFinder(clients.sagemaker)
    if execution.start is not None:
        finder.search(execution.start)
    stopped_jobs: list[str] = []
    for job in merge_jobs(finder.jobs_of(execution.arn), execution.job_reports()):
        describe_job(clients.sagemaker, job)
        if job.status != "InProgress":
            continue
        try:
            clients.sagemaker.stop_training_job(TrainingJobName=job.name)
        except ClientError as error:
            code = error_code(error)
            notes.append(
                f"SageMaker did not stop {job.name} ({code}); the stack's events Lambda stops "
                "it when the execution is aborted."
            )
            continue
        stopped_jobs.append(job.name)
    status = describe_execution(clients.stepfunctions, execution_arn).status
    return StopOutcome(status, stopped, stopped_jobs, notes)


def _colour(name: str) -> str:
    digest = int(hashlib.sha256(name.encode()).hexdigest(), 16)
    return _GROUP_COLOURS[digest % len(_GROUP_COLOURS)]


def _styled(status: str | None) -> Text:
    return Text(status or "-", style=_STATUS_STYLES.get(status or "", ""))


class FollowDisplay:
    """Shows a ``RunWatch``'s updates: rich on a terminal, plain lines in a pipe, or JSON Lines."""

    def __init__(
        self,
        console: Console,
        *,
        json_out: TextIO | None = None,
        logs_only: bool = False,
        group: str | None = None,
    ) -> None:
        self.console = console
        self.json_out = json_out
        self.logs_only = logs_only
        self.group = group
        self._header_shown = False

    # -- records ---------------------------------------------------------------------------

    def _json(self, record: dict[str, Any]) -> None:
        assert self.json_out is not None
        self.json_out.write(json.dumps(record, default=json_default) + "\n")
        self.json_out.flush()

    def _job_marker(self, watch: RunWatch, job_name: str, attempt: str | None) -> str | None:
        if len(watch.jobs) < 2:
            return None
        attempts = [job.attempt for job in watch.jobs]
        if attempt is not None and attempts.count(attempt) == 1:
            return f"attempt {attempt}"
        return job_name

    def show(self, update: RunUpdate, watch: RunWatch) -> None:
        assert watch.execution is not None
        if not self._header_shown and not self.logs_only and self.json_out is None:
            self._header_shown = True
            self.console.print(
                Text.assemble(
                    ("Run ", ""),
                    (watch.execution.name, "bold"),
                    f" of {watch.execution.state_machine_arn.rsplit(':', 1)[-1]}, started "
                    f"{date_text(watch.execution.start)}",
                )
            )
        if not self.logs_only:
            for event in update.events:
                self._show_event(event)
            for job in update.new_jobs:
                self._show_new_job(job)
            for job, transition in update.transitions:
                self._show_transition(watch, job, transition)
        for line in update.lines:
            if self.group is None or line.group == self.group:
                self._show_line(watch, line)

    def _show_event(self, event: dict[str, Any]) -> None:
        text = describe_event(event)
        stamp = event.get("timestamp")
        if self.json_out is not None:
            self._json(
                {
                    "type": "execution-event",
                    "timestamp": stamp,
                    "id": event.get("id"),
                    "event": event.get("type"),
                    "text": text,
                }
            )
            return
        self.console.print(
            Text.assemble((clock_text(stamp), "dim"), "  ", ("execution ", "bold blue"), text)
        )

    def _show_new_job(self, job: TrainingJob) -> None:
        created = job.description.get("CreationTime")
        if self.json_out is not None:
            self._json(
                {
                    "type": "job",
                    "timestamp": created,
                    "job": job.name,
                    "attempt": job.attempt,
                    "arn": job.arn,
                }
            )
            return
        attempt = f" (attempt {job.attempt})" if job.attempt is not None else ""
        self.console.print(
            Text.assemble(
                (clock_text(created), "dim"),
                "  ",
                ("job       ", "bold magenta"),
                (job.name, "bold"),
                f" created{attempt}",
            )
        )

    def _show_transition(self, watch: RunWatch, job: TrainingJob, item: dict[str, Any]) -> None:
        if self.json_out is not None:
            self._json(
                {
                    "type": "job-status",
                    "timestamp": item.get("StartTime"),
                    "job": job.name,
                    "attempt": job.attempt,
                    "status": item.get("Status"),
                    "message": item.get("StatusMessage"),
                }
            )
            return
        marker = self._job_marker(watch, job.name, job.attempt)
        self.console.print(
            Text.assemble(
                (clock_text(item.get("StartTime")), "dim"),
                "  ",
                ("job       ", "bold magenta"),
                (f"[{marker}] " if marker else "", "magenta"),
                _styled(str(item.get("Status"))),
                f": {item.get('StatusMessage') or ''}".rstrip(": "),
            )
        )

    def _show_line(self, watch: RunWatch, line: LogLine) -> None:
        if self.json_out is not None:
            self._json({"type": "log", **line.to_dict()})
            return
        label = line.label(with_job=self._job_marker(watch, line.job, line.attempt))
        self.console.print(
            Text.assemble(
                (clock_text(line.timestamp), "dim"),
                "  ",
                (f"[{label}]", _colour(line.group or line.host)),
                " ",
                line.message,
            )
        )

    # -- the progress line and the final screen ---------------------------------------------

    def progress(self, watch: RunWatch) -> RenderableType:
        """Elapsed, statuses and billable time so far, for the live line at the bottom."""
        now = watch.clock()
        execution = watch.execution
        grid = Table.grid(padding=(0, 2))
        if execution is None:
            grid.add_row(Spinner("dots", text="starting"))
            return grid
        row: list[RenderableType] = [
            Spinner("dots", text=Text.assemble(_styled(execution.status))),
            Text(f"elapsed {duration_text(execution.duration(now))}"),
        ]
        if watch.jobs:
            job = watch.jobs[-1]
            row.append(
                Text.assemble(
                    ("job ", "dim"),
                    job.name,
                    " ",
                    _styled(job.status),
                    f" / {job.secondary_status}" if job.secondary_status else "",
                )
            )
            billable = job.billable_seconds(now)
            count = job.instance_count
            on = f" on {count} instance{'s' if count != 1 else ''}" if count else ""
            row.append(Text(f"billable {duration_text(billable)}{on}"))
        else:
            row.append(Text("no training job yet", style="dim"))
        grid.add_row(*row)
        return grid

    def final(self, watch: RunWatch, *, interrupted: bool = False) -> None:
        assert watch.execution is not None
        summary = watch.summary()
        if self.json_out is not None:
            self._json({"type": "summary", **summary, "stoppedFollowing": interrupted})
            return
        execution = watch.execution
        now = watch.clock()
        if interrupted:
            self.console.print(
                Text.assemble(
                    "Stopped following ",
                    (execution.name, "bold"),
                    f" ({execution.status}); the run goes on. Resume with: hetero-train logs "
                    f"{execution.arn} --follow, or hetero-train status {execution.arn}",
                )
            )
            return
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        for job in watch.jobs:
            marker = self._job_marker(watch, job.name, job.attempt)
            grid.add_row(
                escape(f"job [{marker}]") if marker else "job",
                Text.assemble(job.name, " (", _styled(job.status), ")"),
            )
            if job.model_artifacts:
                grid.add_row("model artifacts", Text(job.model_artifacts))
            billable = job.billable_seconds(now)
            if billable is not None:
                count = job.instance_count
                on = f" on {count} instance{'s' if count != 1 else ''}" if count else ""
                grid.add_row("billable time", f"{duration_text(billable)}{on}")
        if not watch.jobs:
            grid.add_row("job", Text("none was created", style="dim"))
        reason = failure_reason(execution, watch.jobs)
        if reason:
            grid.add_row("failure reason", Text(reason, style="red"))
        for violation in execution.violations():
            grid.add_row(
                "violation",
                Text(
                    f"[{violation.get('rule')}] {violation.get('path')}: {violation.get('message')}"
                ),
            )
        for job in watch.jobs:
            groups = watch.host_groups(job.name)
            if groups is not None and groups.counts and groups.unknown_hosts:
                grid.add_row(
                    "note",
                    Text(
                        f"{job.name}: the instance group of {', '.join(groups.unknown_hosts)} is "
                        "not known (its log did not say); those lines show the host only"
                    ),
                )
        print_renderable(
            self.console,
            Group(
                Text.assemble(
                    "Run ",
                    (execution.name, "bold"),
                    " ",
                    _styled(execution.status),
                    f" after {duration_text(execution.duration(now))}",
                ),
                grid,
            ),
        )


Ask = Callable[[], str]


def _ask_on_terminal(console: Console) -> Ask:
    def ask() -> str:
        from rich.prompt import Prompt

        try:
            answer = Prompt.ask(
                "\nCtrl-C: [bold]s[/bold]top the run, or only stop [bold]f[/bold]ollowing?",
                choices=["s", "f"],
                default="f",
                console=console,
            )
        except (KeyboardInterrupt, EOFError):
            return "f"
        return answer

    return ask


@dataclass(frozen=True)
class FollowResult:
    summary: dict[str, Any]
    exit_code: int
    stopped_following: bool


def follow_run(
    clients: RunClients,
    execution_arn: str,
    console: Console | None = None,
    *,
    poll_seconds: float = 5.0,
    json_out: TextIO | None = None,
    logs_only: bool = False,
    group: str | None = None,
    ask: Ask | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Clock = utc_now,
    log_group: str = TRAINING_LOG_GROUP,
) -> FollowResult:
    """Follow the run until its execution ends; exit code 0 only when it succeeded.

    ``console`` defaults to standard output (rich: live progress on a terminal, plain lines
    elsewhere); ``json_out`` writes JSON Lines instead. ``ask`` is called on Ctrl-C and answers
    ``"s"`` (stop the run) or ``"f"`` (stop following); by default it asks on the terminal when
    there is one, and stops following otherwise. ``sleep`` and ``clock`` are for tests.
    """
    console = console or make_console(sys.stdout)
    if ask is None:
        # JSON Lines on standard output: the question goes to standard error.
        asking = console if json_out is None else make_console(sys.stderr)
        ask = _ask_on_terminal(asking) if asking.is_terminal and sys.stdin.isatty() else None
    watch = RunWatch(clients, execution_arn, log_group=log_group, clock=clock)
    display = FollowDisplay(console, json_out=json_out, logs_only=logs_only, group=group)
    live: Live | None = None
    if console.is_terminal and json_out is None:
        live = Live(console=console, refresh_per_second=8, transient=True)
        live.start()
    try:
        while True:
            try:
                ended = _poll_and_show(watch, display, live)
                if ended:
                    # One more read for what was logged while the execution ended.
                    _poll_and_show(watch, display, live)
                    break
                sleep(poll_seconds)
            except KeyboardInterrupt:
                if live is not None:
                    live.stop()
                answer = ask() if ask is not None else "f"
                if answer != "s":
                    if watch.execution is None:
                        watch.execution = describe_execution(clients.stepfunctions, execution_arn)
                    display.final(watch, interrupted=True)
                    return FollowResult(watch.summary(), EXIT_INTERRUPTED, True)
                outcome = stop_run(clients, execution_arn, cause="Stopped from hetero-train")
                if json_out is None:
                    console.print(
                        f"Stopping the run (execution {outcome.execution_status}"
                        + (
                            f"; stopping {', '.join(outcome.stopped_jobs)}"
                            if outcome.stopped_jobs
                            else ""
                        )
                        + ")"
                    )
                    for note in outcome.notes:
                        console.print(f"note: {note}")
                if live is not None:
                    live.start()
    finally:
        if live is not None:
            live.stop()
    display.final(watch)
    assert watch.execution is not None
    code = EXIT_SUCCEEDED if watch.execution.status == "SUCCEEDED" else EXIT_FAILED
    return FollowResult(watch.summary(), code, False)


class LocalFollow:
    """``follow_run`` as the local runner's follow display (``LocalCloud.run(follow=...)``).

    The local runner calls it in its own thread with its clients and the execution's ARN; it
    shows the run on ``console`` as ``hetero-train run --follow`` does, and keeps the result.
    """

    def __init__(self, console: Console, *, poll_seconds: float = 0.2) -> None:
        self.console = console
        self.poll_seconds = poll_seconds
        self.results: list[FollowResult] = []

    def __call__(self, clients: Any, execution_arn: str) -> None:
        run_clients = RunClients(clients.stepfunctions, clients.sagemaker, clients.logs)
        self.results.append(
            follow_run(run_clients, execution_arn, self.console, poll_seconds=self.poll_seconds)
        )


def _poll_and_show(watch: RunWatch, display: FollowDisplay, live: Live | None) -> bool:
    update = watch.poll()
    display.show(update, watch)
    if live is not None:
        live.update(display.progress(watch))
    return watch.ended


__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_SUCCEEDED",
    "FollowDisplay",
    "FollowResult",
    "LocalFollow",
    "RunUpdate",
    "RunWatch",
    "StopOutcome",
    "follow_run",
    "stop_run",
]
