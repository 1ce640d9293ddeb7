"""HeterogeneousTrainingTask at synth: deploy-time timeouts."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import jsonata
import pytest
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from hetero_constructs import (
    HeterogeneousTrainingJob,
    HeterogeneousTrainingTask,
    SpecValidationError,
)
from tests.cdk.templates import definitions
from tests.cdk.test_construct import REPO, spec, stack

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
