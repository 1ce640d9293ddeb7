"""The ``hetero-train`` command line: its entry point, with every command registered.

The group and the options its commands share are ``group``; the commands are ``spec_commands``
(plan, rules), ``run_command`` (run), ``observe`` (status, logs, stop, list) and
``metrics_command`` (metrics).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

import click

# Importing the command modules registers their commands on the group.
from hetero_constructs.cli import (  # noqa: F401
    metrics_command,
    observe,
    run_command,
    serve,
    spec_commands,
    steer,
)
from hetero_constructs.cli.follow import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_SUCCEEDED
from hetero_constructs.cli.group import Invocation, cli
from hetero_constructs.cli.output import error_record


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """The ``hetero-train`` entry point; returns the exit code."""
    args = list(argv) if argv is not None else sys.argv[1:]
    # --json anywhere: errors, usage errors included, are one JSON object on standard error.
    as_json = "--json" in args
    try:
        result = cli.main(
            args=args,
            prog_name="hetero-train",
            standalone_mode=False,
            obj=Invocation(stdout=out),
        )
    except click.exceptions.Exit as done:
        return int(done.exit_code or 0)
    except click.ClickException as error:
        if as_json:
            name = type(error).__name__  # UsageError, BadParameter, NoSuchOption, ...
            click.echo(error_record(name, error.format_message()), err=True)
        else:
            error.show()
        return int(error.exit_code)
    except click.Abort as abort:
        # Ctrl-C (click turns it into Abort) exits as an interrupted process does; EOF at a
        # prompt is a failure.
        interrupted = isinstance(abort.__cause__ or abort.__context__, KeyboardInterrupt)
        if as_json:
            click.echo(
                error_record("Interrupted" if interrupted else "Aborted", "Aborted."), err=True
            )
        else:
            click.echo("Aborted.", err=True)
        return EXIT_INTERRUPTED if interrupted else EXIT_FAILED
    return int(result) if isinstance(result, int) else EXIT_SUCCEEDED


__all__ = ["cli", "main"]
