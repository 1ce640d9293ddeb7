"""Template helpers for the tests: tokens replaced by literals, definitions parsed."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": "us-west-2",
    "AWS::AccountId": "111122223333",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "HeteroTrainingExample",
}

ARNS = {
    "AWS::IAM::Role": "arn:aws:iam::111122223333:role/{name}",
    "AWS::Lambda::Function": "arn:aws:lambda:us-west-2:111122223333:function:{name}",
    "AWS::DynamoDB::Table": "arn:aws:dynamodb:us-west-2:111122223333:table/{name}",
    "AWS::Logs::LogGroup": "arn:aws:logs:us-west-2:111122223333:log-group:{name}:*",
}


def literal(node: Any, template: dict[str, Any]) -> Any:
    """An intrinsic function as the literal value it would deploy to (fake account)."""
    if isinstance(node, str | int | float | bool) or node is None:
        return node
    if isinstance(node, list):
        return [literal(item, template) for item in node]
    if "Ref" in node:
        name = node["Ref"]
        return PSEUDO.get(name, f"ref-{name.lower()}")
    if "Fn::GetAtt" in node:
        logical_id, attribute = node["Fn::GetAtt"]
        kind = template["Resources"][logical_id]["Type"]
        pattern = ARNS.get(kind, "arn:aws:{service}:us-west-2:111122223333:{name}")
        service = kind.split("::")[1].lower()
        return pattern.format(service=service, name=logical_id.lower()) + (
            "" if attribute == "Arn" else f"-{attribute.lower()}"
        )
    if "Fn::Join" in node:
        separator, parts = node["Fn::Join"]
        return separator.join(str(literal(part, template)) for part in parts)
    if "Fn::Sub" in node:
        return re.sub(r"\$\{([^}]+)\}", lambda m: PSEUDO.get(m.group(1), "sub"), node["Fn::Sub"])
    if "Fn::FindInMap" in node:
        name, key, attribute = node["Fn::FindInMap"]
        return template["Mappings"][name][literal(key, template)][attribute]
    return {key: literal(value, template) for key, value in node.items()}


def with_literal_definitions(template: dict[str, Any]) -> dict[str, Any]:
    """The template with every state machine definition as a literal JSON string (for E3601)."""
    result = copy.deepcopy(template)
    for resource in result["Resources"].values():
        if resource["Type"] == "AWS::StepFunctions::StateMachine":
            properties = resource["Properties"]
            properties["DefinitionString"] = literal(properties["DefinitionString"], template)
    return result


def definitions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each state machine's definition, parsed, by logical id."""
    literal_template = with_literal_definitions(template)
    return {
        logical_id: json.loads(resource["Properties"]["DefinitionString"])
        for logical_id, resource in literal_template["Resources"].items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
    }


def resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def policy_statements(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    """Statements (tokens made literal) of the policies of roles whose logical id has the prefix.

    Inline policies, policies naming the role, and the template's managed policies it attaches.
    """
    statements: list[dict[str, Any]] = []
    managed = resources(template, "AWS::IAM::ManagedPolicy")
    for logical_id, role in resources(template, "AWS::IAM::Role").items():
        if logical_id.startswith(role_prefix):
            for inline in role["Properties"].get("Policies", []):
                statements.extend(inline["PolicyDocument"]["Statement"])
            for arn in role["Properties"].get("ManagedPolicyArns", []):
                if isinstance(arn, dict) and arn.get("Ref") in managed:
                    document = managed[arn["Ref"]]["Properties"]["PolicyDocument"]
                    statements.extend(document["Statement"])
    for policy in resources(template, "AWS::IAM::Policy").values():
        # A role is a Ref to one in the stack, or the name of an imported one.
        roles = [
            r.get("Ref", "") if isinstance(r, dict) else r
            for r in policy["Properties"].get("Roles", [])
        ]
        if any(r.startswith(role_prefix) for r in roles):
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return literal(statements, template)  # type: ignore[no-any-return]
