"""One trainer-side connection to one worker of one data host, and the thread reading it.

The reading thread allocates each batch's buffer from the checked frame header and fills it
with ``recv_into``; the batch handed to the training loop is made of views into that buffer.
At most ``prefetch`` batches per connection are in flight (the worker needs a credit for each),
so the queue this thread fills is bounded by construction.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
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
from .topology import Shard
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
        self.send(START, meta)

    def consumed(self, step: int) -> None:
        """One batch is in the training loop's hands: return credits ``step`` at a time."""
        self.unreturned += 1
        if self.unreturned >= step:
            self.send(CREDIT, {"n": self.unreturned})
            self.unreturned = 0

    def ping(self) -> None:
        self.send(PING, {})

    def finish(self, abort_reason: str | None = None) -> None:
        """Say goodbye (or abort), half-close, and let the reader drain to the peer's close."""
        if self.closing:
            return
        self.closing = True
        if abort_reason is None:
            self.send(BYE, {})
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


__all__ = ["Producer", "open_connection"]
