"""``RemoteBatches``: the training rank's side, an iterable of the batches the data hosts make.

Each iteration is one epoch. The rank connects (lazily, on the first iteration) to every
worker of every data host; with ``P`` workers in all and ``W`` ranks, rank ``r`` asks worker
``p`` for shard ``r * P + p`` of ``P * W``, so every sample reaches exactly one rank per epoch.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..environment import TrainingEnvironment
from .arrays import ARRAY_TYPES, optional_module
from .auth import job_secret
from .connection import Producer, open_connection
from .errors import BatchRefused, DataHostLost, DataPlaneError
from .stats import DataStats
from .topology import DEFAULT_PORT, endpoint, parse_addresses, shard_of, trainer_rank
from .wire import DEFAULT_MAX_BATCH_BYTES, meta_int

if TYPE_CHECKING:
    from .connection import Item

log = logging.getLogger(__name__)
HOST_LOSS = ("raise", "continue")


class RemoteBatches:
    """The batches the data group serves to this training rank, one epoch per iteration.

    Args:
        hosts: Data host names (default: the SageMaker data hosts, i.e. the hosts of the
            groups that do not run the distributed launcher).
        port: The data hosts' port (as given to ``serve``).
        addresses: Host name to ``"address:port"`` overrides (default
            ``$HETERO_DATA_ADDRESSES``), for tests and local runs.
        rank, world_size: This rank (default: torchrun's ``RANK``/``WORLD_SIZE``, else an
            initialised ``torch.distributed``, else 0 of 1).
        ordered: ``True``: take batches from the producers in turn, so the same seed gives
            the same order whatever the timing. ``False``: take each batch as it arrives
            (fastest; the order depends on timing).
        prefetch: Batches in flight per producer (credits); memory is bounded by
            ``prefetch x producers x batch size``.
        seed: Passed to ``make_batches`` in every ``Shard``.
        start_epoch: The first epoch's number (resume after a checkpoint).
        epochs: Say goodbye to the data hosts after this many epochs (they then exit); else
            call :meth:`close` (or use ``with``; process exit also says goodbye).
        on_host_loss: ``"raise"``: a lost data host or failed worker raises
            :class:`DataHostLost` (naming the host and the worker's traceback); ``"continue"``:
            log it and go on with the other hosts (their samples only).
        idle_timeout: Seconds of silence (no batch, no heartbeat) after which a data host
            counts as lost; also the default ``connect_timeout``.
        connect_timeout: Seconds to keep retrying a data host that is not up yet.
        secret: The job's secret (default ``$HETERO_DATA_SECRET``).
        array_type: ``"auto"`` (as sent: numpy or torch, where installed), ``"numpy"``,
            ``"torch"`` or ``"memoryview"`` (standard library only).
        max_batch_bytes: Largest batch payload accepted (checked before allocating).
    """

    def __init__(
        self,
        hosts: Sequence[str] | None = None,
        *,
        port: int = DEFAULT_PORT,
        addresses: Mapping[str, str] | str | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        ordered: bool = True,
        prefetch: int = 4,
        seed: int = 0,
        start_epoch: int = 0,
        epochs: int | None = None,
        on_host_loss: str = "raise",
        idle_timeout: float = 300.0,
        connect_timeout: float | None = None,
        secret: str | bytes | None = None,
        array_type: str = "auto",
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    ) -> None:
        if on_host_loss not in HOST_LOSS:
            raise ValueError(f"on_host_loss must be one of {HOST_LOSS}, got {on_host_loss!r}")
        if array_type not in ARRAY_TYPES:
            raise ValueError(f"array_type must be one of {ARRAY_TYPES}, got {array_type!r}")
        if array_type in ("numpy", "torch") and optional_module(array_type) is None:
            raise DataPlaneError(f"array_type={array_type!r} needs {array_type} on the trainer")
        if prefetch < 1:
            raise ValueError(f"prefetch must be at least 1, got {prefetch}")
        self.hosts = list(hosts) if hosts is not None else TrainingEnvironment().data_hosts
        if not self.hosts:
            raise DataPlaneError(
                "no data hosts: pass hosts=[...] or run in a job with a data group"
            )
        self.rank, self.world_size = trainer_rank(rank, world_size)
        self.port = port
        self.addresses = parse_addresses(addresses)
        self.ordered = ordered
        self.prefetch = prefetch
        self.seed = seed
        self.next_epoch = start_epoch
        self.epochs = epochs
        self.on_host_loss = on_host_loss
        self.idle_timeout = idle_timeout
        self.connect_timeout = idle_timeout if connect_timeout is None else connect_timeout
        self.secret = job_secret(secret)
        self.array_type = array_type
        self.max_batch_bytes = max_batch_bytes
        self.producers: list[Producer] = []
        self.lost_hosts: dict[str, DataHostLost] = {}
        """Data hosts lost so far (``on_host_loss="continue"``), with why."""
        self.closed = False
        self._shared: queue.Queue[Item] = queue.Queue()
        self._epochs_done = 0
        self._stopping = threading.Event()
        self._stats = [0, 0, 0, 0.0]  # batches, samples, bytes, wait seconds
        self._stats_since: float | None = None

    # -- connections -------------------------------------------------------------------------

    def _connect(self) -> None:
        attach = {"rank": self.rank, "world_size": self.world_size}
        opened: list[tuple[str, int, Any]] = []
        try:
            for host in self.hosts:
                address = endpoint(host, self.port, self.addresses)
                args = (host, address, self.secret)
                timeouts = (self.connect_timeout, min(30.0, self.idle_timeout))
                sock, info = open_connection(*args, {**attach, "worker": 0}, *timeouts)
                opened.append((host, 0, sock))
                for worker in range(1, meta_int(info, "workers", 1, 1 << 16)):
                    sock, _ = open_connection(*args, {**attach, "worker": worker}, *timeouts)
                    opened.append((host, worker, sock))
        except BaseException:
            for _, _, sock in opened:
                sock.close()
            raise
        for index, (host, worker, sock) in enumerate(opened):
            items = self._shared if not self.ordered else queue.Queue()
            self.producers.append(
                Producer(
                    host,
                    worker,
                    index,
                    sock,
                    items,
                    self.array_type,
                    self.max_batch_bytes,
                    self.idle_timeout,
                )
            )
        threading.Thread(target=self._heartbeats, name="data-heartbeat", daemon=True).start()
        atexit.register(self.close)
        log.info(
            "rank %d of %d: %d producers on %d data hosts",
            self.rank,
            self.world_size,
            len(opened),
            len(self.hosts),
        )

    def _heartbeats(self) -> None:
        interval = max(0.2, min(5.0, self.idle_timeout / 4))
        while not self._stopping.wait(interval):
            for producer in self.producers:
                producer.ping()

    # -- epochs ------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Any]:
        if self.closed:
            raise DataPlaneError("this RemoteBatches is closed; make a new one")
        if not self.producers:
            self._connect()
        epoch = self.next_epoch
        self.next_epoch += 1
        return self._epoch(epoch)

    def _epoch(self, epoch: int) -> Iterator[Any]:
        live = [producer for producer in self.producers if producer.alive]
        for producer in live:
            producer.epoch = epoch
            _drain(producer.items)
        count = len(self.producers)
        for producer in live:
            shard = shard_of(self.rank, self.world_size, producer.index, count, epoch, self.seed)
            producer.start(shard, self.prefetch)
        if self._stats_since is None:
            self._stats_since = time.monotonic()
        remaining, turn = live, 0
        step = max(1, self.prefetch // 2)
        while remaining:
            source = remaining[turn].items if self.ordered else self._shared
            producer, kind, item_epoch, value, samples, size = self._next_item(
                source, remaining[turn]
            )
            if producer not in remaining or (kind != "lost" and item_epoch != epoch):
                continue  # from a lost producer or an abandoned epoch
            if kind == "batch":
                self._stats[0] += 1
                self._stats[1] += samples
                self._stats[2] += size
                yield value
                producer.consumed(step)
                turn = (turn + 1) % len(remaining) if self.ordered else 0
            elif kind == "end":
                remaining.remove(producer)
                turn = turn % len(remaining) if remaining and self.ordered else 0
            else:
                remaining = self._host_lost(value, remaining)
                turn = turn % len(remaining) if remaining and self.ordered else 0
        self._epochs_done += 1
        if self.epochs is not None and self._epochs_done >= self.epochs:
            self.close()

    def _next_item(self, source: queue.Queue[Item], expected: Producer) -> Item:
        started = time.monotonic()
        try:
            # The reading threads report silence after idle_timeout; this is a second guard.
            return source.get(timeout=self.idle_timeout + 30)
        except queue.Empty:
            error = expected.lost(f"no batch within {self.idle_timeout + 30:g} s")
            return expected, "lost", -1, error, 0, 0
        finally:
            self._stats[3] += time.monotonic() - started

    def _host_lost(
        self, error: DataHostLost | BatchRefused, remaining: list[Producer]
    ) -> list[Producer]:
        if self.on_host_loss == "raise" or isinstance(error, BatchRefused):
            self.abort(str(error))
            raise error
        log.warning("continuing without %s", error)
        self.lost_hosts[error.host] = error
        for producer in self.producers:
            if producer.host == error.host:
                producer.finish(abort_reason=f"rank {self.rank} dropped this host: {error}")
        left = [producer for producer in remaining if producer.host != error.host]
        if not left and all(not producer.alive for producer in self.producers):
            self.abort("every data host is lost")
            raise DataPlaneError(f"every data host is lost; the last: {error}")
        return left

    # -- stats and ending --------------------------------------------------------------------

    def stats(self) -> DataStats:
        """Throughput and waiting so far (see :class:`DataStats`); cheap, call it any time."""
        batches, samples, size, wait = self._stats
        since = self._stats_since
        seconds = time.monotonic() - since if since is not None else 0.0
        return DataStats(int(batches), int(samples), int(size), seconds, float(wait))

    def reset_stats(self) -> None:
        """Start counting :meth:`stats` afresh (e.g. after warm-up, or per logging window)."""
        self._stats = [0, 0, 0, 0.0]
        self._stats_since = time.monotonic()

    def close(self) -> None:
        """Tell every data host this rank is done; they exit once all ranks are."""
        self._end(None)

    def abort(self, reason: str) -> None:
        """Tell the data hosts this rank failed (they stop at once instead of waiting)."""
        self._end(reason)

    def _end(self, abort_reason: str | None) -> None:
        if self.closed:
            return
        self.closed = True
        self._stopping.set()
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        for producer in self.producers:
            producer.finish(abort_reason)
        deadline = time.monotonic() + 2.0
        for producer in self.producers:
            producer.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> RemoteBatches:
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if error is None:
            self.close()
        else:
            self.abort(f"{type(error).__name__}: {error}")

    def torch_dataset(self) -> Any:
        """A ``torch.utils.data.IterableDataset`` of these batches (already batched: use
        ``DataLoader(dataset, batch_size=None)`` or iterate it directly)."""
        data = optional_module("torch.utils.data")
        if data is None:
            raise DataPlaneError("torch_dataset() needs torch on the trainer")
        if self.array_type == "auto":
            self.array_type = "torch"
        remote = self

        class RemoteIterableDataset(data.IterableDataset):  # type: ignore[misc, name-defined]
            def __iter__(self) -> Iterator[Any]:
                return iter(remote)

        return RemoteIterableDataset()


def _drain(items: queue.Queue[Any]) -> None:
    with contextlib.suppress(queue.Empty):
        while True:
            items.get_nowait()


__all__ = ["RemoteBatches"]
