"""``python -m hetero_constructs.local TEMPLATE ...``: one local execution of a synthesized stack.

A stable contract that tests and users script against::

    python -m hetero_constructs.local TEMPLATE [--state-machine NAME_OR_LOGICAL_ID]
        [--input JSON|@FILE] [--outcome OUTCOME ...] [--json] [--expect STATUS] [--region R]
        [--reconcile-every SECONDS] [--name NAME] [--timeout SECONDS]

- The state machine: the template's only one, or the one whose name or logical id is given
  (several without a choice: exit 2, listing them).
- ``--outcome``, once per training job in creation order: ``Completed``, ``Failed[:REASON]``,
  ``Stopped[:SECONDARY_STATUS]``, ``ResourceLimitExceeded`` (CreateTrainingJob itself is refused).
  Jobs past the list complete.
- Exit 0 only when the execution ends ``SUCCEEDED`` (or the ``--expect``ed status), 1 when it
  ends otherwise, 2 for bad arguments.
- ``--json`` prints one JSON object: ``{"status", "output", "error", "cause", "jobs": [{"name",
  "status", "instance_types", "request"}]}``, ``request`` being the exact CreateTrainingJob
  request submitted. Without it: the run as ``hetero-train run --follow`` shows it (the
  execution's state transitions, each job's name and secondary-status transitions, its log lines
  labelled by host and group when there are any, the end), then each job's request (full JSON),
  name, instance types and outcome, and the execution's end. Notes (what was not simulated) go
  to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from hetero_constructs.cli.follow import LocalFollow
from hetero_constructs.cli.output import make_console
from hetero_constructs.local.cloud import TERMINAL_EXECUTION, ExecutionResult, Follow, LocalCloud
from hetero_constructs.local.training import Outcome

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad arguments: the message says what was given and what is allowed."""


def template_problem(template: str) -> str | None:
    """Why ``template`` is not a template file to run, or None (the message ends with the fix)."""
    path = Path(template)
    if path.is_file():
        return None
    if path.is_dir():
        found = sorted(p.name for p in path.glob("*.template.json"))
        choices = f": {', '.join(found)}" if found else " (it holds none; run `cdk synth` first)"
        return f"template {template!r} is a directory; give one of its templates{choices}"
    return f"template {template!r} does not exist; run `cdk synth` first"


def run_template(
    template: str | Path,
    *,
    state_machine: str | None = None,
    execution_input: Any = None,
    outcomes: Sequence[str | Outcome] = (),
    region: str | None = None,
    name: str | None = None,
    reconcile_every: float | None = None,
    timeout: float = 120.0,
    follow: Follow | None = None,
    notes: TextIO | None = None,
) -> ExecutionResult:
    """Deploy ``template`` into a fresh local cloud and run one execution of its state machine.

    The command line's entry point (``hetero-train run --local`` uses ``LocalCloud`` itself, to
    check the input against the deployed definition before it starts); ``follow`` receives the
    clients and the execution ARN (see ``cloud.Follow``). ``UsageError`` for a state machine that
    cannot be chosen.
    """
    with LocalCloud(region) as cloud:
        cloud.deploy(template)
        for note in cloud.notes:
            print(f"note: {note}", file=notes or sys.stderr)
        try:
            arn = cloud.state_machine(state_machine)
        except LookupError as error:
            raise UsageError(str(error)) from error
        return cloud.run(
            arn,
            execution_input,
            name=name,
            outcomes=outcomes,
            reconcile_every=reconcile_every,
            timeout=timeout,
            follow=follow,
        )


def parser() -> argparse.ArgumentParser:
    arguments = argparse.ArgumentParser(
        prog="python -m hetero_constructs.local",
        description="Run one execution of a synthesized stack's state machine locally (moto, "
        "no AWS account).",
    )
    arguments.add_argument("template", help="a synthesized template: cdk.out/<Stack>.template.json")
    arguments.add_argument(
        "--state-machine", help="the state machine's name or logical id (when there are several)"
    )
    arguments.add_argument("--input", default="{}", help="execution input: JSON, or @FILE")
    arguments.add_argument(
        "--outcome",
        action="append",
        default=[],
        metavar="OUTCOME",
        help="how the next training job ends, once per job in creation order: Completed, "
        "Failed[:REASON], Stopped[:SECONDARY_STATUS], ResourceLimitExceeded",
    )
    arguments.add_argument("--json", action="store_true", help="print one JSON object")
    arguments.add_argument(
        "--expect",
        default="SUCCEEDED",
        type=str.upper,
        choices=TERMINAL_EXECUTION,
        help="the status that exits 0 (default SUCCEEDED)",
    )
    arguments.add_argument("--region", help="default: the template's, else us-west-2")
    arguments.add_argument("--name", help="the execution's name")
    arguments.add_argument(
        "--reconcile-every",
        type=float,
        metavar="SECONDS",
        help="fire the template's scheduled rules every SECONDS (they also fire when the "
        "execution is stuck)",
    )
    arguments.add_argument("--timeout", type=float, default=120.0, help="seconds (default 120)")
    return arguments


def main(argv: Sequence[str] | None = None, *, follow: Follow | None = None) -> int:
    """The command line; ``follow``: the run's follow display (default: ``hetero-train run
    --follow``'s on standard output, none with ``--json``)."""
    arguments = parser()
    args = arguments.parse_args(argv)
    if follow is None and not args.json:
        follow = LocalFollow(make_console(sys.stdout))
    try:
        execution_input = _input(args.input)
        outcomes = [Outcome.parse(text) for text in args.outcome]
        problem = template_problem(args.template)
        if problem is not None:
            raise UsageError(problem)
        quiet = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
        with quiet:  # handlers' prints must not corrupt the JSON on stdout
            result = run_template(
                args.template,
                state_machine=args.state_machine,
                execution_input=execution_input,
                outcomes=outcomes,
                region=args.region,
                name=args.name,
                reconcile_every=args.reconcile_every,
                timeout=args.timeout,
                follow=follow,
            )
    except (UsageError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        if isinstance(follow, LocalFollow) and follow.results:
            print()  # the follow display above, the exact requests below
        print(report(result))
    return 0 if result.status == args.expect else 1


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


def _input(text: str) -> Any:
    source = text
    if text.startswith("@"):
        path = Path(text[1:])
        if not path.is_file():
            raise UsageError(f"--input {text!r}: no such file")
        source = path.read_text()
    try:
        return json.loads(source)
    except ValueError as error:
        raise UsageError(
            f"--input {text!r} is not JSON ({error}); e.g. --input '{{\"a\": 1}}'"
        ) from error
