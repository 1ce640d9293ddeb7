"""Errors as the service names them, where moto names them otherwise or has no class for them.

- ``service_error``: errors the local account answers where moto has no class for them
  (``TaskDoesNotExist``, ``TaskTimedOut``, ``ExecutionNotRedrivable``), serialized as moto
  serializes its own: moto's ``ServiceException`` (in every supported release) carries the AWS
  error code as ``code``, and its responses turn one raised by a backend into the service's
  error response. (moto 5.2.5 also had ``AWSError``, which 5.2.6 removed.)
- ``states_errors_passed_on``: a ``States.*`` error passed on keeps its name. moto makes every
  error name it reads at run time (a Fail state's ``Error`` / ``ErrorPath``, a failed Parallel
  branch's, Map iteration's or child execution's error) a ``CustomErrorName``, which refuses the
  ``States.`` prefix: a caught ``States.Timeout`` re-raised by a Fail state failed the execution
  with ``States.Runtime``. Here such a name is the ``StatesErrorName`` it names, so that
  ``ErrorEquals`` matches it as the service does (``States.TaskFailed`` does not match
  ``States.Timeout``). A ``States.`` name moto does not know is refused as before.
- ``heartbeat_timeouts``: a task whose ``HeartbeatSeconds`` elapse fails with
  ``States.HeartbeatTimeout`` (moto reports every ``TimeoutError`` as ``States.Timeout``).
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

from hetero_constructs.local.patching import Patches


@functools.cache
def error_class(code: str) -> type[Exception]:
    """The exception class of the service error ``code`` (one class per code)."""
    from moto.core.exceptions import ServiceException

    return type(code, (ServiceException,), {"code": code, "__module__": __name__})


def service_error(code: str, message: str) -> Exception:
    """The service error ``code`` with ``message``, to raise from a moto backend."""
    return error_class(code)(message)


def states_errors_passed_on(patches: Patches) -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
        CustomErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )

    init = CustomErrorName.__init__

    def init_naming_states_errors(name: Any, error_name: str | None) -> None:
        if isinstance(error_name, str) and error_name.startswith("States."):
            with contextlib.suppress(ValueError):  # an unknown States.* name: refused as before
                typ = StatesErrorNameType.from_name(error_name)
                # The name is the States error it names (replacing __new__ instead would leave
                # the class's constructor changed once put back: CPython keeps the new slot).
                name.__class__ = StatesErrorName
                StatesErrorName.__init__(name, typ=typ)
                return
        init(name, error_name)

    patches.replace(CustomErrorName, "__init__", init_naming_states_errors)


def heartbeat_timeouts(patches: Patches) -> None:
    from moto.stepfunctions.parser.api import HistoryEventType, TaskTimedOutEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import StateTask
    from moto.stepfunctions.parser.asl.eval.callback.callback import HeartbeatTimeoutError

    from_error = StateTask._from_error
    heartbeat = StatesErrorNameType.StatesHeartbeatTimeout

    def from_error_naming_heartbeats(task: Any, env: Any, ex: Exception) -> Any:
        if not isinstance(ex, HeartbeatTimeoutError):
            return from_error(task, env, ex)
        details: Any = {
            "taskTimedOutEventDetails": TaskTimedOutEventDetails(error=heartbeat.to_name())
        }
        return FailureEvent(
            env=env,
            error_name=StatesErrorName(typ=heartbeat),
            event_type=HistoryEventType.TaskTimedOut,
            event_details=details,
        )

    patches.replace(StateTask, "_from_error", from_error_naming_heartbeats)


__all__ = ["error_class", "heartbeat_timeouts", "service_error", "states_errors_passed_on"]
