"""``hetero-train run``: the input is checked as the training task will see it.

Where the task reads its overrides from the execution input's root, the input is checked as
overrides; where it reads them from a path an earlier state produces, the input is not (one
note says so), unless the input already holds a value at that path; ``--no-check`` skips it.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from hetero_constructs.cli import main
from hetero_constructs.runs.inputs import find_submit_tasks, overrides_to_check
from tests.fixtures.example_app import Synthesized
from tests.fixtures.json_lines import record

# What these tests check is the input, not training: each job ends Completed as a drill (the
# pipelines' channels hold no data in a fresh local account, so a real job would be refused).
DRILL = ("--simulate", "Completed")


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv), out=out)
    return code, out.getvalue()


def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "training task" in line]


def test_the_example_pipeline_runs_with_its_documented_input(
    example: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    template = str(example.outdir / "HeteroTrainingPipeline.template.json")
    code, text = run(
        "run", "--local", template, "--input", '{"dataset_version": "v7"}', *DRILL, "--json"
    )
    assert code == 0, text
    [note] = notes(capsys.readouterr().err)
    assert "reads its overrides from $.prepared, which earlier states produce" in note


def test_a_users_lambda_task_choice_pipeline_runs_with_its_own_input(
    user_pipeline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = run(
        "run", "--local", str(user_pipeline), "--input", '{"epochs": 3}', *DRILL, "--json"
    )
    assert code == 0, text
    result = record(text, "local-result")
    assert result["status"] == "SUCCEEDED"
    [job] = result["jobs"]
    # The Lambda's result became the overrides: its epochs reached the job.
    assert job["request"]["HyperParameters"]["epochs"] == "3"
    [note] = notes(capsys.readouterr().err)
    assert "'Train' reads its overrides from $.prepared" in note


def test_a_value_the_input_already_holds_at_the_path_is_checked(
    user_pipeline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = '{"prepared": {"hyperparameter": {"epochs": 3}}}'
    code, text = run("run", "--local", str(user_pipeline), "--input", bad, "--json")
    assert code == 1
    answer = json.loads(text)
    assert answer["started"] is False
    assert [v["rule"] for v in answer["violations"]] == ["OVERRIDE-UNKNOWN-KEY"]
    assert "the value the input holds there was checked" in notes(capsys.readouterr().err)[0]


def test_no_check_starts_the_run_unchecked(
    user_pipeline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = '{"prepared": {"hyperparameter": {"epochs": 3}}}'
    code, text = run(
        "run", "--local", str(user_pipeline), "--input", bad, "--no-check", *DRILL, "--json"
    )
    # The Lambda replaces $.prepared before the task reads it: the run succeeds.
    assert code == 0, text
    assert record(text, "local-result")["status"] == "SUCCEEDED"
    assert "--no-check" in capsys.readouterr().err


def definition(state: dict[str, object], first: bool) -> dict[str, object]:
    payload = {"spec": {}, "jobNamePrefix": "p", **state.pop("payload", {})}  # type: ignore[dict-item]
    task = {"Type": "Task", "Parameters": {"Payload": payload}, "End": True, **state}
    states: dict[str, object] = {"Train": task}
    if not first:
        states = {"Prepare": {"Type": "Pass", "Next": "Train"}, **states}
    return {"StartAt": "Train" if first else "Prepare", "States": states}


@pytest.mark.parametrize(
    ("state", "first", "given", "checked", "value"),
    [
        ({"payload": {"input.$": "$"}}, True, {"a": 1}, True, {"a": 1}),
        ({"payload": {"input.$": "$.x"}}, True, {"x": {"a": 1}}, True, {"a": 1}),
        ({"payload": {"input.$": "$"}, "InputPath": "$.x"}, True, {"x": 2}, True, 2),
        ({"payload": {"input.$": "$"}}, False, {"a": 1}, False, None),
        ({"payload": {"input.$": "$.p"}}, False, {"p": {"a": 1}}, True, {"a": 1}),
        ({"payload": {"input.$": "$.p"}}, False, {"q": 1}, False, None),
        ({"payload": {"input": "{% $states.input.p %}"}}, False, {"p": 3}, True, 3),
        ({"payload": {"input": "{% $states.input %}"}}, True, {"p": 3}, True, {"p": 3}),
        ({"payload": {"input": {"static": 1}}}, True, {"p": 3}, False, None),
        ({"payload": {}}, True, {"p": 3}, False, None),
    ],
)
def test_where_a_task_reads_its_overrides(
    state: dict[str, object], first: bool, given: object, checked: bool, value: object
) -> None:
    [planned] = overrides_to_check(find_submit_tasks(definition(dict(state), first)), given)
    assert (planned.checked, planned.value) == (checked, value)
    # Whatever is not checked says why, in one line.
    assert checked or (planned.note is not None and "\n" not in planned.note)
