"""The lifecycle model of docs/lifecycle.md, checked: a hypothesis state machine drives the
real handlers on moto through interleavings of submit invocations (duplicated, delayed, out of
order, racing), job ends and their events (lost, duplicated, stale, forged), execution-end
events (stale), task cancellations and reconcile passes, and checks after every step:

- at most one job runs per entry (slot, lane) at any time;
- after a reconcile pass, no job runs whose task no longer waits;
- a task only ever hears of a job of its own request, of its attempt or an earlier one it took
  over, and at most once; an entry with its own overrides only of its own slot's jobs;
- two entries never hear of one job's success (two entries of identical items, as an inline
  Map over identical items makes them, are told apart by their tokens: ``handlers/lanes.py``);
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
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from hetero_constructs.handlers import events, submit, token_store
from hetero_constructs.run import lifecycle
from tests.fixtures.handler_world import HandlerWorld, handler_world

# Three entries of one task that start together, a Map over the items [0, 0, 1]: entries 0 and
# 1 show the same context (same overrides, no job_key, same entry time), entry 2 its own.
ITEMS = (0, 0, 1)
ENTRIES = len(ITEMS)
ATTEMPTS = 3
EXAMPLES = int(os.environ.get("HETERO_LIFECYCLE_EXAMPLES", "8"))


class Lifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._stack = contextlib.ExitStack()
        patch = self._stack.enter_context(pytest.MonkeyPatch.context())
        self.world: HandlerWorld = self._stack.enter_context(handler_world(patch))
        self.execution = self.world.start("model")
        # (entry, attempt) -> its task token, created when Step Functions starts the attempt.
        self.tokens: dict[tuple[int, int], str] = {}
        self.entry_of_token: dict[str, tuple[int, int]] = {}
        self.slot_of_entry: dict[int, str] = {}

    def teardown(self) -> None:
        self._stack.close()

    # -- Step Functions -----------------------------------------------------------------------

    def _event(self, entry: int, attempt: int) -> dict[str, Any]:
        key = (entry, attempt)
        if key not in self.tokens:
            # Step Functions starts attempt n only after closing attempt n-1's task.
            for (other_entry, other_attempt), token in self.tokens.items():
                if other_entry == entry and other_attempt < attempt:
                    self.world.open_tokens.discard(token)
            self.tokens[key] = self.world.token()
            self.entry_of_token[self.tokens[key]] = key
        return self.world.submit_event(
            self.execution,
            self.tokens[key],
            retry_count=attempt,
            execution_input={"hyperparameters": {"item": ITEMS[entry]}},
        )

    @rule(entry=st.integers(0, ENTRIES - 1), attempt=st.integers(0, ATTEMPTS - 1))
    def invoke_submit(self, entry: int, attempt: int) -> None:
        """A submit invocation: the first of its attempt, a duplicate, or a late one."""
        submit.handler(self._event(entry, attempt))

    @rule(entry=st.integers(0, ENTRIES - 1))
    def retry_entry(self, entry: int) -> None:
        """Step Functions retries the entry's task: its next attempt's first invocation."""
        attempts = [attempt for (other, attempt) in self.tokens if other == entry]
        following = max(attempts, default=-1) + 1
        if following < ATTEMPTS:
            submit.handler(self._event(entry, following))

    @rule(entry=st.integers(0, ENTRIES - 1), attempt=st.integers(0, ATTEMPTS - 1))
    def invoke_submit_racing(self, entry: int, attempt: int) -> None:
        """An invocation that read the slot before another invocation's write."""
        event = self._event(entry, attempt)
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
        for (other_entry, _), token in self.tokens.items():
            if other_entry == entry:
                self.world.open_tokens.discard(token)

    # -- SageMaker and events -----------------------------------------------------------------

    @rule(data=st.data(), status=st.sampled_from(["Completed", "Failed:AlgorithmError: x"]))
    def end_a_job(self, data: st.DataObject, status: str) -> None:
        running = self.world.training.running()
        if running:
            self.world.training.end(data.draw(st.sampled_from(running)), status)

    @rule(data=st.data(), copies=st.integers(0, 2))
    def deliver_job_events(self, data: st.DataObject, copies: int) -> None:
        """Each job event delivered 0 (lost), 1 or 2 (duplicated) times, in any order."""
        if not self.world.job_events:
            return
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
        succeeded: dict[str, int] = {}  # job -> the entry that heard of its success
        for report in self.world.reports:
            assert report.token not in heard, "a task heard twice"
            heard.add(report.token)
            name = report.body.get("TrainingJobName")
            if not name or report.error == lifecycle.Errors.JOB_NAME_TAKEN:
                continue
            entry, attempt = self.entry_of_token[report.token]
            job = self.world.sagemaker.describe_training_job(TrainingJobName=name)
            assert job["HyperParameters"]["item"] == str(ITEMS[entry]), "another request's job"
            tags = self._tags(name)
            assert int(tags[lifecycle.TAG_ATTEMPT]) <= attempt, "a task heard of a later job"
            if report.operation == "SendTaskSuccess":
                assert succeeded.setdefault(name, entry) == entry, "two entries heard one job"
            if ITEMS.count(ITEMS[entry]) > 1:
                continue  # identical entries may take each other's ended lanes (lanes.py)
            slot = tags[lifecycle.TAG_SLOT].partition(lifecycle.SLOT_TAG_SEPARATOR)[0]
            self.slot_of_entry.setdefault(entry, slot)
            assert slot == self.slot_of_entry[entry], f"entry {entry} heard of another's job"

    @invariant()
    def every_item_has_a_ttl(self) -> None:
        assert all("expires_at" in item for item in self.world.items())


Lifecycle.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=12,
    deadline=None,
    derandomize=bool(os.environ.get("CI")) or "HETERO_LIFECYCLE_EXAMPLES" not in os.environ,
    suppress_health_check=list(HealthCheck),
)
TestLifecycle = Lifecycle.TestCase
