"""The built-in metric definitions the constructs add (or not), and the dashboards they make."""

from __future__ import annotations

import json

import pytest
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from hetero_constructs import (
    HeterogeneousTrainingJob,
    HeterogeneousTrainingTask,
    SpecValidationError,
    TrainingDashboard,
    TrainingMetric,
)
from hetero_constructs.contract.dashboard import widget_metric_names
from tests.fixtures.construct_specs import spec, stack

LOSS = TrainingMetric("loss", "loss=([0-9.]+)")


def _definitions(job: HeterogeneousTrainingJob | HeterogeneousTrainingTask) -> list[str]:
    return [d["Name"] for d in job.request["AlgorithmSpecification"]["MetricDefinitions"]]


def test_builtin_definitions_follow_the_specs_own_and_can_be_turned_off() -> None:
    job = HeterogeneousTrainingJob(stack(), "Train", spec=spec(metric_definitions=[LOSS]))
    assert _definitions(job) == [
        "loss",
        "data:samples_per_second",
        "data:producing_fraction",
        "data:credit_wait_fraction",
        "data:send_blocked_fraction",
        "gpu:samples_per_second",
        "gpu:data_wait_fraction",
    ]
    quiet = HeterogeneousTrainingJob(
        stack(), "Train", spec=spec(metric_definitions=[LOSS]), builtin_metrics=False
    )
    assert _definitions(quiet) == ["loss"]
    titles = [title for title, _ in widget_metric_names(quiet.dashboard.body)]
    assert "loss" in titles and not any("samples/s" in t for t in titles)


def test_too_many_definitions_with_the_builtin_ones_are_one_violation() -> None:
    own = [TrainingMetric(f"m{i}", f"m{i}=([0-9.]+)") for i in range(35)]
    with pytest.raises(SpecValidationError) as raised:
        HeterogeneousTrainingJob(stack(), "Train", spec=spec(metric_definitions=own))
    (violation,) = raised.value.violations
    assert violation.rule == "CDK-BUILTIN-METRICS"
    assert "at most 34 metric definitions" in violation.allowed  # 6 built-in ones
    assert "builtin_metrics=False" in violation.fix
    HeterogeneousTrainingJob(
        stack(), "Train", spec=spec(metric_definitions=own), builtin_metrics=False
    )


def test_a_jobs_dashboard_is_made_once_and_renders_with_the_jobs_names() -> None:
    job = HeterogeneousTrainingJob(stack(), "Train", spec=spec(), job_name_prefix="resnet")
    dashboard = job.add_dashboard(dashboard_name="resnet-training")
    assert job.dashboard is dashboard
    with pytest.raises(ValueError, match="has a dashboard already"):
        job.add_dashboard()
    template = Template.from_stack(job.runner.stack)
    (resource,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    assert resource["Properties"]["DashboardName"] == "resnet-training"
    text = json.dumps(resource["Properties"]["DashboardBody"])
    assert 'Host:\\\\\\"resnet-\\\\\\"' in text  # the SEARCH over every job of the prefix


def test_a_task_in_a_users_state_machine_gets_a_dashboard_of_that_machine() -> None:
    scope = stack()
    task = HeterogeneousTrainingTask(scope, "Train", spec=spec(), job_name_prefix="pipe")
    machine = sfn.StateMachine(
        scope, "Pipeline", definition_body=sfn.DefinitionBody.from_chainable(task)
    )
    dashboard = TrainingDashboard(scope, "Dashboard", task=task, state_machine=machine)
    runner_widgets = [w for w in dashboard.body["widgets"] if "Runs:" in str(w)]
    (widget,) = runner_widgets
    assert all(m[3] == machine.state_machine_arn for m in widget["properties"]["metrics"])
    with pytest.raises(ValueError, match="needs the state machine"):
        TrainingDashboard(scope, "Other", task=task)
