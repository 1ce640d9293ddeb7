"""The ``hetero-train`` command line: plan a job, and start, follow, inspect and stop runs."""

from __future__ import annotations

import functools
import getpass
import json
import secrets
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TextIO, TypeVar

import click
from rich.text import Text

from hetero_constructs.cli.aws import AWS_ERRORS, AwsOptions, RunClients, describe_aws_error
from hetero_constructs.cli.follow import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_SUCCEEDED,
    FollowDisplay,
    RunWatch,
    follow_run,
    stop_run,
)
from hetero_constructs.cli.inputs import (
    check_input,
    checked_tasks,
    find_submit_tasks,
    read_input,
)
from hetero_constructs.cli.logs import host_number
from hetero_constructs.cli.output import (
    CliError,
    Output,
    date_text,
    duration_text,
    print_violations,
)
from hetero_constructs.cli.plan import plan_spec_file
from hetero_constructs.cli.runs import (
    ENDED_EXECUTION_STATUSES,
    JobFinder,
    describe_execution,
    merge_jobs,
    read_run,
    run_summary,
    utc_now,
)
from hetero_constructs.cli.targets import resolve_execution, resolve_state_machine

F = TypeVar("F", bound=Callable[..., Any])


def _package_version() -> str:
    try:
        return version("hetero-constructs")
    except PackageNotFoundError:  # a checkout on PYTHONPATH, not installed
        return "unknown"


@dataclass
class Invocation:
    """Where this invocation writes (tests pass their own stream)."""

    stdout: TextIO | None = None


def _output(json_flag: bool) -> Output:
    invocation = click.get_current_context().find_object(Invocation)
    stdout = invocation.stdout if invocation and invocation.stdout else sys.stdout
    return Output(stdout=stdout, json=json_flag)


def json_option(function: F) -> F:
    return click.option("--json", "json_flag", is_flag=True, help="machine-readable output")(
        function
    )


def aws_options(function: F) -> F:
    """``--profile``, ``--region``, ``--endpoint-url``: the standard chain fills what is unset."""
    function = click.option(
        "--endpoint-url",
        envvar="HETERO_TRAIN_ENDPOINT_URL",
        help="send every AWS call here (e.g. a moto server); default: AWS",
    )(function)
    function = click.option("--region", help="AWS region (default: AWS_REGION, the profile)")(
        function
    )
    function = click.option("--profile", help="AWS profile (default: AWS_PROFILE)")(function)
    return function


def poll_option(function: F) -> F:
    return click.option(
        "--poll-interval",
        type=click.FloatRange(min=0.0),
        default=5.0,
        show_default=True,
        envvar="HETERO_TRAIN_POLL_INTERVAL",
        help="seconds between reads while following",
    )(function)


def _aws(profile: str | None, region: str | None, endpoint_url: str | None) -> AwsOptions:
    return AwsOptions(profile=profile, region=region, endpoint_url=endpoint_url)


def handles_errors(function: Callable[..., int]) -> Callable[..., int]:
    """AWS errors and ``CliError``s become one message on standard error and exit 1."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> int:
        try:
            return function(*args, **kwargs)
        except CliError as error:
            click.echo(f"error: {error}", err=True)
            return EXIT_FAILED
        except AWS_ERRORS as error:
            click.echo(f"error: {describe_aws_error(error)}", err=True)
            return EXIT_FAILED

    return wrapper


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(_package_version(), prog_name="hetero-train", message="%(prog)s %(version)s")
def cli() -> None:
    """Plan SageMaker heterogeneous-cluster training jobs, and start, follow, inspect and stop
    the training runs of deployed hetero-constructs stacks.

    TARGET is a state machine ARN or name, or STACK/CONSTRUCT_ID (also STACK CONSTRUCT_ID).
    RUN is an execution ARN or name. Exit codes: 0 success, 1 failure (a run that did not
    succeed, violations, AWS errors), 2 usage, 130 stopped following with Ctrl-C.
    """


# -- plan --------------------------------------------------------------------------------------


@cli.command()
@click.argument("spec")
@json_option
@click.option("--region", help="AWS region (default: spec, AWS_REGION, profile, us-east-1)")
@click.option("--role", help="execution role ARN (default: spec, else a stated placeholder)")
@click.option("--job-name", help="training job name (default: base name + time)")
def plan(
    spec: str, json_flag: bool, region: str | None, role: str | None, job_name: str | None
) -> int:
    """Print the CreateTrainingJob request of SPEC (JSON or YAML), or every violation (exit 1)."""
    out = _output(json_flag)
    result = plan_spec_file(spec, region=region, role=role, job_name=job_name)
    defaults = {key: value.to_dict() for key, value in result.defaults.items()}
    acknowledged = [
        {**violation.to_dict(), "reason": reason}
        for violation, reason in (result.plan.acknowledged if result.plan else ())
    ]
    if result.request is not None:
        if json_flag:
            out.emit_json(
                {
                    "request": result.request,
                    **({"defaults": defaults} if defaults else {}),
                    **({"acknowledged": acknowledged} if acknowledged else {}),
                }
            )
        else:
            out.emit_json(result.request)
            for key, value in result.defaults.items():
                out.note(f"{key} {value.value} ({value.source})")
            for item in acknowledged:
                out.note(f"acknowledged warning [{item['rule']}] {item['path']}: {item['reason']}")
        return EXIT_SUCCEEDED
    if json_flag:
        out.emit_json({"violations": [v.to_dict() for v in result.violations]})
    else:
        print_violations(result.violations, spec, out.stdout)
    return EXIT_FAILED


# -- rules -------------------------------------------------------------------------------------


@cli.command()
@json_option
def rules(json_flag: bool) -> int:
    """Print the rule catalogue (the text of docs/rules.md)."""
    from hetero_constructs.checks.construct_rules import CONSTRUCT_RULES
    from hetero_constructs.checks.docs import render
    from hetero_constructs.checks.registry import RULES
    from hetero_constructs.run.overrides import OVERRIDE_RULES
    from hetero_constructs.spec.file.rules import SPEC_FILE_RULES

    out = _output(json_flag)
    if not json_flag:
        out.stdout.write(render())
        return EXIT_SUCCEEDED
    catalogue = [
        {"id": rule_id, "topic": "spec-file", "title": text, "source": source}
        for rule_id, text, source in SPEC_FILE_RULES
    ]
    catalogue += [
        {"id": rule_id, "topic": "execution-input", "title": text, "source": "this library"}
        for rule_id, text in OVERRIDE_RULES
    ]
    catalogue += [
        {"id": rule_id, "topic": "construct", "title": text, "source": source}
        for rule_id, text, source in CONSTRUCT_RULES
    ]
    catalogue += [
        {
            "id": item.id,
            "topic": item.topic,
            "title": item.title,
            "severity": item.severity,
            "details": item.details,
            "source": item.source,
            "example": item.example,
        }
        for item in RULES
    ]
    out.emit_json({"rules": catalogue})
    return EXIT_SUCCEEDED


# -- run ---------------------------------------------------------------------------------------


def _execution_name_limit(stepfunctions: Any) -> int:
    """StartExecution's limit on the name, from the client's service model."""
    operation = stepfunctions.meta.service_model.operation_model("StartExecution")
    return int(operation.input_shape.members["name"].metadata["max"])


def _new_execution_name(now: datetime) -> str:
    return f"hetero-train-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


@cli.command()
@click.argument("target", nargs=-1, required=True)
@click.option("--input", "input_text", help="execution input: JSON, or @file with JSON")
@click.option("--name", help="execution name (default: hetero-train-<time>-<random>)")
@click.option(
    "--follow/--no-follow",
    default=None,
    help="follow the run until it ends (default: on a terminal)",
)
@click.option(
    "--local",
    "local",
    is_flag=True,
    help="TARGET is a synthesized template: run it in the local runner (moto, no account)",
)
@click.option("--state-machine", help="with --local: the state machine's name or logical id")
@click.option(
    "--outcome",
    "outcomes",
    multiple=True,
    help="with --local: how each training job ends, in order (Completed, Failed[:REASON], "
    "Stopped[:STATUS], ResourceLimitExceeded)",
)
@click.option(
    "--expect",
    default="SUCCEEDED",
    type=click.Choice(sorted(ENDED_EXECUTION_STATUSES), case_sensitive=False),
    callback=lambda _context, _param, value: value.upper(),
    help="with --local: the execution status that exits 0 (default SUCCEEDED)",
)
@click.option(
    "--reconcile-every",
    type=click.FloatRange(min=0.0, min_open=True),
    metavar="SECONDS",
    help="with --local: fire the template's scheduled rules every SECONDS (they also fire "
    "when the execution is stuck)",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.0, min_open=True),
    default=120.0,
    show_default=True,
    help="with --local: seconds the local run may take",
)
@json_option
@poll_option
@aws_options
@handles_errors
def run(
    target: tuple[str, ...],
    input_text: str | None,
    name: str | None,
    follow: bool | None,
    local: bool,
    state_machine: str | None,
    outcomes: tuple[str, ...],
    expect: str,
    reconcile_every: float | None,
    timeout: float,
    json_flag: bool,
    poll_interval: float,
    profile: str | None,
    region: str | None,
    endpoint_url: str | None,
) -> int:
    """Start a training run of TARGET, validated locally first; with --follow, show it to
    its end (exit 0 only when it succeeds). With --local, TARGET is a synthesized template
    and the run happens in the local runner, shown the same way, then each job's exact
    CreateTrainingJob request."""
    out = _output(json_flag)
    if local:
        from hetero_constructs.cli.local_run import run_local  # needs the local extra (moto)

        (template,) = target
        return run_local(
            out,
            template,
            input_text=input_text,
            name=name or _new_execution_name(datetime.now(UTC)),
            follow=follow,
            state_machine=state_machine,
            outcomes=outcomes,
            expect=expect,
            reconcile_every=reconcile_every,
            timeout=timeout,
            region=region,
        )
    aws = _aws(profile, region, endpoint_url)
    execution_input = read_input(input_text)
    name = name or _new_execution_name(datetime.now(UTC))
    session = aws.session()
    stepfunctions = aws.client("stepfunctions", session)
    limit = _execution_name_limit(stepfunctions)
    if len(name) > limit:
        raise CliError(
            f"The execution name has {len(name)} characters. Given: {name!r}. Allowed: 1 to "
            f"{limit} characters (letters, digits, - and _). Fix: pass a shorter --name."
        )
    machine = resolve_state_machine(
        target, stepfunctions=stepfunctions, cloudformation=aws.client("cloudformation", session)
    )
    described = stepfunctions.describe_state_machine(stateMachineArn=machine.arn)
    tasks = find_submit_tasks(json.loads(described["definition"]))
    checks = [check_input(task, execution_input, name) for task in checked_tasks(out, tasks)]
    bad = [check for check in checks if check.violations]
    if bad:
        violations = [v for check in bad for v in check.violations]
        if json_flag:
            out.emit_json({"started": False, "violations": [v.to_dict() for v in violations]})
        else:
            print_violations(violations, "the execution input (nothing was started)", out.stdout)
        return EXIT_FAILED
    if not tasks:
        out.note(
            f"{machine.name} has no hetero-constructs training task in its definition: the "
            "input was not validated locally."
        )
    started = stepfunctions.start_execution(
        stateMachineArn=machine.arn, name=name, input=json.dumps(execution_input)
    )
    execution_arn = started["executionArn"]
    # Each attempt's name ends with a digest of the execution's start and the state's entry.
    planned_jobs = [f"{check.job_name.rsplit('-', 1)[0]}-*" for check in checks if check.job_name]
    if follow is None:
        follow = out.is_terminal and not json_flag
    if not follow:
        if json_flag:
            out.emit_json(
                {
                    "started": True,
                    "executionArn": execution_arn,
                    "name": name,
                    "stateMachineArn": machine.arn,
                    "startDate": started.get("startDate"),
                    "validated": bool(checks),
                    "trainingJobNamePatterns": planned_jobs,
                }
            )
        else:
            out.console.print(Text.assemble("Started ", (execution_arn, "bold")))
            for job_name in planned_jobs:
                out.console.print(f"training jobs: {job_name}")
            out.console.print(
                f"Follow it with: hetero-train logs {execution_arn} --follow "
                f"(or hetero-train status {execution_arn})"
            )
        return EXIT_SUCCEEDED
    try:
        result = follow_run(
            RunClients(
                stepfunctions, aws.client("sagemaker", session), aws.client("logs", session)
            ),
            execution_arn,
            out.console,
            poll_seconds=poll_interval,
            json_out=out.stdout if json_flag else None,
        )
    except KeyboardInterrupt:
        # Outside the follow loop (which asks what to do): before following began, or during a
        # stop. The run may go on, and its ARN is the only handle on it.
        click.echo(
            f"Interrupted; the run may go on: {execution_arn} "
            f"(hetero-train status {execution_arn})",
            err=True,
        )
        return EXIT_INTERRUPTED
    return result.exit_code


# -- status, logs, stop, list -----------------------------------------------------------------


@cli.command()
@click.argument("run_id", metavar="RUN")
@json_option
@aws_options
@handles_errors
def status(
    run_id: str, json_flag: bool, profile: str | None, region: str | None, endpoint_url: str | None
) -> int:
    """Show a run: its execution, its training jobs, their statuses and the failure reason."""
    out = _output(json_flag)
    clients = _aws(profile, region, endpoint_url).run_clients()
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
        rows.append([label, job.name])
        rows.append(["  status", f"{job.status} / {job.secondary_status}"])
        if job.transitions:
            last = job.transitions[-1]
            rows.append(
                ["  last transition", f"{last.get('Status')}: {last.get('StatusMessage') or ''}"]
            )
        rows.append(["  billable time", duration_text(job.billable_seconds(now))])
        if job.model_artifacts:
            rows.append(["  model artifacts", job.model_artifacts])
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
@aws_options
@handles_errors
def logs(
    run_id: str,
    group: str | None,
    follow: bool,
    json_flag: bool,
    poll_interval: float,
    profile: str | None,
    region: str | None,
    endpoint_url: str | None,
) -> int:
    """Print the log lines of every host of the run's training jobs, in time order, each
    labelled with its host and instance group (JSON Lines with --json)."""
    out = _output(json_flag)
    clients = _aws(profile, region, endpoint_url).run_clients()
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
    out = _output(json_flag)
    clients = _aws(profile, region, endpoint_url).run_clients()
    arn = resolve_execution(run_id, stepfunctions=clients.stepfunctions)
    user = _user()
    outcome = stop_run(clients, arn, cause=f"Stopped with hetero-train stop by {user}")
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
    out = _output(json_flag)
    aws = _aws(profile, region, endpoint_url)
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


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """The ``hetero-train`` entry point; returns the exit code."""
    try:
        result = cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="hetero-train",
            standalone_mode=False,
            obj=Invocation(stdout=out),
        )
    except click.exceptions.Exit as done:
        return int(done.exit_code or 0)
    except click.ClickException as error:
        error.show()
        return int(error.exit_code)
    except click.Abort as abort:
        click.echo("Aborted.", err=True)
        # Ctrl-C (click turns it into Abort) exits as an interrupted process does; EOF at a
        # prompt is a failure.
        interrupted = isinstance(abort.__cause__ or abort.__context__, KeyboardInterrupt)
        return EXIT_INTERRUPTED if interrupted else EXIT_FAILED
    return int(result) if isinstance(result, int) else EXIT_SUCCEEDED
