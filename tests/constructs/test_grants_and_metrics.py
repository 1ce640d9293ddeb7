"""What CDK users expect of the constructs: ``grant_principal`` (IGrantable), ``metric_*``."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from hetero_constructs import HeterogeneousTrainingJob, HeterogeneousTrainingTask
from tests.fixtures.construct_specs import spec, stack
from tests.fixtures.templates import policy_statements, resources


def grants_reading(statements: list[dict[str, Any]], bucket_id: str) -> bool:
    return any(
        "s3:GetObject*" in s["Action"] and bucket_id.lower() in str(s["Resource"])
        for s in statements
    )


def test_a_grant_to_the_job_is_a_grant_to_its_training_jobs() -> None:
    scope = stack()
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec(), job_name_prefix="granted")
    bucket = s3.Bucket(scope, "Extra")
    assert job.grant_principal is job.task.role is job.role
    bucket.grant_read(job)  # jsii reads grant_principal through the IGrantable interface
    template = Template.from_stack(scope).to_json()
    (role_id,) = [k for k in resources(template, "AWS::IAM::Role") if "TaskExecutionRole" in k]
    assert grants_reading(policy_statements(template, role_id), "Extra")
    # The state machine's role is the stack's, shared by its jobs: it gets nothing of it.
    runner_roles = [k for k in resources(template, "AWS::IAM::Role") if "Runner" in k]
    assert runner_roles
    for role in runner_roles:
        assert not grants_reading(policy_statements(template, role), "Extra")


def test_a_grant_to_the_task_is_a_grant_to_its_training_jobs() -> None:
    scope = stack()
    task = HeterogeneousTrainingTask(scope, "Train", spec=spec(), job_name_prefix="granted")
    sfn.StateMachine(scope, "Machine", definition_body=sfn.DefinitionBody.from_chainable(task))
    bucket = s3.Bucket(scope, "Extra")
    assert task.grant_principal is task.role
    grant = bucket.grant_read(task)
    assert grant.success
    template = Template.from_stack(scope).to_json()
    assert grants_reading(policy_statements(template, "TrainExecutionRole"), "Extra")
    assert not grants_reading(policy_statements(template, "MachineRole"), "Extra")


def test_a_spec_role_named_by_arn_is_used_as_is() -> None:
    """An imported role is the user's to change: grants to it change nothing (as in CDK)."""
    scope = stack()
    arn = "arn:aws:iam::111122223333:role/TeamTraining"
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec(role=arn))
    assert job.grant_principal.role_arn == arn  # type: ignore[attr-defined]
    s3.Bucket(scope, "Extra").grant_read(job)
    template = Template.from_stack(scope).to_json()
    for policy in resources(template, "AWS::IAM::Policy").values():
        assert "Extra" not in str(policy)


def resolved(scope: cdk.Stack, metric: cloudwatch.Metric) -> dict[str, Any]:
    config = metric.to_metric_config().metric_stat
    assert config is not None
    return {
        "namespace": config.namespace,
        "name": config.metric_name,
        "statistic": config.statistic,
        "period": config.period.to_seconds(),
        "dimensions": {d.name: scope.resolve(d.value) for d in config.dimensions or []},
    }


@pytest.mark.parametrize(
    ("method", "metric_name"),
    [
        ("metric_started", "ExecutionsStarted"),
        ("metric_succeeded", "ExecutionsSucceeded"),
        ("metric_failed", "ExecutionsFailed"),
        ("metric_timed_out", "ExecutionsTimedOut"),
        ("metric_aborted", "ExecutionsAborted"),
    ],
)
def test_the_jobs_metrics_are_its_state_machines_executions(method: str, metric_name: str) -> None:
    scope = stack()
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec(), job_name_prefix="measured")
    metric = getattr(job, method)()
    assert resolved(scope, metric) == {
        "namespace": "AWS/States",
        "name": metric_name,
        "statistic": "Sum",
        "period": 300,
        "dimensions": {
            "StateMachineArn": {"Ref": scope.get_logical_id(job.state_machine_resource)}
        },
    }
    # MetricOptions pass through, as with sfn.StateMachine's own methods.
    hourly = getattr(job, method)(period=cdk.Duration.hours(1), statistic="Maximum")
    assert (resolved(scope, hourly)["period"], resolved(scope, hourly)["statistic"]) == (
        3600,
        "Maximum",
    )


def test_the_dead_letters_metric_is_the_runners_queue_and_alarms_on_it_synthesize() -> None:
    scope = stack()
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec(), job_name_prefix="measured")
    dead_letters = resolved(scope, job.metric_dead_letters())
    assert dead_letters["namespace"] == "AWS/SQS"
    assert dead_letters["name"] == "ApproximateNumberOfMessagesVisible"
    assert dead_letters["statistic"] == "Maximum"
    queue = scope.get_logical_id(job.runner.dead_letters.node.default_child)  # type: ignore[arg-type]
    assert dead_letters["dimensions"] == {"QueueName": {"Fn::GetAtt": [queue, "QueueName"]}}
    job.metric_failed().create_alarm(scope, "Failed", threshold=1, evaluation_periods=1)
    job.metric(metric_name="ExecutionThrottled").create_alarm(
        scope, "Throttled", threshold=1, evaluation_periods=1
    )
    alarms = resources(Template.from_stack(scope).to_json(), "AWS::CloudWatch::Alarm")
    assert {"ExecutionsFailed", "ExecutionThrottled"} <= {
        a["Properties"].get("MetricName") for a in alarms.values()
    }


def test_the_job_is_an_igrantable_to_aws_cdk_lib() -> None:
    scope = stack()
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec())
    grant = iam.Grant.add_to_principal(grantee=job, actions=["s3:ListBucket"], resource_arns=["*"])
    assert grant.success and grant.principal_statements
