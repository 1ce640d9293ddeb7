"""HeterogeneousTrainingTask at synth: deploy-time timeouts, spec files, training-plan IAM."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import jsonata
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from hetero_constructs import (
    HeterogeneousTrainingJob,
    HeterogeneousTrainingTask,
    SpecValidationError,
    bucket_uri,
)
from tests.fixtures.construct_specs import REPO, spec, stack
from tests.fixtures.templates import definitions, policy_statements

SPEC_FILE = REPO / "examples" / "specs" / "hetero_torch_distributed.json"
DEFAULT_MARGIN = 6 * 3600


def machine(scope: cdk.Stack, start: sfn.IChainable, **props: Any) -> sfn.StateMachine:
    return sfn.StateMachine(
        scope, "Machine", definition_body=sfn.DefinitionBody.from_chainable(start), **props
    )


#: The value the MaxRun parameter is deployed with here.
MAX_RUN = 7211


def only_definition(scope: cdk.Stack) -> dict[str, Any]:
    """The stack's one state machine definition, as deployed with MaxRun = MAX_RUN."""
    template = Template.from_stack(scope).to_json()
    (definition,) = definitions(_with_max_run(template)).values()
    return definition


def _with_max_run(node: Any) -> Any:
    if node == {"Ref": "MaxRun"}:
        return str(MAX_RUN)
    if isinstance(node, dict):
        return {key: _with_max_run(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_with_max_run(item) for item in node]
    return node


def max_run_parameter(scope: cdk.Stack) -> Any:
    return cdk.Token.as_number(cdk.CfnParameter(scope, "MaxRun", type="Number").value_as_number)


def evaluated(expression: str) -> Any:
    """A JSONata timeout, evaluated as Step Functions would."""
    assert expression.startswith("{%") and expression.endswith("%}"), expression
    assert str(MAX_RUN) in expression  # the parameter itself, read at run time
    return jsonata.Jsonata(expression[2:-2]).evaluate(None)


# -- a deploy-time max_run ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("margin", "added"), [(None, DEFAULT_MARGIN), (cdk.Duration.hours(1), 3600)]
)
def test_a_token_max_run_makes_the_job_jsonata_and_its_timeout_adds_the_margin(
    margin: cdk.Duration | None, added: int
) -> None:
    scope = stack()
    job = HeterogeneousTrainingJob(
        scope, "Job", spec=spec(max_run=max_run_parameter(scope)), completion_margin=margin
    )
    assert job.query_language == sfn.QueryLanguage.JSONATA
    definition = only_definition(scope)
    assert definition["QueryLanguage"] == "JSONata"
    (task,) = [s for s in definition["States"].values() if "TimeoutSeconds" in s]
    assert evaluated(task["TimeoutSeconds"]) == MAX_RUN + added


def test_a_token_max_wait_with_spot_is_the_one_the_margin_is_added_to() -> None:
    scope = stack()
    HeterogeneousTrainingTask(
        scope,
        "Task",
        spec=spec(max_run=3600, max_wait=max_run_parameter(scope), use_spot_instances=True),
        query_language=sfn.QueryLanguage.JSONATA,
    )
    state = only_definition_of_task(scope)
    assert evaluated(state["TimeoutSeconds"]) == MAX_RUN + DEFAULT_MARGIN


def only_definition_of_task(scope: cdk.Stack) -> dict[str, Any]:
    task = scope.node.find_child("Task")
    assert isinstance(task, HeterogeneousTrainingTask)
    machine(scope, task, query_language=sfn.QueryLanguage.JSONATA)
    return dict(only_definition(scope)["States"]["Task"])


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({}, "max_run"),
        ({"max_run": 3600, "use_spot_instances": True}, "max_wait"),
    ],
)
def test_a_jsonpath_task_refuses_a_token_max_run(changes: dict[str, Any], field: str) -> None:
    scope = stack()
    token = max_run_parameter(scope)
    with pytest.raises(SpecValidationError) as raised:
        HeterogeneousTrainingTask(scope, "Task", spec=spec(**{field: token, **changes}))
    (violation,) = raised.value.violations
    assert (violation.rule, violation.path) == ("CDK-TIMEOUT-TOKEN", field)
    message = str(raised.value)
    assert "in Test/Task" in message  # the construct's path, as for every violation
    assert f"[CDK-TIMEOUT-TOKEN] {field}:" in message
    assert 'Given: "a CDK token"' in message
    assert "Fix: pass query_language=sfn.QueryLanguage.JSONATA" in message


def test_the_construct_rules_are_in_the_catalogue() -> None:
    catalogue = (REPO / "docs" / "rules.md").read_text()
    construct = catalogue.split("## Construct", 1)[1].split("\n## ", 1)[0]
    for rule_id in ("CDK-REGION", "CDK-TIMEOUT-TOKEN"):  # the ids the constructs raise
        assert f"| `{rule_id}` |" in construct, rule_id


# -- from_spec_file ----------------------------------------------------------------------------


def test_a_task_from_a_spec_file_takes_spec_overrides_and_chains_into_a_state_machine() -> None:
    scope = stack()
    bucket = s3.Bucket(scope, "Data")
    prepare = sfn.Pass(scope, "Prepare")
    # The spec's output_path (an S3 location) is a spec override; the state's is a prop.
    train = HeterogeneousTrainingTask.from_spec_file(
        scope,
        "Train",
        SPEC_FILE,
        spec_overrides={"output_path": bucket_uri(bucket, "runs/"), "max_run": 7200},
        job_name_prefix="from-file",
        result_path="$.training",
    )
    again = HeterogeneousTrainingTask.from_spec_file(
        scope, "Again", str(SPEC_FILE), job_name_prefix="second-from-file", output_path="$.Attempt"
    )
    machine(scope, prepare.next(train).next(again))
    definition = only_definition(scope)  # synthesizes

    assert train.request["StoppingCondition"]["MaxRuntimeInSeconds"] == 7200
    assert "${Token[" in train.request["OutputDataConfig"]["S3OutputPath"]
    # The file's other fields: its groups, hyperparameters, role (imported, not created).
    assert [
        (g["InstanceType"], g["InstanceCount"])
        for g in train.request["ResourceConfig"]["InstanceGroups"]
    ] == [("ml.c5.18xlarge", 2), ("ml.p4d.24xlarge", 2)]
    assert train.request["RoleArn"] == "arn:aws:iam::111122223333:role/SageMakerTraining"
    assert again.request["OutputDataConfig"]["S3OutputPath"] == "s3://my-training-bucket/output"
    assert again.request["StoppingCondition"]["MaxRuntimeInSeconds"] == 14400

    states = definition["States"]
    assert definition["StartAt"] == "Prepare" and states["Prepare"]["Next"] == "Train"
    assert states["Train"]["Next"] == "Again" and states["Again"]["End"] is True
    assert states["Train"]["ResultPath"] == "$.training"
    assert states["Train"]["TimeoutSeconds"] == 7200 + DEFAULT_MARGIN
    assert states["Again"]["OutputPath"] == "$.Attempt"
    assert "OutputPath" not in states["Train"]


@pytest.mark.parametrize(
    ("keyword", "fix"),
    [
        ("result_pth", "did you mean 'result_path'?"),
        # A spec field given as a prop is never guessed into the spec: it is refused, with how.
        ("max_run", "'max_run' is a TrainingSpec field: set it in the spec, or with "),
        ("max_runtime", "spec_overrides={'max_run': ...}"),
    ],
)
def test_a_task_refuses_an_unknown_prop_with_the_fix(keyword: str, fix: str) -> None:
    for make in (
        lambda: HeterogeneousTrainingTask.from_spec_file(
            stack(), "Train", SPEC_FILE, **{keyword: 1}
        ),
        lambda: HeterogeneousTrainingTask(stack(), "Train", spec=spec(), **{keyword: 1}),
    ):
        with pytest.raises(TypeError) as raised:
            make()
        message = str(raised.value)
        assert f"HeterogeneousTrainingTask has no prop {keyword!r}" in message
        assert "Allowed: acknowledgments, assign, builtin_metrics, capacity_retry," in message
        assert fix in message


def test_an_s3_output_path_given_to_a_task_is_refused_with_the_fix() -> None:
    """``output_path`` is the state's JSONPath; the old call style is not silently accepted."""
    with pytest.raises(ValueError) as raised:
        HeterogeneousTrainingTask.from_spec_file(
            stack(), "Train", SPEC_FILE, output_path="s3://bucket/runs/"
        )
    message = str(raised.value)
    assert "output_path 's3://bucket/runs/' is not a JSONPath" in message
    assert "spec_overrides={'output_path': 's3://bucket/runs/'}" in message


def test_spec_overrides_name_spec_fields_only() -> None:
    with pytest.raises(ValueError) as raised:
        HeterogeneousTrainingTask.from_spec_file(
            stack(), "Train", SPEC_FILE, spec_overrides={"max_runtime": 7200}
        )
    message = str(raised.value)
    assert "Test/Train: spec_overrides has no TrainingSpec field 'max_runtime'" in message
    assert "did you mean 'max_run'?" in message


# -- training_plan_arn --------------------------------------------------------------------------

PLAN = "arn:aws:sagemaker:us-west-2:111122223333:training-plan/p5-reserved"


def control_statements(plan: str | None) -> list[dict[str, Any]]:
    scope = stack()
    task = HeterogeneousTrainingTask(
        scope, "Train", job_name_prefix="planned", spec=spec(training_plan_arn=plan)
    )
    machine(scope, task)
    return policy_statements(Template.from_stack(scope).to_json(), "TrainControlRole")


def test_a_training_plan_lets_the_control_role_create_jobs_on_it_and_describe_it() -> None:
    with_plan = control_statements(PLAN)
    without = control_statements(None)
    jobs = "arn:aws:sagemaker:us-west-2:111122223333:training-job/planned-*"

    (create,) = [s for s in with_plan if s["Action"] == "sagemaker:CreateTrainingJob"]
    (create_without,) = [s for s in without if s["Action"] == "sagemaker:CreateTrainingJob"]
    assert create["Resource"] == [jobs, PLAN]
    assert create_without["Resource"] == jobs
    # The same conditions: the plan adds a resource, never loosens what a job may be.
    assert create["Condition"] == create_without["Condition"]
    assert {k: v for k, v in create.items() if k != "Resource"} == {
        k: v for k, v in create_without.items() if k != "Resource"
    }

    describe_plan = {
        "Effect": "Allow",
        "Action": "sagemaker:DescribeTrainingPlan",
        "Resource": PLAN,
    }
    assert describe_plan in with_plan
    # Nothing else changes: the same statements, but for these two.
    assert [s for s in with_plan if s not in (create, describe_plan)] == [
        s for s in without if s != create_without
    ]
    assert not any("TrainingPlan" in str(s) for s in without)
    assert sum(PLAN in str(s) for s in with_plan) == 2


# -- rendering -------------------------------------------------------------------------------


def test_the_tasks_own_retriers_come_first_and_a_users_catch_all_last() -> None:
    scope = stack()
    task = HeterogeneousTrainingTask(scope, "Task", spec=spec(), job_name_prefix="retried")
    task.add_retry(errors=["States.ALL"], max_attempts=1)
    task.add_retry(errors=["HeteroTraining.TrainingFailed"], max_attempts=2)
    machine(scope, task)
    retries = only_definition(scope)["States"]["Task"]["Retry"]
    assert [r["ErrorEquals"][-1] for r in retries] == [
        "HeteroTraining.Throttled",
        "HeteroTraining.ResourceLimitExceeded",
        "HeteroTraining.TrainingFailed",
        "States.ALL",
    ]


def test_the_task_overrides_only_what_jsii_lets_a_python_task_override() -> None:
    """aws-cdk-lib's ``_renderTask`` is internal to TypeScript (not in the jsii assembly): a
    Python task renders through ``to_state_json`` and the protected ``render*`` hooks, and
    overrides nothing else of ``TaskStateBase`` (a Python name that is also a jsii member would
    silently replace it for aws-cdk-lib, as ``_arguments`` would ``State.arguments``)."""
    from hetero_constructs.constructs.task import OwnStateMachineTask
    from hetero_constructs.constructs.task_state import SubmitTaskState

    jsii_members = {
        name
        for base in sfn.TaskStateBase.__mro__
        for name, member in vars(base).items()
        if hasattr(getattr(member, "fget", member), "__jsii_name__")
    }
    ours = {
        name
        for cls in (SubmitTaskState, HeterogeneousTrainingTask, OwnStateMachineTask)
        for name in vars(cls)
    }
    assert "_render_task" not in jsii_members and "to_state_json" in jsii_members
    assert ours & jsii_members == {"to_state_json", "_task_metrics", "_task_policies"}
