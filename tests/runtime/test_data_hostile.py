"""Hostile peers on both ends of the data plane: refused or cut, bounded memory, no hang."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from hetero_constructs.runtime import data
from hetero_constructs.runtime.data import auth, wire
from tests.fixtures.data_plane import SECRET, Cluster, DataHost, ids_batches

TIB = 1 << 40
#: How long the module's data host gives a connection to authenticate: far longer than any
#: test waits for a cut, so that "cut at once" and "cut at the handshake deadline" differ
#: however slow the machine, and an honest trainer's handshake never races it.
HANDSHAKE_SECONDS = 60.0
#: A ceiling on a cut that comes at once (it fails only a test that would wait the deadline).
AT_ONCE = 30.0


@pytest.fixture(scope="module")
def host() -> Iterator[DataHost]:
    cluster = Cluster()
    started = cluster.start(
        ids_batches(16),
        workers=1,
        idle_timeout=60.0,
        handshake_timeout=HANDSHAKE_SECONDS,
        max_handshakes=4,
    )
    yield started
    cluster.stop()


def connect(host: DataHost) -> socket.socket:
    deadline = time.monotonic() + 60
    while True:
        try:
            return socket.create_connection(("127.0.0.1", host.port), timeout=10)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def closed_within(sock: socket.socket, seconds: float) -> float:
    """Read until the data host closes the connection; how long that took."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:  # closed with our bytes unread: the kernel resets
        pass
    return time.monotonic() - started


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1])


def works(host: DataHost) -> None:
    remote = data.RemoteBatches(
        [host.name], addresses={host.name: host.address}, secret=SECRET, rank=0, world_size=9
    )
    assert next(iter(remote))["ids"].size > 0
    remote.close()  # rank 0 of 9 is done; the module's data host keeps serving the others


def test_a_trainer_with_the_wrong_secret_is_refused_with_a_clear_error(host: DataHost) -> None:
    remote = data.RemoteBatches(
        [host.name],
        addresses={host.name: host.address},
        secret="another-job-secret-0123456789",
        connect_timeout=60,
    )
    with pytest.raises(data.AuthenticationError, match=r"refused.*secret does not match"):
        iter(remote)
    assert host.process.is_alive()


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", id="http"),
        pytest.param(b"\x00" * 64, id="zeros"),
        pytest.param(wire.HEADER.pack(wire.MAGIC, wire.PROOF, 0, 0, 10, TIB), id="1TiB-payload"),
        pytest.param(wire.HEADER.pack(wire.MAGIC, wire.PROOF, 0, 0, 2**32 - 1, 0), id="4GiB-meta"),
        pytest.param(wire.HEADER.pack(wire.MAGIC, wire.BATCH, 0, 0, 10, TIB), id="1TiB-batch"),
    ],
)
def test_garbage_and_huge_frames_are_cut_before_anything_is_allocated(
    host: DataHost, payload: bytes
) -> None:
    before = rss_kib(host.process.pid)
    with connect(host) as sock:
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            sock.sendall(payload)
        assert closed_within(sock, AT_ONCE) < AT_ONCE
    assert rss_kib(host.process.pid) - before < 16 * 1024
    works(host)


def test_a_slowloris_client_is_cut_at_the_handshake_deadline() -> None:
    cluster = Cluster()
    host = cluster.start(ids_batches(16), workers=1, idle_timeout=60.0, handshake_timeout=5.0)
    try:
        _slowloris(host)
    finally:
        cluster.stop()


def _slowloris(host: DataHost) -> None:
    """One byte every 0.4 s: each read would be in time, the whole frame takes 48 s; the 5 s
    handshake deadline cuts it (well within 30 s however slow the machine)."""
    with connect(host) as sock:
        started = time.monotonic()
        sock.settimeout(0.4)
        meta = b"{" + b" " * 100
        proof = wire.frame_header(wire.PROOF, meta) + meta
        try:
            for byte in proof:
                sock.sendall(bytes([byte]))
                try:
                    if sock.recv(65536) == b"":
                        break
                except TimeoutError:
                    pass
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert time.monotonic() - started < AT_ONCE
    works(host)


def test_idle_connections_beyond_the_handshake_limit_are_closed_at_once(host: DataHost) -> None:
    # The host accepts connections in the order they were made: the extra one comes after the
    # four that hold every handshake slot (until the 60 s deadline) and is closed at once.
    sockets = [connect(host) for _ in range(4)]
    try:
        with connect(host) as extra:
            assert closed_within(extra, AT_ONCE) < AT_ONCE
    finally:
        for sock in sockets:
            sock.close()
    works(host)


def test_an_authenticated_trainer_sending_garbage_is_dropped(host: DataHost) -> None:
    with connect(host) as sock:
        deadline = time.monotonic() + HANDSHAKE_SECONDS
        auth.client_handshake(sock, SECRET.encode(), deadline, "test")
        wire.send_frame(sock, wire.ATTACH, {"rank": 0, "world_size": 9, "worker": 0})
        sock.sendall(wire.HEADER.pack(wire.MAGIC, wire.CREDIT, 0, 0, 5, TIB))
        assert closed_within(sock, AT_ONCE) < AT_ONCE
    works(host)


# -- a hostile data host -------------------------------------------------------------------


def fake_data_host(behaviour: Callable[[socket.socket], None], secret: str = SECRET) -> str:
    """A data host on a thread that authenticates (with ``secret``), then misbehaves and keeps
    the connection open until the trainer closes it (a closed one would be another error)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def run() -> None:
        with listener:
            sock, _ = listener.accept()
            with sock:
                deadline = time.monotonic() + HANDSHAKE_SECONDS
                try:
                    auth.server_handshake(
                        sock, secret.encode(), deadline, {"host": "evil", "workers": 1}
                    )
                    wire.read_control(sock, (wire.ATTACH,), deadline)
                    wire.read_control(sock, (wire.START,), deadline)
                except data.DataPlaneError:
                    return
                behaviour(sock)
                sock.settimeout(AT_ONCE * 2)
                with contextlib.suppress(OSError):
                    while sock.recv(65536):
                        pass

    threading.Thread(target=run, daemon=True).start()
    return f"127.0.0.1:{port}"


def batch_claiming(size: int) -> Callable[[socket.socket], None]:
    def send(sock: socket.socket) -> None:
        meta = wire.encode_meta({"epoch": 0, "seq": 0, "samples": 1, "layout": "array"})
        sock.sendall(wire.frame_header(wire.BATCH, meta, size) + meta)

    return send


def lying_shape(sock: socket.socket) -> None:
    meta = wire.encode_meta(
        {
            "epoch": 0,
            "seq": 0,
            "samples": 1,
            "layout": "array",
            "items": [[0, "a", "float32", [1000, 1000], 0, 16, "numpy"]],
        }
    )
    sock.sendall(wire.frame_header(wire.BATCH, meta, 16) + meta + bytes(16))


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        pytest.param(batch_claiming(TIB), "claims a payload of 1099511627776 bytes", id="1TiB"),
        pytest.param(
            lambda sock: sock.sendall(b"HTTP/1.1 200 OK\r\n" * 4), "not a data", id="junk"
        ),
        pytest.param(lying_shape, "does not hold 16 bytes", id="shape"),
        pytest.param(lambda sock: None, "not even a heartbeat, for 5 s", id="silent"),
    ],
)
def test_a_hostile_data_host_is_a_named_error_without_allocation_or_hang(
    behaviour: Callable[[socket.socket], None], message: str
) -> None:
    address = fake_data_host(behaviour)
    # Only the silent host is cut by the trainer's idle timeout (which also bounds the trainer's
    # handshake: 5 s, not 1, lets a slow machine authenticate first); the others are named at
    # once, long before theirs could elapse.
    idle = 5.0 if "heartbeat" in message else 2 * AT_ONCE
    remote = data.RemoteBatches(
        ["evil"], addresses={"evil": address}, secret=SECRET, idle_timeout=idle
    )
    started = time.monotonic()
    with pytest.raises(data.DataHostLost, match=message) as caught:
        list(remote)
    assert caught.value.host == "evil"
    assert time.monotonic() - started < AT_ONCE


def test_a_data_host_that_cannot_prove_the_secret_is_refused() -> None:
    address = fake_data_host(lambda sock: None, secret="not-the-jobs-secret-0123456789")
    remote = data.RemoteBatches(["evil"], addresses={"evil": address}, secret=SECRET)
    with pytest.raises(data.AuthenticationError):
        iter(remote)
