"""The ``hetero-train`` command group, and the options and error handling its commands share."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TextIO, TypeVar

import click
from botocore.exceptions import ClientError

from hetero_constructs.cli.aws import AWS_ERRORS, AwsOptions, describe_aws_error, error_code
from hetero_constructs.cli.follow import EXIT_FAILED
from hetero_constructs.cli.output import CliError, Output, error_record

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


def command_output(json_flag: bool) -> Output:
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


def log_grace_option(function: F) -> F:
    return click.option(
        "--log-grace",
        type=click.FloatRange(min=0.0),
        default=60.0,
        show_default=True,
        metavar="SECONDS",
        help="after the run ends, read its logs on for late lines (until two polls bring "
        "nothing) at most this long",
    )(function)


def aws_from(profile: str | None, region: str | None, endpoint_url: str | None) -> AwsOptions:
    return AwsOptions(profile=profile, region=region, endpoint_url=endpoint_url)


def handles_errors(function: Callable[..., int]) -> Callable[..., int]:
    """AWS errors and ``CliError``s become one message on standard error and exit 1; with
    ``--json``, one JSON object (``error``: the error's name or AWS error code, ``message``)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> int:
        as_json = bool(kwargs.get("json_flag"))
        try:
            return function(*args, **kwargs)
        except CliError as error:
            text = error_record(error.name, str(error)) if as_json else f"error: {error}"
            click.echo(text, err=True)
            return error.exit_code
        except AWS_ERRORS as error:
            if as_json:
                name = error_code(error) if isinstance(error, ClientError) else type(error).__name__
                operation = getattr(error, "operation_name", None)
                text = error_record(name, describe_aws_error(error), operation=operation)
            else:
                text = f"error: {describe_aws_error(error)}"
            click.echo(text, err=True)
            return EXIT_FAILED

    return wrapper


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(_package_version(), prog_name="hetero-train", message="%(prog)s %(version)s")
def cli() -> None:
    """Plan SageMaker heterogeneous-cluster training jobs, and start, follow, inspect and stop
    the training runs of deployed hetero-constructs stacks.

    TARGET is a state machine ARN or name, or STACK/CONSTRUCT_ID (also STACK CONSTRUCT_ID) of a
    training job, of your own state machine or of a training task in one; RUN is an execution
    ARN or name. Exit codes: 0 success, 1 failure (a run that did not succeed, violations, AWS
    errors), 2 usage (or a name that matches nothing), 130 stopped following with Ctrl-C.
    """


__all__ = [
    "Invocation",
    "aws_from",
    "aws_options",
    "cli",
    "command_output",
    "handles_errors",
    "json_option",
    "log_grace_option",
    "poll_option",
]
