"""``hetero-train``: plan a training job from a spec file without deploying anything."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TextIO

from hetero_constructs.core.context import Deployment, RuleContext
from hetero_constructs.core.plan import Plan, plan
from hetero_constructs.core.request.builder import job_name as default_job_name
from hetero_constructs.core.spec_file import read_spec_file
from hetero_constructs.core.violations import SpecValidationError, Violation, render_value

_MAX_JOB_NAME = 63
_TIMESTAMP = "%Y-%m-%d-%H-%M-%S"


def timestamped_job_name(base: str, now: datetime) -> str:
    """``{base}-{yyyy-mm-dd-hh-mm-ss-mmm}`` within 63 characters, as the SDK names jobs."""
    stamp = now.strftime(_TIMESTAMP) + f"-{now.microsecond // 1000:03d}"
    return f"{base[: _MAX_JOB_NAME - len(stamp) - 1].rstrip('-')}-{stamp}"


def _print_violations(violations: Sequence[Violation], source: str, out: TextIO) -> None:
    noun = "violation" if len(violations) == 1 else "violations"
    out.write(f"{len(violations)} {noun} in {source}:\n")
    for v in violations:
        out.write(f"\n  [{v.rule}] {v.path or '(spec)'}\n")
        out.write(f"    {v.problem}\n")
        out.write(f"    given:   {render_value(v.value)}\n")
        out.write(f"    allowed: {v.allowed}\n")
        out.write(f"    fix:     {v.fix}\n")


def _file_violations_and_plan(args: argparse.Namespace) -> tuple[list[Violation], Plan | None]:
    try:
        reading = read_spec_file(args.spec)
    except SpecValidationError as error:
        return list(error.violations), None
    if reading.spec is None:
        return list(reading.violations), None
    spec = reading.spec
    region = (
        args.region
        or spec.region
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
    )
    name = args.job_name or spec.job_name
    if name is None:
        probe = RuleContext(spec, Deployment(region=region))
        name = timestamped_job_name(default_job_name(probe), datetime.now(UTC))
    result = plan(spec, Deployment(region=region, role_arn=args.role, job_name=name))
    return [*reading.violations, *result.violations], result


def run_plan(args: argparse.Namespace, out: TextIO) -> int:
    violations, result = _file_violations_and_plan(args)
    if not violations and result is not None and result.request is not None:
        payload = {"request": result.request} if args.json else result.request
        out.write(json.dumps(payload, indent=2) + "\n")
        return 0
    if args.json:
        out.write(json.dumps({"violations": [v.to_dict() for v in violations]}, indent=2) + "\n")
    else:
        _print_violations(violations, args.spec, out)
    return 1


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hetero-train",
        description="Validate SageMaker heterogeneous-cluster training specs and show the "
        "CreateTrainingJob request they produce.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    plan_parser = commands.add_parser(
        "plan", help="print the CreateTrainingJob request, or every violation (exit 1)"
    )
    plan_parser.add_argument("spec", help="spec file (JSON, or YAML with .yaml/.yml)")
    plan_parser.add_argument("--json", action="store_true", help="machine-readable output")
    plan_parser.add_argument("--region", help="AWS region (default: spec, then AWS_REGION)")
    plan_parser.add_argument("--role", help="execution role ARN (default: the spec's role)")
    plan_parser.add_argument("--job-name", help="training job name (default: base name + time)")
    args = parser.parse_args(argv)
    return run_plan(args, out or sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
