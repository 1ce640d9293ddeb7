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


def test_a_task_from_a_spec_file_takes_keyword_overrides_and_chains_into_a_state_machine() -> None:
    scope = stack()
    bucket = s3.Bucket(scope, "Data")
    prepare = sfn.Pass(scope, "Prepare")
    # output_path: an S3 location is the spec's; a JSONPath is the state's own.
    train = HeterogeneousTrainingTask.from_spec_file(
        scope,
        "Train",
        SPEC_FILE,
        output_path=bucket_uri(bucket, "runs/"),
        max_run=7200,
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
    ("keyword", "suggestion"),
    [("result_pth", "did you mean 'result_path'?"), ("max_runtime", "did you mean 'max_run'?")],
)
def test_a_task_from_a_spec_file_refuses_an_unknown_keyword(keyword: str, suggestion: str) -> None:
    with pytest.raises(ValueError) as raised:
        HeterogeneousTrainingTask.from_spec_file(stack(), "Train", SPEC_FILE, **{keyword: 1})
    message = str(raised.value)
    assert f"from_spec_file takes no argument {keyword!r}" in message
    assert suggestion in message


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
