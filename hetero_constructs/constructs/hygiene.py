"""Template hygiene that keeps cfn-lint at zero warnings."""

from __future__ import annotations

from aws_cdk import CfnResource
from aws_cdk import aws_iam as iam
from constructs import IConstruct


def depend_on_policy_only(
    resource: IConstruct, role: iam.IRole, policy: IConstruct | None = None
) -> None:
    """Keep only the role's policy in ``DependsOn``.

    CDK also lists the role itself, which the resource already references with ``Fn::GetAtt``;
    cfn-lint reports that as W3005 (redundant dependency). ``policy``: the role's default
    policy when the caller holds it already.
    """
    cfn = resource.node.default_child
    if policy is None:
        policy = role.node.try_find_child("DefaultPolicy")
    if not isinstance(cfn, CfnResource) or policy is None:
        return
    policy_resource = policy.node.default_child
    assert isinstance(policy_resource, CfnResource)
    cfn.add_override("DependsOn", [policy_resource.logical_id])  # a token, resolved at synth


__all__ = [
    "depend_on_policy_only",
]
