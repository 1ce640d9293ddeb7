"""The GPU check runs anywhere: without a GPU it trains at a tiny size on the CPU."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_data_plane_runs_tiny_on_cpu_and_prints_its_figures() -> None:
    pytest.importorskip("torch")
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_data_plane.py"), "--tiny"],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("device: cpu")
    assert re.fullmatch(r"gpu step time local/remote: \d+\.\d\d", lines[-2])
    assert re.fullmatch(r"gpu utilisation local/remote: \d+ % / \d+ %", lines[-1])
