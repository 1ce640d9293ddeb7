"""``hetero-train local deploy / script / interrupt``: steering a running served account.

Each command talks to the account ``hetero-train local serve`` serves, through its control
channel on the same port (``hetero_constructs.local.steering``), at ``--endpoint-url`` (else
``HETERO_TRAIN_ENDPOINT_URL``, else ``AWS_ENDPOINT_URL``: the variable its AWS clients use).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hetero_constructs.cli.follow import EXIT_SUCCEEDED
from hetero_constructs.cli.group import command_output, handles_errors, json_option
from hetero_constructs.cli.output import CliError, Output
from hetero_constructs.cli.serve import local, local_extra_missing
from hetero_constructs.cli.simulation import parse_outcomes
from hetero_constructs.cli.targets import EXIT_USAGE

if TYPE_CHECKING:
    from hetero_constructs.local.steering import Script, ServedAccount

F = TypeVar("F", bound=Callable[..., Any])


def endpoint_option(function: F) -> F:
    return click.option(
        "--endpoint-url",
        envvar="HETERO_TRAIN_ENDPOINT_URL",
        metavar="URL",
        help="the served account (the URL `local serve` printed); default: AWS_ENDPOINT_URL",
    )(function)


@contextmanager
def _served(endpoint_url: str | None) -> Iterator[ServedAccount]:
    """The served account; its refusals as ``CliError`` (a name that matches nothing: 2)."""
    try:
        from hetero_constructs.local.steering import ServedAccount, SteeringError
    except ImportError as error:  # moto comes with the local extra
        raise local_extra_missing(error) from None
    try:
        yield ServedAccount(endpoint_url or os.environ.get("AWS_ENDPOINT_URL"))
    except SteeringError as error:
        code = EXIT_USAGE if error.name == "NotFound" else 1
        raise CliError(str(error), error.name, exit_code=code) from None


@local.command(short_help="Deploy new or changed stacks into the served account, runs kept.")
@click.argument("templates", nargs=-1, required=True, metavar="TEMPLATE...")
@endpoint_option
@json_option
@handles_errors
def deploy(templates: tuple[str, ...], endpoint_url: str | None, json_flag: bool) -> int:
    """Deploy new or changed stacks (cdk.out/STACK.template.json) into the running served
    account, keeping every run: assets are published into its S3, a changed stack is updated
    in place (state machines, functions, rules, ...), running jobs and executions go on."""
    from hetero_constructs.local.run import template_problem

    for template in templates:
        problem = template_problem(template)
        if problem is not None:
            raise CliError(problem, "InvalidTemplate")
    out = command_output(json_flag)
    with _served(endpoint_url) as account:
        deployed = account.deploy(templates)
    if json_flag:
        records = [{**d.change.to_json(), "stateMachines": d.state_machines} for d in deployed]
        out.emit_json({"stacks": records})
        return EXIT_SUCCEEDED
    for stack in deployed:
        for line in stack.change.lines():
            out.console.print(line, markup=False, highlight=False)
        machines = ", ".join(stack.state_machines) or "none"
        out.console.print(f"  state machines: {machines}", markup=False, highlight=False)
    return EXIT_SUCCEEDED


@local.command(short_help="Script drills for the served account's next training-job attempts.")
@click.argument("outcomes", nargs=-1, metavar="[OUTCOME...]")
@click.option("--clear", is_flag=True, help="drop what is scripted")
@click.option(
    "--job-duration",
    type=click.FloatRange(min=0.0),
    metavar="SECONDS",
    help="from now on, how long each drill runs (default: as it was, first `local serve`'s "
    "--job-duration)",
)
@endpoint_option
@json_option
@handles_errors
def script(
    outcomes: tuple[str, ...],
    clear: bool,
    job_duration: float | None,
    endpoint_url: str | None,
    json_flag: bool,
) -> int:
    """Script how the next training-job attempts of the running served account end, in
    creation order, as drills (no code runs; each shows as simulated): OUTCOME is Completed,
    Failed[:REASON], Stopped[:STATUS] or ResourceLimitExceeded, e.g.
    'Failed:CapacityError: Unable to provision requested ML compute capacity.' Completed.
    It replaces what was scripted; later attempts run as the account was started (for real,
    or as its --simulate says). Without OUTCOME: show what is scripted."""
    if clear and outcomes:
        raise click.UsageError("give OUTCOME... or --clear, not both")
    parse_outcomes(outcomes)  # a usage error before anything is sent
    out = command_output(json_flag)
    with _served(endpoint_url) as account:
        if clear:
            scripted = account.clear_script()
        elif outcomes:
            scripted = account.script(outcomes, job_duration=job_duration)
        else:
            scripted = account.scripted()
    _show_script(out, scripted, json_flag)
    return EXIT_SUCCEEDED


def _show_script(out: Output, scripted: Script, json_flag: bool) -> None:
    if json_flag:
        record = {"next": scripted.next, "simulated": True, "then": scripted.then}
        out.emit_json(record)
        return
    for line in scripted.lines():
        out.console.print(line, markup=False, highlight=False)


@local.command(short_help="Interrupt a running job of the served account as a spot reclaim.")
@click.argument("target", metavar="JOB_OR_RUN")
@endpoint_option
@json_option
@handles_errors
def interrupt(target: str, endpoint_url: str | None, json_flag: bool) -> int:
    """Interrupt a running training job of the served account as a spot reclaim does: every
    host killed at once, then the same job restarted on fresh hosts with its checkpoints
    restored (secondary statuses Interrupted, then Starting). JOB_OR_RUN: the job's name or
    ARN, or a run (execution name or ARN) whose current attempt is running. Only a spot job
    (EnableManagedSpotTraining) can be: SageMaker reclaims no on-demand instance. A drill (a
    scripted outcome) runs no host and cannot be interrupted."""
    out = command_output(json_flag)
    with _served(endpoint_url) as account:
        done = account.interrupt(target)
    if json_flag:
        out.emit_json({"job": done.job, "run": done.run})
        return EXIT_SUCCEEDED
    of = f" (run {done.run.rsplit(':', 1)[-1]})" if done.run else ""
    out.console.print(
        f"interrupted training job {done.job}{of} as a spot reclaim: every host killed; it "
        "restarts on fresh hosts, from its checkpoints where it has a checkpoint URI",
        markup=False,
        highlight=False,
    )
    return EXIT_SUCCEEDED


__all__ = ["deploy", "endpoint_option", "interrupt", "script"]
