"""Where moto's Step Functions executions live and end differently from AWS's.

Nested executions, the context object, StopExecution, executions that time out or fail while a
task waits on its token, status changes reported for EventBridge, task-token callbacks, and a
fresh token per attempt (see ``moto_gaps`` for the list of gaps).
"""

from __future__ import annotations

import contextlib
import datetime
import threading
import uuid
from collections.abc import Callable
from typing import Any

from hetero_constructs.local.moto_errors import service_error
from hetero_constructs.local.patching import Patches, aws_timestamp

#: Called with (execution, status) when a standard execution starts or ends.
StatusListener = Callable[[Any, str], None]


def nested_executions(patches: Patches) -> None:
    """A ``.sync`` / ``.sync:2`` child is stopped when its parent stops waiting for it because
    the parent was stopped, timed out or failed (moto lets it run on)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_sfn as module,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import (
        ResourceCondition,
    )

    sfn_class = module.StateTaskServiceSfn
    evaluate = sfn_class._eval_integration_pattern
    waits_for_child = (ResourceCondition.Sync, ResourceCondition.Sync2)

    def evaluate_stopping_child(
        task: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: Any,
        state_credentials: Any,
    ) -> None:
        # StartExecution's answer, which the integration pattern reads first.
        started = env.stack[-1] if env.stack else None
        child = started.get("ExecutionArn") if isinstance(started, dict) else None
        try:
            evaluate(task, env, resource_runtime_part, normalised_parameters, state_credentials)
        finally:
            if child and task.resource.condition in waits_for_child and not env.is_running():
                _stop_child(child)

    patches.replace(sfn_class, "_eval_integration_pattern", evaluate_stopping_child)


def _stop_child(execution_arn: str) -> None:
    import boto3

    region = execution_arn.split(":")[3]
    client = boto3.client("stepfunctions", region_name=region)
    with contextlib.suppress(Exception):  # already ended
        client.stop_execution(
            executionArn=execution_arn,
            error="States.Aborted",
            cause="The parent execution stopped while this execution ran.",
        )


def context_object(patches: Patches) -> None:
    from moto.stepfunctions.parser.asl.component.state import state as state_module
    from moto.stepfunctions.parser.backend import execution_worker

    def state_data(**fields: Any) -> dict[str, Any]:
        entered = fields.get("EnteredTime")
        if isinstance(entered, str):
            fields["EnteredTime"] = aws_timestamp(datetime.datetime.fromisoformat(entered))
        return {**fields, "RetryCount": fields.get("RetryCount", 0)}

    def execution_data(**fields: Any) -> dict[str, Any]:
        start = fields.get("StartTime")
        if isinstance(start, datetime.datetime):
            fields["StartTime"] = aws_timestamp(start)
        return {**fields, "RedriveCount": fields.get("RedriveCount", 0)}

    patches.replace(state_module, "StateData", state_data)
    patches.replace(execution_worker, "ExecutionData", execution_data)


def stop_execution(patches: Patches, report: StatusReporter) -> None:
    from moto.stepfunctions.parser.api import (
        ExecutionAbortedEventDetails,
        ExecutionStatus,
        HistoryEventType,
    )
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.backend.execution import Execution
    from moto.stepfunctions.responses import StepFunctionResponse

    stop = Execution.stop

    def stop_at_once(
        execution: Any, stop_date: datetime.datetime, error: str | None, cause: str | None
    ) -> None:
        if execution.exec_status != ExecutionStatus.RUNNING:
            return
        stop(execution, stop_date=stop_date, error=error or None, cause=cause or None)
        env = execution.exec_worker.env if execution.exec_worker else None
        if env is not None:
            env.event_history_context.source_event_id = 0
            details = ExecutionAbortedEventDetails()
            if error:
                details["error"] = error
            if cause:
                details["cause"] = cause
            aborted: Any = {"executionAbortedEventDetails": details}
            _close(env, HistoryEventType.ExecutionAborted, aborted)
        execution.exec_status = ExecutionStatus.ABORTED
        execution.stop_date = stop_date
        if error:
            execution.error = error
        if cause:
            execution.cause = cause
        report(execution, "ABORTED")

    patches.replace(Execution, "stop", stop_at_once)

    # A stopped (or timed-out) program stays so: a Catch reached while it winds down must not
    # turn it into FAILED (moto's set_error overwrites any state).
    for name in ("set_error", "set_timed_out", "set_ended"):
        patches.replace(Environment, name, _unless_stopped(getattr(Environment, name)))

    def stop_execution_response(response: Any) -> Any:
        from moto.core.responses import ActionResult

        arn = response._get_param("executionArn")
        backend = response.stepfunction_backend
        execution = backend.describe_execution(arn)
        execution.stop(
            stop_date=datetime.datetime.now(tz=datetime.UTC),
            error=response._get_param("error"),
            cause=response._get_param("cause"),
        )
        return ActionResult({"stopDate": execution.stop_date})

    patches.replace(StepFunctionResponse, "stop_execution", stop_execution_response)


def _unless_stopped(method: Callable[..., None]) -> Callable[..., None]:
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped, ProgramTimedOut

    def guarded(env: Any, *args: Any, **kwargs: Any) -> None:
        if not isinstance(env._program_state, ProgramStopped | ProgramTimedOut):
            method(env, *args, **kwargs)

    return guarded


def _close(env: Any, event_type: Any = None, event_details: Any = None) -> None:
    """An execution has ended: record its last event (``event_type``, unless it is already the
    last one), record nothing after it, and close its waiting tasks (their tokens answer
    TaskDoesNotExist), as the service does. moto leaves a task of a stopped, timed-out or failed
    execution waiting: a late SendTaskFailure is accepted and appends TaskFailed and
    ExecutionFailed events after the execution's end."""
    from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackConsumerLeft

    manager = env.event_manager
    with _closing:
        if getattr(manager, "closed", False):
            return
        if event_type is not None:
            history = manager.get_event_history()
            if not history or history[-1].get("type") != event_type:
                manager.add_event(
                    context=env.event_history_context,
                    event_type=event_type,
                    event_details=event_details,
                )
        manager.add_event = lambda *args, **kwargs: 0
        manager.closed = True
    for endpoint in list(env.callback_pool_manager._pool.values()):
        endpoint.report(CallbackConsumerLeft())
        endpoint.interrupt_all()


_closing = threading.Lock()


class StatusReporter:
    """Reports each status of an execution once; nothing after ABORTED (until a redrive)."""

    def __init__(self, on_status: StatusListener) -> None:
        self._on_status = on_status
        self._reported: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def __call__(self, execution: Any, status: str) -> None:
        from moto.stepfunctions.parser.backend.execution import SyncExecution

        if isinstance(execution, SyncExecution):
            return  # express executions send no status-change events
        arn = execution.exec_arn
        with self._lock:
            if (arn, status) in self._reported or (arn, "ABORTED") in self._reported:
                return
            self._reported.add((arn, status))
        self._on_status(execution, status)

    def has_reported(self, execution: Any, status: str) -> bool:
        with self._lock:
            return (execution.exec_arn, status) in self._reported

    def redriven(self, execution: Any) -> None:
        """A redriven execution runs again: RUNNING, and its next end, are reported anew."""
        arn = execution.exec_arn
        with self._lock:
            self._reported = {reported for reported in self._reported if reported[0] != arn}
        self(execution, "RUNNING")


def status_changes(patches: Patches, report: StatusReporter) -> None:
    from moto.stepfunctions.parser.api import ExecutionTimedOutEventDetails, HistoryEventType
    from moto.stepfunctions.parser.backend import execution as module

    start = module.Execution.start

    def start_reporting(execution: Any) -> None:
        start(execution)
        report(execution, "RUNNING")

    terminated = module.BaseExecutionWorkerCommunication.terminated

    def terminated_reporting(communication: Any) -> None:
        execution = communication.execution
        aborted = execution.exec_status == "ABORTED"
        stop_date = execution.stop_date
        terminated(communication)
        if aborted:  # keep the time StopExecution was answered
            execution.stop_date = stop_date
        status = str(execution.exec_status.value)
        env = execution.exec_worker.env if execution.exec_worker else None
        if env is not None and status == "TIMED_OUT":
            # moto records ExecutionTimedOut only once the waiting state returns (never, for a
            # task waiting on its token): the service records it at the timeout.
            timed_out: Any = {"executionTimedOutEventDetails": ExecutionTimedOutEventDetails()}
            _close(env, HistoryEventType.ExecutionTimedOut, timed_out)
        elif env is not None and status == "FAILED":
            _close(env)  # ExecutionFailed is recorded; a Parallel's other branches may wait
        report(execution, status)

    patches.replace(module.Execution, "start", start_reporting)
    patches.replace(module.BaseExecutionWorkerCommunication, "terminated", terminated_reporting)


#: Why a token is refused before it is answered (raise the error), or None to answer it.
TokenCheck = Callable[[str], None]
#: What a token moto does not know answers (raise the error), or None for InvalidToken.
UnknownToken = Callable[[Any, str], None]


class TokenAnswers:
    """The checks SendTaskSuccess and SendTaskFailure make around ``task_callbacks``'s answer:
    ``refusals`` run first (``moto_heartbeats``: a closed task), ``unknown`` when no running
    execution knows the token (``moto_redrive``: a token of a run before a redrive). One
    replacement of each backend method holds them all."""

    def __init__(self) -> None:
        self.refusals: list[TokenCheck] = []
        self.unknown: list[UnknownToken] = []


def task_callbacks(patches: Patches, answers: TokenAnswers) -> None:
    """SendTaskFailure keeps its cause; a token of a stopped execution is gone, not invalid;
    a token answers once; an execution started without a name gets one."""
    from moto.stepfunctions.exceptions import InvalidToken
    from moto.stepfunctions.parser.asl.eval.callback.callback import (
        CallbackConsumerTimeout,
        CallbackNotifyConsumerError,
        CallbackOutcomeFailure,
        CallbackOutcomeSuccess,
    )
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(response: Any) -> Any:
        from moto.core.responses import EmptyResult

        response.stepfunction_backend.send_task_failure(
            response._get_param("taskToken"),
            error=response._get_param("error"),
            cause=response._get_param("cause"),
        )
        return EmptyResult()

    answering = threading.Lock()

    def notify(backend: Any, task_token: str, outcome: Any) -> None:
        for refusal in answers.refusals:
            refusal(task_token)
        # Every execution's tokens (moto looks only at running ones for success), and errors
        # with their messages (moto raises them without one, which fails in the response).
        for execution in backend._get_executions():
            env = execution.exec_worker.env if execution.exec_worker else None
            if env is None:
                continue
            try:
                with answering:
                    endpoint = env.callback_pool_manager.get(task_token)
                    if endpoint is not None and endpoint.get_outcome() is not None:
                        # The service closes a task at its first answer.
                        raise service_error("TaskTimedOut", _GONE)
                    if env.callback_pool_manager.notify(callback_id=task_token, outcome=outcome):
                        return
            except CallbackNotifyConsumerError as consumer_error:
                if isinstance(consumer_error.callback_consumer_error, CallbackConsumerTimeout):
                    raise service_error(
                        "TaskTimedOut", "Task Timed Out: the task has timed out"
                    ) from None
                raise service_error("TaskDoesNotExist", _GONE_NOW) from None
        for unknown in answers.unknown:
            unknown(backend, task_token)
        raise InvalidToken()

    def send_task_success(backend: Any, task_token: str, outcome: str) -> None:
        notify(backend, task_token, CallbackOutcomeSuccess(callback_id=task_token, output=outcome))

    def send_task_failure_backend(
        backend: Any, task_token: str, error: str | None = None, cause: str | None = None
    ) -> None:
        notify(
            backend,
            task_token,
            CallbackOutcomeFailure(callback_id=task_token, error=error, cause=cause),
        )

    start_execution = StepFunctionsParserBackend.start_execution

    def start_execution_named(
        backend: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        # The service names an execution started without a name with a UUID (moto: None).
        return start_execution(
            backend, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs
        )

    patches.replace(StepFunctionResponse, "send_task_failure", send_task_failure)
    patches.replace(StepFunctionsParserBackend, "send_task_success", send_task_success)
    patches.replace(StepFunctionsParserBackend, "send_task_failure", send_task_failure_backend)
    patches.replace(StepFunctionsParserBackend, "start_execution", start_execution_named)


_GONE = "Task Timed Out: 'Provided task does not exist anymore'"
_GONE_NOW = "Provided task does not exist anymore"


def fresh_token_per_attempt(patches: Patches) -> None:
    """Each attempt of a retried callback task has its own task token, as in the service.

    moto makes one token when the state is entered: a retry would wait on the endpoint that
    already holds the failed attempt's outcome and fail again at once. A late report to an
    earlier attempt's token answers TaskDoesNotExist.
    """
    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_callback as module,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import (
        ResourceCondition,
    )
    from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackConsumerLeft

    evaluate = ExecutionState._evaluate_with_timeout

    def evaluate_with_fresh_token(task: Any, env: Any) -> None:
        context = env.states.context_object
        retrying = (context.context_object_data.get("State") or {}).get("RetryCount", 0) > 0
        if (
            retrying
            and task._is_integration_pattern()
            and ResourceCondition.WaitForTaskToken in task._supported_integration_patterns
        ):
            previous = (context.context_object_data.get("Task") or {}).get("Token")
            endpoint = env.callback_pool_manager.get(previous) if previous else None
            if endpoint is not None:
                endpoint.report(CallbackConsumerLeft())
            env.callback_pool_manager.add(context.update_task_token())
        evaluate(task, env)

    patches.replace(
        module.StateTaskServiceCallback, "_evaluate_with_timeout", evaluate_with_fresh_token
    )


__all__ = [
    "StatusListener",
    "StatusReporter",
    "TokenAnswers",
    "TokenCheck",
    "UnknownToken",
    "context_object",
    "fresh_token_per_attempt",
    "nested_executions",
    "status_changes",
    "stop_execution",
    "task_callbacks",
]
