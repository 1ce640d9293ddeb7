"""The runner of a stack, and the other runners of an app, are found in the construct tree."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from constructs import Construct

from hetero_constructs import HeterogeneousTrainingJob, HeterogeneousTrainingTask, TrainingRunner
from tests.fixtures.construct_specs import spec

ENV = cdk.Environment(region="us-west-2")


def test_every_construct_of_a_stack_finds_the_stacks_one_runner() -> None:
    stack = cdk.Stack(cdk.App(), "Training", env=ENV)
    runner = TrainingRunner(stack, reconcile_interval=cdk.Duration.minutes(10))
    team = Construct(Construct(stack, "Platform"), "Team")
    job = HeterogeneousTrainingJob(team, "Job", spec=spec(), job_name_prefix="nested")
    task = HeterogeneousTrainingTask(stack, "Task", spec=spec(), job_name_prefix="top")
    assert job.runner is runner and task.runner is runner
    assert TrainingRunner.of(team) is runner
    assert [c for c in stack.node.children if isinstance(c, TrainingRunner)] == [runner]


def test_runners_made_later_or_in_a_stage_still_see_the_apps_prefixes() -> None:
    app = cdk.App()
    first = cdk.Stack(app, "First", env=ENV)
    HeterogeneousTrainingJob(first, "Job", spec=spec(), job_name_prefix="shared")
    stage = cdk.Stage(app, "Prod")
    in_stage = cdk.Stack(stage, "Second", env=ENV)
    with pytest.raises(ValueError, match="overlaps 'shared' of First/Job/"):
        HeterogeneousTrainingJob(in_stage, "Job", spec=spec(), job_name_prefix="shared-2")
    # A runner made after others learns of them, and they of it.
    third = cdk.Stack(app, "Third", env=ENV)
    HeterogeneousTrainingJob(third, "Job", spec=spec(), job_name_prefix="third")
    with pytest.raises(ValueError, match="overlaps 'third' of Third/Job/"):
        HeterogeneousTrainingJob(first, "Again", spec=spec(), job_name_prefix="third-again")


def test_apps_are_apart_however_many_are_made_and_dropped() -> None:
    """No registry outlives an app: the same prefix in a fresh app, many times, is fine."""
    for index in range(5):
        stack = cdk.Stack(cdk.App(), "Training", env=ENV)
        job = HeterogeneousTrainingJob(stack, "Job", spec=spec(), job_name_prefix="same")
        assert job.runner.node.scope is stack, index
