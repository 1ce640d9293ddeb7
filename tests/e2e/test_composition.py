"""The training task inside users' state machines, run end to end in the local runner.

One app of small stacks, synthesized once: the task chained with ``next`` / ``add_catch`` /
``result_path`` in JSONPath and in JSONata, two tasks and a loop in one state machine, a Map,
and the construct's state machine started by a parent (``associate_with_parent``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from hetero_constructs import TrainingErrors
from hetero_constructs.constructs.retries import DEFAULT_CAPACITY_RETRY
from hetero_constructs.contract.naming import MAX_JOB_NAME
from hetero_constructs.local import LocalCloud
from tests.fixtures.composed_stacks import ComposedStack, ManyTasksStack, NestedStack

CAPACITY = "Failed:CapacityError: Unable to provision requested ML compute capacity."


@dataclass
class Synthesized:
    outdir: Path
    templates: dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def composed(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir = tmp_path_factory.mktemp("composed.out")
    app = cdk.App(outdir=str(outdir))
    for stack_class in (ComposedStack, ManyTasksStack, NestedStack):
        stack_class(app, stack_class.__name__)
    assembly = app.synth()
    return Synthesized(outdir, {s.stack_name: s.template for s in assembly.stacks})


@pytest.fixture
def cloud(composed: Synthesized) -> Iterator[LocalCloud]:
    with LocalCloud(simulate="Completed") as local:
        for name in composed.templates:
            local.deploy(composed.outdir / f"{name}.template.json")
        yield local


def job_names(result: Any) -> list[str]:
    return [request["TrainingJobName"] for request in result.submitted_requests]


def test_jsonpath_chain_passes_the_documented_output_on(cloud: LocalCloud) -> None:
    result = cloud.run(cloud.state_machine("composed-jsonpath"), {"run": 1}, name="path-ok")
    assert result.status == "SUCCEEDED", result.cause
    (request,) = result.submitted_requests
    assert request["HyperParameters"]["epochs"] == "2"  # the override a previous state produced
    assert result.output["job"] == request["TrainingJobName"]
    assert result.output["model"].endswith(f"/{request['TrainingJobName']}/output/model.tar.gz")
    assert result.output["image"] == request["AlgorithmSpecification"]["TrainingImage"]


def test_a_training_failure_is_caught_with_its_error_name(cloud: LocalCloud) -> None:
    result = cloud.run(
        cloud.state_machine("composed-jsonpath"),
        {},
        name="path-caught",
        outcomes=["Failed:AlgorithmError: loss is NaN"],
    )
    assert result.status == "SUCCEEDED"
    failure = result.output["failure"]
    assert failure["Error"] == TrainingErrors.TRAINING_FAILED
    cause = json.loads(failure["Cause"])
    assert cause["FailureReason"] == "AlgorithmError: loss is NaN"
    assert cause["TrainingJobStatus"] == "Failed"
    assert cause["TrainingJobName"] == job_names(result)[0]


def test_uncaught_errors_fail_the_execution_with_their_name(cloud: LocalCloud) -> None:
    """The task retries capacity errors by default, as the job does; once every attempt found
    no capacity, the error is not caught here and fails the execution with its name."""
    attempts = 1 + DEFAULT_CAPACITY_RETRY.max_attempts
    result = cloud.run(
        cloud.state_machine("composed-jsonpath"),
        {},
        name="path-capacity",
        outcomes=[CAPACITY] * attempts,
    )
    assert result.status == "FAILED"
    assert result.error == TrainingErrors.CAPACITY_ERROR
    assert len(job_names(result)) == attempts


def test_jsonata_task_takes_overrides_and_gives_outputs(cloud: LocalCloud) -> None:
    result = cloud.run(
        cloud.state_machine("composed-jsonata"),
        {"training": {"hyperparameters": {"epochs": 7}, "tags": {"run": "j"}}},
        name="jsonata-ok",
    )
    assert result.status == "SUCCEEDED", result.cause
    (request,) = result.submitted_requests
    assert request["HyperParameters"]["epochs"] == "7"
    assert {"Key": "run", "Value": "j"} in request["Tags"]
    assert result.output["reported"].endswith("/output/model.tar.gz")


def test_jsonata_overrides_are_validated_before_any_job(cloud: LocalCloud) -> None:
    result = cloud.run(
        cloud.state_machine("composed-jsonata"),
        {"training": {"instance_type": "ml.p5.48xlarge"}},
        name="jsonata-bad",
    )
    assert result.status == "FAILED"
    assert result.error == TrainingErrors.INVALID_OVERRIDES
    assert result.submitted_requests == []


def test_two_tasks_in_one_state_machine_get_their_own_jobs(cloud: LocalCloud) -> None:
    result = cloud.run(cloud.state_machine("two-tasks"), {}, name="two")
    assert result.status == "SUCCEEDED", result.cause
    first, second = job_names(result)
    assert first.startswith("many-first-two-") and second.startswith("many-second-two-")
    assert result.output["first"]["TrainingJobName"] == first
    assert result.output["second"]["TrainingJobName"] == second


def test_a_task_reached_twice_gets_a_job_per_entry(cloud: LocalCloud) -> None:
    result = cloud.run(cloud.state_machine("loop"), {}, name="loop")
    assert result.status == "SUCCEEDED", result.cause
    names = job_names(result)
    assert len(names) == 2 and len(set(names)) == 2
    assert all(len(name) <= MAX_JOB_NAME for name in names)


def test_map_iterations_get_distinct_jobs(cloud: LocalCloud) -> None:
    result = cloud.run(cloud.state_machine("mapped"), {"items": [1, 2, 3]}, name="map")
    assert result.status == "SUCCEEDED", result.cause
    names = job_names(result)
    assert len(names) == 3 and len(set(names)) == 3
    assert sorted(output["TrainingJobName"] for output in result.output) == sorted(names)


def test_map_iterations_over_identical_items_get_distinct_jobs(
    cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Iterations that enter the task in the same instant (forced here: times cut to the
    second) with the same item show it the same context: each still gets its own job."""
    from hetero_constructs.handlers import lanes
    from hetero_constructs.local import moto_executions

    stamp = moto_executions.aws_timestamp
    monkeypatch.setattr(
        moto_executions, "aws_timestamp", lambda moment: stamp(moment.replace(microsecond=0))
    )
    chosen: list[int] = []
    choose = lanes.choose

    def recorded(*args: Any) -> Any:
        lane, slot = choose(*args)
        chosen.append(lane)
        return lane, slot

    monkeypatch.setattr(lanes, "choose", recorded)
    result = cloud.run(cloud.state_machine("mapped-identical"), {"items": [{}] * 4}, name="same")
    assert result.status == "SUCCEEDED", result.cause
    names = job_names(result)
    assert len(names) == 4 and len(set(names)) == 4
    assert sorted(output["TrainingJobName"] for output in result.output) == sorted(names)
    assert max(chosen) > 0  # the iterations did share one context


@pytest.mark.parametrize("parent", ["parent-jsonpath", "parent-jsonata"])
def test_a_parent_receives_the_child_runs_training_output(cloud: LocalCloud, parent: str) -> None:
    result = cloud.run(cloud.state_machine(parent), {}, name=f"{parent}-ok")
    assert result.status == "SUCCEEDED", result.cause
    (request,) = result.submitted_requests
    # The key Step Functions adds to the child's input is not an override.
    assert request["HyperParameters"]["epochs"] in ("4", "5")
    assert result.output["training"]["TrainingJobName"] == request["TrainingJobName"]
    assert result.output["training"]["TrainingJobStatus"] == "Completed"


def test_aborting_the_parent_stops_the_child_job(cloud: LocalCloud) -> None:
    result = cloud.run(
        cloud.state_machine("parent-jsonpath"), {}, name="parent-stopped", stop_execution=True
    )
    assert result.status == "ABORTED"
    (name,) = job_names(result)
    # Step Functions stops the child a moment later; its end stops the child's job.
    deadline = time.monotonic() + 60
    while name not in cloud.training.stopped_jobs and time.monotonic() < deadline:
        cloud.settle()
        time.sleep(0.05)
    assert name in cloud.training.stopped_jobs
    status = cloud.client("sagemaker").describe_training_job(TrainingJobName=name)
    assert status["TrainingJobStatus"] in ("Stopping", "Stopped")
