"""``hetero-train run --local TEMPLATE``: the same command against the local runner."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest

from hetero_constructs.cli import main
from tests.synthesized import Synthesized

CAPACITY = "Failed:CapacityError: Unable to provision requested ML compute capacity."


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv), out=out)
    return code, out.getvalue()


def test_run_local_fails_over_and_reports_as_json(example: Synthesized) -> None:
    template = str(example.outdir / "HeteroTrainingExample.template.json")
    code, text = run(
        "run",
        "--local",
        template,
        "--input",
        '{"hyperparameters": {"epochs": 2}}',
        "--outcome",
        CAPACITY,
        "--outcome",
        "Completed",
        "--json",
    )
    assert code == 0, text
    result = json.loads(text)
    assert result["status"] == "SUCCEEDED"
    first, second = result["jobs"]
    assert first["status"] == "Failed" and second["status"] == "Completed"
    assert first["name"] != second["name"]
    assert second["request"]["HyperParameters"]["epochs"] == "2"


def test_run_local_refuses_bad_input_before_starting(example: Synthesized) -> None:
    template = str(example.outdir / "HeteroTrainingExample.template.json")
    code, text = run("run", "--local", template, "--input", '{"bogus": 1}', "--json")
    assert code == 1
    answer = json.loads(text)
    assert answer["started"] is False
    assert [v["rule"] for v in answer["violations"]] == ["OVERRIDE-UNKNOWN-KEY"]


def test_run_local_follows_the_run_on_the_display(example: Synthesized) -> None:
    template = str(example.outdir / "HeteroTrainingExample.template.json")
    code, text = run("run", "--local", template, "--outcome", "Failed:AlgorithmError: boom")
    assert code == 1
    assert "HeteroTraining.TrainingFailed" in text
    assert "AlgorithmError: boom" in text


def test_run_local_names_the_templates_of_a_cloud_assembly_given_instead(
    example: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run("run", "--local", str(example.outdir), "--no-follow")
    assert code == 1
    error = capsys.readouterr().err
    assert "is a directory" in error
    assert f"{example.stack.stack_name}.template.json" in error
