"""hetero-train against a fake training stack in moto, in this process (``mock_aws``)."""

from __future__ import annotations

import io
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.cli import main
from hetero_constructs.cli.follow import EXIT_INTERRUPTED, follow_run
from hetero_constructs.cli.output import make_console
from hetero_constructs.contract.naming import preview_job_name
from hetero_constructs.runs.clients import RunClients
from tests.fixtures.fake_stack import CONSTRUCT_PATH, PREFIX, STACK, FakeStack, Scenario

REPO = Path(__file__).parents[2]


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


def clients(stack: FakeStack) -> RunClients:
    return RunClients(stack.stepfunctions, stack.sagemaker, stack.logs, stack.cloudformation)


def start(stack: FakeStack, name: str, *extra: str) -> str:
    code, text = cli("run", STACK, "Training", "--name", name, "--no-follow", "--json", *extra)
    assert code == 0, text
    return str(json.loads(text)["executionArn"])


def ctrl_c(*_: Any, **__: Any) -> Any:
    """Stands in for a sleep or a call that the user interrupts."""
    raise KeyboardInterrupt


def follow(stack: FakeStack, scenario: Scenario, **kwargs: Any) -> tuple[int, str]:
    text = io.StringIO()
    result = follow_run(
        clients(stack),
        scenario.execution_arn,
        make_console(text, terminal=False),
        poll_seconds=0,
        sleep=scenario.step,
        **kwargs,
    )
    return result.exit_code, text.getvalue()


# -- run: targets, local validation, start -----------------------------------------------------


def test_run_starts_an_execution_with_the_input_and_names_its_job(stack: FakeStack) -> None:
    code, text = cli(
        "run",
        f"{STACK}/Training",
        "--name",
        "nightly-1",
        "--input",
        '{"hyperparameters": {"epochs": 5}, "job_name_prefix": "exp"}',
        "--no-follow",
        "--json",
    )
    assert code == 0, text
    started = json.loads(text)
    assert started["started"] and started["validated"]
    assert started["executionArn"] == stack.execution_arn("nightly-1")
    # The job name is the one the submit Lambda will give (prefix + override + execution name).
    preview = preview_job_name(f"{PREFIX}-exp", "nightly-1")
    assert started["trainingJobNamePatterns"] == [f"{preview.rsplit('-', 1)[0]}-*"]
    described = stack.stepfunctions.describe_execution(executionArn=started["executionArn"])
    assert json.loads(described["input"])["hyperparameters"] == {"epochs": 5}


def test_every_target_form_finds_the_state_machine(stack: FakeStack, tmp_path: Path) -> None:
    (tmp_path / "input.json").write_text('{"tags": {"run": "42"}}')
    forms = [
        [stack.state_machine_arn],
        [PREFIX],
        [CONSTRUCT_PATH],
        [STACK, "Training"],
    ]
    for index, target in enumerate(forms):
        code, text = cli(
            "run", *target, "--name", f"r{index}", "--input", f"@{tmp_path / 'input.json'}",
            "--no-follow", "--json",
        )  # fmt: skip
        assert code == 0, (target, text)
        assert json.loads(text)["stateMachineArn"] == stack.state_machine_arn


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (["no-such-machine"], "No state machine is named 'no-such-machine'"),
        ([f"{STACK}/Nope"], "has no training job, state machine or training task 'Nope'"),
        (["NoStack/Training"], "No CloudFormation stack 'NoStack'"),
    ],
)
def test_unknown_targets_say_what_exists(
    stack: FakeStack, target: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = cli("run", *target, "--no-follow")
    error = capsys.readouterr().err
    assert code == 2  # a usage error, never a service's traceback
    assert expected in error and "Fix:" in error
    assert "Traceback" not in error
    if "Nope" in expected:
        assert CONSTRUCT_PATH in error  # the training jobs the stack does export


@pytest.mark.parametrize(
    ("command", "given", "closest"),
    [
        (["run"], PREFIX[:-1], PREFIX),
        (["run"], f"{STACK}/Trainin", f"{STACK}/Training"),
        (["list"], STACK[:-1], STACK),
        (["status"], "my-runn", "my-run"),
        (["logs"], "my-runn", "my-run"),
    ],
)
def test_a_near_miss_names_the_closest_and_exits_2(
    stack: FakeStack,
    command: list[str],
    given: str,
    closest: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    start(stack, "my-run")
    capsys.readouterr()
    code, _ = cli(*command, given, "--json")
    error = json.loads(capsys.readouterr().err)
    assert code == 2
    assert error["error"] == "NotFound"
    assert closest in error["message"]


def test_every_entry_point_of_training_run_takes_the_same_names(stack: FakeStack) -> None:
    from hetero_constructs.runs import TrainingRun

    runs = clients(stack)
    for target in (stack.state_machine_arn, PREFIX, f"{STACK}/Training", CONSTRUCT_PATH):
        run = TrainingRun.start(target, {}, check=False, clients=runs)
        assert run.arn.startswith(stack.state_machine_arn.replace(":stateMachine:", ":execution:"))
        assert TrainingRun.attach(run.name, clients=runs).arn == run.arn  # by name
        assert TrainingRun.attach(run.arn, clients=runs).arn == run.arn  # by ARN
    with pytest.raises(LookupError, match=r"Closest: .*Training"):
        TrainingRun.start(f"{STACK}/Trainin", clients=runs)
    with pytest.raises(LookupError, match=f"Closest: {run.name}"):
        TrainingRun.attach(run.name + "x", clients=runs)
    with pytest.raises(LookupError, match="No execution"):
        TrainingRun.attach(run.arn + "x", clients=runs)


def test_bad_input_starts_nothing(stack: FakeStack, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(
        "run",
        PREFIX,
        "--input",
        '{"hyperparameters": 5, "channels": {"validation": "s3://b/v/"}, "epoch": 1}',
        "--no-follow",
        "--json",
    )
    assert code == 1
    result = json.loads(text)
    assert result["started"] is False
    assert {v["rule"] for v in result["violations"]} == {
        "OVERRIDE-UNKNOWN-KEY",
        "OVERRIDE-TYPE",
        "OVERRIDE-CHANNEL",
    }
    # A valid override that breaks a rule of the merged spec is caught too.
    code, text = cli(
        "run",
        PREFIX,
        "--input",
        '{"hyperparameters": {"sagemaker_program": "evil.py"}}',
        "--no-follow",
    )
    assert code == 1
    assert "[API-HYPERPARAMETERS] hyperparameters.sagemaker_program" in text
    assert 'given:   "sagemaker_program"' in text and "nothing was started" in text
    # A channel outside the granted prefixes is refused before the spec is merged.
    code, text = cli(
        "run", PREFIX, "--input", '{"channels": {"train": "bucket/train"}}', "--no-follow"
    )
    assert code == 1
    assert "[OVERRIDE-CHANNEL-PREFIX] execution input.channels.train" in text
    code, _ = cli("run", PREFIX, "--input", "{epochs: 1}", "--no-follow")
    assert code == 1
    assert "not JSON" in capsys.readouterr().err
    executions = stack.stepfunctions.list_executions(stateMachineArn=stack.state_machine_arn)
    assert executions["executions"] == []


# -- following a run ---------------------------------------------------------------------------


def test_follow_shows_states_job_transitions_and_labelled_logs(stack: FakeStack) -> None:
    arn = start(stack, "ok-1")
    code, text = follow(stack, Scenario(stack, arn))
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0].startswith("Run ok-1 of hetero-training, started ")
    job = preview_job_name(PREFIX, "ok-1")
    for expected in (
        "execution started",
        'execution entered "Run training job"',
        f"job       {job} created (attempt 0)",
        "job       Starting: Preparing the instances for training",
        "job       Downloading: Downloading input data",
        "job       Training: Training in progress.",
        "[algo-2 data] algo-2 step 0",
        "[algo-3 gpu] algo-3 step 2",
        "execution succeeded",
        "job       Completed: Training job completed",
    ):
        assert any(expected in line for line in lines), expected
    end = next(i for i, line in enumerate(lines) if line.startswith("Run ok-1 SUCCEEDED"))
    # Every line between the header and the final screen starts with its time of day.
    assert all(re.match(r"\d\d:\d\d:\d\d  ", line) for line in lines[1:end])
    final = text[text.index("Run ok-1 SUCCEEDED") :]
    assert f"job              {job} (Completed)" in final
    assert f"model artifacts  s3://bucket/output/{job}/output/model.tar.gz" in final
    assert "billable time    10m00s on 4 instances" in final


def test_a_failed_run_exits_1_with_the_failure_reason(stack: FakeStack) -> None:
    arn = stack.execution_arn("bad-1")
    scenario = Scenario(
        stack, arn, outcome="Failed", reason="AlgorithmError: CUDA out of memory (algo-1)"
    )
    driver = threading.Thread(target=scenario.play)
    out = io.StringIO()
    # Started and followed by the command itself; the stack plays its part meanwhile.
    driver.start()
    code = main(["run", PREFIX, "--name", "bad-1", "--follow", "--poll-interval", "0.05"], out=out)
    driver.join()
    text = out.getvalue()
    assert code == 1, text
    assert "Run bad-1 FAILED" in text
    assert "failure reason   AlgorithmError: CUDA out of memory (algo-1)" in text
    assert "execution failed: TrainingJobFailed" in text
    code, status = cli("status", "bad-1", "--json")
    summary = json.loads(status)
    assert code == 0 and summary["status"] == "FAILED" and not summary["succeeded"]
    assert summary["failureReason"] == "AlgorithmError: CUDA out of memory (algo-1)"
    assert summary["jobs"][0]["status"] == "Failed"


def test_follow_json_lines(stack: FakeStack) -> None:
    arn = start(stack, "json-1")
    text = io.StringIO()
    scenario = Scenario(stack, arn)
    result = follow_run(
        clients(stack), arn, make_console(io.StringIO(), terminal=False),
        poll_seconds=0, sleep=scenario.step, json_out=text,
    )  # fmt: skip
    records = [json.loads(line) for line in text.getvalue().splitlines()]
    kinds = {record["type"] for record in records}
    assert kinds == {"execution-event", "job", "job-status", "log", "summary"}
    logs = [r for r in records if r["type"] == "log"]
    assert {(r["host"], r["group"]) for r in logs} == {
        ("algo-1", "gpu"),
        ("algo-2", "data"),
        ("algo-3", "gpu"),
        ("algo-4", "data"),
    }
    assert records[-1]["type"] == "summary" and records[-1]["succeeded"] is True
    assert result.exit_code == 0


def test_ctrl_c_stops_following_or_stops_the_run(stack: FakeStack) -> None:
    arn = start(stack, "int-1")
    scenario = Scenario(stack, arn, outcome=None)
    scenario.step()  # the job exists

    text = io.StringIO()
    result = follow_run(
        clients(stack), arn, make_console(text, terminal=False), sleep=ctrl_c,
        ask=lambda: "f",
    )  # fmt: skip
    assert result.exit_code == EXIT_INTERRUPTED and result.stopped_following
    assert "Stopped following int-1 (RUNNING); the run goes on" in text.getvalue()
    assert stack.stepfunctions.describe_execution(executionArn=arn)["status"] == "RUNNING"

    interrupted = []

    def interrupt_once(_: float) -> None:
        if not interrupted:
            interrupted.append(True)
            raise KeyboardInterrupt

    text = io.StringIO()
    result = follow_run(
        clients(stack), arn, make_console(text, terminal=False), sleep=interrupt_once,
        ask=lambda: "s", log_grace=0,  # the fake's job stays Stopping: no log to wait for
    )  # fmt: skip
    assert result.exit_code == 1
    assert f"Stopping the run (execution ABORTED; stopping {scenario.job})" in text.getvalue()
    assert "Run int-1 ABORTED" in text.getvalue()
    job = stack.sagemaker.describe_training_job(TrainingJobName=scenario.job)
    assert job["TrainingJobStatus"] == "Stopping"


def test_follow_reads_on_after_the_end_for_lines_that_arrive_late(stack: FakeStack) -> None:
    arn = start(stack, "late-1")
    scenario = Scenario(stack, arn, outcome="Failed", reason="AlgorithmError: exit 1")
    sleeps_after_end = 0

    def step(seconds: float) -> None:
        nonlocal sleeps_after_end
        if scenario.played < 4:
            scenario.step()
            return
        sleeps_after_end += 1
        if sleeps_after_end == 1:  # after a poll that found the run ended, nothing new
            late = [("algo-3", 30.0, "Traceback: RuntimeError: NCCL timeout")]
            stack.log(scenario.job, late, scenario.start)

    text = io.StringIO()
    result = follow_run(
        clients(stack), arn, make_console(text, terminal=False), poll_seconds=0, sleep=step
    )
    assert result.exit_code == 1
    assert "[algo-3 gpu] Traceback: RuntimeError: NCCL timeout" in text.getvalue()
    # Then two polls with nothing new, and it stops reading.
    assert sleeps_after_end == 3


def test_follow_stops_reading_after_the_log_grace(stack: FakeStack) -> None:
    arn = start(stack, "late-2")
    scenario = Scenario(stack, arn)
    count = 0

    def step(seconds: float) -> None:
        nonlocal count
        scenario.step()
        if scenario.played == 4:  # a host that keeps logging after the end
            count += 1
            stack.log(scenario.job, [("algo-1", 40.0 + count, f"tick {count}")], scenario.start)

    result = follow_run(
        clients(stack), arn, make_console(io.StringIO(), terminal=False), poll_seconds=0,
        sleep=step, log_grace=0.5,
    )  # fmt: skip
    assert result.exit_code == 0 and count > 0


def test_ctrl_c_says_how_to_resume_once_with_the_status_after_the_answer(
    stack: FakeStack,
) -> None:
    arn = start(stack, "int-resume")
    scenario = Scenario(stack, arn)
    scenario.step()  # the job exists

    def answer_after_the_run_ended() -> str:
        scenario.play()  # the run ends while the question is open
        return "f"

    text = io.StringIO()
    follow_run(
        clients(stack), arn, make_console(text, terminal=False), sleep=ctrl_c,
        ask=answer_after_the_run_ended,
    )  # fmt: skip
    shown = text.getvalue()
    [line] = [line for line in shown.splitlines() if "Resume with" in line]
    assert "(SUCCEEDED)" in line and "(RUNNING)" not in shown.split("Stopped following")[1]
    assert line.count(arn) == 1


def test_ctrl_c_without_a_terminal_stops_following(stack: FakeStack) -> None:
    arn = start(stack, "int-2")

    result = follow_run(
        clients(stack), arn, make_console(io.StringIO(), terminal=False), sleep=ctrl_c
    )
    assert result.exit_code == EXIT_INTERRUPTED
    assert stack.stepfunctions.describe_execution(executionArn=arn)["status"] == "RUNNING"


class _TerminalText(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_ctrl_c_with_json_lines_asks_on_standard_error(
    stack: FakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Standard output carries JSON Lines: the question must not land between them.
    arn = start(stack, "int-3")
    stdout, stderr = _TerminalText(), _TerminalText()
    monkeypatch.setattr("sys.stderr", stderr)
    monkeypatch.setattr("sys.stdin", _TerminalText())
    asked_on: list[Any] = []

    def answer(*_: Any, console: Any, **__: Any) -> str:
        asked_on.append(console.file)
        return "f"

    monkeypatch.setattr("rich.prompt.Prompt.ask", answer)

    result = follow_run(
        clients(stack), arn, make_console(stdout, terminal=True), sleep=ctrl_c, json_out=stdout
    )
    assert result.exit_code == EXIT_INTERRUPTED
    assert asked_on == [stderr]
    assert all(json.loads(line) for line in stdout.getvalue().splitlines())


# -- status, logs, stop, list -----------------------------------------------------------------


def test_logs_interleave_hosts_in_time_order_with_groups(stack: FakeStack) -> None:
    arn = start(stack, "logs-1")
    scenario = Scenario(stack, arn)
    scenario.play()
    code, text = cli("logs", "logs-1")
    assert code == 0, text
    shown = [line.split("  ", 1)[1] for line in text.splitlines()]
    assert shown[:4] == [
        "[algo-1 gpu] SM_CURRENT_INSTANCE_GROUP=gpu",
        "[algo-2 data] SM_CURRENT_INSTANCE_GROUP=data",
        "[algo-3 gpu] SM_CURRENT_INSTANCE_GROUP=gpu",
        "[algo-4 data] SM_CURRENT_INSTANCE_GROUP=data",
    ]
    # Within each step the hosts logged in reverse number order: the streams interleave.
    assert shown[4:8] == [
        "[algo-4 data] algo-4 step 0",
        "[algo-3 gpu] algo-3 step 0",
        "[algo-2 data] algo-2 step 0",
        "[algo-1 gpu] algo-1 step 0",
    ]
    assert len(shown) == 16 and shown[-1] == "[algo-1 gpu] algo-1 step 2"

    code, text = cli("logs", arn, "--group", "data", "--json")
    records = [json.loads(line) for line in text.splitlines()]
    assert code == 0 and len(records) == 8
    assert {r["host"] for r in records} == {"algo-2", "algo-4"}
    assert [r["timestamp"] for r in records] == sorted(r["timestamp"] for r in records)

    code, _ = cli("logs", arn, "--group", "cpu")
    assert code == 1
    # Following too: a misspelled group would show nothing and exit 0.
    code, text = cli("logs", arn, "--group", "cpu", "--follow", "--poll-interval", "0")
    assert code == 1 and text == ""


def test_hosts_whose_group_is_not_logged_show_the_host_only(
    stack: FakeStack, capsys: pytest.CaptureFixture[str]
) -> None:
    arn = start(stack, "logs-2")
    lines = [("algo-1", 0.0, "SM_CURRENT_INSTANCE_GROUP=gpu"), ("algo-1", 0.1, "hello")]
    lines += [(host, 0.2, f"{host} says hi") for host in ("algo-2", "algo-3", "algo-4")]
    Scenario(stack, arn, lines=lines).play()
    code, text = cli("logs", "logs-2")
    assert code == 0
    assert "[algo-1 gpu] hello" in text
    assert "[algo-3] algo-3 says hi" in text
    assert "the instance group of algo-2, algo-3, algo-4 is not known" in capsys.readouterr().err


def test_stop_aborts_the_execution_and_stops_the_job(stack: FakeStack) -> None:
    arn = start(stack, "stop-1")
    scenario = Scenario(stack, arn, outcome=None)
    scenario.play()
    code, text = cli("stop", "stop-1", "--json")
    assert code == 0, text
    stopped = json.loads(text)
    assert stopped["stoppedExecution"] and stopped["status"] == "ABORTED"
    assert stopped["stoppedTrainingJobs"] == [scenario.job]
    assert (
        stack.sagemaker.describe_training_job(TrainingJobName=scenario.job)["TrainingJobStatus"]
        == "Stopping"
    )
    code, text = cli("stop", arn)
    assert code == 0 and "had already ended (ABORTED); nothing to stop" in text


def test_status_and_list(stack: FakeStack) -> None:
    first = start(stack, "list-1")
    Scenario(stack, first).play()
    second = start(stack, "list-2")
    running = Scenario(stack, second, outcome=None)
    running.play()
    code, text = cli("status", "list-2")
    assert code == 0
    for row in (
        r"status +RUNNING",
        rf"job \(attempt 0\) +{running.job}",
        r"  status +InProgress / Training",
        r"  last transition +Training: Training in progress\.",
    ):
        assert re.search(f"^{row}$", text, re.MULTILINE), row

    code, text = cli("list", PREFIX, "--json")
    runs = {run["name"]: run for run in json.loads(text)["runs"]}
    assert code == 0 and set(runs) == {"list-1", "list-2"}
    assert runs["list-1"]["status"] == "SUCCEEDED" and runs["list-2"]["status"] == "RUNNING"
    assert runs["list-2"]["trainingJobNames"] == [running.job]
    code, text = cli("list", STACK, "Training")
    header, *rows = text.splitlines()
    assert header.split() == ["run", "status", "started", "duration", "training", "job"]
    assert {row.split()[0] for row in rows} == {"list-1", "list-2"}


def test_unknown_run_is_an_error(stack: FakeStack, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = cli("status", "nope")
    assert code == 2
    assert "No execution 'nope'" in capsys.readouterr().err


def test_brackets_in_what_aws_reports_are_shown_as_text(stack: FakeStack) -> None:
    # PyTorch prefixes its errors with "[rank0]:" and NCCL names its source "[/opt/...]": as
    # rich markup the first vanished, the second crashed `status` (MarkupError), and the
    # execution events showed "\[rank0]".
    reason = "AlgorithmError: [rank0]: NCCL error in [/opt/conda/torch/ProcessGroupNCCL.cpp:19]"
    arn = start(stack, "brackets-1")
    code, text = follow(stack, Scenario(stack, arn, outcome="Failed", reason=reason))
    assert code == 1, text
    assert f"execution failed: TrainingJobFailed ({reason})" in text
    assert "\\[" not in text
    assert f"failure reason   {reason}" in text
    code, text = cli("status", "brackets-1")
    assert code == 0
    assert re.search(rf"^failure reason +{re.escape(reason)}$", text, re.MULTILINE), text
    assert re.search(rf"^  last transition +Failed: {re.escape(reason)}$", text, re.MULTILINE)

    # The submit Lambda's violations quote the input as given.
    arn = start(stack, "brackets-2")
    violation = {"rule": "OVERRIDE-TAG", "path": "tags.[/x]", "message": "Given: [bold]"}
    stack.stepfunctions.send_task_failure(
        taskToken=stack.submitted(arn)["taskToken"],
        error="HeteroTraining.InvalidInput",
        cause=json.dumps({"errorMessage": "refused", "violations": [violation]}),
    )
    stack.wait_ended(arn)
    code, text = follow(stack, Scenario(stack, arn, outcome=None))
    assert code == 1
    assert re.search(r"^violation +\[OVERRIDE-TAG\] tags\.\[/x\]: Given: \[bold\]$", text, re.M)
    code, text = cli("status", "brackets-2")
    assert code == 0
    assert re.search(r"^violation +\[OVERRIDE-TAG\] Given: \[bold\]$", text, re.MULTILINE), text


def test_log_lines_the_output_cannot_encode_do_not_crash_the_printer(stack: FakeStack) -> None:
    # A pipe on Windows is cp1252 (ASCII with PYTHONIOENCODING=ascii): tqdm's bars and other
    # characters it lacks crashed `logs` with a UnicodeEncodeError mid-output.
    arn = start(stack, "enc-1")
    lines = [("algo-1", 0.0, "SM_CURRENT_INSTANCE_GROUP=gpu"), ("algo-1", 0.1, "epoch 1 ██ ✓ é")]
    Scenario(stack, arn, lines=lines).play()
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii", newline="\n")
    code = main(["logs", "enc-1"], out=out)
    out.flush()
    assert code == 0
    shown = raw.getvalue().decode("ascii").splitlines()
    assert shown[-1].endswith("[algo-1 gpu] epoch 1 \\u2588\\u2588 \\u2713 \\xe9")


def test_an_execution_output_nested_beyond_the_parser_is_shown(stack: FakeStack) -> None:
    # The output's strings and the cause are read as JSON for the jobs they report; they are
    # whatever the states produced: nested deeper than Python's parser, they crashed status
    # and the follow display with a RecursionError.
    deep = "[" * 5000 + "]" * 5000
    arn = start(stack, "deep-1")
    stack.stepfunctions.send_task_success(
        taskToken=stack.submitted(arn)["taskToken"], output=json.dumps({"body": deep})
    )
    assert stack.wait_ended(arn) == "SUCCEEDED"
    code, text = cli("status", "deep-1", "--json")
    assert code == 0 and json.loads(text)["status"] == "SUCCEEDED"
    arn = start(stack, "deep-2")
    stack.stepfunctions.send_task_failure(
        taskToken=stack.submitted(arn)["taskToken"], error="Custom", cause=deep
    )
    assert stack.wait_ended(arn) == "FAILED"
    code, text = follow(stack, Scenario(stack, arn, outcome=None))
    assert code == 1 and "Run deep-2 FAILED" in text
    assert re.search(rf"^failure reason +Custom: {re.escape(deep)}$", text, re.MULTILINE)


def test_ctrl_c_outside_the_follow_loop_exits_130_and_names_the_started_run(
    stack: FakeStack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Between StartExecution and following: the run goes on, and its ARN is its only handle.
    monkeypatch.setattr("hetero_constructs.cli.run_command.follow_run", ctrl_c)
    code, _ = cli("run", STACK, "Training", "--name", "ctrl-c-1", "--follow")
    assert code == EXIT_INTERRUPTED
    assert f"the run may go on: {stack.execution_arn('ctrl-c-1')}" in capsys.readouterr().err
    # Anywhere else (here: status reading the execution), as an interrupted process exits.
    monkeypatch.setattr("hetero_constructs.cli.observe.resolve_execution", ctrl_c)
    code, _ = cli("status", "ctrl-c-1")
    assert code == EXIT_INTERRUPTED
    assert "Aborted." in capsys.readouterr().err
