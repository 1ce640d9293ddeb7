"""Local runs of ``examples/hetero_training``: both roles as processes on localhost.

The simulated job has two instance groups, as a SageMaker request from the construct library
would describe it: ``data`` (2 CPU hosts) and ``gpu`` (2 hosts, CPU-only torch here). Each host
gets its own base directory with ``input/config/resourceconfig.json`` and
``hyperparameters.json``. The code directory holds ``train.py`` and the runtime helper copied
as ``hetero_runtime``, as a packaged ``source_dir`` would. Data hosts run ``python train.py``
(``serve``); each trainer host runs ``torchrun`` with the node rank and master the runtime
helper derives, as the PyTorch toolkit does (``RemoteBatches``). The tests check that every
row reached exactly one rank per epoch and that the data hosts exit when the trainers finish,
crash (after ``idle_timeout``) or lose a data host (the trainers fail naming it).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import random
import re
import runpy
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
from hetero_constructs.runtime.metrics import DATA_WAIT_FRACTION, SAMPLES_PER_SECOND, metric_regex

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "hetero_training"
TIMEOUT = 150.0  # seconds for the whole job (torchrun starts slowly on a loaded machine)
SECRET = "smoke-test-secret-" + "9" * 32
#: The hosts' idle_timeout: long, so that no host of a job that runs is taken for gone while a
#: loaded machine holds it up (it also bounds each trainer's handshake).
IDLE = 60.0
#: The idle_timeout of the tests whose behaviour hangs on it (a data host's exit after the
#: trainers crash; the trainers' notice of a data host killed between epochs, which comes after
#: it and 30 s more): short, yet a heartbeat (every quarter of it) a few seconds late is still in
#: time.
IDLE_UNDER_TEST = 8.0

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


def hyperparameters(data_ports: dict[str, int], epochs: int, **extra: Any) -> dict[str, str]:
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
        "epochs": epochs,
        "batch_size": 16,
        "lr": 0.5,
        "data_workers": 2,
        "idle_timeout": IDLE,
        "connect_timeout": TIMEOUT,
        "data_host_map": {host: f"127.0.0.1:{port}" for host, port in data_ports.items()},
        **extra,
    }
    return {key: json.dumps(value) for key, value in values.items()}


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (torchrun starts its workers in sessions of their own)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            children = [int(child) for child in handle.read().split()]
    except OSError:
        return []
    return [grand for child in children for grand in [child, *descendants(child)]]


def process_tree(process: subprocess.Popen[bytes]) -> list[int]:
    """``process`` and every process below it, the lowest first."""
    return [*descendants(process.pid), process.pid]


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process`` and every process below it, as a host that crashes would lose them."""
    if process.poll() is None:
        for pid in process_tree(process):
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


class Job:
    """The simulated job's hosts as process groups, with their logs and exit times."""

    def __init__(self, tmp_path: Path, epochs: int, **extra: Any) -> None:
        pytest.importorskip("torch", reason="the example trains with PyTorch")
        import torch.distributed

        if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
            pytest.skip("this torch build has no torch.distributed gloo backend")
        self.tmp_path = tmp_path
        self.code_dir = tmp_path / "code"
        self.code_dir.mkdir()
        shutil.copy(EXAMPLE / "train.py", self.code_dir / "train.py")
        shutil.copytree(
            Path(runtime_package.__file__).parent,
            self.code_dir / "hetero_runtime",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        self.data_hosts: list[str] = GROUPS[0]["hosts"]
        self.trainer_hosts: list[str] = GROUPS[1]["hosts"]
        self.data_ports = {host: free_port() for host in self.data_hosts}
        self.raw_hyperparameters = json.dumps(hyperparameters(self.data_ports, epochs, **extra))
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path] = {}
        self.envs: dict[str, TrainingEnvironment] = {}
        self.ended: dict[str, float] = {}

    def start(self) -> None:
        master_port = free_port()
        for host in sorted(h for g in GROUPS for h in g["hosts"]):
            base = self.tmp_path / "hosts" / host
            (base / "input" / "config").mkdir(parents=True)
            (base / "input" / "config" / "resourceconfig.json").write_text(
                json.dumps(host_config(host))
            )
            (base / "input" / "config" / "hyperparameters.json").write_text(
                self.raw_hyperparameters
            )
            env = self.envs[host] = TrainingEnvironment(base_dir=base)
            process_env = {
                **os.environ,
                "SAGEMAKER_BASE_DIR": str(base),
                "SM_MODEL_DIR": str(base / "model"),
                "SM_OUTPUT_DATA_DIR": str(base / "output" / "data"),
                "OMP_NUM_THREADS": "1",
                "PYTHONUNBUFFERED": "1",
                "HETERO_DATA_SECRET": SECRET,  # the submit Lambda sets one per job
            }
            process_env.pop("PYTHONPATH", None)
            if env.role is Role.DATA:
                write_dataset(base / "input" / "data" / "train")
                if host == self.data_hosts[0]:  # the other finds the channel under the base dir
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
            self.logs[host] = self.tmp_path / f"{host}.log"
            with self.logs[host].open("wb") as log_file:
                self.processes[host] = subprocess.Popen(
                    command,
                    cwd=self.code_dir,
                    env=process_env,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group, killed as a whole
                )

    def poll(self) -> dict[str, int | None]:
        codes = {host: process.poll() for host, process in self.processes.items()}
        for host, code in codes.items():
            if code is not None:
                self.ended.setdefault(host, time.monotonic())
        return codes

    def wait(
        self, hosts: list[str], timeout: float = TIMEOUT, *, every: bool = False
    ) -> dict[str, int | None]:
        """Exit codes once ``hosts`` have all exited, or one failed (or the timeout passed);
        ``every``: once all have exited, failed or not (or the timeout passed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            codes = self.poll()
            if all(codes[host] is not None for host in hosts):
                break
            if not every and any(codes[host] not in (None, 0) for host in hosts):
                time.sleep(1)  # let the others end too, for the report
                break
            time.sleep(0.1)
        return self.poll()

    def wait_for_log(self, host: str, text: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.logs[host].read_text():
            assert time.monotonic() < deadline, f"{host} never logged {text!r}\n{self.report()}"
            assert self.processes[host].poll() is None, f"{host} ended\n{self.report()}"
            time.sleep(0.1)

    def kill(self, host: str) -> float:
        """Kill ``host``; the time the kill was sent (reaping it may take a while under load)."""
        sent = time.monotonic()
        stop(self.processes[host])
        return sent

    def crash(self, hosts: list[str]) -> float:
        """Kill ``hosts`` together, so that none outlives another and reports its death.

        Every process is frozen (SIGSTOP) before any is killed: a signal that is pending is
        taken before the process runs another instruction of its own, so a survivor cannot
        see its peer's connection reset and send the data hosts an abort in between.
        """
        sent = time.monotonic()
        for pid in [pid for host in hosts for pid in process_tree(self.processes[host])]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        for host in hosts:
            stop(self.processes[host])
        return sent

    def stop(self) -> None:
        for process in self.processes.values():
            stop(process)

    def report(self) -> str:
        return "\n".join(
            f"--- {host} ---\n{path.read_text()[-3000:]}" for host, path in self.logs.items()
        )


def test_data_group_feeds_the_distributed_group(tmp_path: Path) -> None:
    job = Job(tmp_path, epochs=EPOCHS)
    try:
        job.start()
        codes = job.wait(list(job.processes))
    finally:
        job.stop()
    assert all(code == 0 for code in codes.values()), f"exit codes {codes}\n{job.report()}"

    # Every host ran with the bundled copy of the runtime helper.
    for host in job.processes:
        assert "runtime helper hetero_runtime;" in job.logs[host].read_text(), job.report()
    # The data hosts ended when the trainers did (2 s on an idle machine; slack for load).
    trainers_done = max(job.ended[host] for host in job.trainer_hosts)
    assert all(job.ended[host] - trainers_done < 5 for host in job.data_hosts), job.ended

    import torch

    master = job.trainer_hosts[0]
    assert job.envs[master].is_master and job.envs[master].node_rank == 0
    metrics = json.loads((tmp_path / "hosts" / master / "model" / "metrics.json").read_text())
    total_rows = sum(ROWS_PER_FILE)
    # Every row reached exactly one rank in every epoch; both ranks got a share.
    assert metrics["ids_per_epoch"] == [list(range(total_rows))] * EPOCHS
    assert all(len(ids) > 100 for ids in metrics["ids_per_rank"].values())
    assert metrics["world_size"] == 2
    assert metrics["samples_seen"] == EPOCHS * total_rows
    assert metrics["train_accuracy"] > 0.8, metrics

    # Every metric definition of the job reads lines the hosts really wrote: the script's own
    # (their last values are the model's), and each group's throughput and data wait.
    logs = {host: job.logs[host].read_text() for host in job.processes}
    script = runpy.run_path(str(EXAMPLE / "train.py"), run_name="example_train")
    own = {name: re.compile(regex) for name, regex in script["METRIC_DEFINITIONS"].items()}
    values = {
        name: [m.group(1) for m in regex.finditer(logs[master])] for name, regex in own.items()
    }
    assert all(len(found) == EPOCHS for found in values.values()), values
    assert float(values["train_accuracy"][-1]) == round(metrics["train_accuracy"], 4), values
    for group, hosts in (("data", job.data_hosts), ("gpu", job.trainer_hosts)):
        numbers = [SAMPLES_PER_SECOND] + ([DATA_WAIT_FRACTION] if group == "gpu" else [])
        for number in numbers:
            regex = re.compile(metric_regex(group, number))
            assert all(regex.search(logs[host]) for host in hosts), (group, number)

    state = torch.load(tmp_path / "hosts" / master / "model" / "model.pt", weights_only=True)
    assert state["state_dict"]["weight"].shape == (1, 4)
    assert len(state["feature_mean"]) == 4
    assert not (tmp_path / "hosts" / job.trainer_hosts[1] / "model" / "metrics.json").exists()


def test_a_restarted_job_goes_on_from_its_checkpoints(tmp_path: Path) -> None:
    """A job of 2 epochs, then the same job of 3 restarted on new hosts (as a retry would),
    then once more with nothing left: each goes on from the ranks' checkpoints (model,
    optimiser, progress and ``RemoteBatches.state_dict()``), and every host exits 0."""
    checkpoints = tmp_path / "checkpoints"  # what SageMaker restores from the checkpoint URI
    total_rows = sum(ROWS_PER_FILE)
    masters = []
    for name, epochs in (("first", 2), ("restarted", 3), ("nothing-left", 3)):
        (tmp_path / name).mkdir()
        job = Job(tmp_path / name, epochs, checkpoint_dir=str(checkpoints), checkpoint_every=3)
        try:
            job.start()
            codes = job.wait(list(job.processes))
        finally:
            job.stop()
        assert all(code == 0 for code in codes.values()), f"{name}: {codes}\n{job.report()}"
        trainers_done = max(job.ended[host] for host in job.trainer_hosts)
        assert all(job.ended[host] - trainers_done < 5 for host in job.data_hosts), job.ended
        master = job.trainer_hosts[0]
        masters.append(
            json.loads((tmp_path / name / "hosts" / master / "model" / "metrics.json").read_text())
        )
        if name != "first":
            log = job.logs[master].read_text()
            resumed_at = 2 if name == "restarted" else 3
            assert f"from {checkpoints / 'rank-0.pt'} at epoch {resumed_at}" in log, log[-3000:]
    assert sorted(os.listdir(checkpoints)) == ["rank-0.pt", "rank-1.pt"]
    for metrics, epochs in zip(masters, (2, 3, 3), strict=True):
        assert metrics["ids_per_epoch"] == [list(range(total_rows))] * epochs
        assert metrics["samples_seen"] == epochs * total_rows


def test_a_spot_reclaim_mid_epoch_loses_and_repeats_no_sample(tmp_path: Path) -> None:
    """Every host of a job is killed at once mid-epoch, as a spot reclaim kills them; the job
    restarted on new hosts goes on from the ranks' checkpoints (taken every step) and ends with
    every row seen exactly once in every epoch, the interrupted one included."""
    import torch

    checkpoints = tmp_path / "checkpoints"
    epochs, total_rows = 12, sum(ROWS_PER_FILE)
    extra = {"checkpoint_dir": str(checkpoints), "checkpoint_every": 1}
    (tmp_path / "first").mkdir()
    first = Job(tmp_path / "first", epochs, **extra)
    try:
        first.start()
        deadline = time.monotonic() + TIMEOUT
        while True:  # until rank 0 has checkpointed in the middle of an epoch
            assert time.monotonic() < deadline, f"no mid-epoch checkpoint\n{first.report()}"
            assert all(code is None for code in first.poll().values()), first.report()
            with contextlib.suppress(FileNotFoundError):
                saved = torch.load(checkpoints / "rank-0.pt", weights_only=True)
                if saved["data"]["consumed"]:
                    break
            time.sleep(0.02)
        first.crash(list(first.processes))
    finally:
        first.stop()
    interrupted = [
        torch.load(checkpoints / f"rank-{rank}.pt", weights_only=True)["data"] for rank in (0, 1)
    ]
    assert interrupted[0]["epoch"] < epochs - 1, "the job ended before the reclaim"

    (tmp_path / "restarted").mkdir()
    restarted = Job(tmp_path / "restarted", epochs, **extra)
    try:
        restarted.start()
        codes = restarted.wait(list(restarted.processes))
    finally:
        restarted.stop()
    assert all(code == 0 for code in codes.values()), f"{codes}\n{restarted.report()}"
    master = restarted.trainer_hosts[0]
    assert "resumes from" in restarted.logs[master].read_text()
    model_dir = tmp_path / "restarted" / "hosts" / master / "model"
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["ids_per_epoch"] == [list(range(total_rows))] * epochs, interrupted
    assert metrics["samples_seen"] == epochs * total_rows


def test_data_hosts_exit_non_zero_after_idle_timeout_when_the_trainers_crash(
    tmp_path: Path,
) -> None:
    job = Job(tmp_path, epochs=100_000, idle_timeout=IDLE_UNDER_TEST)
    try:
        job.start()
        for host in job.trainer_hosts:
            job.wait_for_log(host, "epoch 1:")
        killed = job.crash(job.trainer_hosts)
        codes = job.wait(job.data_hosts, timeout=IDLE_UNDER_TEST + 60, every=True)
    finally:
        job.stop()
    assert all(codes[host] == 1 for host in job.data_hosts), f"{codes}\n{job.report()}"
    for host in job.data_hosts:
        # The idle rule ended it (counted from the trainers' last word, which under load may
        # come well before the kill: tests/runtime/test_data_serve.py times it exactly), and
        # not much later than idle_timeout after the kill.
        log = job.logs[host].read_text()
        assert f"spoke for {IDLE_UNDER_TEST:g} s" in log, log[-2000:]
        assert "training group is gone" in log, log[-2000:]
        assert job.ended[host] - killed <= IDLE_UNDER_TEST + 30, (killed, job.ended)


def test_trainers_fail_naming_the_data_host_that_crashed(tmp_path: Path) -> None:
    job = Job(tmp_path, epochs=100_000, idle_timeout=IDLE_UNDER_TEST)
    victim, survivor = job.data_hosts
    try:
        job.start()
        for host in job.trainer_hosts:
            job.wait_for_log(host, "epoch 1:")
        job.kill(victim)
        # Each trainer fails in its own time (one hears of the loss, the other of its peer).
        job.wait(job.trainer_hosts, timeout=TIMEOUT, every=True)
        codes = job.wait([survivor], timeout=60)
    finally:
        job.stop()
    assert all(codes[host] not in (None, 0) for host in job.trainer_hosts), job.report()
    logs = "".join(job.logs[host].read_text() for host in job.trainer_hosts)
    assert f"DataHostLost: data host {victim}" in logs, job.report()
    # The trainers aborted, so the other data host stopped at once (not after idle_timeout).
    assert codes[survivor] == 1 and "aborted" in job.logs[survivor].read_text(), job.report()


def test_the_example_dataset_is_what_its_script_writes(tmp_path: Path) -> None:
    """`make synth` uploads examples/datasets/train: the committed file is the script's output."""
    script = ROOT / "examples" / "datasets" / "make_train.py"
    subprocess.run([sys.executable, str(script), str(tmp_path)], check=True, timeout=60)
    committed = ROOT / "examples" / "datasets" / "train" / "part-0.csv"
    assert (tmp_path / "part-0.csv").read_bytes() == committed.read_bytes()
    assert sorted(p.name for p in committed.parent.iterdir()) == ["part-0.csv"]
