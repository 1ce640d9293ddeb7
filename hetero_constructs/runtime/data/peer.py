"""One training rank's connection to a worker: a non-blocking socket with its own send buffer.

Nothing here ever waits on the network. A frame that the socket cannot take at once stays in
the peer's buffer (the worker writes the rest when the socket is writable), so a rank that
stops reading holds up its own stream only. The buffer keeps views of the arrays
``make_batches`` yielded (no copy) until the worker is about to run ``make_batches`` again:
then :meth:`Peer.own` copies what is still unsent, because the generator may reuse its arrays.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections import deque
from typing import Any

from .wire import (
    ABORT,
    BYE,
    CREDIT,
    DEFAULT_MAX_BATCH_BYTES,
    PING,
    START,
    FrameReader,
    encode_meta,
    frame_header,
)

MAX_PIECES = 64
"""Buffers per ``sendmsg`` call (well below every system's ``IOV_MAX``)."""
RECEIVE_SIZE = 64 * 1024


class Peer:
    """One training rank's connection to this worker, with its epoch, credits and counts.

    The worker's loop does everything but heartbeats, which a second thread sends when the
    buffer is empty: ``lock`` guards the buffer and the socket's writes, and is never held
    across anything that waits.
    """

    def __init__(self, sock: socket.socket, rank: int, world_size: int) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.rank = rank
        self.world_size = world_size
        self.lock = threading.Lock()
        self.out: deque[memoryview] = deque()
        self.borrowed = False  # ``out`` holds views of arrays that make_batches may reuse
        self.closed = False
        self.writing = False  # registered for EVENT_WRITE
        self.reader = FrameReader((START, CREDIT, PING, BYE, ABORT))
        self.credits = 0
        self.epoch = -1
        self.batches: Any = None  # the epoch's iterator, while it has batches left
        self.max_batch_bytes = DEFAULT_MAX_BATCH_BYTES
        self.sent = 0
        now = time.monotonic()
        self.last_received = now  # any bytes from the rank
        self.last_sent = now  # any bytes taken by the socket
        self.batches_total = 0
        self.bytes_total = 0

    # -- sending -----------------------------------------------------------------------------

    def queue(self, buffers: list[bytes | memoryview], borrowed: bool = False) -> None:
        """Append a frame and write what the socket takes now (the rest when it is writable)."""
        with self.lock:
            if self.closed:
                return
            self.out.extend(memoryview(buffer).cast("B") for buffer in buffers)
            self.borrowed = self.borrowed or borrowed
            self._write()

    def control(self, kind: int, meta: dict[str, Any]) -> None:
        body = encode_meta(meta)
        self.queue([frame_header(kind, body) + body])

    def flush(self) -> bool:
        """Write what the socket takes; ``True`` when nothing is left."""
        with self.lock:
            if not self.closed:
                self._write()
            return not self.out

    def ping_if_idle(self, heartbeat: float) -> None:
        """A heartbeat, only when nothing is waiting to be sent and nothing was lately."""
        with self.lock:
            if not self.closed and not self.out and time.monotonic() - self.last_sent >= heartbeat:
                body = encode_meta({})
                self.out.append(memoryview(frame_header(PING, body) + body))
                with contextlib.suppress(OSError):  # the loop sees the failure when it reads
                    self._write()

    def _write(self) -> None:
        out = self.out
        while out:
            try:
                if len(out) == 1:
                    sent = self.sock.send(out[0])
                else:
                    sent = self.sock.sendmsg([out[i] for i in range(min(len(out), MAX_PIECES))])
            except (BlockingIOError, InterruptedError):
                return
            if sent:
                self.last_sent = time.monotonic()
            while sent:
                head = out[0]
                if sent >= len(head):
                    sent -= len(head)
                    out.popleft()
                else:
                    out[0] = head[sent:]
                    sent = 0
        self.borrowed = False

    @property
    def pending(self) -> bool:
        return bool(self.out)

    def own(self) -> None:
        """Copy the unsent rest of borrowed arrays: ``make_batches`` is about to run again."""
        with self.lock:
            if self.borrowed and self.out:
                self.out = deque([memoryview(b"".join(self.out))])
            self.borrowed = False

    # -- receiving and ending ----------------------------------------------------------------

    def receive(self) -> list[tuple[int, dict[str, Any]]] | None:
        """The control frames that arrived (``None``: the rank closed the connection)."""
        try:
            data = self.sock.recv(RECEIVE_SIZE)
        except (BlockingIOError, InterruptedError):
            return []
        if not data:
            return None
        self.last_received = time.monotonic()
        return self.reader.feed(data)

    def stop_epoch(self) -> None:
        close = getattr(self.batches, "close", None)
        self.batches = None
        if close is not None:
            with contextlib.suppress(Exception):
                close()

    def close(self, reset: bool = False) -> None:
        """Close the socket; ``reset`` discards unsent bytes at once (a rank that stopped
        reading: the system would otherwise keep trying to deliver them)."""
        with self.lock:
            self.closed = True
            self.out.clear()
            if reset:
                with contextlib.suppress(OSError):
                    self.sock.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
            with contextlib.suppress(OSError):
                self.sock.close()


__all__ = ["MAX_PIECES", "Peer"]
