"""The data plane: stream batches from the data group to the training group, then end.

On the data group (plain ``python train.py``)::

    from hetero_runtime import data

    def make_batches(shard):                     # runs in each worker process
        for start in range(shard.index * 64, num_samples, shard.count * 64):
            yield {"image": augment(load(start, 64)), "label": labels[start:start + 64]}

    data.serve(make_batches, workers=32)         # returns when every trainer is done

On the training group (under torchrun)::

    batches = data.RemoteBatches(epochs=3)       # hosts and ranks from the environment
    for epoch in range(3):
        for batch in batches:
            train_step(batch["image"], batch["label"])

No pickle crosses the network: batches travel as dtype, shape and raw bytes (received into
preallocated buffers), plus JSON. Every connection proves the job's secret
(``$HETERO_DATA_SECRET``). See docs/data-plane.md.
"""

from __future__ import annotations

from .auth import SECRET_ENV, job_secret
from .client import RemoteBatches
from .errors import (
    AuthenticationError,
    BatchRefused,
    DataHostLost,
    DataPlaneError,
    ProtocolError,
    TrainersGone,
    WorkerFailed,
)
from .server import serve
from .stats import DataStats
from .topology import ADDRESSES_ENV, DEFAULT_PORT, Shard

__all__ = [
    "ADDRESSES_ENV",
    "DEFAULT_PORT",
    "SECRET_ENV",
    "AuthenticationError",
    "BatchRefused",
    "DataHostLost",
    "DataPlaneError",
    "DataStats",
    "ProtocolError",
    "RemoteBatches",
    "Shard",
    "TrainersGone",
    "WorkerFailed",
    "job_secret",
    "serve",
]
