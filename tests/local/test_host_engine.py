"""The local-job engine on a temporary folder: each host as its container would run it."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.local.hosts import FolderStorage, LocalJob
from hetero_constructs.local.hosts.layout import cluster, lay_out, toolkit_environment
from tests.fixtures.host_jobs import (
    CODE_KEY,
    alive,
    channel,
    marked_pids,
    request,
    request_from_spec,
    sourcedir,
    wait_until,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux processes")
BUCKET = "bucket"


class Run:
    """A job of the tiny script, on a folder of buckets, its lines and stages collected."""

    def __init__(self, tmp: Path, **options: Any) -> None:
        self.storage = FolderStorage(tmp / "s3")
        self.storage.write(BUCKET, CODE_KEY, sourcedir())
        self.marks = tmp / "marks"
        self.marks.mkdir(exist_ok=True)
        self.lines: list[tuple[str, datetime, str]] = []
        self.stages: list[str] = []
        self.tmp = tmp
        self.options = options

    def job(self, name: str = "job", **options: Any) -> LocalJob:
        hps = {"marks": str(self.marks), **options.pop("hyperparameters", {})}
        return LocalJob(
            name,
            request(name, BUCKET, hyperparameters=hps, **{**self.options, **options}),
            self.storage,
            self.tmp / name,
            on_line=lambda host, at, line: self.lines.append((host, at, line)),
            on_stage=lambda status, at, message: self.stages.append(status),
            grace=5.0,
        )

    def text(self, host: str) -> list[str]:
        return [line for h, _, line in self.lines if h == host]


def finished(job: LocalJob) -> Any:
    job.start()
    assert job.wait(120), "the job did not end"
    assert job.ending is not None
    return job.ending


def test_each_host_sees_its_files_data_and_environment(tmp_path: Path) -> None:
    run = Run(tmp_path, groups=[("data", 1), ("train", 2)])
    for key in ("in/a.csv", "in/b.csv", "in/c.csv", "in/d.csv", "shared/x.txt"):
        run.storage.write(BUCKET, key, key.encode())
    ending = finished(
        run.job(
            hyperparameters={"epochs": 2, "e": "x"},
            channels=[
                channel("train", f"s3://{BUCKET}/in", groups=["train"], sharded=True),
                channel("all", f"s3://{BUCKET}/shared"),
            ],
            environment={"MY_SECRET": "s3cr3t"},
        )
    )
    assert ending.status == "Completed", ending.reason
    assert run.stages == ["Downloading", "Training", "Uploading"]
    model = run.storage.read(BUCKET, "output/job/output/model.tar.gz")
    assert model is not None
    with tarfile.open(fileobj=io.BytesIO(model)) as tar:
        seen = {m.name: json.load(tar.extractfile(m)) for m in tar.getmembers()}  # type: ignore[arg-type]
    assert sorted(seen) == ["algo-1.json", "algo-2.json", "algo-3.json"]
    one, two, three = (seen[f"algo-{n}.json"] for n in (1, 2, 3))
    # Channels only to their groups; sharded objects dealt over the group's hosts.
    assert one["data"] == {"all": ["x.txt"]}
    assert two["data"]["train"] + three["data"]["train"] == ["a.csv", "c.csv", "b.csv", "d.csv"]
    assert two["data"]["all"] == three["data"]["all"] == ["x.txt"]
    # The toolkit's variables and arguments, and the request's environment.
    env = two["env"]
    assert env["SM_CURRENT_HOST"] == "algo-2" and env["SM_CURRENT_INSTANCE_GROUP"] == "train"
    assert json.loads(env["SM_HOSTS"]) == ["algo-1", "algo-2", "algo-3"]
    assert json.loads(env["SM_CURRENT_INSTANCE_GROUP_HOSTS"]) == ["algo-2", "algo-3"]
    assert json.loads(env["SM_INSTANCE_GROUPS"]) == ["data", "train"]
    assert env["SM_IS_HETERO"] == "true" and env["SM_HP_EPOCHS"] == "2"
    assert json.loads(env["SM_CHANNELS"]) == ["all", "train"]
    assert env["MY_SECRET"] == "s3cr3t"
    assert two["argv"][:4] == ["-e", "x", "--epochs", "2"]
    addresses = json.loads(env["HETERO_DATA_ADDRESSES"])
    assert len(set(addresses.values())) == 3
    config = two["config"]
    assert config["resourceconfig.json"]["current_group_name"] == "train"
    assert config["hyperparameters.json"]["epochs"] == "2"
    assert config["inputdataconfig.json"]["train"]["S3DistributionType"] == "ShardedByS3Key"
    assert "train" not in one["config"]["inputdataconfig.json"]
    output = run.storage.read(BUCKET, "output/job/output/output.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(output or b"")) as tar:
        assert sorted(tar.getnames()) == ["algo-1.txt", "algo-2.txt", "algo-3.txt"]
    assert "loss=0.25" in run.text("algo-3")
    assert not [pid for pid in marked_pids(run.marks) if alive(pid)]


def test_the_environment_matches_the_sagemaker_training_toolkit(tmp_path: Path) -> None:
    """Each SM_ variable as the toolkit computes it from the same files (its own code)."""
    pytest.importorskip("sagemaker_training")
    hps = {k: json.dumps(v) for k, v in {"lr": 0.1, "layers": [1, 2], "sagemaker_program": "t.py",
           "sagemaker_distribution_instance_groups": ["gpu"], "name": "x"}.items()}  # fmt: skip
    req = request("env", BUCKET, groups=[("gpu", 2), ("data", 1)])
    hosts = cluster(req, tmp_path)
    config = {"train": {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated",
                        "RecordWrapperType": "None"}}  # fmt: skip
    host = hosts.host("algo-2")
    lay_out(host, hosts, hps, config)
    ours = toolkit_environment(host, hosts, hps, config, str(host.base))
    code = textwrap.dedent("""
        import json
        from sagemaker_training import environment
        print(json.dumps(environment.Environment().to_env_vars()))
    """)
    theirs = json.loads(
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "SAGEMAKER_BASE_DIR": str(host.base), "AWS_DEFAULT_REGION": "x"},
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    assert sorted(ours) == sorted(theirs)
    # Values that depend on this machine or the toolkit's own process are not compared.
    skip = {"SM_TRAINING_ENV", "SM_NUM_CPUS", "SM_NUM_GPUS", "SM_LOG_LEVEL", "SM_MODULE_DIR"}
    differing = {k: (ours[k], theirs[k]) for k in theirs if k not in skip and ours[k] != theirs[k]}
    assert not differing


def test_a_failing_host_fails_the_job_and_the_others_get_sigterm(tmp_path: Path) -> None:
    run = Run(tmp_path, groups=[("data", 1), ("train", 2)])
    ending = finished(run.job(hyperparameters={"mode": "fail-on", "group": "data"}))
    assert ending.status == "Failed"
    assert ending.reason == "AlgorithmError: algo-1 of data: loss is NaN"
    assert sorted(p.stem for p in run.marks.glob("*.sigterm")) == ["algo-2", "algo-3"]
    assert not [pid for pid in marked_pids(run.marks) if alive(pid)]


def test_without_a_failure_file_the_reason_is_the_exit_code_and_stderr(tmp_path: Path) -> None:
    run = Run(tmp_path)
    ending = finished(run.job(hyperparameters={"mode": "crash"}))
    assert ending.status == "Failed"
    assert ending.reason.startswith("AlgorithmError: algo-1: the script exited with code 3")
    assert ending.reason.endswith("about to crash")


def test_stop_sends_sigterm_and_ends_stopped(tmp_path: Path) -> None:
    run = Run(tmp_path, groups=[("train", 2)])
    job = run.job(hyperparameters={"mode": "wait"})
    job.start()
    wait_until(lambda: len(list(run.marks.glob("*.helper"))) == 2, what="both hosts running")
    job.stop()
    assert job.wait(60)
    assert job.ending is not None and (job.ending.status, job.ending.secondary) == (
        "Stopped",
        "Stopped",
    )
    assert sorted(p.stem for p in run.marks.glob("*.sigterm")) == ["algo-1", "algo-2"]
    assert not [pid for pid in marked_pids(run.marks) if alive(pid)]


def test_a_stop_ends_what_left_the_hosts_group(tmp_path: Path) -> None:
    """torchrun starts its workers in sessions of their own, out of reach of the SIGTERM to
    the host's process group: once the stopped script exits, they end with the job all the
    same (test_host_mpirun.py: when the script exits on its own, and when the job is killed)."""
    run = Run(tmp_path, groups=[("train", 2)])
    job = run.job(hyperparameters={"mode": "wait", "session": "new"})
    job.start()
    wait_until(lambda: len(list(run.marks.glob("*.helper"))) == 2, what="both hosts running")
    helpers = [int(p.read_text()) for p in run.marks.glob("*.helper")]
    assert all(os.getsid(pid) == pid for pid in helpers)  # each leads a session of its own
    job.stop()
    assert job.wait(60)
    assert job.ending is not None and job.ending.status == "Stopped"
    assert not [pid for pid in helpers if alive(pid)]


def test_max_runtime_stops_the_job(tmp_path: Path) -> None:
    run = Run(tmp_path, max_runtime=1)
    ending = finished(run.job(hyperparameters={"mode": "wait"}))
    assert (ending.status, ending.secondary) == ("Stopped", "MaxRuntimeExceeded")
    # SIGTERM, not the SIGKILL after the grace period: it ended well within it. (Whether the
    # script's handler saw it depends on how fast Python starts here; the stop test checks.)
    assert ending.trained_from is not None
    assert (ending.ended - ending.trained_from).total_seconds() < 1.0 + 5.0  # runtime + grace
    assert not [pid for pid in marked_pids(run.marks) if alive(pid)]


def test_checkpoints_are_restored_into_the_next_job(tmp_path: Path) -> None:
    run = Run(tmp_path, checkpoints=f"s3://{BUCKET}/checkpoints/run")
    for name in ("first", "second"):
        ending = finished(run.job(name, hyperparameters={"mode": "count", "epochs": 2}))
        assert ending.status == "Completed", ending.reason
    assert run.storage.read(BUCKET, "checkpoints/run/algo-1.count") == b"4"
    assert "count=4" in run.text("algo-1")


def test_a_missing_code_bundle_fails_with_the_fix(tmp_path: Path) -> None:
    run = Run(tmp_path)
    job = run.job()
    job.request["HyperParameters"]["sagemaker_submit_directory"] = '"s3://bucket/none.tar.gz"'
    ending = finished(job)
    assert ending.status == "Failed" and ending.trained_from is None
    assert "s3://bucket/none.tar.gz is not in the local account's S3" in ending.reason


def test_no_host_outlives_a_killed_parent(tmp_path: Path) -> None:
    """SIGKILL the process that runs a job: its hosts and what they started die with it, in
    their process groups or not (the helpers here lead sessions of their own)."""
    run = Run(tmp_path, groups=[("train", 2)])
    (tmp_path / "parent.py").write_text(
        textwrap.dedent(f"""
        import sys, threading
        sys.path[:0] = [{str(Path.cwd())!r}]
        from pathlib import Path
        from hetero_constructs.local.hosts import FolderStorage, LocalJob
        from tests.fixtures.host_jobs import request
        hps = {{"mode": "wait", "marks": {str(run.marks)!r}, "session": "new"}}
        job = LocalJob("orphan", request("orphan", "bucket", groups=[("train", 2)],
                       hyperparameters=hps), FolderStorage(Path({str(tmp_path / "s3")!r})),
                       Path({str(tmp_path / "orphan")!r}), on_line=lambda *a: None,
                       on_stage=lambda *a: None)
        job.start()
        threading.Event().wait()
        """)
    )
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py")])
    try:
        wait_until(lambda: len(list(run.marks.glob("*.helper"))) == 2, what="hosts running")
        pids = marked_pids(run.marks)
        assert all(alive(pid) for pid in pids)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    wait_until(lambda: not [pid for pid in pids if alive(pid)], 30, "the hosts to die")


FAKE_TORCHRUN = """
import json, os, sys
marks = sys.argv[sys.argv.index("--marks") + 1]
host = os.environ["SM_CURRENT_HOST"]
with open(os.path.join(marks, host + ".torchrun"), "w") as out:
    json.dump(sys.argv[1:], out)
entry = sys.argv.index("train.py")
os.execv(sys.executable, [sys.executable, *sys.argv[entry:]])
"""


def test_two_jobs_run_at_once_each_with_its_own_ports(tmp_path: Path) -> None:
    """The distribution group's hosts start torchrun (here a stand-in that notes its
    arguments), each job with its own master port and data addresses."""
    fake = tmp_path / "fake"
    (fake / "torch" / "distributed").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("")
    (fake / "torch" / "distributed" / "__init__.py").write_text("")
    (fake / "torch" / "distributed" / "run.py").write_text(FAKE_TORCHRUN)
    path = os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")])
    jobs, marks = [], []
    for number in (1, 2):
        run = Run(tmp_path / f"run{number}", groups=[("data", 1), ("gpu", 2)], distribution="gpu")
        jobs.append(run.job(f"job{number}", hyperparameters={"mode": "record"},
                            environment={"PYTHONPATH": path}))  # fmt: skip
        marks.append(run.marks)
    for job in jobs:
        job.start()
    for job in jobs:
        assert job.wait(120) and job.ending is not None
        assert job.ending.status == "Completed", job.ending.reason
    commands = [
        {p.stem: json.loads(p.read_text()) for p in folder.glob("*.torchrun")} for folder in marks
    ]
    assert [sorted(c) for c in commands] == [["algo-2", "algo-3"]] * 2  # not the data host
    first = commands[0]["algo-2"]
    assert first[: first.index("--master_port")] == [
        "--nnodes", "2", "--nproc_per_node", "1", "--master_addr", "127.0.0.1"
    ]  # fmt: skip
    assert commands[0]["algo-3"][commands[0]["algo-3"].index("--node_rank") + 1] == "1"
    ports = {c[h][c[h].index("--master_port") + 1] for c in commands for h in c}
    assert len(ports) == 2


@pytest.mark.slow  # four Python processes import torch: half a minute on two busy cores
def test_torchrun_starts_the_group_as_one_world(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    run = Run(tmp_path, groups=[("gpu", 2)], distribution="gpu")
    ending = finished(run.job(hyperparameters={"mode": "record"}))
    assert ending.status == "Completed", ending.reason
    assert any("torch.distributed.run --nnodes 2" in line for line in run.text("algo-2"))


@pytest.mark.parametrize("launcher", ["mpi", "torch_distributed"])
def test_smdistributed_model_parallel_fails_at_once_saying_why(
    tmp_path: Path, launcher: str
) -> None:
    """v1 (under mpi) and v2 (under torch_distributed): AWS's library, on its GPU images only."""
    run = Run(tmp_path)
    model_parallel = {"enabled": True, "parameters": {"partitions": 2}}
    distribution = {"smdistributed": {"modelparallel": model_parallel}, launcher: {"enabled": True}}
    if launcher == "mpi":
        distribution["instance_groups"] = ["gpu"]
        request = request_from_spec("mp", BUCKET, distribution)
    else:  # v2: a homogeneous cluster, in its own image
        image = "658645717510.dkr.ecr.us-west-2.amazonaws.com/smdistributed-modelparallel"
        request = request_from_spec(
            "mp", BUCKET, distribution, groups=[("gpu", 2)],
            spec={"image_uri": f"{image}:2.2.0-gpu-py310-cu121"},
        )  # fmt: skip
    assert json.loads(request["HyperParameters"]["mp_parameters"]) == {"partitions": 2}
    job = LocalJob("mp", request, run.storage, tmp_path / "mp",
                   on_line=lambda *_: None, on_stage=lambda *_: None)  # fmt: skip
    ending = finished(job)
    assert (ending.status, ending.trained_from) == ("Failed", None)
    assert ending.reason.startswith("ClientError: smdistributed model parallel (mp_parameters)")
    assert "AWS's model parallel library" in ending.reason and "use torch_distributed" in (
        ending.reason
    )


def test_a_missing_import_is_named_in_the_reason(tmp_path: Path) -> None:
    run = Run(tmp_path)
    for module, says in (
        ("no_such_module_here", "it imports no_such_module_here, which is not installed"),
        ("smdistributed.dataparallel.torch.torch_smddp", "AWS's SageMaker distributed training"),
    ):
        name = module.partition(".")[0].replace("_", "-")
        ending = finished(run.job(name, hyperparameters={"mode": "import", "module": module}))
        assert ending.status == "Failed"
        assert ending.reason.startswith("AlgorithmError: algo-1: the script exited with code 1")
        assert says in ending.reason, ending.reason
    assert "which ships only in SageMaker's GPU training images" in ending.reason


def test_pipe_mode_runs_as_file_and_says_so(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.storage.write(BUCKET, "in/a.csv", b"a")
    piped = {**channel("train", f"s3://{BUCKET}/in"), "InputMode": "Pipe"}
    job = run.job(channels=[piped])
    assert finished(job).status == "Completed"
    assert job.notes == ["channel train: Pipe input mode runs as File locally"]
