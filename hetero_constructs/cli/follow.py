"""Following a training run until it ends: the reusable display of ``hetero-train run --follow``.

``follow_run(clients, execution_arn)`` takes any boto3 clients (AWS, moto in-process, a moto
server) and shows, until the execution ends: its state transitions, each training job's name
and secondary-status transitions with timestamps, a progress line (elapsed, status, billable
time so far; on a terminal only) and every host's log lines labelled with host and, where it can
be known, instance group. Ctrl-C asks whether to stop the run or only stop following; without a
terminal to ask on, it stops following. ``watch`` reads the run, ``display`` shows it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live

from hetero_constructs.cli.display import FollowDisplay
from hetero_constructs.cli.output import (
    make_console,
)
from hetero_constructs.runs.clients import RunClients
from hetero_constructs.runs.execution import Clock, describe_execution, utc_now
from hetero_constructs.runs.logs import TRAINING_LOG_GROUP
from hetero_constructs.runs.stop import StopOutcome, stop_run
from hetero_constructs.runs.watch import DEFAULT_LOG_GRACE, RunUpdate, RunWatch

EXIT_SUCCEEDED = 0
EXIT_FAILED = 1
# Stopped following with Ctrl-C: the run goes on (the shell's code for SIGINT).
EXIT_INTERRUPTED = 130


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
    log_grace: float = DEFAULT_LOG_GRACE,
) -> FollowResult:
    """Follow the run until its execution ends; exit code 0 only when it succeeded.

    ``console`` defaults to standard output (rich: live progress on a terminal, plain lines
    elsewhere); ``json_out`` writes JSON Lines instead. ``ask`` is called on Ctrl-C and answers
    ``"s"`` (stop the run) or ``"f"`` (stop following); by default it asks on the terminal when
    there is one, and stops following otherwise. After the execution ends its jobs' streams are
    read on (``RunWatch.drained``, at most ``log_grace`` seconds). ``sleep`` and ``clock`` are
    for tests.
    """
    console = console or make_console(sys.stdout)
    if ask is None:
        # JSON Lines on standard output: the question goes to standard error.
        asking = console if json_out is None else make_console(sys.stderr)
        ask = _ask_on_terminal(asking) if asking.is_terminal and sys.stdin.isatty() else None
    watch = RunWatch(clients, execution_arn, log_group=log_group, clock=clock, log_grace=log_grace)
    display = FollowDisplay(console, json_out=json_out, logs_only=logs_only, group=group)
    live: Live | None = None
    if console.is_terminal and json_out is None:
        live = Live(console=console, refresh_per_second=8, transient=True)
        live.start()
    try:
        while True:
            try:
                _poll_and_show(watch, display, live)
                # After the end, the jobs' streams are read on until they are drained.
                if watch.ended and watch.drained:
                    break
                sleep(poll_seconds)
            except KeyboardInterrupt:
                if live is not None:
                    live.stop()
                answer = ask() if ask is not None else "f"
                if answer != "s":
                    # The status as it is now, after the question was answered.
                    watch.execution = describe_execution(clients.stepfunctions, execution_arn)
                    display.flush()
                    display.final(watch, interrupted=True)
                    return FollowResult(watch.summary(), EXIT_INTERRUPTED, True)
                outcome = stop_run(clients, execution_arn, cause="Stopped from hetero-train")
                display.flush()
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
    display.flush()
    display.final(watch)
    assert watch.execution is not None
    code = EXIT_SUCCEEDED if watch.execution.status == "SUCCEEDED" else EXIT_FAILED
    return FollowResult(watch.summary(), code, False)


class LocalFollow:
    """``follow_run`` as the local runner's follow display (``LocalCloud.run(follow=...)``).

    The local runner calls it in its own thread with its clients and the execution's ARN; it
    shows the run on ``console`` as ``hetero-train run --follow`` does (``json_out``: the same
    JSON Lines), and keeps the result.
    """

    def __init__(
        self, console: Console, *, poll_seconds: float = 0.2, json_out: TextIO | None = None
    ) -> None:
        self.console = console
        self.poll_seconds = poll_seconds
        self.json_out = json_out
        self.results: list[FollowResult] = []

    def __call__(self, clients: Any, execution_arn: str) -> None:
        run_clients = RunClients(clients.stepfunctions, clients.sagemaker, clients.logs)
        self.results.append(
            follow_run(
                run_clients,
                execution_arn,
                self.console,
                poll_seconds=self.poll_seconds,
                json_out=self.json_out,
            )
        )


def _poll_and_show(watch: RunWatch, display: FollowDisplay, live: Live | None) -> None:
    update = watch.poll()
    display.show(update, watch)
    if live is not None:
        live.update(display.progress(watch))


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
