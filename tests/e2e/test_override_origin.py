"""Issue 33 item 4: violations of overrides an earlier state of a user's pipeline produced name
that state and the path in its output, not ``execution input``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_stepfunctions as sfn

from hetero_constructs import HeterogeneousTrainingTask
from hetero_constructs.local import LocalCloud
from tests.fixtures.construct_specs import spec


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("origin.out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Origin", env=cdk.Environment(region="us-west-2"))
    prepare = sfn.Pass(
        stack,
        "Prepare",
        result=sfn.Result.from_object({"tags": {"team": 5}, "hyperparameters": {"epochs": 2}}),
        result_path="$.prepared",
    )
    train = HeterogeneousTrainingTask(
        stack,
        "Train",
        job_name_prefix="origin",
        spec=spec(),
        overrides=sfn.TaskInput.from_json_path_at("$.prepared"),
    )
    sfn.StateMachine(
        stack,
        "Pipeline",
        state_machine_name="origin",
        definition_body=sfn.DefinitionBody.from_chainable(prepare.next(train)),
    )
    app.synth()
    return outdir / "Origin.template.json"


@pytest.fixture
def cloud(pipeline: Path) -> Iterator[LocalCloud]:
    with LocalCloud(simulate="Completed") as local:
        local.deploy(pipeline)
        yield local


def test_a_violation_of_overrides_a_state_produced_names_that_state_and_path(
    cloud: LocalCloud,
) -> None:
    result = cloud.run(cloud.state_machine("origin"), {"data": 1}, name="bad-origin")
    assert result.status == "FAILED"
    assert result.error == "HeteroTraining.InvalidOverrides"
    cause = json.loads(result.cause or "{}")
    (violation,) = cause["violations"]
    assert violation["path"] == "state 'Prepare' output $.prepared.tags"  # not "execution input"
    assert "state 'Prepare' output $.prepared" in cause["FailureReason"]
    assert result.training_jobs == []
