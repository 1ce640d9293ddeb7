"""Issue 21 case 4: a task in an inline Map's iterations passes the item's index, so that each
iteration has its own slot; elsewhere (top level, a Distributed Map's child executions, a
Parallel branch) the definition is as before."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from hetero_constructs import HeterogeneousTrainingTask
from tests.fixtures.construct_specs import spec, stack
from tests.fixtures.templates import definitions


def _context_of(scope: cdk.Stack) -> dict[str, Any]:
    (definition,) = definitions(Template.from_stack(scope).to_json()).values()
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("Type") == "Task" and "Payload" in node.get("Parameters", {}):
                found.append(node["Parameters"]["Payload"]["context"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(definition)
    (context,) = found
    return context


def _machine(scope: cdk.Stack, start: sfn.IChainable) -> None:
    sfn.StateMachine(scope, "Machine", definition_body=sfn.DefinitionBody.from_chainable(start))


def test_an_inline_map_iteration_passes_its_index() -> None:
    scope = stack()
    each = sfn.Map(scope, "Each", items_path="$.runs")
    each.item_processor(HeterogeneousTrainingTask(scope, "Train", spec=spec()))
    _machine(scope, each)
    assert _context_of(scope)["mapIndex.$"] == "$$.Map.Item.Index"


def test_a_task_outside_a_map_passes_no_index() -> None:
    scope = stack()
    _machine(scope, HeterogeneousTrainingTask(scope, "Train", spec=spec()))
    assert "mapIndex.$" not in _context_of(scope)


def test_a_distributed_map_iteration_passes_no_index() -> None:
    scope = stack()
    each = sfn.DistributedMap(scope, "Each", items_path="$.runs")
    each.item_processor(HeterogeneousTrainingTask(scope, "Train", spec=spec()))
    _machine(scope, each)
    assert "mapIndex.$" not in _context_of(scope)
