"""A running served account, steered: ``hetero-train local deploy / script / interrupt``.

Each test serves stacks with ``LocalAccount`` (the library ``local serve`` runs) on a free port
of 127.0.0.1 and steers it only through that port, as a second terminal would: the commands
and ``hetero-train run / status`` get ``--endpoint-url``, the Python client ``ServedAccount``.
A changed stack deployed into it keeps every run and runs its new definition; outcomes
scripted while it serves end the next attempts (labelled simulated); a real job interrupted
as a spot reclaim restarts from its checkpoints and completes. Nothing a host started outlives
the account.
"""

from __future__ import annotations

import io
import json
import shutil
import socket
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from hetero_constructs.cli import main
from hetero_constructs.local import LocalAccount, NotServedAccount, ServedAccount, SteeringError
from tests.fixtures.host_jobs import alive, marked_pids, wait_until
from tests.fixtures.json_lines import records

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux processes")
CAPACITY = "Failed:CapacityError: Unable to provision requested ML compute capacity."
BUCKET = "user-job-bucket"


@pytest.fixture(scope="module")
def user_pipeline_v2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's pipeline changed (its Lambda's code, its state machine), synthesized anew."""
    from tests.fixtures.user_pipeline import synthesize

    return synthesize(tmp_path_factory.mktemp("user-cdk.out-v2"), version=2)


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv), out=out)
    return code, out.getvalue()


def _client(account: LocalAccount, service: str) -> Any:
    """A boto3 client of the served account, through its port (as another process's)."""
    return boto3.client(service, endpoint_url=account.url, region_name=account.region)


def _output(account: LocalAccount, run: str) -> dict[str, Any]:
    stepfunctions = _client(account, "stepfunctions")
    arn = next(
        e["executionArn"]
        for m in stepfunctions.list_state_machines()["stateMachines"]
        for e in stepfunctions.list_executions(stateMachineArn=m["stateMachineArn"])["executions"]
        if e["name"] == run
    )
    return dict(json.loads(stepfunctions.describe_execution(executionArn=arn)["output"]))


def _epochs(account: LocalAccount, summary: dict[str, Any]) -> list[str]:
    sagemaker = _client(account, "sagemaker")
    return [
        sagemaker.describe_training_job(TrainingJobName=job["name"])["HyperParameters"]["epochs"]
        for job in summary["jobs"]
    ]


def _run(url: str, target: str, name: str, run_input: dict[str, Any]) -> dict[str, Any]:
    """Run ``target`` to its end, followed; its summary record."""
    code, text = cli(
        "run", target, "--endpoint-url", url, "--input", json.dumps(run_input),
        "--name", name, "--follow", "--poll-interval", "0.2", "--log-grace", "0", "--json",
    )  # fmt: skip
    summary = records(text)[-1]
    assert summary["type"] == "summary", text
    assert code == (0 if summary["succeeded"] else 1), text
    return summary


def test_a_changed_stack_deploys_into_the_running_account_keeping_its_runs(
    user_pipeline: Path, user_pipeline_v2: Path
) -> None:
    with LocalAccount(
        [user_pipeline], port=0, simulate="Completed", job_duration=timedelta(0)
    ) as account:
        url = account.url
        before = _run(url, "user-pipeline", "before", {"epochs": 3})
        assert before["succeeded"] and _epochs(account, before) == ["3"]
        assert "shipped" not in _output(account, "before")

        code, text = cli("local", "deploy", str(user_pipeline_v2), "--endpoint-url", url)
        assert code == 0, text
        lines = text.splitlines()
        assert lines[0] == "stack UserPipeline: updated"
        updated = next(line for line in lines if line.startswith("  updated in place: "))
        assert "Preprocess" in updated and "(AWS::Lambda::Function)" in updated
        assert "(AWS::StepFunctions::StateMachine)" in updated
        assert not any("created:" in line for line in lines)
        [machine] = account.stacks["UserPipeline"]
        assert lines[-1] == f"  state machines: {machine}"

        # Every run of before is there, as it ended.
        code, text = cli("status", "before", "--endpoint-url", url, "--json")
        assert code == 0 and json.loads(text)["status"] == "SUCCEEDED"
        code, text = cli("list", "UserPipeline", "--endpoint-url", url, "--json")
        assert [r["name"] for r in json.loads(text)["runs"]] == ["before"]
        # The new definition runs, with the Lambda's new code.
        after = _run(url, "UserPipeline/Pipeline", "after", {"epochs": 3})
        assert after["succeeded"] and _epochs(account, after) == ["30"]
        assert _output(account, "after")["shipped"] == "v2"

        # The same template again changes nothing; Python says so too.
        [again] = ServedAccount(url).deploy([user_pipeline_v2])
        assert again.change.to_json()["action"] == "unchanged"
        assert again.change.unchanged > 0 and again.state_machines == [machine]


def test_a_template_that_cannot_deploy_is_refused_with_nothing_changed(
    user_pipeline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "Broken.template.json"
    broken.write_text('{"Resources": ')
    not_a_template = tmp_path / "List.template.json"
    not_a_template.write_text("[]")
    # JSON, and a template, but its state machine is no state machine: refused before any
    # resource of it changes (its Lambda first), not half-way through.
    bad_definition = tmp_path / "UserPipeline.template.json"
    body = json.loads(user_pipeline.read_text())
    for resource in body["Resources"].values():
        if resource["Type"] == "AWS::Lambda::Function":
            resource["Properties"]["Timeout"] = 30
        if resource["Type"] == "AWS::StepFunctions::StateMachine":
            resource["Properties"]["DefinitionString"] = '{"StartAt": "Nowhere", "States": {}}'
    bad_definition.write_text(json.dumps(body))
    with LocalAccount([user_pipeline], port=0, simulate="Completed") as account:
        stacks = dict(account.stacks)
        for template, says in (
            (broken, "cannot be read as JSON"),
            (not_a_template, "no CloudFormation template"),
            (tmp_path / "Missing.template.json", "does not exist"),
            (bad_definition, "state machine Pipeline"),
        ):
            code, out = cli("local", "deploy", str(template), "--endpoint-url", account.url)
            error = capsys.readouterr().err
            assert (code, out) == (1, ""), error
            assert says in error and "Traceback" not in error
            # The account refuses it too (another client may skip the command's own check).
            with pytest.raises(SteeringError, match=says) as refused:
                ServedAccount(account.url).deploy([template])
            assert refused.value.name == "InvalidTemplate"
        assert account.stacks == stacks
        functions = _client(account, "lambda").list_functions()["Functions"]
        assert [f["Timeout"] for f in functions if "Preprocess" in f["FunctionName"]] == [3]


def test_an_endpoint_that_is_no_served_account_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.server import ThreadedMotoServer

    moto_server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto_server.start()
    try:
        host, port = moto_server.get_host_and_port()
        code, out = cli("local", "script", "--endpoint-url", f"http://{host}:{port}")
    finally:
        moto_server.stop()
    error = capsys.readouterr().err
    assert (code, out) == (1, "")
    assert "is no served hetero-constructs local account" in error and "Traceback" not in error
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed}")
    code, out = cli("local", "interrupt", "some-job")
    error = capsys.readouterr().err
    assert (code, out) == (1, "")
    assert f"Nothing answers at http://127.0.0.1:{closed}" in error
    assert "hetero-train local serve" in error
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    with pytest.raises(NotServedAccount, match="No endpoint of a served account is given"):
        ServedAccount()


@pytest.fixture
def user_jobs(stacks: Any, tmp_path: Path) -> Iterator[tuple[LocalAccount, Path]]:
    """A served account whose jobs run for real (the user's tiny script), its data in S3."""
    marks = tmp_path / "marks"
    marks.mkdir()
    with LocalAccount([stacks.path("UserJob")], port=0) as account:
        s3 = _client(account, "s3")
        s3.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": account.region}
        )
        for key in ("a.csv", "b.csv", "c.csv", "d.csv"):
            s3.put_object(Bucket=BUCKET, Key=f"datasets/train/{key}", Body=key.encode())
        s3.put_object(Bucket=BUCKET, Key="datasets/shared/x.txt", Body=b"x")
        yield account, marks
    # Nothing any host started outlives the account.
    assert not [pid for pid in marked_pids(marks) if alive(pid)]


def test_outcomes_scripted_while_serving_end_the_next_attempts_as_drills(
    user_jobs: tuple[LocalAccount, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    account, marks = user_jobs
    url = account.url
    # Each drill ends as soon as the run's code is idle (the account's default is 20 s).
    code, text = cli("local", "script", CAPACITY, "--job-duration", "0", "--endpoint-url", url)
    assert code == 0, text
    assert text.splitlines() == [
        "the next 1 training-job attempt(s) are drills (simulated: no code runs), in creation "
        "order:",
        f"  1. {CAPACITY}",
        "then later attempts run for real",
    ]
    code, text = cli("local", "script", "--endpoint-url", url, "--json")
    assert json.loads(text) == {"next": [CAPACITY], "simulated": True, "then": None}

    hps = {"hyperparameters": {"marks": str(marks), "mode": "record"}}
    summary = _run(url, "LocalUserJob/Job", "scripted", hps)
    assert summary["succeeded"], summary
    drill, real = summary["jobs"]
    # The drill ended as scripted and says so; the retry ran the job's code.
    assert drill["status"] == "Failed" and drill["failureReason"].startswith("CapacityError")
    assert all(
        t["StatusMessage"].startswith("simulated: ") for t in drill["secondaryStatusTransitions"]
    )
    assert drill["simulated"] is True and real["simulated"] is False
    assert real["status"] == "Completed" and real["finalMetricDataList"]
    code, text = cli("status", "scripted", "--endpoint-url", url)
    assert "simulated: scripted, no code ran" in text
    from hetero_constructs import TrainingRun
    from hetero_constructs.runs.clients import RunClients

    clients = RunClients.create(endpoint_url=url, region=account.region)
    jobs = TrainingRun.attach("scripted", clients=clients).status().jobs
    assert [job.simulated for job in jobs] == [True, False]
    code, text = cli("local", "script", "--endpoint-url", url)
    assert text == "nothing scripted: the next training-job attempts run for real\n"

    # Scripted, then cleared; a bad outcome is a usage error that changes nothing.
    cli("local", "script", "Completed", "Stopped", "--endpoint-url", url)
    assert [o.status for o in account.scripted()] == ["Completed", "Stopped"]
    code, _ = cli("local", "script", "Crashed", "--endpoint-url", url)
    assert code == 2 and "the status must be one of" in capsys.readouterr().err
    code, text = cli("local", "script", "--clear", "--endpoint-url", url, "--json")
    assert (code, json.loads(text)["next"]) == (0, [])
    assert account.scripted() == []


def test_a_running_job_interrupted_as_a_spot_reclaim_restarts_and_completes(
    user_jobs: tuple[LocalAccount, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    account, marks = user_jobs
    url = account.url
    hps = {"hyperparameters": {"marks": str(marks), "mode": "resume"}}
    code, text = cli(
        "run", "LocalUserJob/Job", "--endpoint-url", url, "--input", json.dumps(hps),
        "--name", "spot", "--no-follow",
    )  # fmt: skip
    assert code == 0, text
    hosts = ("algo-1", "algo-2", "algo-3")
    wait_until(
        lambda: all((marks / f"{h}.started1").exists() for h in hosts), 120, "every host started"
    )
    first = marked_pids(marks)

    code, text = cli("local", "interrupt", "spot", "--endpoint-url", url)
    assert code == 0, text
    [job] = [a.name for a in account.cloud.training.attempts]
    assert text == (
        f"interrupted training job {job} (run spot) as a spot reclaim: every host killed; it "
        "restarts on fresh hosts, from its checkpoints where it has a checkpoint URI\n"
    )
    assert not [pid for pid in first if alive(pid)]  # every host killed at once

    from hetero_constructs import TrainingRun
    from hetero_constructs.runs.clients import RunClients

    clients = RunClients.create(endpoint_url=url, region=account.region)
    ended = TrainingRun.attach("spot", clients=clients).wait(
        out=None, poll_seconds=0.2, log_grace=0
    )
    assert ended.succeeded, ended
    described = _client(account, "sagemaker").describe_training_job(TrainingJobName=job)
    statuses = [t["Status"] for t in described["SecondaryStatusTransitions"]]
    assert statuses == [
        "Starting", "Downloading", "Training", "Interrupted",
        "Starting", "Downloading", "Training", "Uploading", "Completed",
    ]  # fmt: skip
    assert all((marks / f"{h}.started2").exists() for h in hosts)  # resumed from checkpoints
    # It trained from its first start: the time before the reclaim is the job's too.
    first_start = described["SecondaryStatusTransitions"][1]["StartTime"]
    assert described["TrainingStartTime"] == first_start
    spent = described["TrainingEndTime"] - first_start
    assert described["BillableTimeInSeconds"] == int(spent.total_seconds())

    # Nothing of it runs now; a name nothing has is exit 2, naming what would do.
    code, out = cli("local", "interrupt", "spot", "--endpoint-url", url)
    error = capsys.readouterr().err
    assert (code, out) == (1, "") and "has no running training job" in error, error
    code, out = cli("local", "interrupt", job, "--endpoint-url", url, "--json")
    refused = json.loads(capsys.readouterr().err)
    assert (code, refused["error"]) == (1, "NotRunning")
    assert "it is Completed" in refused["message"]
    code, out = cli("local", "interrupt", "spto", "--endpoint-url", url)
    error = capsys.readouterr().err
    assert code == 2 and "No training job or run named 'spto'" in error
    assert "Closest runs: spot" in error and "Traceback" not in error


def _changed_user_job(stacks: Any, folder: Path) -> Path:
    """The UserJob stack changed as a user changes it: its state machine's success state
    records ``"shipped": "v2"``, written into another folder with its assets (as a re-synthesis)."""
    shutil.copytree(stacks.outdir, folder)
    template = folder / "LocalUserJob.template.json"
    body = json.loads(template.read_text())
    succeed = '"Training completed":{"Type":"Succeed"}'
    shipped = (
        '"Training completed":{"Type":"Pass","Result":"v2","ResultPath":"$.shipped","End":true}'
    )
    [machine] = [
        r for r in body["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    assert sum(succeed in part for part in parts if isinstance(part, str)) == 1
    parts[:] = [p.replace(succeed, shipped) if isinstance(p, str) else p for p in parts]
    template.write_text(json.dumps(body))
    return template


def test_a_run_in_flight_through_a_deploy_ends_as_it_started(
    user_jobs: tuple[LocalAccount, Path], stacks: Any, tmp_path: Path
) -> None:
    """Its execution goes on with the definition it started with, its job keeps running;
    a run started after the deploy takes the new definition (Step Functions' semantics)."""
    account, marks = user_jobs
    url = account.url
    hps = {"hyperparameters": {"marks": str(marks), "mode": "resume"}}
    code, text = cli(
        "run", "LocalUserJob/Job", "--endpoint-url", url, "--input", json.dumps(hps),
        "--name", "in-flight", "--no-follow",
    )  # fmt: skip
    assert code == 0, text
    hosts = ("algo-1", "algo-2", "algo-3")
    wait_until(
        lambda: all((marks / f"{h}.started1").exists() for h in hosts), 120, "every host started"
    )
    changed = _changed_user_job(stacks, tmp_path / "cdk.out")
    code, text = cli("local", "deploy", str(changed), "--endpoint-url", url)
    assert code == 0, text
    assert "  updated in place: Job3AAC5AA8 (AWS::StepFunctions::StateMachine)" in text
    # The job ran on through the deploy; interrupted, it restarts and completes the run.
    code, text = cli("local", "interrupt", "in-flight", "--endpoint-url", url)
    assert code == 0, text
    from hetero_constructs import TrainingRun
    from hetero_constructs.runs.clients import RunClients

    clients = RunClients.create(endpoint_url=url, region=account.region)
    ended = TrainingRun.attach("in-flight", clients=clients).wait(
        out=None, poll_seconds=0.2, log_grace=0
    )
    assert ended.succeeded, ended
    assert "shipped" not in _output(account, "in-flight")
    after = _run(url, "LocalUserJob/Job", "after", {"hyperparameters": {"marks": str(marks)}})
    assert after["succeeded"], after
    assert _output(account, "after")["shipped"] == "v2"


def test_a_drill_cannot_be_interrupted(user_jobs: tuple[LocalAccount, Path]) -> None:
    account, marks = user_jobs
    steer = ServedAccount(account.url)
    steer.script(["Completed"], job_duration=600)
    hps = {"hyperparameters": {"marks": str(marks)}}
    code, text = cli(
        "run", "LocalUserJob/Job", "--endpoint-url", account.url, "--input", json.dumps(hps),
        "--name", "drill", "--no-follow",
    )  # fmt: skip
    assert code == 0, text
    running = wait_until(lambda: account.cloud.training.running(), 60, "the drill's job")
    with pytest.raises(SteeringError, match=r"a drill: no host runs") as refused:
        steer.interrupt(running[0])
    assert refused.value.name == "NotRunning"


def test_the_control_channel_takes_requests_of_programs_here_only() -> None:
    """A web page (an Origin header, a body a form can send, another Host: DNS rebinding) is
    refused; a malformed request is named, never a server error."""
    import urllib.error
    import urllib.request

    def call(method: str, body: bytes | None, **headers: str) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(
            f"{url}/_hetero-api/v1/script", data=body, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    with LocalAccount([], port=0) as account:
        url = account.url
        as_json = {"Content-Type": "application/json"}
        assert call("GET", None)[0] == 200
        for method, body, headers, status, says in (
            ("GET", None, {"Origin": "https://example.com"}, 403, "not web pages"),
            ("POST", b'{"outcomes": []}', {"Content-Type": "text/plain"}, 403, "text/plain"),
            ("GET", None, {"Host": "attacker.example:80"}, 403, "attacker.example"),
            ("POST", b"{outcomes", as_json, 400, "not JSON"),
            ("POST", b'{"outcomes": "Completed"}', as_json, 400, "list of strings"),
            ("POST", b'{"outcomes": [], "jobDuration": NaN}', as_json, 400, "not nan"),
            ("POST", b'{"outcomes": [], "jobDuration": 1e300}', as_json, 400, "1e+300"),
            ("POST", b'{"outcomes": ["Crashed"]}', as_json, 400, "must be one of"),
        ):
            code, answer = call(method, body, **headers)
            assert (code, answer["service"]) == (status, "hetero-constructs local account")
            assert says in answer["message"], answer
        assert account.scripted() == []
