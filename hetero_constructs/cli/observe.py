"""``hetero-train status``, ``logs``, ``stop``, ``redrive`` and ``list``: inspect, follow, stop
and redrive runs."""

from __future__ import annotations

import getpass
from typing import Any

import click
from rich.text import Text

from hetero_constructs.cli.display import FollowDisplay
from hetero_constructs.cli.follow import EXIT_INTERRUPTED, EXIT_SUCCEEDED, follow_run
from hetero_constructs.cli.group import (
    aws_from,
    aws_options,
    cli,
    command_output,
    handles_errors,
    json_option,
    log_grace_option,
    poll_option,
)
from hetero_constructs.cli.metrics import metric_rows
from hetero_constructs.cli.output import (
    CliError,
    date_text,
    duration_text,
)
from hetero_constructs.cli.targets import resolve_execution, resolve_state_machine
from hetero_constructs.contract.metrics import is_simulated
from hetero_constructs.runs.execution import (
    JobFinder,
    describe_execution,
    merge_jobs,
    read_run,
    run_summary,
    utc_now,
)
from hetero_constructs.runs.logs import host_number
from hetero_constructs.runs.redrive import RedriveWouldFail
from hetero_constructs.runs.training_run import TrainingRun
from hetero_constructs.runs.watch import RunWatch


@cli.command()
@click.argument("run_id", metavar="RUN")
@json_option
@aws_options
@handles_errors
def status(
    run_id: str, json_flag: bool, profile: str | None, region: str | None, endpoint_url: str | None
) -> int:
    """Show a run: its execution, its training jobs, their statuses, metrics (the final values
    of a job that ended, the latest of one that runs) and the failure reason."""
    out = command_output(json_flag)
    aws = aws_from(profile, region, endpoint_url)
    clients = aws.run_clients()
    cloudwatch = aws.client("cloudwatch")
    arn = resolve_execution(run_id, stepfunctions=clients.stepfunctions)
    execution, jobs = read_run(clients.stepfunctions, clients.sagemaker, arn)
    now = utc_now()
    summary = run_summary(execution, jobs, now)
    if json_flag:
        out.emit_json(summary)
        return EXIT_SUCCEEDED
    rows = [
        ["run", execution.name],
        ["execution", execution.arn],
        ["status", str(execution.status)],
        ["started", date_text(execution.start)],
        ["ended", date_text(execution.stop)],
        ["duration", duration_text(execution.duration(now))],
    ]
    for job in jobs:
        label = f"job (attempt {job.attempt})" if job.attempt is not None else "job"
        drill = " - simulated: scripted, no code ran" if is_simulated(job.transitions) else ""
        rows.append([label, job.name + drill])
        rows.append(["  status", f"{job.status} / {job.secondary_status}"])
        if job.instances_text:
            rows.append(["  ran on", job.instances_text])
        if job.transitions:
            last = job.transitions[-1]
            rows.append(
                ["  last transition", f"{last.get('Status')}: {last.get('StatusMessage') or ''}"]
            )
        rows.append(["  billable time", duration_text(job.billable_seconds(now))])
        if job.model_artifacts:
            rows.append(["  model artifacts", job.model_artifacts])
        rows += metric_rows(cloudwatch, job)
    if not jobs:
        rows.append(["job", "none found"])
    if summary["failureReason"]:
        rows.append(["failure reason", str(summary["failureReason"])])
    for violation in summary["violations"]:
        rows.append(["violation", f"[{violation.get('rule')}] {violation.get('message')}"])
    table = out.table(["", ""], rows)
    table.show_header = False
    out.show(table)
    return EXIT_SUCCEEDED


@cli.command()
@click.argument("run_id", metavar="RUN")
@click.option("--group", help="only this instance group's hosts")
@click.option("--follow", is_flag=True, help="keep reading until the run ends")
@json_option
@poll_option
@log_grace_option
@aws_options
@handles_errors
def logs(
    run_id: str,
    group: str | None,
    follow: bool,
    json_flag: bool,
    poll_interval: float,
    log_grace: float,
    profile: str | None,
    region: str | None,
    endpoint_url: str | None,
) -> int:
    """Print the log lines of every host of the run's training jobs, in time order, each
    labelled with its host and instance group (JSON Lines with --json)."""
    out = command_output(json_flag)
    clients = aws_from(profile, region, endpoint_url).run_clients()
    arn = resolve_execution(run_id, stepfunctions=clients.stepfunctions)
    watch = RunWatch(clients, arn, read_history=False)
    if follow:
        if group is not None:
            watch.poll(logs=False)
            _check_group(watch, group)
        result = follow_run(
            clients,
            arn,
            out.console,
            poll_seconds=poll_interval,
            log_grace=log_grace,
            json_out=out.stdout if json_flag else None,
            logs_only=True,
            group=group,
        )
        return EXIT_SUCCEEDED if result.exit_code != EXIT_INTERRUPTED else result.exit_code
    update = watch.poll()
    if group is not None:
        _check_group(watch, group)
    display = FollowDisplay(
        out.console, json_out=out.stdout if json_flag else None, logs_only=True, group=group
    )
    display.show(update, watch)
    display.flush()
    for job in watch.jobs:
        groups = watch.host_groups(job.name)
        if groups is not None and groups.counts and groups.unknown_hosts:
            hosts = ", ".join(sorted(groups.unknown_hosts, key=host_number))
            out.note(
                f"{job.name}: the instance group of {hosts} is not known (its log does not "
                "say)" + ("; their lines are left out by --group" if group else "")
            )
    if not watch.jobs:
        out.note(f"{watch.execution.name if watch.execution else run_id} has no training job yet.")
    return EXIT_SUCCEEDED


def _check_group(watch: RunWatch, group: str) -> None:
    """``--group`` names a group of the run's jobs (checked once jobs exist: a misspelled group
    would show nothing, following or not)."""
    known = {g for job in watch.jobs for g in job.instance_groups}
    if known and group not in known:
        raise CliError(
            f"The run's jobs have no instance group {group!r}. Allowed: "
            f"{', '.join(sorted(known))}. Fix: pass one of them to --group."
        )


@cli.command()
@click.argument("run_id", metavar="RUN")
@json_option
@aws_options
@handles_errors
def stop(
    run_id: str, json_flag: bool, profile: str | None, region: str | None, endpoint_url: str | None
) -> int:
    """Stop a run: its execution, and its training jobs still in progress."""
    out = command_output(json_flag)
    clients = aws_from(profile, region, endpoint_url).run_clients()
    arn = resolve_execution(run_id, stepfunctions=clients.stepfunctions)
    user = _user()
    outcome = TrainingRun(arn, clients=clients).stop(
        cause=f"Stopped with hetero-train stop by {user}"
    )
    if json_flag:
        out.emit_json(
            {
                "executionArn": arn,
                "stoppedExecution": outcome.stopped_execution,
                "status": outcome.execution_status,
                "stoppedTrainingJobs": outcome.stopped_jobs,
                "notes": outcome.notes,
            }
        )
        return EXIT_SUCCEEDED
    if outcome.stopped_execution:
        out.console.print(
            Text.assemble("Stopped ", (arn, "bold"), f" ({outcome.execution_status})")
        )
    else:
        out.console.print(f"{arn} had already ended ({outcome.execution_status}); nothing to stop.")
    for job_name in outcome.stopped_jobs:
        out.console.print(f"Stopping training job {job_name}")
    for note in outcome.notes:
        out.note(note)
    return EXIT_SUCCEEDED


@cli.command()
@click.argument("run_id", metavar="RUN")
@click.option("--follow", is_flag=True, help="follow the redriven run to its end, as run does")
@click.option(
    "--force", is_flag=True, help="redrive a run that failed in a Fail state all the same"
)
@poll_option
@log_grace_option
@json_option
@aws_options
@handles_errors
def redrive(
    run_id: str,
    follow: bool,
    force: bool,
    poll_interval: float,
    log_grace: float,
    json_flag: bool,
    profile: str | None,
    region: str | None,
    endpoint_url: str | None,
) -> int:
    """Redrive a run that ended FAILED, ABORTED or TIMED_OUT: it goes on from the state it did
    not get through, under the same ARN; a training task there starts a fresh attempt with a new
    job name. A running or succeeded run is refused (ExecutionNotRedrivable); one that failed in
    a Fail state (after a caught error) would fail again at once: it is refused with what to
    run instead, unless --force."""
    out = command_output(json_flag)
    clients = aws_from(profile, region, endpoint_url).run_clients()
    arn = resolve_execution(run_id, stepfunctions=clients.stepfunctions)
    try:
        outcome = TrainingRun(arn, clients=clients).redrive(force=force)
    except RedriveWouldFail as dead_end:
        raise CliError(str(dead_end), "RedriveWouldFail") from None
    if follow:
        return follow_run(
            clients,
            arn,
            out.console,
            poll_seconds=poll_interval,
            log_grace=log_grace,
            json_out=out.stdout if json_flag else None,
        ).exit_code
    if json_flag:
        out.emit_json(
            {
                "executionArn": arn,
                "redriveDate": outcome.redrive_date,
                "redriveCount": outcome.redrive_count,
                "status": outcome.status,
            }
        )
        return EXIT_SUCCEEDED
    out.console.print(
        Text.assemble("Redriven ", (arn, "bold"), f" (redrive {outcome.redrive_count})")
    )
    out.console.print(f"Follow it with: hetero-train logs {arn} --follow")
    return EXIT_SUCCEEDED


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "a user"


@cli.command(name="list")
@click.argument("target", nargs=-1, required=True)
@click.option(
    "--max",
    "max_items",
    type=click.IntRange(1, 1000),
    default=20,
    show_default=True,
    help="how many recent executions",
)
@json_option
@aws_options
@handles_errors
def list_runs(
    target: tuple[str, ...],
    max_items: int,
    json_flag: bool,
    profile: str | None,
    region: str | None,
    endpoint_url: str | None,
) -> int:
    """List recent runs of TARGET: name, status, duration and training job."""
    out = command_output(json_flag)
    aws = aws_from(profile, region, endpoint_url)
    session = aws.session()
    stepfunctions = aws.client("stepfunctions", session)
    sagemaker = aws.client("sagemaker", session)
    machine = resolve_state_machine(
        target, stepfunctions=stepfunctions, cloudformation=aws.client("cloudformation", session)
    )
    summaries: list[dict[str, Any]] = []
    paginator = stepfunctions.get_paginator("list_executions")
    for page in paginator.paginate(
        stateMachineArn=machine.arn, PaginationConfig={"MaxItems": max_items}
    ):
        summaries.extend(page["executions"])
    summaries = summaries[:max_items]
    finder = JobFinder(sagemaker)
    starts = [s["startDate"] for s in summaries if s.get("startDate")]
    if starts:
        finder.search(min(starts))
    now = utc_now()
    runs: list[dict[str, Any]] = []
    for item in summaries:
        execution = describe_execution(stepfunctions, item["executionArn"])
        jobs = merge_jobs(finder.jobs_of(execution.arn), execution.job_reports())
        runs.append(
            {
                "name": execution.name,
                "executionArn": execution.arn,
                "status": execution.status,
                "startDate": execution.start,
                "stopDate": execution.stop,
                "durationSeconds": execution.duration(now),
                "trainingJobNames": [job.name for job in jobs],
            }
        )
    if json_flag:
        out.emit_json({"stateMachineArn": machine.arn, "runs": runs})
        return EXIT_SUCCEEDED
    if not runs:
        out.console.print(f"{machine.name} has no runs yet.")
        return EXIT_SUCCEEDED
    rows = [
        [
            str(r["name"]),
            str(r["status"]),
            date_text(r["startDate"]),
            duration_text(r["durationSeconds"]),
            ", ".join(r["trainingJobNames"]) or "-",
        ]
        for r in runs
    ]
    out.show(out.table(["run", "status", "started", "duration", "training job"], rows))
    return EXIT_SUCCEEDED


__all__ = [
    "list_runs",
    "logs",
    "redrive",
    "status",
    "stop",
]
