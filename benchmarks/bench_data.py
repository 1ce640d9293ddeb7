"""The data plane on loopback: throughput against the raw socket, rates, scaling, exit times.

Everything runs on this machine: data hosts are forked processes running ``serve``, the
trainer is this process. Measured in this run (each rate is the best of ``--rounds`` rounds,
raw and remote rounds interleaved, so that both see the same background load):
- the loopback limit: a forked process ``sendall``s 4 MiB float32 payloads, this one
  ``recv_into``s them into one reused buffer (no framing, no allocation: the physical limit);
- the data plane with the same payloads (one worker yields one prepared 4 MiB array; the
  trainer allocates each batch's buffer and receives into it), as a ratio to that limit;
- batches per second of 4 KiB batches (2 workers, ``ordered=False``);
- producer scaling: batches per second of a CPU-bound transform (about 10 ms of CPU per
  batch, calibrated here) with 2 workers over 1 worker;
- the same transform from 2 remote workers over ``torch.utils.data.DataLoader(num_workers=2)``;
- how long a data host takes to exit after the trainers finish, and after they vanish (a
  trainer process killed with SIGKILL; ``idle_timeout`` 2 s).
Usage: ``.venv/bin/python benchmarks/bench_data.py [--rounds 3]``. The last lines are the
issue's seven figures (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hetero_constructs.runtime import data  # noqa: E402

SECRET = "bench-" + "5" * 32
FORK = multiprocessing.get_context("fork")
MIB = 1 << 20
IDLE = 2.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# -- the raw socket ------------------------------------------------------------------------


def _raw_sender(port: int, count: int, size: int) -> None:
    payload = np.ones(size // 4, np.float32)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for _ in range(count):
            sock.sendall(payload.data.cast("B"))


def loopback_mb_per_s(count: int, size: int) -> float:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        sender = FORK.Process(target=_raw_sender, args=(port, count, size))
        sender.start()
        sock, _ = listener.accept()
    buffer = np.empty(size, np.uint8)
    view = buffer.data
    started = time.perf_counter()
    with sock:
        for _ in range(count):
            filled = 0
            while filled < size:
                received = sock.recv_into(view[filled:])
                if not received:
                    raise RuntimeError("the raw sender stopped early")
                filled += received
    elapsed = time.perf_counter() - started
    sender.join(10)
    return count * size / elapsed / 1e6


# -- data hosts ----------------------------------------------------------------------------


def _serve(make_batches: Callable[[data.Shard], Any], port: int, workers: int, idle: float) -> None:
    logging_off()
    try:
        data.serve(
            make_batches,
            workers=workers,
            host="bench",
            addresses={"bench": f"127.0.0.1:{port}"},
            secret=SECRET,
            idle_timeout=idle,
        )
    except data.TrainersGone:
        raise SystemExit(3) from None  # expected where the trainer is killed


def logging_off() -> None:
    import logging

    logging.disable(logging.WARNING)


def start_host(
    make_batches: Callable[[data.Shard], Any], workers: int, idle: float = 60.0
) -> tuple[Any, int]:
    port = free_port()
    process = FORK.Process(target=_serve, args=(make_batches, port, workers, idle))
    process.start()
    return process, port


def remote_for(port: int, **kwargs: Any) -> data.RemoteBatches:
    return data.RemoteBatches(
        ["bench"],
        addresses={"bench": f"127.0.0.1:{port}"},
        secret=SECRET,
        rank=0,
        world_size=1,
        **kwargs,
    )


def repeat(batch: Any, count: int) -> Callable[[data.Shard], Iterator[Any]]:
    def make_batches(shard: data.Shard) -> Iterator[Any]:
        for _ in range(count // shard.count):
            yield batch

    return make_batches


def timed_epoch(
    make_batches: Callable[[data.Shard], Any], workers: int, warmup: int = 0, **kwargs: Any
) -> tuple[float, int, int, float]:
    """(seconds, batches, payload bytes, exit seconds) of one epoch after ``warmup`` batches.

    The exit time runs from the trainer's goodbye to the data host's process exit.
    """
    process, port = start_host(make_batches, workers)
    remote = remote_for(port, idle_timeout=60.0, **kwargs)
    batches = size = 0
    epoch = iter(remote)
    for _ in range(warmup):
        next(epoch)
    started = time.perf_counter()
    for batch in epoch:
        batches += 1
        size += sum(value.nbytes for value in (batch if isinstance(batch, tuple) else (batch,)))
    elapsed = time.perf_counter() - started
    closed = time.perf_counter()
    remote.close()
    process.join(30)
    exit_seconds = time.perf_counter() - closed
    if process.exitcode != 0:
        raise RuntimeError(f"the data host exited with {process.exitcode}")
    return elapsed, batches, size, exit_seconds


# -- a CPU-bound transform -----------------------------------------------------------------


def augment(images: Any, rounds: int) -> Any:
    """Flips, crops, jitter and normalisation, ``rounds`` times: CPU-bound numpy work."""
    out = images
    for index in range(rounds):
        out = out[:, :, ::-1, :] if index % 2 else out[:, :, :, ::-1]
        out = np.pad(out[:, :, 2:-2, 2:-2], ((0, 0), (0, 0), (2, 2), (2, 2)), mode="reflect")
        out = (out - out.mean(axis=(2, 3), keepdims=True)) * 1.01
    return np.ascontiguousarray(out, dtype=np.float32)


def calibrate(target: float = 0.010) -> int:
    """Rounds of ``augment`` that take about ``target`` seconds of CPU on this machine."""
    images = np.random.default_rng(0).random((32, 3, 32, 32), dtype=np.float32)
    rounds = 1
    while True:
        started = time.process_time()
        for _ in range(5):
            augment(images, rounds)
        per_call = (time.process_time() - started) / 5
        if per_call >= target or rounds > 10_000:
            return max(1, round(rounds * target / max(per_call, 1e-6)))
        rounds *= 2


def transform_batches(total: int, rounds: int) -> Callable[[data.Shard], Iterator[Any]]:
    def make_batches(shard: data.Shard) -> Iterator[Any]:
        rng = np.random.default_rng(shard.index)
        for _ in range(shard.index, total, shard.count):
            images = rng.random((32, 3, 32, 32), dtype=np.float32)
            yield (augment(images, rounds), np.zeros(32, np.int64))

    return make_batches


def data_loader_rate(total: int, rounds: int) -> float:
    import torch.utils.data

    class Augmented(torch.utils.data.IterableDataset):  # type: ignore[type-arg]
        def __iter__(self) -> Iterator[Any]:
            info = torch.utils.data.get_worker_info()
            index, count = (info.id, info.num_workers) if info is not None else (0, 1)
            return transform_batches(total, rounds)(data.Shard(index, count, 0, 0))

    loader = torch.utils.data.DataLoader(
        Augmented(), batch_size=None, num_workers=2, prefetch_factor=4
    )
    batches = 0
    iterator = iter(loader)
    next(iterator)  # the workers have started
    started = time.perf_counter()
    for _ in iterator:
        batches += 1
    return batches / (time.perf_counter() - started)


def remote_rate(total: int, rounds: int, workers: int) -> float:
    elapsed, batches, _, _ = timed_epoch(
        transform_batches(total, rounds), workers, warmup=1, ordered=False, prefetch=4
    )
    return batches / elapsed


# -- ending --------------------------------------------------------------------------------


def _doomed_trainer(port: int, ready: Any) -> None:
    remote = remote_for(port, idle_timeout=IDLE)
    next(iter(remote))
    ready.send(True)
    time.sleep(60)


def exit_after_vanish() -> float:
    """Seconds from a trainer's SIGKILL to its data host's exit (idle_timeout = IDLE)."""
    process, port = start_host(repeat(np.zeros(1024, np.float32), 10**6), 1, idle=IDLE)
    ours, theirs = FORK.Pipe()
    trainer = FORK.Process(target=_doomed_trainer, args=(port, theirs))
    trainer.start()
    if not ours.poll(60):
        raise RuntimeError("the trainer did not start")
    os.kill(trainer.pid or 0, signal.SIGKILL)
    killed = time.perf_counter()
    process.join(IDLE + 30)
    seconds = time.perf_counter() - killed
    if process.exitcode in (0, None):
        raise RuntimeError(f"the data host exited with {process.exitcode}")
    trainer.join(5)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mib", type=int, default=512, help="MiB per throughput round")
    args = parser.parse_args()
    logging_off()
    os.environ.pop("HETERO_DATA_ADDRESSES", None)
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}", flush=True)

    size = 4 * MIB
    count = args.mib * MIB // size
    big = np.ones(size // 4, np.float32)
    raw_rates, remote_rates, exits = [], [], []
    for _ in range(args.rounds):
        raw_rates.append(loopback_mb_per_s(count, size))
        elapsed, batches, received, exit_seconds = timed_epoch(repeat(big, count), 1, warmup=2)
        remote_rates.append(received / elapsed / 1e6)
        exits.append(exit_seconds)
    print(
        f"4 MiB rounds: raw {[round(r) for r in raw_rates]}, remote "
        f"{[round(r) for r in remote_rates]} MB/s",
        flush=True,
    )

    small = np.ones(1024, np.float32)
    small_rates = []
    for _ in range(args.rounds):
        elapsed, batches, _, exit_seconds = timed_epoch(
            repeat(small, 20_000), 2, warmup=100, ordered=False, prefetch=32
        )
        small_rates.append(batches / elapsed)
        exits.append(exit_seconds)
    print(f"4 KiB rounds: {[round(r) for r in small_rates]} batches/s", flush=True)

    rounds = calibrate()
    total = 200
    one, two, loader = [], [], []
    for _ in range(args.rounds):
        one.append(remote_rate(total // 2, rounds, 1))
        two.append(remote_rate(total, rounds, 2))
        loader.append(data_loader_rate(total, rounds))
    print(
        f"transform: {rounds} augment rounds (~10 ms CPU); batches/s 1 worker "
        f"{[round(r, 1) for r in one]}, 2 workers {[round(r, 1) for r in two]}, DataLoader(2) "
        f"{[round(r, 1) for r in loader]}",
        flush=True,
    )
    vanished = exit_after_vanish()
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")

    print(f"loopback limit: {max(raw_rates):.0f} MB/s")
    print(f"data plane throughput ratio remote/loopback: {max(remote_rates) / max(raw_rates):.2f}")
    print(f"batches per second at 4 KiB: {max(small_rates):.0f}")
    print(f"producer scaling 2/1: {max(two) / max(one):.2f}")
    print(f"remote/DataLoader ratio: {max(two) / max(loader):.2f}")
    print(f"data hosts exit after trainers finish: {max(exits):.2f} s")
    print(f"data hosts exit after trainers vanish: {vanished:.2f} s (idle_timeout {IDLE:g} s)")


if __name__ == "__main__":
    main()
