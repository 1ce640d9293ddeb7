"""A training job as SageMaker describes it, or ``None`` where there is none by that name.

The Lambda handlers (submit, lifecycle events, the reconciler) and the runs API both ask;
an error that is not "no such job" is raised, never taken for one.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

#: DescribeTrainingJob's answers for a name no job has (StopTrainingJob's also for a job that
#: has ended).
NO_SUCH_JOB = ("ValidationException", "ResourceNotFound")


def error_code(error: ClientError) -> str:
    """The AWS error code of a failed call (``""`` when the response has none)."""
    return str(error.response.get("Error", {}).get("Code", ""))


def describe_training_job(sagemaker: Any, name: str) -> dict[str, Any] | None:
    """DescribeTrainingJob's answer for ``name``, or ``None`` when no job has that name."""
    try:
        return dict(sagemaker.describe_training_job(TrainingJobName=name))
    except ClientError as error:
        if error_code(error) in NO_SUCH_JOB:
            return None
        raise


__all__ = [
    "NO_SUCH_JOB",
    "describe_training_job",
    "error_code",
]
