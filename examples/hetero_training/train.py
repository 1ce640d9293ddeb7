"""Heterogeneous-cluster training: CPU hosts prepare and stream batches, GPU hosts train.

SageMaker runs this same script on every host of every instance group. The runtime helper
tells each host what it is for:

* ``Role.DATA`` (the CPU group; the container runs ``python train.py``): read the ``train``
  channel, normalise the features, and serve augmented batches with
  ``hetero_runtime.data.serve`` until every trainer is done (then exit 0), or until the
  trainers have been gone for ``idle_timeout`` seconds (then exit 1, so the job ends).
* ``Role.DISTRIBUTED`` (the group named in ``sagemaker_distribution_instance_groups``; the
  container runs ``torchrun ... train.py``): take this rank's batches from
  ``hetero_runtime.data.RemoteBatches``, train a logistic-regression model with
  ``DistributedDataParallel``, and on rank 0 write the model and ``metrics.json`` to
  ``SM_MODEL_DIR``.

The lines the job's metric definitions read: every host's ``[hetero-train]`` start line and
its group's ``samples_per_second`` (trainers: and ``data_wait_fraction``) lines, from the
runtime helper's ``MetricsReporter`` (the data hosts: one per batch stream they served; the
trainers: one per epoch), and rank 0's ``epoch=N train_loss=L train_accuracy=A`` after each
epoch (the loss and accuracy of every rank's batches in that epoch, before each step).

Hyperparameters (all optional): ``epochs``, ``batch_size``, ``lr``, ``seed``, ``noise``
(standard deviation of the Gaussian noise the data hosts add to each feature, the
"augmentation"), ``num_samples`` (size of the synthetic dataset used when the channel holds no
CSV), ``data_port``, ``data_workers`` (worker processes per data host), ``idle_timeout``,
``connect_timeout`` (how long either group waits for the other to come up),
``data_host_map`` (JSON object host -> ``"address:port"``; local runs map ``algo-1`` to
``127.0.0.1:<port>``), ``checkpoint_dir`` (default ``/opt/ml/checkpoints``, SageMaker's
checkpoint path), ``checkpoint_every`` (steps) and ``hold_at_step`` (a drill: after its
``hold_at_step``-th step, counted over all epochs and restarts, each rank saves its checkpoint
and holds until the job is stopped or its hosts are killed, so that an interruption lands
mid-epoch at a known point; 0, the default: never). The job's data-plane secret comes in
``$HETERO_DATA_SECRET``.

Each rank checkpoints its model, optimiser, progress and data-plane position
(``RemoteBatches.state_dict()``) to ``checkpoint_dir/rank-<rank>.pt`` every
``checkpoint_every`` steps and at each epoch's end. A restarted job (spot reclaim, retry)
finds them there (SageMaker restores the checkpoint S3 URI into that path) and goes on
mid-epoch where the checkpoint was taken, on its new data hosts: each data host's
``shard_batches`` starts a shard at ``shard.start`` (the batches the rank already trained on
are not made again, and the host logs ``resuming rank R's shard I of epoch E at batch B``).
``metrics.json`` lists each rank's row ids in the order it trained on them, per epoch, the
part before a restart included (``ids_in_order``).
"""

from __future__ import annotations

import csv
import gc
import itertools
import json
import logging
import os
import random
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

# The runtime helper: the copy shipped in the code directory as ``hetero_runtime`` (see the
# README), else the installed library. One import, one fallback.
try:
    import hetero_runtime as runtime
    from hetero_runtime import data
except ImportError:
    from hetero_constructs import runtime
    from hetero_constructs.runtime import data

log = logging.getLogger("hetero_training")

#: The script's own metrics, read from the line rank 0 writes after each epoch
#: (``epoch=N train_loss=L train_accuracy=A``): the app's ``metric_definitions``.
METRIC_DEFINITIONS = {
    "train_loss": r"epoch=[0-9]+ train_loss=([0-9]+\.[0-9]+)",
    "train_accuracy": r"epoch=[0-9]+ train_loss=\S+ train_accuracy=([0-9]+\.[0-9]+)",
}


@dataclass(frozen=True)
class Settings:
    """The example's knobs, read from the job's (user) hyperparameters."""

    epochs: int = 3
    batch_size: int = 64
    lr: float = 0.1
    seed: int = 0
    noise: float = 0.01
    num_samples: int = 2048
    data_port: int = data.DEFAULT_PORT
    data_workers: int = 2
    idle_timeout: float = 300.0
    connect_timeout: float = 600.0  # either group may start minutes after the other
    data_host_map: dict[str, str] = field(default_factory=dict)
    checkpoint_dir: str = ""  # default: <base>/checkpoints, i.e. /opt/ml/checkpoints
    checkpoint_every: int = 50
    hold_at_step: int = 0  # a drill's pause (see the module's docstring); 0: never

    @classmethod
    def from_hyperparameters(cls, hyperparameters: dict[str, Any]) -> Settings:
        known = {item.name: item for item in fields(cls)}
        values: dict[str, Any] = {}
        for name, value in hyperparameters.items():
            if name not in known:
                continue
            if name == "data_host_map":
                values[name] = {str(host): str(address) for host, address in dict(value).items()}
            else:
                values[name] = type(getattr(cls(), name))(value)
        return cls(**values)


def sagemaker_dir(variable: str, *default: str) -> Path:
    """A directory SageMaker names in ``variable``, else its default under the base dir."""
    return Path(os.environ.get(variable) or os.path.join(runtime.resolve_base_dir(), *default))


# -- data hosts --------------------------------------------------------------------------------


def load_rows(channel: Path, settings: Settings) -> list[list[float]]:
    """All rows (features..., label) of the CSV files in ``channel``, in file-name order.

    A header line is skipped. Without CSV files, a deterministic synthetic dataset is made.
    """
    files = sorted(channel.glob("*.csv")) if channel.is_dir() else []
    if not files:
        log.info("no CSV in %s: generating %d synthetic rows", channel, settings.num_samples)
        return synthetic_rows(settings.num_samples, settings.seed)
    rows: list[list[float]] = []
    for path in files:
        with path.open(newline="") as handle:
            for line_number, record in enumerate(csv.reader(handle), start=1):
                if not record:
                    continue
                try:
                    rows.append([float(value) for value in record])
                except ValueError:
                    if line_number == 1:
                        continue  # header
                    raise ValueError(f"{path}:{line_number}: not a numeric row: {record}") from None
    widths = {len(row) for row in rows}
    if len(widths) != 1 or widths.pop() < 2:
        raise ValueError(f"{channel}: every row needs the same number (>= 2) of columns")
    log.info("read %d rows from %d file(s) in %s", len(rows), len(files), channel)
    return rows


def synthetic_rows(count: int, seed: int, features: int = 8) -> list[list[float]]:
    """Linearly separable-ish data: label = [w . x + noise > 0], features on mixed scales."""
    rng = random.Random(seed)
    weights = [rng.uniform(-1, 1) for _ in range(features)]
    scales = [10.0**exponent for exponent in range(-1, features - 1)]
    rows = []
    for _ in range(count):
        x = [rng.gauss(0, 1) for _ in range(features)]
        label = float(sum(w * v for w, v in zip(weights, x, strict=True)) + rng.gauss(0, 0.1) > 0)
        rows.append([v * s for v, s in zip(x, scales, strict=True)] + [label])
    return rows


def shard_batches(
    shard: data.Shard, scaled: Any, labels: Any, stats: dict[str, Any], settings: Settings
) -> Iterator[dict[str, Any]]:
    """One shard's augmented batches: the rows ``shard.index, shard.index + shard.count, ...``,
    shuffled by ``(seed, epoch, shard)``, from batch ``shard.start`` on (a resumed rank has the
    batches before it: they are not made again)."""
    import numpy as np

    ids = np.arange(shard.index, len(scaled), shard.count)
    np.random.default_rng([settings.seed, shard.epoch, shard.index]).shuffle(ids)
    starts = range(0, len(ids), settings.batch_size)
    if shard.start:
        log.info(
            "resuming rank %d's shard %d of epoch %d at batch %d of %d (%d batches skipped, "
            "not made)",
            shard.rank,
            shard.index,
            shard.epoch,
            shard.start,
            len(starts),
            min(shard.start, len(starts)),
        )
    for number in range(shard.start, len(starts)):
        chunk = ids[starts[number] : starts[number] + settings.batch_size]
        # Each batch's noise from a generator of its own: a resumed shard's batches are the
        # ones the whole shard would have had, its skipped batches unmade.
        rng = np.random.default_rng([settings.seed, shard.epoch, shard.index, number])
        noise = rng.normal(0, settings.noise, (len(chunk), scaled.shape[1]))
        yield {
            "x": (scaled[chunk] + noise).astype(np.float32),
            "y": labels[chunk].astype(np.float32),
            "ids": chunk,
            "stats": stats,
        }


def run_data_host(env: runtime.TrainingEnvironment, settings: Settings) -> int:
    """Normalise the training channel and stream augmented batches until the trainers end."""
    import numpy as np

    rows = np.asarray(
        load_rows(sagemaker_dir("SM_CHANNEL_TRAIN", "input", "data", "train"), settings),
        dtype=np.float64,
    )
    # The channel is replicated to every data host (FullyReplicated, the default): every host
    # normalises with the statistics of all rows, and the shards the trainers ask for
    # partition the row numbers across all hosts and workers.
    features, labels = rows[:, :-1], rows[:, -1]
    mean, std = features.mean(axis=0), features.std(axis=0)
    std[std == 0] = 1.0
    scaled = ((features - mean) / std).astype(np.float32)
    stats = {"feature_mean": mean.tolist(), "feature_std": std.tolist()}

    runtime.MetricsReporter.for_environment(env)  # this host's start line

    def reported(shard: data.Shard) -> Iterator[dict[str, Any]]:
        # In the worker process: this stream's rate, written when the trainer has taken it all.
        reporter = runtime.MetricsReporter.for_environment(env, announce=False)
        try:
            for batch in shard_batches(shard, scaled, labels, stats, settings):
                yield batch
                reporter.record(samples=len(batch["ids"]))
        finally:
            reporter.close()

    log.info("serving %d rows with %d workers", len(scaled), settings.data_workers)
    try:
        data.serve(
            reported,
            workers=settings.data_workers,
            port=settings.data_port,
            addresses=settings.data_host_map or None,
            idle_timeout=settings.idle_timeout,
            startup_timeout=settings.connect_timeout,
        )
    except data.DataPlaneError as error:
        log.error("data plane stopped: %s", error)
        return 1
    log.info("every trainer is done; exiting")
    return 0


# -- trainers ----------------------------------------------------------------------------------


def hold(rank: int, epoch: int, steps: int) -> None:
    """``hold_at_step``: the rank's checkpoint is saved; wait here until the job is stopped
    (SIGTERM) or its hosts are killed (a spot reclaim), never returning."""
    log.warning(
        "rank %d holds after step %d (epoch %d), as hold_at_step says; its checkpoint is saved",
        rank,
        steps,
        epoch,
    )
    threading.Event().wait()


def run_trainer(env: runtime.TrainingEnvironment, settings: Settings) -> int:
    """One rank of the distributed job: train on the streamed batches, rank 0 saves."""
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.join import Join
    from torch.nn.parallel import DistributedDataParallel

    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")  # torchrun set RANK, WORLD_SIZE...
    rank, world_size = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if use_cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")

    remote = data.RemoteBatches(
        env.data_hosts,
        port=settings.data_port,
        addresses=settings.data_host_map or None,
        seed=settings.seed,
        epochs=settings.epochs,
        idle_timeout=settings.idle_timeout,
        connect_timeout=settings.connect_timeout,
        array_type="torch",
    )
    reporter = runtime.MetricsReporter.for_environment(env)  # this host's start line
    model: torch.nn.Module | None = None
    ddp = optimiser = None
    loss_fn = torch.nn.BCEWithLogitsLoss()
    ids_per_epoch: list[list[int]] = []
    stats: dict[str, Any] = {}
    samples_seen, correct, steps, loss = 0, 0, 0, torch.tensor(0.0)
    checkpoint_path = (
        Path(settings.checkpoint_dir or os.path.join(runtime.resolve_base_dir(), "checkpoints"))
        / f"rank-{rank}.pt"
    )
    restored: dict[str, Any] | None = None
    if checkpoint_path.exists():
        restored = torch.load(checkpoint_path, weights_only=True)
        remote.load_state_dict(restored["data"])  # the epoch goes on where it stopped
        ids_per_epoch, stats = restored["ids_per_epoch"], restored["stats"]
        samples_seen, correct = restored["samples_seen"], restored["correct"]
        steps = restored.get("steps", 0)
        log.info(
            "rank %d resumes from %s at epoch %d after step %d (%d samples of that epoch "
            "trained before)",
            rank,
            checkpoint_path,
            remote.next_epoch,
            steps,
            len(ids_per_epoch[remote.next_epoch]) if len(ids_per_epoch) > remote.next_epoch else 0,
        )

    def make_model(features: int) -> tuple[Any, Any, Any]:
        torch.manual_seed(settings.seed)  # identical initial weights on every rank
        model = torch.nn.Linear(features, 1).to(device)
        ddp = DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
        optimiser = torch.optim.SGD(ddp.parameters(), lr=settings.lr)
        if restored is not None:
            model.load_state_dict(restored["model"])
            optimiser.load_state_dict(restored["optimiser"])
        return model, ddp, optimiser

    def save_checkpoint(model: Any, optimiser: Any) -> None:
        checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        partial = checkpoint_path.with_suffix(".partial")
        torch.save(
            {
                "model": model.state_dict(),
                "optimiser": optimiser.state_dict(),
                "data": remote.state_dict(),  # where this rank stands in the epoch
                "ids_per_epoch": ids_per_epoch,
                "stats": stats,
                "samples_seen": samples_seen,
                "correct": correct,
                "steps": steps,
            },
            partial,
        )
        os.replace(partial, checkpoint_path)

    if restored is not None:
        model, ddp, optimiser = make_model(restored["model"]["weight"].shape[1])
    with remote:  # an exception aborts: the data hosts stop at once instead of idling
        for epoch in range(remote.next_epoch, settings.epochs):
            if len(ids_per_epoch) <= epoch:
                ids_per_epoch.append([])
            ids = ids_per_epoch[epoch]
            # Ranks may get different numbers of batches; Join lets the early finishers
            # shadow the gradient all-reduces of the others.
            batches = iter(remote)
            first = next(batches, None)
            if model is None:
                if first is None:
                    raise RuntimeError("this rank got no data; use fewer ranks or more rows")
                model, ddp, optimiser = make_model(first["x"].shape[1])
            assert ddp is not None and optimiser is not None
            # This epoch's loss sum, right predictions and samples (before each step).
            epoch_totals = torch.zeros(3, dtype=torch.float64)
            with Join([ddp]):
                # Streamed, not listed: a checkpoint's data state then counts only the
                # batches this loop has taken.
                epoch_batches = itertools.chain([first], batches) if first is not None else []
                for step, batch in enumerate(epoch_batches):
                    x, y = batch["x"].to(device), batch["y"].to(device)
                    optimiser.zero_grad()
                    logits = ddp(x).squeeze(1)
                    loss = loss_fn(logits, y)
                    loss.backward()
                    optimiser.step()
                    samples_seen += len(y)
                    steps += 1
                    ids += batch["ids"].tolist()
                    stats = batch["stats"]
                    right = int(((logits > 0).float() == y).sum().item())
                    epoch_totals += torch.tensor([loss.item() * len(y), right, len(y)])
                    if epoch == settings.epochs - 1:
                        correct += right
                    if (step + 1) % settings.checkpoint_every == 0 or (
                        steps == settings.hold_at_step
                    ):
                        save_checkpoint(model, optimiser)
                    if steps == settings.hold_at_step:
                        hold(rank, epoch, steps)
            save_checkpoint(model, optimiser)  # between epochs: a restart begins the next one
            log.info("rank %d epoch %d: %d samples; %s", rank, epoch, len(ids), remote.stats())
            reporter.write_stats(remote.stats())
            remote.reset_stats()
            dist.all_reduce(epoch_totals)  # every rank's batches of this epoch
            if rank == 0:
                loss_sum, right_sum, count = epoch_totals.tolist()
                log.info(
                    "epoch=%d train_loss=%.4f train_accuracy=%.4f",
                    epoch,
                    loss_sum / max(count, 1),
                    right_sum / max(count, 1),
                )
    assert model is not None

    report = {"rank": rank, "ids": ids_per_epoch, "seen": samples_seen, "correct": correct}
    reports: list[Any] = [None] * world_size
    dist.all_gather_object(reports, report)
    if rank == 0:
        model_dir = sagemaker_dir("SM_MODEL_DIR", "model")
        model_dir.mkdir(parents=True, exist_ok=True)
        torch.save({"state_dict": model.state_dict(), **stats}, model_dir / "model.pt")
        per_epoch = [
            sorted(i for r in reports for i in r["ids"][e]) for e in range(settings.epochs)
        ]
        metrics = {
            "world_size": world_size,
            "epochs": settings.epochs,
            "ids_per_epoch": per_epoch,
            "ids_per_rank": {r["rank"]: sorted(r["ids"][0]) for r in reports},
            # Each rank's row ids in the order it trained on them, per epoch (across restarts).
            "ids_in_order": {r["rank"]: r["ids"] for r in reports},
            "samples_seen": sum(r["seen"] for r in reports),
            "train_accuracy": sum(r["correct"] for r in reports) / max(len(per_epoch[-1]), 1),
            "last_batch_loss_rank0": loss.item(),
        }
        (model_dir / "metrics.json").write_text(json.dumps(metrics))
        log.info("wrote %s: accuracy %.3f", model_dir, metrics["train_accuracy"])
    # DDP sits in a reference cycle that keeps the process group's C++ side (gloo threads
    # included) alive until a garbage collection. Collect it now: left to interpreter exit,
    # tearing those threads down can abort the process (SIGABRT, "terminate called without an
    # active exception").
    del ddp, optimiser
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
    return 0


# -- entry point -------------------------------------------------------------------------------


def main() -> int:
    env = runtime.TrainingEnvironment()
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s %(levelname)s [{env.current_host}/{env.role}] %(message)s",
    )
    log.info("runtime helper %s; environment %s", runtime.__name__, json.dumps(env.to_dict()))
    settings = Settings.from_hyperparameters(env.hyperparameters)
    if env.is_hetero and runtime.DISTRIBUTION_GROUPS_KEY not in env.additional_framework_parameters:
        log.error(
            "%s is not set: every group would start its own distributed world. Set "
            "distribution={'torch_distributed': {'enabled': True}, 'instance_groups': [gpu]}.",
            runtime.DISTRIBUTION_GROUPS_KEY,
        )
        return 2
    if env.role == runtime.Role.DATA and env.current_host in env.data_hosts:
        return run_data_host(env, settings)
    if env.role == runtime.Role.DISTRIBUTED and env.data_hosts:
        return run_trainer(env, settings)
    log.error("this example needs a data group and a distribution group (role %s)", env.role)
    return 2


if __name__ == "__main__":
    sys.exit(main())
