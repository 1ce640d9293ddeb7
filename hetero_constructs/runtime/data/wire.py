"""The frame format: a fixed header, JSON metadata, raw payload bytes. Nothing is unpickled.

Every frame is ``HEADER`` (20 bytes: magic ``HDP1``, kind, flags, reserved, metadata length,
payload length) followed by the metadata (UTF-8 JSON object) and the payload (raw array bytes,
for ``BATCH`` frames only). Both lengths are checked against the receiver's limits *before*
anything is allocated, so a peer claiming a 1 TiB frame costs 20 bytes of memory.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from typing import Any

from .errors import DataPlaneError, ProtocolError

MAGIC = b"HDP1"
HEADER = struct.Struct("!4sBBHIQ")

# Frame kinds. Server (data host) to trainer: CHALLENGE, WELCOME, REFUSED, BATCH, END, ERROR.
# Trainer to server: PROOF, ATTACH, START, CREDIT, BYE, ABORT. Both ways: PING.
CHALLENGE, PROOF, WELCOME, REFUSED, ATTACH = 1, 2, 3, 4, 5
START, CREDIT, BATCH, END, ERROR, PING, BYE, ABORT = 6, 7, 8, 9, 10, 11, 12, 13
KIND_NAMES = {
    CHALLENGE: "CHALLENGE",
    PROOF: "PROOF",
    WELCOME: "WELCOME",
    REFUSED: "REFUSED",
    ATTACH: "ATTACH",
    START: "START",
    CREDIT: "CREDIT",
    BATCH: "BATCH",
    END: "END",
    ERROR: "ERROR",
    PING: "PING",
    BYE: "BYE",
    ABORT: "ABORT",
}

MAX_CONTROL_META = 64 * 1024
"""Metadata limit of every frame but BATCH (and of all frames before authentication)."""
MAX_BATCH_META = 1024 * 1024
"""Metadata limit of a BATCH frame (array descriptions and the batch's JSON metadata)."""
DEFAULT_MAX_BATCH_BYTES = 1 << 30
"""Default payload limit of one batch (1 GiB); ``max_batch_bytes`` changes it."""
SMALL_FRAME = 64 * 1024
"""Frames below this size are joined into one buffer and sent with one system call."""


class PeerClosed(DataPlaneError):
    """The peer closed the connection (at a frame boundary when ``clean``)."""

    def __init__(self, clean: bool) -> None:
        super().__init__(
            "the peer closed the connection" + ("" if clean else " in the middle of a frame")
        )
        self.clean = clean


def encode_meta(meta: dict[str, Any]) -> bytes:
    return json.dumps(meta, separators=(",", ":"), allow_nan=False).encode()


def frame_header(kind: int, meta: bytes, payload_len: int = 0) -> bytes:
    return HEADER.pack(MAGIC, kind, 0, 0, len(meta), payload_len)


def send_frame(sock: socket.socket, kind: int, meta: dict[str, Any] | None = None) -> None:
    """Send a frame without payload (all control frames)."""
    body = encode_meta(meta or {})
    sock.sendall(frame_header(kind, body) + body)


def read_exact(
    sock: socket.socket, view: memoryview, deadline: float | None, at_boundary: bool = False
) -> None:
    """Fill ``view`` from ``sock``; raise ``TimeoutError`` once ``deadline`` (monotonic) passes.

    The deadline bounds the whole read, not each ``recv``: a peer trickling one byte at a time
    (slowloris) is cut when its time is up.
    """
    filled, size = 0, len(view)
    while filled < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            # Past the deadline, what has arrived is still read: the deadline can pass while
            # this thread does not run (a stopped process, a loaded machine), and a peer
            # whose bytes are waiting is not silent. Only nothing waiting is a timeout.
            sock.settimeout(max(0.0, remaining))
        try:
            received = sock.recv_into(view[filled:])
        except (BlockingIOError, TimeoutError):
            raise TimeoutError(f"read {filled} of {size} bytes before the deadline") from None
        if received == 0:
            raise PeerClosed(clean=at_boundary and filled == 0)
        filled += received


def read_header(sock: socket.socket, deadline: float | None) -> tuple[int, int, int]:
    """Read and check one frame header; return ``(kind, meta_len, payload_len)``."""
    raw = bytearray(HEADER.size)
    read_exact(sock, memoryview(raw), deadline, at_boundary=True)
    return parse_header(raw)


def parse_header(raw: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """Check one frame header's bytes; return ``(kind, meta_len, payload_len)``."""
    magic, kind, _flags, _reserved, meta_len, payload_len = HEADER.unpack(raw)
    if magic != MAGIC:
        raise ProtocolError(
            f"not a data-plane frame: it starts with {bytes(raw[:8])!r}, expected {MAGIC!r} "
            "(is another service using this port, or a different library version?)"
        )
    if kind not in KIND_NAMES:
        raise ProtocolError(f"unknown frame kind {kind}")
    return kind, meta_len, payload_len


def check_lengths(
    kind: int, meta_len: int, payload_len: int, expected: tuple[int, ...], max_payload: int
) -> None:
    """Refuse a frame of an unexpected kind or over the limits, before allocating anything."""
    if kind not in expected:
        names = ", ".join(KIND_NAMES[k] for k in expected)
        raise ProtocolError(f"got a {KIND_NAMES[kind]} frame where {names} was expected")
    meta_limit = MAX_BATCH_META if kind == BATCH else MAX_CONTROL_META
    if meta_len > meta_limit:
        raise ProtocolError(
            f"{KIND_NAMES[kind]} frame metadata of {meta_len} bytes exceeds the limit of "
            f"{meta_limit} bytes"
        )
    limit = max_payload if kind == BATCH else 0
    if payload_len > limit:
        raise ProtocolError(
            f"{KIND_NAMES[kind]} frame claims a payload of {payload_len} bytes; the limit is "
            f"{limit} bytes (raise max_batch_bytes on the trainer if batches really are this big)"
        )


def read_meta(sock: socket.socket, meta_len: int, deadline: float | None) -> dict[str, Any]:
    raw = bytearray(meta_len)
    read_exact(sock, memoryview(raw), deadline)
    return parse_meta(raw)


def parse_meta(raw: bytes | bytearray) -> dict[str, Any]:
    """A frame's metadata: a UTF-8 JSON object."""
    try:
        meta = json.loads(raw.decode("utf-8")) if raw else {}
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ProtocolError(f"frame metadata is not UTF-8 JSON: {error}") from None
    if not isinstance(meta, dict):
        raise ProtocolError("frame metadata must be a JSON object")
    return meta


def read_control(
    sock: socket.socket, expected: tuple[int, ...], deadline: float | None
) -> tuple[int, dict[str, Any]]:
    """Read one payload-free frame of one of the ``expected`` kinds."""
    kind, meta_len, payload_len = read_header(sock, deadline)
    check_lengths(kind, meta_len, payload_len, expected, 0)
    return kind, read_meta(sock, meta_len, deadline)


class FrameReader:
    """Control frames parsed as their bytes arrive on a non-blocking socket: no read ever
    waits for the rest of a frame, so a peer that sends half a frame stalls no one. Each
    header is checked before its metadata is awaited, so the buffer stays below
    ``MAX_CONTROL_META`` plus one read."""

    def __init__(self, expected: tuple[int, ...]) -> None:
        self.expected = expected
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, dict[str, Any]]]:
        """Add received bytes; return the frames they complete (raise on a bad frame)."""
        self.buffer += data
        frames: list[tuple[int, dict[str, Any]]] = []
        while len(self.buffer) >= HEADER.size:
            kind, meta_len, payload_len = parse_header(self.buffer[: HEADER.size])
            check_lengths(kind, meta_len, payload_len, self.expected, 0)
            end = HEADER.size + meta_len
            if len(self.buffer) < end:
                break
            frames.append((kind, parse_meta(bytes(self.buffer[HEADER.size : end]))))
            del self.buffer[:end]
        return frames


def deadline_after(seconds: float | None) -> float | None:
    return None if seconds is None else time.monotonic() + seconds


def meta_int(meta: dict[str, Any], key: str, low: int = 0, high: int = 1 << 62) -> int:
    """An integer field of a frame's metadata, range-checked (a bool is not an integer)."""
    value = meta.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ProtocolError(f"frame field {key!r} must be an integer in [{low}, {high}]: {value!r}")
    return value


__all__ = [
    "ABORT",
    "ATTACH",
    "BATCH",
    "BYE",
    "CHALLENGE",
    "CREDIT",
    "DEFAULT_MAX_BATCH_BYTES",
    "END",
    "ERROR",
    "HEADER",
    "KIND_NAMES",
    "MAGIC",
    "MAX_BATCH_META",
    "MAX_CONTROL_META",
    "PING",
    "PROOF",
    "REFUSED",
    "START",
    "WELCOME",
    "FrameReader",
    "PeerClosed",
    "check_lengths",
    "deadline_after",
    "encode_meta",
    "frame_header",
    "meta_int",
    "parse_header",
    "parse_meta",
    "read_control",
    "read_exact",
    "read_header",
    "read_meta",
    "send_frame",
]
