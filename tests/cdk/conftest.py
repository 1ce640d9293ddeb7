from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from app import HeteroTrainingStack, build_app


@dataclass
class Synthesized:
    app: cdk.App
    stack: HeteroTrainingStack
    outdir: Path
    template: dict[str, Any]


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The example app, synthesized once in-process (cdk-nag attached, as `make synth` does)."""
    outdir = tmp_path_factory.mktemp("cdk.out")
    app, stack = build_app(cdk.App(outdir=str(outdir)))
    app.synth()
    template = json.loads((outdir / f"{stack.stack_name}.template.json").read_text())
    return Synthesized(app, stack, outdir, template)
