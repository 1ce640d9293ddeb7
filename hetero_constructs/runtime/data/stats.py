"""What a trainer's data feed did: throughput and the time the training loop waited for it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataStats:
    """A snapshot of :meth:`RemoteBatches.stats`.

    Attributes:
        batches: Batches handed to the training loop.
        samples: Samples in them (the first dimension of each batch's first array).
        bytes: Payload bytes received for them.
        seconds: Wall time since the first batch was asked for (or the last reset).
        wait_seconds: Of that, time the training loop spent blocked waiting for the next
            batch. Near zero: the data plane keeps up; near ``seconds``: it is the bottleneck.
    """

    batches: int = 0
    samples: int = 0
    bytes: int = 0
    seconds: float = 0.0
    wait_seconds: float = 0.0

    @property
    def samples_per_second(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else 0.0

    @property
    def batches_per_second(self) -> float:
        return self.batches / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_per_second(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    @property
    def wait_fraction(self) -> float:
        """Share of the wall time the training loop waited for data (0 to 1)."""
        return min(1.0, self.wait_seconds / self.seconds) if self.seconds > 0 else 0.0


__all__ = ["DataStats"]
