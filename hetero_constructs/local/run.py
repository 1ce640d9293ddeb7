"""One local execution of a synthesized template, in one call.

``run_template`` deploys a template into a fresh ``LocalCloud`` and runs one execution of its
state machine; ``template_problem`` says why a path is not a template to run. The command line
is ``hetero-train run --local`` (``hetero_constructs.cli``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from hetero_constructs.local.cloud import LocalCloud
from hetero_constructs.local.results import ExecutionResult, Follow
from hetero_constructs.local.training import Outcome


def template_problem(template: str | Path) -> str | None:
    """Why ``template`` is not a template file to run, or None (the message ends with the fix)."""
    path = Path(template)
    if path.is_file():
        try:
            body = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as error:
            return (
                f"template {str(template)!r} cannot be read as JSON ({error}); give a template "
                "`cdk synth` wrote (cdk.out/STACK.template.json)"
            )
        if not isinstance(body, dict) or not isinstance(body.get("Resources"), dict):
            return (
                f"template {str(template)!r} is no CloudFormation template (no Resources "
                "object); give a template `cdk synth` wrote (cdk.out/STACK.template.json)"
            )
        return None
    if path.is_dir():
        found = sorted(p.name for p in path.glob("*.template.json"))
        choices = f": {', '.join(found)}" if found else " (it holds none; run `cdk synth` first)"
        return f"template {str(template)!r} is a directory; give one of its templates{choices}"
    return f"template {str(template)!r} does not exist; run `cdk synth` first"


def run_template(
    template: str | Path,
    *,
    state_machine: str | None = None,
    execution_input: Any = None,
    outcomes: Sequence[str | Outcome] = (),
    region: str | None = None,
    name: str | None = None,
    reconcile_every: float | None = None,
    timeout: float = 120.0,
    follow: Follow | None = None,
    notes: TextIO | None = None,
    python: str | None = None,
) -> ExecutionResult:
    """Deploy ``template`` into a fresh local cloud and run one execution of its state machine.

    Each training job runs for real unless ``outcomes`` scripts its end; ``python`` runs the
    entry points (default: this Python). ``follow`` receives the clients and the execution ARN
    (see ``results.Follow``); notes on what was not simulated go to ``notes`` (default:
    standard error). ``LookupError`` for a state machine that cannot be chosen (several and
    none named, or an unknown name).
    """
    with LocalCloud(region, python=python) as cloud:
        cloud.deploy(template)
        for note in cloud.notes:
            print(f"note: {note}", file=notes or sys.stderr)
        result = cloud.run(
            cloud.state_machine(state_machine),
            execution_input,
            name=name,
            outcomes=outcomes,
            reconcile_every=reconcile_every,
            timeout=timeout,
            follow=follow,
        )
        for note in cloud.training.real.notes:
            print(f"note: {note}", file=notes or sys.stderr)
        return result


__all__ = ["run_template", "template_problem"]
