"""Mid-epoch resume (issue 32, item 5): a rank's ``state_dict()`` saved with its checkpoint, a
restart with new data hosts, and the interrupted epoch goes on where it stopped."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.runtime import data
from tests.fixtures.data_plane import EXIT_SECONDS, Cluster, ids_batches
from tests.fixtures.data_trainers import resumable_batches, start_trainer


@pytest.fixture
def clusters() -> Iterator[list[Cluster]]:
    """Clusters a test starts one after the other (a restart gets new data hosts)."""
    started: list[Cluster] = []
    yield started
    for cluster in started:
        cluster.stop()


def new_cluster(
    clusters: list[Cluster], make_batches: Any, hosts: int = 2, **kwargs: Any
) -> Cluster:
    cluster = Cluster()
    clusters.append(cluster)
    for _ in range(hosts):
        cluster.start(make_batches, **kwargs)
    return cluster


def crash(remote: data.RemoteBatches) -> None:
    """The trainer dies: its sockets close without a goodbye."""
    remote.closed = True
    for producer in remote.producers:
        producer.sock.close()


def batches_of(remote: data.RemoteBatches, count: int | None = None) -> list[dict[str, Any]]:
    """The epoch's batches as lists, or its first ``count``; then ``remote.saved`` is the
    state taken while the loop still held the epoch (a checkpoint inside the loop)."""
    taken: list[dict[str, Any]] = []
    remote.saved = remote.state_dict()  # type: ignore[attr-defined]
    if count == 0:
        return taken
    for batch in remote:
        taken.append(
            {
                key: value.tolist() if hasattr(value, "tolist") else value
                for key, value in batch.items()
            }
        )
        if count is not None and len(taken) == count:
            remote.saved = remote.state_dict()  # type: ignore[attr-defined]
            break
    return taken


SKIPS, IGNORES = resumable_batches, ids_batches(400)


@pytest.mark.parametrize(
    ("make_batches", "ordered", "taken"),
    [
        pytest.param(SKIPS, True, 37, id="skips-ordered-37"),
        pytest.param(SKIPS, True, 1, id="skips-ordered-1"),
        pytest.param(IGNORES, True, 37, id="ignores-start-ordered-37"),
        pytest.param(SKIPS, False, 37, id="skips-unordered-37"),
        pytest.param(IGNORES, False, 0, id="ignores-start-unordered-0"),
    ],
)
def test_a_restart_on_new_data_hosts_goes_on_where_the_epoch_stopped(
    clusters: list[Cluster], make_batches: Any, ordered: bool, taken: int
) -> None:
    options = {"rank": 1, "world_size": 2, "seed": 5, "ordered": ordered, "epochs": 2}
    reference = new_cluster(clusters, make_batches)
    whole = batches_of(reference.remote(**options))
    reference.stop()

    first = new_cluster(clusters, make_batches).remote(**options)
    before = batches_of(first, taken)
    state = json.loads(json.dumps(first.saved))  # as saved in a checkpoint
    crash(first)
    clusters[-1].stop()

    second = new_cluster(clusters, make_batches).remote(**options)
    second.load_state_dict(state)
    after = batches_of(second)
    ids = [i for batch in before + after for i in batch["ids"]]
    assert sorted(ids) == sorted(i for batch in whole for i in batch["ids"])
    assert len(ids) == len(set(ids)) == 200  # rank 1's half of 400, each once
    if ordered:
        assert [batch["ids"] for batch in before + after] == [batch["ids"] for batch in whole]
    if make_batches is resumable_batches and taken:  # the data hosts skipped, not redid
        producers = state["producers"]
        shards = producers * options["world_size"]
        starts = {batch["shard"]: batch["first"] for batch in after}
        wanted = {}
        for p, n in enumerate(state["consumed"]):
            shard = 1 * producers + p
            # resumable_batches' shard: 400 ids over the shards, 4 a batch. A shard read to its
            # last batch whose end had not come yet (as fast as the machine was) sends none.
            batches = -(-len(range(shard, 400, shards)) // 4)
            if not state["ended"][p] and n < batches:
                wanted[shard] = n
        assert starts == wanted, json.dumps(state)
    second.close()
    assert second.closed


def test_a_state_between_epochs_starts_the_next_epoch(clusters: list[Cluster]) -> None:
    remote = new_cluster(clusters, resumable_batches, hosts=1).remote(
        rank=0, world_size=1, epochs=3
    )
    batches_of(remote)
    state = remote.state_dict()
    assert (state["epoch"], state["epochs_done"], state["consumed"]) == (1, 1, [])
    batches_of(remote, 3)
    left_early = remote.state_dict()  # the loop left epoch 1: a restart begins epoch 2
    assert (left_early["epoch"], left_early["epochs_done"], left_early["consumed"]) == (2, 2, [])
    crash(remote)
    fresh = new_cluster(clusters, resumable_batches, hosts=1).remote(rank=0, world_size=1, epochs=3)
    fresh.load_state_dict(left_early)
    batches = batches_of(fresh)
    assert sorted(i for batch in batches for i in batch["ids"]) == list(range(400))
    assert all(batch["first"] == 0 for batch in batches)
    assert fresh.closed  # epochs=3 counts the epochs of both runs
    assert clusters[-1].hosts[0].wait(EXIT_SECONDS) == ("ok", "")


def test_a_make_batches_that_ignores_start_is_fast_forwarded_and_the_host_says_so(
    clusters: list[Cluster], capfd: pytest.CaptureFixture[str]
) -> None:
    cluster = new_cluster(clusters, ids_batches(400), hosts=1, workers=1)
    first = cluster.remote(rank=0, world_size=1)
    batches_of(first, 7)
    state = first.saved
    crash(first)
    second = cluster.remote(rank=0, world_size=1)
    second.load_state_dict(state)
    assert len(batches_of(second)) == 100 - 7
    second.close()
    assert cluster.hosts[0].wait(EXIT_SECONDS)[0] in ("ok", "TrainersGone")
    logged = capfd.readouterr().err
    assert re.search(
        r"does not read shard\.start; fast-forwarded rank 0's shard 0 of epoch 0 "
        r"by making and discarding 7 batches in [0-9.]+ s",
        logged,
    ), logged


def test_resume_with_other_ranks_or_workers_is_refused_clearly(clusters: list[Cluster]) -> None:
    cluster = new_cluster(clusters, resumable_batches, hosts=1, workers=2)
    remote = cluster.remote(rank=0, world_size=2)
    batches_of(remote, 3)
    state = remote.saved
    with pytest.raises(data.DataPlaneError, match="before the first iteration"):
        remote.load_state_dict(state)
    remote.close()
    with pytest.raises(data.DataPlaneError, match=r"saved with world_size=2.*has world_size=3"):
        cluster.remote(rank=0, world_size=3).load_state_dict(state)
    with pytest.raises(data.DataPlaneError, match=r"saved with rank=0.*has rank=1"):
        cluster.remote(rank=1, world_size=2).load_state_dict(state)
    with pytest.raises(data.DataPlaneError, match="not a RemoteBatches state"):
        cluster.remote(rank=0, world_size=2).load_state_dict({"epoch": 0})
    other = new_cluster(clusters, resumable_batches, hosts=1, workers=3)
    moved = other.remote(rank=0, world_size=2)
    moved.load_state_dict(state)
    with pytest.raises(
        data.DataPlaneError, match=r"saved with 2 data workers.*have 3.*start_epoch=0"
    ):
        iter(moved)
    moved.close()


TRAINER = """
import os
from pathlib import Path
checkpoint = Path({checkpoint!r})
seen = []
if checkpoint.exists():
    saved = json.loads(checkpoint.read_text())
    remote.load_state_dict(saved["data"])
    seen = saved["ids"]
with remote:
    for epoch in range(remote.next_epoch, 1):
        for batch in remote:
            seen += batch["ids"].tolist()
            partial = checkpoint.with_suffix(".partial")
            partial.write_text(json.dumps({{"data": remote.state_dict(), "ids": seen}}))
            os.replace(partial, checkpoint)
            say({{"batches": len(seen) // 4}})
            if {pause} and len(seen) // 4 == {pause}:
                sys.stdin.readline()  # the test kills this process here
say({{"done": seen}})
"""


def test_trainers_killed_mid_epoch_resume_on_fresh_data_hosts(
    clusters: list[Cluster], tmp_path: Path
) -> None:
    """Two trainer processes, SIGKILLed mid-epoch with their data hosts; restarted from their
    checkpoints on new data hosts, the epoch ends with every sample seen exactly once."""
    paths = [tmp_path / f"data-rank{rank}.json" for rank in range(2)]
    first = new_cluster(clusters, resumable_batches)
    trainers = [
        start_trainer(
            first,
            TRAINER.format(checkpoint=str(path), pause=9 + 4 * rank),
            rank=rank,
            world_size=2,
            epochs=1,
        )
        for rank, path in enumerate(paths)
    ]
    for rank, trainer in enumerate(trainers):
        while trainer.next_line(120).get("batches") != 9 + 4 * rank:
            pass
    for trainer in trainers:
        trainer.kill()
    first.stop()
    saved = [json.loads(path.read_text())["ids"] for path in paths]
    assert [len(ids) for ids in saved] == [36, 52]

    second = new_cluster(clusters, resumable_batches)
    restarted = [
        start_trainer(
            second, TRAINER.format(checkpoint=str(path), pause=0), rank=rank, world_size=2, epochs=1
        )
        for rank, path in enumerate(paths)
    ]
    for trainer in restarted:
        assert trainer.finish(300) == 0
    for host in second.hosts:
        assert host.wait(EXIT_SECONDS) == ("ok", "")
    finals = [trainer.said[-1]["done"] for trainer in restarted]
    for rank in range(2):
        assert finals[rank][: len(saved[rank])] == saved[rank]
    every = finals[0] + finals[1]
    assert sorted(every) == list(range(400)), "a sample was lost or seen twice"
