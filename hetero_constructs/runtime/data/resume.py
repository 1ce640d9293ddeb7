"""Mid-epoch resume: where a rank stands in an epoch, saved and restored, and the data host's
side of it (each shard starts where the rank stopped).

A rank's position is, per producer (``P`` of them, numbered across the data hosts), how many
batches of its shard the training loop took, whether the shard ended, and, in ordered mode,
whose turn is next. Shards are fixed by ``(rank, world size, P, epoch, seed)``, so a restart
with the same ranks and data workers asks each producer for the rest of the same shard.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import DataPlaneError
from .topology import Shard

log = logging.getLogger(__name__)
STATE_FORMAT = "hetero-constructs.data-plane/1"
"""The ``format`` of a ``RemoteBatches.state_dict()``."""
_END = object()


@dataclass
class Position:
    """Where a rank stands in one epoch (``consumed``, ``ended`` are per producer index)."""

    epoch: int
    consumed: list[int]
    ended: list[bool]
    next_producer: int = 0
    abandoned: bool = field(default=False, compare=False)

    @classmethod
    def fresh(cls, epoch: int, producers: int) -> Position:
        return cls(epoch, [0] * producers, [False] * producers)


def build_state(
    *,
    rank: int,
    world_size: int,
    producers: int | None,
    seed: int,
    ordered: bool,
    next_epoch: int,
    epochs_done: int,
    position: Position | None,
) -> dict[str, Any]:
    """The JSON-able state of a rank: the epoch in progress and how far, or the next epoch."""
    state: dict[str, Any] = {
        "format": STATE_FORMAT,
        "rank": rank,
        "world_size": world_size,
        "producers": producers,
        "seed": seed,
        "ordered": ordered,
        "epoch": next_epoch,
        "epochs_done": epochs_done,
        "consumed": [],
        "ended": [],
        "next_producer": 0,
    }
    if position is not None and not position.abandoned:
        state.update(
            epoch=position.epoch,
            consumed=list(position.consumed),
            ended=list(position.ended),
            next_producer=position.next_producer,
        )
    return state


def _field(state: dict[str, Any], key: str, kind: type) -> Any:
    value = state.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DataPlaneError(
            f"not a RemoteBatches state: {key!r} is {value!r}, expected {kind.__name__}; pass "
            "what RemoteBatches.state_dict() returned"
        )
    return value


def read_state(
    state: Any, *, rank: int, world_size: int, seed: int
) -> tuple[int, int, int | None, Position | None]:
    """Check a saved state against this rank: ``(epoch, epochs_done, producers, position)``.

    Resume is exact or refused: another rank, world size or seed gives other shards, so the
    saved counts would mean other samples.
    """
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        raise DataPlaneError(
            f"not a RemoteBatches state (format {STATE_FORMAT!r} expected): pass what "
            "RemoteBatches.state_dict() returned, saved with your checkpoint"
        )
    saved = {key: _field(state, key, int) for key in ("rank", "world_size", "seed")}
    here = {"rank": rank, "world_size": world_size, "seed": seed}
    for key, value in saved.items():
        if value != here[key]:
            raise DataPlaneError(
                f"cannot resume: the state was saved with {key}={value}, this RemoteBatches has "
                f"{key}={here[key]}. Each rank loads its own state (save one per rank, e.g. "
                f"data-rank{{rank}}.json), with the same world size and seed; to start afresh "
                f"instead, skip load_state_dict and pass start_epoch={state.get('epoch')}"
            )
    epoch, done = _field(state, "epoch", int), _field(state, "epochs_done", int)
    producers = state.get("producers")
    consumed, ended = _field(state, "consumed", list), _field(state, "ended", list)
    if not consumed:
        return epoch, done, producers if isinstance(producers, int) else None, None
    if (
        not isinstance(producers, int)
        or len(consumed) != producers
        or len(ended) != producers
        or not all(isinstance(n, int) and n >= 0 for n in consumed)
        or not all(isinstance(flag, bool) for flag in ended)
    ):
        raise DataPlaneError("not a RemoteBatches state: 'consumed'/'ended' do not match")
    position = Position(epoch, list(consumed), list(ended), _field(state, "next_producer", int))
    return epoch, done, producers, position


def check_producers(saved: int | None, found: int, epoch: int, hosts: list[str]) -> None:
    """Refuse a mid-epoch resume on a different number of data workers (other shards)."""
    if saved is not None and saved != found:
        raise DataPlaneError(
            f"cannot resume epoch {epoch} mid-way: the state was saved with {saved} data "
            f"workers in all, the data hosts {hosts} have {found}. Shards are cut by the number "
            f"of workers, so the saved counts would mean other samples. Serve with the same "
            f"number of workers in all, or start the epoch afresh (skip load_state_dict, "
            f"start_epoch={epoch}) or at the next one (start_epoch={epoch + 1})"
        )


# -- the data host's side ----------------------------------------------------------------------


class _WatchedShard(Shard):
    """A shard that notes whether ``make_batches`` read ``start``."""

    _start_read = False

    def __getattribute__(self, name: str) -> Any:
        if name == "start":
            object.__setattr__(self, "_start_read", True)
        return super().__getattribute__(name)


def open_shard(make_batches: Callable[[Shard], Any], shard: Shard, where: str) -> Iterator[Any]:
    """``make_batches(shard)``'s batches from ``shard.start`` on.

    A ``make_batches`` that reads ``shard.start`` skips what the rank already has itself; one
    that does not (by its first batch) is fast-forwarded: its first ``start`` batches are made
    and discarded, and a warning says how many and how long that took.
    """
    if shard.start == 0:
        return iter(make_batches(shard))
    watched = _WatchedShard(
        shard.index, shard.count, shard.epoch, shard.seed, shard.rank, shard.start
    )
    return _from_start(make_batches, watched, where)


def _from_start(
    make_batches: Callable[[Shard], Any], shard: _WatchedShard, where: str
) -> Iterator[Any]:
    batches = iter(make_batches(shard))
    started = time.monotonic()
    item = next(batches, _END)  # a generator's body runs now: it reads shard.start or not
    if not object.__getattribute__(shard, "_start_read"):
        discarded = 0
        while discarded < shard.start and item is not _END:
            discarded += 1
            item = next(batches, _END)
        short = "" if discarded == shard.start else f" (the shard had only {discarded})"
        log.warning(
            "%s: make_batches does not read shard.start; fast-forwarded rank %d's shard %d of "
            "epoch %d by making and discarding %d batches%s in %.3f s. Skip them in "
            "make_batches (start at shard.start) to resume without redoing them",
            where,
            shard.rank,
            shard.index,
            shard.epoch,
            discarded,
            short,
            time.monotonic() - started,
        )
    if item is not _END:
        yield item
        yield from batches


__all__ = [
    "STATE_FORMAT",
    "Position",
    "build_state",
    "check_producers",
    "open_shard",
    "read_state",
]
