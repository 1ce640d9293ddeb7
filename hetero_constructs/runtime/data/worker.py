"""A worker process of ``serve``: runs ``make_batches`` for the trainers attached to it.

The main process authenticates each connection and hands its socket to one worker (file
descriptor passing), so a batch goes from the worker that made it straight into the
trainer's socket: no copy through the main process. A worker holds one generator per attached
training rank and sends a batch only against a credit from that rank (bounded memory on both
ends); it produces for the ranks with credits in turn.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle
from typing import Any

from .arrays import describe
from .errors import DataPlaneError, ProtocolError
from .resume import open_shard
from .topology import Shard
from .wire import (
    ABORT,
    BATCH,
    BYE,
    CREDIT,
    END,
    ERROR,
    PING,
    SMALL_FRAME,
    START,
    deadline_after,
    encode_meta,
    frame_header,
    meta_int,
    read_control,
    send_frame,
)

MakeBatches = Callable[[Shard], Any]
MAX_TRACEBACK = 32 * 1024
MAX_CREDITS = 1 << 20


class Peer:
    """One training rank's connection to this worker."""

    def __init__(self, sock: socket.socket, rank: int, world_size: int) -> None:
        self.sock = sock
        self.rank = rank
        self.world_size = world_size
        self.send_lock = threading.Lock()
        self.credits = 0
        self.epoch = -1
        self.batches: Iterator[Any] | None = None
        self.sent = 0
        self.last_received = time.monotonic()
        self.last_sent = time.monotonic()

    def send(self, kind: int, meta: dict[str, Any]) -> None:
        with self.send_lock:
            send_frame(self.sock, kind, meta)
            self.last_sent = time.monotonic()

    def send_batch(self, meta: dict[str, Any], pieces: list[memoryview], size: int) -> None:
        body = encode_meta(meta)
        head = frame_header(BATCH, body, size)
        with self.send_lock:
            if size < SMALL_FRAME:
                self.sock.sendall(b"".join([head, body, *pieces]))
            else:
                self.sock.sendall(head + body)
                for piece in pieces:
                    self.sock.sendall(piece)
            self.last_sent = time.monotonic()

    def stop_epoch(self) -> None:
        close = getattr(self.batches, "close", None)
        self.batches = None
        if close is not None:
            with contextlib.suppress(Exception):
                close()


class Worker:
    """The loop of one worker process (see the module docstring)."""

    def __init__(
        self,
        index: int,
        host: str,
        make_batches: MakeBatches,
        pipe: Connection,
        idle_timeout: float,
    ) -> None:
        self.index = index
        self.host = host
        self.make_batches = make_batches
        self.pipe = pipe
        self.idle_timeout = idle_timeout
        self.heartbeat = max(0.2, min(5.0, idle_timeout / 4))
        self.peers: list[Peer] = []
        self.selector = selectors.DefaultSelector()
        self.selector.register(pipe.fileno(), selectors.EVENT_READ, None)
        self.turn = 0
        self.stopping = threading.Event()

    # -- the main process --------------------------------------------------------------------

    def report(self, *message: Any) -> None:
        with contextlib.suppress(OSError):
            self.pipe.send(message)

    def _from_main(self) -> bool:
        """Handle one message from the main process; ``False`` when the worker must stop."""
        try:
            message = self.pipe.recv()
        except (EOFError, OSError):
            return False  # the main process is gone
        if message[0] == "attach":
            fd = recv_handle(self.pipe)
            sock = socket.socket(fileno=fd)
            sock.settimeout(self.idle_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peer = Peer(sock, message[1], message[2])
            self.peers.append(peer)
            self.selector.register(sock, selectors.EVENT_READ, peer)
            self.report("open", len(self.peers))
            return True
        if message[0] == "fail":  # another worker of this host failed: tell our trainers
            self.fail_all(str(message[2]), str(message[3]), worker=message[1])
        return False

    # -- trainers ----------------------------------------------------------------------------

    def drop(self, peer: Peer, why: str, *report: Any) -> None:
        if peer not in self.peers:
            return
        self.peers.remove(peer)
        peer.stop_epoch()
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(peer.sock)
        with contextlib.suppress(OSError):
            peer.sock.close()
        self.report(*(report or ("lost", peer.rank, peer.last_received, why)))
        self.report("open", len(self.peers))

    def _from_peer(self, peer: Peer) -> None:
        try:
            kind, meta = read_control(
                peer.sock, (START, CREDIT, PING, BYE, ABORT), deadline_after(self.idle_timeout)
            )
        except (DataPlaneError, OSError) as error:
            self.drop(peer, f"{type(error).__name__}: {error}")
            return
        peer.last_received = time.monotonic()
        try:
            if kind == START:
                shard = Shard(
                    meta_int(meta, "index"),
                    meta_int(meta, "count", 1),
                    meta_int(meta, "epoch"),
                    meta_int(meta, "seed", -(1 << 62)),
                    peer.rank,
                    meta_int(meta, "start") if "start" in meta else 0,
                )
                if shard.index >= shard.count:
                    raise ProtocolError(f"shard {shard.index} of {shard.count}")
                peer.stop_epoch()
                peer.epoch, peer.sent = shard.epoch, shard.start
                peer.credits = meta_int(meta, "credits", 1, MAX_CREDITS)
                where = f"data host {self.host} worker {self.index}"
                peer.batches = open_shard(self.make_batches, shard, where)
            elif kind == CREDIT:
                peer.credits = min(MAX_CREDITS, peer.credits + meta_int(meta, "n", 1, MAX_CREDITS))
            elif kind == BYE and meta.get("leave") is True:  # a DataLoader worker's part
                self.drop(peer, "a DataLoader worker's part of the rank ended")
            elif kind == BYE:
                self.drop(peer, "finished", "bye", peer.rank, peer.world_size)
            elif kind == ABORT:
                self.drop(peer, "aborted", "abort", peer.rank, str(meta.get("reason"))[:2000])
        except ProtocolError as error:
            self.drop(peer, str(error))

    def _produce(self, peer: Peer) -> None:
        """Make and send one batch (or the end of the epoch) for ``peer``."""
        assert peer.batches is not None
        try:
            batch = next(peer.batches)
        except StopIteration:
            peer.batches = None
            self._send(peer, END, {"epoch": peer.epoch, "batches": peer.sent})
            return
        meta, pieces, size, samples = describe(batch)
        meta.update(epoch=peer.epoch, seq=peer.sent, samples=samples)
        try:
            peer.send_batch(meta, pieces, size)
        except OSError as error:
            self.drop(peer, f"send failed: {error}")
            return
        peer.credits -= 1
        peer.sent += 1

    def _send(self, peer: Peer, kind: int, meta: dict[str, Any]) -> None:
        try:
            peer.send(kind, meta)
        except OSError as error:
            self.drop(peer, f"send failed: {error}")

    def fail_all(self, problem: str, text: str, worker: int | None = None) -> None:
        """Tell every attached trainer why this host stops serving, then stop."""
        failed = self.index if worker is None else worker
        for peer in list(self.peers):
            meta = {"host": self.host, "worker": failed, "problem": problem}
            meta["traceback"] = text[-MAX_TRACEBACK:]
            self._send(peer, ERROR, meta)
        self.close()

    def _heartbeats(self) -> None:
        """Keep idle trainers sure this worker lives (a PING when nothing was sent lately)."""
        while not self.stopping.wait(self.heartbeat / 2):
            for peer in list(self.peers):
                if time.monotonic() - peer.last_sent >= self.heartbeat:
                    with contextlib.suppress(OSError):
                        peer.send(PING, {})

    def close(self) -> None:
        self.stopping.set()
        for peer in list(self.peers):
            peer.stop_epoch()
            with contextlib.suppress(OSError):
                peer.sock.close()
        self.peers.clear()

    def _ready(self) -> list[Peer]:
        return [peer for peer in self.peers if peer.batches is not None and peer.credits > 0]

    def run(self) -> int:
        threading.Thread(target=self._heartbeats, daemon=True).start()
        try:
            while True:
                ready = [
                    peer for peer in self.peers if peer.batches is not None and peer.credits > 0
                ]
                for key, _ in self.selector.select(0 if ready else 0.2):
                    if key.data is None:
                        if not self._from_main():
                            return 0
                    else:
                        self._from_peer(key.data)
                now = time.monotonic()
                for peer in list(self.peers):
                    if now - peer.last_received > self.idle_timeout:
                        self.drop(peer, f"silent for {self.idle_timeout:g} s")
                ready = [
                    peer for peer in self.peers if peer.batches is not None and peer.credits > 0
                ]
                if ready:
                    self.turn = (self.turn + 1) % len(ready)
                    self._produce(ready[self.turn])
        except Exception as error:  # make_batches (or a batch it made) failed
            text = traceback.format_exc()
            problem = f"make_batches failed: {type(error).__name__}: {error}"
            self.report("failed", problem, text)
            self.fail_all(problem, text)
            return 1
        finally:
            self.close()


def worker_entry(
    index: int,
    host: str,
    make_batches: MakeBatches,
    pipe: Connection,
    listener: socket.socket,
    idle_timeout: float,
) -> None:
    """The worker process's target (the inherited listener is the main process's)."""
    listener.close()
    code = Worker(index, host, make_batches, pipe, idle_timeout).run()
    raise SystemExit(code)


__all__ = [
    "MakeBatches",
    "Peer",
    "Worker",
    "worker_entry",
]
