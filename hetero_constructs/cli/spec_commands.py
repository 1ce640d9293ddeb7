"""``hetero-train plan`` and ``hetero-train rules``: what a spec file plans to, and the rules."""

from __future__ import annotations

import click

from hetero_constructs.cli.follow import EXIT_FAILED, EXIT_SUCCEEDED
from hetero_constructs.cli.group import (
    cli,
    command_output,
    json_option,
)
from hetero_constructs.cli.output import (
    print_violations,
)
from hetero_constructs.cli.plan import plan_spec_file


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
    out = command_output(json_flag)
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


@cli.command()
@json_option
def rules(json_flag: bool) -> int:
    """Print every rule id the library reports, with its doc (the text of docs/rules.md)."""
    from hetero_constructs.cli import catalogue

    out = command_output(json_flag)
    if json_flag:
        out.emit_json({"rules": catalogue.as_dicts()})
    else:
        out.stdout.write(catalogue.render())
    return EXIT_SUCCEEDED


__all__ = [
    "plan",
    "rules",
]
