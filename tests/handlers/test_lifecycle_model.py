"""The lifecycle model of docs/lifecycle.md, checked: a hypothesis state machine drives the
real handlers on moto through interleavings of submit invocations (duplicated, delayed, out of
order, racing, late from before a redrive), job ends and their events (lost, duplicated, stale,
forged), execution ends (real, lost, duplicated, replayed after a redrive, stale), redrives,
task cancellations and reconcile passes, and checks after every step:

- at most one job runs per entry (slot, lane) at any time;
- after a reconcile pass, no job runs whose task no longer waits;
- a task only ever hears of a job of its own request, of its attempt or an earlier one it took
  over, and at most once; an entry with its own overrides only of its own slot's jobs;
- two entries never hear of one job's success (two entries of identical items, as an inline
  Map over identical items makes them, are told apart by their tokens: ``handlers/lanes.py``);
  a success a task accepted, then discarded (its submit call failed in flight, its attempt was
  retried), was never heard;
- no handler stops a job whose task still waits (a live run is never stopped);
- every item of the run table has a TTL.

CI runs a bounded, derandomized search (about 60 s on 2 cores); a longer search for local use:
``HETERO_LIFECYCLE_EXAMPLES=200 pytest tests/handlers/test_lifecycle_model.py``.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from hetero_constructs.contract import lifecycle
from hetero_constructs.handlers import events, submit, token_store
from tests.fixtures.handler_world import HandlerWorld, handler_world

# Three entries of one task that start together, a Map over the items [0, 0, 1]: entries 0 and
# 1 show the same context (same overrides, no job_key, same entry time), entry 2 its own.
ITEMS = (0, 0, 1)
ENTRIES = len(ITEMS)
ATTEMPTS = 3
EXAMPLES = int(os.environ.get("HETERO_LIFECYCLE_EXAMPLES", "10"))
STEPS = 24


class Lifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._stack = contextlib.ExitStack()
        patch = self._stack.enter_context(pytest.MonkeyPatch.context())
        self.world: HandlerWorld = self._stack.enter_context(handler_world(patch))
        self.execution = self.world.start("model")
        described = self.world.stepfunctions.describe_execution(executionArn=self.execution)
        # DescribeExecution as the model's Step Functions says it: its end, its redrives.
        self.described: dict[str, Any] = {
            key: described[key]
            for key in ("executionArn", "stateMachineArn", "name", "startDate", "status")
        }
        self.world.executions[self.execution] = self.described
        self.run = 0  # how often the execution was redriven: each run enters the task anew
        # (run, entry, attempt) -> its task token, created when Step Functions starts it.
        self.tokens: dict[tuple[int, int, int], str] = {}
        self.entry_of_token: dict[str, tuple[int, int, int]] = {}
        self.slot_of_entry: dict[tuple[int, int], str] = {}
        self.end_events: list[dict[str, Any]] = []
        # Tokens whose task accepted a success, then failed (its submit call failed in flight).
        self.discarded: set[str] = set()

    def teardown(self) -> None:
        self._stack.close()

    # -- Step Functions -----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return bool(self.described["status"] == "RUNNING")

    def _event(self, entry: int, attempt: int, run: int | None = None) -> dict[str, Any] | None:
        """The submit event of an attempt of the given run (default: the current one); None
        for an attempt Step Functions would not start (its run ended or was redriven)."""
        run = self.run if run is None else run
        key = (run, entry, attempt)
        if key not in self.tokens:
            later = any(k[:2] == (run, entry) and k[2] > attempt for k in self.tokens)
            if run != self.run or not self.running or later:
                return None  # Step Functions starts no attempt after a later one, or the end
            # Step Functions starts attempt n only after closing attempt n-1's task. An
            # attempt that heard a success is retried only when its call to the submit Lambda
            # failed after the success was accepted (task_history): the success is discarded.
            for (other_run, other_entry, other_attempt), token in self.tokens.items():
                if (other_run, other_entry) == (run, entry) and other_attempt < attempt:
                    self.world.open_tokens.discard(token)
                    if self.world.task_ends.get(token) == "TaskSucceeded":
                        self.discarded.add(token)
                    self.world.task_ends[token] = "TaskFailed"
            self.tokens[key] = self.world.token()
            self.entry_of_token[self.tokens[key]] = key
        return self.world.submit_event(
            self.execution,
            self.tokens[key],
            retry_count=attempt,
            # A redrive re-enters the task: a new entry time.
            entered=f"2026-01-01T00:{run:02d}:01Z",
            execution_input={"hyperparameters": {"item": ITEMS[entry]}},
        )

    def _submit(self, event: dict[str, Any] | None) -> None:
        if event is not None:
            submit.handler(event)

    @rule(entry=st.integers(0, ENTRIES - 1), attempt=st.integers(0, ATTEMPTS - 1))
    def invoke_submit(self, entry: int, attempt: int) -> None:
        """A submit invocation: the first of its attempt, a duplicate, or a late one."""
        self._submit(self._event(entry, attempt))

    @precondition(lambda self: self.run > 0)
    @rule(entry=st.integers(0, ENTRIES - 1), attempt=st.integers(0, ATTEMPTS - 1))
    def invoke_submit_of_an_earlier_run(self, entry: int, attempt: int) -> None:
        """A late invocation from before the latest redrive."""
        self._submit(self._event(entry, attempt, self.run - 1))

    @rule(entry=st.integers(0, ENTRIES - 1))
    def retry_entry(self, entry: int) -> None:
        """Step Functions retries the entry's task: its next attempt's first invocation."""
        attempts = [a for (run, other, a) in self.tokens if (run, other) == (self.run, entry)]
        following = max(attempts, default=-1) + 1
        if following < ATTEMPTS:
            self._submit(self._event(entry, following))

    @rule(entry=st.integers(0, ENTRIES - 1), attempt=st.integers(0, ATTEMPTS - 1))
    def invoke_submit_racing(self, entry: int, attempt: int) -> None:
        """An invocation that read the slot before another invocation's write."""
        event = self._event(entry, attempt)
        if event is None:
            return
        real = token_store.get_slot
        reads: list[int] = []

        def stale_first_read(dynamodb: Any, digest: str) -> Any:
            reads.append(1)
            return None if len(reads) == 1 else real(dynamodb, digest)

        token_store.get_slot = stale_first_read  # type: ignore[assignment]
        try:
            submit.handler(event)
        finally:
            token_store.get_slot = real  # type: ignore[assignment]

    @rule(entry=st.integers(0, ENTRIES - 1))
    def cancel_task(self, entry: int) -> None:
        """Step Functions closes the entry's waiting task (its branch cancelled, its timeout)."""
        for (run, other_entry, _), token in self.tokens.items():
            if (run, other_entry) == (self.run, entry):
                self.world.open_tokens.discard(token)

    @precondition(lambda self: self.running)
    @rule(status=st.sampled_from(lifecycle.STOPPING_EXECUTION_STATUSES), copies=st.integers(0, 2))
    def end_execution(self, status: str, copies: int) -> None:
        """The execution ends (every task with it); its end event is delivered 0-2 times."""
        self.world.open_tokens.difference_update(self.tokens.values())
        self.described["status"] = status
        self.described["stopDate"] = self.described["startDate"]
        event = {
            "source": lifecycle.EXECUTION_EVENT_SOURCE,
            "detail": {"executionArn": self.execution, "status": status},
        }
        self.end_events.append(event)
        for _ in range(copies):
            events.dispatch(event, self.world.dynamodb)

    @precondition(lambda self: not self.running)
    @rule()
    def redrive(self) -> None:
        """RedriveExecution: the same ARN runs again, from the failed task (a new entry)."""
        self.run += 1
        self.described.update(status="RUNNING", redriveCount=self.run)
        self.described.pop("stopDate", None)

    @precondition(lambda self: bool(self.end_events))
    @rule(data=st.data())
    def replay_execution_end(self, data: st.DataObject) -> None:
        """An execution-end event delivered again: late, or replayed after a redrive."""
        events.dispatch(data.draw(st.sampled_from(self.end_events)), self.world.dynamodb)

    # -- SageMaker and events -----------------------------------------------------------------

    @precondition(lambda self: bool(self.world.training.running()))
    @rule(data=st.data(), status=st.sampled_from(["Completed", "Failed:AlgorithmError: x"]))
    def end_a_job(self, data: st.DataObject, status: str) -> None:
        running = self.world.training.running()
        self.world.training.end(data.draw(st.sampled_from(running)), status)

    @precondition(lambda self: bool(self.world.job_events))
    @rule(data=st.data(), copies=st.integers(0, 2))
    def deliver_job_events(self, data: st.DataObject, copies: int) -> None:
        """Each job event delivered 0 (lost), 1 or 2 (duplicated) times, in any order."""
        event = data.draw(st.sampled_from(self.world.job_events))
        for _ in range(copies):
            events.dispatch(event, self.world.dynamodb)

    @rule()
    def forged_job_event(self) -> None:
        forged = {
            "source": lifecycle.JOB_EVENT_SOURCE,
            "detail": {"TrainingJobName": "someone-else", "TrainingJobStatus": "Completed"},
        }
        events.dispatch(forged, self.world.dynamodb)

    @rule(status=st.sampled_from(lifecycle.STOPPING_EXECUTION_STATUSES))
    def stale_execution_end(self, status: str) -> None:
        """An end event of this execution while it runs (late, replayed, before a redrive)."""
        event = {
            "source": lifecycle.EXECUTION_EVENT_SOURCE,
            "detail": {"executionArn": self.execution, "status": status},
        }
        events.dispatch(event, self.world.dynamodb)

    @rule()
    def reconcile(self) -> None:
        events.reconcile(self.world.dynamodb)
        for attempt in self.world.training.attempts:
            if attempt.status != "InProgress":
                continue
            item = token_store.get_job(self.world.dynamodb, attempt.name)
            assert item is not None, f"{attempt.name} runs with no record"
            assert item.task_token in self.world.open_tokens, (
                f"{attempt.name} runs after a reconcile pass, its task closed"
            )

    # -- what must hold after every step ------------------------------------------------------

    def _tags(self, name: str) -> dict[str, str]:
        sagemaker = self.world.sagemaker
        arn = sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]
        return {t["Key"]: t["Value"] for t in sagemaker.list_tags(ResourceArn=arn)["Tags"]}

    @invariant()
    def one_running_job_per_entry(self) -> None:
        running = [a.name for a in self.world.training.attempts if a.status == "InProgress"]
        slots = [self._tags(name)[lifecycle.TAG_SLOT] for name in running]
        assert len(slots) == len(set(slots)), f"two jobs run for one entry: {running}"

    @invariant()
    def each_task_hears_only_of_its_own_entrys_job_once(self) -> None:
        heard: set[str] = set()
        succeeded: dict[str, tuple[int, int]] = {}  # job -> the entry that heard its success
        for report in self.world.reports:
            assert report.token not in heard, "a task heard twice"
            heard.add(report.token)
            name = report.body.get("TrainingJobName")
            if not name or report.error == lifecycle.Errors.JOB_NAME_TAKEN:
                continue
            run, entry, attempt = self.entry_of_token[report.token]
            job = self.world.sagemaker.describe_training_job(TrainingJobName=name)
            assert job["HyperParameters"]["item"] == str(ITEMS[entry]), "another request's job"
            tags = self._tags(name)
            assert int(tags[lifecycle.TAG_ATTEMPT]) <= attempt, "a task heard of a later job"
            if report.operation == "SendTaskSuccess" and report.token not in self.discarded:
                heard_by = succeeded.setdefault(name, (run, entry))
                assert heard_by == (run, entry), "two entries heard one job"
            if ITEMS.count(ITEMS[entry]) > 1:
                continue  # identical entries may take each other's ended lanes (lanes.py)
            slot = tags[lifecycle.TAG_SLOT].partition(lifecycle.SLOT_TAG_SEPARATOR)[0]
            self.slot_of_entry.setdefault((run, entry), slot)
            assert slot == self.slot_of_entry[run, entry], f"entry {entry} heard of another's job"

    @invariant()
    def no_job_of_a_waiting_task_is_stopped(self) -> None:
        stopped = [stop for stop in self.world.stops if stop.task_waiting]
        assert not stopped, f"a job stopped while its task waited: {stopped}"

    @invariant()
    def every_item_has_a_ttl(self) -> None:
        assert all("expires_at" in item for item in self.world.items())


Lifecycle.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    derandomize=bool(os.environ.get("CI")) or "HETERO_LIFECYCLE_EXAMPLES" not in os.environ,
    suppress_health_check=list(HealthCheck),
)
TestLifecycle = Lifecycle.TestCase
