"""Local smoke test of ``examples/hetero_training``: both roles as processes on localhost.

The simulated job has two instance groups, as a SageMaker request from the construct library
would describe it: ``data`` (2 CPU hosts) and ``gpu`` (2 hosts, CPU-only torch here). Each host
gets its own base directory with ``input/config/resourceconfig.json`` and
``hyperparameters.json``. The code directory holds ``train.py`` and the runtime helper copied
as ``hetero_runtime``, as a packaged ``source_dir`` would. Data hosts run ``python train.py``;
each trainer host runs ``torchrun`` with the node rank and master the runtime helper derives,
as the PyTorch toolkit does. The test then checks that training consumed exactly the shards,
checksums and sample count the data hosts produced.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import hetero_constructs.runtime as runtime_package
from hetero_constructs.runtime import Role, TrainingEnvironment

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "hetero_training"
TIMEOUT = 50.0  # seconds for the whole job

GROUPS = [
    {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "hosts": ["algo-3", "algo-1"]},
    {"instance_group_name": "gpu", "instance_type": "ml.g5.xlarge", "hosts": ["algo-4", "algo-2"]},
]
ROWS_PER_FILE = (170, 130)
EPOCHS = 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_dataset(channel: Path) -> None:
    """Two CSV files with a header; label = [x0 - 2 x1 + x2 / 10 > 0] (separable)."""
    channel.mkdir(parents=True)
    rng = random.Random(7)
    for index, count in enumerate(ROWS_PER_FILE):
        with (channel / f"part-{index}.csv").open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["x0", "x1", "x2", "x3", "label"])
            for _ in range(count):
                x = [rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 10), rng.gauss(5, 3)]
                writer.writerow([*x, int(x[0] - 2 * x[1] + x[2] / 10 > 0)])


def host_config(host: str) -> dict[str, Any]:
    group = next(group for group in GROUPS if host in group["hosts"])
    return {
        "current_host": host,
        "current_instance_type": group["instance_type"],
        "current_group_name": group["instance_group_name"],
        "hosts": sorted(h for g in GROUPS for h in g["hosts"]),
        "instance_groups": GROUPS,
        "network_interface_name": "eth0",
    }


def hyperparameters(data_ports: dict[str, int]) -> dict[str, str]:
    """hyperparameters.json as the SageMaker request carries it (JSON-encoded values)."""
    values: dict[str, Any] = {
        "sagemaker_program": "train.py",
        "sagemaker_submit_directory": "s3://bucket/job/source/sourcedir.tar.gz",
        "sagemaker_container_log_level": 20,
        "sagemaker_job_name": "hetero-smoke",
        "sagemaker_region": "us-west-2",
        "sagemaker_torch_distributed_enabled": True,
        "sagemaker_instance_type": "ml.g5.xlarge",
        "sagemaker_distribution_instance_groups": ["gpu"],
        "epochs": EPOCHS,
        "batch_size": 16,
        "lr": 0.5,
        # 150 rows per data host -> shards of 48, 48, 48, 6 rows: the two ranks get 192 and 108
        # samples, so DDP runs with uneven inputs (12 vs 7 batches per epoch).
        "shard_size": 48,
        "data_host_map": {host: f"127.0.0.1:{port}" for host, port in data_ports.items()},
        "data_bind_address": "127.0.0.1",
        "serve_timeout": TIMEOUT + 10,
        "data_wait_timeout": TIMEOUT,
    }
    return {key: json.dumps(value) for key, value in values.items()}


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill the process group this test started for ``process`` (torchrun has children)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def test_data_group_feeds_the_distributed_group(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the example trains with PyTorch; torch is not installed")
    import torch
    import torch.distributed

    if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
        pytest.skip("this torch build has no torch.distributed gloo backend")

    code_dir = tmp_path / "code"
    code_dir.mkdir()
    shutil.copy(EXAMPLE / "train.py", code_dir / "train.py")
    shutil.copytree(
        Path(runtime_package.__file__).parent,
        code_dir / "hetero_runtime",
        ignore=shutil.ignore_patterns("__pycache__"),
    )

    data_hosts = GROUPS[0]["hosts"]
    data_ports = {host: free_port() for host in data_hosts}
    master_port = free_port()
    raw_hyperparameters = json.dumps(hyperparameters(data_ports))

    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs: dict[str, Path] = {}
    envs: dict[str, TrainingEnvironment] = {}
    try:
        for host in sorted(h for g in GROUPS for h in g["hosts"]):
            base = tmp_path / "hosts" / host
            (base / "input" / "config").mkdir(parents=True)
            (base / "input" / "config" / "resourceconfig.json").write_text(
                json.dumps(host_config(host))
            )
            (base / "input" / "config" / "hyperparameters.json").write_text(raw_hyperparameters)
            env = envs[host] = TrainingEnvironment(base_dir=base)
            process_env = {
                **os.environ,
                "SAGEMAKER_BASE_DIR": str(base),
                "SM_MODEL_DIR": str(base / "model"),
                "SM_OUTPUT_DATA_DIR": str(base / "output" / "data"),
                "OMP_NUM_THREADS": "1",
                "PYTHONUNBUFFERED": "1",
            }
            process_env.pop("PYTHONPATH", None)
            if env.role is Role.DATA:
                write_dataset(base / "input" / "data" / "train")
                if host == data_hosts[0]:  # the other one finds the channel under the base dir
                    process_env["SM_CHANNEL_TRAIN"] = str(base / "input" / "data" / "train")
                command = [sys.executable, "train.py"]
            else:
                assert env.role is Role.DISTRIBUTED and env.node_rank is not None
                command = [
                    sys.executable,
                    "-m",
                    "torch.distributed.run",
                    f"--nnodes={len(env.distribution_hosts)}",
                    "--nproc_per_node=1",
                    f"--node_rank={env.node_rank}",
                    "--master_addr=127.0.0.1",  # stands in for env.master_hostname
                    f"--master_port={master_port}",
                    "train.py",
                ]
            logs[host] = tmp_path / f"{host}.log"
            with logs[host].open("wb") as log_file:
                processes[host] = subprocess.Popen(
                    command,
                    cwd=code_dir,
                    env=process_env,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group, killed as a whole
                )

        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            codes = {host: process.poll() for host, process in processes.items()}
            if any(code not in (None, 0) for code in codes.values()):
                break
            if all(code == 0 for code in codes.values()):
                break
            time.sleep(0.2)
        codes = {host: process.poll() for host, process in processes.items()}
    finally:
        for process in processes.values():
            stop(process)

    def report() -> str:
        return "\n".join(
            f"--- {host} ---\n{path.read_text()[-3000:]}" for host, path in logs.items()
        )

    assert all(code == 0 for code in codes.values()), f"exit codes {codes}\n{report()}"

    # Every host ran with the bundled copy of the runtime helper.
    for host in processes:
        assert "runtime helper hetero_runtime;" in logs[host].read_text(), report()

    produced = []
    for host in data_hosts:
        manifest = json.loads(
            (tmp_path / "hosts" / host / "output" / "data" / f"produced-{host}.json").read_text()
        )
        produced += [(shard["id"], shard["sha256"], shard["rows"]) for shard in manifest["shards"]]
    total_rows = sum(ROWS_PER_FILE)
    assert sum(rows for _, _, rows in produced) == total_rows

    master = GROUPS[1]["hosts"][0]
    assert envs[master].is_master and envs[master].node_rank == 0
    metrics = json.loads((tmp_path / "hosts" / master / "model" / "metrics.json").read_text())
    consumed = [(shard["id"], shard["sha256"], shard["rows"]) for shard in metrics["shards"]]
    assert sorted(consumed) == sorted(produced)  # every shard once, byte for byte
    assert {shard["rank"] for shard in metrics["shards"]} == {0, 1}
    assert metrics["world_size"] == 2
    assert metrics["samples_consumed"] == total_rows
    assert metrics["samples_seen"] == EPOCHS * total_rows
    assert metrics["train_accuracy"] > 0.8, metrics

    state = torch.load(tmp_path / "hosts" / master / "model" / "model.pt", weights_only=True)
    assert state["state_dict"]["weight"].shape == (1, 4)
    assert not (tmp_path / "hosts" / GROUPS[1]["hosts"][1] / "model" / "metrics.json").exists()
