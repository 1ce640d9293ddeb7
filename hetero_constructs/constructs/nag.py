"""cdk-nag acknowledgments for the findings these constructs cause by design.

Each acknowledgment names one exact finding (the rule id with the resource or action that
fires it, rendered the way cdk-nag renders tokens) and says why it is needed, on the narrowest
construct that carries it. Nothing is acknowledged by rule id alone.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from aws_cdk import Stack, Validations
from constructs import IConstruct

IAM5 = "AwsSolutions::AwsSolutions-IAM5"
_TOKEN = "${Token["


def _render(node: Any) -> str:
    """A resolved CloudFormation value as cdk-nag prints it."""
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


class NagIds:
    """Renders finding ids for one stack: ``<AWS::Partition>``, ``<LogicalId.Arn>``, literals.

    The stack's pseudo-parameter tokens are resolved once and then replaced as text, so most
    ids cost no call into the jsii runtime.
    """

    def __init__(self, stack: Stack, common_tokens: Iterable[str]) -> None:
        self._stack = stack
        self._known = {t: _render(stack.resolve(t)) for t in common_tokens if _TOKEN in t}

    def render(self, value: str) -> str:
        for token, rendered in self._known.items():
            value = value.replace(token, rendered)
        return _render(self._stack.resolve(value)) if _TOKEN in value else value


@functools.cache
def _acknowledged_rules_key() -> str:
    return Validations.ACKNOWLEDGED_RULES_METADATA_KEY


def qualified_id(finding_id: str) -> str:
    """The id as ``Validations.acknowledge`` records it (spaces become hyphens)."""
    return finding_id.replace(" ", "-")


class Acknowledgments:
    """Collects the acknowledgments of one construct and records them in one call.

    They are recorded as the metadata ``Validations.acknowledge`` writes, which is what CDK's
    validation report and cdk-nag read (``Validations.ACKNOWLEDGED_RULES_METADATA_KEY``: rule id
    to reason, on the construct or an ancestor of the finding), without the stack trace
    ``acknowledge`` captures for every rule.
    """

    def __init__(self, scope: IConstruct, ids: NagIds) -> None:
        self._scope = scope
        self._ids = ids
        self._entries: dict[str, str] = {}

    def wildcards(
        self, reason: str, *, resources: Iterable[str] = (), actions: Iterable[str] = ()
    ) -> Acknowledgments:
        """AwsSolutions-IAM5 for exactly these wildcard resources and actions."""
        for resource in resources:
            self._entries[f"{IAM5}[Resource::{self._ids.render(resource)}]"] = reason
        for action in actions:
            self._entries[f"{IAM5}[Action::{action}]"] = reason
        return self

    def finding(self, finding_id: str, reason: str) -> Acknowledgments:
        """Any other finding, by its full id (``Serverless::Serverless-LambdaDLQ``)."""
        self._entries[finding_id] = reason
        return self

    def record(self) -> None:
        if self._entries:
            self._scope.node.add_metadata(
                _acknowledged_rules_key(),
                {qualified_id(i): r for i, r in sorted(self._entries.items())},
            )


__all__ = [
    "IAM5",
    "Acknowledgments",
    "NagIds",
    "qualified_id",
]
