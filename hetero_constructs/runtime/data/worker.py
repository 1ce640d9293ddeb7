"""A worker process of ``serve``: runs ``make_batches`` for the trainers attached to it.

The main process authenticates each connection and hands its socket to one worker (file
descriptor passing), so a batch goes from the worker that made it straight into the
trainer's socket: no copy through the main process. A worker holds one generator per attached
training rank and sends a batch only against a credit from that rank (bounded memory on both
ends); it produces for the ranks with credits in turn.

No send ever blocks the worker: each rank's socket is non-blocking with its own buffer
(:mod:`.peer`), and the worker produces for a rank only once that rank's previous batch is in
the system's hands. A rank that stops reading (frozen, swapped out, partitioned) holds up its
own stream only, and is dropped once it has read nothing for ``idle_timeout``; heartbeats go
from a thread of their own, so they never wait behind data or a slow ``make_batches``.

A worker never outlives ``serve``'s process: on Linux the kernel kills it when its parent dies
(``PR_SET_PDEATHSIG``), and everywhere it exits when its pipe to the parent closes or its
parent changes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle
from typing import Any

from .arrays import describe
from .errors import BatchRefused, DataPlaneError, ProtocolError
from .peer import Peer
from .resume import open_shard
from .topology import Shard
from .wire import (
    ABORT,
    BATCH,
    BYE,
    CREDIT,
    END,
    ERROR,
    MAX_BATCH_META,
    SMALL_FRAME,
    START,
    encode_meta,
    frame_header,
    meta_int,
)

MakeBatches = Callable[[Shard], Any]
MAX_TRACEBACK = 32 * 1024
MAX_CREDITS = 1 << 20
STATS_INTERVAL = 2.0
"""Seconds between a worker's reports of its counters to the main process."""
PR_SET_PDEATHSIG = 1
GOODBYE_SECONDS = 1.0
"""How long a failing worker tries to get its ERROR frames out before it closes."""


class Worker:
    """The loop of one worker process (see the module docstring)."""

    def __init__(
        self,
        index: int,
        host: str,
        make_batches: MakeBatches,
        pipe: Connection,
        idle_timeout: float,
        parent: int | None = None,
    ) -> None:
        self.index = index
        self.host = host
        self.make_batches = make_batches
        self.pipe = pipe
        self.idle_timeout = idle_timeout
        self.parent = os.getppid() if parent is None else parent
        self.heartbeat = max(0.2, min(5.0, idle_timeout / 4))
        self.peers: list[Peer] = []
        self.selector = selectors.DefaultSelector()
        self.selector.register(pipe.fileno(), selectors.EVENT_READ, None)
        self.turn = 0
        self.stopping = threading.Event()
        # Seconds producing, waiting for credits and blocked on full sockets; per-rank counts
        # of ranks that left. Reported to the main process (the data group's metric lines).
        self.seconds = {"produce": 0.0, "credit_wait": 0.0, "send_blocked": 0.0}
        self.left: dict[int, list[int]] = {}
        self.last_stats = 0.0

    # -- the main process --------------------------------------------------------------------

    def report(self, *message: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.pipe.send(message)

    def _from_main(self) -> bool:
        """Handle one message from the main process; ``False`` when the worker must stop."""
        try:
            message = self.pipe.recv()
        except (EOFError, OSError):
            return False  # the main process is gone
        if message[0] == "attach":
            fd = recv_handle(self.pipe)
            peer = Peer(socket.socket(fileno=fd), message[1], message[2])
            self.peers.append(peer)
            self.selector.register(peer.sock, selectors.EVENT_READ, peer)
            self.report("open", len(self.peers))
            return True
        if message[0] == "fail":  # another worker of this host failed: tell our trainers
            self.fail_all(str(message[2]), str(message[3]), worker=message[1])
        return False

    def _report_stats(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_stats < STATS_INTERVAL:
            return
        self.last_stats = now
        ranks = {rank: list(counts) for rank, counts in self.left.items()}
        for peer in self.peers:
            counts = ranks.setdefault(peer.rank, [0, 0])
            counts[0] += peer.batches_total
            counts[1] += peer.bytes_total
        self.report("stats", dict(self.seconds), ranks)

    # -- trainers ----------------------------------------------------------------------------

    def drop(self, peer: Peer, why: str, *report: Any, reset: bool = False) -> None:
        if peer not in self.peers:
            return
        self.peers.remove(peer)
        counts = self.left.setdefault(peer.rank, [0, 0])
        counts[0] += peer.batches_total
        counts[1] += peer.bytes_total
        peer.stop_epoch()
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(peer.sock)
        peer.close(reset=reset)
        self.report(*(report or ("lost", peer.rank, peer.last_received, why)))
        self.report("open", len(self.peers))

    def _from_peer(self, peer: Peer) -> None:
        try:
            frames = peer.receive()
        except (DataPlaneError, OSError) as error:
            self.drop(peer, f"{type(error).__name__}: {error}")
            return
        if frames is None:
            self.drop(peer, "closed the connection")
            return
        for kind, meta in frames:
            try:
                self._control(peer, kind, meta)
            except ProtocolError as error:
                self.drop(peer, str(error))
            if peer not in self.peers:
                return

    def _control(self, peer: Peer, kind: int, meta: dict[str, Any]) -> None:
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
            if "max_batch_bytes" in meta:
                peer.max_batch_bytes = meta_int(meta, "max_batch_bytes")
            peer.stop_epoch()
            peer.epoch, peer.sent = shard.epoch, shard.start
            peer.credits = meta_int(meta, "credits", 1, MAX_CREDITS)
            self._own_borrowed()
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

    def _own_borrowed(self) -> None:
        for peer in self.peers:
            if peer.borrowed:
                peer.own()

    def _produce(self, peer: Peer) -> None:
        """Make one batch (or the end of the epoch) for ``peer`` and hand it to its socket."""
        assert peer.batches is not None
        self._own_borrowed()  # make_batches may reuse the arrays of batches still unsent
        started = time.monotonic()
        try:
            batch = next(peer.batches)
        except StopIteration:
            self.seconds["produce"] += time.monotonic() - started
            peer.batches = None
            self._send(peer, END, {"epoch": peer.epoch, "batches": peer.sent})
            return
        meta, pieces, size, samples = describe(batch)
        self.seconds["produce"] += time.monotonic() - started
        if size > peer.max_batch_bytes:
            raise BatchRefused(
                f"a batch of {size} bytes is over the max_batch_bytes of rank {peer.rank} "
                f"({peer.max_batch_bytes} bytes). Fix: make smaller batches, or pass "
                f"max_batch_bytes={size} (or more) to RemoteBatches"
            )
        meta.update(epoch=peer.epoch, seq=peer.sent, samples=samples)
        body = encode_meta(meta)
        if len(body) > MAX_BATCH_META:
            raise BatchRefused(
                f"a batch's description (its JSON values and array shapes) takes {len(body)} "
                f"bytes; the limit is {MAX_BATCH_META}. Fix: put large values in arrays"
            )
        head = frame_header(BATCH, body, size)
        try:
            if size < SMALL_FRAME:
                peer.queue([b"".join([head, body, *pieces])])
            else:
                peer.queue([head + body, *pieces], borrowed=True)
        except OSError as error:
            self.drop(peer, f"send failed: {error}")
            return
        peer.credits -= 1
        peer.sent += 1
        peer.batches_total += 1
        peer.bytes_total += size

    def _send(self, peer: Peer, kind: int, meta: dict[str, Any]) -> None:
        try:
            peer.control(kind, meta)
        except OSError as error:
            self.drop(peer, f"send failed: {error}")

    def _flush(self, peer: Peer) -> None:
        try:
            peer.flush()
        except OSError as error:
            self.drop(peer, f"send failed: {error}")

    def fail_all(self, problem: str, text: str, worker: int | None = None, **extra: Any) -> None:
        """Tell every attached trainer why this host stops serving, then stop."""
        failed = self.index if worker is None else worker
        for peer in list(self.peers):
            meta = {"host": self.host, "worker": failed, "problem": problem, **extra}
            meta["traceback"] = text[-MAX_TRACEBACK:]
            self._send(peer, ERROR, meta)
        deadline = time.monotonic() + GOODBYE_SECONDS
        while time.monotonic() < deadline and any(peer.pending for peer in self.peers):
            self._sync_writes()
            for key, _ in self.selector.select(0.05):
                if key.data is not None:
                    self._flush(key.data)
        self.close()

    # -- liveness ----------------------------------------------------------------------------

    def _heartbeats(self) -> None:
        """Keep idle trainers sure this worker lives, and end it when its parent is gone."""
        tick = min(0.5, self.heartbeat / 2)
        while not self.stopping.wait(tick):
            if os.getppid() != self.parent:
                os._exit(70)  # serve's process died: nothing may outlive the job
            for peer in list(self.peers):
                peer.ping_if_idle(self.heartbeat)

    def _check_idle(self, now: float) -> None:
        for peer in list(self.peers):
            if now - peer.last_received > self.idle_timeout:
                self.drop(peer, f"silent for {self.idle_timeout:g} s")
            elif peer.pending and now - peer.last_sent > self.idle_timeout:
                self.drop(
                    peer,
                    f"read nothing for {self.idle_timeout:g} s (stopped, frozen or partitioned)",
                    reset=True,
                )

    def _sync_writes(self) -> None:
        """Watch for writability exactly where bytes wait to be sent."""
        for peer in self.peers:
            pending = peer.pending
            if pending != peer.writing:
                events = selectors.EVENT_READ | (selectors.EVENT_WRITE if pending else 0)
                self.selector.modify(peer.sock, events, peer)
                peer.writing = pending

    def _ready(self) -> list[Peer]:
        return [
            peer
            for peer in self.peers
            if peer.batches is not None and peer.credits > 0 and not peer.pending
        ]

    def _waiting(self) -> str | None:
        """What the worker waits for when no rank is ready (the counter to charge)."""
        active = [peer for peer in self.peers if peer.batches is not None]
        if any(peer.credits > 0 and peer.pending for peer in active):
            return "send_blocked"
        return "credit_wait" if active else None

    def close(self) -> None:
        self.stopping.set()
        for peer in list(self.peers):
            peer.stop_epoch()
            peer.close()
        self.peers.clear()

    def run(self) -> int:
        threading.Thread(target=self._heartbeats, name="data-heartbeat", daemon=True).start()
        try:
            while True:
                self._sync_writes()
                ready = self._ready()
                waiting = None if ready else self._waiting()
                started = time.monotonic()
                events = self.selector.select(0 if ready else min(0.2, self.heartbeat / 2))
                now = time.monotonic()
                if waiting is not None:
                    self.seconds[waiting] += now - started
                for key, mask in events:
                    if key.data is None:
                        if not self._from_main():
                            return 0
                        continue
                    if mask & selectors.EVENT_WRITE:
                        self._flush(key.data)
                    if mask & selectors.EVENT_READ:
                        self._from_peer(key.data)
                self._check_idle(now)
                ready = self._ready()
                if ready:
                    self.turn = (self.turn + 1) % len(ready)
                    self._produce(ready[self.turn])
                self._report_stats()
        except BatchRefused as error:
            text = traceback.format_exc()
            self.report("failed", f"refused a batch: {error}", text)
            self.fail_all(str(error), text, refused=True)
            return 1
        except Exception as error:  # make_batches (or a batch it made) failed
            text = traceback.format_exc()
            problem = f"make_batches failed: {type(error).__name__}: {error}"
            self.report("failed", problem, text)
            self.fail_all(problem, text)
            return 1
        finally:
            self._report_stats(force=True)
            self.close()


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux); exit at once if the
    parent is already gone (it died before this call)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(70)


def worker_entry(
    index: int,
    host: str,
    make_batches: MakeBatches,
    pipe: Connection,
    listener: socket.socket,
    idle_timeout: float,
    parent: int,
) -> None:
    """The worker process's target (the inherited listener is the main process's)."""
    die_with_parent(parent)
    listener.close()
    code = Worker(index, host, make_batches, pipe, idle_timeout, parent).run()
    raise SystemExit(code)


__all__ = [
    "MakeBatches",
    "Worker",
    "die_with_parent",
    "worker_entry",
]
