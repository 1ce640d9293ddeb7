"""The data plane end to end on loopback: semantics, ending, failures (issue 24, items 1-4)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from hetero_constructs.runtime import data
from tests.fixtures.data_plane import (
    EXIT_SECONDS,
    PROMPT,
    Cluster,
    failing_batches,
    ids_batches,
    slow_batches,
    typed_batches,
    worker_pids,
)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    started = Cluster()
    yield started
    started.stop()


def run_ranks(
    cluster: Cluster, world_size: int, epochs: int, **kwargs: Any
) -> list[list[list[int]]]:
    """Every rank in a thread: the ids each rank got, per epoch, in order."""
    results: list[Any] = [None] * world_size

    def rank(r: int) -> None:
        try:
            remote = cluster.remote(rank=r, world_size=world_size, epochs=epochs, **kwargs)
            results[r] = [[int(i) for batch in remote for i in batch["ids"]] for _ in range(epochs)]
        except BaseException as error:
            results[r] = error

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(world_size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive(), "a rank hung"
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def test_every_sample_once_per_epoch_across_ranks_and_serve_returns(cluster: Cluster) -> None:
    for _ in range(2):
        cluster.start(ids_batches(203), workers=2)
    results = run_ranks(cluster, world_size=3, epochs=2)
    for epoch in range(2):
        per_rank = [results[r][epoch] for r in range(3)]
        assert sorted(i for ids in per_rank for i in ids) == list(range(203))
        assert all(len(ids) in (67, 68) for ids in per_rank)  # 4 of 12 shards of 203 each
    finished = time.monotonic()
    for host in cluster.hosts:
        assert host.wait(EXIT_SECONDS) == ("ok", "")
        assert host.process.exitcode == 0
    assert time.monotonic() - finished < PROMPT  # not after their idle timeout


def test_ordered_gives_the_same_order_whatever_the_timing(cluster: Cluster) -> None:
    orders = []
    for _ in range(2):
        run = Cluster()
        try:
            run.start(ids_batches(64, delay=0.01), workers=3)
            orders.append(run_ranks(run, world_size=1, epochs=2, seed=7))
        finally:
            run.stop()
    assert orders[0] == orders[1]
    assert orders[0][0][0] != orders[0][0][1]  # shuffled anew each epoch (seed, epoch)
    assert sorted(orders[0][0][0]) == list(range(64))


def test_unordered_takes_batches_as_they_come_and_misses_none(cluster: Cluster) -> None:
    cluster.start(ids_batches(100, delay=0.005), workers=3)
    results = run_ranks(cluster, world_size=2, epochs=1, ordered=False)
    assert sorted(results[0][0] + results[1][0]) == list(range(100))


def test_batches_keep_types_shapes_and_json_values(cluster: Cluster) -> None:
    cluster.start(typed_batches, workers=1)
    import torch

    with cluster.remote(rank=0, world_size=1) as remote:
        first, second = list(remote)
    assert first["image"].dtype == np.float16 and first["image"].shape == (2, 3, 4)
    assert first["image"].tolist() == np.arange(24).reshape(2, 3, 4).tolist()
    assert isinstance(first["label"], torch.Tensor) and first["label"].tolist() == [1, 2]
    assert first["mask"].tolist() == [True, False]
    assert first["half"].dtype == torch.bfloat16 and first["half"].sum().item() == 4
    assert first["meta"] == {"source": "s3://bucket/part-0", "shard": 0}
    assert isinstance(second, tuple) and second[0].shape == (0,) and second[1:] == ("tuple", 3.5)
    stats = remote.stats()
    assert stats.batches == 2 and stats.samples == 2 and stats.bytes > 0
    assert 0 <= stats.wait_seconds <= stats.seconds


def test_torch_dataset_feeds_a_data_loader(cluster: Cluster) -> None:
    torch = pytest.importorskip("torch")
    cluster.start(ids_batches(40), workers=2)
    remote = cluster.remote(rank=0, world_size=1, epochs=1)
    loader = torch.utils.data.DataLoader(remote.torch_dataset(), batch_size=None)
    batches = list(loader)
    assert all(isinstance(batch["x"], torch.Tensor) for batch in batches)
    assert sorted(int(i) for batch in batches for i in batch["ids"]) == list(range(40))
    assert cluster.hosts[0].wait(EXIT_SECONDS) == ("ok", "")


def test_credits_bound_what_is_in_flight(cluster: Cluster) -> None:
    cluster.start(slow_batches, workers=1)
    remote = cluster.remote(rank=0, world_size=1, prefetch=3)
    epoch = iter(remote)
    next(epoch)
    producer = remote.producers[0]
    # 3 credits: the one consumed, and 2 more queued; nothing else was sent.
    deadline = time.monotonic() + EXIT_SECONDS
    while producer.items.qsize() < 2:
        assert time.monotonic() < deadline, "the credited batches never came"
        time.sleep(0.02)
    time.sleep(0.5)  # time for a batch sent beyond the credits to arrive (it would be a bug)
    assert producer.items.qsize() == 2
    assert remote.stats().batches == 1
    remote.close()


def test_an_abandoned_epoch_does_not_leak_into_the_next(cluster: Cluster) -> None:
    cluster.start(ids_batches(60), workers=2)
    remote = cluster.remote(rank=0, world_size=1)
    for index, _ in enumerate(remote):
        if index == 2:
            break
    second = [batch for batch in remote]
    assert all(batch["epoch"] == 1 for batch in second)
    assert sorted(int(i) for batch in second for i in batch["ids"]) == list(range(60))
    remote.close()
    assert cluster.hosts[0].wait(EXIT_SECONDS) == ("ok", "")


def test_data_hosts_exit_non_zero_after_idle_timeout_when_trainers_vanish(
    cluster: Cluster,
) -> None:
    # 4 s (not less: the trainer's handshake is bounded by it too, and must not race it).
    host = cluster.start(ids_batches(1000), workers=1, idle_timeout=4.0)
    remote = cluster.remote(rank=0, world_size=2, idle_timeout=4.0)
    next(iter(remote))
    for producer in remote.producers:  # the trainer crashes: its sockets just close
        producer.sock.close()
    remote.closed = True
    vanished = time.monotonic()
    kind, message = host.wait(EXIT_SECONDS)
    assert kind == "TrainersGone" and "4 s" in message
    assert host.process.exitcode != 0
    # Counted from the trainer's last frame (a heartbeat every 1 s before it vanished; half the
    # timeout allows one a second late), not from the close; the idle timeout, not a hang.
    assert 4.0 / 2 <= time.monotonic() - vanished <= 4.0 + PROMPT


def test_data_hosts_stop_at_once_when_a_trainer_aborts(cluster: Cluster) -> None:
    host = cluster.start(ids_batches(100), workers=1)
    with pytest.raises(ZeroDivisionError), cluster.remote(rank=0, world_size=1) as remote:
        next(iter(remote))
        1 / 0  # noqa: B018
    kind, message = host.wait(PROMPT)  # at once, not after its idle timeout
    assert kind == "TrainersGone" and "ZeroDivisionError" in message


def test_a_failing_worker_names_host_worker_and_traceback(cluster: Cluster) -> None:
    host = cluster.start(failing_batches, workers=2)
    remote = cluster.remote(rank=0, world_size=1)
    started = time.monotonic()
    with pytest.raises(data.DataHostLost) as caught:
        list(remote)
    assert time.monotonic() - started < PROMPT  # at once, not after the idle timeout
    message = str(caught.value)
    assert caught.value.host == host.name and caught.value.worker in (0, 1)
    assert "corrupt record 17 in part-0003" in message
    assert "Traceback" in caught.value.remote_traceback and "failing_batches" in message
    kind, _ = host.wait(EXIT_SECONDS)
    assert kind == "WorkerFailed" and host.process.exitcode != 0


@pytest.mark.parametrize("victim", ["worker", "host"])
def test_a_killed_worker_or_host_is_a_named_error_not_a_hang(cluster: Cluster, victim: str) -> None:
    host = cluster.start(slow_batches, workers=2)
    remote = cluster.remote(rank=0, world_size=1)
    epoch = iter(remote)
    next(epoch)
    if victim == "worker":
        os.kill(worker_pids(host)[1], 9)
    else:
        host.kill()
    started = time.monotonic()
    with pytest.raises(data.DataHostLost) as caught:
        for _ in epoch:
            pass
    assert time.monotonic() - started < PROMPT  # at once, not after the idle timeout
    assert caught.value.host == host.name
    if victim == "worker":
        assert caught.value.worker == 1 and "process died" in str(caught.value)
        # The host saw its worker die, or the trainer's abort first: either way it stops.
        assert host.wait(EXIT_SECONDS)[0] in ("WorkerFailed", "TrainersGone")


def test_on_host_loss_continue_goes_on_with_the_other_hosts(cluster: Cluster) -> None:
    good = cluster.start(ids_batches(40), workers=1)
    bad = cluster.start(failing_batches, workers=1)
    remote = cluster.remote(rank=0, world_size=1, on_host_loss="continue", epochs=2)
    first, second = list(remote), list(remote)
    ids = sorted(int(i) for batch in first if isinstance(batch, dict) for i in batch["ids"])
    assert ids == list(range(0, 40, 2))  # the good host's shard only
    assert len(second) == len(first) - 1  # the lost host's one batch is gone too
    assert set(remote.lost_hosts) == {bad.name}
    assert good.wait(EXIT_SECONDS) == ("ok", "")
    assert bad.wait(EXIT_SECONDS)[0] == "WorkerFailed"


def test_serve_refuses_to_run_without_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(data.SECRET_ENV, raising=False)
    with pytest.raises(data.DataPlaneError, match="HETERO_DATA_SECRET"):
        data.serve(ids_batches(1), host="h", bind="127.0.0.1")
    with pytest.raises(data.DataPlaneError, match="HETERO_DATA_SECRET"):
        data.RemoteBatches(["h"])
