"""``hetero-train local serve``: the stacks served on 127.0.0.1, used as an AWS account.

One server (a subprocess, as a user starts it) serves the example app's stacks and a user's
Lambda -> task -> Choice pipeline; ``hetero-train`` commands, the ``TrainingRun`` API and plain
boto3 talk to it through ``AWS_ENDPOINT_URL`` only. Its first job fails for capacity
(``--outcome``), so the checks run in order, in one test (xdist spreads tests over workers).
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import boto3
import pytest

from hetero_constructs.cli import main
from tests.fixtures.example_app import Synthesized
from tests.fixtures.json_lines import records

CAPACITY = "Failed:CapacityError: Unable to provision requested ML compute capacity."
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(example: Synthesized, user_pipeline: Path, tmp_path: Path) -> Iterator[str]:
    """The server's URL; SIGTERM ends it (exit 0) after the module's tests. Without -v it
    prints no notes (issue 33: five at every start that nobody could act on)."""
    templates = [
        str(example.outdir / "HeteroTrainingExample.template.json"),
        str(example.outdir / "HeteroTrainingPipeline.template.json"),
        str(user_pipeline),
    ]
    command = [sys.executable, "-m", "hetero_constructs.cli", "local", "serve", *templates]
    # Drills: the first job's capacity failure, then every job a simulated Completed.
    options = ["--port", "0", "--job-duration", "1", "--outcome", CAPACITY]
    options += ["--simulate", "Completed"]
    server = subprocess.Popen(
        [*command, *options],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "stderr.txt").open("w"),
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert server.stdout is not None
    url = None
    deadline = time.monotonic() + 120
    while url is None and time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line:
            break
        if found := re.fullmatch(r"serving on (http://127\.0\.0\.1:\d+)\n", line):
            url = found.group(1)
    assert url is not None, "the server never said where it serves"
    try:
        yield url
    finally:
        server.send_signal(signal.SIGTERM)
        rest, _ = server.communicate(timeout=60)
        assert server.returncode == 0
        assert "stopped serving" in rest
        assert "note:" not in (tmp_path / "stderr.txt").read_text()


@pytest.fixture
def account(served: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The environment a user sets to use the local account."""
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "HETERO_TRAIN_ENDPOINT_URL"):
        monkeypatch.delenv(key, raising=False)
    for key, value in {
        "AWS_ENDPOINT_URL": served,
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    return served


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv), out=out)
    return code, out.getvalue()


def a_run_fails_over_from_a_capacity_error_and_is_shown_in_time_order() -> None:
    code, text = cli(
        "run", "HeteroTrainingExample/Training", "--input", '{"hyperparameters": {"epochs": 2}}',
        "--name", "served-1", "--follow", "--poll-interval", "0.2", "--json",
    )  # fmt: skip
    assert code == 0, text
    shown = records(text)
    summary = shown[-1]
    assert summary["type"] == "summary" and summary["succeeded"] is True
    first, second = summary["jobs"]
    # A capacity failure never trains and bills nothing.
    assert [t["Status"] for t in first["secondaryStatusTransitions"]] == ["Starting", "Failed"]
    assert first["billableTimeInSeconds"] == 0 and first["trainingStartTime"] is None
    assert [t["Status"] for t in second["secondaryStatusTransitions"]] == [
        "Starting", "Downloading", "Training", "Uploading", "Completed"
    ]  # fmt: skip
    # Every host's lines, labelled with its instance group.
    logs = [r for r in shown if r["type"] == "log"]
    assert {(r["host"], r["group"]) for r in logs} == {
        ("algo-1", "data"), ("algo-2", "data"), ("algo-3", "gpu"), ("algo-4", "gpu")
    }  # fmt: skip
    stamps = [r["timestamp"] for r in shown if r["type"] != "summary" and r["timestamp"]]
    assert stamps == sorted(stamps)

    code, text = cli("status", "served-1", "--json")
    assert code == 0 and json.loads(text)["status"] == "SUCCEEDED"
    # What each attempt ran on (tests/e2e/test_capacity.py: a fallback's other types).
    ran_on = [job["instances"] for job in json.loads(text)["jobs"]]
    assert ran_on == [first["instances"], second["instances"]]
    assert all(e["group"] in ("data", "gpu") and e["instanceCount"] for e in ran_on[0])
    code, text = cli("status", "served-1")
    shown = [line for line in text.splitlines() if "ran on" in line]
    assert len(shown) == 2 and all(
        f"{e['instanceType']}" in shown[i] for i in (0, 1) for e in ran_on[i]
    )
    from hetero_constructs import TrainingRun

    jobs = TrainingRun.attach("served-1").status().jobs
    assert [job.instances for job in jobs] == ran_on
    finals = [job["finalMetricDataList"] for job in summary["jobs"]]
    assert [job.final_metrics for job in jobs] == [
        {m["MetricName"]: m["Value"] for m in final} for final in finals
    ]
    code, text = cli("logs", "served-1", "--group", "gpu", "--json")
    assert code == 0 and {r["group"] for r in records(text)} == {"gpu"}
    code, text = cli("list", "HeteroTrainingExample/Training", "--json")
    assert code == 0 and "served-1" in [r["name"] for r in json.loads(text)["runs"]]


def stop_aborts_a_run() -> None:
    # The run's job lasts until the stop, however slow the machine (the account's 1 s drill
    # could end the run first); later drills last 1 s again, nothing left scripted.
    code, _ = cli("local", "script", "Completed", "--job-duration", "3600")
    assert code == 0
    code, _ = cli("run", "HeteroTrainingExample/Training", "--name", "served-stop", "--no-follow")
    assert code == 0
    code, text = cli("stop", "served-stop", "--json")
    assert code == 0
    stopped = json.loads(text)
    assert stopped["stoppedExecution"] is True and stopped["status"] == "ABORTED"
    assert cli("local", "script", "Completed", "--job-duration", "1")[0] == 0
    assert cli("local", "script", "--clear")[0] == 0


def redrive_takes_an_aborted_run_on_and_refuses_a_succeeded_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, text = cli(
        "redrive", "served-stop", "--follow", "--json", "--poll-interval", "0.2",
        "--log-grace", "2",
    )  # fmt: skip
    assert code == 0, text
    summary = records(text)[-1]
    assert summary["succeeded"] is True and summary["status"] == "SUCCEEDED"
    described = boto3.client("stepfunctions").describe_execution(
        executionArn=summary["executionArn"]
    )
    assert described["redriveCount"] == 1 and "redriveDate" in described
    # Without --follow: it says so, and the run goes on to its end. The run fails on its
    # input (not on a stop that could come after a 1 s job's end), and fails again.
    code, _ = cli(
        "run", "HeteroTrainingExample/Training", "--name", "served-fail", "--no-check",
        "--input", '{"bogus": 1}', "--follow",
        "--poll-interval", "0.2",
    )  # fmt: skip
    assert code != 0
    # It failed in the example's Fail state: a redrive would fail again at once. Refused,
    # saying what to run instead (issue 33); --force redrives it all the same.
    capsys.readouterr()
    code, text = cli("redrive", "served-fail")
    assert (code, text) == (1, "")
    refused = capsys.readouterr().err
    assert "failed in its Fail state 'Training failed'" in refused
    assert "hetero-train run hetero-example --input '{\"bogus\": 1}'" in refused
    code, text = cli("redrive", "served-fail", "--force")
    assert code == 0, text
    assert re.match(r"Redriven arn:aws:states:\S+:served-fail \(redrive 1\)\n", text), text
    assert "hetero-train logs" in text
    from hetero_constructs import TrainingRun

    arn = text.split()[1]
    ended = TrainingRun.attach(arn).wait(out=None, poll_seconds=0.2, log_grace=1)
    assert not ended.succeeded and ended.status == "FAILED"
    assert boto3.client("stepfunctions").describe_execution(executionArn=arn)["redriveCount"] == 1
    capsys.readouterr()
    code, text = cli("redrive", "served-1", "--json")
    assert (code, text) == (1, "")
    refused = json.loads(capsys.readouterr().err)
    assert refused["error"] == "ExecutionNotRedrivable"
    assert "SUCCEEDED" in refused["message"]


def a_users_pipeline_runs_with_its_own_input() -> None:
    code, text = cli(
        "run", "user-pipeline", "--input", '{"epochs": 3}', "--name", "served-user",
        "--follow", "--poll-interval", "0.2", "--json",
    )  # fmt: skip
    assert code == 0, text
    summary = records(text)[-1]
    assert summary["succeeded"] is True
    sagemaker = boto3.client("sagemaker")
    [job] = summary["jobs"]
    described = sagemaker.describe_training_job(TrainingJobName=job["name"])
    assert described["HyperParameters"]["epochs"] == "3"  # the Lambda's result


def a_users_pipeline_is_named_as_a_training_job_is() -> None:
    """STACK/CONSTRUCT_ID of a user's own state machine, of the training task in it, or the
    stack alone (it holds one): the same state machine (issue 33: "exports no training job")."""
    for target in ("UserPipeline/Pipeline", "UserPipeline/Train", "UserPipeline"):
        code, text = cli("list", target, "--json")
        assert code == 0, (target, text)
        assert "served-user" in [r["name"] for r in json.loads(text)["runs"]]


def plain_boto3_sees_the_account() -> None:
    names = [
        m["name"] for m in boto3.client("stepfunctions").list_state_machines()["stateMachines"]
    ]
    assert {"hetero-example", "user-pipeline"} <= set(names)
    stack = boto3.client("cloudformation").describe_stacks(StackName="HeteroTrainingExample")
    assert stack["Stacks"][0]["Outputs"]


def the_python_api_starts_follows_and_reads_a_run() -> None:
    from hetero_constructs import RunInputError, TrainingRun

    with pytest.raises(RunInputError) as refused:
        TrainingRun.start("hetero-example", input={"bogus": 1})
    assert [v.rule for v in refused.value.violations] == ["OVERRIDE-UNKNOWN-KEY"]

    run = TrainingRun.start("hetero-example", input={"hyperparameters": {"epochs": 1}}, name="api")
    printed = io.StringIO()
    status = run.wait(logs=True, out=printed, poll_seconds=0.2, log_grace=5)
    assert status.succeeded and status.ended and str(status) == "api: SUCCEEDED"
    [job] = status.jobs
    assert job.status == "Completed" and job.instance_groups == {"data": 2, "gpu": 2}
    assert job.model_artifacts and job.billable_seconds is not None
    lines = printed.getvalue().splitlines()
    # A drill: its hosts' lines say so, and still name their group.
    assert any(
        line.endswith("[algo-3 gpu] [simulated] SM_CURRENT_INSTANCE_GROUP=gpu") for line in lines
    )
    assert lines[-1] == "api: SUCCEEDED"

    attached = TrainingRun.attach(run.arn)
    gpu = attached.logs(group="gpu")
    assert gpu and {line.group for line in gpu} == {"gpu"}
    assert attached.status().summary["jobs"][0]["name"] == job.name
    with pytest.raises(LookupError):
        TrainingRun.attach(run.arn + "-missing")

    again = TrainingRun.start("hetero-example", name="api-stop")
    outcome = again.stop()
    assert outcome.stopped_execution and again.status().status == "ABORTED"
    redriven = again.redrive()
    assert (redriven.redrive_count, redriven.status) == (1, "RUNNING")
    assert again.wait(out=None, poll_seconds=0.2, log_grace=1).succeeded


def the_served_process_is_steered_through_its_port(user_pipeline: Path) -> None:
    """``local script / deploy`` reach the account ``local serve`` runs in its own process
    (found through AWS_ENDPOINT_URL, as every other command finds it)."""
    code, text = cli("local", "script", "--json")
    assert code == 0 and json.loads(text) == {"next": [], "simulated": True, "then": "Completed"}
    code, text = cli("local", "deploy", str(user_pipeline), "--json")
    assert code == 0, text
    [stack] = json.loads(text)["stacks"]
    assert (stack["stack"], stack["action"]) == ("UserPipeline", "unchanged")


def test_the_local_account_serves_runs_as_aws_does(
    account: str, user_pipeline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_run_fails_over_from_a_capacity_error_and_is_shown_in_time_order()
    stop_aborts_a_run()
    redrive_takes_an_aborted_run_on_and_refuses_a_succeeded_one(capsys)
    a_users_pipeline_runs_with_its_own_input()
    a_users_pipeline_is_named_as_a_training_job_is()
    the_python_api_starts_follows_and_reads_a_run()
    plain_boto3_sees_the_account()
    the_served_process_is_steered_through_its_port(user_pipeline)


def test_serve_on_a_port_in_use_exits_at_once_naming_port_0(
    example: Synthesized, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33: it printed the server thread's error, then hung until SIGTERM."""
    import socket

    template = str(example.outdir / "HeteroTrainingExample.template.json")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code, out = cli("local", "serve", template, "--port", str(port))
    assert (code, out) == (1, "")
    error = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in error and "--port 0" in error


def test_serve_names_a_template_that_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli("local", "serve", str(tmp_path / "Missing.template.json"))
    assert (code, out) == (1, "")
    assert "does not exist; run `cdk synth` first" in capsys.readouterr().err
    code, _ = cli("local", "serve", str(tmp_path), "--outcome", "Crashed")
    assert code == 1  # the template is checked first: the directory holds none
    assert "is a directory" in capsys.readouterr().err
