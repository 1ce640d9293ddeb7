"""The data plane on loopback: against the raw socket, its peers, rates, scaling, stragglers.

Everything runs on this machine: data hosts are forked processes running ``serve``, the
trainer is this process (or spawned processes where several ranks run). Each figure is the
median over ``--rounds`` rounds, and each ratio the median of per-round ratios whose two sides
ran back to back (ours, theirs, ours, theirs, ...), so that both see the same background load.
The data plane runs with its defaults (``ordered=True``, ``prefetch=4``) unless a line says
otherwise.
- the loopback limit: a forked process ``sendall``s 4 MiB float32 payloads, this one
  ``recv_into``s each into a fresh buffer, as the data plane does (no framing: the limit);
- the data plane with the same payloads (one worker yields one prepared 4 MiB array), as a
  ratio to that limit;
- batches per second of 4 KiB batches (2 workers);
- producer scaling: batches per second of a CPU-bound transform (about 10 ms of CPU per
  batch, calibrated here) with 2 workers over 1 worker;
- the same transform from 2 remote workers over ``torch.utils.data.DataLoader(num_workers=2)``;
- stragglers: two ranks (processes) reading 1 MiB batches from 2 workers, alone and with a
  third rank stopped with SIGSTOP (holding 32 credits, so its sockets are full);
- peers, same batches (32 x 3 x 32 x 32 float32 images and int64 labels) and 2 producers:
  AWS's gRPC-pickle sample pattern and tf.data service (``bench_data_peers.py``; each runs
  where its package is installed, else the line says why);
- resume: from a fresh data host's start to the first batch of an epoch resumed from a
  ``state_dict()`` saved mid-epoch (where ``RemoteBatches`` has one);
- how long a data host takes to exit after the trainers finish, and after they vanish (a
  trainer process killed with SIGKILL; ``idle_timeout`` 2 s).
Usage: ``.venv/bin/python benchmarks/bench_data.py [--rounds 5]`` (for the gRPC peer, run it
with a Python that has ``grpcio``, e.g. ``/work/venv-bench/bin/python``). The last lines are
the issue's figures (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import signal
import socket
import statistics
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
    started = time.perf_counter()
    with sock:
        for _ in range(count):
            view = np.empty(size, np.uint8).data  # a fresh buffer per payload, as ours
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
    options: dict[str, Any] = {"rank": 0, "world_size": 1, **kwargs}
    return data.RemoteBatches(
        ["bench"], addresses={"bench": f"127.0.0.1:{port}"}, secret=SECRET, **options
    )


def fixed(
    batch: Any, per_shard: int, endless_rank: int | None = None
) -> Callable[[data.Shard], Iterator[Any]]:
    """``per_shard`` copies of ``batch`` in every shard, whatever the number of ranks (and
    no end for ``endless_rank``: a straggler still reading when it is stopped)."""

    def make_batches(shard: data.Shard) -> Iterator[Any]:
        count = 0
        while count < per_shard or shard.rank == endless_rank:
            count += 1
            yield batch

    return make_batches


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
        values = batch.values() if isinstance(batch, dict) else batch
        size += sum(v.nbytes for v in (values if isinstance(batch, tuple | dict) else (batch,)))
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
    elapsed, batches, _, _ = timed_epoch(transform_batches(total, rounds), workers, warmup=1)
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


# -- stragglers ----------------------------------------------------------------------------

SPAWN = multiprocessing.get_context("spawn")
STRAGGLER_BATCHES = 1000  # of 1 MiB, per shard: seconds per side, to average out load


def _rank_process(port: int, rank: int, world: int, prefetch: int, pipe: Any) -> None:
    """A training rank in a process of its own: reports ready after its first batch, then
    reads the epoch on "go" (the straggler reads at once, until it is stopped)."""
    logging_off()
    remote = remote_for(port, rank=rank, world_size=world, prefetch=prefetch, idle_timeout=300.0)
    epoch = iter(remote)
    next(epoch)
    pipe.send("ready")
    if rank < 2:
        pipe.recv()
    batches, started = 0, time.perf_counter()
    for _ in epoch:
        batches += 1
    pipe.send((batches, time.perf_counter() - started))
    remote.close()


def live_ranks_rate(frozen: bool) -> float:
    """Batches per second of ranks 0 and 1 (2 workers, 1 MiB batches), alone or beside a
    third rank stopped with SIGSTOP while it read (32 credits per worker: its sockets fill)."""
    world = 3 if frozen else 2
    batch = np.ones(MIB // 4, np.float32)
    process, port = start_host(fixed(batch, STRAGGLER_BATCHES, endless_rank=2), 2, idle=300.0)
    pipes, ranks = [], []
    try:
        for rank in range(world):
            ours, theirs = SPAWN.Pipe()
            prefetch = 32 if rank == 2 else 4
            child = SPAWN.Process(target=_rank_process, args=(port, rank, world, prefetch, theirs))
            child.start()
            pipes.append(ours)
            ranks.append(child)
        for ours in pipes:
            if not ours.poll(120):
                raise RuntimeError("a rank did not start")
            ours.recv()
        if frozen:
            os.kill(ranks[2].pid or 0, signal.SIGSTOP)
        for ours in pipes[:2]:
            ours.send("go")
        results = []
        for ours in pipes[:2]:
            if not ours.poll(300):
                raise RuntimeError("a live rank did not finish: the straggler stalled it")
            results.append(ours.recv())
        return float(sum(batches / seconds for batches, seconds in results))
    finally:
        for child in ranks:
            if child.is_alive():
                os.kill(child.pid or 0, signal.SIGKILL)
            child.join(10)
        if process.is_alive():
            os.kill(process.pid or 0, signal.SIGKILL)  # its workers die with it
        process.join(10)


# -- resume --------------------------------------------------------------------------------

RESUME_BATCHES, RESUME_DONE = 2000, 500


def resumable(batch: Any, per_shard: int) -> Callable[[data.Shard], Iterator[Any]]:
    """``per_shard`` batches, from where the shard says the rank stopped (``shard.start``)."""

    def make_batches(shard: data.Shard) -> Iterator[Any]:
        for _ in range(getattr(shard, "start", 0), per_shard):
            yield batch

    return make_batches


def resume_seconds() -> float:
    """Seconds from a fresh data host's start to the first batch of an epoch resumed from a
    ``state_dict`` saved after ``RESUME_DONE`` of its ``RESUME_BATCHES`` batches, as after a
    spot interruption (the first job's trainer aborts; new data hosts, a new trainer)."""
    make = resumable(np.ones(1024, np.float32), RESUME_BATCHES // 2)
    process, port = start_host(make, 2)
    # Any: state_dict() lands with issue 32's resume (checked by the caller).
    remote: Any = remote_for(port, idle_timeout=60.0)
    epoch = iter(remote)
    for _ in range(RESUME_DONE):
        next(epoch)
    state = json.loads(json.dumps(remote.state_dict()))  # as saved with a checkpoint
    remote.abort("bench: the job was interrupted")
    process.join(30)
    started = time.perf_counter()
    process, port = start_host(make, 2)
    remote = remote_for(port, idle_timeout=60.0)
    remote.load_state_dict(state)
    next(iter(remote))
    seconds = time.perf_counter() - started
    remote.close()
    process.join(30)
    return seconds


# -- peers ---------------------------------------------------------------------------------

PEER_BATCHES = 2000
PEER_BATCH = {
    "image": np.random.default_rng(0).random((32, 3, 32, 32), dtype=np.float32),
    "label": np.arange(32, dtype=np.int64),
}


def peer_batch() -> dict[str, Any]:
    return PEER_BATCH


def ours_peer_rate() -> float:
    elapsed, batches, _, _ = timed_epoch(fixed(PEER_BATCH, PEER_BATCHES // 2), 2, warmup=1)
    return batches / elapsed


def median(values: list[float]) -> float:
    return statistics.median(values)


def rounded(values: list[float], digits: int = 0) -> list[float]:
    return [round(value, digits) if digits else round(value) for value in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mib", type=int, default=512, help="MiB per throughput round")
    args = parser.parse_args()
    logging_off()
    os.environ.pop("HETERO_DATA_ADDRESSES", None)
    loads = [os.getloadavg()[0]]
    print(f"cpus: {os.cpu_count()}, load average: {loads[0]:.1f}", flush=True)

    size = 4 * MIB
    count = args.mib * MIB // size
    big = np.ones(size // 4, np.float32)
    raw_rates, remote_rates, ratios, exits = [], [], [], []
    for _ in range(args.rounds):
        elapsed, batches, received, exit_seconds = timed_epoch(repeat(big, count), 1, warmup=2)
        remote_rates.append(received / elapsed / 1e6)
        raw_rates.append(loopback_mb_per_s(count, size))
        ratios.append(remote_rates[-1] / raw_rates[-1])
        exits.append(exit_seconds)
    print(
        f"4 MiB rounds: remote {rounded(remote_rates)}, limit {rounded(raw_rates)} MB/s, "
        f"ratios {rounded(ratios, 2)}",
        flush=True,
    )

    small = np.ones(1024, np.float32)
    small_rates = []
    for _ in range(args.rounds):
        elapsed, batches, _, exit_seconds = timed_epoch(repeat(small, 20_000), 2, warmup=100)
        small_rates.append(batches / elapsed)
        exits.append(exit_seconds)
    print(f"4 KiB rounds: {rounded(small_rates)} batches/s", flush=True)
    loads.append(os.getloadavg()[0])

    rounds = calibrate()
    total = 200
    one, two, loader, scaling, versus = [], [], [], [], []
    for _ in range(args.rounds):
        one.append(remote_rate(total // 2, rounds, 1))
        two.append(remote_rate(total, rounds, 2))
        loader.append(data_loader_rate(total, rounds))
        scaling.append(two[-1] / one[-1])
        versus.append(two[-1] / loader[-1])
    print(
        f"transform: {rounds} augment rounds (~10 ms CPU); batches/s 1 worker "
        f"{rounded(one, 1)}, 2 workers {rounded(two, 1)}, DataLoader(2) {rounded(loader, 1)}",
        flush=True,
    )
    loads.append(os.getloadavg()[0])

    solo, beside, straggler = [], [], []
    for _ in range(args.rounds):
        solo.append(live_ranks_rate(frozen=False))
        beside.append(live_ranks_rate(frozen=True))
        straggler.append(beside[-1] / solo[-1])
    print(
        f"stragglers: 2 ranks' batches/s alone {rounded(solo)}, beside a stopped rank "
        f"{rounded(beside)}",
        flush=True,
    )
    loads.append(os.getloadavg()[0])

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    peers = importlib.import_module("bench_data_peers")

    peer_lines = []
    for name, module, rate in (
        ("grpc-pickle", "grpc", peers.grpc_pickle_rate),
        ("tf.data-service", "tensorflow", peers.tf_data_service_rate),
    ):
        reason = peers.missing(module)
        if reason is not None:
            peer_lines.append(f"peer ratio ours/{name}: not measured: {reason}")
            continue
        ours_rates, theirs, peer_ratios = [], [], []
        for _ in range(args.rounds):
            ours_rates.append(ours_peer_rate())
            theirs.append(rate(peer_batch, PEER_BATCHES, 2))
            peer_ratios.append(ours_rates[-1] / theirs[-1])
        print(
            f"{name} (2 producers, 384 KiB batches): batches/s ours {rounded(ours_rates)}, "
            f"{name} {rounded(theirs)}",
            flush=True,
        )
        peer_lines.append(f"peer ratio ours/{name}: {median(peer_ratios):.2f}")
    resumes = []
    if hasattr(data.RemoteBatches, "state_dict"):
        resumes = [resume_seconds() for _ in range(args.rounds)]
        print(f"resume rounds: {rounded(resumes, 3)} s", flush=True)
    vanished = exit_after_vanish()
    loads.append(os.getloadavg()[0])
    print(f"load average during the run: {', '.join(f'{load:.1f}' for load in loads)}")

    print(f"loopback limit: {median(raw_rates):.0f} MB/s")
    print(f"data plane throughput ratio remote/loopback: {median(ratios):.2f}")
    print(f"batches per second at 4 KiB: {median(small_rates):.0f}")
    print(f"producer scaling 2/1: {median(scaling):.2f}")
    print(f"remote/DataLoader ratio: {median(versus):.2f}")
    print(f"other ranks with one frozen rank: {median(straggler):.2f} of solo")
    for line in peer_lines:
        print(line)
    if resumes:
        print(
            f"resume: first batch after restart: {median(resumes):.2f} s (a fresh data host "
            f"of 2 workers; {RESUME_DONE} of {RESUME_BATCHES} batches done before)"
        )
    else:
        print("resume: first batch after restart: not measured: RemoteBatches has no state_dict")
    print(f"data hosts exit after trainers finish: {max(exits):.2f} s")
    print(f"data hosts exit after trainers vanish: {vanished:.2f} s (idle_timeout {IDLE:g} s)")


if __name__ == "__main__":
    main()
