"""The size quotas of a template: IAM policies, the stack, state machine definitions, event
patterns and Lambda environments, each measured with what IAM or the service counts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hetero_constructs.deployability.intrinsics import is_intrinsic
from hetero_constructs.deployability.quota import (
    CFN_QUOTAS,
    EVENT_PATTERN_CHARACTERS,
    EVENTS_QUOTAS,
    IAM_QUOTAS,
    LAMBDA_ENVIRONMENT_BYTES,
    LAMBDA_QUOTAS,
    MANAGED_POLICIES_PER_ROLE,
    MANAGED_POLICY_CHARACTERS,
    RESOURCES_PER_STACK,
    ROLE_INLINE_POLICY_CHARACTERS,
    SFN_QUOTAS,
    TEMPLATE_BYTES,
    Reading,
    TemplateView,
    iam_characters,
    model_max,
    quota,
)

_SPLIT_POLICIES = (
    "split the jobs (or resources) that share this role over more roles or stacks, or move "
    "statements into customer managed policies attached to the role (6,144 characters each); "
    "this quota cannot be raised"
)


def _role_keys(view: TemplateView, roles: Any) -> list[tuple[str, str]]:
    """The roles a policy attaches to: ("role", logical id) or ("external", name)."""
    named = view.named_roles
    items = roles if isinstance(roles, list) else [roles]
    keys = []
    for item in items:
        if (
            isinstance(item, dict)
            and isinstance(item.get("Ref"), str)
            and (view.resources.get(item["Ref"]) or {}).get("Type") == "AWS::IAM::Role"
        ):
            keys.append(("role", item["Ref"]))
            continue
        name = view.worst.exact(item)
        if name is not None and name in named:
            keys.append(("role", named[name]))
        else:
            keys.append(("external", name or json.dumps(item, sort_keys=True)))
    return keys


@dataclass
class _Contribution:
    policy: str
    logical_id: str
    characters: int
    estimated: bool


def _inline_contributions(view: TemplateView) -> dict[tuple[str, str], list[_Contribution]]:
    found: dict[tuple[str, str], list[_Contribution]] = {}

    def size(policy: Any) -> tuple[str, int, bool] | None:
        """A policy (``PolicyName``, ``PolicyDocument``): its name and IAM characters, and whether
        they are estimated; its intrinsics resolved in one walk."""
        resolved, estimated = view.sized(view.worst.value, policy)
        if not isinstance(resolved, dict):
            return None
        name = view.worst.text(resolved.get("PolicyName", ""))
        text = view.policy_json(resolved.get("PolicyDocument", {}), resolved=True)
        return name, iam_characters(name) + iam_characters(text), estimated

    for logical_id, properties in view.of_type("AWS::IAM::Role"):
        raw = properties.get("Policies") or []
        # A literal list is sized item by item (each walked once); a list built by an
        # intrinsic (Fn::If) is resolved first.
        policies = raw if isinstance(raw, list) else view.worst.value(raw)
        for policy in policies if isinstance(policies, list) else []:
            sized = size(policy)
            if sized is not None:
                name, characters, estimated = sized
                found.setdefault(("role", logical_id), []).append(
                    _Contribution(name, logical_id, characters, estimated)
                )
    for resource_type, roles_property in (
        ("AWS::IAM::Policy", "Roles"),
        ("AWS::IAM::RolePolicy", "RoleName"),
    ):
        for logical_id, properties in view.of_type(resource_type):
            if roles_property not in properties:
                continue
            policy = {
                "PolicyName": properties.get("PolicyName", ""),
                "PolicyDocument": properties.get("PolicyDocument", {}),
            }
            sized = size(policy)
            if sized is None:
                continue
            name, characters, estimated = sized
            for key in _role_keys(view, properties[roles_property]):
                found.setdefault(key, []).append(
                    _Contribution(name, logical_id, characters, estimated)
                )
    return found


@quota(
    "DEPLOY-ROLE-INLINE-POLICIES",
    limit=f"{ROLE_INLINE_POLICY_CHARACTERS:,} non-whitespace characters per role",
    source=(
        f"{IAM_QUOTAS}: 'Role policy size cannot exceed 10,240 characters' for the aggregate "
        "of all inline policies, and 'IAM doesn't count white space'. IAM's error: 'Maximum "
        "policy size of 10240 bytes exceeded for role'."
    ),
    fix=_SPLIT_POLICIES,
)
def role_inline_policies(view: TemplateView) -> Iterator[Reading]:
    """The inline policies of each role add up to at most 10,240 characters.

    Counted per role: the role's own ``Policies`` plus every ``AWS::IAM::Policy`` that names it
    in ``Roles`` and every ``AWS::IAM::RolePolicy`` on it, each as compact JSON without white
    space, numbers and booleans counted as quoted strings, policy names included (IAM does not
    say they are excluded). A role defined elsewhere counts only this template's policies.
    """
    for key, contributions in _inline_contributions(view).items():
        kind, name = key
        total = sum(c.characters for c in contributions)
        largest = sorted(contributions, key=lambda c: -c.characters)
        parts = "; ".join(f"{c.policy} {c.characters:,}" for c in largest[:4])
        more = f"; and {len(largest) - 4} more" if len(largest) > 4 else ""
        if kind == "role":
            subject, logical_id, location = f"role {name}", name, "Properties/Policies"
            where = f"The inline policies of role {name}"
        else:
            subject, logical_id = f"role {name} (outside this template)", largest[0].logical_id
            location = "Properties/Roles"
            where = f"This template's inline policies on role {name} (defined elsewhere)"
        yield Reading(
            subject,
            logical_id,
            location,
            total,
            ROLE_INLINE_POLICY_CHARACTERS,
            "non-whitespace characters",
            f"{where} add up to more than IAM allows for one role ({parts}{more}).",
            any(c.estimated for c in contributions),
        )


@quota(
    "DEPLOY-MANAGED-POLICY-SIZE",
    limit=f"{MANAGED_POLICY_CHARACTERS:,} non-whitespace characters per managed policy",
    source=(
        f"{IAM_QUOTAS}: 'The size of each managed policy cannot exceed 6,144 characters'; "
        "white space is not counted."
    ),
    fix="split the statements over several managed policies; this quota cannot be raised",
)
def managed_policy_size(view: TemplateView) -> Iterator[Reading]:
    """Each customer managed policy is at most 6,144 characters.

    The ``PolicyDocument`` of each ``AWS::IAM::ManagedPolicy``, counted as for inline policies.
    """
    for logical_id, properties in view.of_type("AWS::IAM::ManagedPolicy"):
        document = properties.get("PolicyDocument", {})
        text, estimated = view.sized(view.policy_json, document)
        yield Reading(
            f"managed policy {logical_id}",
            logical_id,
            "Properties/PolicyDocument",
            iam_characters(text),
            MANAGED_POLICY_CHARACTERS,
            "non-whitespace characters",
            f"Managed policy {logical_id} is larger than IAM allows for one managed policy.",
            estimated,
        )


@quota(
    "DEPLOY-ROLE-MANAGED-POLICIES",
    limit=f"{MANAGED_POLICIES_PER_ROLE} managed policies per role (adjustable)",
    source=(
        f"{IAM_QUOTAS}: 'Managed policies attached to an IAM role', 10 by default, adjustable "
        "in Service Quotas (IAM's GetAccountSummary reports it as AttachedPoliciesPerRoleQuota)."
    ),
    fix=(
        "merge policies, or request an increase of 'Managed policies per role' in Service "
        "Quotas and pass the new figure (enable_deployability_checks(..., "
        "managed_policies_per_role=N))"
    ),
)
def role_managed_policies(view: TemplateView) -> Iterator[Reading]:
    """Each role has at most 10 managed policies attached (the default quota).

    Counted per role of the template: its ``ManagedPolicyArns`` plus every
    ``AWS::IAM::ManagedPolicy`` that names it in ``Roles``, each policy once.
    """
    attached: dict[str, set[str]] = {}
    for logical_id, properties in view.of_type("AWS::IAM::Role"):
        arns = properties.get("ManagedPolicyArns") or []
        items = arns if isinstance(arns, list) else view.worst.items(arns)
        attached[logical_id] = {_policy_key(item) for item in items}
    for logical_id, properties in view.of_type("AWS::IAM::ManagedPolicy"):
        for kind, role in _role_keys(view, properties.get("Roles") or []):
            if kind == "role":
                attached.setdefault(role, set()).add(f"ref:{logical_id}")
    for role, policies in attached.items():
        if not policies:
            continue
        yield Reading(
            f"role {role}",
            role,
            "Properties/ManagedPolicyArns",
            len(policies),
            view.limits.managed_policies_per_role,
            "managed policies",
            f"Role {role} has more managed policies attached than IAM allows.",
        )


def _policy_key(item: Any) -> str:
    if isinstance(item, dict) and isinstance(item.get("Ref"), str):
        return f"ref:{item['Ref']}"
    return json.dumps(item, sort_keys=True)


@quota(
    "DEPLOY-STACK-RESOURCES",
    limit=f"{RESOURCES_PER_STACK} resources per stack",
    source=(
        f"{CFN_QUOTAS}: 'Resources: Maximum number of resources that you can declare in your "
        "CloudFormation template: 500 resources'."
    ),
    fix=(
        "split the stack into several stacks (e.g. one per group of jobs) or nested stacks; "
        "this quota cannot be raised"
    ),
)
def stack_resources(view: TemplateView) -> Iterator[Reading]:
    """A stack declares at most 500 resources.

    Every entry of ``Resources`` counts, CDK's ``AWS::CDK::Metadata`` included. In a CDK app,
    the stack's own check (``TooManyResourcesInStack``) stops the synth first, unless the app
    sets the ``@aws-cdk/core:stackResourceLimit`` context; this one covers such apps and
    templates measured after the synth.
    """
    yield Reading(
        "the stack",
        None,
        "Resources",
        len(view.resources),
        RESOURCES_PER_STACK,
        "resources",
        "The stack declares more resources than CloudFormation allows in one stack.",
    )


@quota(
    "DEPLOY-TEMPLATE-SIZE",
    limit=f"{TEMPLATE_BYTES:,} bytes per template (uploaded through S3)",
    source=(
        f"{CFN_QUOTAS}: 'Template body size in an Amazon S3 object: 1 MB'; CloudFormation "
        "refuses larger ones with 'Template may not exceed 1000000 bytes in size' (cfn-lint's "
        "E1002 and aws-cdk-lib's template-size warning use the same 1,000,000). The "
        "51,200-byte limit of a template passed in the request does not apply: the CDK CLI "
        "uploads templates through the bootstrap bucket."
    ),
    fix=("split the stack into several stacks or nested stacks; this quota cannot be raised"),
)
def template_size(view: TemplateView) -> Iterator[Reading]:
    """A template is at most 1,000,000 bytes.

    The template file as written to the cloud assembly (and uploaded), or, without a file,
    the template serialized as CDK writes it (JSON, one-space indents).
    """
    size = view.stack.size_bytes
    if size is None:
        size = len(json.dumps(view.template, indent=1, ensure_ascii=False).encode())
    yield Reading(
        "the template",
        None,
        "Template",
        size,
        TEMPLATE_BYTES,
        "bytes",
        "The template is larger than CloudFormation accepts.",
    )


@quota(
    "DEPLOY-STATE-MACHINE-DEFINITION-SIZE",
    limit="1,048,576 bytes per state machine definition",
    source=(
        f"{SFN_QUOTAS}: 'Maximum size of state machine definition: 1 MB' (hard quota); "
        "botocore's stepfunctions model: CreateStateMachine definition max 1048576."
    ),
    fix=(
        "shorten the definition (move large request payloads out of it, e.g. into the "
        "execution input or S3) or split it into several state machines; this quota cannot be "
        "raised"
    ),
)
def state_machine_definition(view: TemplateView) -> Iterator[Reading]:
    """A state machine definition is at most 1 MB.

    ``DefinitionString`` (a literal, ``Fn::Join`` or ``Fn::Sub``) or ``Definition`` (compact
    JSON), with ``DefinitionSubstitutions`` applied, in UTF-8 bytes. A definition in S3
    (``DefinitionS3Location``) is not in the template and is not measured.
    """
    for logical_id, properties in view.of_type("AWS::StepFunctions::StateMachine"):
        found = view.definition(logical_id, properties)
        if found is None:
            continue
        text, estimated = found
        yield Reading(
            f"state machine {logical_id}",
            logical_id,
            "Properties/DefinitionString",
            len(text.encode()),
            model_max("stepfunctions", "CreateStateMachine", "definition"),
            "bytes",
            f"The definition of state machine {logical_id} is larger than Step Functions accepts.",
            estimated,
        )


@quota(
    "DEPLOY-EVENT-PATTERN-SIZE",
    limit=f"{EVENT_PATTERN_CHARACTERS:,} characters per event pattern (adjustable to 4,096)",
    source=(
        f"{EVENTS_QUOTAS}: 'Event pattern size: 2,048, adjustable: maximum size of an event "
        "pattern, in characters'; botocore's events model caps PutRule EventPattern at 4096."
    ),
    fix=(
        "split the rule into several rules with smaller patterns (e.g. one per group of jobs, "
        "or match on a shared prefix instead of listing every name), or request an increase of "
        "'Event pattern size' (up to 4,096) and pass it (enable_deployability_checks(..., "
        "event_pattern_limit=N))"
    ),
)
def event_pattern(view: TemplateView) -> Iterator[Reading]:
    """An EventBridge rule's event pattern is at most 2,048 characters (the default quota).

    The ``EventPattern`` of each ``AWS::Events::Rule``: a pattern given as a string as it is,
    one given as an object as compact JSON (CloudFormation serializes it; that it adds no
    white space is an assumption, not documented).
    """
    for logical_id, properties in view.of_type("AWS::Events::Rule"):
        if "EventPattern" not in properties:
            continue
        pattern = properties["EventPattern"]
        if isinstance(pattern, str) or is_intrinsic(pattern):
            text, estimated = view.sized(view.worst.text, pattern)
        else:
            text, estimated = view.sized(view.compact_json, pattern)
        yield Reading(
            f"event rule {logical_id}",
            logical_id,
            "Properties/EventPattern",
            len(text),
            view.limits.event_pattern_size,
            "characters",
            f"The event pattern of rule {logical_id} is larger than EventBridge accepts.",
            estimated,
        )


@quota(
    "DEPLOY-LAMBDA-ENVIRONMENT-SIZE",
    limit=f"{LAMBDA_ENVIRONMENT_BYTES:,} bytes of environment variables per function",
    source=(
        f"{LAMBDA_QUOTAS}: 'Function environment variables: 4 KB, for all environment "
        "variables associated with the function, in aggregate' (hard quota)."
    ),
    fix=(
        "move large values out of the environment (SSM Parameter Store, Secrets Manager, S3 or "
        "the code package) and pass their names instead; this quota cannot be raised"
    ),
)
def lambda_environment(view: TemplateView) -> Iterator[Reading]:
    """A Lambda function's environment variables total at most 4 KB.

    ``Environment.Variables`` as compact JSON in UTF-8 bytes: the keys and values with their
    quotes and separators, so never less than the keys and values alone (Lambda does not
    document which of the two it measures).
    """
    for logical_id, properties in view.of_type("AWS::Lambda::Function"):
        variables = (properties.get("Environment") or {}).get("Variables")
        if not variables:
            continue
        text, estimated = view.sized(view.compact_json, variables)
        yield Reading(
            f"function {logical_id}",
            logical_id,
            "Properties/Environment/Variables",
            len(text.encode()),
            LAMBDA_ENVIRONMENT_BYTES,
            "bytes",
            f"The environment variables of function {logical_id} are larger than Lambda accepts.",
            estimated,
        )


__all__ = [
    "event_pattern",
    "lambda_environment",
    "managed_policy_size",
    "role_inline_policies",
    "role_managed_policies",
    "stack_resources",
    "state_machine_definition",
    "template_size",
]
