"""The run table: items round-trip, and every write is conditional (docs/lifecycle.md)."""

from __future__ import annotations

import dataclasses

from hetero_constructs.handlers import token_store
from tests.fixtures.handler_world import HandlerWorld


def _job(name: str = "job-a", token: str = "token", holder: int = 1) -> token_store.JobItem:
    return token_store.JobItem(
        name,
        token,
        "arn:execution",
        "slot",
        1,
        0,
        "arn:role",
        1_700_000_000,
        "arn:r",
        "s3://o",
        holder=holder,
        execution_start="2026-01-01T00:00:00Z",
        redrive_count=2,
        request_digest="d" * 32,
    )


def test_a_job_item_round_trips_and_is_found_by_its_execution(world: HandlerWorld) -> None:
    assert token_store.put_job(world.dynamodb, _job(), 3600)
    assert token_store.get_job(world.dynamodb, "job-a") == _job()
    assert token_store.jobs_of_execution(world.dynamodb, "arn:execution") == [_job()]
    [raw] = token_store.all_jobs(world.dynamodb)
    assert "expires_at" in raw
    assert token_store.forget_job(world.dynamodb, _job())
    assert token_store.get_job(world.dynamodb, "job-a") is None


def test_a_job_name_is_written_once_never_over_another_runs_item(world: HandlerWorld) -> None:
    """Issue 21 case 6: a colliding name no longer overwrites the first run's item."""
    assert token_store.put_job(world.dynamodb, _job(token="run-a"), 3600)
    other = dataclasses.replace(_job(token="run-b"), slot="another-slot")
    assert not token_store.put_job(world.dynamodb, other, 3600)
    assert not token_store.put_job(world.dynamodb, other, 3600, take_over=True)
    assert token_store.get_job(world.dynamodb, "job-a") == _job(token="run-a")


def test_only_a_newer_attempt_takes_a_job_over(world: HandlerWorld) -> None:
    """Issue 21 case 3: a late invocation of attempt 0 never writes over attempt 1's token."""
    assert token_store.put_job(world.dynamodb, _job(token="attempt-1", holder=1), 3600)
    late = _job(token="attempt-0", holder=0)
    assert not token_store.put_job(world.dynamodb, late, 3600, take_over=True)
    newer = _job(token="attempt-2", holder=2)
    assert token_store.put_job(world.dynamodb, newer, 3600, take_over=True)
    assert token_store.get_job(world.dynamodb, "job-a") == newer
    # Deleted only by who knows its current token.
    assert not token_store.forget_job(world.dynamodb, late)
    assert token_store.get_job(world.dynamodb, "job-a") == newer


def test_two_writers_of_one_slot_version_one_wins(world: HandlerWorld) -> None:
    """Issue 21 case 5: a slot is claimed once; racing claims over one read, once."""
    first = token_store.SlotItem("slot", "job-a", 0, 0, False, 0)
    assert token_store.put_slot(world.dynamodb, first, 3600, fresh=True)
    assert not token_store.put_slot(
        world.dynamodb, dataclasses.replace(first, job="job-b"), 3600, fresh=True
    )
    read = token_store.get_slot(world.dynamodb, "slot")
    assert read is not None and read.version == 1
    assert token_store.put_slot(world.dynamodb, dataclasses.replace(read, holder=1), 3600)
    assert not token_store.put_slot(world.dynamodb, dataclasses.replace(read, holder=2), 3600)
    kept = token_store.get_slot(world.dynamodb, "slot")
    assert kept is not None and (kept.job, kept.holder, kept.version) == ("job-a", 1, 2)


def test_a_slot_write_conditional_on_its_job_loses_to_a_newer_job(world: HandlerWorld) -> None:
    newer = token_store.SlotItem("slot", "job-b", 1, 0, False, 0)
    assert token_store.put_slot(world.dynamodb, newer, 3600, fresh=True)
    stale = token_store.SlotItem("slot", "job-a", 0, 0, True, 0)
    assert not token_store.put_slot(world.dynamodb, stale, 3600, only_if_job="job-a")
    kept = token_store.get_slot(world.dynamodb, "slot")
    assert kept is not None and (kept.job, kept.attempt, kept.reported) == ("job-b", 1, False)


def test_a_malformed_item_is_quarantined_once_and_then_skipped(world: HandlerWorld) -> None:
    world.dynamodb.put_item(TableName="runs", Item={"pk": {"S": "job#broken"}})
    assert token_store.quarantine(world.dynamodb, "job#broken", 60)
    assert not token_store.quarantine(world.dynamodb, "job#broken", 60)
    assert token_store.all_jobs(world.dynamodb) == []
    [item] = world.items("job#")
    assert "expires_at" in item
