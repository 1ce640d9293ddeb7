"""The example's data hosts resume a shard without making its first batches again, and the
batches they make from there are the very ones the whole shard has (noise included)."""

from __future__ import annotations

import logging
import runpy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hetero_constructs.runtime import data

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "hetero_training" / "train.py"


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return runpy.run_path(str(SCRIPT), run_name="example_train")


def _batches(example: dict[str, Any], start: int) -> list[dict[str, Any]]:
    settings = example["Settings"].from_hyperparameters({"batch_size": 7, "seed": 3})
    rows = np.random.default_rng(0).normal(size=(100, 4)).astype(np.float32)
    labels = np.arange(100) % 2
    shard = data.Shard(index=1, count=3, epoch=2, seed=3, rank=0, start=start)
    return list(example["shard_batches"](shard, rows, labels, {}, settings))


@pytest.mark.parametrize("start", [1, 3, 4, 5, 9])
def test_a_resumed_shard_makes_the_rest_of_the_whole_shard(
    example: dict[str, Any], start: int, caplog: pytest.LogCaptureFixture
) -> None:
    whole = _batches(example, 0)
    assert len(whole) == 5  # 33 rows of the 100 in batches of 7
    with caplog.at_level(logging.INFO, logger="hetero_training"):
        resumed = _batches(example, start)
    assert len(resumed) == max(0, len(whole) - start)
    for made, expected in zip(resumed, whole[start:], strict=True):
        assert made["ids"].tolist() == expected["ids"].tolist()
        assert np.array_equal(made["x"], expected["x"])  # the same augmentation
    (said,) = [r.getMessage() for r in caplog.records if "resuming" in r.getMessage()]
    skipped = min(start, len(whole))
    assert said == (
        f"resuming rank 0's shard 1 of epoch 2 at batch {start} of 5 "
        f"({skipped} batches skipped, not made)"
    )
