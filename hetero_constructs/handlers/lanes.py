"""Which slot an invocation's entry owns when several entries look the same.

A slot is named by what the task's context shows (execution, state, entry time, overrides,
``job_key``). Iterations of an inline ``Map`` over identical items can enter the task in the same
millisecond and show the same context: ``$$.Map.Item.Index`` exists only in the Map's
``ItemSelector``, never in the states of an iteration. Such entries are told apart by their task
tokens, and each gets its own *lane* (``RunSlot.lane``: its own slot, job names and tags):

- an invocation whose token held a lane (a duplicate, or a late invocation of an earlier
  attempt) acts on that lane, under the slot's own rules (``submit``);
- a first attempt never takes a lane another token holds: it takes the first free one;
- a retry (``RetryCount`` n) carries a token no lane has seen. Step Functions closes attempt
  n-1 before it starts attempt n, so it takes a lane held by an earlier attempt whose task no
  longer answers a heartbeat and whose job did not succeed: its own entry's lane, or that of an
  identical entry in the same state, which is as good (the same request, and that entry's own
  retry takes another such lane or a free one). A lane whose success was heard is taken only
  if the execution's history says the task that heard it did not keep it: the success was
  accepted while Step Functions' call to the submit Lambda was in flight, and that call then
  failed (``task_history``); the retry hears it again instead of training another job;
- an invocation that would pass over a lane another entry holds first checks that its own task
  still waits (a heartbeat): a late invocation whose attempt was retried, and which never
  claimed a lane, makes no job in another entry's place.

The usual task (one entry per context) has one lane, 0, whose digest is the slot's as before
lanes existed; a retry costs one ``SendTaskHeartbeat`` more.
"""

from __future__ import annotations

from typing import Any

from hetero_constructs.handlers import outcome, task_history, token_store
from hetero_constructs.handlers.attempt import Run

# More identical entries than an inline Map runs at once (40), with room to spare.
MAX_LANES = 256


class TooManyLanes(Exception):
    """Every lane of a slot is held by a live entry: a fault, not a workload."""


class TaskClosed(Exception):
    """This invocation's task no longer waits and no lane is its own: it changes nothing."""


def choose(
    dynamodb: Any, stepfunctions: Any, run: Run, start: int = 0
) -> tuple[int, token_store.SlotItem | None]:
    """The lane (from ``start`` on) this invocation acts on, and its slot item (None: free)."""
    mark = token_store.token_mark(run.task_token)
    waiting: bool | None = None  # whether this invocation's own task waits, once asked
    for lane in range(start, MAX_LANES):
        slot = token_store.get_slot(dynamodb, run.slot.in_lane(lane).digest)
        if slot is not None and (not slot.token or mark in slot.chain):
            return lane, slot  # written before lanes were kept, or this entry's own
        if waiting is None and lane > 0:
            waiting = outcome.heartbeat(stepfunctions, run.task_token)
            if not waiting:
                raise TaskClosed(f"{run.slot.state_name!r}: the task no longer waits")
        if slot is None:
            return lane, slot  # free
        if (
            run.retry_count > slot.holder
            and not outcome.heartbeat(stepfunctions, slot.token)
            and (not slot.completed or not _kept(stepfunctions, run, slot))
        ):
            return lane, slot  # an ended attempt's lane: this retry's entry's (or its twin's)
    raise TooManyLanes(
        f"{MAX_LANES} entries of {run.slot.state_name!r} with the same context are live at once"
    )


def _kept(stepfunctions: Any, run: Run, slot: token_store.SlotItem) -> bool:
    """Whether the task that heard the lane's success kept it. Not when the history says its
    attempt failed after the success was accepted (its call to the submit Lambda failed while
    in flight): that success was discarded, and a retry hears it again (``task_history``)."""
    return task_history.kept_success(stepfunctions, run.slot.execution_arn, slot.token) is not False


def is_own(slot: token_store.SlotItem | None, run: Run) -> bool:
    """Whether this invocation's token held ``slot`` (it is this entry's lane)."""
    return slot is not None and token_store.token_mark(run.task_token) in slot.chain


__all__ = ["MAX_LANES", "TaskClosed", "TooManyLanes", "choose", "is_own"]
