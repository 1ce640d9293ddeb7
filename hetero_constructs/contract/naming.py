"""Training job names: unique per attempt, deterministic, and never shared between runs.

A *slot* is one entry of a training task by one execution: the execution (its ARN and start
time, so that a re-created state machine reusing an execution name gets new slots), the state's
name and the time it was entered (a loop re-enters it), and an optional key that tells parallel
``Map`` iterations apart. Each attempt in a slot (a ``Retry`` of the task) gets its own job name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass

MAX_JOB_NAME = 63
# 64 bits of the slot and attempt: names of different runs never collide in practice
# (a 32-bit digest did, with long prefixes that left nothing else to tell them apart).
_DIGEST = 16
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9-]+")
_HYPHENS = re.compile(r"-{2,}")


def sanitize_name(text: str) -> str:
    """Characters the TrainingJobName pattern allows; no leading or trailing hyphen."""
    return _NOT_ALLOWED.sub("-", text).strip("-")


@dataclass(frozen=True)
class RunSlot:
    """One entry of a training task by one execution (see the module doc)."""

    execution_arn: str
    execution_start: str
    state_name: str
    state_entered: str
    job_key: str = ""
    # Which of several otherwise identical entries this is (0 for the first, and for nearly all).
    lane: int = 0

    def in_lane(self, lane: int) -> RunSlot:
        return dataclasses.replace(self, lane=lane)

    @property
    def execution_name(self) -> str:
        return self.execution_arn.rsplit(":", 1)[-1]

    @property
    def digest(self) -> str:
        """128 bits identifying the slot (a DynamoDB key and a tag value)."""
        fields = (
            self.execution_arn,
            self.execution_start,
            self.state_name,
            self.state_entered,
            self.job_key,
            # Lane 0 keeps the digest slots had before lanes existed.
            *((f"lane:{self.lane}",) if self.lane else ()),
        )
        return hashlib.sha256("\x1f".join(fields).encode()).hexdigest()[:32]


def attempt_job_name(prefix: str, slot: RunSlot, attempt: int) -> str:
    """``{prefix}-{execution name}-{digest}``, at most 63 characters, one per attempt.

    The readable part is cut to fit; the digest covers the whole slot and the attempt, so two
    attempts, two states, two entries of one state and two executions never share a name.
    """
    digest = hashlib.sha256(f"{slot.digest}#{attempt}".encode()).hexdigest()[:_DIGEST]
    readable = _HYPHENS.sub("-", sanitize_name(f"{prefix}-{slot.execution_name}"))
    readable = readable[: MAX_JOB_NAME - _DIGEST - 1].rstrip("-")
    return f"{readable}-{digest}" if readable else digest


def job_name_stem(prefix: str) -> str:
    """What every job name of ``prefix`` starts with, before the ``-`` that follows it: the
    sanitized prefix, cut as ``attempt_job_name`` cuts it (a dashboard searches for it)."""
    return _HYPHENS.sub("-", sanitize_name(prefix))[: MAX_JOB_NAME - _DIGEST - 1].rstrip("-")


def preview_job_name(prefix: str, execution_name: str) -> str:
    """A name of the length and shape a run's first job gets, before the run exists.

    The real name's digest depends on the execution's start and the state's entry, known only
    once it runs; the readable part and the length are the same, which is what the rules check.
    """
    slot = RunSlot(f"arn:aws:states:::execution:preview:{execution_name}", "", "", "")
    return attempt_job_name(prefix, slot, 0)


__all__ = [
    "MAX_JOB_NAME",
    "RunSlot",
    "attempt_job_name",
    "job_name_stem",
    "preview_job_name",
    "sanitize_name",
]
