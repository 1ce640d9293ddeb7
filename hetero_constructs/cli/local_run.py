"""``hetero-train run --local TEMPLATE``: a run in the local runner, checked and shown as on AWS.

The execution input is validated against the deployed definition before anything starts, the
run is shown with ``run --follow``'s display, then each job's exact CreateTrainingJob request
and the execution's end are printed. ``--json``: the JSON Lines of a followed remote run
(ending with its ``summary``), then one ``local-result`` record with each job's request.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from datetime import timedelta

from rich.text import Text

from hetero_constructs.cli.follow import EXIT_FAILED, EXIT_SUCCEEDED, LocalFollow
from hetero_constructs.cli.inputs import read_input
from hetero_constructs.cli.output import CliError, Output, print_violations
from hetero_constructs.cli.simulation import parse_outcomes, parse_simulate
from hetero_constructs.cli.targets import not_found
from hetero_constructs.local.cloud import LocalCloud
from hetero_constructs.local.deploy.assets import AssetError
from hetero_constructs.local.moto_targets import UnsupportedMoto
from hetero_constructs.local.results import ExecutionResult
from hetero_constructs.local.run import template_problem
from hetero_constructs.local.uploads import Upload
from hetero_constructs.runs.clients import RunClients
from hetero_constructs.runs.targets import TargetNotFound
from hetero_constructs.runs.training_run import check_run_input
from hetero_constructs.runs.watch import RunWatch


def run_local(
    out: Output,
    template: str,
    *,
    input_text: str | None,
    name: str,
    check: bool = True,
    follow: bool | None,
    state_machine: str | None,
    outcomes: Sequence[str],
    uploads: Sequence[str] = (),
    expect: str,
    simulate: str | None = None,
    python: str | None = None,
    reconcile_every: float | None,
    timeout: float,
    region: str | None,
    job_duration: float = 0.0,
) -> int:
    """Run ``template`` locally; exit 0 only when the execution ends with status ``expect``."""
    problem = template_problem(template)
    if problem is not None:
        raise CliError(problem)
    execution_input = read_input(input_text)
    parsed = parse_outcomes(outcomes)
    try:
        files = [Upload.parse(text) for text in uploads]
    except ValueError as error:
        raise CliError(f"--upload {error}") from None
    try:
        local = LocalCloud(region, simulate=parse_simulate(simulate), python=python)
    except UnsupportedMoto as error:
        raise CliError(str(error), name="UnsupportedMoto") from None
    with local as cloud:
        try:
            cloud.deploy(template)
        except AssetError as error:
            raise CliError(str(error), "AssetError") from None
        for note in cloud.notes:
            out.note(note)
        for upload in files:
            written = upload.put(cloud.region)
            out.note(
                f"--upload {upload.source}: {len(written)} object(s) under "
                f"s3://{upload.bucket}/{upload.key}"
            )
        try:
            arn = cloud.state_machine(state_machine)
        except TargetNotFound as error:
            raise not_found(error) from None
        except LookupError as error:
            raise CliError(str(error)) from error
        bad = []
        if check:
            checked = check_run_input(cloud.definitions[arn], execution_input, name)
            for note in checked.notes:
                out.note(note)
            bad = checked.violations
        else:
            out.note("--no-check: the input was not checked before starting.")
        if bad:
            if out.json:
                out.emit_json({"started": False, "violations": [v.to_dict() for v in bad]})
            else:
                print_violations(bad, "the execution input (nothing was started)", out.stdout)
            return EXIT_FAILED
        show = follow if follow is not None else True
        display = LocalFollow(out.console, json_out=out.stdout if out.json else None)
        # The in-process handlers' prints must not corrupt the JSON on standard output.
        quiet = contextlib.redirect_stdout(sys.stderr) if out.json else contextlib.nullcontext()
        limit = max(timeout, job_duration * 4 + 30)
        try:
            with quiet:
                result = cloud.run(
                    arn,
                    execution_input,
                    name=name,
                    outcomes=parsed,
                    reconcile_every=reconcile_every,
                    job_duration=timedelta(seconds=job_duration),
                    timeout=limit,
                    follow=display if show else None,
                )
        except TimeoutError as error:  # the local cloud stops every job's hosts as it closes
            raise CliError(
                f"{error}. Fix: give it more time with --timeout SECONDS (now {limit:g}).",
                "Timeout",
            ) from None
        for note in cloud.training.real.notes:
            out.note(note)
        if out.json and not show:
            # Not followed: the summary a followed run ends with, alone.
            watch = RunWatch(RunClients.create(), result.execution_arn, read_history=False)
            watch.poll(logs=False)
            out.emit_json_line({"type": "summary", **watch.summary(), "stoppedFollowing": False})
    if out.json:
        # After the JSON Lines a remote run emits: each job's exact request.
        out.emit_json_line({"type": "local-result", **result.to_json()})
    else:
        if not display.results:
            out.console.print(
                Text(f"{result.status}: {result.error or ''} {result.cause or ''}".strip())
            )
        out.stdout.write("\n" + report(result) + "\n")
    return EXIT_SUCCEEDED if result.status == expect else EXIT_FAILED


def report(result: ExecutionResult) -> str:
    """The human-readable account of a run: every job's exact request and end, then the run's."""
    lines: list[str] = []
    for number, job in enumerate(result.jobs, 1):
        lines.append(f"training job {number}: {job.name}")
        lines.append(f"  instance types: {', '.join(job.instance_types) or '-'}")
        ending = job.status
        if job.failure_reason:
            ending += f" ({job.failure_reason})"
        elif job.secondary_status and job.secondary_status != job.status:
            ending += f" ({job.secondary_status})"
        if job.simulated:
            ending += " - simulated: scripted, no code ran"
        lines.append(f"  outcome: {ending}")
        lines.append("  submitted CreateTrainingJob request:")
        lines.extend("  " + line for line in json.dumps(job.request, indent=2).splitlines())
    lines.append(f"execution status: {result.status}")
    if result.error or result.cause:
        lines.append(f"error: {result.error}")
        lines.append(f"cause: {result.cause}")
    else:
        lines.append(f"output: {json.dumps(result.output)}")
    lines.append(f"history events: {len(result.history)}")
    return "\n".join(lines)


__all__ = ["report", "run_local"]
