"""Preprocessing step of the example pipeline: choose this run's data and hyperparameters.

A stand-in for real preprocessing: it picks the dataset version under the granted training
prefix and scales the epochs with the dataset size it is told about. Its result is exactly the
training task's overrides (hyperparameters, channels, tags), validated again by the task.
"""

from __future__ import annotations

import os
from typing import Any


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    version = str(event.get("dataset_version", "latest"))
    rows = int(event.get("rows", 1_000_000))
    epochs = max(1, min(10, rows // 500_000))
    prefix = os.environ["TRAINING_DATA_PREFIX"].rstrip("/")
    return {
        "hyperparameters": {"epochs": epochs},
        "channels": {"train": f"{prefix}/{version}/"},
        "tags": {"dataset-version": version},
    }
