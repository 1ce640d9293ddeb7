"""Who is where: shards of the stream, data-host addresses, this trainer's rank.

Hosts and groups come from the SageMaker environment (:class:`TrainingEnvironment`); one
override, ``$HETERO_DATA_ADDRESSES`` (or the ``addresses=`` argument), maps host names to
``address:port`` for tests and local runs, on both sides.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import DataPlaneError

DEFAULT_PORT = 7471
"""Port the data hosts listen on unless told otherwise."""
ADDRESSES_ENV = "HETERO_DATA_ADDRESSES"
"""JSON object mapping host names to ``"address:port"`` (local runs and tests)."""


@dataclass(frozen=True)
class Shard:
    """One part of one epoch of the stream: what a call of ``make_batches`` produces.

    Shards ``0 .. count-1`` of an epoch together are the whole epoch, each exactly once; a
    ``make_batches`` that yields the samples ``index, index + count, ...`` (or any partition
    by ``index``) gives every sample to exactly one training rank per epoch.

    Attributes:
        index: This shard's number, ``0 <= index < count``.
        count: How many shards the epoch has (producers x training ranks).
        epoch: The epoch, counted from the trainer's ``start_epoch`` (default 0).
        seed: The trainers' seed; shuffle with ``(seed, epoch)`` for reproducible orders.
        rank: The training rank that receives this shard (every rank gets ``count / world``).
        start: Batches of this shard the rank already consumed before a restart (resume from
            ``RemoteBatches.load_state_dict``); 0 otherwise. Skip that many batches without
            making them; a ``make_batches`` that never reads ``start`` is fast-forwarded (its
            first ``start`` batches are made and discarded, and the data host logs it).
    """

    index: int
    count: int
    epoch: int
    seed: int
    rank: int = 0
    start: int = 0


def shard_of(
    rank: int, world_size: int, producer: int, producers: int, epoch: int, seed: int
) -> Shard:
    """Rank ``r`` gets shards ``r * producers .. (r + 1) * producers - 1``, one per producer
    (a worker on a data host), so every rank gets the same number of shards."""
    return Shard(rank * producers + producer, producers * world_size, epoch, seed, rank)


def parse_addresses(addresses: Mapping[str, str] | str | None) -> dict[str, tuple[str, int]]:
    """The host override: a mapping, a JSON string, or ``$HETERO_DATA_ADDRESSES``."""
    if addresses is None:
        addresses = os.environ.get(ADDRESSES_ENV) or "{}"
    if isinstance(addresses, str):
        try:
            addresses = json.loads(addresses)
        except ValueError:
            addresses = None
        if not isinstance(addresses, dict):
            raise DataPlaneError(
                f"${ADDRESSES_ENV} must be a JSON object of host -> 'address:port', e.g. "
                '{"algo-2": "127.0.0.1:7471"}'
            )
    parsed = {}
    for host, address in addresses.items():
        name, _, port = str(address).rpartition(":")
        if not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise DataPlaneError(
                f"the address of host {host!r} must be 'address:port', got {address!r}"
            )
        parsed[str(host)] = (name, int(port))
    return parsed


def endpoint(host: str, port: int, addresses: Mapping[str, tuple[str, int]]) -> tuple[str, int]:
    """Where ``host`` serves: its override, else its name (SageMaker's hosts resolve) and port."""
    return addresses.get(host, (host, port))


def bind_address(host: str, port: int, addresses: Mapping[str, tuple[str, int]]) -> tuple[str, int]:
    """The cluster interface to listen on: the host's override, else the address its name
    resolves to. Never every interface: the data plane listens where the trainers reach it."""
    if host in addresses:
        return addresses[host]
    try:
        return socket.gethostbyname(host), port
    except OSError as error:
        raise DataPlaneError(
            f"cannot resolve this data host's name {host!r} to its cluster address ({error}); "
            f"pass bind='address' to serve() or map the host in ${ADDRESSES_ENV}"
        ) from None


def trainer_rank(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """This trainer's rank and world size: as given, else torchrun's ``RANK``/``WORLD_SIZE``,
    else an initialised ``torch.distributed``, else rank 0 of 1."""
    if rank is None or world_size is None:
        env_rank, env_world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
        dist = getattr(sys.modules.get("torch"), "distributed", None)
        if env_rank is not None and env_world is not None:
            found = int(env_rank), int(env_world)
        elif dist is not None and dist.is_available() and dist.is_initialized():
            found = dist.get_rank(), dist.get_world_size()
        else:
            found = 0, 1
        rank = found[0] if rank is None else rank
        world_size = found[1] if world_size is None else world_size
    if not 0 <= rank < world_size:
        raise DataPlaneError(f"rank {rank} is not in [0, world_size={world_size})")
    return rank, world_size


__all__ = [
    "ADDRESSES_ENV",
    "DEFAULT_PORT",
    "Shard",
    "bind_address",
    "endpoint",
    "parse_addresses",
    "shard_of",
    "trainer_rank",
]
