"""One trainer-side connection to one worker of one data host, and the thread reading it.

The reading thread allocates each batch's buffer from the checked frame header and fills it
with ``recv_into``; the batch handed to the training loop is made of views into that buffer.
At most ``prefetch`` batches per connection are in flight (the worker needs a credit for each),
so the queue this thread fills is bounded by construction.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .arrays import PayloadBuffer
from .auth import client_handshake
from .errors import (
    AuthenticationError,
    BatchRefused,
    DataHostLost,
    DataPlaneError,
    ProtocolError,
)
from .topology import Shard, endpoint
from .wire import (
    ABORT,
    ATTACH,
    BATCH,
    BYE,
    CREDIT,
    END,
    ERROR,
    PING,
    START,
    PeerClosed,
    check_lengths,
    deadline_after,
    meta_int,
    read_exact,
    read_header,
    read_meta,
    send_frame,
)

if TYPE_CHECKING:
    # What the reading thread queues: (producer, kind, epoch, batch or error, samples, bytes).
    Item = tuple["Producer", str, int, Any, int, int]
log = logging.getLogger(__name__)
RETRYABLE = (ConnectionRefusedError, ConnectionResetError, socket.gaierror, TimeoutError, OSError)


def open_connection(
    host: str,
    address: tuple[str, int],
    secret: bytes,
    attach: dict[str, Any],
    connect_timeout: float,
    handshake_timeout: float,
) -> tuple[socket.socket, dict[str, Any]]:
    """Connect to ``host`` (retrying while it is not up yet), authenticate, attach."""
    where = f"data host {host} ({address[0]}:{address[1]})"
    deadline = time.monotonic() + connect_timeout
    delay = 0.05
    while True:
        sock = None
        try:
            sock = socket.create_connection(address, timeout=min(10.0, connect_timeout))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            info = client_handshake(sock, secret, time.monotonic() + handshake_timeout, where)
            send_frame(sock, ATTACH, attach)
            return sock, info
        except (AuthenticationError, ProtocolError):
            if sock is not None:
                sock.close()
            raise
        except (DataPlaneError, *RETRYABLE) as error:
            if sock is not None:
                sock.close()
            if time.monotonic() + delay > deadline:
                raise DataHostLost(
                    host,
                    None,
                    f"could not connect to {address[0]}:{address[1]} within "
                    f"{connect_timeout:g} s ({type(error).__name__}: {error})",
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def goodbye_unconnected(
    host: str,
    address: tuple[str, int],
    secret: bytes,
    attach: dict[str, Any],
    timeouts: tuple[float, float],
    abort_reason: str | None,
) -> None:
    """Tell ``host`` that this rank is done (or failed) although it never asked for a batch:
    a rank with no epochs left still counts among the ranks the data host waits for."""
    sock, _ = open_connection(host, address, secret, {**attach, "worker": 0}, *timeouts)
    try:
        if abort_reason is None:
            send_frame(sock, BYE, {})
        else:
            send_frame(sock, ABORT, {"reason": abort_reason[:2000]})
        sock.shutdown(socket.SHUT_WR)
        # Wait (briefly) for the worker to close: it has then read the goodbye.
        sock.settimeout(2.0)
        with contextlib.suppress(OSError):
            while sock.recv(4096):
                pass
    finally:
        sock.close()


class Producer:
    """A connection to worker ``worker`` of ``host``; ``index`` orders it among all producers."""

    def __init__(
        self,
        host: str,
        worker: int,
        index: int,
        sock: socket.socket,
        items: queue.Queue[Item],
        array_type: str,
        max_batch_bytes: int,
        idle_timeout: float,
    ) -> None:
        self.host = host
        self.worker = worker
        self.index = index
        self.sock = sock
        self.items = items
        self.array_type = array_type
        self.max_batch_bytes = max_batch_bytes
        self.idle_timeout = idle_timeout
        self.send_lock = threading.Lock()
        self.epoch = -1
        self.alive = True
        self.closing = False
        self.unreturned = 0
        self.last_frame = time.monotonic()
        self.stopped_for = 0.0  # the longest gap between frames beyond idle_timeout
        self.thread = threading.Thread(
            target=self._receive, name=f"data-{host}-{worker}", daemon=True
        )
        self.thread.start()

    def send(self, kind: int, meta: dict[str, Any]) -> None:
        """Send a control frame; a failed send surfaces through the reading thread."""
        if not self.alive:
            return
        with self.send_lock, contextlib.suppress(OSError):
            send_frame(self.sock, kind, meta)

    def start(self, shard: Shard, credits: int) -> None:
        self.epoch = shard.epoch
        self.unreturned = 0
        meta = {"epoch": shard.epoch, "index": shard.index, "count": shard.count}
        meta.update(seed=shard.seed, credits=credits, max_batch_bytes=self.max_batch_bytes)
        self.send(START, {**meta, "start": shard.start})

    def consumed(self, step: int) -> None:
        """One batch is in the training loop's hands: return credits ``step`` at a time."""
        self.unreturned += 1
        if self.unreturned >= step:
            self.send(CREDIT, {"n": self.unreturned})
            self.unreturned = 0

    def ping(self) -> None:
        self.send(PING, {})

    def finish(self, abort_reason: str | None = None, leave: bool = False) -> None:
        """Say goodbye (or abort), half-close, and let the reader drain to the peer's close.

        ``leave``: only this connection ends (a DataLoader worker's part of the rank), not the
        rank: the data host does not count the rank as done.
        """
        if self.closing:
            return
        self.closing = True
        if abort_reason is None:
            self.send(BYE, {"leave": True} if leave else {})
        else:
            self.send(ABORT, {"reason": abort_reason[:2000]})
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
        self.alive = False

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
        with contextlib.suppress(OSError):
            self.sock.close()

    def lost(self, problem: str, text: str = "", worker: int | None = None) -> DataHostLost:
        return DataHostLost(self.host, self.worker if worker is None else worker, problem, text)

    def _receive(self) -> None:
        try:
            while True:
                kind, meta_len, payload_len = read_header(
                    self.sock, deadline_after(self.idle_timeout)
                )
                check_lengths(
                    kind, meta_len, payload_len, (BATCH, END, ERROR, PING), self.max_batch_bytes
                )
                deadline = deadline_after(self.idle_timeout)
                meta = read_meta(self.sock, meta_len, deadline)
                self._frame_read()
                if kind == BATCH:
                    buffer = PayloadBuffer(payload_len, self.array_type)
                    read_exact(self.sock, buffer.view, deadline)
                    epoch = meta_int(meta, "epoch")
                    if epoch != self.epoch or self.closing:
                        continue  # a batch of an epoch the trainer has left
                    batch = buffer.build(meta, payload_len)
                    samples = meta_int(meta, "samples")
                    self.items.put((self, "batch", epoch, batch, samples, payload_len))
                elif kind == END:
                    self.items.put((self, "end", meta_int(meta, "epoch"), None, 0, 0))
                elif kind == ERROR:
                    worker = meta.get("worker")
                    problem = str(meta.get("problem", "failed"))[:2000]
                    index = worker if isinstance(worker, int) else None
                    if meta.get("refused") is True:
                        self._report(BatchRefused(problem, self.host, index))
                    else:
                        self._report(self.lost(problem, str(meta.get("traceback", "")), index))
                    return
        except (PeerClosed, ConnectionResetError) as closed:
            stalled = max(self.stopped_for, time.monotonic() - self.last_frame)
            if stalled > self.idle_timeout:
                # The data host sends at least a heartbeat every idle_timeout / 4: this process
                # did not read for longer than the host waits for a reader.
                problem = (
                    f"dropped this rank: it read nothing for {self.idle_timeout:g} s (this "
                    f"process read nothing for {stalled:.0f} s: was it stopped, frozen or "
                    "swapped out?)"
                )
            elif isinstance(closed, PeerClosed) and not closed.clean:
                problem = str(closed)
            else:
                problem = (
                    "closed the connection without a word: the process died (killed, out of "
                    "memory?) or the host went down"
                )
            self._report(self.lost(problem))
        except TimeoutError:
            self._report(
                self.lost(
                    f"sent nothing, not even a heartbeat, for {self.idle_timeout:g} s: the host "
                    "is unreachable or frozen"
                )
            )
        except (DataPlaneError, OSError) as error:
            self._report(self.lost(f"{type(error).__name__}: {error}"))

    def _frame_read(self) -> None:
        # A gap beyond idle_timeout between two frames read means this process did not run
        # (stopped, frozen, swapped out): the read's own deadline would have fired otherwise.
        now = time.monotonic()
        if now - self.last_frame > self.idle_timeout:
            self.stopped_for = max(self.stopped_for, now - self.last_frame)
        self.last_frame = now

    def _report(self, error: DataHostLost | BatchRefused) -> None:
        if not self.closing:
            self.items.put((self, "lost", -1, error, 0, 0))


class Link:
    """What ending a rank needs, apart from its ``RemoteBatches`` (which a finalizer must not
    hold): the connections, the heartbeat thread's stop, and how to say goodbye unconnected."""

    def __init__(self, rank: Any) -> None:  # a RemoteBatches
        self.producers: list[Producer] = []
        self.stopping = threading.Event()
        self.closed = False
        self.leave = False  # a DataLoader worker's part: its end does not end the rank
        self.done_when: Callable[[], bool] | None = None
        self.unreachable = False  # connecting failed: nothing to say goodbye to
        self.pid = os.getpid()
        self.hosts = [(host, endpoint(host, rank.port, rank.addresses)) for host in rank.hosts]
        self.secret = rank.secret
        self.attach = {"rank": rank.rank, "world_size": rank.world_size}
        self.timeouts = (rank.connect_timeout, min(30.0, rank.idle_timeout))
        self.where = f"rank {rank.rank} of {rank.world_size}"

    def heartbeats(self, interval: float) -> None:
        """Ping every ``interval`` s; end the rank once ``done_when()`` says its epochs are over
        (DataLoader workers iterate them, out of this process's sight)."""
        pinged = time.monotonic()
        while not self.stopping.wait(min(interval, 0.2)):
            if self.done_when is not None and self.done_when():
                log.info("%s: the DataLoader workers finished every epoch", self.where)
                self.end(None)
                return
            if time.monotonic() - pinged >= interval:
                pinged = time.monotonic()
                for producer in self.producers:
                    producer.ping()

    def end(self, abort_reason: str | None) -> None:
        """Say goodbye (or abort) on every connection; once, and only in the process that
        made them (a forked DataLoader worker's copy says nothing)."""
        if self.closed or os.getpid() != self.pid:
            return
        self.closed = True
        self.stopping.set()
        if not self.producers and not self.leave and not self.unreachable:
            for host, address in self.hosts:
                try:
                    goodbye_unconnected(
                        host, address, self.secret, self.attach, self.timeouts, abort_reason
                    )
                except (DataPlaneError, OSError) as error:
                    log.warning("%s could not say goodbye to %s: %s", self.where, host, error)
        for producer in self.producers:
            producer.finish(abort_reason, leave=self.leave)
        deadline = time.monotonic() + 2.0
        for producer in self.producers:
            producer.join(max(0.0, deadline - time.monotonic()))


__all__ = ["Link", "Producer", "goodbye_unconnected", "open_connection"]
