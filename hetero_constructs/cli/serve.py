"""``hetero-train local serve TEMPLATE...``: a local AWS account to run the stacks against.

The synthesized stacks are deployed into moto, served on ``http://127.0.0.1:PORT`` only, with
their Lambdas run in-process and each training job's code run on this machine (or ended as a
drill scripts it), ``hetero_constructs.local.account``, until Ctrl-C or SIGTERM. Point
``AWS_ENDPOINT_URL`` at it and ``hetero-train run / status / logs / stop / list`` (or any boto3
code) work as against AWS; ``local deploy / script / interrupt`` (``steer``) change it while it
runs.
"""

from __future__ import annotations

import contextlib
import errno
import signal
import threading
from collections.abc import Iterator
from datetime import timedelta
from types import FrameType

import click

from hetero_constructs.cli.follow import EXIT_SUCCEEDED
from hetero_constructs.cli.group import cli, command_output, handles_errors
from hetero_constructs.cli.output import CliError
from hetero_constructs.cli.simulation import (
    parse_outcomes,
    parse_simulate,
    simulation_options,
)


def local_extra_missing(error: ImportError) -> CliError:
    """What to install when the local account's packages (moto, its server) are missing."""
    return CliError(
        f"The local account needs the local extra ({error}). Fix: pip install "
        "'hetero-constructs[local]'."
    )


@cli.group()
def local() -> None:
    """A local AWS account: synthesized stacks served by moto on 127.0.0.1, no AWS account."""


@local.command(short_help="Serve synthesized stacks as a local account until Ctrl-C.")
@click.argument("templates", nargs=-1, required=True, metavar="TEMPLATE...")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=5055,
    show_default=True,
    help="the port on 127.0.0.1 (only) to serve on; 0: a free one",
)
@click.option("--region", help="the account's region (default: the first template's)")
@click.option(
    "--upload",
    "uploads",
    multiple=True,
    metavar="SOURCE=S3_URI",
    help="put a file or folder into the account's S3 once deployed (a channel's data; a "
    "missing bucket is created); repeatable",
)
@click.option(
    "-v", "--verbose", is_flag=True, help="also show what the deployment could not simulate"
)
@simulation_options(job_duration=20.0, reconcile_every=300.0)
@handles_errors
def serve(
    templates: tuple[str, ...],
    port: int,
    region: str | None,
    uploads: tuple[str, ...],
    verbose: bool,
    outcomes: tuple[str, ...],
    simulate: str | None,
    python: str | None,
    job_duration: float,
    reconcile_every: float,
) -> int:
    """Deploy TEMPLATE... (cdk.out/STACK.template.json) into a local account on
    http://127.0.0.1:PORT and serve it until Ctrl-C or SIGTERM. While it serves, `local
    deploy` deploys new or changed stacks into it, `local script` scripts drills for the next
    attempts and `local interrupt` interrupts a running job as a spot reclaim."""
    try:
        import flask  # noqa: F401  (moto's server application, which serves it, runs on Flask)

        from hetero_constructs.local.account import LocalAccount
        from hetero_constructs.local.deploy.assets import AssetError
        from hetero_constructs.local.moto_targets import UnsupportedMoto
        from hetero_constructs.local.run import template_problem
        from hetero_constructs.local.uploads import Upload
    except ImportError as error:  # moto comes with the local extra
        raise local_extra_missing(error) from None

    out = command_output(False)
    for template in templates:
        problem = template_problem(template)
        if problem is not None:
            raise CliError(problem)
    parsed = parse_outcomes(outcomes)
    try:
        files = [Upload.parse(text) for text in uploads]
    except ValueError as error:
        raise CliError(f"--upload {error}") from None
    try:
        account = LocalAccount(
            templates,
            port=port,
            region=region,
            outcomes=parsed,
            job_duration=timedelta(seconds=job_duration),
            reconcile_every=reconcile_every,
            simulate=parse_simulate(simulate),
            python=python,
        )
    except UnsupportedMoto as error:
        raise CliError(str(error), name="UnsupportedMoto") from None
    try:
        account.__enter__()
    except AssetError as error:
        raise CliError(str(error), "AssetError") from None
    except ValueError as error:  # a state machine definition moto refuses
        raise CliError(str(error), "InvalidTemplate") from None
    except OSError as error:
        if error.errno not in (errno.EADDRINUSE, errno.EACCES):
            raise CliError(f"The local account could not start: {error}", "StartFailed") from None
        raise CliError(
            f"The local account cannot listen on 127.0.0.1:{port} ({error.strerror or error})."
            " Fix: pass --port 0 (a free port, printed on start), another --port, or stop what "
            "uses it.",
            "PortInUse",
        ) from None
    stop = threading.Event()
    try:
        # Notes of what the deployment could not simulate: nothing a user acts on at each start.
        for note in account.notes if verbose else []:
            out.note(note)
        for stack, machines in account.stacks.items():
            out.console.print(f"stack {stack}: " + (", ".join(machines) or "no state machine"))
        for upload in files:
            written = upload.put(account.region)
            out.console.print(
                f"uploaded {upload.source}: {len(written)} object(s) under "
                f"s3://{upload.bucket}/{upload.key}"
            )
        out.console.print(f"serving on {account.url}")
        out.console.print(
            f"  export AWS_ENDPOINT_URL={account.url} AWS_DEFAULT_REGION={account.region} "
            "AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing"
        )
        out.console.print(
            "  then: hetero-train run / status / logs / stop / list, and while it serves: "
            "hetero-train local deploy TEMPLATE... | local script OUTCOME... | "
            "local interrupt JOB_OR_RUN"
        )
        out.stdout.flush()
        with _stopped_by_sigterm(stop), contextlib.suppress(KeyboardInterrupt):
            account.wait(stop)
    finally:
        account.__exit__(None, None, None)
    out.console.print("stopped serving")
    return EXIT_SUCCEEDED


@contextlib.contextmanager
def _stopped_by_sigterm(stop: threading.Event) -> Iterator[None]:
    """SIGTERM ends serving as Ctrl-C does (only the main thread can set a handler)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(_signal: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["local", "local_extra_missing", "serve"]
