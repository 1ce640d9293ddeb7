"""``hetero-train metrics RUN``: each metric of a run over time, and a chart in a terminal."""

from __future__ import annotations

from typing import Any

import click
from rich.text import Text

from hetero_constructs.cli.follow import EXIT_SUCCEEDED
from hetero_constructs.cli.group import (
    aws_from,
    aws_options,
    cli,
    command_output,
    handles_errors,
    json_option,
)
from hetero_constructs.cli.metrics import chart, value_text
from hetero_constructs.cli.output import CliError, clock_text
from hetero_constructs.cli.targets import resolve_execution
from hetero_constructs.runs.execution import read_run
from hetero_constructs.runs.metrics import DEFAULT_PERIOD_SECONDS, job_groups, read_series


@cli.command()
@click.argument("run_id", metavar="RUN")
@click.option("--group", help="only this instance group's built-in metrics (and the spec's)")
@click.option(
    "--period",
    type=click.IntRange(1, 86400),
    default=DEFAULT_PERIOD_SECONDS,
    show_default=True,
    help="seconds per value",
)
@json_option
@aws_options
@handles_errors
def metrics(
    run_id: str,
    group: str | None,
    period: int,
    json_flag: bool,
    profile: str | None,
    region: str | None,
    endpoint_url: str | None,
) -> int:
    """Print each metric of the run's training jobs over time (the spec's metric definitions
    and the built-in samples/s and data wait per instance group), with its final value; in a
    terminal, draw each as a chart."""
    out = command_output(json_flag)
    aws = aws_from(profile, region, endpoint_url)
    session = aws.session()
    stepfunctions = aws.client("stepfunctions", session)
    arn = resolve_execution(run_id, stepfunctions=stepfunctions)
    execution, jobs = read_run(stepfunctions, aws.client("sagemaker", session), arn)
    if group is not None:
        known = {g for job in jobs for g in job_groups(job)}
        if known and group not in known:
            raise CliError(
                f"The run's jobs have no instance group {group!r}. Allowed: "
                f"{', '.join(sorted(known))}. Fix: pass one of them to --group."
            )
    cloudwatch = aws.client("cloudwatch", session)
    report: list[dict[str, Any]] = []
    for job in jobs:
        series = read_series(cloudwatch, job, group=group, period=period)
        report.append({"name": job.name, "status": job.status, "metrics": series})
    if json_flag:
        out.emit_json(
            {
                "executionArn": arn,
                "status": execution.status,
                "jobs": [
                    {**entry, "metrics": [s.to_dict() for s in entry["metrics"]]}
                    for entry in report
                ],
            }
        )
        return EXIT_SUCCEEDED
    if not jobs:
        out.note(f"{execution.name} has no training job yet.")
    for entry in report:
        out.console.print(f"{entry['name']} ({entry['status']})", markup=False)
        if not entry["metrics"]:
            out.note(f"{entry['name']} has no metric definitions and no final metrics.")
        for item in entry["metrics"]:
            final = f", final {value_text(item.final)}" if item.final is not None else ""
            out.console.print(
                f"  {item.name}: {len(item.points)} values, latest {value_text(item.latest)}"
                f"{final}",
                markup=False,
            )
            if out.is_terminal and item.points:
                out.console.print(Text.from_ansi(chart(item)))
            else:
                for point in item.points:
                    out.console.print(
                        f"    {clock_text(point.timestamp)}  {value_text(point.value)}",
                        markup=False,
                    )
    return EXIT_SUCCEEDED


__all__ = ["metrics"]
