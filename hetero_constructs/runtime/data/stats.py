"""What the data plane did: a trainer's feed (throughput, the time the training loop waited)
and a data host's own load (time producing, waiting for credits, blocked sending)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TextIO

from ..metrics import data_host_line, data_rank_line


@dataclass(frozen=True)
class DataStats:
    """A snapshot of :meth:`RemoteBatches.stats`.

    Attributes:
        batches: Batches handed to the training loop.
        samples: Samples in them (the first dimension of each batch's first array).
        bytes: Payload bytes received for them.
        seconds: Wall time since the first batch was asked for (or the last reset).
        wait_seconds: Of that, time the training loop spent blocked waiting for the next
            batch. Near zero: the data plane keeps up; near ``seconds``: it is the bottleneck.
    """

    batches: int = 0
    samples: int = 0
    bytes: int = 0
    seconds: float = 0.0
    wait_seconds: float = 0.0

    @property
    def samples_per_second(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else 0.0

    @property
    def batches_per_second(self) -> float:
        return self.batches / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_per_second(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    @property
    def wait_fraction(self) -> float:
        """Share of the wall time the training loop waited for data (0 to 1)."""
        return min(1.0, self.wait_seconds / self.seconds) if self.seconds > 0 else 0.0


class HostLoad:
    """A data host's load from its workers' counters, written as metric lines.

    Each worker reports cumulative seconds producing, waiting for credits and blocked on full
    sockets, and batches and bytes per rank. Every ``interval`` seconds (and at the end) this
    writes the host's line (each number a share of its workers' time over the interval, so
    the three add up to at most 1) and one line per rank with what it was sent so far.
    """

    def __init__(
        self,
        instance_group: str,
        host: str,
        workers: int,
        interval: float | None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.instance_group = instance_group
        self.host = host
        self.workers = workers
        self.interval = interval
        self.stream = stream
        self.clock = clock
        self.seconds: dict[int, dict[str, float]] = {}
        self.ranks: dict[int, dict[int, list[int]]] = {}
        self.since = clock()
        self.written: dict[str, float] = {}
        self.batches_written = 0
        self.bytes_written = 0

    def update(
        self, worker: int, seconds: Mapping[str, float], ranks: Mapping[int, list[int]]
    ) -> None:
        """A worker's cumulative counters; writes the lines when an interval is over."""
        self.record(worker, seconds, ranks)
        if self.interval is not None and self.clock() - self.since >= self.interval:
            self.write()

    def record(
        self, worker: int, seconds: Mapping[str, float], ranks: Mapping[int, list[int]]
    ) -> None:
        """A worker's cumulative counters, without writing."""
        self.seconds[worker] = dict(seconds)
        self.ranks[worker] = {int(rank): list(counts) for rank, counts in ranks.items()}

    def totals(self) -> tuple[dict[str, float], dict[int, list[int]]]:
        seconds = {name: 0.0 for name in ("produce", "credit_wait", "send_blocked")}
        for counters in self.seconds.values():
            for name in seconds:
                seconds[name] += float(counters.get(name, 0.0))
        ranks: dict[int, list[int]] = {}
        for per_rank in self.ranks.values():
            for rank, (batches, size) in per_rank.items():
                counts = ranks.setdefault(rank, [0, 0])
                counts[0] += batches
                counts[1] += size
        return seconds, ranks

    def write(self) -> None:
        """The host's line for the interval since the last, and a line per rank."""
        now = self.clock()
        elapsed = now - self.since
        if elapsed <= 0 or self.interval is None:
            return
        seconds, ranks = self.totals()
        capacity = elapsed * max(1, self.workers)
        fractions = tuple(
            (seconds[name] - self.written.get(name, 0.0)) / capacity
            for name in ("produce", "credit_wait", "send_blocked")
        )
        batches = sum(counts[0] for counts in ranks.values())
        size = sum(counts[1] for counts in ranks.values())
        lines = [
            data_host_line(
                self.instance_group,
                self.host,
                (fractions[0], fractions[1], fractions[2]),
                (batches - self.batches_written) / elapsed,
                (size - self.bytes_written) / elapsed,
            )
        ]
        lines += [
            data_rank_line(self.instance_group, self.host, rank, *counts)
            for rank, counts in sorted(ranks.items())
        ]
        stream = self.stream if self.stream is not None else sys.stdout
        with contextlib.suppress(OSError, ValueError):  # a closed stdout must not stop serving
            stream.write("".join(line + "\n" for line in lines))
            stream.flush()
        self.since, self.written = now, seconds
        self.batches_written, self.bytes_written = batches, size


__all__ = ["DataStats", "HostLoad"]
