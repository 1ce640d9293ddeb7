"""``RemoteBatches`` for the frameworks' own input pipelines: a PyTorch ``IterableDataset``
(DataLoader workers included) and a TensorFlow ``tf.data.Dataset``.

Neither framework is imported unless asked for: the runtime helper is standard library only.

Under ``DataLoader(num_workers=k)`` each loader worker is a process of its own with its own
copy of the dataset. Loader worker ``w`` takes the producers whose index is ``w`` modulo
``k`` and opens its own connections to them for one epoch at a time, so every sample still
reaches the rank exactly once; the rank's own connections (made by :func:`torch_dataset`)
carry its heartbeats and its goodbye.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from typing import Any

from .arrays import optional_module
from .errors import DataPlaneError

MAX_LOADER_WORKERS = 1024
_dataset_class: Any = None
_dataset_class_lock = threading.Lock()


def torch_dataset(remote: Any) -> Any:
    """See :meth:`RemoteBatches.torch_dataset`."""
    if optional_module("torch.utils.data") is None:
        raise DataPlaneError("torch_dataset() needs torch on the trainer")
    if remote.array_type == "auto":
        remote.array_type = "torch"
    if remote.closed:
        raise DataPlaneError("this RemoteBatches is closed; make a new one")
    remote._connect_once()  # loader workers need the producers; this process keeps the rank
    dataset = _make_dataset_class()()
    dataset.setup(remote)
    return dataset


def _make_dataset_class() -> Any:
    """``RemoteIterableDataset``, made on first use (it derives from torch's class) and
    reachable as this module's attribute, so spawned loader workers can unpickle it."""
    global _dataset_class
    with _dataset_class_lock:
        if _dataset_class is not None:
            return _dataset_class
        data = optional_module("torch.utils.data")
        if data is None:
            raise DataPlaneError("torch_dataset() needs torch on the trainer")

        class RemoteIterableDataset(data.IterableDataset):  # type: ignore[misc, name-defined]
            """This rank's batches, one epoch per iteration (see the module docstring)."""

            remote: Any | None

            def setup(self, remote: Any) -> None:
                self.remote = remote
                self.recipe = loader_recipe(remote)
                # Epochs each loader worker began: shared, so loader workers made anew each
                # epoch (persistent_workers=False) still count on.
                self.begun = multiprocessing.RawArray("q", MAX_LOADER_WORKERS)
                self.finished = multiprocessing.RawArray("q", MAX_LOADER_WORKERS)
                self.workers = multiprocessing.RawValue("q", 0)
                self.first_epoch = remote.next_epoch
                remote._loader_epochs = self.begun
                if remote.epochs is not None:  # the rank ends when its loader workers are done
                    left = remote.epochs - remote._epochs_begun
                    finished, workers = self.finished, self.workers
                    remote._link.done_when = lambda: (
                        bool(workers.value)
                        and all(finished[w] >= left for w in range(workers.value))
                    )

            def __getstate__(self) -> dict[str, Any]:
                state = dict(self.__dict__)
                state["remote"] = None  # sockets and threads stay in the rank's process
                return state

            def __iter__(self) -> Iterator[Any]:
                info = optional_module("torch.utils.data").get_worker_info()
                if info is None:
                    if self.remote is None:
                        raise DataPlaneError("this dataset's RemoteBatches is not here")
                    return iter(self.remote)
                if info.num_workers > MAX_LOADER_WORKERS:
                    raise DataPlaneError(
                        f"num_workers={info.num_workers}: at most {MAX_LOADER_WORKERS}"
                    )
                epoch = self.first_epoch + self.begun[info.id]
                self.begun[info.id] += 1
                self.workers.value = info.num_workers
                return _part_epoch(self.recipe, info.id, info.num_workers, epoch, self.finished)

        RemoteIterableDataset.__module__ = __name__
        RemoteIterableDataset.__qualname__ = "RemoteIterableDataset"
        _dataset_class = RemoteIterableDataset
        return _dataset_class


def __getattr__(name: str) -> Any:
    if name == "RemoteIterableDataset":
        return _make_dataset_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def loader_recipe(self: Any) -> dict[str, Any]:
    """What a DataLoader worker needs to open its part of this rank (picklable)."""
    kwargs = {
        "hosts": self.hosts,
        "port": self.port,
        "addresses": {host: f"{a}:{p}" for host, (a, p) in self.addresses.items()},
        "rank": self.rank,
        "world_size": self.world_size,
        "ordered": self.ordered,
        "prefetch": self.prefetch,
        "seed": self.seed,
        "on_host_loss": self.on_host_loss,
        "idle_timeout": self.idle_timeout,
        "connect_timeout": self.connect_timeout,
        "secret": self.secret,
        "array_type": self.array_type,
        "max_batch_bytes": self.max_batch_bytes,
    }
    targets = [(p.host, p.worker, p.index) for p in self.producers]
    return {
        "cls": type(self),
        "kwargs": kwargs,
        "targets": targets,
        "producers": self._producer_count,
        "resume": self._resume,
    }


def _part_epoch(
    recipe: dict[str, Any], worker: int, workers: int, epoch: int, finished: Any
) -> Iterator[Any]:
    """Loader worker ``worker`` of ``workers``: one epoch of its share of the producers."""
    targets = [target for target in recipe["targets"] if target[2] % workers == worker]
    if targets:
        part = recipe["cls"](**recipe["kwargs"])
        resume = recipe["resume"] if recipe["resume"] and recipe["resume"].epoch == epoch else None
        part._become_part(targets, recipe["producers"], epoch, resume)
        try:
            yield from part
        finally:
            part.close()  # this part's connections only: the rank goes on
    finished[worker] += 1


# -- TensorFlow ----------------------------------------------------------------------------


def tf_dataset(remote: Any, signature: Any = None) -> Any:
    """See :meth:`RemoteBatches.tf_dataset`."""
    tf = optional_module("tensorflow")
    if tf is None:
        raise DataPlaneError(
            "tf_dataset() needs TensorFlow on the trainer (pip install tensorflow)"
        )
    if remote.array_type in ("auto", "torch"):
        remote.array_type = "numpy"
    pending: list[Any] = []
    if signature is None:
        epoch = iter(remote)
        first = next(epoch, None)
        if first is None:
            raise DataPlaneError(
                "tf_dataset() reads the signature from the first batch, and this epoch has "
                "none: pass signature= (a tf.TensorSpec structure)"
            )
        signature = spec_of(tf, first)
        pending.append((first, epoch))

    def one_epoch() -> Iterator[Any]:
        if pending:
            first, epoch = pending.pop()
            yield first
            yield from epoch
        else:
            yield from remote

    return tf.data.Dataset.from_generator(one_epoch, output_signature=signature)


def spec_of(tf: Any, batch: Any, where: str = "the batch") -> Any:
    """The ``tf.TensorSpec`` structure of ``batch``; the first dimension is left open (the
    last batch of a shard may be shorter)."""
    if isinstance(batch, dict):
        return {key: spec_of(tf, value, f"{where}[{key!r}]") for key, value in batch.items()}
    if isinstance(batch, (tuple, list)):
        return tuple(spec_of(tf, value, f"{where}[{i}]") for i, value in enumerate(batch))
    if isinstance(batch, bool):
        return tf.TensorSpec((), tf.bool)
    if isinstance(batch, int):
        return tf.TensorSpec((), tf.int64)
    if isinstance(batch, float):
        return tf.TensorSpec((), tf.float64)
    if isinstance(batch, str):
        return tf.TensorSpec((), tf.string)
    shape, dtype = getattr(batch, "shape", None), getattr(batch, "dtype", None)
    if shape is None or dtype is None:
        raise DataPlaneError(
            f"{where} is a {type(batch).__name__}: tf.data holds arrays, numbers and strings; "
            "leave it out of the batch or pass tf_dataset(signature=...)"
        )
    open_shape = (None, *shape[1:]) if len(shape) else ()
    return tf.TensorSpec(open_shape, tf.as_dtype(dtype))


__all__ = ["MAX_LOADER_WORKERS", "spec_of", "tf_dataset", "torch_dataset"]
