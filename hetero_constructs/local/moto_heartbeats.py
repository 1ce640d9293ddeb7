"""Closed callback tasks as the service treats them, in moto's interpreter (5.2.5, 5.2.6).

The service closes a task that waits on its token when it is answered, when it times out, when
its Parallel branch or Map iteration is cancelled (a sibling branch or another iteration
failed) and when its execution ends; a closed task's token is refused by SendTaskHeartbeat,
SendTaskSuccess and SendTaskFailure (``TaskTimedOut``: "the task associated with the token has
already been closed"). Here each callback task's token is tracked from its attempt's service
call on (``CallbackTasks``): the task is closed once that attempt has returned (answered,
failed, timed out, or its call itself failed and it never waited) or its frame no longer runs.

- ``task_heartbeats``: moto accepts a heartbeat only for a task that declares
  ``HeartbeatSeconds`` and answers ``InvalidToken`` for every other token, even one whose task
  waits. Here a heartbeat is accepted for any waiting task and refused for a closed one.
- ``closed_task_reports``: moto accepts SendTaskSuccess / SendTaskFailure for a task whose
  Parallel branch or Map iteration was cancelled, whose own ``TimeoutSeconds`` elapsed, or whose
  service call failed (a Lambda function error; the attempt retried or caught): the call
  succeeds, and the task's ``TaskSucceeded`` / ``TaskFailed`` is recorded after the execution
  has left the state, or the answer goes where nobody waits. Here such a report answers
  ``TaskTimedOut`` and records nothing. (A report to a task of an ended execution keeps its
  answer, ``TaskDoesNotExist``; see ``moto_executions``.)
"""

from __future__ import annotations

import threading
from typing import Any

from hetero_constructs.local.moto_errors import service_error
from hetero_constructs.local.moto_executions import TokenAnswers
from hetero_constructs.local.patching import Patches

_CLOSED_MESSAGE = "Task Timed Out: 'Provided task does not exist anymore'"


class CallbackTasks:
    """Which frame waits on each callback task's token, and which tokens' tasks have returned."""

    def __init__(self) -> None:
        self.frames: dict[str, Any] = {}  # token -> the environment (frame) that waited on it
        self.returned: set[str] = set()  # tokens whose state no longer waits
        self.lock = threading.Lock()

    def track(self, patches: Patches) -> None:
        from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
            state_task_service_callback as module,
        )

        # One attempt of the task: its service call (which may fail, e.g. a Lambda function
        # error, without ever waiting) and its wait for the token.
        evaluate = module.StateTaskServiceCallback._eval_execution
        tasks = self

        def tracked(task: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
            token = (env.states.context_object.context_object_data.get("Task") or {}).get("Token")
            if token:
                with tasks.lock:
                    tasks.frames[token] = env
            try:
                return evaluate(task, env, *args, **kwargs)
            finally:
                if token:
                    with tasks.lock:
                        tasks.returned.add(token)

        patches.replace(module.StateTaskServiceCallback, "_eval_execution", tracked)

    def frame(self, token: str) -> tuple[Any, bool]:
        """The frame that waits or waited on ``token`` (None for an unknown token), and whether
        it still waits: its state has not returned and the frame runs."""
        with self.lock:
            env, returned = self.frames.get(token), token in self.returned
        return env, env is not None and not returned and env.is_running()


def task_heartbeats(patches: Patches, tasks: CallbackTasks) -> None:
    from moto.stepfunctions.exceptions import InvalidToken
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    def send_task_heartbeat(backend: Any, task_token: str) -> None:
        env, waits = tasks.frame(task_token)
        if waits:
            endpoint = env.callback_pool_manager.get(task_token)
            if endpoint is not None and endpoint.get_outcome() is None:
                endpoint.notify_heartbeat()  # resets a HeartbeatSeconds timer, if the task has one
                return
        if env is not None:
            raise service_error("TaskTimedOut", _CLOSED_MESSAGE)
        raise InvalidToken()

    patches.replace(StepFunctionsParserBackend, "send_task_heartbeat", send_task_heartbeat)


def closed_task_reports(answers: TokenAnswers, tasks: CallbackTasks) -> None:
    """SendTaskSuccess and SendTaskFailure refuse the token of a task closed by its state (see
    the module docstring); ``moto_executions.task_callbacks`` makes the check."""

    def refuse_closed(task_token: str) -> None:
        env, waits = tasks.frame(task_token)
        if env is None or waits:
            return
        endpoint = env.callback_pool_manager.get(task_token)
        if endpoint is None or endpoint.consumer_error is not None:
            return  # its execution ended: TaskDoesNotExist, as task_callbacks answers
        # Answered already: task_callbacks answers a second report. Never answered: closed.
        if endpoint.get_outcome() is None:
            raise service_error("TaskTimedOut", _CLOSED_MESSAGE)

    answers.refusals.append(refuse_closed)


__all__ = ["CallbackTasks", "closed_task_reports", "task_heartbeats"]
