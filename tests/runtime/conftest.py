"""Shared fixtures for the runtime helper's tests: writing SageMaker config files.

Helpers are handed out as fixtures (not imported from here) so that this conftest never
collides with another ``conftest`` module on ``sys.path``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest


def write_config(
    base_dir: Path,
    resource_config: Mapping[str, Any] | None,
    raw_hyperparameters: Mapping[str, Any] | None,
    input_data_config: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<base>/input/config/{resourceconfig,hyperparameters,inputdataconfig}.json``.

    ``raw_hyperparameters`` is the file content as SageMaker writes it (values JSON-encoded
    strings); a ``None`` argument leaves that file out. Returns the config directory.
    """
    config_dir = base_dir / "input" / "config"
    config_dir.mkdir(parents=True, exist_ok=True)
    if resource_config is not None:
        (config_dir / "resourceconfig.json").write_text(json.dumps(resource_config))
    if raw_hyperparameters is not None:
        (config_dir / "hyperparameters.json").write_text(json.dumps(raw_hyperparameters))
    (config_dir / "inputdataconfig.json").write_text(json.dumps(input_data_config or {}))
    return config_dir


WriteConfig = Callable[..., Path]


@pytest.fixture(scope="session")
def write_config_files() -> WriteConfig:
    """The :func:`write_config` function."""
    return write_config


@pytest.fixture
def base_dir(tmp_path: Path) -> Path:
    """An empty SageMaker base directory (``<tmp>/opt/ml``)."""
    path = tmp_path / "opt" / "ml"
    path.mkdir(parents=True)
    return path
