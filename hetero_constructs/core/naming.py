"""Training job names: unique and deterministic per state-machine execution."""

from __future__ import annotations

import hashlib
import re

MAX_JOB_NAME = 63
_DIGEST = 8
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9-]+")


def sanitize_name(text: str) -> str:
    """Characters the TrainingJobName pattern allows; no leading or trailing hyphen."""
    return _NOT_ALLOWED.sub("-", text).strip("-")


def execution_job_name(prefix: str, execution_name: str) -> str:
    """``{prefix}-{execution name}-{digest}``, cut to 63 characters.

    The digest of the full execution name keeps two executions apart even when their names are
    cut, and the same execution (a retried Lambda) always gets the same job name.
    """
    digest = hashlib.sha256(execution_name.encode()).hexdigest()[:_DIGEST]
    readable = sanitize_name(f"{sanitize_name(prefix)}-{sanitize_name(execution_name)}")
    readable = readable[: MAX_JOB_NAME - _DIGEST - 1].rstrip("-")
    return f"{readable}-{digest}" if readable else digest
