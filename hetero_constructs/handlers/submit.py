"""Submit Lambda: validate the execution's overrides, name the attempt, create its job.

Invoked by a training task with ``lambda:invoke.waitForTaskToken``. The task completes later,
when the job's end reaches ``events.handler`` (or the reconciler). Failures the state machine can
act on are sent as task failures with the ``HeteroTraining.*`` error names; transient ones are
raised so that the task's own retry runs the submission again.

Idempotent per attempt: a retried invocation finds the job its slot already has (an earlier
invocation created it, then failed to return) and continues it instead of creating a second.
Every write is conditional (docs/lifecycle.md): of two racing invocations one creates the job,
the other changes nothing; a late invocation of an earlier attempt never touches a newer one.
The package carries the core (the same rules as at synth) and the botocore SageMaker model the
spec was validated against (``AWS_DATA_PATH``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from hetero_constructs.contract import lifecycle
from hetero_constructs.contract.naming import attempt_job_name
from hetero_constructs.handlers import (
    control,
    environment,
    lanes,
    outcome,
    task_history,
    token_store,
)
from hetero_constructs.handlers.attempt import (
    InvalidOverrides,
    Run,
    describe,
    is_ours,
    prepare,
    request_digest,
    with_markers,
)
from hetero_constructs.handlers.data_secret import with_data_secret

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
_SLOT_TTL = outcome.SLOT_TTL_SECONDS
# How the override checks name the overrides' root in a violation's path.
_EXECUTION_INPUT = "execution input"


class Throttled(Exception):
    """Throttled or a transient service error after the SDK's own retries: retry the task."""


# Lambda reports an exception's class name as the error Step Functions matches.
Throttled.__name__ = Throttled.__qualname__ = lifecycle.Errors.THROTTLED


def _bounded(violations: list[Violation]) -> tuple[Violation, ...]:
    from hetero_constructs.spec.violations import bounded

    return bounded(violations)


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
        self.dynamodb = boto3.client("dynamodb", region_name=environment.region())
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

    def lost(self, why: str) -> dict[str, Any]:
        """A newer or racing invocation holds the slot: this one changes nothing."""
        slot = token_store.get_slot(self.dynamodb, self.run.slot.digest)
        return {"TrainingJobName": slot.job if slot else None, "superseded": why}

    def resume(self, slot: token_store.SlotItem) -> dict[str, Any] | None:
        """Continue the slot's job when an earlier invocation created it and it is unreported.

        A job that completed is never run again: if its success was already reported (and this
        invocation is a retry that crossed it), it is reported once more to this attempt.
        """
        if slot.job is None:
            return None
        if slot.reported:
            done = describe(self.sagemaker, slot.job)
            if done is None or done.get("TrainingJobStatus") != "Completed":
                return None  # it failed: this is a retry, which gets a new attempt
            # A refused attempt (ResourceLimitExceeded) is reported without a job: its name may
            # since be someone else's.
            request = self.own_request(slot, slot.job)
            if request is None or not is_ours(
                self.sagemaker, done, self.run, slot.attempt, request
            ):
                return None
            run = self.run
            outcome.report(self.stepfunctions, run.task_token, done, slot.attempt, slot.variant)
            return {"TrainingJobName": slot.job, "resumed": True}
        job = describe(self.sagemaker, slot.job)
        if job is None:
            job = self.await_earlier_creation(slot.job, slot.written_at)
        request = self.own_request(slot, slot.job) if job is not None else None
        if job is None or request is None:
            return None  # the earlier invocation never created it: start a new attempt
        if not is_ours(self.sagemaker, job, self.run, slot.attempt, request):
            # Someone else took the name in between: the marker tags can be copied (they are
            # derived from what the execution shows), the role and output path cannot.
            return None
        # This attempt takes the job over: first the slot (a racing or older invocation that
        # read the same version loses), then the job item (never over a newer attempt's token).
        mine = self.run.retry_count
        if mine > slot.holder and not token_store.put_slot(
            self.dynamodb,
            dataclasses.replace(slot.held_by(self.run.task_token), holder=mine),
            _SLOT_TTL,
        ):
            return self.lost("a racing invocation took the slot")
        item = self.job_item(slot.job, slot.attempt, slot.variant, request)
        if not token_store.put_job(self.dynamodb, item, self.run.ttl_seconds, take_over=True):
            return self.lost("a newer attempt holds the job")
        if job.get("TrainingJobStatus") in outcome.TERMINAL:
            outcome.settle(self.dynamodb, self.stepfunctions, item, job)
        return {"TrainingJobName": slot.job, "resumed": True}

    def job_item(
        self, name: str, attempt: int, variant: int, request: dict[str, Any]
    ) -> token_store.JobItem:
        run = self.run
        execution = outcome.describe_execution(self.stepfunctions, run.slot.execution_arn) or {}
        return token_store.JobItem(
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
            holder=run.retry_count,
            execution_start=run.slot.execution_start,
            redrive_count=int(execution.get("redriveCount") or 0),
            request_digest=request_digest(request),
        )

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
            job = describe(self.sagemaker, name)
            if job is not None:
                return job
        return None

    def release(self, item: token_store.JobItem, failures: int, *, refused: bool = False) -> None:
        """No job will have the slot's name: its retry need not wait for it. ``refused``: the
        service refused the attempt for a quota (the next one moves to the next fallback)."""
        slot = token_store.get_slot(self.dynamodb, item.slot)
        written = token_store.SlotItem(
            item.slot,
            item.name if refused else None,
            item.attempt,
            item.variant,
            refused,
            failures + (1 if refused else 0),
            holder=max(item.token_holder, slot.holder if slot else 0),
            version=slot.version if slot else 0,
            token=slot.token if slot else "",
            chain=slot.chain if slot else (),
        )
        token_store.put_slot(self.dynamodb, written, _SLOT_TTL, only_if_job=item.name)

    def submit(self) -> dict[str, Any]:
        """Find this entry's lane (``lanes``), then go on with its attempt there."""
        lane = 0
        for _ in range(2 * lanes.MAX_LANES):
            try:
                lane, previous = lanes.choose(self.dynamodb, self.stepfunctions, self.run, lane)
            except lanes.TaskClosed as closed:
                return {"TrainingJobName": None, "superseded": str(closed)}
            self.run = dataclasses.replace(self.run, slot=self.run.slot.in_lane(lane))
            answer = self.submit_in_lane(previous)
            if answer is not None:
                return answer
            # An identical entry claimed the lane first: look again from it on.
        raise lanes.TooManyLanes(f"{self.run.slot.state_name!r}: the lanes kept changing")

    def submit_in_lane(self, previous: token_store.SlotItem | None) -> dict[str, Any] | None:
        """The attempt in the chosen lane (its slot as read: ``previous``); None when another
        entry claimed the lane first."""
        run = self.run
        if previous is not None:
            if run.retry_count < previous.holder:
                # A late invocation of an earlier attempt: its task was retried since.
                return self.lost(f"attempt {previous.holder} holds the slot")
            resumed = self.resume(previous)
            if resumed is not None:
                return resumed
        attempt = run.retry_count
        failures = previous.capacity_failures if previous else 0
        name = ""

        def name_of(prefix: str) -> str:
            nonlocal name
            name = attempt_job_name(prefix, run.slot, attempt)
            return name

        try:
            # Each capacity failure so far moves the run to the next fallback variant.
            request, variant = prepare(self.event, name_of, failures)
        except InvalidOverrides as invalid:
            violations = [v.to_dict() for v in _bounded(invalid.violations)]
            origin = self.overrides_origin()
            reason = "The execution input breaks the spec; no job was created."
            if origin is not None:  # produced by an earlier state, not the execution's input
                reason = f"The overrides ({origin}) break the spec; no job was created."
                for violation in violations:
                    path = str(violation.get("path") or "")
                    if path.startswith(_EXECUTION_INPUT):
                        violation["path"] = origin + path[len(_EXECUTION_INPUT) :]
            return self.fail(
                lifecycle.Errors.INVALID_OVERRIDES,
                {
                    "TrainingJobName": None,
                    "TrainingJobStatus": None,
                    "SecondaryStatus": None,
                    "FailureReason": reason,
                    # Bounded, so that the cause fits Step Functions' 32 KB limit.
                    "violations": violations,
                },
            )
        item = self.job_item(name, attempt, variant, request)
        request = with_markers(request, run, attempt)
        # The slot first, over the version read: of two racing invocations one goes on. Once it
        # names the job, a retry waits for the job (see await_earlier_creation).
        claim = token_store.SlotItem(
            run.slot.digest,
            name,
            attempt,
            variant,
            False,
            failures,
            holder=attempt,
            version=previous.version if previous else 0,
            chain=previous.chain if previous else (),
        ).held_by(run.task_token)
        if not token_store.put_slot(self.dynamodb, claim, _SLOT_TTL, fresh=previous is None):
            now = token_store.get_slot(self.dynamodb, run.slot.digest)
            if now is None or lanes.is_own(now, run):
                return self.lost("a racing invocation took the slot")
            return None
        try:
            written = token_store.put_job(self.dynamodb, item, run.ttl_seconds)
        except Exception:
            self.release(item, failures)
            raise
        if not written:
            # Another run's unsettled job has this name (a digest collision): never adopted.
            self.release(item, failures)
            return self.name_taken(item, None)
        self.stop_cancelled_jobs(name)
        try:
            self.sagemaker.create_training_job(**with_data_secret(request))
        except ClientError as error:
            return self.create_failed(error, item, request, failures)
        except Exception:
            # A timeout or a lost connection: the job may have been created all the same, or
            # may still be. Its item stays: the retry (which waits for the job) or the
            # reconciler (which stops an orphan, or forgets a job never created) settles it.
            job = describe(self.sagemaker, name)
            if job is not None:
                if is_ours(self.sagemaker, job, run, attempt, request):
                    return self.continue_created(item, job)
                # Someone else's job has the name: nothing of ours will (it would be stopped).
                token_store.forget_job(self.dynamodb, item)
            raise
        self.stop_if_orphaned(item)
        return {"TrainingJobName": name, "attempt": attempt, "variant": variant}

    def overrides_origin(self) -> str | None:
        """The state that produced the task's overrides, and their path in its output (its
        execution's history); None when they are the execution's input, or on any error (the
        violations then keep their paths)."""
        overrides = self.event.get("input")
        if overrides in (None, {}):
            return None
        try:
            return task_history.overrides_origin(
                self.stepfunctions, self.run.slot.execution_arn, self.run.task_token, overrides
            )
        except ClientError:
            return None

    def name_taken(self, item: token_store.JobItem, job: dict[str, Any] | None) -> dict[str, Any]:
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

    def create_failed(
        self,
        error: ClientError,
        item: token_store.JobItem,
        request: dict[str, Any],
        failures: int,
    ) -> dict[str, Any]:
        code = outcome.error_code(error)
        job = None
        if code == "ResourceInUse" or code in TRANSIENT:
            # The job may exist all the same: a 5xx can answer a request that created it, and
            # the SDK's retry of a lost answer finds the name taken.
            job = describe(self.sagemaker, item.name)
            if job is not None and is_ours(self.sagemaker, job, self.run, item.attempt, request):
                return self.continue_created(item, job)
        token_store.forget_job(self.dynamodb, item)
        if code == "ResourceInUse":
            self.release(item, failures)
            return self.name_taken(item, job)
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
            self.release(item, failures, refused=True)
            return self.fail(lifecycle.Errors.RESOURCE_LIMIT_EXCEEDED, cause)
        self.release(item, failures)
        return self.fail(lifecycle.Errors.TRAINING_FAILED, cause)

    def continue_created(self, item: token_store.JobItem, job: dict[str, Any]) -> dict[str, Any]:
        """Go on with the attempt's job, created although CreateTrainingJob answered an error."""
        if job.get("TrainingJobStatus") in outcome.TERMINAL:
            outcome.settle(self.dynamodb, self.stepfunctions, item, job)
        else:
            self.stop_if_orphaned(item)
        return {"TrainingJobName": item.name, "alreadySubmitted": True}

    def stop_if_orphaned(self, item: token_store.JobItem) -> None:
        """The execution may have ended while the job was being created: stop the job then.
        (A task closed meanwhile is left to the reconcile pass: a retry of it takes the job
        over, see ``resume``.)"""
        execution = outcome.describe_execution(self.stepfunctions, self.run.slot.execution_arn)
        if not outcome.run_has_ended(execution, item):
            return
        current = token_store.get_job(self.dynamodb, item.name)
        if current is not None and current.task_token != self.run.task_token:
            return  # a retried invocation of this attempt now waits for the job
        self._stop(item.name)

    def stop_cancelled_jobs(self, name: str) -> None:
        """Before a new job runs: stop the jobs of this execution whose tasks no longer wait
        (a retried Parallel's cancelled branch), so that at most one runs at any time. Best
        effort: a failed look (throttled) leaves them to the reconcile pass, which stops them
        too; it never fails the submission."""
        try:
            self._stop_cancelled_jobs(name)
        except ClientError:
            return

    def _stop_cancelled_jobs(self, name: str) -> None:
        now = time.time()
        for other in token_store.jobs_of_execution(self.dynamodb, self.run.slot.execution_arn):
            if other.name == name or other.role_arn != self.run.control_role:
                continue
            if outcome.heartbeat(self.stepfunctions, other.task_token):
                continue
            execution = self.run.slot.execution_arn
            if task_history.retry_pending(self.stepfunctions, execution, other.task_token, now):
                continue  # its attempt's retry is coming to take it over
            job = describe(self.sagemaker, other.name)
            running = job is not None and job.get("TrainingJobStatus") == "InProgress"
            if running and job is not None and outcome.is_own_job(self.sagemaker, other, job):
                self._stop(other.name)

    def _stop(self, name: str) -> None:
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
