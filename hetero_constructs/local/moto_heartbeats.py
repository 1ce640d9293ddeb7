"""SendTaskHeartbeat as the service answers it, in moto 5.2.5's interpreter.

moto accepts a heartbeat only for a task that declares ``HeartbeatSeconds`` and answers
``InvalidToken`` for every other token, even one whose task waits. The service accepts a
heartbeat for any waiting task and refuses one for a task that no longer waits: its token
answers ``TaskTimedOut`` once the task was closed by any cause (answered, timed out, its
Parallel branch or Map iteration stopped, its execution ended). Here each callback task's token
is known while its state waits, and a heartbeat is accepted only while that state's frame
still runs.
"""

from __future__ import annotations

import threading
from typing import Any

from hetero_constructs.local.patching import Patches


def task_heartbeats(patches: Patches) -> None:
    from moto.core.exceptions import AWSError
    from moto.stepfunctions.exceptions import InvalidToken
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_callback as module,
    )
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    class TaskTimedOut(AWSError):
        TYPE = "TaskTimedOut"
        STATUS = 400

    waiting: dict[str, Any] = {}  # token -> the environment (frame) of the state waiting on it
    closed: set[str] = set()
    lock = threading.Lock()
    evaluate = module.StateTaskServiceCallback._eval_integration_pattern

    def tracked(task: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
        token = (env.states.context_object.context_object_data.get("Task") or {}).get("Token")
        if token:
            with lock:
                waiting[token] = env
        try:
            return evaluate(task, env, *args, **kwargs)
        finally:
            if token:
                with lock:
                    waiting.pop(token, None)
                    closed.add(token)

    def send_task_heartbeat(backend: Any, task_token: str) -> None:
        with lock:
            env = waiting.get(task_token)
            was_closed = task_token in closed
        if env is not None and env.is_running():
            endpoint = env.callback_pool_manager.get(task_token)
            if endpoint is not None and endpoint.get_outcome() is None:
                endpoint.notify_heartbeat()  # resets a HeartbeatSeconds timer, if the task has one
                return
        if env is not None or was_closed:
            raise TaskTimedOut("Task Timed Out: 'Provided task does not exist anymore'")
        raise InvalidToken()

    patches.replace(module.StateTaskServiceCallback, "_eval_integration_pattern", tracked)
    patches.replace(StepFunctionsParserBackend, "send_task_heartbeat", send_task_heartbeat)


__all__ = ["task_heartbeats"]
