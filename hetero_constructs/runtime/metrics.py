"""The lines a training script writes so that SageMaker, the dashboard and ``hetero-train`` see
which host is in which instance group, how fast each group goes and how long the trainers wait
for data.

SageMaker does not say which host of a heterogeneous job is in which instance group, and it
turns log lines into metrics only through the job's metric definitions (regular expressions over
the logs). So every host writes, once at start::

    [hetero-train] host=algo-2 instance_group=data role=data instance_type=ml.c5.xlarge

and then, every interval, for its group::

    [hetero-train] instance_group=gpu samples_per_second=812.5 data_wait_fraction=0.0312

The constructs add one metric definition per group for each of the two numbers
(``hetero_constructs.contract.metrics``); ``hetero-train logs --group`` labels a host's lines with
its group from its start line on. Typical use::

    reporter = MetricsReporter.for_environment(TrainingEnvironment())   # writes the start line
    for batch in reporter.timed(batches):       # measures the wait for each batch
        train_step(batch)
        reporter.record(samples=len(batch))     # writes a line when an interval is over
    reporter.close()                            # the last, partial interval

Standard library only, like the rest of this folder.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from typing import Protocol

    from .environment import TrainingEnvironment

    class FeedStats(Protocol):
        """What ``write_stats`` reads (``runtime.data``'s ``DataStats`` has both)."""

        @property
        def samples_per_second(self) -> float: ...

        @property
        def wait_fraction(self) -> float: ...


#: Every line this module writes starts with it.
LINE_PREFIX = "[hetero-train]"
SAMPLES_PER_SECOND = "samples_per_second"
DATA_WAIT_FRACTION = "data_wait_fraction"
#: A data host's own load, written by ``runtime.data.serve``: the share of its workers' time
#: spent producing batches, waiting for the trainers' credits, and blocked on full sockets.
PRODUCING_FRACTION = "producing_fraction"
CREDIT_WAIT_FRACTION = "credit_wait_fraction"
SEND_BLOCKED_FRACTION = "send_blocked_fraction"
DATA_HOST_NUMBERS = (PRODUCING_FRACTION, CREDIT_WAIT_FRACTION, SEND_BLOCKED_FRACTION)
#: A number as the lines write it (fixed notation, never negative; see ``_number``), and as a
#: metric definition captures it: short, since every job's definition carries six of them.
NUMBER_PATTERN = r"[0-9.]+"
#: The start line: host, group, role and instance type, each a word without spaces.
START_LINE = re.compile(
    re.escape(LINE_PREFIX)
    + r" host=(?P<host>\S+) instance_group=(?P<group>\S+) role=(?P<role>\S+)"
    + r" instance_type=(?P<instance_type>\S+)"
)
DEFAULT_INTERVAL_SECONDS = 30.0


def line_word(value: str) -> str:
    """``value`` as the lines write it: white space becomes ``_`` (the API allows spaces in
    instance group names; a line's fields are separated by spaces), empty becomes ``-``."""
    return re.sub(r"\s+", "_", str(value)) or "-"


def start_line(host: str, instance_group: str, role: str, instance_type: str) -> str:
    """The line a host writes once, first: which instance group it is in."""
    return (
        f"{LINE_PREFIX} host={line_word(host)} "
        f"instance_group={line_word(instance_group)} "
        f"role={line_word(role)} instance_type={line_word(instance_type)}"
    )


def _number(value: float) -> str:
    # Fixed notation with four decimals: the metric definitions' pattern, never "nan" or "inf".
    return f"{max(0.0, float(value)):.4f}"


def interval_line(
    instance_group: str, samples_per_second: float, data_wait_fraction: float | None = None
) -> str:
    """One interval of one host: samples per second, and the share of the time it waited for
    data (hosts that do not wait for data, such as the data group, leave it out)."""
    line = (
        f"{LINE_PREFIX} instance_group={line_word(instance_group)} "
        f"{SAMPLES_PER_SECOND}={_number(samples_per_second)}"
    )
    if data_wait_fraction is not None:
        line += f" {DATA_WAIT_FRACTION}={_number(min(1.0, data_wait_fraction))}"
    return line


def data_host_line(
    instance_group: str,
    host: str,
    fractions: tuple[float, float, float],
    batches_per_second: float,
    bytes_per_second: float,
) -> str:
    """One interval of one data host's own load (``fractions``: producing, waiting for
    credits, blocked sending, each a share of its workers' time)."""
    numbers = " ".join(
        f"{name}={_number(min(1.0, value))}"
        for name, value in zip(DATA_HOST_NUMBERS, fractions, strict=True)
    )
    return (
        f"{LINE_PREFIX} instance_group={line_word(instance_group)} data_host={line_word(host)} "
        f"{numbers} batches_per_second={_number(batches_per_second)} "
        f"bytes_per_second={_number(bytes_per_second)}"
    )


def data_rank_line(instance_group: str, host: str, rank: int, batches: int, size: int) -> str:
    """What one data host sent one training rank so far (batches and payload bytes)."""
    return (
        f"{LINE_PREFIX} instance_group={line_word(instance_group)} data_host={line_word(host)} "
        f"rank={int(rank)} batches={int(batches)} bytes={int(size)}"
    )


def _literal(text: str) -> str:
    """``text`` as a pattern that matches it, escaping only what is special (``re.escape``
    also escapes spaces and hyphens: each backslash costs four bytes of template per job)."""
    return re.sub(r"([\\.^$*+?{}\[|()])", r"\\\1", text)  # "]" alone is literal


def metric_regex(instance_group: str, name: str) -> str:
    """The regular expression that captures ``name`` (a built-in number) of a group's lines:
    what the metric definitions hold, and what tests match the lines with. The numbers before
    it on the line are skipped as whole words (linear: a word cannot end inside a word)."""
    head = _literal(f"{LINE_PREFIX} instance_group={line_word(instance_group)} ")
    return rf"{head}(?:\S+ )*{name}=({NUMBER_PATTERN})"


class MetricsReporter:
    """Writes a host's start line, then one interval line per ``interval_seconds``.

    ``record`` adds the samples of a step and, optionally, how long the step waited for its
    batch; ``timed`` measures that wait around an iterator of batches. The data-wait fraction of
    an interval is the time waited over the interval's wall time. Thread-safe: a data loader's
    thread may record while the training loop does. ``waits_for_data=False`` (data hosts) leaves
    the fraction out.
    """

    def __init__(
        self,
        instance_group: str,
        *,
        host: str = "algo-1",
        role: str = "standalone",
        instance_type: str = "local",
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        waits_for_data: bool = True,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        announce: bool = True,
    ) -> None:
        if not interval_seconds > 0:
            raise ValueError(
                f"interval_seconds must be above 0, got {interval_seconds!r}. "
                f"Fix: pass e.g. {DEFAULT_INTERVAL_SECONDS}."
            )
        self.instance_group = instance_group
        self.host = host
        self.interval_seconds = float(interval_seconds)
        self.waits_for_data = waits_for_data
        self._role = role
        self._instance_type = instance_type
        self._stream = stream
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._samples = 0
        self._waited = 0.0
        self._closed = False
        if announce:
            self.announce()

    @classmethod
    def for_environment(
        cls, environment: TrainingEnvironment, **options: object
    ) -> MetricsReporter:
        """A reporter for the current host of ``environment``: its group, host, role and
        instance type; data hosts (``HostRole.DATA``) do not report a data wait."""
        role = str(environment.role)
        defaults: dict[str, object] = {
            "host": environment.current_host,
            "role": role,
            "instance_type": environment.current_instance_type,
            "waits_for_data": role != "data",
        }
        return cls(environment.current_instance_group, **{**defaults, **options})  # type: ignore[arg-type]

    def _write(self, line: str) -> None:
        stream = self._stream if self._stream is not None else sys.stdout
        stream.write(line + "\n")
        stream.flush()

    def announce(self) -> None:
        """Write the start line (the constructor does, unless ``announce=False``)."""
        self._write(start_line(self.host, self.instance_group, self._role, self._instance_type))

    def record(self, samples: int, waited_seconds: float = 0.0) -> None:
        """Count ``samples`` processed and ``waited_seconds`` spent waiting for them; writes the
        interval's line once ``interval_seconds`` have passed since the last."""
        if samples < 0 or waited_seconds < 0:
            raise ValueError(
                f"samples ({samples!r}) and waited_seconds ({waited_seconds!r}) cannot be "
                "negative. Fix: pass what one step processed and how long it waited."
            )
        with self._lock:
            self._samples += int(samples)
            self._waited += float(waited_seconds)
            if self._clock() - self._started >= self.interval_seconds:
                self._emit()

    def timed(self, batches: Iterable[object]) -> Iterator[object]:
        """Yield each batch of ``batches``, adding the time spent waiting for it."""
        iterator = iter(batches)
        while True:
            before = self._clock()
            try:
                batch = next(iterator)
            except StopIteration:
                return
            with self._lock:
                self._waited += self._clock() - before
            yield batch

    def due(self) -> bool:
        """Whether ``interval_seconds`` have passed since the last line."""
        with self._lock:
            return self._clock() - self._started >= self.interval_seconds

    def write_stats(self, stats: FeedStats) -> None:
        """One interval line from a data feed's own counts, e.g. ``RemoteBatches.stats()``
        (``runtime.data``), which measures the wait inside the feed::

            for batch in feed:
                train_step(batch)
                if reporter.due():
                    reporter.write_stats(feed.stats())
                    feed.reset_stats()
        """
        fraction = float(stats.wait_fraction) if self.waits_for_data else None
        with self._lock:
            self._write(
                interval_line(self.instance_group, float(stats.samples_per_second), fraction)
            )
            self._started, self._samples, self._waited = self._clock(), 0, 0.0

    def _emit(self) -> None:
        now = self._clock()
        elapsed = now - self._started
        if elapsed <= 0:
            return
        fraction = self._waited / elapsed if self.waits_for_data else None
        self._write(interval_line(self.instance_group, self._samples / elapsed, fraction))
        self._started, self._samples, self._waited = now, 0, 0.0

    def close(self) -> None:
        """Write the last, partial interval (if anything was recorded); idempotent."""
        with self._lock:
            if not self._closed and (self._samples or self._waited):
                self._emit()
            self._closed = True

    def __enter__(self) -> MetricsReporter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


__all__ = [
    "CREDIT_WAIT_FRACTION",
    "DATA_HOST_NUMBERS",
    "DATA_WAIT_FRACTION",
    "DEFAULT_INTERVAL_SECONDS",
    "LINE_PREFIX",
    "NUMBER_PATTERN",
    "PRODUCING_FRACTION",
    "SAMPLES_PER_SECOND",
    "SEND_BLOCKED_FRACTION",
    "START_LINE",
    "MetricsReporter",
    "data_host_line",
    "data_rank_line",
    "interval_line",
    "line_word",
    "metric_regex",
    "start_line",
]
