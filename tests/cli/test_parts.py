"""hetero-train's parts without AWS: host groups, the submit task, input, plan defaults, rules."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber

from hetero_constructs.cli import main
from hetero_constructs.cli.aws import AwsOptions
from hetero_constructs.cli.inputs import read_input
from hetero_constructs.cli.output import CliError
from hetero_constructs.cli.plan import PLACEHOLDER_ROLE_ARN
from hetero_constructs.contract.naming import preview_job_name
from hetero_constructs.runs.inputs import check_input, find_submit_tasks
from hetero_constructs.runs.logs import TRAINING_LOG_GROUP, HostGroups, JobLogs
from tests.fixtures.fake_stack import definition
from tests.fixtures.specs import DELETE, spec_dict

REPO = Path(__file__).parents[2]

# What the training toolkit prints before the script runs (one CloudWatch event per line).
TOOLKIT_LINES = [
    "Training Env:",
    "{",
    '    "current_host": "algo-2",',
    '    "current_instance_group": "data",',
    "}",
    "SM_CURRENT_INSTANCE_GROUP=data",
]


def test_a_host_learns_its_group_from_the_toolkits_environment() -> None:
    for line in TOOLKIT_LINES[2:4] + TOOLKIT_LINES[5:]:
        groups = HostGroups({"data": 1, "gpu": 2})
        groups.learn("algo-2", line)
        assert groups.group_of("algo-2") == ("data" if "data" in line else None), line


def test_the_groups_dict_places_every_host() -> None:
    groups = HostGroups({"data": 1, "gpu": 2})
    layout = {
        "data": {"hosts": ["algo-2"], "instance_group_name": "data"},
        "gpu": {"hosts": ["algo-3", "algo-1"], "instance_group_name": "gpu"},
    }
    groups.learn("algo-1", f"SM_INSTANCE_GROUPS_DICT={json.dumps(layout)}")
    assert [groups.group_of(h) for h in ("algo-1", "algo-2", "algo-3")] == ["gpu", "data", "gpu"]
    # hetero_runtime's TrainingEnvironment.to_dict(), logged on one line by a script.
    other = HostGroups({"data": 1, "gpu": 2})
    env = {
        "current_host": "algo-3",
        "current_instance_group": "gpu",
        "instance_groups_dict": layout,
    }
    other.learn("algo-3", f"2026-11-30 INFO [algo-3/distributed] environment {json.dumps(env)}")
    assert other.known == {"algo-1": "gpu", "algo-2": "data", "algo-3": "gpu"}


def test_a_log_line_is_untrusted_text() -> None:
    # A script's line that looks like the groups dict but nests beyond Python's parser
    # crashed `logs` and the follow display with a RecursionError.
    groups = HostGroups({"data": 1, "gpu": 2})
    groups.learn("algo-1", "SM_INSTANCE_GROUPS_DICT=" + '{"a": ' * 5000)
    assert groups.known == {}
    groups.learn("algo-1", "SM_CURRENT_INSTANCE_GROUP=gpu")
    assert groups.group_of("algo-1") == "gpu"


def test_a_log_stream_gone_between_listing_and_reading_is_skipped(aws_env: Any) -> None:
    # Listed, then deleted (retention, a cleanup) before its events are read: the follow
    # display died with ResourceNotFoundException; the other hosts' lines are still shown.
    logs = AwsOptions().client("logs")
    stream = {"logStreamName": "job/algo-1-1"}, {"logStreamName": "job/algo-2-1"}
    event = {"timestamp": 1_700_000_000_000, "message": "hello", "ingestionTime": 1}
    with Stubber(logs) as stubber:
        stubber.add_response("describe_log_streams", {"logStreams": list(stream)})
        stubber.add_client_error(
            "get_log_events", "ResourceNotFoundException", http_status_code=400
        )
        stubber.add_response("get_log_events", {"events": [event], "nextForwardToken": "f/1"})
        stubber.add_response("get_log_events", {"events": [], "nextForwardToken": "f/1"})
        lines = JobLogs(logs, "job").poll()
    assert [(line.host, line.message) for line in lines] == [("algo-2", "hello")]


def test_an_empty_page_before_the_end_of_a_stream_does_not_end_the_read(aws_env: Any) -> None:
    # The end of a stream is its token coming back; a page may be empty before more events
    # (the one-shot `logs` lost every line after such a page). Empty pages that go on and on
    # are read a bounded number of times per poll, and the next poll starts where that stopped.
    logs = AwsOptions().client("logs")
    stream = {"logStreamName": "job/algo-1-1"}
    event = {"timestamp": 1_700_000_000_000, "message": "after the gap", "ingestionTime": 1}
    with Stubber(logs) as stubber:
        stubber.add_response("describe_log_streams", {"logStreams": [stream]})
        stubber.add_response("get_log_events", {"events": [], "nextForwardToken": "f/1"})
        stubber.add_response("get_log_events", {"events": [event], "nextForwardToken": "f/2"})
        stubber.add_response("get_log_events", {"events": [], "nextForwardToken": "f/2"})
        lines = JobLogs(logs, "job").poll()
        stubber.assert_no_pending_responses()
    assert [line.message for line in lines] == ["after the gap"]

    reader = JobLogs(logs, "job")
    with Stubber(logs) as stubber:
        stubber.add_response("describe_log_streams", {"logStreams": [stream]})
        for page in range(1, 12):
            stubber.add_response("get_log_events", {"events": [], "nextForwardToken": f"e/{page}"})
        assert reader.poll() == []
        stubber.assert_no_pending_responses()
        stubber.add_response("describe_log_streams", {"logStreams": [stream]})
        stubber.add_response(
            "get_log_events",
            {"events": [event], "nextForwardToken": "e/12"},
            {
                "logGroupName": TRAINING_LOG_GROUP,
                "logStreamName": "job/algo-1-1",
                "startFromHead": True,
                "nextToken": "e/11",
            },
        )
        stubber.add_response("get_log_events", {"events": [], "nextForwardToken": "e/12"})
        assert [line.message for line in reader.poll()] == ["after the gap"]


def test_groups_by_elimination_single_group_and_unknown() -> None:
    groups = HostGroups({"data": 1, "gpu": 2})
    assert groups.group_of("algo-1") is None
    groups.learn("algo-2", "SM_CURRENT_INSTANCE_GROUP=data")
    # data's one host is known: every other host is in gpu.
    assert groups.group_of("algo-1") == groups.group_of("algo-3") == "gpu"
    assert HostGroups({"train": 3}).group_of("algo-3") == "train"
    homogeneous = HostGroups({})
    homogeneous.learn("algo-1", '"current_instance_group": "homogeneousCluster",')
    assert homogeneous.group_of("algo-1") is None
    stranger = HostGroups({"data": 2, "gpu": 2})
    stranger.learn("algo-1", "SM_CURRENT_INSTANCE_GROUP=cpu")  # not a group of this job
    assert stranger.group_of("algo-1") is None and stranger.unknown_hosts == ["algo-1"]


def test_the_submit_task_is_found_in_jsonpath_jsonata_and_nested_states() -> None:
    jsonpath = definition("arn:aws:lambda:us-west-2:123456789012:function:submit")
    assert [t.state_name for t in find_submit_tasks(jsonpath)] == ["Run training job"]
    payload = jsonpath["States"]["Run training job"]["Parameters"]["Payload"]
    jsonata = {
        "QueryLanguage": "JSONata",
        "StartAt": "Parallel",
        "States": {
            "Parallel": {
                "Type": "Parallel",
                "Branches": [
                    {
                        "StartAt": "Train",
                        "States": {"Train": {"Type": "Task", "Arguments": {"Payload": payload}}},
                    }
                ],
                "End": True,
            }
        },
    }
    assert [t.state_name for t in find_submit_tasks(jsonata)] == ["Train"]
    assert find_submit_tasks({"StartAt": "P", "States": {"P": {"Type": "Pass"}}}) == []


def test_check_input_names_the_job_as_the_lambda_will() -> None:
    [task] = find_submit_tasks(definition("arn:aws:lambda:us-west-2:1:function:submit"))
    check = check_input(task, {"job_name_prefix": "exp", "tags": {"run": "7"}}, "nightly")
    assert check.violations == ()
    assert check.job_name == preview_job_name("hetero-training-exp", "nightly")
    assert check.request is not None and check.request["TrainingJobName"] == check.job_name
    assert {"Key": "run", "Value": "7"} in check.request["Tags"]
    bad = check_input(task, [1, 2], "nightly")
    assert [v.rule for v in bad.violations] == ["OVERRIDE-TYPE"] and bad.request is None


def test_read_input(tmp_path: Path) -> None:
    assert read_input(None) == {}
    assert read_input('{"tags": {"a": "b"}}') == {"tags": {"a": "b"}}
    (tmp_path / "in.json").write_text('{"hyperparameters": {"lr": 0.1}}')
    assert read_input(f"@{tmp_path / 'in.json'}") == {"hyperparameters": {"lr": 0.1}}
    with pytest.raises(CliError, match="cannot be read"):
        read_input(f"@{tmp_path / 'missing.json'}")
    with pytest.raises(CliError, match=r"is not JSON .*Fix: quote the JSON"):
        read_input("{hyperparameters: 1}")


def test_hostile_input_is_a_clear_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Nested beyond Python's parser: a RecursionError escaped as a traceback.
    for text in ("[" * 100_000, '{"a": ' * 100_000 + "1" + "}" * 100_000):
        with pytest.raises(CliError, match=r"is not JSON .*Fix:"):
            read_input(text)
    (tmp_path / "deep.json").write_text('{"hyperparameters": ' + "[" * 100_000)
    assert main(["run", "any", "--input", f"@{tmp_path / 'deep.json'}"]) == 1
    assert "deep.json is not JSON" in capsys.readouterr().err
    # NaN and Infinity are not JSON; they were sent to StartExecution as such.
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(CliError, match=f"{constant} is not a JSON value"):
            read_input(f'{{"States.extra": {constant}}}')
    # A repeated key silently lost its first value (the input is sent re-serialized).
    with pytest.raises(CliError, match=r"gives the key 'hyperparameters' more than once"):
        read_input('{"hyperparameters": {"epochs": 5}, "hyperparameters": {"lr": 0.1}}')
    with pytest.raises(CliError, match=r"gives the key 'a' more than once"):
        read_input('{"tags": {"a": "1", "a": "2"}}')
    assert read_input('{"tags": {"a": "1"}, "hyperparameters": {"a": 1}}')["tags"] == {"a": "1"}


def _plan(tmp_path: Path, data: Any, *args: str) -> tuple[int, str]:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    out = io.StringIO()
    return main(["plan", str(path), *args], out=out), out.getvalue()


def test_plan_defaults_region_and_role_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    spec = spec_dict({"role": DELETE, "region": DELETE})
    code, text = _plan(tmp_path, spec, "--json")
    assert code == 0, text
    result = json.loads(text)
    assert result["request"]["RoleArn"] == PLACEHOLDER_ROLE_ARN
    assert "us-east-1" in result["request"]["AlgorithmSpecification"]["TrainingImage"]
    assert result["defaults"]["region"]["value"] == "us-east-1"
    assert "placeholder" in result["defaults"]["role"]["source"]
    code, text = _plan(tmp_path, spec, "--region", "eu-west-1")
    assert code == 0 and json.loads(text)["RoleArn"] == PLACEHOLDER_ROLE_ARN
    notes = capsys.readouterr().err
    assert f"note: role {PLACEHOLDER_ROLE_ARN} (placeholder" in notes
    assert "note: region" not in notes  # --region was given


def test_rules_print_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    assert main(["rules"], out=out) == 0
    assert out.getvalue() == (REPO / "docs" / "rules.md").read_text()
    out = io.StringIO()
    assert main(["rules", "--json"], out=out) == 0
    ids = [rule["id"] for rule in json.loads(out.getvalue())["rules"]]
    assert "SPEC-FILE" in ids and "OVERRIDE-CHANNEL" in ids and "API-JOB-NAME" in ids
    assert "CDK-REGION" in ids and "CDK-TIMEOUT-TOKEN" in ids
    assert len(ids) == len(set(ids))


def test_version_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("hetero-train ")
    assert main(["run"]) == 2
    assert "Missing argument 'TARGET...'" in capsys.readouterr().err
