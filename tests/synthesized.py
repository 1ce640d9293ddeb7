"""The example app, synthesized in-process, as the CDK and end-to-end tests see it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from app import HeteroTrainingStack, build_app


@dataclass
class Synthesized:
    app: cdk.App
    stack: HeteroTrainingStack
    outdir: Path
    template: dict[str, Any]


def synthesize(outdir: Path) -> Synthesized:
    """The example app with cdk-nag attached, as `make synth` builds it."""
    app, stack = build_app(cdk.App(outdir=str(outdir)))
    app.synth()
    template = json.loads((outdir / f"{stack.stack_name}.template.json").read_text())
    return Synthesized(app, stack, outdir, template)
