"""``hetero-train run --local TEMPLATE``: the same command against the local runner.

Its exit codes and --json JSON Lines, and the follow display it shows (``run --follow``'s) before
each job's exact CreateTrainingJob request.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from hetero_constructs.cli import main
from tests.fixtures.example_app import Synthesized
from tests.fixtures.json_lines import record, records
from tests.fixtures.local_stacks import Synthesized as Stacks

ROOT = Path(__file__).resolve().parents[2]
CLOCK = re.compile(r"^\d\d:\d\d:\d\d  ")
JOB = "job       "
#: What the display adds after a drill's job (every job here is one).
DRILL = " - simulated: scripted, no code ran"

CAPACITY = "Failed:CapacityError: Unable to provision requested ML compute capacity."


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv), out=out)
    return code, out.getvalue()


def local(*argv: str) -> tuple[int, str]:
    """``hetero-train run --local ...`` as a drill (every job a simulated Completed unless
    ``--outcome`` says otherwise), followed (as on a terminal): its exit code and output."""
    return run("run", "--local", *argv, "--simulate", "Completed")


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
    result = record(text, "local-result")
    assert result["status"] == "SUCCEEDED"
    first, second = result["jobs"]
    assert first["status"] == "Failed" and second["status"] == "Completed"
    assert first["simulated"] and second["simulated"]  # drills: no code ran
    assert first["name"] != second["name"]
    assert second["request"]["HyperParameters"]["epochs"] == "2"


def test_run_local_refuses_bad_input_before_starting(example: Synthesized) -> None:
    template = str(example.outdir / "HeteroTrainingExample.template.json")
    code, text = run(
        "run", "--local", "--simulate", "Completed", template, "--input", '{"bogus": 1}', "--json"
    )
    assert code == 1
    answer = json.loads(text)
    assert answer["started"] is False
    assert [v["rule"] for v in answer["violations"]] == ["OVERRIDE-UNKNOWN-KEY"]


def test_overrides_that_earlier_states_produce_are_left_to_the_submit_lambda(
    example: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    # The pipeline's task takes its overrides from $.prepared, not from the execution input:
    # the input is not an override and must not be refused as one.
    template = str(example.outdir / "HeteroTrainingPipeline.template.json")
    code, text = run(
        "run",
        "--local",
        "--simulate",
        "Completed",
        template,
        "--input",
        '{"dataset_version": "v7"}',
        "--json",
    )
    assert code == 0, text
    assert record(text, "local-result")["output"]["dataset_version"] == "v7"
    note = capsys.readouterr().err
    assert "reads its overrides from $.prepared, which earlier states produce" in note


def test_run_local_follows_the_run_on_the_display(example: Synthesized) -> None:
    template = str(example.outdir / "HeteroTrainingExample.template.json")
    code, text = run(
        "run",
        "--local",
        "--simulate",
        "Completed",
        template,
        "--outcome",
        "Failed:AlgorithmError: boom",
    )
    assert code == 1
    assert "HeteroTraining.TrainingFailed" in text
    assert "AlgorithmError: boom" in text


def test_run_local_names_the_templates_of_a_cloud_assembly_given_instead(
    example: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run("run", "--local", "--simulate", "Completed", str(example.outdir), "--no-follow")
    assert code == 1
    error = capsys.readouterr().err
    assert "is a directory" in error
    assert f"{example.stack.stack_name}.template.json" in error


def shown(text: str) -> tuple[list[str], list[str], list[str]]:
    """The follow display's timed lines (clock removed) and its final screen; the job names of
    the report below it."""
    display, report = text.split("\n\ntraining job 1: ", 1)
    names = re.findall(r"^training job \d+: (\S+)$", "training job 1: " + report, re.MULTILINE)
    lines = display.splitlines()
    timed = [CLOCK.sub("", line) for line in lines if CLOCK.match(line)]
    final = lines[next(i for i, line in enumerate(lines) if line.startswith("Run ") and i) :]
    return timed, final, names


def job_statuses(timed: list[str], attempt: int) -> list[str]:
    """One attempt's secondary statuses as shown (unmarked lines: one job so far, the first)."""
    marked = re.compile(rf"^{JOB}\[attempt {attempt}\] (\w+)(: .+)?$")
    statuses = "Starting|Downloading|Training|Uploading|Completed|Failed|Stopping|Stopped"
    plain = re.compile(rf"^{JOB}({statuses})(: .+)?$")
    return [
        match.group(1)
        for line in timed
        if (match := marked.match(line) or (plain.match(line) if attempt == 0 else None))
    ]


def test_json_lists_every_attempt_with_its_exact_request(
    stacks: Stacks, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = local(
        str(stacks.path("Training")), "--outcome", CAPACITY, "--outcome", "Completed", "--json"
    )
    assert code == 0
    shown = records(text)  # JSON Lines, nothing else
    # The JSON Lines of a followed remote run, then the local result.
    assert {r["type"] for r in shown[:-1]} == {
        "execution-event", "job", "job-status", "log", "summary"
    }  # fmt: skip
    printed = shown[-1]
    assert set(printed) == {"type", "status", "output", "error", "cause", "jobs"}
    assert record(text, "summary")["succeeded"] is True
    assert printed["status"] == "SUCCEEDED"
    assert [(j["status"], j["instance_types"]) for j in printed["jobs"]] == [
        ("Failed", ["ml.c5.xlarge", "ml.p4d.24xlarge"]),
        ("Completed", ["ml.c5.xlarge", "ml.p4d.24xlarge"]),
    ]
    first = printed["jobs"][0]
    assert first["request"]["TrainingJobName"] == first["name"]
    assert first["request"]["ResourceConfig"]["InstanceGroups"][1]["InstanceCount"] == 2


def test_exit_codes_follow_the_expected_status(
    stacks: Stacks, capsys: pytest.CaptureFixture[str]
) -> None:
    template = str(stacks.path("Training"))
    failing = ["--outcome", "Failed:AlgorithmError: boom"] * 4
    code, text = local(template, "--name", "boom-1", *failing)
    assert code == 1
    assert "outcome: Failed (AlgorithmError: boom)" in text
    assert '"TrainingJobName": "local-boom-1-0"' in text  # the full request, as JSON
    assert "execution status: FAILED" in text
    assert local(template, *failing, "--expect", "failed")[0] == 0


def test_bad_arguments_fail_before_anything_runs_and_say_why(
    stacks: Stacks, capsys: pytest.CaptureFixture[str]
) -> None:
    nested = str(stacks.path("Nested"))
    assert local(nested)[0] == 1
    error = capsys.readouterr().err
    assert "--state-machine" in error and "local-parent" in error and "local-child" in error
    assert local(nested, "--state-machine", "nope")[0] == 2  # a name that matches nothing
    # A malformed --outcome is a usage error (exit 2), as click's own are.
    assert local(nested, "--state-machine", "local-parent", "--outcome", "Crashed")[0] == 2
    assert "--outcome" in capsys.readouterr().err
    assert local(nested, "--input", "{not json")[0] == 1
    assert local("missing.template.json")[0] == 1
    assert "cdk synth" in capsys.readouterr().err
    # The cloud assembly instead of one of its templates: the templates it holds are named.
    assert local(str(stacks.path("Nested").parent))[0] == 1
    error = capsys.readouterr().err
    assert "is a directory" in error and stacks.path("Nested").name in error


def test_the_command_runs_as_a_program(stacks: Stacks) -> None:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "hetero_constructs.cli",
            "run",
            "--local",
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
    printed = record(completed.stdout, "local-result")
    assert printed["output"]["answer"]["doubled"] == 8
    assert ":ap-southeast-2:" in printed["output"]["answer"]["parent"]
    assert printed["jobs"] == []


def test_a_run_that_fails_over_is_shown_as_run_follow_shows_it(
    example: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    template = str(example.outdir / "HeteroTrainingExample.template.json")
    code, text = local(
        template, "--name", "shown-1", "--outcome", CAPACITY, "--outcome", "Completed"
    )
    assert code == 0
    assert text.startswith("Run shown-1 of hetero-example, started ")
    timed, final, names = shown(text)
    assert len(names) == 2 and names[0] != names[1]
    events = [line for line in timed if line.startswith("execution ")]
    assert events[:2] == ["execution started", 'execution entered "Run training job"']
    assert events[-5:] == [
        "execution task succeeded",
        'execution left "Run training job"',
        'execution entered "Training completed"',
        'execution left "Training completed"',
        "execution succeeded",
    ]
    assert (
        "execution task failed: HeteroTraining.CapacityError (CapacityError: Unable to provision "
        "requested ML compute capacity.)" in events
    )
    # What each attempt runs on, as its ResourceConfig says (the example has no fallbacks).
    on = "on data 2 x ml.c5.18xlarge, gpu 2 x ml.p4d.24xlarge"
    assert f"{JOB}{names[0]} created (attempt 0) {on}{DRILL}" in timed
    assert f"{JOB}{names[1]} created (attempt 1) {on}{DRILL}" in timed
    # The capacity failure never trained; the second attempt went through every stage.
    assert job_statuses(timed, 0) == ["Starting", "Failed"]
    assert job_statuses(timed, 1) == [
        "Starting", "Downloading", "Training", "Uploading", "Completed"
    ]  # fmt: skip
    assert final[0].startswith("Run shown-1 SUCCEEDED after ")
    rows = [line.split() for line in final[1:]]
    assert ["job", "[attempt", "0]", names[0], "(Failed)", *DRILL.split()] in rows
    assert ["job", "[attempt", "1]", names[1], "(Completed)", *DRILL.split()] in rows
    assert rows.count(["ran", *on.split()]) == 2
    assert not any(row[:2] == ["failure", "reason"] for row in rows)  # it succeeded
    # The exact requests follow the display.
    assert f'"TrainingJobName": "{names[1]}"' in text and "execution status: SUCCEEDED" in text


def test_a_failed_run_is_shown_with_its_reason_and_exits_1(
    example: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    template = str(example.outdir / "HeteroTrainingExample.template.json")
    failing = [template, "--name", "shown-2", "--outcome", "Failed:AlgorithmError: boom"]
    code, text = local(*failing)
    assert code == 1
    timed, final, (name,) = shown(text)
    assert 'execution entered "Training failed"' in timed
    assert "execution failed: HeteroTraining.TrainingFailed (AlgorithmError: boom)" in timed
    on = "on data 2 x ml.c5.18xlarge, gpu 2 x ml.p4d.24xlarge"
    assert f"{JOB}{name} created (attempt 0) {on}{DRILL}" in timed
    assert job_statuses(timed, 0) == ["Starting", "Downloading", "Training", "Failed"]
    assert final[0].startswith("Run shown-2 FAILED after ")
    assert final[1].split() == ["job", name, "(Failed)", *DRILL.split()]
    assert final[-1].split() == ["failure", "reason", "AlgorithmError:", "boom"]
    assert local(*failing, "--expect", "FAILED")[0] == 0


def test_run_local_takes_the_target_forms_every_command_takes(
    user_pipeline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--state-machine`` takes STACK/CONSTRUCT_ID of a user's own state machine, or of the
    training task inside it (issue 33: refused), as every command does; a near miss names the
    closest and exits 2."""
    template = str(user_pipeline)
    for target in ("UserPipeline/Pipeline", "UserPipeline/Train"):
        code, text = local(template, "--state-machine", target, "--input", '{"epochs": 3}')
        assert code == 0, (target, text, capsys.readouterr().err)
    code, _ = local(template, "--state-machine", "UserPipeline/Trian")
    assert code == 2
    assert "Closest: UserPipeline/Train" in capsys.readouterr().err


def test_a_drills_jobs_are_labelled_simulated_wherever_the_display_names_them(
    example: Synthesized,
) -> None:
    template = str(example.outdir / "HeteroTrainingExample.template.json")
    code, text = run("run", "--local", template, "--outcome", CAPACITY, "--outcome", "Completed")
    assert code == 0, text
    timed, final, names = shown(text)
    created = [line for line in timed if " created" in line]
    assert len(created) == 2 and names[0] in created[0]
    assert all(line.endswith(DRILL) for line in created)
    jobs = [line for line in final if line.startswith("job ")]
    assert len(jobs) == 2
    assert all(line.endswith(DRILL) for line in jobs), jobs
    code, text = run(
        "run", "--local", template, "--outcome", CAPACITY, "--outcome", "Completed", "--json"
    )
    assert code == 0, text
    records = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert [r.get("simulated") for r in records if r["type"] == "job"] == [True, True]
