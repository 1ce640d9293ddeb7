"""Snapshot of the example app's template (asset hashes normalized).

Update on purpose with ``pytest tests/cdk/test_snapshot.py --snapshot-update`` and say why in the
commit message.
"""

from __future__ import annotations

from typing import Any

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from hetero_constructs import normalized_template
from tests.fixtures.example_app import Synthesized


@pytest.fixture
def snapshot_json(snapshot: Any) -> Any:
    return snapshot.use_extension(JSONSnapshotExtension)


def test_example_template(example: Synthesized, snapshot_json: Any) -> None:
    assert normalized_template(example.stack) == snapshot_json


def test_normalization_hides_only_asset_hashes(example: Synthesized) -> None:
    text = str(normalized_template(example.stack))
    assert "ASSET-HASH" in text
    assert "hetero-example" in text


def test_pipeline_template(example: Synthesized, snapshot_json: Any) -> None:
    pipeline = example.app.node.find_child("HeteroTrainingPipeline")
    assert normalized_template(pipeline) == snapshot_json  # type: ignore[arg-type]
