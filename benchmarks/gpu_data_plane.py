"""Does a CPU data group pay off? A small CNN on one GPU, fed locally or by remote workers.

Synthetic images (no downloads) go through a CPU-heavy augmentation (crops, flips, jitter,
blur rounds) and train a small CNN on one GPU:
(a) ``local``: a ``torch.utils.data.DataLoader(num_workers=2)`` on the trainer, whose process
    (and so its loader workers) is pinned to 2 cores, as on a GPU instance short of CPU;
(b) ``remote``: the same trainer, fed by ``hetero_runtime.data.serve`` running one worker per
    remaining core (pinned to those cores), through ``RemoteBatches``.
GPU utilisation is ``nvidia-smi``'s ``utilization.gpu`` sampled every 0.2 s when it is there,
else the device's busy share of the wall time (each step's device time, from CUDA events or,
on CPU, the step's own time, over the wall time). Without a GPU it runs on the CPU at a tiny
size (CI runs it so), and says so. Runs in under 5 minutes on a GPU machine.
Usage: ``python benchmarks/gpu_data_plane.py [--steps 150] [--tiny]``. Last lines:
``gpu step time local/remote: X`` and ``gpu utilisation local/remote: A % / B %``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hetero_constructs.runtime import data  # noqa: E402

SECRET = "gpu-bench-" + "7" * 32


@dataclass(frozen=True)
class Size:
    steps: int
    batch: int
    image: int
    rounds: int


FULL = Size(steps=150, batch=128, image=64, rounds=6)
TINY = Size(steps=4, batch=4, image=16, rounds=1)


def augment(images: Any, rounds: int, rng: Any) -> Any:
    """Random crop and flip, colour jitter and a 3x3 blur, ``rounds`` times (CPU-bound)."""
    out = images.astype(np.float32) / 255.0
    size = out.shape[-1]
    for _ in range(rounds):
        dy, dx = rng.integers(0, 5, size=2)
        padded = np.pad(out, ((0, 0), (0, 0), (2, 2), (2, 2)), mode="reflect")
        out = padded[:, :, dy : dy + size, dx : dx + size]
        if rng.random() < 0.5:
            out = out[:, :, :, ::-1]
        out = out * rng.uniform(0.8, 1.2, size=(out.shape[0], 3, 1, 1)).astype(np.float32)
        blurred = np.pad(out, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="edge")
        out = sum(
            blurred[:, :, y : y + size, x : x + size] for y in range(3) for x in range(3)
        ) / np.float32(9)
    return np.ascontiguousarray(out, dtype=np.float32)


def batches(shard: data.Shard, size: Size, count: int) -> Iterator[tuple[Any, Any]]:
    """``count`` augmented batches for this shard (synthetic images and labels)."""
    rng = np.random.default_rng([shard.seed, shard.epoch, shard.index])
    for _ in range(count):
        images = rng.integers(0, 256, (size.batch, 3, size.image, size.image), dtype=np.uint8)
        labels = rng.integers(0, 10, size.batch, dtype=np.int64)
        yield augment(images, size.rounds, rng), labels


def make_batches_for(size: Size, total: int) -> Any:
    def make_batches(shard: data.Shard) -> Iterator[tuple[Any, Any]]:
        return batches(shard, size, len(range(shard.index, total, shard.count)))

    return make_batches


class Sampler:
    """``nvidia-smi`` utilisation samples while training runs (when the tool exists)."""

    def __init__(self) -> None:
        self.tool = shutil.which("nvidia-smi")
        self.samples: list[float] = []
        self.stop = threading.Event()

    def __enter__(self) -> Sampler:
        if self.tool:
            threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        query = [self.tool or "", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"]
        while not self.stop.wait(0.2):
            out = subprocess.run(query, capture_output=True, text=True, check=False).stdout
            if out.strip():
                self.samples.append(float(out.split()[0]))

    def __exit__(self, *exc: object) -> None:
        self.stop.set()


def train(feed: Iterator[Any], size: Size, device: Any) -> tuple[float, float, str]:
    """Seconds per step, utilisation in %, and how utilisation was measured."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(64, 128, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 10),
    ).to(device)  # fmt: skip
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    cuda = device.type == "cuda"
    busy = 0.0
    warmup = 2
    started = 0.0
    with Sampler() as sampler:
        for step, (images, labels) in enumerate(feed):
            if step == warmup:
                if cuda:
                    torch.cuda.synchronize()
                started, busy = time.perf_counter(), 0.0
                sampler.samples.clear()
            x = torch.as_tensor(images).to(device, non_blocking=True)
            y = torch.as_tensor(labels).to(device, non_blocking=True)
            begin = torch.cuda.Event(enable_timing=True) if cuda else None  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True) if cuda else None  # type: ignore[no-untyped-call]
            clock = time.perf_counter()
            if begin is not None:
                begin.record()
            optimiser.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            if end is not None and begin is not None:
                end.record()
                end.synchronize()
                busy += begin.elapsed_time(end) / 1000
            else:
                busy += time.perf_counter() - clock
            if step + 1 >= size.steps + warmup:
                break
        if cuda:
            torch.cuda.synchronize()
        wall = time.perf_counter() - started
    if sampler.samples:
        return wall / size.steps, float(np.mean(sampler.samples)), "nvidia-smi utilization.gpu"
    return wall / size.steps, 100 * busy / wall, "device busy time / wall time"


def _serve(size: Size, total: int, port: int, cores: list[int]) -> None:
    os.sched_setaffinity(0, cores)
    data.serve(
        make_batches_for(size, total),
        workers=len(cores),
        host="cpu-1",
        addresses={"cpu-1": f"127.0.0.1:{port}"},
        secret=SECRET,
        idle_timeout=120,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=FULL.steps)
    parser.add_argument("--tiny", action="store_true", help="the CPU size (CI)")
    args = parser.parse_args()
    import torch

    cuda = torch.cuda.is_available() and not args.tiny
    size = Size(args.steps, FULL.batch, FULL.image, FULL.rounds) if cuda else TINY
    device = torch.device("cuda" if cuda else "cpu")
    name = torch.cuda.get_device_name(0) if cuda else "no GPU (tiny size)"
    cores = sorted(os.sched_getaffinity(0))
    trainer_cores = cores[:2]
    data_cores = cores[2:] or cores
    print(f"device: {device.type} ({name}); cores: trainer {trainer_cores}, data {data_cores}")
    total = size.steps + 4

    # The data host is forked before CUDA starts in this process (CUDA does not survive fork).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = multiprocessing.get_context("fork").Process(
        target=_serve, args=(size, total, port, data_cores)
    )
    server.start()
    os.sched_setaffinity(0, trainer_cores)
    torch.set_num_threads(len(trainer_cores))

    class Local(torch.utils.data.IterableDataset):  # type: ignore[type-arg]
        def __iter__(self) -> Iterator[Any]:
            info = torch.utils.data.get_worker_info()
            index, count = (info.id, info.num_workers) if info is not None else (0, 1)
            feed: Iterator[Any] = make_batches_for(size, total)(data.Shard(index, count, 0, 0))
            return feed

    loader = torch.utils.data.DataLoader(
        Local(), batch_size=None, num_workers=2, pin_memory=cuda, prefetch_factor=4
    )
    local_step, local_util, how = train(iter(loader), size, device)
    print(f"local : {local_step * 1000:.1f} ms/step, utilisation {local_util:.0f} % ({how})")

    remote = data.RemoteBatches(
        ["cpu-1"],
        addresses={"cpu-1": f"127.0.0.1:{port}"},
        secret=SECRET,
        rank=0,
        world_size=1,
        ordered=False,
        prefetch=4,
        array_type="torch",
    )
    with remote:
        remote_step, remote_util, how = train(iter(remote), size, device)
    server.join(30)
    print(f"remote: {remote_step * 1000:.1f} ms/step, utilisation {remote_util:.0f} % ({how})")
    print(f"gpu step time local/remote: {local_step / remote_step:.2f}")
    print(f"gpu utilisation local/remote: {local_util:.0f} % / {remote_util:.0f} %")


if __name__ == "__main__":
    main()
