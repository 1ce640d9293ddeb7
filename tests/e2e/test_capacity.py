"""Capacity-aware runs: error names, a fresh job per attempt, fallback instance types."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from hetero_constructs import (
    CapacityRetry,
    HeterogeneousTrainingJob,
    InstanceGroup,
    SpecValidationError,
    TrainingErrors,
)
from hetero_constructs.local import LocalCloud
from tests.fixtures.construct_specs import spec
from tests.fixtures.templates import definitions, policy_statements

CAPACITY = "Failed:CapacityError: Unable to provision requested ML compute capacity."
GROUPS = [
    InstanceGroup("data", "ml.c5.18xlarge", 1),
    InstanceGroup(
        "gpu",
        "ml.p5.48xlarge",
        2,
        fallbacks=[("ml.p4de.24xlarge", 2), ("ml.p4d.24xlarge", 4)],
    ),
]


def fallback_spec() -> Any:
    return spec(instance_groups=GROUPS)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    outdir = tmp_path_factory.mktemp("capacity.out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Capacity", env=cdk.Environment(region="us-west-2"))
    # Without jitter, so that the waits the retries ask for can be read exactly.
    HeterogeneousTrainingJob(
        stack,
        "Job",
        job_name_prefix="capacity",
        spec=fallback_spec(),
        capacity_retry=CapacityRetry(jitter=False),
    )
    assembly = app.synth()
    return outdir / "Capacity.template.json", assembly.get_stack_by_name("Capacity").template


@pytest.fixture
def cloud(synthesized: tuple[Path, dict[str, Any]]) -> Iterator[tuple[LocalCloud, str]]:
    with LocalCloud(simulate="Completed") as local:
        local.deploy(synthesized[0])
        yield local, local.state_machine()


def groups_of(request: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {
        g["InstanceGroupName"]: (g["InstanceType"], g["InstanceCount"])
        for g in request["ResourceConfig"]["InstanceGroups"]
    }


def test_two_capacity_failures_then_success_on_the_second_fallback(
    cloud: tuple[LocalCloud, str],
) -> None:
    local, machine = cloud
    result = local.run(machine, {}, name="fails-over", outcomes=[CAPACITY, CAPACITY, "Completed"])
    assert result.status == "SUCCEEDED", result.cause
    names = [r["TrainingJobName"] for r in result.submitted_requests]
    assert len(names) == 3 and len(set(names)) == 3
    assert [groups_of(r)["gpu"] for r in result.submitted_requests] == [
        ("ml.p5.48xlarge", 2),
        ("ml.p4de.24xlarge", 2),
        ("ml.p4d.24xlarge", 4),
    ]
    third = result.submitted_requests[2]
    # Hyperparameters that depend on the instance type follow the variant.
    assert third["HyperParameters"]["sagemaker_instance_type"] == '"ml.p4d.24xlarge"'
    assert result.output["TrainingJobName"] == names[2]
    assert result.output["Variant"] == 2 and result.output["Attempt"] == 2
    # The retry waits 5 minutes, then 10 (slept compressed by the local runner).
    assert local.retry_waits.requested[-2:] == [300, 600]


def test_each_attempt_shows_what_it_ran_on(
    cloud: tuple[LocalCloud, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33: status (text and --json), the follow display and TrainingRun's JobStatus
    show per attempt each group's instance type and count: a fallback is visible."""
    from hetero_constructs import TrainingRun
    from hetero_constructs.cli import main
    from hetero_constructs.runs import RunClients

    local, machine = cloud
    result = local.run(machine, {}, name="shown", outcomes=[CAPACITY, "Completed"])
    assert result.status == "SUCCEEDED", result.cause
    expected = [
        [
            {"group": g["InstanceGroupName"], "instanceType": g["InstanceType"],
             "instanceCount": g["InstanceCount"]}
            for g in request["ResourceConfig"]["InstanceGroups"]
        ]
        for request in result.submitted_requests
    ]  # fmt: skip
    assert expected[0] != expected[1]  # the retry ran on the next fallback
    clients = RunClients(
        local.client("stepfunctions"), local.client("sagemaker"), local.client("logs")
    )
    jobs = TrainingRun.attach("shown", clients=clients).status().jobs
    assert [job.instances for job in jobs] == expected
    assert main(["status", "shown", "--json"]) == 0
    assert [job["instances"] for job in json.loads(capsys.readouterr().out)["jobs"]] == expected
    assert main(["status", "shown"]) == 0
    shown = [line for line in capsys.readouterr().out.splitlines() if "ran on" in line]
    assert len(shown) == 2
    for line, groups in zip(shown, expected, strict=True):
        for group in groups:
            assert f"{group['group']} {group['instanceCount']} x {group['instanceType']}" in line


def test_a_training_failure_is_not_retried(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    result = local.run(machine, {}, name="algo", outcomes=["Failed:AlgorithmError: exit 1"])
    assert result.status == "FAILED"
    assert result.error == TrainingErrors.TRAINING_FAILED
    assert len(result.submitted_requests) == 1


def test_a_spot_job_stopped_at_max_wait_fails_over_as_a_capacity_failure(
    cloud: tuple[LocalCloud, str],
) -> None:
    # Spot: SageMaker stops a job that found no capacity within MaxWaitTimeInSeconds. (A job
    # stopped while pending for capacity, MaxPendingTimeInSeconds, cannot be scripted: the local
    # runner ends every job through Training; tests/core/test_lifecycle.py covers that case.)
    local, machine = cloud
    result = local.run(
        machine, {}, name="max-wait", outcomes=["Stopped:MaxWaitTimeExceeded", "Completed"]
    )
    assert result.status == "SUCCEEDED", result.cause
    assert [groups_of(r)["gpu"] for r in result.submitted_requests] == [
        ("ml.p5.48xlarge", 2),
        ("ml.p4de.24xlarge", 2),
    ]
    assert result.output["Variant"] == 1


def test_a_job_stopped_by_someone_else_is_not_retried(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    result = local.run(machine, {}, name="stopped", outcomes=["Stopped"])
    assert (result.status, result.error) == ("FAILED", TrainingErrors.STOPPED)
    assert len(result.submitted_requests) == 1


def test_resource_limit_at_submit_is_retried_with_backoff(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    result = local.run(
        machine,
        {},
        name="quota",
        outcomes=["ResourceLimitExceeded", "ResourceLimitExceeded", "Completed"],
    )
    assert result.status == "SUCCEEDED", result.cause
    assert local.retry_waits.requested[-2:] == [300, 600]
    created = [job["TrainingJobName"] for job in result.training_jobs]
    assert len(created) == 1  # the refused calls created nothing
    assert groups_of(result.submitted_requests[-1])["gpu"] == ("ml.p4d.24xlarge", 4)


def test_retries_exhausted_end_with_the_capacity_error_and_its_cause(
    cloud: tuple[LocalCloud, str],
) -> None:
    local, machine = cloud
    result = local.run(machine, {}, name="no-capacity", outcomes=[CAPACITY] * 4)
    assert result.status == "FAILED"
    assert result.error == TrainingErrors.CAPACITY_ERROR
    cause = json.loads(result.cause or "{}")
    assert cause["TrainingJobName"] == result.submitted_requests[-1]["TrainingJobName"]
    assert cause["TrainingJobStatus"] == "Failed"
    assert cause["FailureReason"].startswith("CapacityError")
    assert cause["Attempt"] == 3 and cause["Variant"] == 2  # stays on the last fallback
    assert len({r["TrainingJobName"] for r in result.submitted_requests}) == 4


def test_a_lambda_retry_inside_one_attempt_creates_no_second_job(
    cloud: tuple[LocalCloud, str],
) -> None:
    local, machine = cloud
    local.faults.fail_lambda("submit.handler", after_work=True)
    result = local.run(machine, {}, name="lambda-retry", outcomes=[CAPACITY, "Completed"])
    assert result.status == "SUCCEEDED", result.cause
    names = [job["TrainingJobName"] for job in result.training_jobs]
    assert len(names) == 2  # one per capacity attempt, none for the Lambda's own retry


def test_iam_allows_exactly_the_declared_instance_types(
    synthesized: tuple[Path, dict[str, Any]],
) -> None:
    template = synthesized[1]
    statements = policy_statements(template, "JobTaskControlRole")
    (create,) = [s for s in statements if s["Action"] == "sagemaker:CreateTrainingJob"]
    assert create["Condition"]["ForAllValues:StringEquals"]["sagemaker:InstanceTypes"] == [
        "ml.c5.18xlarge",
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
        "ml.p5.48xlarge",
    ]


def test_the_run_timeout_accounts_for_the_retries(
    synthesized: tuple[Path, dict[str, Any]],
) -> None:
    (definition,) = definitions(synthesized[1]).values()
    task = definition["States"]["Run training job"]
    attempt = task["TimeoutSeconds"]
    (capacity,) = [r for r in task["Retry"] if TrainingErrors.CAPACITY_ERROR in r["ErrorEquals"]]
    assert capacity["ErrorEquals"] == [
        TrainingErrors.CAPACITY_ERROR,
        TrainingErrors.RESOURCE_LIMIT_EXCEEDED,
    ]
    assert capacity["MaxAttempts"] == 3
    waits = 300 + 600 + 1200
    assert definition["TimeoutSeconds"] == 4 * attempt + waits + 3600


def test_fallback_violations_name_their_path() -> None:
    groups = [
        InstanceGroup("data", "ml.c5.18xlarge", 1, fallbacks=["ml.c5.18xlarg"]),
        InstanceGroup("gpu", "ml.p4d.24xlarge", 2, fallbacks=[("ml.c5.18xlarge", 2)]),
    ]
    stack = cdk.Stack(cdk.App(), "Bad", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(SpecValidationError) as raised:
        HeterogeneousTrainingJob(stack, "Job", spec=spec(instance_groups=groups))
    paths = {(v.rule, v.path) for v in raised.value.violations}
    assert ("API-INSTANCE-TYPE", "instance_groups[0].fallbacks[0].instance_type") in paths
    # torch_distributed needs a GPU group: the fallback to a CPU type breaks it.
    assert any(
        path == "instance_groups[1].fallbacks[0].instance_type" and rule.startswith("LAU-")
        for rule, path in paths
    )


def test_capacity_retry_is_one_prop_and_off_with_none() -> None:
    stack = cdk.Stack(cdk.App(), "Off", env=cdk.Environment(region="us-west-2"))
    HeterogeneousTrainingJob(stack, "Job", spec=fallback_spec(), capacity_retry=None)
    HeterogeneousTrainingJob(
        stack,
        "Quick",
        spec=fallback_spec(),
        capacity_retry=CapacityRetry(max_attempts=1, interval=cdk.Duration.seconds(30)),
    )
    found = {}
    for logical_id, definition in definitions(Template.from_stack(stack).to_json()).items():
        retries = definition["States"]["Run training job"]["Retry"]
        found[logical_id[:3]] = [
            r for r in retries if TrainingErrors.CAPACITY_ERROR in r["ErrorEquals"]
        ]
    assert found["Job"] == []
    (quick,) = found["Qui"]
    assert quick["MaxAttempts"] == 1 and quick["IntervalSeconds"] == 30
