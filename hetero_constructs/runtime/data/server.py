"""``serve``: the data host's side. Workers make batches; this process admits trainers.

The main process listens on the cluster interface, proves and checks the job's secret on each
new connection (with a deadline, so a slow or silent peer is cut), and hands the socket to the
worker the trainer asked for. It then only watches: it returns when every training rank has
said goodbye, and raises (the process exits non-zero) when no trainer has spoken for
``idle_timeout`` seconds, when a trainer aborts, or when a worker fails.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import send_handle
from typing import Any, cast

from ..environment import TrainingEnvironment
from ..errors import TrainingEnvironmentError
from ..metrics import DEFAULT_INTERVAL_SECONDS
from .auth import job_secret, server_handshake
from .errors import DataPlaneError, TrainersGone, WorkerFailed
from .stats import HostLoad
from .topology import DEFAULT_PORT, bind_address, parse_addresses
from .wire import ATTACH, meta_int, read_control
from .worker import MakeBatches, worker_entry

log = logging.getLogger(__name__)
MAX_WORLD = 1 << 20


class _Admission:
    """Accepts connections and hands the authenticated ones to the workers (threads)."""

    def __init__(
        self,
        listener: socket.socket,
        secret: bytes,
        info: dict[str, Any],
        pipes: list[Connection],
        pids: list[int],
        handshake_timeout: float,
        max_handshakes: int,
    ) -> None:
        self.listener = listener
        self.secret = secret
        self.info = info
        self.pipes = pipes
        self.pids = pids
        self.pipe_locks = [threading.Lock() for _ in pipes]
        self.handshake_timeout = handshake_timeout
        self.slots = threading.BoundedSemaphore(max_handshakes)
        self.stopping = threading.Event()
        self.refused = 0
        self.thread = threading.Thread(target=self._accept, name="data-plane-accept", daemon=True)

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopping.is_set():
            try:
                sock, peer = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self.slots.acquire(blocking=False):
                self.refused += 1
                log.warning("refused %s: too many handshakes in progress", peer)
                sock.close()
                continue
            threading.Thread(target=self._admit, args=(sock, peer), daemon=True).start()

    def _admit(self, sock: socket.socket, peer: Any) -> None:
        try:
            deadline = time.monotonic() + self.handshake_timeout
            server_handshake(sock, self.secret, deadline, self.info)
            _, meta = read_control(sock, (ATTACH,), deadline)
            world_size = meta_int(meta, "world_size", 1, MAX_WORLD)
            rank = meta_int(meta, "rank", 0, world_size - 1)
            worker = meta_int(meta, "worker", 0, len(self.pipes) - 1)
            with self.pipe_locks[worker]:
                self.pipes[worker].send(("attach", rank, world_size))
                send_handle(self.pipes[worker], sock.fileno(), self.pids[worker])
            log.debug("rank %d of %d attached to worker %d (%s)", rank, world_size, worker, peer)
        except (DataPlaneError, OSError) as error:
            self.refused += 1
            log.warning("refused a connection from %s: %s", peer, error)
        finally:
            sock.close()
            self.slots.release()

    def tell_workers(self, *message: Any) -> None:
        for lock, pipe in zip(self.pipe_locks, self.pipes, strict=True):
            with lock, contextlib.suppress(OSError):
                pipe.send(message)


def serve(
    make_batches: MakeBatches,
    *,
    workers: int | None = None,
    port: int = DEFAULT_PORT,
    host: str | None = None,
    bind: str | None = None,
    addresses: Any = None,
    idle_timeout: float = 300.0,
    startup_timeout: float | None = None,
    secret: str | bytes | None = None,
    handshake_timeout: float = 10.0,
    max_handshakes: int = 64,
    on_listening: Callable[[str, int], None] | None = None,
    metrics_interval: float | None = DEFAULT_INTERVAL_SECONDS,
    instance_group: str | None = None,
) -> None:
    """Serve ``make_batches(shard)`` to the training group until every rank is done.

    Args:
        make_batches: Called in a worker process with a :class:`Shard` per training rank and
            epoch; returns an iterable of batches (dicts, tuples or lists of numpy arrays or
            CPU tensors plus JSON-able values, or one array). It runs in ``workers`` processes
            (forked where the platform can, so a closure works).
        workers: Worker processes on this host (default: one per CPU).
        port: Port to listen on (the trainers use the same ``port``).
        host: This data host's name (default: the SageMaker ``current_host``).
        bind: Address to listen on (default: this host's entry in ``addresses``, else the
            address its name resolves to, i.e. the cluster interface, never ``0.0.0.0``).
        addresses: Host name to ``"address:port"`` overrides (default ``$HETERO_DATA_ADDRESSES``).
        idle_timeout: Seconds without any trainer (none connected, none speaking) after which
            this host gives up, so that it never bills until ``MaxRuntimeInSeconds``.
        startup_timeout: Seconds to wait for the first trainer to connect (default
            ``idle_timeout``): trainers may take longer to start than data hosts.
        secret: The job's secret (default ``$HETERO_DATA_SECRET``).
        handshake_timeout: Seconds a new connection has to authenticate and attach.
        max_handshakes: Connections authenticating at once; more are closed at once.
        on_listening: Called with the address and port once trainers can connect (with
            ``port=0`` the system picks a free port: local runs and tests).
        metrics_interval: Seconds between this host's metric lines on standard output (its
            workers' time producing, waiting for credits and blocked sending; batches and
            bytes per rank; see docs/data-plane.md); ``None`` writes none.
        instance_group: This host's instance group, for the metric lines (default: the
            SageMaker ``current_instance_group``; outside SageMaker, no lines unless given).

    Returns when every training rank (``world_size`` as the trainers report it) said goodbye.

    Raises:
        TrainersGone: No trainer spoke for ``idle_timeout`` seconds, or one aborted.
        WorkerFailed: A worker raised (its traceback went to the trainers) or died.
        DataPlaneError: No secret, or the address cannot be resolved or bound.
    """
    key = job_secret(secret)
    overrides = parse_addresses(addresses)
    if host is None or (instance_group is None and metrics_interval is not None):
        try:
            environment = TrainingEnvironment()
        except TrainingEnvironmentError:
            if host is None:
                raise
        else:
            host = environment.current_host if host is None else host
            instance_group = instance_group or environment.current_instance_group
    address = (bind, port) if bind is not None else bind_address(host, port, overrides)
    count = workers if workers is not None else max(1, os.cpu_count() or 1)
    if count < 1:
        raise DataPlaneError(f"workers must be at least 1, got {count}")
    try:
        listener = socket.create_server(address, backlog=256)
    except OSError as error:
        raise DataPlaneError(f"cannot listen on {address[0]}:{address[1]}: {error}") from None
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    pipes: list[Connection] = []
    processes: list[Any] = []
    admission: _Admission | None = None
    load: HostLoad | None = None
    try:
        # Workers start before any thread of this process does: forking a threaded process
        # can copy a held lock.
        for index in range(count):
            ours, theirs = context.Pipe(duplex=True)
            process = context.Process(
                target=worker_entry,
                args=(index, host, make_batches, theirs, listener, idle_timeout, os.getpid()),
                name=f"data-worker-{index}",
                daemon=True,
            )
            process.start()
            theirs.close()
            pipes.append(ours)
            processes.append(process)
        info = {"host": host, "workers": count}
        admission = _Admission(
            listener,
            key,
            info,
            pipes,
            [process.pid for process in processes],
            handshake_timeout,
            max_handshakes,
        )
        admission.thread.start()
        bound_address, bound_port = listener.getsockname()[:2]
        log.info("serving %d worker(s) on %s:%d", count, bound_address, bound_port)
        if on_listening is not None:
            on_listening(bound_address, bound_port)
        first = idle_timeout if startup_timeout is None else startup_timeout
        interval = metrics_interval if instance_group is not None else None
        load = HostLoad(instance_group or "-", host, count, interval)
        _watch(admission, pipes, processes, idle_timeout, first, load)
    finally:
        if admission is not None:
            admission.stopping.set()
            admission.tell_workers("stop")
        with contextlib.suppress(OSError):
            listener.close()
        for process in processes:
            process.join(timeout=1.0)
            if process.is_alive():
                process.terminate()
                process.join(timeout=1.0)
        if load is not None:
            _last_counts(pipes, load)
            load.write()


def _watch(
    admission: _Admission,
    pipes: list[Connection],
    processes: list[Any],
    idle_timeout: float,
    startup_timeout: float,
    load: HostLoad,
) -> None:
    """Follow the workers' reports until every rank is done (return) or the host must stop."""
    open_by_worker = [0] * len(pipes)
    done_ranks: set[int] = set()
    world_size = 0
    idle_since = time.monotonic()
    contacted = False
    sentinels = {process.sentinel: index for index, process in enumerate(processes)}
    readers = {pipe: index for index, pipe in enumerate(pipes)}
    while True:
        # Messages before deaths: a failing worker reports its traceback, then exits.
        ready_list = wait([*readers, *sentinels], timeout=0.1)
        for ready in sorted(ready_list, key=lambda ready: isinstance(ready, int)):
            if isinstance(ready, int):
                index = sentinels.pop(ready)
                if processes[index].exitcode != 0:
                    _fail(admission, index, f"died with exit code {processes[index].exitcode}", "")
                continue
            pipe = cast(Connection, ready)
            index = readers[pipe]
            try:
                message: Any = pipe.recv()
            except (EOFError, OSError):
                del readers[pipe]
                continue
            kind = message[0]
            if kind == "open":
                open_by_worker[index] = message[1]
                contacted = True
            elif kind == "bye":
                done_ranks.add(message[1])
                idle_since = max(idle_since, time.monotonic())
                world_size = max(world_size, message[2])
            elif kind == "lost":
                idle_since = max(idle_since, message[2])
                log.info("rank %d left worker %d: %s", message[1], index, message[3])
            elif kind == "stats":
                load.update(index, message[1], message[2])
            elif kind == "abort":
                raise TrainersGone(f"training rank {message[1]} aborted: {message[2]}")
            elif kind == "failed":
                _fail(admission, index, message[1], message[2])
        if world_size and done_ranks >= set(range(world_size)):
            log.info("all %d training ranks are done; stopping", world_size)
            return
        # Idle is measured from the last word of the last trainer that left: a trainer that
        # went silent was dropped by its worker idle_timeout after its last frame.
        limit = idle_timeout if contacted else startup_timeout
        if not any(open_by_worker) and time.monotonic() - idle_since > limit:
            missing = sorted(set(range(world_size)) - done_ranks)
            waiting = f"ranks {missing} of {world_size}" if world_size else "any rank"
            raise TrainersGone(
                f"no trainer connected or spoke for {limit:g} s and {waiting} never said "
                "goodbye: the training group is gone (crashed or killed). Stopping so that the "
                "job ends"
            )


def _last_counts(pipes: list[Connection], load: HostLoad) -> None:
    """The counters the workers reported as they stopped (for the last metric lines)."""
    for index, pipe in enumerate(pipes):
        with contextlib.suppress(EOFError, OSError):
            while pipe.poll(0):
                message = pipe.recv()
                if message[0] == "stats":
                    load.record(index, message[1], message[2])


def _fail(admission: _Admission, index: int, problem: str, text: str) -> None:
    admission.tell_workers("fail", index, problem, text)
    raise WorkerFailed(f"worker {index}: {problem}\n{text}".rstrip())


__all__ = ["serve"]
