"""Events Lambda: finishes waiting tasks and stops orphaned jobs.

- "SageMaker Training Job State Change" (Completed, Failed, Stopped): send the waiting task its
  success (job ARN, model artifacts, statuses, times) or failure (SageMaker's FailureReason).
- "Step Functions Execution Status Change" (ABORTED, TIMED_OUT, FAILED): stop the execution's
  training job, so that no instance keeps running for an execution that is gone.
"""

from __future__ import annotations

from typing import Any

import boto3
import outcome
import token_store
from botocore.exceptions import ClientError

from hetero_constructs.core import lifecycle


def on_training_job_change(detail: dict[str, Any], dynamodb: Any, stepfunctions: Any) -> str:
    name = detail["TrainingJobName"]
    if detail.get("TrainingJobStatus") not in outcome.TERMINAL:
        return "ignored: not terminal"
    token = token_store.task_token(dynamodb, name)
    if token is None:
        return "ignored: no waiting task"
    try:
        status = outcome.report(stepfunctions, token, detail)
    except ClientError as error:
        # The execution ended meanwhile (aborted, timed out): nothing is waiting any more.
        if error.response.get("Error", {}).get("Code") not in ("TaskTimedOut", "TaskDoesNotExist"):
            raise
        status = "task gone"
    token_store.forget_job(dynamodb, name)
    return f"reported {status}"


def on_execution_end(detail: dict[str, Any], dynamodb: Any, sagemaker: Any) -> str:
    if detail.get("status") not in lifecycle.STOPPING_EXECUTION_STATUSES:
        return "ignored: status"
    name = token_store.job_of_execution(dynamodb, detail["executionArn"])
    if name is None:
        return "ignored: no job"
    try:
        sagemaker.stop_training_job(TrainingJobName=name)
    except ClientError as error:
        # Already finished or stopping: nothing to do.
        if error.response.get("Error", {}).get("Code") not in (
            "ValidationException",
            "ResourceNotFound",
        ):
            raise
        return f"not running: {name}"
    return f"stopped {name}"


def handler(event: dict[str, Any], context: Any = None) -> str:
    detail = event.get("detail", {})
    if event.get("source") == lifecycle.JOB_EVENT_SOURCE:
        return on_training_job_change(
            detail, boto3.client("dynamodb"), boto3.client("stepfunctions")
        )
    if event.get("source") == lifecycle.EXECUTION_EVENT_SOURCE:
        return on_execution_end(detail, boto3.client("dynamodb"), boto3.client("sagemaker"))
    return "ignored: source"
