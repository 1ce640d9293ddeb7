"""The synthesized example state machine, run end to end in moto with the real handlers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest

from hetero_constructs.local import LocalCloud
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.file.reader import spec_from_dict
from tests.fixtures.example_app import Synthesized


@pytest.fixture
def cloud(example: Synthesized) -> Iterator[tuple[LocalCloud, str]]:
    with LocalCloud(simulate="Completed") as local:
        local.deploy(example.template, template_dir=example.outdir)
        (machine,) = local.state_machines
        yield local, machine


def test_success_reports_the_job(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    result = local.run(
        machine, {"hyperparameters": {"epochs": 1}, "tags": {"run": "7"}}, name="nightly-2026-11-30"
    )
    assert result.status == "SUCCEEDED"
    (request,) = result.submitted_requests
    assert request["TrainingJobName"].startswith("hetero-example-nightly-2026-11-30-")
    assert request["HyperParameters"]["epochs"] == "1"  # the override, JSON-encoded
    assert request["HyperParameters"]["sagemaker_job_name"] == json.dumps(
        request["TrainingJobName"]
    )
    assert {"Key": "run", "Value": "7"} in request["Tags"]
    assert [g["InstanceGroupName"] for g in request["ResourceConfig"]["InstanceGroups"]] == [
        "data",
        "gpu",
    ]
    output = result.output
    assert output["TrainingJobStatus"] == "Completed"
    assert output["TrainingJobArn"].endswith(f"training-job/{request['TrainingJobName']}")
    assert output["ModelArtifacts"]["S3ModelArtifacts"].endswith("/output/model.tar.gz")
    (job,) = result.training_jobs
    assert job["ResourceConfig"]["InstanceGroups"][1]["InstanceType"] == "ml.p4d.24xlarge"


def test_training_failure_carries_the_failure_reason(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    result = local.run(
        machine,
        name="failing",
        outcome="Failed",
        failure_reason="AlgorithmError: CUDA out of memory",
    )
    assert result.status == "FAILED"
    assert result.error == "HeteroTraining.TrainingFailed"
    cause = json.loads(result.cause or "{}")
    assert cause["FailureReason"] == "AlgorithmError: CUDA out of memory"
    assert cause["TrainingJobStatus"] == "Failed"
    assert cause["TrainingJobName"].startswith("hetero-example-failing-")


def test_bad_override_fails_with_violations_and_creates_no_job(
    cloud: tuple[LocalCloud, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from hetero_constructs.cli import main

    local, machine = cloud
    result = local.run(
        machine,
        {
            "channels": {"validation": "s3://x/y"},
            "hyperparameters": {"sagemaker_program": "evil.py"},
            "instance_type": "ml.p5.48xlarge",
        },
        name="bad",
    )
    assert result.status == "FAILED"
    assert result.error == "HeteroTraining.InvalidOverrides"
    cause = json.loads(result.cause or "{}")
    violations = cause["violations"]
    assert {v["rule"] for v in violations} == {"OVERRIDE-CHANNEL", "OVERRIDE-UNKNOWN-KEY"}
    assert result.training_jobs == []
    # status shows the cause as readable fields, the violations one per line: no JSON blob.
    assert main(["status", "bad"]) == 0
    shown = capsys.readouterr().out
    (reason,) = [line for line in shown.splitlines() if "failure reason" in line]
    assert "HeteroTraining.InvalidOverrides: The execution input breaks the spec" in reason
    assert "{" not in reason
    assert sum("violation" in line and "OVERRIDE-" in line for line in shown.splitlines()) == 2
    # An override that parses but breaks a rule is caught by the same rules as at synth.
    result = local.run(machine, {"hyperparameters": {"sagemaker_program": "evil.py"}}, name="bad-2")
    assert result.status == "FAILED"
    assert "API-HYPERPARAMETERS" in (result.cause or "")
    assert result.training_jobs == []


def test_a_retried_submit_creates_one_job(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    # The first invocation creates the job, then fails to return: the state machine retries.
    local.faults.fail_lambda("submit.handler", after_work=True)
    result = local.run(machine, name="retried", timeout=90)
    assert result.status == "SUCCEEDED"
    submits = [i.event for i in local.lambdas.invocations if "context" in i.event]
    assert len(submits) == 2  # retried ...
    assert len(result.training_jobs) == 1  # ... but one job
    # The retry found the job in its slot and continued it: no second CreateTrainingJob call.
    assert len(result.submitted_requests) == 1


def test_stopping_the_execution_stops_the_job(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    result = local.run(machine, name="stopped", stop_execution=True)
    # The service ends a stopped execution at once: ABORTED.
    assert result.status == "ABORTED"
    (job,) = result.training_jobs
    assert job["TrainingJobStatus"] == "Stopped"
    assert local.training.stopped_jobs == [job["TrainingJobName"]]  # by the events handler


@pytest.mark.parametrize("duration", [timedelta(0), timedelta(seconds=1.5)])
def test_history_does_not_grow_with_the_job(
    cloud: tuple[LocalCloud, str], duration: timedelta
) -> None:
    local, machine = cloud
    result = local.run(machine, name=f"long-{duration.seconds}", job_duration=duration)
    assert result.status == "SUCCEEDED"
    kinds = [event["type"] for event in result.history]
    assert kinds[0] == "ExecutionStarted" and kinds[-1] == "ExecutionSucceeded"
    assert "TaskSubmitted" in kinds
    assert len(kinds) <= 12  # a constant, whatever the duration


def test_token_items_expire_and_are_cleaned_up(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    local.run(machine, name="clean")
    table = next(f.environment["TOKEN_TABLE"] for f in local.lambdas.functions.values())
    items: list[dict[str, Any]] = boto3.client("dynamodb").scan(TableName=table)["Items"]
    # The job's token is gone once reported; the slot (its attempts) stays until its TTL.
    assert [i["pk"]["S"].split("#")[0] for i in items] == ["slot"]
    assert items[0]["reported"]["BOOL"] is True
    assert int(items[0]["expires_at"]["N"]) > 0


def test_the_lambda_submits_the_synthesized_request(cloud: tuple[LocalCloud, str]) -> None:
    """Without overrides, the submit Lambda sends exactly the request the spec plans to."""
    local, machine = cloud
    result = local.run(machine, name="as-synthesized")
    (submitted,) = result.submitted_requests
    payload = local.definitions[machine]["States"]["Run training job"]["Parameters"]["Payload"]
    name = submitted["TrainingJobName"]
    synthesized = plan(
        spec_from_dict(payload["spec"]), Deployment(job_name=name, **payload["deployment"])
    ).request_or_raise()
    # Only the per-attempt job name, the run's marker tags and the job's data-plane secret
    # (fresh for every job, docs/data-plane.md) differ from the synthesized request.
    secret = submitted["Environment"]["HETERO_DATA_SECRET"]
    assert len(secret) == 64
    synthesized["Environment"] = {
        **synthesized.get("Environment", {}),
        "HETERO_DATA_SECRET": secret,
    }
    synthesized["TrainingJobName"] = name
    synthesized["HyperParameters"]["sagemaker_job_name"] = json.dumps(name)
    markers = [t for t in submitted["Tags"] if t["Key"].startswith("hetero-constructs:")]
    assert sorted(t["Key"] for t in markers) == [
        "hetero-constructs:attempt",
        "hetero-constructs:execution",
        "hetero-constructs:runner",
        "hetero-constructs:slot",
    ]
    synthesized["Tags"] += markers
    assert submitted == synthesized


def test_redriving_a_run_that_failed_in_its_fail_state_says_what_to_run_instead(
    cloud: tuple[LocalCloud, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33: the example catches a training failure into its Fail state; a redrive
    re-enters that state and fails at once. The command says so before redriving, and what to
    run instead; --force (force=True) redrives it all the same."""
    from hetero_constructs import TrainingRun
    from hetero_constructs.cli import main
    from hetero_constructs.runs import RunClients
    from hetero_constructs.runs.redrive import RedriveWouldFail

    local, machine = cloud
    given = {"hyperparameters": {"epochs": 1}}
    result = local.run(machine, given, name="caught", outcomes=["Failed:AlgorithmError: x"])
    assert result.status == "FAILED"
    assert main(["redrive", "caught"]) == 1
    error = capsys.readouterr().err
    assert "failed in its Fail state 'Training failed'" in error
    assert f"hetero-train run hetero-example --input '{json.dumps(given)}'" in error
    stepfunctions = local.client("stepfunctions")
    described = stepfunctions.describe_execution(executionArn=result.execution_arn)
    assert described.get("redriveCount", 0) == 0  # nothing was redriven
    clients = RunClients(stepfunctions, local.client("sagemaker"), local.client("logs"))
    run = TrainingRun.attach("caught", clients=clients)
    with pytest.raises(RedriveWouldFail, match="Fail state 'Training failed'"):
        run.redrive()
    assert run.redrive(force=True).redrive_count == 1
