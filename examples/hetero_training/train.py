"""Heterogeneous-cluster training: CPU hosts prepare and serve the data, GPU hosts train.

SageMaker runs this same script on every host of every instance group. The runtime helper
tells each host what it is for:

* ``Role.DATA`` (the CPU group; the container runs ``python train.py``): read the ``train``
  channel, normalise the features, cut this host's rows into shards and serve them over HTTP
  until the trainers report they are done.
* ``Role.DISTRIBUTED`` (the group named in ``sagemaker_distribution_instance_groups``; the
  container runs ``torchrun ... train.py``): fetch the shards from the data hosts, train a
  logistic-regression model with ``DistributedDataParallel``, and on rank 0 write the model and
  ``metrics.json`` to ``SM_MODEL_DIR``, then tell the data hosts to stop.

Hyperparameters (all optional): ``epochs``, ``batch_size``, ``lr``, ``seed``, ``shard_size``
(rows per shard), ``num_samples`` (size of the synthetic dataset used when the channel holds no
CSV), ``data_port`` (port the data hosts serve on), ``data_host_map`` (JSON object host ->
``"address:port"``, overriding ``<host>:<data_port>``; local runs map ``algo-1`` to
``127.0.0.1``), ``data_bind_address``, ``serve_timeout`` (seconds a data host waits for the
trainers, default: no limit) and ``data_wait_timeout`` (seconds a trainer retries a data host).
"""

from __future__ import annotations

import csv
import gc
import hashlib
import io
import json
import logging
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# The runtime helper: the copy shipped in the code directory as ``hetero_runtime`` (see the
# README), else the installed library. One import, one fallback.
try:
    import hetero_runtime as runtime
except ImportError:
    from hetero_constructs import runtime

log = logging.getLogger("hetero_training")


@dataclass(frozen=True)
class Settings:
    """The example's knobs, read from the job's (user) hyperparameters."""

    epochs: int = 3
    batch_size: int = 64
    lr: float = 0.1
    seed: int = 0
    shard_size: int = 128
    num_samples: int = 2048
    data_port: int = 8470
    data_host_map: dict[str, str] = field(default_factory=dict)
    data_bind_address: str = "0.0.0.0"
    serve_timeout: float = 0.0  # <= 0: no limit (the job's max_run still applies)
    data_wait_timeout: float = 600.0

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

    def endpoint(self, host: str) -> tuple[str, int]:
        """Where ``host`` serves its shards: ``data_host_map[host]``, else ``host:data_port``."""
        address = self.data_host_map.get(host)
        if address is None:
            return host, self.data_port
        name, _, port = address.rpartition(":")
        return name, int(port)


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


def normalise(rows: list[list[float]]) -> tuple[list[list[float]], list[float], list[float]]:
    """Scale every feature column to mean 0 / std 1 (statistics over all rows)."""
    columns = list(zip(*(row[:-1] for row in rows), strict=True))
    mean = [sum(column) / len(column) for column in columns]
    std = [
        (sum((v - m) ** 2 for v in column) / len(column)) ** 0.5 or 1.0
        for column, m in zip(columns, mean, strict=True)
    ]
    scaled = [
        [(v - m) / s for v, m, s in zip(row[:-1], mean, std, strict=True)] + [row[-1]]
        for row in rows
    ]
    return scaled, mean, std


def make_shards(host: str, rows: list[list[float]], size: int) -> dict[str, bytes]:
    """Cut ``rows`` into CSV payloads of ``size`` rows, keyed by shard id."""
    shards = {}
    for index, start in enumerate(range(0, len(rows), size)):
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(
            [repr(value) for value in row] for row in rows[start : start + size]
        )
        shards[f"{host}-{index:04d}"] = buffer.getvalue().encode()
    return shards


def run_data_host(env: runtime.TrainingEnvironment, settings: Settings) -> int:
    """Preprocess this host's slice of the training channel and serve it until told to stop."""
    rows = load_rows(sagemaker_dir("SM_CHANNEL_TRAIN", "input", "data", "train"), settings)
    # The channel is replicated to every data host; each takes every n-th row, and all of
    # them normalise with the statistics of the whole dataset.
    scaled, mean, std = normalise(rows)
    position, count = env.data_hosts.index(env.current_host), len(env.data_hosts)
    shards = make_shards(env.current_host, scaled[position::count], settings.shard_size)
    manifest = {
        "host": env.current_host,
        "num_features": len(mean),
        "feature_mean": mean,
        "feature_std": std,
        "shards": [
            {"id": shard_id, "rows": payload.count(b"\n"), "sha256": sha256(payload)}
            for shard_id, payload in shards.items()
        ],
    }
    output_dir = sagemaker_dir("SM_OUTPUT_DATA_DIR", "output", "data")
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / f"produced-{env.current_host}.json").write_text(json.dumps(manifest, indent=1))
    log.info("prepared %d shards (%d rows)", len(shards), len(scaled[position::count]))

    done = threading.Event()
    manifest_body = json.dumps(manifest).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/manifest":
                self.reply(200, manifest_body, "application/json")
            elif self.path.startswith("/shards/") and self.path[8:] in shards:
                self.reply(200, shards[self.path[8:]], "text/csv")
            else:
                self.reply(404, b"not found\n", "text/plain")

        def do_POST(self) -> None:
            if self.path == "/done":
                self.reply(200, b"bye\n", "text/plain")
                done.set()
            else:
                self.reply(404, b"not found\n", "text/plain")

        def reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

    _, port = settings.endpoint(env.current_host)
    server = ThreadingHTTPServer((settings.data_bind_address, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log.info("serving on %s:%d until the trainers POST /done", settings.data_bind_address, port)
    finished = done.wait(settings.serve_timeout if settings.serve_timeout > 0 else None)
    server.shutdown()
    server.server_close()
    if not finished:
        log.error("no /done from the trainers within %.0f s; giving up", settings.serve_timeout)
        return 1
    log.info("trainers are done; exiting")
    return 0


# -- trainers ----------------------------------------------------------------------------------


def sha256(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def http(settings: Settings, host: str, path: str, *, post: bool = False) -> bytes:
    """One request to a data host, retried until ``data_wait_timeout`` (it may still be
    preprocessing, or its DNS name may not resolve yet)."""
    address, port = settings.endpoint(host)
    url = f"http://{address}:{port}{path}"
    deadline = time.monotonic() + settings.data_wait_timeout
    delay = 0.2
    while True:
        try:
            request = urllib.request.Request(url, data=b"" if post else None)
            with urllib.request.urlopen(request, timeout=30) as response:
                body: bytes = response.read()
                return body
        except urllib.error.HTTPError:
            raise  # the host answered: retrying will not help
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            if time.monotonic() + delay > deadline:
                raise RuntimeError(f"data host {host} ({url}) did not answer: {error}") from None
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def run_trainer(env: runtime.TrainingEnvironment, settings: Settings) -> int:
    """One rank of the distributed job: fetch shards, train, rank 0 saves and reports."""
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

    # Every rank reads the same manifests and so agrees on the catalogue; shard i goes to rank
    # i mod world_size.
    manifests = [json.loads(http(settings, host, "/manifest")) for host in env.data_hosts]
    catalogue = [(m["host"], shard) for m in manifests for shard in m["shards"]]
    features: list[list[float]] = []
    labels: list[float] = []
    read = []
    for host, shard in catalogue[rank::world_size]:
        payload = http(settings, host, f"/shards/{shard['id']}")
        digest = sha256(payload)
        rows = [[float(v) for v in record] for record in csv.reader(io.StringIO(payload.decode()))]
        if digest != shard["sha256"] or len(rows) != shard["rows"]:
            raise RuntimeError(f"shard {shard['id']} from {host} does not match its manifest")
        features += [row[:-1] for row in rows]
        labels += [row[-1] for row in rows]
        read.append({"id": shard["id"], "host": host, "rows": len(rows), "sha256": digest})
    num_features = manifests[0]["num_features"]
    x = torch.tensor(features, dtype=torch.float32).reshape(-1, num_features).to(device)
    y = torch.tensor(labels, dtype=torch.float32).to(device)
    log.info("rank %d/%d: %d samples from %d shards", rank, world_size, len(y), len(read))

    torch.manual_seed(settings.seed)  # identical initial weights on every rank
    model = torch.nn.Linear(num_features, 1).to(device)
    ddp = DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    optimiser = torch.optim.SGD(ddp.parameters(), lr=settings.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    order_rng = torch.Generator().manual_seed(settings.seed + rank)
    samples_seen, loss = 0, torch.tensor(0.0)
    # Ranks may hold different numbers of samples; Join lets the early finishers shadow the
    # gradient all-reduces of the others, so every sample is used.
    with Join([ddp]):
        for _ in range(settings.epochs):
            order = torch.randperm(len(y), generator=order_rng).to(device)
            for start in range(0, len(y), settings.batch_size):
                batch = order[start : start + settings.batch_size]
                optimiser.zero_grad()
                loss = loss_fn(ddp(x[batch]).squeeze(1), y[batch])
                loss.backward()
                optimiser.step()
                samples_seen += len(batch)

    with torch.no_grad():
        correct = ((model(x).squeeze(1) > 0).float() == y).sum().item() if len(y) else 0
    report = {"rank": rank, "shards": read, "samples_seen": samples_seen, "correct": correct}
    reports: list[Any] = [None] * world_size
    dist.all_gather_object(reports, report)

    if rank == 0:
        model_dir = sagemaker_dir("SM_MODEL_DIR", "model")
        model_dir.mkdir(parents=True, exist_ok=True)
        stats = {key: manifests[0][key] for key in ("feature_mean", "feature_std")}
        torch.save({"state_dict": model.state_dict(), **stats}, model_dir / "model.pt")
        shards = sorted(
            ({**shard, "rank": r["rank"]} for r in reports for shard in r["shards"]),
            key=lambda shard: shard["id"],
        )
        consumed = sum(shard["rows"] for shard in shards)
        metrics = {
            "world_size": world_size,
            "epochs": settings.epochs,
            "samples_consumed": consumed,
            "samples_seen": sum(r["samples_seen"] for r in reports),
            "train_accuracy": sum(r["correct"] for r in reports) / max(consumed, 1),
            "last_batch_loss_rank0": loss.item(),
            "shards": shards,
            "shards_sha256": sha256("".join(s["sha256"] for s in shards).encode()),
        }
        (model_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
        log.info(
            "wrote %s: %d samples, accuracy %.3f", model_dir, consumed, metrics["train_accuracy"]
        )
        for host in env.data_hosts:
            http(settings, host, "/done", post=True)
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
