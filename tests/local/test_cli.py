"""``python -m hetero_constructs.local``: the command line's exit codes and its --json object."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hetero_constructs.local import main
from tests.local.stacks import Synthesized

ROOT = Path(__file__).resolve().parents[2]
CAPACITY = "Failed:CapacityError: Unable to provision requested ML compute capacity."


def test_json_lists_every_attempt_with_its_exact_request(
    stacks: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [str(stacks.path("Training")), "--outcome", CAPACITY, "--outcome", "Completed", "--json"]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)  # one JSON object, nothing else
    assert set(printed) == {"status", "output", "error", "cause", "jobs"}
    assert printed["status"] == "SUCCEEDED"
    assert [(j["status"], j["instance_types"]) for j in printed["jobs"]] == [
        ("Failed", ["ml.c5.xlarge", "ml.p4d.24xlarge"]),
        ("Completed", ["ml.c5.xlarge", "ml.p4d.24xlarge"]),
    ]
    first = printed["jobs"][0]
    assert first["request"]["TrainingJobName"] == first["name"]
    assert first["request"]["ResourceConfig"]["InstanceGroups"][1]["InstanceCount"] == 2


def test_exit_codes_follow_the_expected_status(
    stacks: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    template = str(stacks.path("Training"))
    failing = ["--outcome", "Failed:AlgorithmError: boom"] * 4
    assert main([template, *failing]) == 1
    text = capsys.readouterr().out
    assert "outcome: Failed (AlgorithmError: boom)" in text
    assert '"TrainingJobName": "local-local-run-1-0"' in text  # the full request, as JSON
    assert "execution status: FAILED" in text
    assert main([template, *failing, "--expect", "FAILED"]) == 0


def test_usage_errors_exit_2_and_say_why(
    stacks: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    nested = str(stacks.path("Nested"))
    assert main([nested]) == 2
    error = capsys.readouterr().err
    assert "--state-machine" in error and "local-parent" in error and "local-child" in error
    assert main([nested, "--state-machine", "nope"]) == 2
    assert main([nested, "--state-machine", "local-parent", "--outcome", "Crashed"]) == 2
    assert main([nested, "--input", "{not json"]) == 2
    assert main(["missing.template.json"]) == 2
    assert "cdk synth" in capsys.readouterr().err


def test_the_module_runs_as_a_program(stacks: Synthesized) -> None:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "hetero_constructs.local",
            str(stacks.path("Nested")),
            "--state-machine",
            "local-parent",
            "--input",
            '{"wait": 0, "value": 4}',
            "--region",
            "ap-southeast-2",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    printed = json.loads(completed.stdout)
    assert printed["output"]["answer"]["doubled"] == 8
    assert ":ap-southeast-2:" in printed["output"]["answer"]["parent"]
    assert printed["jobs"] == []
