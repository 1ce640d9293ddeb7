"""How a training run ends: events, error names and the task's output.

Shared by the constructs (event rules, retries, documentation) and the Lambda handlers (which
report outcomes), so that the names a state machine matches on are defined in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JOB_EVENT_SOURCE = "aws.sagemaker"
JOB_EVENT_TYPE = "SageMaker Training Job State Change"
# A job in one of these states is over: its waiting task gets success or failure.
TERMINAL_JOB_STATUSES = ("Completed", "Failed", "Stopped")

EXECUTION_EVENT_SOURCE = "aws.states"
EXECUTION_EVENT_TYPE = "Step Functions Execution Status Change"
# An execution that ends so leaves its job without a reader: the job is stopped.
STOPPING_EXECUTION_STATUSES = ("ABORTED", "TIMED_OUT", "FAILED")

# Tags every job a run creates carries: who created it, so that nothing adopts another's job.
TAG_RUNNER = "hetero-constructs:runner"
TAG_EXECUTION = "hetero-constructs:execution"
TAG_SLOT = "hetero-constructs:slot"
TAG_ATTEMPT = "hetero-constructs:attempt"
# The slot tag's value is ``{slot digest}/{request digest}``: a job is an entry's only if it is
# the request that entry sends (two entries of an inline Map never adopt each other's job).
SLOT_TAG_SEPARATOR = "/"

# The description of the stack output that holds a training state machine's ARN.
STATE_MACHINE_OUTPUT_PREFIX = "hetero-constructs:state-machine:"

# The submit Lambda's timeout. An invocation whose caller got an error (Step Functions then
# retries the task) may run on until it, so a retry waits this long, plus a margin for a request
# in flight, before it gives the slot's job up as never created.
SUBMIT_TIMEOUT_SECONDS = 60
CREATION_WINDOW_SECONDS = SUBMIT_TIMEOUT_SECONDS + 30

# Step Functions' own errors for a Lambda invoke that did not complete: the training task
# retries them (and ``Errors.THROTTLED``) every ``SUBMIT_RETRY_INTERVAL_SECONDS`` doubling,
# ``SUBMIT_RETRY_ATTEMPTS`` times; the submission is idempotent per attempt.
LAMBDA_INVOKE_ERRORS = (
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
)
SUBMIT_RETRY_INTERVAL_SECONDS = 2
SUBMIT_RETRY_ATTEMPTS = 6
SUBMIT_RETRY_BACKOFF = 2
# After an attempt failed so, its retry takes the attempt's job over within the retrier's
# longest wait plus the retry's own invocation: until then, the job is not a cancelled task's.
RETRY_TAKEOVER_SECONDS = (
    SUBMIT_RETRY_INTERVAL_SECONDS * SUBMIT_RETRY_BACKOFF ** (SUBMIT_RETRY_ATTEMPTS - 1)
    + SUBMIT_TIMEOUT_SECONDS
)

# Keys Step Functions itself adds to an execution's input; they are never overrides.
SERVICE_INPUT_PREFIX = "AWS_STEP_FUNCTIONS_"

ERROR_PREFIX = "HeteroTraining."


class Errors:
    """The error names a training task fails with (``add_retry`` / ``add_catch`` match them).

    One attribute per name, the name's last part in capitals (``HeteroTraining.CapacityError``
    is ``Errors.CAPACITY_ERROR``). Every failure's cause is a JSON object with
    ``TrainingJobName``, ``TrainingJobStatus``, ``SecondaryStatus`` and ``FailureReason`` (plus
    ``violations`` for invalid overrides).
    """

    #: The job could not get its instances: FailureReason starts with ``CapacityError``, or the
    #: job was stopped while still pending for capacity (MaxPendingTime, spot MaxWaitTime).
    CAPACITY_ERROR = f"{ERROR_PREFIX}CapacityError"
    #: CreateTrainingJob answered ``ResourceLimitExceeded`` (an account quota); no job exists.
    RESOURCE_LIMIT_EXCEEDED = f"{ERROR_PREFIX}ResourceLimitExceeded"
    #: The job failed for any other reason (algorithm or client error); cause: FailureReason.
    TRAINING_FAILED = f"{ERROR_PREFIX}TrainingFailed"
    #: The job reached its maximum runtime (``max_run``) and was stopped by SageMaker.
    MAX_RUNTIME_EXCEEDED = f"{ERROR_PREFIX}MaxRuntimeExceeded"
    #: The job was stopped by someone else (StopTrainingJob outside this run).
    STOPPED = f"{ERROR_PREFIX}Stopped"
    #: The execution input broke a rule; no job was created. Cause: the violations.
    INVALID_OVERRIDES = f"{ERROR_PREFIX}InvalidOverrides"
    #: A job with this run's name exists and was not created by this run; nothing is adopted.
    JOB_NAME_TAKEN = f"{ERROR_PREFIX}JobNameTaken"
    #: SageMaker or DynamoDB throttled the submission beyond the SDK's retries (retried).
    THROTTLED = f"{ERROR_PREFIX}Throttled"

    ALL = (
        CAPACITY_ERROR,
        RESOURCE_LIMIT_EXCEEDED,
        TRAINING_FAILED,
        MAX_RUNTIME_EXCEEDED,
        STOPPED,
        INVALID_OVERRIDES,
        JOB_NAME_TAKEN,
        THROTTLED,
    )
    #: What a capacity retry retries: no instances, or no quota. Never a training failure.
    CAPACITY_RETRYABLE = (CAPACITY_ERROR, RESOURCE_LIMIT_EXCEEDED)

    # The earlier, shorter names of three of them, kept working.
    CAPACITY = CAPACITY_ERROR
    RESOURCE_LIMIT = RESOURCE_LIMIT_EXCEEDED
    MAX_RUNTIME = MAX_RUNTIME_EXCEEDED


# The top-level name (``from hetero_constructs import TrainingErrors``).
TrainingErrors = Errors
_PENDING = ("Starting", "Pending", "LaunchingMLInstances")


def failure_error(job: Mapping[str, Any]) -> str:
    """The error name of a job that ended without completing (DescribeTrainingJob shape)."""
    reason = str(job.get("FailureReason") or "")
    secondary = job.get("SecondaryStatus")
    if reason.startswith("CapacityError") or secondary == "MaxWaitTimeExceeded":
        return Errors.CAPACITY_ERROR
    if secondary == "MaxRuntimeExceeded":
        return Errors.MAX_RUNTIME_EXCEEDED
    if job.get("TrainingJobStatus") == "Stopped":
        return Errors.CAPACITY_ERROR if _stopped_while_pending(job) else Errors.STOPPED
    return Errors.TRAINING_FAILED


def _stopped_while_pending(job: Mapping[str, Any]) -> bool:
    """Stopped before any instance trained: the last state before Stopping was a pending one."""
    transitions = [
        t.get("Status")
        for t in job.get("SecondaryStatusTransitions") or []
        if t.get("Status") not in ("Stopping", "Stopped")
    ]
    if not transitions:
        return False
    pending_for_capacity = "capacity" in str(job.get("FailureReason") or "").lower() or any(
        "capacity" in str(t.get("StatusMessage") or "").lower()
        for t in job.get("SecondaryStatusTransitions") or []
    )
    return transitions[-1] in _PENDING and pending_for_capacity


# What the task's output holds: DescribeTrainingJob's own names, so that
# ``$.ModelArtifacts.S3ModelArtifacts`` works as with aws-cdk-lib's SageMakerCreateTrainingJob.
OUTPUT_FIELDS = (
    "TrainingJobName",
    "TrainingJobArn",
    "TrainingJobStatus",
    "SecondaryStatus",
    "FailureReason",
    "ModelArtifacts",
    "AlgorithmSpecification",
    "ResourceConfig",
    "CreationTime",
    "TrainingStartTime",
    "TrainingEndTime",
    "TrainingTimeInSeconds",
    "BillableTimeInSeconds",
    "FinalMetricDataList",
)


def _plain(value: Any) -> Any:
    """DescribeTrainingJob's datetimes as ISO 8601 strings (events already carry strings)."""
    return value.isoformat() if hasattr(value, "isoformat") else value


def task_output(job: Mapping[str, Any], attempt: int, variant: int = 0) -> dict[str, Any]:
    """The task's documented, stable output for a described job.

    ``AlgorithmSpecification`` keeps only ``TrainingImage`` (for SageMakerCreateModel),
    ``ResourceConfig`` only the instance groups or type and count that ran.
    """
    output: dict[str, Any] = {}
    for key in OUTPUT_FIELDS:
        if key not in job:
            continue
        value = job[key]
        if key == "AlgorithmSpecification":
            value = {"TrainingImage": value.get("TrainingImage")}
        elif key == "FinalMetricDataList":
            # The last value of each metric (the spec's and the built-in ones), at most 40.
            value = [{k: _plain(v) for k, v in entry.items()} for entry in value or []]
        elif key == "ResourceConfig":
            value = {
                k: value[k]
                for k in ("InstanceGroups", "InstanceType", "InstanceCount")
                if k in value
            }
        output[key] = _plain(value)
    output["Attempt"] = attempt
    output["Variant"] = variant
    return output


def failure_cause(job: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """The cause object of every failure: name, status, secondary status, reason."""
    return {
        "TrainingJobName": job.get("TrainingJobName"),
        "TrainingJobStatus": job.get("TrainingJobStatus"),
        "SecondaryStatus": job.get("SecondaryStatus"),
        "FailureReason": job.get("FailureReason"),
        **extra,
    }


__all__ = [
    "CREATION_WINDOW_SECONDS",
    "ERROR_PREFIX",
    "EXECUTION_EVENT_SOURCE",
    "EXECUTION_EVENT_TYPE",
    "JOB_EVENT_SOURCE",
    "JOB_EVENT_TYPE",
    "LAMBDA_INVOKE_ERRORS",
    "OUTPUT_FIELDS",
    "RETRY_TAKEOVER_SECONDS",
    "SERVICE_INPUT_PREFIX",
    "SLOT_TAG_SEPARATOR",
    "STATE_MACHINE_OUTPUT_PREFIX",
    "STOPPING_EXECUTION_STATUSES",
    "SUBMIT_RETRY_ATTEMPTS",
    "SUBMIT_RETRY_BACKOFF",
    "SUBMIT_RETRY_INTERVAL_SECONDS",
    "SUBMIT_TIMEOUT_SECONDS",
    "TAG_ATTEMPT",
    "TAG_EXECUTION",
    "TAG_RUNNER",
    "TAG_SLOT",
    "TERMINAL_JOB_STATUSES",
    "Errors",
    "TrainingErrors",
    "failure_cause",
    "failure_error",
    "task_output",
]
