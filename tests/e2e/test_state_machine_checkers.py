"""Every state machine definition we synthesize passes two independent ASL checkers.

statelint (PyPI) and asl-validator (npm, pinned in package.json) check the definitions of the
example app (the job's own state machine and the pipeline that chains the task) and of the
composition stacks (JSONPath and JSONata chains, two tasks, a loop, a Map, a nested execution),
with the template's tokens made literal.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from statelint.config import Config
from statelint.linter import Linter
from statelint.problem import ProblemType

from tests.fixtures.composed_stacks import ComposedStack, ManyTasksStack, NestedStack
from tests.fixtures.templates import definitions

ROOT = Path(__file__).resolve().parents[2]
ASL_VALIDATOR = ROOT / "node_modules" / "asl-validator" / "dist" / "bin" / "asl-validator.js"
# statelint wants every BackoffRate written as a float; Step Functions accepts a whole number,
# and aws-cdk-lib writes 2 for its own LambdaInvoke retries. Nothing else is ignored.
STATELINT = Config(ignored_problem_types={ProblemType.FLOAT})


def asl_validator(arguments: list[str]) -> subprocess.CompletedProcess[str]:
    node = os.environ.get("JSII_NODE", "node")  # Node 24 from the wheel (tests/conftest.py)
    command = [node, str(ASL_VALIDATOR), *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def all_definitions(example: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in ("HeteroTrainingExample", "HeteroTrainingPipeline"):
        template = json.loads((example.outdir / f"{name}.template.json").read_text())
        found.update({f"{name}/{k}": d for k, d in definitions(template).items()})
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("checkers.out")))
    for stack_class in (ComposedStack, ManyTasksStack, NestedStack):
        stack_class(app, stack_class.__name__)
    for stack in app.synth().stacks:
        found.update({f"{stack.stack_name}/{k}": d for k, d in definitions(stack.template).items()})
    return found


def test_every_kind_of_definition_is_checked(all_definitions: dict[str, Any]) -> None:
    languages = {d.get("QueryLanguage", "JSONPath") for d in all_definitions.values()}
    states = {s for d in all_definitions.values() for s in _state_types(d["States"])}
    assert len(all_definitions) >= 5
    assert "JSONata" in languages and "JSONPath" in languages
    assert {"Task", "Map", "Choice"} <= states


def _state_types(states: dict[str, Any]) -> set[str]:
    types: set[str] = set()
    for state in states.values():
        types.add(state["Type"])
        for nested in (state.get("ItemProcessor"), state.get("Iterator")):
            if nested:
                types |= _state_types(nested["States"])
        for branch in state.get("Branches", []):
            types |= _state_types(branch["States"])
    return types


def test_statelint_finds_nothing(all_definitions: dict[str, Any]) -> None:
    problems = {
        name: found
        for name, definition in all_definitions.items()
        if (found := Linter.validate(definition, STATELINT))
    }
    assert problems == {}


def test_asl_validator_finds_nothing(all_definitions: dict[str, Any], tmp_path: Path) -> None:
    assert ASL_VALIDATOR.is_file(), "asl-validator is installed by npm ci (make setup)"
    arguments: list[str] = []
    for index, definition in enumerate(all_definitions.values()):
        path = tmp_path / f"definition-{index}.json"
        path.write_text(json.dumps(definition))
        arguments += ["--json-path", str(path)]
    result = asl_validator(arguments)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("is valid") == len(all_definitions)


def test_both_checkers_reject_a_transition_to_nowhere(tmp_path: Path) -> None:
    """The checkers are really run: a Next naming no state fails both."""
    broken = {"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Nowhere"}}}
    assert Linter.validate(broken, STATELINT)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    assert asl_validator(["--json-path", str(path)]).returncode != 0
