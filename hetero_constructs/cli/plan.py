"""``hetero-train plan``: the CreateTrainingJob request a spec file produces, without deploying.

What the constructs take from the stack (the region) or create (the execution role) has a
default here, so a spec that synthesizes also plans; every default used is stated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hetero_constructs.planning import Plan, plan
from hetero_constructs.request.builder import job_name as default_job_name
from hetero_constructs.request.context import Deployment, RuleContext
from hetero_constructs.spec.file.reader import read_spec_file
from hetero_constructs.spec.violations import SpecValidationError, Violation

_MAX_JOB_NAME = 63
_TIMESTAMP = "%Y-%m-%d-%H-%M-%S"
# Used only when nothing names a region: the constructs take it from the stack.
DEFAULT_PLAN_REGION = "us-east-1"
# A stand-in for the role the constructs create at deploy (AWS's documentation account id).
PLACEHOLDER_ROLE_ARN = "arn:aws:iam::111122223333:role/hetero-train-plan-placeholder"


def timestamped_job_name(base: str, now: datetime) -> str:
    """``{base}-{yyyy-mm-dd-hh-mm-ss-mmm}`` within 63 characters, as the SDK names jobs."""
    stamp = now.strftime(_TIMESTAMP) + f"-{now.microsecond // 1000:03d}"
    return f"{base[: _MAX_JOB_NAME - len(stamp) - 1].rstrip('-')}-{stamp}"


@dataclass(frozen=True)
class PlanDefault:
    """A value the spec and the flags left open, and where the one used came from."""

    value: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"value": self.value, "source": self.source}


@dataclass(frozen=True)
class SpecFilePlan:
    violations: list[Violation]
    plan: Plan | None
    defaults: dict[str, PlanDefault] = field(default_factory=dict)

    @property
    def request(self) -> dict[str, object] | None:
        if self.violations or self.plan is None:
            return None
        return self.plan.request


def _profile_region() -> str | None:
    """The region of the profile in use, from the AWS config files (no network)."""
    import botocore.session
    from botocore.exceptions import BotoCoreError

    try:
        region = botocore.session.Session().get_config_variable("region")
    except BotoCoreError:  # a broken config file only means no default from it
        return None
    return str(region) if region else None


def _default_region() -> PlanDefault:
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(variable):
            return PlanDefault(os.environ[variable], variable)
    profile_region = _profile_region()
    if profile_region:
        return PlanDefault(profile_region, "the AWS profile's config")
    return PlanDefault(
        DEFAULT_PLAN_REGION,
        "default: no --region, no region in the spec, AWS_REGION or the profile "
        "(the constructs use the stack's region)",
    )


def plan_spec_file(
    spec_path: str,
    *,
    region: str | None = None,
    role: str | None = None,
    job_name: str | None = None,
) -> SpecFilePlan:
    """Read and plan a spec file; region and role fall back to stated defaults."""
    try:
        reading = read_spec_file(spec_path)
    except SpecValidationError as error:
        return SpecFilePlan(list(error.violations), None)
    if reading.spec is None:
        return SpecFilePlan(list(reading.violations), None)
    spec = reading.spec
    defaults: dict[str, PlanDefault] = {}
    region = region or spec.region
    if not region:
        defaults["region"] = _default_region()
        region = defaults["region"].value
    role = role or spec.role
    if not role:
        defaults["role"] = PlanDefault(
            PLACEHOLDER_ROLE_ARN,
            "placeholder: no --role and no role in the spec (the constructs create the job's "
            "execution role at deploy)",
        )
        role = PLACEHOLDER_ROLE_ARN
    name = job_name or spec.job_name
    if name is None:
        probe = RuleContext(spec, Deployment(region=region))
        name = timestamped_job_name(default_job_name(probe), datetime.now(UTC))
    result = plan(spec, Deployment(region=region, role_arn=role, job_name=name))
    return SpecFilePlan([*reading.violations, *result.violations], result, defaults)


__all__ = [
    "DEFAULT_PLAN_REGION",
    "PLACEHOLDER_ROLE_ARN",
    "PlanDefault",
    "SpecFilePlan",
    "plan_spec_file",
    "timestamped_job_name",
]
