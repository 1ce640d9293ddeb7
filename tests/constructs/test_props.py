"""The props of the training constructs: declared once, documented, taken as keywords."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from typing import Any

import pytest
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from hetero_constructs import CapacityRetry, HeterogeneousTrainingJob, HeterogeneousTrainingTask
from hetero_constructs.constructs import props as props_module
from hetero_constructs.constructs.props import (
    HeterogeneousTrainingJobProps,
    HeterogeneousTrainingProps,
    HeterogeneousTrainingTaskProps,
)
from hetero_constructs.contract.lifecycle import Errors
from tests.fixtures.construct_specs import spec, stack
from tests.fixtures.templates import definitions

PROPS_CLASSES = (
    HeterogeneousTrainingProps,
    HeterogeneousTrainingTaskProps,
    HeterogeneousTrainingJobProps,
)


def names(cls: type) -> set[str]:
    return {field.name for field in dataclasses.fields(cls)}


def test_each_prop_is_declared_once_and_the_shared_ones_in_one_class() -> None:
    source = ast.parse(inspect.getsource(props_module))
    declared: list[str] = []
    for node in source.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Props"):
            declared += [
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            ]
    assert len(declared) == len(set(declared)), declared
    shared = names(HeterogeneousTrainingProps)
    task, job = names(HeterogeneousTrainingTaskProps), names(HeterogeneousTrainingJobProps)
    assert task & job == shared
    assert {"spec", "role", "capacity_retry", "vpc", "acknowledgments"} <= shared
    assert {"result_path", "overrides", "query_language"} <= task - shared
    assert {"alarm_topic", "schedule", "log_encryption_key"} <= job - shared


def test_every_prop_has_one_docstring() -> None:
    source = ast.parse(inspect.getsource(props_module))
    for node in source.body:
        if not (isinstance(node, ast.ClassDef) and node.name.endswith("Props")):
            continue
        body = node.body
        for index, item in enumerate(body):
            if isinstance(item, ast.AnnAssign):
                following = body[index + 1] if index + 1 < len(body) else None
                assert isinstance(following, ast.Expr) and isinstance(
                    following.value, ast.Constant
                ), f"{node.name}.{ast.unparse(item.target)} has no docstring"


@pytest.mark.parametrize(
    ("construct", "props"),
    [
        (HeterogeneousTrainingTask, HeterogeneousTrainingTaskProps),
        (HeterogeneousTrainingJob, HeterogeneousTrainingJobProps),
    ],
)
def test_the_constructors_take_the_props_fields_as_keywords(construct: type, props: type) -> None:
    parameters = inspect.signature(construct.__init__).parameters  # type: ignore[misc]
    assert list(parameters)[:3] == ["self", "scope", "construct_id"]
    assert set(list(parameters)[3:]) == names(props)
    assert parameters["capacity_retry"].default == props(spec=spec()).capacity_retry


def test_props_are_keywords_not_positional_values() -> None:
    with pytest.raises(TypeError, match="takes its props as keywords"):
        HeterogeneousTrainingJob(stack(), "Job", spec())  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'spec'"):
        HeterogeneousTrainingJob(stack(), "Job")  # type: ignore[call-arg]


def capacity_retriers(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in state["Retry"] if Errors.CAPACITY_ERROR in r["ErrorEquals"]]


def test_the_task_and_the_job_retry_capacity_errors_alike_by_default() -> None:
    """Issue 23 item 7: one default, stated once (the job retried, the task did not)."""
    task_default = HeterogeneousTrainingTaskProps(spec=spec()).capacity_retry
    assert task_default is HeterogeneousTrainingJobProps(spec=spec()).capacity_retry
    assert task_default is not None and task_default.seconds == CapacityRetry().seconds

    scope = stack()
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec(), job_name_prefix="own")
    task = HeterogeneousTrainingTask(scope, "Train", spec=spec(), job_name_prefix="chained")
    sfn.StateMachine(scope, "Machine", definition_body=sfn.DefinitionBody.from_chainable(task))
    found = definitions(Template.from_stack(scope).to_json())
    job_state = next(d for k, d in found.items() if k.startswith("Job"))["States"]
    task_state = next(d for k, d in found.items() if k.startswith("Machine"))["States"]["Train"]
    (job_retrier,) = capacity_retriers(job_state["Run training job"])
    assert capacity_retriers(task_state) == [job_retrier]
    assert job_retrier == {
        "ErrorEquals": [Errors.CAPACITY_ERROR, Errors.RESOURCE_LIMIT_EXCEEDED],
        "IntervalSeconds": 300,
        "MaxAttempts": 3,
        "BackoffRate": 2,
        "MaxDelaySeconds": 3600,
        "JitterStrategy": "FULL",
    }
    assert job.task.longest_run_seconds == task.longest_run_seconds


def test_every_optional_prop_says_its_default() -> None:
    """awslint's rule for aws-cdk's props: an optional prop's doc names its default."""
    source = ast.parse(inspect.getsource(props_module))
    missing, optional = [], 0
    for node in source.body:
        if not (isinstance(node, ast.ClassDef) and node.name.endswith("Props")):
            continue
        for item, following in zip(node.body, node.body[1:], strict=False):
            if isinstance(item, ast.AnnAssign) and item.value is not None:
                optional += 1
                assert isinstance(following, ast.Expr)
                if "Default:" not in str(following.value.value):  # type: ignore[attr-defined]
                    missing.append(f"{node.name}.{ast.unparse(item.target)}")
    assert optional == 29  # every field but ``spec``: none was left out of the count
    assert not missing, f"optional props whose docstring names no 'Default:': {missing}"
