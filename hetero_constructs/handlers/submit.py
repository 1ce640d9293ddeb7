"""Submit Lambda: validate the execution's overrides, name the attempt, create its job.

Invoked by a training task with ``lambda:invoke.waitForTaskToken``. The task completes later,
when the job's end reaches ``events.handler`` (or the reconciler). Failures the state machine can
act on are sent as task failures with the ``HeteroTraining.*`` error names; transient ones are
raised so that the task's own retry runs the submission again.

Idempotent per attempt: a retried invocation finds the job its slot already has (an earlier
invocation created it, then failed to return) and continues it instead of creating a second.
The package carries the core (the same rules as at synth) and the botocore SageMaker model the
spec was validated against (``AWS_DATA_PATH``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from hetero_constructs.handlers import control, outcome, token_store
from hetero_constructs.handlers.data_secret import with_data_secret
from hetero_constructs.run import lifecycle
from hetero_constructs.run.naming import RunSlot, attempt_job_name

if TYPE_CHECKING:
    from hetero_constructs.spec.violations import Violation

TRANSIENT = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "InternalFailure",
        "InternalServerError",
        "ServiceUnavailable",
        "ServiceUnavailableException",
    }
)
# How often a retry looks for the job an earlier invocation of its attempt may still create.
CREATION_POLL_SECONDS = 3.0
# Time kept in hand at the end of an invocation (answering, the retry's own writes).
_TIME_IN_HAND_SECONDS = 10.0


class Throttled(Exception):
    """Throttled or a transient service error after the SDK's own retries: retry the task."""


# Lambda reports an exception's class name as the error Step Functions matches.
Throttled.__name__ = Throttled.__qualname__ = lifecycle.Errors.THROTTLED


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
        return Run(
            slot=RunSlot(
                execution_arn=context["executionArn"],
                execution_start=str(context.get("executionStartTime", "")),
                state_name=str(context.get("stateName", "")),
                state_entered=str(context.get("stateEnteredTime", "")),
                job_key=str(event.get("jobKey") or ""),
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
    from hetero_constructs.planning import plan
    from hetero_constructs.request.context import Deployment
    from hetero_constructs.run.overrides import apply_overrides
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


def _bounded(violations: list[Violation]) -> tuple[Violation, ...]:
    from hetero_constructs.spec.violations import bounded

    return bounded(violations)


def _marker_tags(run: Run, attempt: int) -> dict[str, str]:
    return {
        lifecycle.TAG_RUNNER: run.runner_id,
        lifecycle.TAG_EXECUTION: run.slot.execution_arn,
        lifecycle.TAG_SLOT: run.slot.digest,
        lifecycle.TAG_ATTEMPT: str(attempt),
    }


def _with_markers(request: dict[str, Any], run: Run, attempt: int) -> dict[str, Any]:
    markers = _marker_tags(run, attempt)
    user_tags = [t for t in request.get("Tags", []) if t["Key"] not in markers]
    return {**request, "Tags": [*user_tags, *({"Key": k, "Value": v} for k, v in markers.items())]}


def _describe(sagemaker: Any, name: str) -> dict[str, Any] | None:
    try:
        return dict(sagemaker.describe_training_job(TrainingJobName=name))
    except ClientError as error:
        if outcome.error_code(error) in ("ValidationException", "ResourceNotFound"):
            return None
        raise


def _is_ours(sagemaker: Any, job: dict[str, Any], run: Run, attempt: int, request: Any) -> bool:
    """Created by this very attempt: its marker tags, role and output are ours."""
    tags = sagemaker.list_tags(ResourceArn=job["TrainingJobArn"]).get("Tags", [])
    found = {t["Key"]: t["Value"] for t in tags}
    markers = _marker_tags(run, attempt)
    same_markers = all(found.get(key) == value for key, value in markers.items())
    if request is None:
        return same_markers
    return (
        same_markers
        and job.get("RoleArn") == request.get("RoleArn")
        and job.get("OutputDataConfig", {}).get("S3OutputPath")
        == request["OutputDataConfig"]["S3OutputPath"]
    )


class Submission:
    """One invocation: its clients, its run, and the steps of an attempt."""

    def __init__(self, event: dict[str, Any], remaining_seconds: float | None = None) -> None:
        """``remaining_seconds``: how long the invocation may still run (its Lambda context)."""
        self.event = event
        self.run = Run.of(event)
        budget = remaining_seconds
        if budget is None:
            budget = lifecycle.SUBMIT_TIMEOUT_SECONDS
        self.deadline = time.monotonic() + budget - _TIME_IN_HAND_SECONDS
        self.dynamodb = boto3.client("dynamodb")
        self.sagemaker = control.client(self.run.control_role, "sagemaker")
        self.stepfunctions = control.client(self.run.control_role, "stepfunctions")

    def fail(self, error: str, cause: dict[str, Any]) -> dict[str, Any]:
        outcome.send_failure(self.stepfunctions, self.run.task_token, error, cause)
        return {"failed": error, **cause}

    def own_request(self, slot: token_store.SlotItem, name: str) -> dict[str, Any] | None:
        """The request the slot's attempt sent for a job called ``name`` (what its job matches)."""
        try:
            request, _ = prepare(self.event, lambda _prefix: name, slot.capacity_failures)
        except InvalidOverrides:
            return None
        return request

    def resume(self, slot: token_store.SlotItem) -> dict[str, Any] | None:
        """Continue the slot's job when an earlier invocation created it and it is unreported.

        A job that completed is never run again: if its success was already reported (and this
        invocation is a retry that crossed it), it is reported once more to this attempt.
        """
        if slot.job is None:
            return None
        if slot.reported:
            done = _describe(self.sagemaker, slot.job)
            if done is None or done.get("TrainingJobStatus") != "Completed":
                return None  # it failed: this is a retry, which gets a new attempt
            # A refused attempt (ResourceLimitExceeded) is reported without a job: its name may
            # since be someone else's.
            request = self.own_request(slot, slot.job)
            if request is None or not _is_ours(
                self.sagemaker, done, self.run, slot.attempt, request
            ):
                return None
            run = self.run
            outcome.report(self.stepfunctions, run.task_token, done, slot.attempt, slot.variant)
            return {"TrainingJobName": slot.job, "resumed": True}
        job = _describe(self.sagemaker, slot.job)
        if job is None:
            job = self.await_earlier_creation(slot.job, slot.written_at)
        request = self.own_request(slot, slot.job) if job is not None else None
        if job is None or request is None:
            return None  # the earlier invocation never created it: start a new attempt
        if not _is_ours(self.sagemaker, job, self.run, slot.attempt, request):
            # Someone else took the name in between: the marker tags can be copied (they are
            # derived from what the execution shows), the role and output path cannot.
            return None
        item = token_store.JobItem(
            slot.job,
            self.run.task_token,
            self.run.slot.execution_arn,
            self.run.slot.digest,
            slot.attempt,
            slot.variant,
            self.run.control_role,
            int(time.time()),
            request["RoleArn"],
            request["OutputDataConfig"]["S3OutputPath"],
        )
        token_store.put_job(self.dynamodb, item, self.run.ttl_seconds)
        if job.get("TrainingJobStatus") in outcome.TERMINAL:
            outcome.settle(self.dynamodb, self.stepfunctions, item, job)
        return {"TrainingJobName": slot.job, "resumed": True}

    def await_earlier_creation(self, name: str, written_at: int) -> dict[str, Any] | None:
        """The slot's job ``name``, if the invocation that wrote the slot (at ``written_at``)
        creates it after all.

        Step Functions retries the task when its call to Lambda fails (``SdkClientException``,
        a client timeout) while the invocation runs on. Until that invocation's timeout has
        passed, it may still create the job: a retry that started another attempt then would
        pay for two jobs. So the retry waits out that window, in this invocation or, if its own
        time runs short, in the next (``HeteroTraining.Throttled`` is retried).
        """
        window_ends = written_at + lifecycle.CREATION_WINDOW_SECONDS
        while time.time() < window_ends:
            if time.monotonic() + CREATION_POLL_SECONDS > self.deadline:
                raise Throttled(
                    f"{name}: the invocation that named it may still create it (until "
                    f"{lifecycle.CREATION_WINDOW_SECONDS} s after it started); retry later"
                )
            time.sleep(CREATION_POLL_SECONDS)
            job = _describe(self.sagemaker, name)
            if job is not None:
                return job
        return None

    def release(self, item: token_store.JobItem, failures: int) -> None:
        """No job will have the slot's name: its retry need not wait for it."""
        token_store.put_slot(
            self.dynamodb,
            token_store.SlotItem(item.slot, None, item.attempt, item.variant, False, failures),
            outcome.SLOT_TTL_SECONDS,
            only_if_job=item.name,
        )

    def submit(self) -> dict[str, Any]:
        run = self.run
        previous = token_store.get_slot(self.dynamodb, run.slot.digest)
        if previous is not None:
            resumed = self.resume(previous)
            if resumed is not None:
                return resumed
        attempt = run.retry_count
        failures = previous.capacity_failures if previous else 0
        name_holder: list[str] = []

        def name_of(prefix: str) -> str:
            name_holder.append(attempt_job_name(prefix, run.slot, attempt))
            return name_holder[-1]

        try:
            # Each capacity failure so far moves the run to the next fallback variant.
            request, variant = prepare(self.event, name_of, failures)
        except InvalidOverrides as invalid:
            return self.fail(
                lifecycle.Errors.INVALID_OVERRIDES,
                {
                    "TrainingJobName": None,
                    "TrainingJobStatus": None,
                    "SecondaryStatus": None,
                    "FailureReason": "The execution input breaks the spec; no job was created.",
                    # Bounded, so that the cause fits Step Functions' 32 KB limit.
                    "violations": [v.to_dict() for v in _bounded(invalid.violations)],
                },
            )
        name = name_holder[-1]
        request = _with_markers(request, run, attempt)
        item = token_store.JobItem(
            name,
            run.task_token,
            run.slot.execution_arn,
            run.slot.digest,
            attempt,
            variant,
            run.control_role,
            int(time.time()),
            request["RoleArn"],
            request["OutputDataConfig"]["S3OutputPath"],
        )
        token_store.put_job(self.dynamodb, item, run.ttl_seconds)
        # The slot last: once it names the job, a retry waits for the job (see
        # await_earlier_creation), so nothing that can fail comes between it and the creation.
        try:
            token_store.put_slot(
                self.dynamodb,
                token_store.SlotItem(run.slot.digest, name, attempt, variant, False, failures),
                outcome.SLOT_TTL_SECONDS,
            )
        except Exception:
            token_store.forget_job(self.dynamodb, name)  # never to be created
            raise
        try:
            self.sagemaker.create_training_job(**with_data_secret(request))
        except ClientError as error:
            return self.create_failed(error, item, request, failures)
        except Exception:
            # A timeout or a lost connection: the job may have been created all the same, or
            # may still be. Its item stays: the retry (which waits for the job) or the
            # reconciler (which stops an orphan, or forgets a job never created) settles it.
            job = _describe(self.sagemaker, name)
            if job is not None:
                if _is_ours(self.sagemaker, job, run, attempt, request):
                    return self.continue_created(item, job)
                # Someone else's job has the name: nothing of ours will (it would be stopped).
                token_store.forget_job(self.dynamodb, name)
            raise
        self.stop_if_orphaned(name)
        return {"TrainingJobName": name, "attempt": attempt, "variant": variant}

    def create_failed(
        self,
        error: ClientError,
        item: token_store.JobItem,
        request: dict[str, Any],
        failures: int,
    ) -> dict[str, Any]:
        code = outcome.error_code(error)
        if code == "ResourceInUse" or code in TRANSIENT:
            # The job may exist all the same: a 5xx can answer a request that created it, and
            # the SDK's retry of a lost answer finds the name taken.
            job = _describe(self.sagemaker, item.name)
            if job is not None and _is_ours(self.sagemaker, job, self.run, item.attempt, request):
                return self.continue_created(item, job)
        if code == "ResourceInUse":
            token_store.forget_job(self.dynamodb, item.name)
            return self.fail(
                lifecycle.Errors.JOB_NAME_TAKEN,
                {
                    "TrainingJobName": item.name,
                    "TrainingJobStatus": job.get("TrainingJobStatus") if job else None,
                    "SecondaryStatus": job.get("SecondaryStatus") if job else None,
                    "FailureReason": "A training job with this run's name exists and was not "
                    "created by this run; it is not adopted.",
                },
            )
        token_store.forget_job(self.dynamodb, item.name)
        if code in TRANSIENT:
            # Answered, and no job has the name: the retry need not wait for one.
            self.release(item, failures)
            raise Throttled(str(error)) from error
        cause = {
            "TrainingJobName": item.name,
            "TrainingJobStatus": None,
            "SecondaryStatus": None,
            "FailureReason": f"CreateTrainingJob: {code}: {error}",
        }
        if code == "ResourceLimitExceeded":
            # A quota is per instance type: the next attempt moves to the next fallback.
            token_store.put_slot(
                self.dynamodb,
                token_store.SlotItem(
                    item.slot, item.name, item.attempt, item.variant, True, failures + 1
                ),
                outcome.SLOT_TTL_SECONDS,
                only_if_job=item.name,
            )
            return self.fail(lifecycle.Errors.RESOURCE_LIMIT, cause)
        return self.fail(lifecycle.Errors.TRAINING_FAILED, cause)

    def continue_created(self, item: token_store.JobItem, job: dict[str, Any]) -> dict[str, Any]:
        """Go on with the attempt's job, created although CreateTrainingJob answered an error."""
        if job.get("TrainingJobStatus") in outcome.TERMINAL:
            outcome.settle(self.dynamodb, self.stepfunctions, item, job)
        else:
            self.stop_if_orphaned(item.name)
        return {"TrainingJobName": item.name, "alreadySubmitted": True}

    def stop_if_orphaned(self, name: str) -> None:
        """The execution may have ended while the job was being created: stop the job then."""
        if outcome.execution_running(self.stepfunctions, self.run.slot.execution_arn):
            return
        item = token_store.get_job(self.dynamodb, name)
        if item is not None and item.task_token != self.run.task_token:
            return  # a retried invocation of this attempt now waits for the job
        try:
            self.sagemaker.stop_training_job(TrainingJobName=name)
        except ClientError as error:
            if outcome.error_code(error) not in ("ValidationException", "ResourceNotFound"):
                raise


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    try:
        remaining = context.get_remaining_time_in_millis() / 1000 if context else None
        return Submission(event, remaining).submit()
    except ClientError as error:
        if outcome.error_code(error) in TRANSIENT:
            raise Throttled(str(error)) from error
        raise


__all__ = [
    "InvalidOverrides",
    "Run",
    "Submission",
    "Throttled",
    "handler",
    "prepare",
]
