"""The run table: items round-trip, a conditional slot write never rewinds a newer job."""

from __future__ import annotations

from hetero_constructs.handlers import token_store
from tests.fixtures.handler_world import HandlerWorld


def _job(name: str = "job-a") -> token_store.JobItem:
    return token_store.JobItem(
        name, "token", "arn:execution", "slot", 1, 0, "arn:role", 1_700_000_000, "arn:r", "s3://o"
    )


def test_a_job_item_round_trips_and_is_found_by_its_execution(world: HandlerWorld) -> None:
    token_store.put_job(world.dynamodb, _job(), 3600)
    assert token_store.get_job(world.dynamodb, "job-a") == _job()
    assert token_store.jobs_of_execution(world.dynamodb, "arn:execution") == [_job()]
    [raw] = token_store.all_jobs(world.dynamodb)
    assert "expires_at" in raw
    token_store.forget_job(world.dynamodb, "job-a")
    assert token_store.get_job(world.dynamodb, "job-a") is None


def test_a_slot_write_conditional_on_its_job_loses_to_a_newer_job(world: HandlerWorld) -> None:
    newer = token_store.SlotItem("slot", "job-b", 1, 0, False, 0)
    assert token_store.put_slot(world.dynamodb, newer, 3600)
    stale = token_store.SlotItem("slot", "job-a", 0, 0, True, 0)
    assert not token_store.put_slot(world.dynamodb, stale, 3600, only_if_job="job-a")
    kept = token_store.get_slot(world.dynamodb, "slot")
    assert kept is not None and (kept.job, kept.attempt, kept.reported) == ("job-b", 1, False)
