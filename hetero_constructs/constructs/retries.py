"""The retriers of a training task: Lambda invoke errors, throttling, and capacity failures.

Rendered as Step Functions reads them (and as aws-cdk-lib's ``add_retry`` renders them), before
any retrier the user adds.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn

from hetero_constructs.contract import lifecycle

# Step Functions' own errors for a Lambda invoke that did not complete; the submission is
# idempotent per attempt (see hetero_constructs/handlers/submit.py), so retrying them is safe.
LAMBDA_ERRORS = lifecycle.LAMBDA_INVOKE_ERRORS


@dataclasses.dataclass(frozen=True)
class CapacityRetry:
    """Retry a training task that found no capacity: a new job per attempt, next fallback first.

    Only ``HeteroTraining.CapacityError`` and ``HeteroTraining.ResourceLimitExceeded`` are
    retried - never a training failure or invalid overrides. Each retry creates a fresh job
    (its name includes the attempt) on the next fallback variant of the instance groups.
    """

    #: Retries after the first attempt.
    max_attempts: int = 3
    #: Wait before the first retry; multiplied by ``backoff_rate`` each time.
    interval: Duration = dataclasses.field(default_factory=lambda: Duration.minutes(5))
    backoff_rate: float = 2.0
    #: The longest wait between two attempts.
    max_delay: Duration | None = dataclasses.field(default_factory=lambda: Duration.hours(1))
    #: Full jitter: many runs that failed together do not all retry together.
    jitter: bool = True

    @functools.cached_property
    def seconds(self) -> tuple[int, int | None]:
        """``interval`` and ``max_delay`` in seconds, converted once (each is a jsii call)."""
        return (
            int(self.interval.to_seconds()),
            int(self.max_delay.to_seconds()) if self.max_delay else None,
        )

    def delays_seconds(self) -> list[int]:
        """The waits before each retry, as configured (jitter only shortens them)."""
        first, cap = self.seconds
        delays = []
        for attempt in range(self.max_attempts):
            delay = int(first * self.backoff_rate**attempt)
            delays.append(min(delay, cap) if cap is not None else delay)
        return delays


@dataclasses.dataclass(frozen=True)
class Retrier:
    """One of the task's own retriers: added to the state with ``add_retry``, as aws-cdk-lib's
    tasks add theirs (``LambdaInvoke``'s service exceptions), so that it renders before any the
    user adds; ``state_json`` is the same retrier as Step Functions reads it."""

    errors: tuple[str, ...]
    interval_seconds: int
    max_attempts: int
    backoff_rate: float
    max_delay_seconds: int | None = None
    jitter: bool = False

    def add_to(self, state: sfn.TaskStateBase) -> None:
        max_delay = self.max_delay_seconds
        state.add_retry(
            errors=list(self.errors),
            interval=Duration.seconds(self.interval_seconds),
            max_attempts=self.max_attempts,
            backoff_rate=self.backoff_rate,
            max_delay=Duration.seconds(max_delay) if max_delay is not None else None,
            jitter_strategy=sfn.JitterType.FULL if self.jitter else None,
        )

    def state_json(self) -> dict[str, Any]:
        """The retrier as ``add_retry`` renders it (the same keys, in the same order)."""
        retry: dict[str, Any] = {
            "ErrorEquals": list(self.errors),
            "IntervalSeconds": self.interval_seconds,
            "MaxAttempts": self.max_attempts,
            # A whole rate as an integer: the number JSON.stringify writes for it (2, not 2.0).
            "BackoffRate": (
                int(self.backoff_rate)
                if float(self.backoff_rate).is_integer()
                else self.backoff_rate
            ),
        }
        if self.max_delay_seconds is not None:
            retry["MaxDelaySeconds"] = self.max_delay_seconds
        if self.jitter:
            retry["JitterStrategy"] = "FULL"
        return retry


def task_retriers(capacity_retry: CapacityRetry | None) -> list[Retrier]:
    """The task's own retriers: Lambda invoke errors and throttling, then capacity failures."""
    retries = [
        Retrier(
            (*LAMBDA_ERRORS, lifecycle.Errors.THROTTLED),
            interval_seconds=lifecycle.SUBMIT_RETRY_INTERVAL_SECONDS,
            max_attempts=lifecycle.SUBMIT_RETRY_ATTEMPTS,
            backoff_rate=lifecycle.SUBMIT_RETRY_BACKOFF,
            jitter=True,
        )
    ]
    if capacity_retry is not None:
        interval, max_delay = capacity_retry.seconds
        retries.append(
            Retrier(
                lifecycle.Errors.CAPACITY_RETRYABLE,
                interval_seconds=interval,
                max_attempts=capacity_retry.max_attempts,
                backoff_rate=capacity_retry.backoff_rate,
                max_delay_seconds=max_delay,
                jitter=capacity_retry.jitter,
            )
        )
    return retries


# The default of every training construct: a run that got no capacity tries again.
DEFAULT_CAPACITY_RETRY = CapacityRetry()

__all__ = [
    "DEFAULT_CAPACITY_RETRY",
    "LAMBDA_ERRORS",
    "CapacityRetry",
    "Retrier",
    "task_retriers",
]
