"""Local training jobs run the job's own code: a user's tiny script from a spec file
(tests/fixtures/local_assets/host_job), through the public API, every host a process here."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.local import LocalCloud
from hetero_constructs.local.account import LocalAccount
from hetero_constructs.local.training import OnDemandJob
from tests.fixtures.host_jobs import (
    CODE_KEY,
    alive,
    channel,
    drive,
    marked_pids,
    request,
    sourcedir,
    wait_until,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux processes")
BUCKET = "user-job-bucket"
CAPACITY = "Failed:CapacityError: Unable to provision requested ML compute capacity."


@pytest.fixture
def cloud(stacks: Any, tmp_path: Path) -> Iterator[tuple[LocalCloud, str, Path]]:
    marks = tmp_path / "marks"
    marks.mkdir()
    with LocalCloud() as local:
        local.deploy(stacks.path("UserJob"))  # its code bundle published, as cdk deploy does
        s3 = local.client("s3")
        s3.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": local.region}
        )
        for key in ("a.csv", "b.csv", "c.csv", "d.csv"):
            s3.put_object(Bucket=BUCKET, Key=f"datasets/train/{key}", Body=key.encode())
        s3.put_object(Bucket=BUCKET, Key="datasets/shared/x.txt", Body=b"x")
        yield local, local.state_machine(), marks
    # Nothing any host started outlives the cloud.
    assert not [pid for pid in marked_pids(marks) if alive(pid)]


def _hps(marks: Path, **values: Any) -> dict[str, Any]:
    return {"hyperparameters": {"marks": str(marks), **values}}


def _model(local: LocalCloud, uri: str) -> dict[str, Any]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    body = local.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        return {m.name: json.load(tar.extractfile(m)) for m in tar.getmembers()}  # type: ignore[arg-type]


def _lines(local: LocalCloud, job: str) -> dict[str, list[str]]:
    logs = local.client("logs")
    streams = logs.describe_log_streams(
        logGroupName="/aws/sagemaker/TrainingJobs", logStreamNamePrefix=f"{job}/"
    )["logStreams"]
    return {
        s["logStreamName"].split("/")[1].rsplit("-", 1)[0]: [
            e["message"]
            for e in logs.get_log_events(
                logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=s["logStreamName"]
            )["events"]
        ]
        for s in streams
    }


def test_a_users_job_runs_on_every_host_with_its_channels(
    cloud: tuple[LocalCloud, str, Path],
) -> None:
    local, machine, marks = cloud
    result = local.run(machine, _hps(marks), name="real", timeout=120)
    assert result.status == "SUCCEEDED", result.cause
    (job,) = result.jobs
    assert not job.simulated and job.to_json()["simulated"] is False
    described = result.training_jobs[0]
    assert described["TrainingJobStatus"] == "Completed"
    assert [t["Status"] for t in described["SecondaryStatusTransitions"]] == [
        "Starting", "Downloading", "Training", "Uploading", "Completed"
    ]  # fmt: skip
    # The script's own lines, per host, and the metric SageMaker extracts from them.
    lines = _lines(local, job.name)
    assert sorted(lines) == ["algo-1", "algo-2", "algo-3"]
    assert lines["algo-2"][0] == "SM_CURRENT_INSTANCE_GROUP=train"
    assert "loss=2.50" in lines["algo-2"] and "loss=0.25" in lines["algo-3"]
    (final,) = described["FinalMetricDataList"]
    assert (final["MetricName"], final["Value"]) == ("train:loss", 0.25)
    # Each host's files: the channels of its groups, sharded over the train hosts.
    seen = _model(local, described["ModelArtifacts"]["S3ModelArtifacts"])
    data = {name.split(".")[0]: value["data"] for name, value in seen.items()}
    assert data["algo-1"] == {"shared": ["x.txt"]}
    assert sorted(data["algo-2"]["train"] + data["algo-3"]["train"]) == [
        "a.csv", "b.csv", "c.csv", "d.csv"
    ]  # fmt: skip
    assert len(data["algo-2"]["train"]) == 2
    env = seen["algo-2.json"]["env"]
    assert json.loads(env["SM_INSTANCE_GROUPS"]) == ["data", "train"]
    assert env["SM_CHANNEL_TRAIN"].endswith("/input/data/train")
    assert described["BillableTimeInSeconds"] >= 0


def test_a_failing_host_fails_the_job_with_its_failure_file(
    cloud: tuple[LocalCloud, str, Path],
) -> None:
    local, machine, marks = cloud
    result = local.run(machine, _hps(marks, mode="fail-on", group="data"), name="fails")
    assert result.status == "FAILED"
    described = result.training_jobs[0]
    assert described["TrainingJobStatus"] == "Failed"
    assert described["FailureReason"] == "AlgorithmError: algo-1 of data: loss is NaN"
    assert sorted(p.stem for p in marks.glob("*.sigterm")) == ["algo-2", "algo-3"]
    assert "FinalMetricDataList" not in described or all(
        m["MetricName"] != "train:progress" for m in described["FinalMetricDataList"]
    )
    assert not [pid for pid in marked_pids(marks) if alive(pid)]


def test_a_stop_mid_run_reaches_the_scripts(cloud: tuple[LocalCloud, str, Path]) -> None:
    local, machine, marks = cloud
    outcome: list[Any] = []
    runner = threading.Thread(
        target=lambda: outcome.append(
            local.run(machine, _hps(marks, mode="wait"), name="stopped", timeout=120)
        )
    )
    runner.start()
    wait_until(lambda: len(list(marks.glob("*.helper"))) == 3, what="every host running")
    (job,) = [a.name for a in local.training.attempts]
    local.client("sagemaker").stop_training_job(TrainingJobName=job)
    runner.join(120)
    (result,) = outcome
    described = result.training_jobs[0]
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == (
        "Stopped",
        "Stopped",
    )
    assert sorted(p.stem for p in marks.glob("*.sigterm")) == ["algo-1", "algo-2", "algo-3"]
    assert not [pid for pid in marked_pids(marks) if alive(pid)]


def test_a_scripted_capacity_failure_then_a_real_run(cloud: tuple[LocalCloud, str, Path]) -> None:
    local, machine, marks = cloud
    result = local.run(machine, _hps(marks), name="retried", outcomes=[CAPACITY], timeout=120)
    assert result.status == "SUCCEEDED", result.cause
    drill, real = result.jobs
    assert (drill.simulated, drill.status, real.simulated, real.status) == (
        True, "Failed", False, "Completed"
    )  # fmt: skip
    first, second = result.training_jobs
    assert all(
        t["StatusMessage"].startswith("simulated: ") for t in first["SecondaryStatusTransitions"]
    )
    assert "FinalMetricDataList" not in first  # no line, no number
    assert second["FinalMetricDataList"][0]["MetricName"] == "train:loss"


def test_a_checkpoint_is_restored_into_the_next_job(cloud: tuple[LocalCloud, str, Path]) -> None:
    local, machine, marks = cloud
    for number in (1, 2):
        result = local.run(machine, _hps(marks, mode="count"), name=f"resume-{number}")
        assert result.status == "SUCCEEDED", result.cause
    lines = _lines(local, result.jobs[0].name)
    assert all("count=2" in host_lines for host_lines in lines.values())


def _with_code_bundle(local: LocalCloud) -> Any:
    """The local account's SageMaker client, once the host job's code bundle is in ``bucket``
    (``CODE_KEY``), as the tests' requests name it."""
    s3, sagemaker = local.client("s3"), local.client("sagemaker")
    s3.create_bucket(Bucket="bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_object(Bucket="bucket", Key=CODE_KEY, Body=sourcedir())
    return sagemaker


def test_boto3_jobs_run_at_once_and_max_runtime_stops_one(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    with LocalCloud("us-west-2") as local:
        sagemaker = _with_code_bundle(local)
        hps = {"marks": str(marks), "mode": "wait"}
        sagemaker.create_training_job(**request("long", "bucket", hyperparameters=hps))
        sagemaker.create_training_job(
            **request("short", "bucket", hyperparameters=hps, max_runtime=1)
        )

        def status(name: str) -> tuple[str, str]:
            job = sagemaker.describe_training_job(TrainingJobName=name)
            return job["TrainingJobStatus"], job["SecondaryStatus"]

        drive(local, lambda: status("short")[0] == "Stopped")
        assert status("short") == ("Stopped", "MaxRuntimeExceeded")
        assert status("long") == ("InProgress", "Training")
        sagemaker.stop_training_job(TrainingJobName="long")
        drive(local, lambda: status("long")[0] == "Stopped")
    assert not [pid for pid in marked_pids(marks) if alive(pid)]


def test_a_channel_without_data_is_refused_as_the_service_refuses_it() -> None:
    with LocalCloud("us-west-2") as local:
        sagemaker = _with_code_bundle(local)
        empty = channel("train", "s3://bucket/nothing/")
        with pytest.raises(sagemaker.exceptions.ClientError) as refused:
            sagemaker.create_training_job(**request("empty", "bucket", channels=[empty]))
        error = refused.value.response["Error"]
        assert error["Code"] == "ValidationException"
        assert 'No S3 objects found under S3 URL "s3://bucket/nothing/"' in error["Message"]
        assert not local.training.attempts  # no job exists


def test_a_served_accounts_hosts_reach_it_as_aws(stacks: Any, tmp_path: Path) -> None:
    with LocalAccount([stacks.path("UserJob")], port=0) as account:
        cloud = account.cloud
        s3 = cloud.client("s3")
        s3.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
        )
        for key in ("datasets/train/a.csv", "datasets/shared/x.txt"):
            s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")
        stepfunctions = cloud.client("stepfunctions")
        arn = stepfunctions.start_execution(
            stateMachineArn=cloud.state_machine(),
            input=json.dumps(_hps(tmp_path, mode="aws")),
        )["executionArn"]
        wait_until(
            lambda: stepfunctions.describe_execution(executionArn=arn)["status"] != "RUNNING",
            120,
            "the execution to end",
        )
        assert stepfunctions.describe_execution(executionArn=arn)["status"] == "SUCCEEDED"
        (job,) = [a.name for a in cloud.training.attempts]
        lines = _lines(cloud, job)
        assert all(any(BUCKET in line for line in host) for host in lines.values())


def test_no_host_outlives_a_killed_command(stacks: Any, tmp_path: Path) -> None:
    """``hetero-train run --local`` killed (SIGKILL) while its job runs: its hosts die too."""
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "a.csv").write_text("a")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "x.txt").write_text("x")
    root = Path(__file__).resolve().parents[2]
    command = subprocess.Popen(
        [
            sys.executable, "-m", "hetero_constructs.cli", "run", "--local",
            str(stacks.path("UserJob")), "--no-follow",
            "--upload", f"{tmp_path / 'train'}=s3://{BUCKET}/datasets/train/",
            "--upload", f"{tmp_path / 'shared'}=s3://{BUCKET}/datasets/shared/",
            "--input", json.dumps(_hps(marks, mode="wait")),
        ],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(lambda: len(list(marks.glob("*.helper"))) == 3, 120, "every host running")
        pids = marked_pids(marks)
        assert all(alive(pid) for pid in pids)
    finally:
        command.kill()
        command.wait()
    wait_until(lambda: not [pid for pid in pids if alive(pid)], 30, "the hosts to die")


def test_a_spot_reclaim_restarts_the_job_from_its_checkpoints(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    with LocalCloud("us-west-2") as local:
        sagemaker = _with_code_bundle(local)
        hps = {"marks": str(marks), "mode": "resume"}
        checkpoints = "s3://bucket/checkpoints/spot"
        sagemaker.create_training_job(
            **request("spot", "bucket", hyperparameters=hps, checkpoints=checkpoints, spot=True)
        )
        wait_until(lambda: (marks / "algo-1.started1").exists(), 60, "the first start")
        first = marked_pids(marks)
        # SageMaker reclaims spot instances only: an on-demand job is refused, and runs on.
        on_demand = {"marks": str(tmp_path / "on-demand"), "mode": "wait"}
        (tmp_path / "on-demand").mkdir()
        sagemaker.create_training_job(**request("on-demand", "bucket", hyperparameters=on_demand))
        with pytest.raises(OnDemandJob, match=r"on-demand instances .* does not reclaim"):
            local.interrupt_training_job("on-demand")
        sagemaker.stop_training_job(TrainingJobName="on-demand")
        local.interrupt_training_job("spot")
        assert not [pid for pid in first if alive(pid)]  # every host killed at once

        def described() -> dict[str, Any]:
            return dict(sagemaker.describe_training_job(TrainingJobName="spot"))

        drive(local, lambda: described()["TrainingJobStatus"] != "InProgress")
        job = described()
        assert job["TrainingJobStatus"] == "Completed"
        statuses = [t["Status"] for t in job["SecondaryStatusTransitions"]]
        assert statuses == [
            "Starting", "Downloading", "Training", "Interrupted",
            "Starting", "Downloading", "Training", "Uploading", "Completed",
        ]  # fmt: skip
        assert (marks / "algo-1.started2").exists()  # restored: it counted on from 1
        assert "count=2" in _lines(local, "spot")["algo-1"]
