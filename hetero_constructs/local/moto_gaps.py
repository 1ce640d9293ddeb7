"""Where moto's Step Functions is thinner than the service, filled in.

Each gap is one function that installs its patch through ``Patches`` (undone when the local cloud
closes). What each one fixes, checked against the sources of moto 5.2.5 and 5.2.6 (every
target is declared, and checked at start, in ``moto_targets``):

- JSONata: moto evaluates it through a JVM bridge that is absent here (its
  ``eval_jsonata_expression`` calls ``None``); the pure-Python ``jsonata-python`` takes its place.
  String variables are JSON-encoded (moto pastes them between quotes unescaped).
- Service integrations: moto dropped LocalStack's request/response normalisation, so a camelCase
  API (Step Functions' own ``startExecution``) fails with ``KeyError: 'StateMachineArn'``.
  Parameters are matched to the botocore input shape; responses come back in PascalCase, as the
  service returns them to the state machine.
- Nested executions (``states:startExecution.sync`` / ``.sync:2``): a parent that is stopped,
  times out or fails while waiting stops its child, as the service does (this is why aws-cdk-lib
  grants ``states:StopExecution`` to such a task).
- The context object: ``$$.State.RetryCount`` exists in every state (moto sets it only in Task,
  Map and Parallel states); ``EnteredTime`` and ``Execution.StartTime`` in the service's format;
  ``Execution.RedriveCount`` (0 until a redrive).
- StopExecution: the execution is ``ABORTED`` at once with its ``ExecutionAborted`` event (moto
  leaves it ``RUNNING`` until a waiting task returns, then records the task's failure); its task
  tokens answer ``TaskDoesNotExist``; the error and cause given are kept.
- An execution that times out or fails while a task waits on its token (a Parallel branch):
  the task is closed too, its token answers ``TaskDoesNotExist`` and nothing is recorded after
  the execution's end (moto keeps the task waiting, records a late report's TaskFailed and
  ExecutionFailed after the end, and records ``ExecutionTimedOut`` only when the task returns).
- Each attempt of a retried callback task gets a new task token (moto reuses the first, so a
  retry fails at once with the previous attempt's outcome).
- SendTaskFailure keeps its cause (moto drops it); SendTaskSuccess to a stopped execution's
  token answers ``TaskDoesNotExist``; a token answers once, as in the service: a second
  SendTaskSuccess or SendTaskFailure answers ``TaskTimedOut`` (moto accepts it, and replaces the
  first outcome if the task has not read it yet); an execution started without a name gets a
  UUID (moto: ``None``, so a second nameless start of the same state machine fails).
- Every status change of a standard execution is reported to ``on_status`` (for EventBridge).
- SendTaskHeartbeat: accepted for any waiting task, ``TaskTimedOut`` for one that no longer
  waits (moto accepts it only with ``HeartbeatSeconds``); see ``moto_heartbeats``.
- A task closed while its execution runs on (its Parallel branch cancelled by a failing sibling,
  its Map iteration cancelled by a failing one, its own ``TimeoutSeconds`` elapsed): its token
  refuses SendTaskSuccess and SendTaskFailure with ``TaskTimedOut`` (moto accepts them and records
  the task's ``TaskFailed`` after the execution has left the state); see ``moto_heartbeats``.
- A Distributed Map fails its Map Run with ``States.ExceedToleratedFailureThreshold`` once its
  failed items exceed ``ToleratedFailureCount`` or ``ToleratedFailurePercentage`` (none tolerated
  when neither is given), and its running iterations are closed (moto never fails a Map Run);
  see ``moto_map_runs``.
- ``ToleratedFailurePercentage`` may be an integer, as aws-cdk-lib renders it (moto's grammar
  takes only a number with a decimal point and refuses the definition); see ``moto_map_runs``.
- A ``States.*`` error passed on keeps its name: a Fail state whose ``Error`` / ``ErrorPath``
  gives ``States.Timeout`` (a caught task timeout, re-raised), and a Parallel branch, Map
  iteration or child execution that failed with one, fail with it (moto refuses ``States.``
  names there and fails with ``States.Runtime``); see ``moto_errors``.
- A task whose ``HeartbeatSeconds`` elapse fails with ``States.HeartbeatTimeout`` (moto:
  ``States.Timeout``); see ``moto_errors``.
- RedriveExecution (moto has none): a FAILED, ABORTED or TIMED_OUT execution goes on from the
  top-level state it ended in, under the same ARN, with ``redriveCount`` and ``redriveDate`` in
  DescribeExecution, an ``ExecutionRedriven`` event and its RUNNING status reported again; a
  Parallel or inline Map there re-runs only its branches and iterations that did not succeed,
  as the service does (a nested one, or a Distributed Map, re-runs whole); see
  ``moto_redrive``.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from hetero_constructs.local.moto_errors import heartbeat_timeouts, states_errors_passed_on
from hetero_constructs.local.moto_executions import (
    StatusListener,
    StatusReporter,
    TokenAnswers,
    context_object,
    fresh_token_per_attempt,
    nested_executions,
    status_changes,
    stop_execution,
    task_callbacks,
)
from hetero_constructs.local.moto_heartbeats import (
    CallbackTasks,
    closed_task_reports,
    task_heartbeats,
)
from hetero_constructs.local.moto_integrations import jsonata, service_normalisation
from hetero_constructs.local.moto_map_runs import integer_percentages, tolerated_failures
from hetero_constructs.local.moto_redrive import redrive_execution
from hetero_constructs.local.patching import Patches

LOG = logging.getLogger(__name__)


class RetryWaits:
    """The waits ``Retry`` asked for (recorded), slept compressed: a local run of a 5-minute
    backoff takes ``cap`` seconds, and the requested seconds stay visible to tests."""

    def __init__(self, cap: float) -> None:
        self.cap = cap
        self.requested: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.requested.append(seconds)
        import time

        time.sleep(min(seconds, self.cap))


def _compressed_retries(patches: Patches, waits: RetryWaits) -> None:
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    class _Time:
        # Looked up at each wait, so that a test can hook ``waits.sleep``.
        sleep = staticmethod(lambda seconds: waits.sleep(seconds))

    patches.replace(retrier_decl, "time", _Time)


def install(
    patches: Patches, on_status: StatusListener, retry_waits: RetryWaits | None = None
) -> None:
    """Fill every Step Functions gap listed in this module's docstring."""
    report = StatusReporter(on_status)
    if retry_waits is not None:
        _compressed_retries(patches, retry_waits)
    jsonata(patches)
    service_normalisation(patches)
    nested_executions(patches)
    context_object(patches)
    stop_execution(patches, report)
    status_changes(patches, report)
    answers = TokenAnswers()
    task_callbacks(patches, answers)
    fresh_token_per_attempt(patches)
    callback_tasks = CallbackTasks()
    callback_tasks.track(patches)
    task_heartbeats(patches, callback_tasks)
    closed_task_reports(answers, callback_tasks)
    tolerated_failures(patches)
    integer_percentages(patches)
    redrive_execution(patches, report, answers)
    states_errors_passed_on(patches)
    heartbeat_timeouts(patches)


# -- JSONata -----------------------------------------------------------------------------------


# -- service integrations: parameters and responses as the service names them ----------------


# -- nested executions ------------------------------------------------------------------------


# -- the context object -----------------------------------------------------------------------


# -- stopping, status changes, callbacks ----------------------------------------------------


def quiet_interpreter(stack: contextlib.ExitStack) -> None:
    """moto's interpreter logs every failed state at ERROR with its whole parse tree."""
    for name in ("moto.stepfunctions", "moto.stepfunctions.parser"):
        logger = logging.getLogger(name)
        stack.callback(logger.setLevel, logger.level)
        logger.setLevel(logging.CRITICAL)


def dumps(value: Any) -> str:
    """JSON for values that may hold datetimes (moto keeps them in state data)."""
    return json.dumps(value, default=lambda o: o.isoformat() if hasattr(o, "isoformat") else str(o))


__all__ = [
    "RetryWaits",
    "dumps",
    "install",
    "quiet_interpreter",
]
