"""`make synth`'s local run: the example app's job trains for real on this machine's CPU.

The data group streams augmented batches through the data plane to the gpu group's
``torchrun`` (gloo), the model lands in the local account's S3, and the final metrics are the
values the script printed. One run (about a minute on a loaded 2-core machine).
"""

from __future__ import annotations

import io
import json
import re
import shlex
import tarfile
from pathlib import Path

import boto3
import pytest

from hetero_constructs.local import LocalCloud
from hetero_constructs.local.uploads import Upload
from tests.fixtures.example_app import Synthesized

ROOT = Path(__file__).resolve().parents[2]
EPOCH_LINE = re.compile(r"epoch=(\d+) train_loss=([0-9.]+) train_accuracy=([0-9.]+)")


def _makefile_upload() -> str:
    """The --upload of `make synth`'s local run, as the Makefile writes it."""
    recipe = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    (line,) = [ln for ln in recipe.splitlines() if "hetero-train run --local" in ln]
    words = shlex.split(line)
    return words[words.index("--upload") + 1]


@pytest.mark.slow
def test_the_example_job_trains_for_real_and_its_model_lands_in_s3(example: Synthesized) -> None:
    pytest.importorskip("torch", reason="the example trains with PyTorch (the example extra)")
    source, _, uri = _makefile_upload().partition("=")
    lines: list[tuple[str, str]] = []
    with LocalCloud() as cloud:
        cloud.deploy(example.outdir / "HeteroTrainingExample.template.json")
        Upload.parse(f"{ROOT / source}={uri}").put(cloud.region)
        result = cloud.run(None, name="make-synth", timeout=300)
        assert result.status == "SUCCEEDED", (result.error, result.cause)
        (job,) = result.training_jobs
        logs = boto3.client("logs", region_name=cloud.region)
        streams = logs.describe_log_streams(
            logGroupName="/aws/sagemaker/TrainingJobs", logStreamNamePrefix=job["TrainingJobName"]
        )["logStreams"]
        for stream in streams:
            events = logs.get_log_events(
                logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=stream["logStreamName"]
            )["events"]
            lines += [(stream["logStreamName"], event["message"]) for event in events]
        model = job["ModelArtifacts"]["S3ModelArtifacts"]
        bucket, _, key = model.removeprefix("s3://").partition("/")
        archive = boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()

    assert model.startswith("s3://example-training-data/training-output/")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        metrics = json.loads(tar.extractfile("metrics.json").read())  # type: ignore[union-attr]
        assert "model.pt" in tar.getnames()
    assert metrics["world_size"] == 2 and metrics["epochs"] == 3
    assert metrics["ids_per_epoch"] == [list(range(1000))] * 3  # every row, once per epoch
    # The data hosts run the script, the gpu hosts torchrun (each its own log stream).
    commands = {
        stream.split("/")[-1].rsplit("-", 1)[0]: message
        for stream, message in lines
        if "Invoking script with the following command" in message
    }
    assert sorted(commands) == ["algo-1", "algo-2", "algo-3", "algo-4"], commands
    for host in ("algo-1", "algo-2"):
        assert "torch.distributed.run" not in commands[host] and " train.py" in commands[host]
    for host in ("algo-3", "algo-4"):
        assert "-m torch.distributed.run --nnodes 2 --nproc_per_node 1" in commands[host]
    assert sum("read 1000 rows from 1 file(s)" in message for _, message in lines) == 2
    epochs = [m.groups() for _, message in lines if (m := EPOCH_LINE.search(message))]
    assert [int(epoch) for epoch, _, _ in epochs] == [0, 1, 2]
    final = {m["MetricName"]: m["Value"] for m in job["FinalMetricDataList"]}
    assert final["train_loss"] == float(epochs[-1][1])
    assert final["train_accuracy"] == float(epochs[-1][2]) == round(metrics["train_accuracy"], 4)
    assert final["gpu:samples_per_second"] > 0
