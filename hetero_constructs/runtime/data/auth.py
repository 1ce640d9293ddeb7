"""Proving the job's secret both ways: HMAC-SHA256 challenge-response on every connection.

The data host sends a random nonce; the trainer answers with its own nonce and
``HMAC(secret, "client" | server nonce | trainer nonce)``; the data host checks it in constant
time and proves itself with ``HMAC(secret, "server" | trainer nonce | server nonce)``. The
secret never crosses the network and a recorded exchange cannot be replayed (fresh nonces).
Traffic after the handshake is authenticated by the connection, not encrypted: see
docs/data-plane.md (inter-container traffic encryption).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
from typing import Any

from .errors import AuthenticationError, DataPlaneError, ProtocolError
from .wire import CHALLENGE, PROOF, REFUSED, WELCOME, read_control, send_frame

SECRET_ENV = "HETERO_DATA_SECRET"
"""Environment variable holding the job's data-plane secret (the submit Lambda sets it)."""
MIN_SECRET_LENGTH = 16
NONCE_BYTES = 32
PROTOCOL_VERSION = 1


def job_secret(secret: str | bytes | None = None) -> bytes:
    """The secret given, else ``$HETERO_DATA_SECRET``; refuse to run without one."""
    if secret is None:
        secret = os.environ.get(SECRET_ENV, "")
    value = secret.encode() if isinstance(secret, str) else bytes(secret)
    if len(value) < MIN_SECRET_LENGTH:
        raise DataPlaneError(
            f"the data plane needs the job's secret (at least {MIN_SECRET_LENGTH} characters) "
            f"in ${SECRET_ENV} or the secret= argument; got {len(value)} characters. Jobs "
            "submitted by hetero-constructs get one per job; elsewhere set the same random "
            "value on every host, e.g. secrets.token_hex(32)"
        )
    return value


def _mac(secret: bytes, label: bytes, first: bytes, second: bytes) -> bytes:
    return hmac.new(secret, b"hetero-data/" + label + first + second, hashlib.sha256).digest()


def _hex_field(meta: dict[str, Any], key: str, size: int) -> bytes:
    value = meta.get(key)
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != size:
        raise ProtocolError(f"handshake field {key!r} must be {size} bytes in hex")
    return raw


def server_handshake(
    sock: socket.socket, secret: bytes, deadline: float, info: dict[str, Any]
) -> None:
    """Challenge a new connection; refuse it (and raise) unless it proves ``secret``."""
    server_nonce = os.urandom(NONCE_BYTES)
    send_frame(sock, CHALLENGE, {"nonce": server_nonce.hex(), "version": PROTOCOL_VERSION})
    _, meta = read_control(sock, (PROOF,), deadline)
    client_nonce = _hex_field(meta, "nonce", NONCE_BYTES)
    proof = _hex_field(meta, "mac", hashlib.sha256().digest_size)
    if not hmac.compare_digest(proof, _mac(secret, b"client", server_nonce, client_nonce)):
        send_frame(sock, REFUSED, {"error": f"the job secret does not match (${SECRET_ENV})"})
        raise AuthenticationError("the peer did not prove the job secret")
    answer = _mac(secret, b"server", client_nonce, server_nonce)
    send_frame(sock, WELCOME, {**info, "mac": answer.hex()})


def client_handshake(
    sock: socket.socket, secret: bytes, deadline: float, where: str
) -> dict[str, Any]:
    """Answer a data host's challenge and check its proof; return what it says about itself."""
    _, meta = read_control(sock, (CHALLENGE,), deadline)
    if meta.get("version") != PROTOCOL_VERSION:
        raise ProtocolError(
            f"{where} speaks data-plane protocol {meta.get('version')!r}, this trainer "
            f"{PROTOCOL_VERSION}: ship the same hetero_runtime to every group"
        )
    server_nonce = _hex_field(meta, "nonce", NONCE_BYTES)
    client_nonce = os.urandom(NONCE_BYTES)
    proof = _mac(secret, b"client", server_nonce, client_nonce)
    send_frame(sock, PROOF, {"nonce": client_nonce.hex(), "mac": proof.hex()})
    kind, meta = read_control(sock, (WELCOME, REFUSED), deadline)
    if kind == REFUSED:
        raise AuthenticationError(f"{where} refused this trainer: {str(meta.get('error'))[:200]}")
    answer = _hex_field(meta, "mac", hashlib.sha256().digest_size)
    if not hmac.compare_digest(answer, _mac(secret, b"server", client_nonce, server_nonce)):
        raise AuthenticationError(f"{where} did not prove the job secret; is it another job's?")
    return meta


__all__ = [
    "MIN_SECRET_LENGTH",
    "PROTOCOL_VERSION",
    "SECRET_ENV",
    "client_handshake",
    "job_secret",
    "server_handshake",
]
