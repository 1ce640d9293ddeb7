"""The data plane under production faults (issue 32): a rank that stops reading stalls no
other, nothing outlives its job, and a batch arrives exactly as sent or is refused."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hetero_constructs.runtime import data
from hetero_constructs.runtime.data import auth, wire
from tests.fixtures.data_plane import (
    CONTEXT,
    EXIT_SECONDS,
    PROMPT,
    SECRET,
    Cluster,
    DataHost,
    big_batches,
    changing_batches,
    ids_batches,
    sized_batches,
    slow_batches,
    sluggish_batches,
    worker_pids,
)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    started = Cluster()
    yield started
    started.stop()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def until(condition: Any, seconds: float, step: float = 0.02) -> float:
    """Poll ``condition`` until it holds; the seconds it took (fail after ``seconds``)."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > seconds:
            raise AssertionError(f"not within {seconds} s: {condition.__doc__ or condition}")
        time.sleep(step)
    return time.monotonic() - started


def frozen_rank(host: DataHost, rank: int, world_size: int, credits: int = 64) -> socket.socket:
    """A rank of a one-worker host that starts its epoch with ``credits`` and never reads."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(60)
    sock.connect(("127.0.0.1", host.port))
    auth.client_handshake(sock, SECRET.encode(), time.monotonic() + 60, "test")
    wire.send_frame(sock, wire.ATTACH, {"rank": rank, "world_size": world_size, "worker": 0})
    shard = {"epoch": 0, "index": rank, "count": world_size, "seed": 0, "credits": credits}
    wire.send_frame(sock, wire.START, shard)
    return sock


def batches_of(cluster: Cluster, rank: int, world_size: int, **kwargs: Any) -> int:
    with cluster.remote(rank=rank, world_size=world_size, **kwargs) as remote:
        return sum(1 for _ in iter(remote))


# -- stragglers ----------------------------------------------------------------------------


def test_a_rank_that_stops_reading_stalls_no_other_rank(cluster: Cluster) -> None:
    # Before: the worker's blocking send to the frozen rank held it for idle_timeout. It is 180 s
    # here so that a loaded machine's slowness is never taken for a stall (bound: 90 s).
    host = cluster.start(big_batches, workers=1, idle_timeout=180.0)
    frozen = frozen_rank(host, rank=2, world_size=3)
    try:
        started = time.monotonic()
        counts: list[Any] = [None, None]

        def rank(r: int) -> None:
            try:
                counts[r] = batches_of(cluster, r, 3, idle_timeout=180.0)
            except BaseException as error:
                counts[r] = error

        threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(150)
        assert counts == [200, 200]  # both connected after the rank froze
        assert time.monotonic() - started < 90  # well below idle_timeout
    finally:
        frozen.close()


def test_a_rank_that_sends_half_a_frame_stalls_no_other_rank(cluster: Cluster) -> None:
    # Before: the worker read each control frame to its end, waiting up to idle_timeout.
    host = cluster.start(ids_batches(400), workers=1, idle_timeout=180.0)
    stalled = frozen_rank(host, rank=1, world_size=2, credits=1)
    try:
        stalled.sendall(wire.HEADER.pack(wire.MAGIC, wire.CREDIT, 0, 0, 7, 0)[:9])
        started = time.monotonic()
        assert batches_of(cluster, 0, 2, idle_timeout=180.0) == 50  # 200 ids, 4 a batch
        assert time.monotonic() - started < 90  # well below idle_timeout (180 s)
    finally:
        stalled.close()


#: The stopped rank's and its data host's idle_timeout: 5 s, not less, so that a running rank
#: that a loaded machine holds up for a moment is not taken for stopped (it also bounds the
#: rank's handshake).
DROP_AFTER = 5.0


def _stopped_trainer(addresses: dict[str, str], report: Any) -> None:
    remote = data.RemoteBatches(
        list(addresses),
        addresses=addresses,
        secret=SECRET,
        rank=0,
        world_size=2,
        idle_timeout=DROP_AFTER,
    )
    epoch = iter(remote)
    next(epoch)
    sock = remote.producers[0].sock
    report.send((sock.getsockname()[1], sock.getpeername()[1]))
    try:
        for _ in epoch:
            pass
        report.send(("ok", ""))
    except data.DataPlaneError as error:
        report.send((type(error).__name__, str(error)))


def tcp_state(ports: tuple[int, int]) -> str | None:
    """The state of this machine's TCP socket from local port ``ports[0]`` to remote port
    ``ports[1]`` (hex, as the kernel writes it: 01 established, 07 closed), or ``None``. Both
    ports: other processes' connections may share a local port with another remote."""
    with open("/proc/net/tcp") as table:
        for line in list(table)[1:]:
            fields = line.split()
            local, remote = (int(field.rsplit(":", 1)[1], 16) for field in fields[1:3])
            if (local, remote) == ports:
                return fields[3]
    return None


def test_a_stopped_rank_is_dropped_after_idle_timeout_and_told_why(cluster: Cluster) -> None:
    cluster.start(big_batches, workers=1, idle_timeout=DROP_AFTER)
    ours, theirs = CONTEXT.Pipe()
    trainer = CONTEXT.Process(target=_stopped_trainer, args=(cluster.addresses, theirs))
    trainer.start()
    try:
        assert ours.poll(120), "the trainer did not start"
        ports = ours.recv()
        assert tcp_state(ports) == "01"
        os.kill(trainer.pid or 0, signal.SIGSTOP)
        # The data host drops it once it has read nothing for idle_timeout: the connection
        # is reset under the stopped process.
        until(lambda: tcp_state(ports) != "01", 90)  # a bound, not a speed
        os.kill(trainer.pid or 0, signal.SIGCONT)
        assert ours.poll(90)
        kind, message = ours.recv()
        assert kind == "DataHostLost"
        assert "dropped this rank: it read nothing for 5 s" in message
        assert "stopped, frozen or swapped out" in message
    finally:
        os.kill(trainer.pid or 0, signal.SIGCONT)
        trainer.kill()
        trainer.join(10)


def test_heartbeats_do_not_wait_for_a_slow_make_batches(cluster: Cluster) -> None:
    # Batches 1.5 times the idle timeout apart, heartbeats every quarter of it: 3 s, so that a
    # heartbeat 2 s late on a loaded machine is still in time (and the handshake it bounds).
    cluster.start(sluggish_batches(2, 4.5), workers=1, idle_timeout=3.0)
    with cluster.remote(rank=0, world_size=1, idle_timeout=3.0) as remote:
        assert [int(batch[0]) for batch in remote] == [0, 1]


# -- nothing outlives its job --------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_workers_exit_as_serve_dies_and_trainers_hear_of_it(cluster: Cluster, signum: int) -> None:
    """The kernel kills them with their parent: at once, not after the idle timeout (120 s)."""
    host = cluster.start(slow_batches, workers=2)
    remote = cluster.remote(rank=0, world_size=1)
    epoch = iter(remote)
    next(epoch)
    workers = worker_pids(host)
    assert len(workers) == 2
    os.kill(host.process.pid, signum)

    def workers_gone() -> bool:
        """every worker has exited"""
        return not any(alive(pid) for pid in workers)

    until(workers_gone, PROMPT)
    with pytest.raises(data.DataHostLost) as caught:
        for _ in epoch:
            pass
    assert caught.value.host == host.name
    remote.close()


# -- a batch arrives exactly as sent, or is refused ----------------------------------------


def test_a_batch_that_would_change_is_refused_at_the_sender_whatever_on_host_loss(
    cluster: Cluster,
) -> None:
    # Before: {1: "one"} arrived as {"1": "one"}.
    bad = cluster.start(changing_batches, workers=1)
    cluster.start(ids_batches(40), workers=1)
    remote = cluster.remote(rank=0, world_size=1, on_host_loss="continue")
    with pytest.raises(data.BatchRefused) as caught:
        list(remote)
    assert caught.value.host == bad.name
    assert "batch['meta'] has the key 1 (int)" in str(caught.value)
    assert "Fix: use string keys" in str(caught.value)
    assert bad.wait(EXIT_SECONDS)[0] == "WorkerFailed"


def test_a_batch_over_the_trainers_limit_is_refused_naming_size_and_limit(
    cluster: Cluster,
) -> None:
    # Before: under on_host_loss="continue" the host was dropped with a protocol error.
    big = cluster.start(sized_batches, workers=1)
    cluster.start(ids_batches(40), workers=1)
    remote = cluster.remote(rank=0, world_size=1, on_host_loss="continue", max_batch_bytes=16384)
    with pytest.raises(data.BatchRefused) as caught:
        list(remote)
    message = str(caught.value)
    assert caught.value.host == big.name
    assert "a batch of 65536 bytes is over the max_batch_bytes of rank 0 (16384 bytes)" in message
    assert "max_batch_bytes=65536" in message
    kind, text = big.wait(EXIT_SECONDS)
    assert kind == "WorkerFailed" and "65536" in text
