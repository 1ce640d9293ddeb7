"""What ``run --follow`` and ``logs --follow`` show of a run, as it goes and at its end.

Timestamped lines for the execution's state transitions, each job's creation and secondary
status, and every host's log lines labelled with host and instance group; a progress line on a
terminal; and the run's final screen (status, jobs, billable time, failure reason).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from hetero_constructs.cli.metrics import value_text
from hetero_constructs.cli.output import (
    clock_text,
    date_text,
    duration_text,
    json_default,
    print_renderable,
)
from hetero_constructs.contract.metrics import final_metrics, is_simulated
from hetero_constructs.runs.execution import (
    TrainingJob,
    describe_event,
    failure_reason,
)
from hetero_constructs.runs.logs import LogLine
from hetero_constructs.runs.watch import RunUpdate, RunWatch

# The live line shows this many of the latest metric values (the final screen shows all).
_PROGRESS_METRICS = 3
#: Seconds what a poll finds is held before it is shown (``FollowDisplay.show``).
HOLD_SECONDS = 1.0
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


def _sort_key(moment: Any) -> float:
    """Seconds since the epoch (naive times are UTC); unknown times sort last."""
    if not isinstance(moment, datetime):
        return float("inf")
    # To the millisecond, as CloudWatch stamps log lines (a status's microseconds would put
    # it after the lines it brings).
    return float(int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp() * 1000))


def _colour(name: str) -> str:
    digest = int(hashlib.sha256(name.encode()).hexdigest(), 16)
    return _GROUP_COLOURS[digest % len(_GROUP_COLOURS)]


#: After a drill's job wherever the display names it: no code ran, no number of it is measured.
_SIMULATED = Text(" - simulated: scripted, no code ran", style="yellow")


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
        self._pending: list[tuple[float, int, Callable[[], None]]] = []
        self._latest = float("-inf")
        self._found = 0  # a sequence number: the sort never compares what shows an item

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
        # Shown in time order. What a poll finds is held HOLD_SECONDS (by its own time) so that
        # what a later poll finds, stamped a little earlier, is shown in its place; the sort is
        # stable: at equal times, execution events, then jobs, their statuses and log lines.
        found: list[tuple[datetime | None, Callable[[], None]]] = []
        if not self.logs_only:
            for event in update.events:
                found.append((event.get("timestamp"), functools.partial(self._show_event, event)))
            for job in update.new_jobs:
                created = job.description.get("CreationTime")
                found.append((created, functools.partial(self._show_new_job, job)))
            for job, transition in update.transitions:
                at = transition.get("StartTime")
                found.append((at, functools.partial(self._show_transition, watch, job, transition)))
        for line in update.lines:
            if self.group is None or line.group == self.group:
                found.append((line.timestamp, functools.partial(self._show_line, watch, line)))
        now = _sort_key(watch.clock())
        for moment, display in found:
            key = _sort_key(moment) if isinstance(moment, datetime) else now
            self._latest = max(self._latest, key)
            self._found += 1
            self._pending.append((key, self._found, display))
        self._show_pending(max(self._latest, now) - HOLD_SECONDS * 1000)

    def flush(self) -> None:
        """Show everything still held (the run has ended, or following stops)."""
        self._show_pending(float("inf"))

    def _show_pending(self, cutoff: float) -> None:
        ready = sorted(item for item in self._pending if item[0] <= cutoff)
        self._pending = [item for item in self._pending if item[0] > cutoff]
        for _, _, display in ready:
            display()

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
                    "instances": job.instances,
                    **({"simulated": True} if is_simulated(job.transitions) else {}),
                }
            )
            return
        attempt = f" (attempt {job.attempt})" if job.attempt is not None else ""
        on = f" on {job.instances_text}" if job.instances_text else ""
        self.console.print(
            Text.assemble(
                (clock_text(created), "dim"),
                "  ",
                ("job       ", "bold magenta"),
                (job.name, "bold"),
                f" created{attempt}{on}",
                _SIMULATED if is_simulated(job.transitions) else "",
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
            latest = watch.latest_metrics.get(job.name) or {}
            if latest:
                shown = list(latest.items())[:_PROGRESS_METRICS]
                row.append(Text(" ".join(f"{name} {value_text(value)}" for name, value in shown)))
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
                    f"{execution.arn} --follow",
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
                Text.assemble(
                    job.name,
                    " (",
                    _styled(job.status),
                    ")",
                    _SIMULATED if is_simulated(job.transitions) else "",
                ),
            )
            if job.instances_text:
                grid.add_row("ran on", Text(job.instances_text))
            if job.model_artifacts:
                grid.add_row("model artifacts", Text(job.model_artifacts))
            billable = job.billable_seconds(now)
            if billable is not None:
                count = job.instance_count
                on = f" on {count} instance{'s' if count != 1 else ''}" if count else ""
                grid.add_row("billable time", f"{duration_text(billable)}{on}")
            final = {v.name: v.value for v in final_metrics(job.description)}
            shown = final or watch.latest_metrics.get(job.name) or {}
            if shown:
                grid.add_row(
                    "final metrics" if final else "metrics",
                    Text(", ".join(f"{name} {value_text(value)}" for name, value in shown.items())),
                )
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


__all__ = [
    "FollowDisplay",
]
