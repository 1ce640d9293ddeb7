"""``hetero-train run``: start a training run, its input validated locally first, and follow it.

With ``--local`` the target is a synthesized template and the run happens in the local runner
(``local_run``).
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime

import click
from rich.text import Text

from hetero_constructs.cli.aws import RunClients
from hetero_constructs.cli.follow import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_SUCCEEDED, follow_run
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
from hetero_constructs.cli.inputs import read_input
from hetero_constructs.cli.output import (
    CliError,
    print_violations,
)
from hetero_constructs.cli.simulation import simulation_options
from hetero_constructs.cli.targets import resolve_state_machine
from hetero_constructs.runs.execution import (
    ENDED_EXECUTION_STATUSES,
)
from hetero_constructs.runs.training_run import TrainingRun, check_run_input


def _execution_name_limit() -> int:
    """StartExecution's limit on the name, from botocore's service model."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("stepfunctions")
    operation = model.operation_model("StartExecution")
    return int(operation.input_shape.members["name"].metadata["max"])


def _checked_name(name: str) -> str:
    """The execution name, if Step Functions takes its length (a local run too)."""
    limit = _execution_name_limit()
    if len(name) > limit:
        raise CliError(
            f"The execution name has {len(name)} characters. Given: {name!r}. Allowed: 1 to "
            f"{limit} characters (letters, digits, - and _). Fix: pass a shorter --name."
        )
    return name


def _new_execution_name(now: datetime) -> str:
    return f"hetero-train-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


@cli.command()
@click.argument("target", nargs=-1, required=True)
@click.option("--input", "input_text", help="execution input: JSON, or @file with JSON")
@click.option("--name", help="execution name (default: hetero-train-<time>-<random>)")
@click.option(
    "--check/--no-check",
    default=True,
    help="check the input as the training tasks will see it before starting (default: check)",
)
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
    "--upload",
    "uploads",
    multiple=True,
    metavar="SOURCE=S3_URI",
    help="with --local: put a file or folder into the local account's S3 first (a channel's "
    "data; a missing bucket is created); repeatable",
)
@simulation_options(job_duration=0.0, reconcile_every=None, scope="with --local: ")
@click.option(
    "--expect",
    default="SUCCEEDED",
    type=click.Choice(sorted(ENDED_EXECUTION_STATUSES), case_sensitive=False),
    callback=lambda _context, _param, value: value.upper(),
    help="with --local: the execution status that exits 0 (default SUCCEEDED)",
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
@log_grace_option
@aws_options
@handles_errors
def run(
    target: tuple[str, ...],
    input_text: str | None,
    name: str | None,
    check: bool,
    follow: bool | None,
    local: bool,
    state_machine: str | None,
    uploads: tuple[str, ...],
    outcomes: tuple[str, ...],
    simulate: str | None,
    python: str | None,
    expect: str,
    reconcile_every: float | None,
    job_duration: float,
    timeout: float,
    json_flag: bool,
    poll_interval: float,
    log_grace: float,
    profile: str | None,
    region: str | None,
    endpoint_url: str | None,
) -> int:
    """Start a training run of TARGET, validated locally first; with --follow, show it to
    its end (exit 0 only when it succeeds). With --local, TARGET is a synthesized template
    and the run happens in the local runner, shown the same way, then each job's exact
    CreateTrainingJob request."""
    out = command_output(json_flag)
    name = _checked_name(name or _new_execution_name(datetime.now(UTC)))
    if uploads and not local:
        raise click.UsageError("--upload puts files into the local account: use it with --local")
    if local:
        from hetero_constructs.cli.local_run import run_local  # needs the local extra (moto)

        (template,) = target
        return run_local(
            out,
            template,
            input_text=input_text,
            name=name,
            check=check,
            follow=follow,
            state_machine=state_machine,
            uploads=uploads,
            outcomes=outcomes,
            simulate=simulate,
            python=python,
            expect=expect,
            reconcile_every=reconcile_every,
            job_duration=job_duration,
            timeout=timeout,
            region=region,
        )
    aws = aws_from(profile, region, endpoint_url)
    execution_input = read_input(input_text)
    session = aws.session()
    stepfunctions = aws.client("stepfunctions", session)
    machine = resolve_state_machine(
        target, stepfunctions=stepfunctions, cloudformation=aws.client("cloudformation", session)
    )
    described = stepfunctions.describe_state_machine(stateMachineArn=machine.arn)
    report = check_run_input(json.loads(described["definition"]), execution_input, name)
    checks = report.checks if check else []
    for note in report.notes if check else []:
        out.note(note)
    bad = [item for item in checks if item.violations]
    if bad:
        violations = [v for item in bad for v in item.violations]
        if json_flag:
            out.emit_json({"started": False, "violations": [v.to_dict() for v in violations]})
        else:
            print_violations(violations, "the execution input (nothing was started)", out.stdout)
        return EXIT_FAILED
    if not check:
        out.note("--no-check: the input was not checked before starting.")
    elif not report.has_tasks:
        out.note(
            f"{machine.name} has no hetero-constructs training task in its definition: the "
            "input was not validated locally."
        )
    clients = RunClients(
        stepfunctions, aws.client("sagemaker", session), aws.client("logs", session)
    )
    started = TrainingRun.start(
        machine.arn, execution_input, name=name, check=False, clients=clients
    )
    execution_arn = started.arn
    # Each attempt's name ends with a digest of the execution's start and the state's entry.
    planned_jobs = [f"{item.job_name.rsplit('-', 1)[0]}-*" for item in checks if item.job_name]
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
                    "startDate": started.start_date,
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
            clients,
            execution_arn,
            out.console,
            poll_seconds=poll_interval,
            log_grace=log_grace,
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


__all__ = [
    "run",
]
