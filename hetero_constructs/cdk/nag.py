"""cdk-nag acknowledgments for the findings these constructs cause by design.

Each acknowledgment names one exact finding (the rule id with the resource or action that
fires it, rendered the way cdk-nag renders tokens) and says why it is needed, on the narrowest
construct that carries it. Nothing is acknowledged by rule id alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

IAM5 = "AwsSolutions::AwsSolutions-IAM5"


def render_for_nag(scope: IConstruct, value: str) -> str:
    """A string as cdk-nag prints it: ``<AWS::Partition>``, ``<LogicalId.Arn>``, literals."""
    return _render(Stack.of(scope).resolve(value))


def _render(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and "Fn::Join" in node:
        separator, parts = node["Fn::Join"]
        return str(separator).join(_render(part) for part in parts)
    if isinstance(node, dict) and "Ref" in node:
        return f"<{node['Ref']}>"
    if isinstance(node, dict) and "Fn::GetAtt" in node:
        return "<" + ".".join(node["Fn::GetAtt"]) + ">"
    return str(node)


def acknowledge_wildcards(
    scope: IConstruct,
    reason: str,
    *,
    resources: Iterable[str] = (),
    actions: Iterable[str] = (),
) -> None:
    """Acknowledge AwsSolutions-IAM5 for exactly these wildcard resources and actions."""
    ids = [f"{IAM5}[Resource::{render_for_nag(scope, r)}]" for r in resources]
    ids += [f"{IAM5}[Action::{a}]" for a in actions]
    Validations.of(scope).acknowledge(*(Acknowledgment(id=i, reason=reason) for i in ids))
