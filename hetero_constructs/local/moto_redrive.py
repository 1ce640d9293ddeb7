"""RedriveExecution, which moto (5.2.5, 5.2.6) does not have, as the service runs it.

The service (Step Functions API reference, RedriveExecution; developer guide, "Redriving
executions"): a FAILED, ABORTED or TIMED_OUT standard execution goes on from the state it did not
get through, with the input that state was entered with, under the same ARN and start date. The
states it got through are not run again; the state machine's ``TimeoutSeconds`` counts again
from the redrive; its history goes on with an ``ExecutionRedriven`` event. DescribeExecution
shows ``redriveCount`` (0 until a redrive), ``redriveDate``, ``redriveStatus`` and, when it
cannot be redriven, ``redriveStatusReason`` (and, as for every ended execution, ``stopDate``:
moto leaves it out of a TIMED_OUT one); ListExecutions shows ``redriveCount`` and
``redriveDate``. A RUNNING or SUCCEEDED execution answers ``ExecutionNotRedrivable``, an unknown
one ``ExecutionDoesNotExist``.

Here: the top-level state the run was in when it ended is entered again, with the input it was
first entered with and the variables assigned before it; a Parallel or inline Map there runs
only the branches and iterations that did not succeed, the others give their output again (a
redrive's history has no events of them); the context object's
``Execution`` gains ``RedriveCount`` and ``RedriveTime``; the RUNNING status change is reported
again (EventBridge), and so is the redriven run's end; a task token of an ended run still
answers ``TaskDoesNotExist``.

Gaps left, against the service: a Distributed Map re-runs every iteration, and a Parallel or Map
nested below the top-level state every branch and iteration (the service re-runs only those
that failed or were aborted); a Distributed Map's Map Run is not redriven on its own; an
express execution answers ``ExecutionNotRedrivable``; the 14-day redrivable period,
``clientToken`` and ListExecutions' ``redriveFilter`` are not modelled.
"""

from __future__ import annotations

import copy
import datetime
import threading
import time
from typing import Any

from hetero_constructs.local.moto_errors import service_error
from hetero_constructs.local.moto_executions import StatusReporter, TokenAnswers
from hetero_constructs.local.patching import Patches, aws_timestamp

#: The service's reasons (DescribeExecution's ``redriveStatusReason``) for the statuses that
#: cannot be redriven.
NOT_REDRIVABLE = {
    "RUNNING": "Execution is RUNNING and cannot be redriven",
    "SUCCEEDED": "Execution is SUCCEEDED and cannot be redriven",
}
EXPRESS_NOT_REDRIVABLE = "Executions of EXPRESS state machines cannot be redriven"


def redrive_reason(execution: Any) -> str | None:
    """Why ``execution`` cannot be redriven now, or None when it can."""
    from moto.stepfunctions.parser.api import StateMachineType
    from moto.stepfunctions.parser.backend.execution import SyncExecution

    if isinstance(execution, SyncExecution) or execution.sm_type == StateMachineType.EXPRESS:
        return EXPRESS_NOT_REDRIVABLE
    status = execution.exec_status.value if execution.exec_status is not None else "RUNNING"
    return NOT_REDRIVABLE.get(status)


def redrive_fields(execution: Any) -> dict[str, Any]:
    """DescribeExecution's redrive members for ``execution``."""
    fields: dict[str, Any] = {"redriveCount": getattr(execution, "redrive_count", 0)}
    if getattr(execution, "redrive_date", None) is not None:
        fields["redriveDate"] = execution.redrive_date
    reason = redrive_reason(execution)
    fields["redriveStatus"] = "NOT_REDRIVABLE" if reason else "REDRIVABLE"
    if reason:
        fields["redriveStatusReason"] = reason
    return fields


def redrive_execution(patches: Patches, report: StatusReporter, answers: TokenAnswers) -> None:
    """Install RedriveExecution and the redrive members of DescribeExecution and
    ListExecutions (see this module's docstring)."""
    from moto.core.responses import ActionResult
    from moto.stepfunctions.parser.asl.component.state.state import CommonStateField
    from moto.stepfunctions.responses import StepFunctionResponse

    eval_body = CommonStateField._eval_body

    def remembering_entry(state: Any, env: Any) -> None:
        # A top-level state (not a Parallel branch's or a Map iteration's): where a redrive
        # would go on from, with the input it was entered with.
        if not env.is_frame():
            env.redrive_from = (state.name, copy.deepcopy(env.states.get_input()))
        eval_body(state, env)

    redriving = threading.Lock()
    parts = _PartOutputs()
    _parallel_branches(patches, parts)
    _map_iterations(patches, parts)

    def redrive(response: Any) -> Any:
        arn = response._get_param("executionArn")
        execution = response.stepfunction_backend.describe_execution(arn)
        # The ended run reports its end a moment after its status is set: that report comes
        # first (EventBridge hears FAILED, then the redrive's RUNNING).
        deadline = time.monotonic() + _END_REPORTED_WITHIN
        while time.monotonic() < deadline and not report.has_reported(
            execution, getattr(execution.exec_status, "value", "RUNNING")
        ):
            time.sleep(0.005)
        with redriving:
            reason = redrive_reason(execution)
            if reason is not None:
                raise service_error("ExecutionNotRedrivable", f"{reason}: '{arn}'")
            redrive_date = datetime.datetime.now(tz=datetime.UTC)
            run = _restart(execution, redrive_date, parts)
        report.redriven(execution)
        run.start()
        return ActionResult({"redriveDate": redrive_date})

    describe = StepFunctionResponse.describe_execution

    def describe_with_redrive(response: Any) -> Any:
        result: Any = describe(response)
        execution = response.stepfunction_backend.describe_execution(
            response._get_param("executionArn")
        )
        described = {**result.result, **redrive_fields(execution)}
        if execution.stop_date is not None and described["status"] != "RUNNING":
            described["stopDate"] = execution.stop_date  # moto leaves it out when TIMED_OUT
        return ActionResult(described)

    list_executions = StepFunctionResponse.list_executions

    def list_with_redrive(response: Any) -> Any:
        result: Any = list_executions(response)
        backend = response.stepfunction_backend
        items = []
        for item in result.result["executions"]:
            execution = backend.describe_execution(item["executionArn"])
            fields = redrive_fields(execution)
            items.append({**item, **{k: v for k, v in fields.items() if k in _LISTED}})
        return ActionResult({**result.result, "executions": items})

    answers.unknown.append(_ended_runs_token)
    patches.replace(CommonStateField, "_eval_body", remembering_entry)
    patches.replace(StepFunctionResponse, "redrive_execution", redrive)
    patches.replace(StepFunctionResponse, "describe_execution", describe_with_redrive)
    patches.replace(StepFunctionResponse, "list_executions", list_with_redrive)


_LISTED = ("redriveCount", "redriveDate")
#: How long a redrive waits at most for the ended run's end to be reported. A bound, not a
#: speed: the report comes within microseconds when the machine is idle, and the wait ends as
#: soon as it has come; a loaded machine (CI's) once took over 2 s.
_END_REPORTED_WITHIN = 60.0


def _ended_runs_token(backend: Any, task_token: str) -> None:
    """A token of a run that ended before a redrive still answers ``TaskDoesNotExist``, as it
    did before the redrive (the backend looks only at each execution's current run)."""
    for execution in backend._get_executions():
        for env in getattr(execution, "ended_runs", ()):
            if env.callback_pool_manager.get(task_token) is not None:
                raise service_error("TaskDoesNotExist", "Provided task does not exist anymore")


class _PartOutputs:
    """How each Parallel branch and Map iteration ended at the latest entry of its state, per
    execution: a redrive of a Parallel or Map runs only the branches and iterations that did not
    succeed, the others give their output again (as the service does)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (execution, state) -> (its entry time, {branch's StartAt or item index: output})
        self._latest: dict[tuple[str, str], tuple[str, dict[str | int, Any]]] = {}
        # (execution, state) -> {branch's StartAt or item index: output}, for the redriven run
        self._reuse: dict[tuple[str, str], dict[str | int, Any]] = {}

    def record(self, key: tuple[str, str], entered: str, part: str | int, output: Any) -> None:
        """``output``: the part's, or ``_FAILED`` when it did not succeed."""
        with self._lock:
            latest_entry, ended = self._latest.get(key, (entered, {}))
            if latest_entry != entered:
                ended = {}
            ended[part] = output
            self._latest[key] = (entered, ended)

    def take(self, key: tuple[str, str], part: str | int) -> Any:
        """The output a redriven state's part gives again, or ``_FAILED`` to run it."""
        with self._lock:
            return self._reuse.get(key, {}).pop(part, _FAILED)

    def redriving(self, execution_arn: str, state_name: str, entered: str | None) -> None:
        """A redrive goes on from ``state_name``, last entered at ``entered``."""
        key = (execution_arn, state_name)
        with self._lock:
            latest_entry, ended = self._latest.get(key, (None, {}))
            succeeded = {part: out for part, out in ended.items() if out is not _FAILED}
            self._reuse[key] = succeeded if latest_entry == entered else {}


def _part_of(env: Any) -> tuple[tuple[str, str], str]:
    """(execution, state) and entry time of the Parallel or Map whose part ``env`` runs (read
    before the part runs: its own states replace the context's ``State``)."""
    context = env.states.context_object.context_object_data
    state = context.get("State") or {}
    key = (str(context["Execution"]["Id"]), str(state.get("Name")))
    return key, str(state.get("EnteredTime"))


_FAILED = object()


def _parallel_branches(patches: Patches, parts: _PartOutputs) -> None:
    """Each Parallel branch's end is recorded; a branch that succeeded before a redrive gives
    its output again instead of running."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker import (
        BranchWorker,
    )
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded

    def thread_routine(worker: Any) -> None:
        env = worker.env
        (key, entered), branch = _part_of(env), worker._program.start_at.start_at_name
        output = parts.take(key, branch)
        if output is _FAILED:
            worker._program.eval(env)
        else:
            env.states.reset(input_value=output)
            env.set_ended()
        succeeded = isinstance(env.program_state(), ProgramEnded)
        ended_with = copy.deepcopy(env.states.get_input()) if succeeded else _FAILED
        parts.record(key, entered, branch, ended_with)
        worker._branch_worker_comm.on_terminated(env=env)

    patches.replace(BranchWorker, "_thread_routine", thread_routine)


def _map_iterations(patches: Patches, parts: _PartOutputs) -> None:
    """Each Map iteration's end is recorded; an iteration that succeeded before a redrive gives
    its output again instead of running."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iteration_worker import (  # noqa: E501
        IterationWorker,
    )

    eval_job = IterationWorker._eval_job

    def eval_job_once(worker: Any, env: Any, job: Any) -> None:
        key, entered = _part_of(env)
        output = parts.take(key, job.job_index)
        if output is not _FAILED:
            job.job_output = output
            return
        eval_job(worker, env, job)
        failed = isinstance(job.job_output, Exception)
        parts.record(
            key, entered, job.job_index, _FAILED if failed else copy.deepcopy(job.job_output)
        )

    patches.replace(IterationWorker, "_eval_job", eval_job_once)


class _Superseded:
    """The ended run's worker reports its end to this: a redriven execution is no longer
    that run's (its program may still be winding down when the redrive comes)."""

    def terminated(self) -> None:
        return None


def _restart(
    execution: Any, redrive_date: datetime.datetime, parts: _PartOutputs
) -> threading.Thread:
    """Make ``execution`` RUNNING again in a new run that goes on from the state its last run
    ended in (a Parallel or Map there runs only its parts that did not succeed); the thread
    that runs it (not started)."""
    from moto.stepfunctions.parser.api import ExecutionStatus, HistoryEventType
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext

    ended = execution.exec_worker
    ended_env = ended.env if ended is not None else None
    if ended is not None:
        ended._execution_communication = _Superseded()
    count = getattr(execution, "redrive_count", 0) + 1
    worker = execution._get_start_execution_worker()
    program = worker._get_evaluation_entrypoint()
    env = worker._get_evaluation_environment()
    # The history goes on where the ended run's stopped (that run records nothing more).
    history = list(ended_env.event_manager.get_event_history()) if ended_env else []
    env.event_manager._history_event_list.extend(history)
    last_id = max((event["id"] for event in history), default=0)
    env.event_manager._event_id_gen._next_id = last_id + 1
    env.event_history_context = EventHistoryContext(previous_event_id=last_id)
    if ended_env is not None:
        env.variable_store = ended_env.variable_store
    context = env.states.context_object.context_object_data["Execution"]
    context["RedriveCount"] = count
    context["RedriveTime"] = aws_timestamp(redrive_date)
    state_name, state_input = getattr(ended_env, "redrive_from", None) or (
        program.start_at.start_at_name,
        execution.input_data,
    )
    env.states.reset(input_value=state_input)
    ended_context = ended_env.states.context_object.context_object_data if ended_env else {}
    ended_state = ended_context.get("State") or {}
    parts.redriving(execution.exec_arn, state_name, ended_state.get("EnteredTime"))
    env.event_manager.add_event(
        context=env.event_history_context,
        event_type=HistoryEventType.ExecutionRedriven,
        event_details={"executionRedrivenEventDetails": {"redriveCount": count}},
        timestamp=redrive_date,
    )
    worker.env = env
    execution.exec_worker = worker
    if ended_env is not None:
        execution.ended_runs = [*getattr(execution, "ended_runs", []), ended_env]
    execution.redrive_count = count
    execution.redrive_date = redrive_date
    execution.exec_status = ExecutionStatus.RUNNING
    execution.stop_date = execution.error = execution.cause = execution.output = None
    return threading.Thread(target=_run_from, args=(worker, program, env, state_name), daemon=True)


def _run_from(worker: Any, program: Any, env: Any, state_name: str) -> None:
    """``Program.eval`` from ``state_name`` instead of ``StartAt``: the state machine's
    ``TimeoutSeconds`` counts from the redrive."""
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
    from moto.stepfunctions.parser.utils import TMP_THREADS

    timeout = program.timeout_seconds.timeout_seconds if program.timeout_seconds else None
    env.next_state_name = state_name
    body = threading.Thread(target=EvalComponent.eval, args=(program, env), daemon=True)
    TMP_THREADS.append(body)
    body.start()
    body.join(timeout=timeout)
    if body.is_alive():
        env.set_timed_out()
    worker._execution_communication.terminated()


__all__ = [
    "EXPRESS_NOT_REDRIVABLE",
    "NOT_REDRIVABLE",
    "redrive_execution",
    "redrive_fields",
    "redrive_reason",
]
