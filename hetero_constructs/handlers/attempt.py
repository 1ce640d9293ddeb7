"""What one attempt of a training task sends, and how its job is told from any other.

``Run`` is what the task passes besides the spec (the execution, the state entry, the token);
``prepare`` plans the attempt's request with the execution's overrides; every job carries
marker tags naming its runner, execution, slot (with a digest of its request) and attempt, so
that a job is an entry's own only if it is the very request that entry sends.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hetero_constructs.contract import lifecycle
from hetero_constructs.contract.naming import RunSlot
from hetero_constructs.contract.training_job import describe_training_job as describe
from hetero_constructs.handlers.data_secret import DATA_SECRET_ENV

if TYPE_CHECKING:
    from hetero_constructs.spec.violations import Violation

# Environment values a job gets that differ between two sends of the same request (the per-job
# data-plane secret, added as the request is sent): they are left out of the request's digest.
VOLATILE_ENVIRONMENT = frozenset({DATA_SECRET_ENV})


@dataclass(frozen=True)
class Run:
    """What the task passes besides the spec: the execution, the state entry, the token."""

    slot: RunSlot
    retry_count: int
    task_token: str
    control_role: str
    runner_id: str
    ttl_seconds: int

    @staticmethod
    def of(event: dict[str, Any]) -> Run:
        context = event["context"]
        # The entry's own overrides tell apart entries that start together (a Map's iterations
        # over different items), with or without the user's own key; entries that agree on
        # these too get a lane each (``lanes``).
        keys = [str(event.get("jobKey") or "")]
        if event.get("input") not in (None, {}, [], ""):
            text = json.dumps(event["input"], sort_keys=True, separators=(",", ":"), default=str)
            keys.append(f"input:{hashlib.sha256(text.encode()).hexdigest()[:32]}")
        return Run(
            slot=RunSlot(
                execution_arn=context["executionArn"],
                execution_start=str(context.get("executionStartTime", "")),
                state_name=str(context.get("stateName", "")),
                state_entered=str(context.get("stateEnteredTime", "")),
                job_key="\x1e".join(keys) if len(keys) > 1 else keys[0],
            ),
            retry_count=int(context.get("retryCount") or 0),
            task_token=context["taskToken"],
            control_role=event["controlRoleArn"],
            runner_id=event["runnerId"],
            ttl_seconds=int(event["tokenTtlSeconds"]),
        )


class InvalidOverrides(Exception):
    def __init__(self, violations: tuple[Violation, ...] | list[Violation]) -> None:
        super().__init__("the execution input breaks the spec")
        self.violations = list(violations)


def prepare(event: dict[str, Any], name_of: Any, variant: int = 0) -> tuple[dict[str, Any], int]:
    """The attempt's request (and the variant it runs), named by ``name_of(prefix)``, or
    ``InvalidOverrides``. ``variant``: how many capacity failures the slot had so far.

    The rules load here, on the first submission, not when the handler is imported: the
    lifecycle paths of a cold start never need them.
    """
    from hetero_constructs.contract.overrides import apply_overrides
    from hetero_constructs.planning import plan
    from hetero_constructs.request.context import Deployment
    from hetero_constructs.spec import variants
    from hetero_constructs.spec.file.reader import read_spec

    overridden = apply_overrides(
        event["spec"], event.get("input"), channel_prefixes=event.get("channelPrefixes")
    )
    if overridden.violations:
        raise InvalidOverrides(overridden.violations)
    reading = read_spec(overridden.spec)
    if reading.spec is None:
        raise InvalidOverrides(reading.violations)
    prefix = event["jobNamePrefix"]
    if overridden.job_name_prefix:
        prefix = f"{prefix}-{overridden.job_name_prefix}"
    deployment = Deployment(job_name=name_of(prefix), **event["deployment"])
    chosen = variants.variant(reading.spec, variant)
    result = plan(reading.spec, deployment, variant=chosen.index)
    if result.request is None:
        raise InvalidOverrides([*reading.violations, *result.violations])
    return result.request, chosen.index


def request_digest(request: dict[str, Any]) -> str:
    """128 bits of the request as the entry sends it, without the run's marker tags and the
    environment values that differ per send (``VOLATILE_ENVIRONMENT``)."""
    markers = _MARKER_KEYS
    stable = {
        **request,
        "Tags": [t for t in request.get("Tags", []) if t["Key"] not in markers],
        "Environment": {
            k: v for k, v in request.get("Environment", {}).items() if k not in VOLATILE_ENVIRONMENT
        },
    }
    text = json.dumps(stable, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


_MARKER_KEYS = frozenset(
    {lifecycle.TAG_RUNNER, lifecycle.TAG_EXECUTION, lifecycle.TAG_SLOT, lifecycle.TAG_ATTEMPT}
)


def marker_tags(run: Run, attempt: int, request: dict[str, Any]) -> dict[str, str]:
    return {
        lifecycle.TAG_RUNNER: run.runner_id,
        lifecycle.TAG_EXECUTION: run.slot.execution_arn,
        lifecycle.TAG_SLOT: f"{run.slot.digest}{lifecycle.SLOT_TAG_SEPARATOR}"
        f"{request_digest(request)}",
        lifecycle.TAG_ATTEMPT: str(attempt),
    }


def with_markers(request: dict[str, Any], run: Run, attempt: int) -> dict[str, Any]:
    markers = marker_tags(run, attempt, request)
    user_tags = [t for t in request.get("Tags", []) if t["Key"] not in _MARKER_KEYS]
    return {**request, "Tags": [*user_tags, *({"Key": k, "Value": v} for k, v in markers.items())]}


def is_ours(sagemaker: Any, job: dict[str, Any], run: Run, attempt: int, request: Any) -> bool:
    """Created by this very attempt of this entry: its marker tags (the request's digest among
    them), role and output are ours."""
    tags = sagemaker.list_tags(ResourceArn=job["TrainingJobArn"]).get("Tags", [])
    found = {t["Key"]: t["Value"] for t in tags}
    if request is None:
        return False
    markers = marker_tags(run, attempt, request)
    return (
        all(found.get(key) == value for key, value in markers.items())
        and job.get("RoleArn") == request.get("RoleArn")
        and job.get("OutputDataConfig", {}).get("S3OutputPath")
        == request["OutputDataConfig"]["S3OutputPath"]
    )


__all__ = [
    "VOLATILE_ENVIRONMENT",
    "InvalidOverrides",
    "Run",
    "describe",
    "is_ours",
    "marker_tags",
    "prepare",
    "request_digest",
    "with_markers",
]
