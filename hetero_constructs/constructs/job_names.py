"""Job names of a training task: the prefix every job name starts with, and its checks.

The prefix scopes the task's IAM and event routing at synth, so it must be concrete, short
and a valid name; a spec's ``job_name`` and ``base_job_name`` are honoured or refused, never
dropped.
"""

from __future__ import annotations

import hashlib
from typing import Any, TypeGuard

from hetero_constructs.checks.construct_rules import BASE_JOB_NAME_RULE, JOB_NAME_RULE
from hetero_constructs.constructs.tokens import is_token
from hetero_constructs.contract.naming import sanitize_name
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import Violation

MAX_PREFIX = 40


def default_job_name_prefix(scope_path: str, construct_id: str) -> str:
    """The construct id plus a digest of its path (which starts with the stack's name)."""
    digest = hashlib.sha256(f"{scope_path}/{construct_id}".encode()).hexdigest()[:8]
    readable = sanitize_name(construct_id)[: MAX_PREFIX - 9].rstrip("-") or "job"
    return f"{readable}-{digest}".lower()


def usable_prefix(value: Any) -> TypeGuard[str]:
    """Whether ``value`` can start every job name: it scopes IAM and event routing at synth."""
    return (
        isinstance(value, str)
        and not is_token(value)
        and 0 < len(value) <= MAX_PREFIX
        and sanitize_name(value) == value
    )


def prefix_like(value: Any) -> str:
    """A usable prefix close to ``value``, for a violation's fix."""
    return sanitize_name(str(value))[:MAX_PREFIX] or "nightly-training"


def job_name_prefix_of(
    spec: TrainingSpec, given: str | None, scope_path: str, construct_id: str
) -> str:
    """The prefix of every job name: the prop, else the spec's ``base_job_name`` (the SDK's
    prefix of its job names) when it can be one, else the construct id plus a digest."""
    if given:
        return given
    if usable_prefix(spec.base_job_name):
        return spec.base_job_name
    return default_job_name_prefix(scope_path, construct_id)


def job_name_violations(spec: TrainingSpec, prefix: str) -> list[Violation]:
    """A spec's ``job_name`` and ``base_job_name`` are honoured or refused, never dropped."""
    violations = []
    if spec.job_name is not None:
        violations.append(
            Violation(
                JOB_NAME_RULE,
                "job_name",
                "A job_name names one training job, but the state machine starts a job per "
                f"run, each named '{prefix}-...' (a fixed name would be refused from the "
                "second run on).",
                spec.job_name,
                "no job_name; base_job_name (or job_name_prefix) starts every job's name",
                "replace job_name with base_job_name",
            )
        )
    if spec.base_job_name is not None and not usable_prefix(spec.base_job_name):
        violations.append(
            Violation(
                BASE_JOB_NAME_RULE,
                "base_job_name",
                "The base_job_name starts every job name of the state machine, and that prefix "
                "scopes its IAM and event routing at synth.",
                spec.base_job_name,
                f"1 to {MAX_PREFIX} letters, digits and inner hyphens, not a deploy-time token",
                f"use e.g. {prefix_like(spec.base_job_name)!r}",
            )
        )
    elif spec.base_job_name is not None and spec.base_job_name != prefix:
        violations.append(
            Violation(
                BASE_JOB_NAME_RULE,
                "base_job_name",
                "The spec's base_job_name is not the construct's job_name_prefix; both name "
                "the prefix of every job name.",
                spec.base_job_name,
                f"the job_name_prefix, {prefix!r}, or no base_job_name",
                "give the prefix once: job_name_prefix, or base_job_name (a spec file's is "
                "replaced by from_spec_file(..., spec_overrides={'base_job_name': ...}), e.g. "
                "one per stack)",
            )
        )
    return violations


def check_prefix(prefix: str, path: str) -> None:
    """Refuse a prefix that cannot start job names (the prop given to the task)."""
    if not usable_prefix(prefix):
        raise ValueError(
            f"{path}: job_name_prefix {prefix!r} cannot start training job names. "
            f"Allowed: 1 to {MAX_PREFIX} letters, digits and inner hyphens, not a token "
            "(the prefix scopes IAM and event routing at synth). "
            f"Fix: e.g. {prefix_like(prefix)!r}."
        )


__all__ = [
    "MAX_PREFIX",
    "check_prefix",
    "default_job_name_prefix",
    "job_name_prefix_of",
    "job_name_violations",
    "usable_prefix",
]
