"""Submit Lambda: merge the execution's overrides, validate again, create the training job.

Invoked by the state machine with ``lambda:invoke.waitForTaskToken``. The task completes later,
when the job's "SageMaker Training Job State Change" event reaches ``events.handler``. The
package carries the core (the same rules as at synth) and the botocore SageMaker model the spec
was validated against (``AWS_DATA_PATH``), so the runtime's boto3 version does not matter.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import outcome
import token_store
from botocore.exceptions import ClientError

from hetero_constructs.core.context import Deployment
from hetero_constructs.core.naming import execution_job_name
from hetero_constructs.core.overrides import apply_overrides
from hetero_constructs.core.plan import plan
from hetero_constructs.core.spec_file import read_spec
from hetero_constructs.core.violations import Violation

THROTTLING = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
    }
)


class InvalidOverrides(Exception):
    """The execution input breaks the spec; the message lists every violation (JSON)."""


class SageMakerThrottled(Exception):
    """SageMaker throttled the call after the SDK's own retries; the state machine retries."""


def _clients() -> tuple[Any, Any, Any]:
    return boto3.client("sagemaker"), boto3.client("dynamodb"), boto3.client("stepfunctions")


def _invalid(violations: tuple[Violation, ...] | list[Violation]) -> InvalidOverrides:
    return InvalidOverrides(json.dumps({"violations": [v.to_dict() for v in violations]}))


def prepare(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The job name and request for this execution, or ``InvalidOverrides``."""
    overridden = apply_overrides(event["spec"], event.get("input"))
    if overridden.violations:
        raise _invalid(overridden.violations)
    reading = read_spec(overridden.spec)
    if reading.spec is None:
        raise _invalid(reading.violations)
    prefix = event["jobNamePrefix"]
    if overridden.job_name_prefix:
        prefix = f"{prefix}-{overridden.job_name_prefix}"
    name = execution_job_name(prefix, event["executionName"])
    deployment = Deployment(job_name=name, **event["deployment"])
    result = plan(reading.spec, deployment)
    if result.request is None:
        raise _invalid([*reading.violations, *result.violations])
    return name, result.request


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    name, request = prepare(event)
    sagemaker, dynamodb, stepfunctions = _clients()
    token_store.remember(
        dynamodb, name, event["taskToken"], event["executionArn"], int(event["tokenTtlSeconds"])
    )
    try:
        sagemaker.create_training_job(**request)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code in THROTTLING:
            raise SageMakerThrottled(str(error)) from error
        if code != "ResourceInUse":
            raise
        # A retried invocation: the job already exists, so it counts as submitted. If it has
        # already finished, its state-change event is gone: report it now.
        job = sagemaker.describe_training_job(TrainingJobName=name)
        if job.get("TrainingJobStatus") in outcome.TERMINAL:
            outcome.report(stepfunctions, event["taskToken"], job)
            token_store.forget_job(dynamodb, name)
        return {"TrainingJobName": name, "alreadySubmitted": True}
    return {"TrainingJobName": name, "alreadySubmitted": False}
