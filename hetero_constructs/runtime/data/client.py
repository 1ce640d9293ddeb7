"""``RemoteBatches``: the training rank's side, an iterable of the batches the data hosts make.

Each iteration is one epoch. The rank connects (lazily, on the first iteration) to every
worker of every data host; with ``P`` workers in all and ``W`` ranks, rank ``r`` asks worker
``p`` for shard ``r * P + p`` of ``P * W``, so every sample reaches exactly one rank per epoch.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..environment import TrainingEnvironment
from .arrays import ARRAY_TYPES, optional_module
from .auth import job_secret
from .connection import Link, Producer, open_connection
from .errors import BatchRefused, DataHostLost, DataPlaneError
from .resume import Position, build_state, check_producers, read_state
from .stats import DataStats
from .topology import DEFAULT_PORT, Shard, endpoint, parse_addresses, trainer_rank
from .wire import DEFAULT_MAX_BATCH_BYTES, meta_int

if TYPE_CHECKING:
    from .connection import Item

    Target = tuple[str, int, int]  # a producer: (data host, worker on it, index among all)

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
        self.lost_hosts: dict[str, DataHostLost] = {}
        """Data hosts lost so far (``on_host_loss="continue"``), with why."""
        self._shared: queue.Queue[Item] = queue.Queue()
        self._epochs_begun = 0
        self._stats = [0, 0, 0, 0.0]  # batches, samples, bytes, wait seconds
        self._stats_since: float | None = None
        self._targets: list[Target] | None = None  # None: every worker of every host
        self._producer_count = 0
        self._position: Position | None = None  # the epoch in progress, for state_dict()
        self._resume: Position | None = None  # from load_state_dict(), for the next epoch
        self._resume_producers: int | None = None
        self._loader_epochs: Any = None  # set by torch_dataset(): epochs DataLoader workers began
        self._link = Link(self)
        # Goodbye when this object is collected or the interpreter exits, whichever is first.
        self._finalizer = weakref.finalize(self, self._link.end, None)

    @property
    def producers(self) -> list[Producer]:
        """The connections, one per worker of every data host (after the first iteration)."""
        return self._link.producers

    @property
    def closed(self) -> bool:
        """Whether this rank said goodbye (or aborted): no more epochs."""
        return self._link.closed

    @closed.setter
    def closed(self, value: bool) -> None:  # a test's crashed trainer says nothing at exit
        self._link.closed = value

    # -- connections -------------------------------------------------------------------------

    def _connect(self) -> None:
        link = self._link
        opened: list[tuple[str, int, int, Any]] = []
        try:
            if self._targets is not None:
                for host, worker, index in self._targets:
                    opened.append((host, worker, index, self._open(host, worker)[0]))
            else:
                for host in self.hosts:
                    sock, info = self._open(host, 0)
                    opened.append((host, 0, len(opened), sock))
                    for worker in range(1, meta_int(info, "workers", 1, 1 << 16)):
                        opened.append((host, worker, len(opened), self._open(host, worker)[0]))
                self._producer_count = len(opened)
                check_producers(self._resume_producers, len(opened), self.next_epoch, self.hosts)
        except BaseException:
            link.unreachable = True
            for _, _, _, sock in opened:
                sock.close()
            raise
        for host, worker, index, sock in opened:
            items = self._shared if not self.ordered else queue.Queue()
            link.producers.append(
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
        interval = max(0.2, min(5.0, self.idle_timeout / 4))
        threading.Thread(
            target=link.heartbeats, args=(interval,), name="data-heartbeat", daemon=True
        ).start()
        log.info(
            "rank %d of %d: %d producers on %d data hosts",
            self.rank,
            self.world_size,
            len(opened),
            len(self.hosts),
        )

    def _open(self, host: str, worker: int) -> tuple[Any, dict[str, Any]]:
        address = endpoint(host, self.port, self.addresses)
        attach = {"rank": self.rank, "world_size": self.world_size, "worker": worker}
        return open_connection(host, address, self.secret, attach, *self._link.timeouts)

    # -- epochs ------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Any]:
        if self.closed:
            raise DataPlaneError("this RemoteBatches is closed; make a new one")
        if not self.producers:
            self._connect()
        epoch = self.next_epoch
        self.next_epoch += 1
        self._epochs_begun += 1
        last = self.epochs is not None and self._epochs_begun >= self.epochs
        resume, self._resume = self._resume, None
        if resume is not None and resume.epoch != epoch:
            resume = None
        return self._epoch(epoch, last, resume)

    def _epoch(self, epoch: int, last: bool, resume: Position | None) -> Iterator[Any]:
        """One epoch; the last one (``epochs``) says goodbye however it ends."""
        try:
            yield from self._batches(epoch, resume)
        except GeneratorExit:
            if self._position is not None and self._position.epoch == epoch:
                self._position.abandoned = True  # left early: a restart begins the next epoch
            raise
        finally:
            if last:
                self.close()

    def _batches(self, epoch: int, resume: Position | None) -> Iterator[Any]:
        position = resume or Position.fresh(epoch, self._producer_count)
        self._position = position
        live = [
            producer
            for producer in self.producers
            if producer.alive and not position.ended[producer.index]
        ]
        for producer in live:
            producer.epoch = epoch
            _drain(producer.items)
        for producer in live:
            shard = Shard(
                self.rank * self._producer_count + producer.index,
                self._producer_count * self.world_size,
                epoch,
                self.seed,
                self.rank,
                position.consumed[producer.index],
            )
            producer.start(shard, self.prefetch)
        if self._stats_since is None:
            self._stats_since = time.monotonic()
        remaining = live
        turn = next((i for i, p in enumerate(remaining) if p.index >= position.next_producer), 0)
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
                turn = (turn + 1) % len(remaining) if self.ordered else 0
                # Counted before the loop has it: a checkpoint taken while it holds the batch
                # counts it as seen.
                position.consumed[producer.index] += 1
                position.next_producer = remaining[turn].index
                yield value
                producer.consumed(step)
                continue
            if kind == "end":
                position.ended[producer.index] = True
                remaining.remove(producer)
            else:
                remaining = self._host_lost(value, remaining)
            turn = turn % len(remaining) if remaining and self.ordered else 0
            position.next_producer = remaining[turn].index if remaining else 0
        self._position = None

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
        """Tell every data host this rank is done; they exit once all ranks are.

        Also done after ``epochs`` epochs (however the last one ends), when leaving a ``with``
        block, when this object is garbage-collected and at interpreter exit.
        """
        self._link.end(None)

    def abort(self, reason: str) -> None:
        """Tell the data hosts this rank failed (they stop at once instead of waiting)."""
        self._link.end(reason)

    # -- resume ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Where this rank stands: save it with the checkpoint (every rank its own).

        A JSON-able dict: the epoch in progress and, per data worker, how many batches the
        training loop took (a batch counts from the moment it was handed out); or, between
        epochs, the next epoch. :meth:`load_state_dict` on a fresh ``RemoteBatches`` (new data
        hosts too) goes on from there: every sample of the epoch once across both runs, the
        same order with ``ordered=True``, as long as ``make_batches`` makes the same batches
        for the same shard.
        """
        if self._loader_epochs is not None and any(self._loader_epochs):
            raise DataPlaneError(
                "state_dict() cannot tell which batches the training loop took when DataLoader "
                "workers fetch them (num_workers > 0 prefetches): to resume mid-epoch, use "
                "DataLoader(batches.torch_dataset(), batch_size=None) with num_workers=0 (the "
                "data hosts already make the batches in parallel); or checkpoint between epochs "
                "and restart with RemoteBatches(start_epoch=<the next epoch>)"
            )
        in_progress = self._position is not None and not self._position.abandoned
        return build_state(
            rank=self.rank,
            world_size=self.world_size,
            producers=self._producer_count or self._resume_producers,
            seed=self.seed,
            ordered=self.ordered,
            next_epoch=self.next_epoch,
            epochs_done=self._epochs_begun - in_progress,
            position=self._position if self._resume is None else self._resume,
        )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on where :meth:`state_dict` was taken: call before the first iteration.

        The next iteration is the saved epoch, from where it stopped; ``epochs`` counts the
        epochs of both runs. Refused (:class:`DataPlaneError`, saying what differs) for another
        rank, world size or seed, and, at the first iteration, another number of data workers
        in all: those cut the epoch into other shards.
        """
        if self.producers or self._epochs_begun:
            raise DataPlaneError(
                "load_state_dict() must come before the first iteration of this RemoteBatches"
            )
        epoch, done, producers, position = read_state(
            state, rank=self.rank, world_size=self.world_size, seed=self.seed
        )
        self.next_epoch, self._epochs_begun = epoch, done
        self._resume, self._resume_producers = position, producers if position else None
        if position is not None:
            log.info(
                "rank %d resumes epoch %d after %d batches",
                self.rank,
                epoch,
                sum(position.consumed),
            )
        if self.epochs is not None and done >= self.epochs:
            log.info("rank %d: all %d epochs are done; saying goodbye", self.rank, self.epochs)
            self.close()

    def __enter__(self) -> RemoteBatches:
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if error is None:
            self.close()
        else:
            self.abort(f"{type(error).__name__}: {error}")

    # -- frameworks --------------------------------------------------------------------------

    def torch_dataset(self) -> Any:
        """A ``torch.utils.data.IterableDataset`` of these batches, one epoch per iteration
        (already batched: ``DataLoader(dataset, batch_size=None)``, or iterate it directly).

        Connects at once. Under ``DataLoader(num_workers=k)``, loader worker ``w`` gets the
        batches of the producers ``w, w + k, ...`` over connections of its own: every sample
        once per epoch, and with ``ordered=True`` a fixed order for a given ``k`` (the loader
        takes its workers in turn), not the order of ``num_workers=0``. :meth:`state_dict`
        then is refused: the loader's prefetching hides which batches the loop took.
        """
        from .frameworks import torch_dataset

        return torch_dataset(self)

    def tf_dataset(self, signature: Any = None) -> Any:
        """A ``tf.data.Dataset`` of these batches, one epoch per iteration.

        ``signature`` is its ``output_signature`` (a structure of ``tf.TensorSpec``); by
        default it is read from the first batch, with the first dimension left open. Arrays
        arrive as numpy arrays, turned into tensors by tf.data; JSON values that are numbers or
        strings become scalar tensors, others are refused. TensorFlow is imported only here.
        """
        from .frameworks import tf_dataset

        return tf_dataset(self, signature)

    def _connect_once(self) -> None:
        if not self.producers:
            self._connect()

    def _become_part(
        self, targets: list[Target], producers: int, epoch: int, resume: Position | None
    ) -> None:
        """Serve only ``targets`` (of ``producers``) for one epoch: a DataLoader worker's part,
        whose end does not end the rank."""
        self._targets, self._producer_count = targets, producers
        self.next_epoch, self._resume = epoch, resume
        self._link.leave = True


def _drain(items: queue.Queue[Any]) -> None:
    with contextlib.suppress(queue.Empty):
        while True:
            items.get_nowait()


__all__ = ["RemoteBatches"]
