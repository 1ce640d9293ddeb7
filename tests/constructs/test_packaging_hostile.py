"""Packaging a hostile source_dir gives violations at construction; grants end at a boundary."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from hetero_constructs import (
    DistributedTraining,
    HeterogeneousTrainingJob,
    InstanceGroup,
    SpecValidationError,
    TrainingChannel,
    TrainingSpec,
)
from hetero_constructs.constructs import packaging
from hetero_constructs.constructs.packaging import source_bundle, tar_gz_bytes
from hetero_constructs.constructs.permissions import Arns, S3Location, s3_read, s3_write
from hetero_constructs.spec.source_tree import NotARegularFileError, read_regular_file
from tests.fixtures.blocking import outcome

# Packaging reads and compresses the whole tree: more time than a plan before it counts as blocked.
PACKAGING_SECONDS = 10.0


@pytest.fixture
def code(tmp_path: Path) -> Path:
    root = tmp_path / "code"
    root.mkdir()
    (root / "train.py").write_text("print('train')\n")
    return root


HOSTILE = {
    "dangling link": lambda c: (c / "gone.py").symlink_to(c / "missing.py"),
    "link loop": lambda c: ((c / "a").symlink_to(c / "b"), (c / "b").symlink_to(c / "a")),
    "link to a parent": lambda c: (c / "up").symlink_to(".."),
    "fifo": lambda c: os.mkfifo(c / "pipe"),
}


@pytest.mark.parametrize("make", list(HOSTILE.values()), ids=list(HOSTILE))
def test_bundling_a_hostile_source_dir_is_a_violation(code: Path, make: Any) -> None:
    make(code)
    for call in (lambda: tar_gz_bytes({"": code}), lambda: source_bundle(code)):
        error = outcome(call, PACKAGING_SECONDS)
        assert isinstance(error, SpecValidationError), error
        assert {v.rule for v in error.violations} == {"FW-SOURCE-DIR"}


@pytest.mark.parametrize("make", list(HOSTILE.values()), ids=list(HOSTILE))
def test_the_construct_raises_the_violation(code: Path, make: Any) -> None:
    make(code)
    spec = TrainingSpec(
        entry_point="train.py",
        source_dir=str(code),
        framework_version="2.3.0",
        py_version="py311",
        instance_groups=[
            InstanceGroup("data", "ml.c5.18xlarge", 1),
            InstanceGroup("gpu", "ml.p4d.24xlarge", 2),
        ],
        channels=[TrainingChannel("train", "s3://data-bucket/train/", instance_groups=["data"])],
        distribution=DistributedTraining.torch_distributed(instance_group="gpu"),
        output_path="s3://data-bucket/output/",
    )
    stack = cdk.Stack(cdk.App(), "Test", env=cdk.Environment(region="us-west-2"))
    error = outcome(lambda: HeterogeneousTrainingJob(stack, "Job", spec=spec), PACKAGING_SECONDS)
    assert isinstance(error, SpecValidationError), error
    assert {v.rule for v in error.violations} == {"FW-SOURCE-DIR"}


def test_a_file_replaced_by_a_fifo_after_the_scan_is_never_opened_blocking(
    code: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scanned = packaging.scan(code)  # the scan sees a regular file ...
    (code / "train.py").unlink()
    os.mkfifo(code / "train.py")  # ... that is a FIFO by the time it is read
    monkeypatch.setattr(packaging, "scan", lambda root: scanned)
    error = outcome(lambda: tar_gz_bytes({"": code}), PACKAGING_SECONDS)
    assert isinstance(error, SpecValidationError)
    assert "cannot be read" in error.violations[0].problem
    assert isinstance(
        outcome(lambda: read_regular_file(code / "train.py"), PACKAGING_SECONDS),
        NotARegularFileError,
    )


ARNS = Arns("aws", "us-west-2", "111122223333")


@pytest.mark.parametrize(
    ("uri", "objects", "listed"),
    [
        (
            "s3://b/train",
            ["arn:aws:s3:::b/train", "arn:aws:s3:::b/train/*"],
            ["train", "train/*"],
        ),
        ("s3://b/train/", "arn:aws:s3:::b/train/*", ["train/*"]),
        ("s3://b", "arn:aws:s3:::b/*", None),
        ("s3://b/", "arn:aws:s3:::b/*", None),
    ],
)
def test_channel_grants_end_at_a_path_boundary(
    uri: str, objects: Any, listed: list[str] | None
) -> None:
    get, list_bucket = s3_read(ARNS, [uri])
    assert get == {"Effect": "Allow", "Action": "s3:GetObject", "Resource": objects}
    assert list_bucket["Resource"] == "arn:aws:s3:::b"
    condition = list_bucket.get("Condition")
    assert condition == ({"StringLike": {"s3:prefix": listed}} if listed else None)
    (put,) = s3_write(ARNS, [uri])
    assert put["Resource"] == objects
    # Never a wildcard that runs past the prefix into siblings such as train-nightly/.
    resources = objects if isinstance(objects, list) else [objects]
    assert not any(r.endswith("train*") for r in resources)


def test_the_wildcard_resource_is_what_cdk_nag_is_told_about() -> None:
    location = S3Location.parse("s3://b/train")
    assert location is not None
    assert location.objects_arn(ARNS) == "arn:aws:s3:::b/train/*"
    assert location.object_arns(ARNS)[-1] == location.objects_arn(ARNS)
