"""A spot reclaim of the example's job, drilled locally (issue 32, item 5).

The example's own job (``app.example_spec``: its code, groups, channel and data, as a managed
spot job with a checkpoint URI, tests/fixtures/spot_example.py) runs for real on this machine,
tiny. Its ranks hold mid-epoch after a checkpoint (the example's ``hold_at_step``); once both
ranks' checkpoints are in the checkpoint URI, the job is interrupted as a spot reclaim
interrupts it (``LocalCloud.interrupt_training_job``: every host killed, the same job started
on fresh hosts with its checkpoints restored) and it finishes. What the script recorded of
what it trained on (each rank's row ids in training order, saved with its checkpoint and
written to ``metrics.json``) shows every row of the interrupted epoch trained on exactly once
across both runs, in the order of an uninterrupted epoch; the new data hosts' own lines show
that each shard started where its rank had stopped, nothing made again, and that they sent each
rank the rest of its epoch and no more.
"""

from __future__ import annotations

import io
import json
import re
import runpy
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.local import LocalCloud
from hetero_constructs.local.uploads import Upload
from hetero_constructs.runtime import data
from tests.fixtures.host_jobs import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux processes"),
]

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "example-training-data"
ROWS = 1000  # examples/datasets/train/part-0.csv, what `make synth` uploads
#: 1,000 rows in 8 shards (2 ranks x 2 data hosts x 2 workers) of 5 batches of 25: 20 steps
#: per rank and epoch. The ranks hold after step 27: 7 batches into epoch 1 (of 0..1).
SIZES = {"epochs": 2, "batch_size": 25, "checkpoint_every": 5, "idle_timeout": 60}
HOLD, EPOCH = 27, 1
RANKS = ("rank-0.pt", "rank-1.pt")
SENT = re.compile(r"\[hetero-train\] .* data_host=\S+ rank=(\d+) batches=(\d+) ")
RESUMING = re.compile(r"resuming rank (\d+)'s shard (\d+) of epoch (\d+) at batch (\d+) of")
STATUSES = [
    "Starting", "Downloading", "Training", "Interrupted",
    "Starting", "Downloading", "Training", "Uploading", "Completed",
]  # fmt: skip


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.fixtures.spot_example import synthesize

    return synthesize(tmp_path_factory.mktemp("spot-cdk.out"))


@pytest.fixture
def cloud(template: Path) -> Iterator[LocalCloud]:
    pytest.importorskip("torch", reason="the example trains with PyTorch (the example extra)")
    with LocalCloud() as local:
        local.deploy(template)
        source = ROOT / "examples" / "datasets" / "train"
        Upload.parse(f"{source}=s3://{BUCKET}/datasets/train/").put(local.region)
        yield local


def _object(cloud: LocalCloud, uri: str) -> bytes:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bytes(cloud.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def _metrics(cloud: LocalCloud, job: dict[str, Any]) -> dict[str, Any]:
    """The ``metrics.json`` rank 0 wrote, from the job's model archive."""
    archive = _object(cloud, job["ModelArtifacts"]["S3ModelArtifacts"])
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        member = tar.extractfile("metrics.json")
        assert member is not None
        return dict(json.loads(member.read()))


def _checkpoints(cloud: LocalCloud) -> dict[str, dict[str, Any]]:
    """The ranks' checkpoints as the checkpoint URI holds them now."""
    import torch

    from tests.fixtures.spot_example import CHECKPOINT_PREFIX

    s3 = cloud.client("s3")
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=CHECKPOINT_PREFIX).get("Contents", [])
    return {
        item["Key"].removeprefix(CHECKPOINT_PREFIX): torch.load(
            io.BytesIO(_object(cloud, f"s3://{BUCKET}/{item['Key']}")), weights_only=True
        )
        for item in listed
        if item["Key"].endswith(".pt")
    }


def _held(cloud: LocalCloud) -> dict[str, dict[str, Any]] | None:
    """Both ranks' checkpoints, once the URI has those taken at the hold."""
    saved = _checkpoints(cloud)
    if sorted(saved) == list(RANKS) and all(s["steps"] == HOLD for s in saved.values()):
        return saved
    return None


def _lines(cloud: LocalCloud, job: str) -> dict[str, list[str]]:
    """Every line each host wrote, both runs (one log stream per host), in order."""
    logs = cloud.client("logs")
    group = "/aws/sagemaker/TrainingJobs"
    streams = logs.describe_log_streams(logGroupName=group, logStreamNamePrefix=f"{job}/")
    return {
        stream["logStreamName"].split("/")[1].rsplit("-", 1)[0]: [
            event["message"]
            for event in logs.get_log_events(
                logGroupName=group, logStreamName=stream["logStreamName"], startFromHead=True
            )["events"]
        ]
        for stream in streams["logStreams"]
    }


def _after_last(lines: list[str], marker: str) -> list[str]:
    """The lines after the last one that contains ``marker`` (a host's restart)."""
    starts = [number for number, line in enumerate(lines) if marker in line]
    assert len(starts) == 2, starts  # the host started twice: before the reclaim and after
    return lines[starts[-1] + 1 :]


def _processes_of(job: str) -> set[tuple[int, int]]:
    """The live processes (zombies aside) started for ``job``, as (pid, start time): every
    process of its hosts has ``TRAINING_JOB_NAME`` in its environment, whatever process group
    or session it is in (the start time tells a reused pid apart)."""
    wanted = f"TRAINING_JOB_NAME={job}".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and wanted in variables:
            found.add((int(entry.name), int(fields[19])))  # stat's 22nd field: start time
    return found


def _uninterrupted_order(rank: int, producers: int) -> list[int]:
    """Rank ``rank``'s row ids of epoch ``EPOCH`` in the order an uninterrupted job trains on
    them: the example's own ``shard_batches`` for each of the rank's shards, taken one batch
    from each producer in turn (``ordered=True``, the example's; every shard here has as many
    batches as the others)."""
    import numpy as np

    script = runpy.run_path(str(ROOT / "examples" / "hetero_training" / "train.py"))
    settings = script["Settings"].from_hyperparameters(SIZES)
    features, labels = np.zeros((ROWS, 8), np.float32), np.zeros(ROWS)
    count = producers * 2
    shards = [
        [
            batch["ids"].tolist()
            for batch in script["shard_batches"](
                data.Shard(rank * producers + p, count, EPOCH, settings.seed, rank),
                features,
                labels,
                {},
                settings,
            )
        ]
        for p in range(producers)
    ]
    return [i for turn in zip(*shards, strict=True) for batch in turn for i in batch]


def test_a_spot_reclaim_mid_epoch_trains_on_every_row_once_in_order(cloud: LocalCloud) -> None:
    outcome: list[Any] = []
    drill = {"hyperparameters": {**SIZES, "hold_at_step": HOLD}}
    runner = threading.Thread(
        target=lambda: outcome.append(cloud.run(None, drill, name="reclaimed", timeout=300))
    )
    runner.start()
    sagemaker = cloud.client("sagemaker")
    name, interrupted = "", False
    try:
        (summary,) = wait_until(
            lambda: sagemaker.list_training_jobs(StatusEquals="InProgress")["TrainingJobSummaries"],
            60,
            "the job to start",
        )
        name = summary["TrainingJobName"]
        held = wait_until(lambda: _held(cloud), 180, "both ranks' checkpoints at the hold")
        first = _processes_of(name)
        assert len(first) > 8  # each host's wrapper and command, torchrun's workers, ...
        cloud.interrupt_training_job(name)
        # Every process of every host is gone, torchrun's workers (sessions of their own)
        # included, before the job starts again.
        assert not first & _processes_of(name)
        interrupted = True
    finally:
        if not interrupted and name:  # a check failed: stopping the job ends the hold
            sagemaker.stop_training_job(TrainingJobName=name)
        runner.join(300)
    (result,) = outcome
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    (job,) = result.training_jobs
    assert [t["Status"] for t in job["SecondaryStatusTransitions"]] == STATUSES
    (reclaim,) = [t for t in job["SecondaryStatusTransitions"] if t["Status"] == "Interrupted"]
    assert reclaim["StatusMessage"] == "Job interrupted due to Spot reclaim"
    assert not _processes_of(name)

    metrics = _metrics(cloud, job)
    assert metrics["ids_per_epoch"] == [list(range(ROWS))] * SIZES["epochs"]  # each row once
    lines = _lines(cloud, name)
    resumed: set[tuple[int, int, int]] = set()
    taken_before: dict[int, int] = {}
    for rank, key in enumerate(RANKS):
        saved = held[key]
        state = saved["data"]
        # The hold came mid-epoch: the checkpoint's data state is 7 batches into epoch 1.
        assert (state["epoch"], sum(state["consumed"]), state["ordered"]) == (EPOCH, 7, True)
        taken_before[rank] = sum(state["consumed"])
        before = saved["ids_per_epoch"][EPOCH]
        assert len(before) == 7 * SIZES["batch_size"]
        # The ids trained on before the reclaim (as checkpointed) and after it, in order, are
        # the rank's epoch as an uninterrupted job has it: nothing lost, repeated or reordered.
        trained = metrics["ids_in_order"][str(rank)][EPOCH]
        assert trained[: len(before)] == before
        assert trained == _uninterrupted_order(rank, state["producers"])
        assert len(trained) == len(set(trained)) == ROWS // 2
        # The new data hosts start each of the rank's shards where it stopped.
        resumed |= {
            (rank, rank * state["producers"] + producer, taken)
            for producer, taken in enumerate(state["consumed"])
            if taken and not state["ended"][producer]
        }
        trainer = lines[f"algo-{3 + rank}"]
        assert any(
            f"rank {rank} resumes from " in line
            and f"rank-{rank}.pt at epoch {EPOCH} after step {HOLD} " in line
            for line in trainer
        ), trainer[-20:]
    data_lines = [line for host in ("algo-1", "algo-2") for line in lines[host]]
    said = {
        (int(m[1]), int(m[2]), int(m[4]))
        for line in data_lines
        if (m := RESUMING.search(line)) and int(m[3]) == EPOCH
    }
    assert said == resumed and len(resumed) == 8, (said, resumed)
    assert not [line for line in data_lines if "fast-forwarded" in line]  # nothing made again
    # The new data hosts' own counts (what each sent each rank so far, its last line): the
    # rest of the rank's 20 batches of the epoch, not one more.
    sent = {0: 0, 1: 0}
    for host in ("algo-1", "algo-2"):
        restarted = _after_last(lines[host], "Invoking script with the following command")
        last = {int(m[1]): int(m[2]) for line in restarted if (m := SENT.search(line))}
        for rank, batches in last.items():
            sent[rank] += batches
    assert sent == {rank: 20 - taken for rank, taken in taken_before.items()}, sent
