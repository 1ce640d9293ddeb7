"""Deployability: the AWS quotas a synthesized CloudFormation template must fit (no CDK import).

CloudFormation accepts a template that IAM, Step Functions, EventBridge or Lambda then refuse
halfway through the deploy. Each quota here is a small function, registered with ``@quota``
(id, title, the AWS source of its limit, the fix), that measures one template and yields one
``Measurement`` per thing it sizes, within the limit or not. Values CloudFormation resolves at
deploy time are sized worst-case (``hetero_constructs.deployability.worst_case``).

``measure_template`` returns every measurement (the benchmark reads the headroom from them);
``check_template`` only those over their limit. ``docs/deployability.md`` is generated from
the registry: ``python -m hetero_constructs.deployability.quota > docs/deployability.md``.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import botocore.model

from hetero_constructs.deployability.worst_case import (
    KnownValues,
    WorstCase,
    botocore_loader,
    is_intrinsic,
)
from hetero_constructs.service import model as service_model
from hetero_constructs.spec.violations import Violation

_T = TypeVar("_T")

# -- limits -------------------------------------------------------------------------------------

_IAM_QUOTAS = (
    "IAM User Guide, 'IAM and AWS STS quotas' "
    "(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html)"
)
_CFN_QUOTAS = (
    "CloudFormation User Guide, 'Understand CloudFormation quotas' "
    "(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html)"
)
_EVENTS_QUOTAS = (
    "EventBridge User Guide, 'Amazon EventBridge quotas' "
    "(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html)"
)
_LAMBDA_QUOTAS = (
    "Lambda Developer Guide, 'Lambda quotas' "
    "(https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)"
)
_SFN_QUOTAS = (
    "Step Functions Developer Guide, 'Step Functions service quotas' "
    "(https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html)"
)

ROLE_INLINE_POLICY_CHARACTERS = 10_240
MANAGED_POLICY_CHARACTERS = 6_144
MANAGED_POLICIES_PER_ROLE = 10
RESOURCES_PER_STACK = 500
# "1 MB" in the quota table; CloudFormation's own error says "Template may not exceed
# 1000000 bytes in size", and cfn-lint checks the same 1,000,000 bytes.
TEMPLATE_BYTES = 1_000_000
EVENT_PATTERN_CHARACTERS = 2_048
LAMBDA_ENVIRONMENT_BYTES = 4 * 1024


@functools.cache
def _service_model(service: str) -> botocore.model.ServiceModel:
    """One service's model, loaded on first use."""
    return botocore.model.ServiceModel(
        botocore_loader().load_service_model(service, "service-2"), service
    )


@functools.cache
def _model_member(service: str, operation: str, member: str) -> Any:
    """A member of an operation's input shape."""
    return _service_model(service).operation_model(operation).input_shape.members[member]


def model_max(service: str, operation: str, member: str) -> int:
    """A member's maximum length in botocore's service model."""
    return int(_model_member(service, operation, member).metadata["max"])


def documented_max(service: str, operation: str, member: str, sentence: str) -> int:
    """A limit the model states only in a member's documentation (``sentence`` has ``(\\d+)``)."""
    documentation = _model_member(service, operation, member).documentation or ""
    found = re.search(sentence, re.sub(r"<[^>]+>", "", documentation))
    if found is None:  # the model moved on; fail loudly rather than check a stale number
        raise LookupError(f"{service} {operation}.{member}: no limit matching {sentence!r}")
    return int(found.group(1))


@dataclass(frozen=True)
class Limits:
    """The adjustable quotas: their defaults, or what a quota increase granted the account."""

    event_pattern_size: int = EVENT_PATTERN_CHARACTERS
    managed_policies_per_role: int = MANAGED_POLICIES_PER_ROLE

    def __post_init__(self) -> None:
        size = self.event_pattern_size
        # Up to the default quota no model is needed; above it the API's maximum bounds it.
        if size <= 0 or (
            size > EVENT_PATTERN_CHARACTERS
            and size > model_max("events", "PutRule", "EventPattern")
        ):
            highest = model_max("events", "PutRule", "EventPattern")
            raise ValueError(
                f"event_pattern_size {self.event_pattern_size} is not an EventBridge limit. "
                f"Allowed: 1 to {highest} characters (the PutRule API's maximum; the default "
                f"quota is {EVENT_PATTERN_CHARACTERS}). Fix: pass the 'Event pattern size' "
                "quota of your account (Service Quotas console)."
            )
        if self.managed_policies_per_role < 1:
            raise ValueError(
                f"managed_policies_per_role {self.managed_policies_per_role} is not an IAM "
                f"limit. Allowed: 1 or more (default {MANAGED_POLICIES_PER_ROLE}). Fix: pass the "
                "'Managed policies per role' quota of your account (Service Quotas console)."
            )


# -- inputs and outputs --------------------------------------------------------------------------


@dataclass(frozen=True)
class StackTemplate:
    """One synthesized stack: its template, where it is, and what is known about its deploy.

    ``size_bytes`` is the template file's size as it will be uploaded (default: the template
    serialized as CDK writes it, JSON with one-space indents); ``known`` holds the account,
    region and stack name if they are known (everything else is sized worst-case).
    """

    template: Mapping[str, Any]
    path: str = ""
    size_bytes: int | None = None
    known: KnownValues = field(default_factory=KnownValues)


@dataclass(frozen=True)
class Measurement:
    """One size or count against one quota, e.g. a role's inline policies against 10,240."""

    quota: str
    subject: str
    logical_id: str | None
    construct_path: str
    location: str
    measured: int
    limit: int
    unit: str
    problem: str
    fix: str
    estimated: bool = False

    @property
    def exceeded(self) -> bool:
        return self.measured > self.limit

    @property
    def utilization(self) -> float:
        return self.measured / self.limit

    def violation(self) -> Violation:
        """The measurement as the library's violation: rule id, path, value, allowed, fix."""
        estimate = (
            " (Unresolved references are sized worst-case, see docs/deployability.md.)"
            if self.estimated
            else ""
        )
        return Violation(
            rule=self.quota,
            path=self.construct_path,
            problem=self.problem + estimate,
            value=self.measured,
            allowed=f"at most {self.limit:,} {self.unit}",
            fix=self.fix,
        )


@dataclass(frozen=True)
class Reading:
    """What a quota function measured; the registry adds the id, path and fix."""

    subject: str
    logical_id: str | None
    location: str
    measured: int
    limit: int
    unit: str
    problem: str
    estimated: bool = False


# -- the template as the quota functions see it -------------------------------------------------


class TemplateView:
    """One template with its worst-case estimator, resources by type and construct paths."""

    def __init__(self, stack: StackTemplate, limits: Limits) -> None:
        self.stack = stack
        self.limits = limits
        self.template = stack.template
        self.resources: Mapping[str, Any] = stack.template.get("Resources") or {}
        self.worst = WorstCase(stack.template, stack.known)
        self._definitions: dict[str, tuple[str, bool]] = {}

    def of_type(self, resource_type: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """The resources of one type, with their properties."""
        for logical_id, resource in self.resources.items():
            if isinstance(resource, dict) and resource.get("Type") == resource_type:
                properties = resource.get("Properties")
                yield logical_id, properties if isinstance(properties, dict) else {}

    @functools.cached_property
    def named_roles(self) -> dict[str, str]:
        """Role name -> logical id, for the roles whose name is known at synth."""
        named = {}
        for logical_id, properties in self.of_type("AWS::IAM::Role"):
            if "RoleName" in properties:
                name = self.worst.exact(properties["RoleName"])
                if name is not None:
                    named[name] = logical_id
        return named

    def construct_path(self, logical_id: str | None) -> str:
        if logical_id is None:
            return self.stack.path
        resource = self.resources.get(logical_id) or {}
        path = (resource.get("Metadata") or {}).get("aws:cdk:path")
        if isinstance(path, str):
            return path
        return f"{self.stack.path}/{logical_id}" if self.stack.path else logical_id

    def sized(self, compute: Callable[..., _T], *arguments: Any) -> tuple[_T, bool]:
        """``compute(*arguments)`` and whether it used a worst-case estimate or a guess."""
        before = (self.worst.estimates, self.worst.guesses)
        result = compute(*arguments)
        return result, (self.worst.estimates, self.worst.guesses) != before

    def compact_json(self, node: Any) -> str:
        """The node with worst-case values, as compact JSON."""
        return json.dumps(self.worst.value(node), separators=(",", ":"), ensure_ascii=False)

    def policy_json(self, document: Any, *, resolved: bool = False) -> str:
        """A policy document as IAM sizes it: compact, numbers and booleans as strings.

        Quoted scalars are never shorter than however CloudFormation sends them. ``resolved``:
        the document already holds worst-case values only.
        """
        value = _stringify_scalars(document if resolved else self.worst.value(document))
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    def _texts(self, values: Mapping[str, Any]) -> dict[str, str]:
        return {key: self.worst.text(value) for key, value in values.items()}

    def definition(self, logical_id: str, properties: Mapping[str, Any]) -> tuple[str, bool] | None:
        """A state machine's definition as deployed, and whether it is estimated."""
        if logical_id not in self._definitions:
            if "DefinitionString" in properties:
                text, estimated = self.sized(self.worst.text, properties["DefinitionString"])
            elif "Definition" in properties:
                text, estimated = self.sized(self.compact_json, properties["Definition"])
            else:
                return None  # DefinitionS3Location: the object is not in the template
            substitutions = properties.get("DefinitionSubstitutions") or {}
            if substitutions:
                values, more = self.sized(self._texts, substitutions)
                text = re.sub(r"\$\{([^}]+)\}", lambda m: values.get(m.group(1), m.group(0)), text)
                estimated = estimated or more
            self._definitions[logical_id] = (text, estimated)
        return self._definitions[logical_id]


def _stringify_scalars(value: Any) -> Any:
    """Numbers and booleans as strings: never shorter than CloudFormation may send them."""
    if isinstance(value, dict):
        return {key: _stringify_scalars(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_stringify_scalars(item) for item in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def iam_characters(text: str) -> int:
    """What IAM counts against its policy-size quotas: characters other than white space."""
    return len(text) - sum(text.count(space) for space in " \t\n\r")


# -- the registry --------------------------------------------------------------------------------

MeasureFunction = Callable[[TemplateView], Iterable[Reading]]


@dataclass(frozen=True)
class Quota:
    """A registered quota: id, doc, limit, source and fix, and the function that measures it."""

    id: str
    title: str
    details: str
    limit: str
    source: str
    fix: str
    measure: MeasureFunction

    def run(self, view: TemplateView) -> Iterator[Measurement]:
        for reading in self.measure(view):
            yield Measurement(
                quota=self.id,
                subject=reading.subject,
                logical_id=reading.logical_id,
                construct_path=view.construct_path(reading.logical_id),
                location=reading.location,
                measured=reading.measured,
                limit=reading.limit,
                unit=reading.unit,
                problem=reading.problem,
                fix=self.fix,
                estimated=reading.estimated,
            )


QUOTAS: list[Quota] = []


def quota(
    quota_id: str, *, limit: str, source: str, fix: str
) -> Callable[[MeasureFunction], Quota]:
    """Register a measure function as a quota; its docstring is the title and details."""

    def register(measure: MeasureFunction) -> Quota:
        doc = inspect.cleandoc(measure.__doc__ or "")
        title, _, details = doc.partition("\n")
        if any(existing.id == quota_id for existing in QUOTAS):
            raise RuntimeError(f"duplicate quota id {quota_id}")
        registered = Quota(quota_id, title.strip(), details.strip(), limit, source, fix, measure)
        QUOTAS.append(registered)
        return registered

    return register


# -- IAM -----------------------------------------------------------------------------------------

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
        f"{_IAM_QUOTAS}: 'Role policy size cannot exceed 10,240 characters' for the aggregate "
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
        f"{_IAM_QUOTAS}: 'The size of each managed policy cannot exceed 6,144 characters'; "
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
        f"{_IAM_QUOTAS}: 'Managed policies attached to an IAM role', 10 by default, adjustable "
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


# -- CloudFormation ------------------------------------------------------------------------------


@quota(
    "DEPLOY-STACK-RESOURCES",
    limit=f"{RESOURCES_PER_STACK} resources per stack",
    source=(
        f"{_CFN_QUOTAS}: 'Resources: Maximum number of resources that you can declare in your "
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
        f"{_CFN_QUOTAS}: 'Template body size in an Amazon S3 object: 1 MB'; CloudFormation "
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


# -- Step Functions, EventBridge, Lambda ---------------------------------------------------------


@quota(
    "DEPLOY-STATE-MACHINE-DEFINITION-SIZE",
    limit="1,048,576 bytes per state machine definition",
    source=(
        f"{_SFN_QUOTAS}: 'Maximum size of state machine definition: 1 MB' (hard quota); "
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
        f"{_EVENTS_QUOTAS}: 'Event pattern size: 2,048, adjustable: maximum size of an event "
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
        f"{_LAMBDA_QUOTAS}: 'Function environment variables: 4 KB, for all environment "
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


# -- names ---------------------------------------------------------------------------------------


def _names(
    view: TemplateView,
    resource_type: str,
    name_property: str,
    limit: Callable[[], int],
    what: str,
) -> Iterator[Reading]:
    """The literal (or known-value) names a template gives; generated names always fit."""
    for logical_id, properties in view.of_type(resource_type):
        if name_property not in properties:
            continue
        node = properties[name_property]
        name, estimated = view.sized(view.worst.text, node)
        yield Reading(
            f"{what} {logical_id}",
            logical_id,
            f"Properties/{name_property}",
            len(name),
            limit(),
            "characters",
            f"The {what} of {logical_id} ({name!r}) is longer than the service accepts."
            if not estimated
            else f"The {what} of {logical_id} may be longer than the service accepts.",
            estimated,
        )


_SHORTER_NAME = (
    "give a shorter name, or leave the name out and let CloudFormation generate one that fits"
)
_MODEL = "botocore's {} model: {} max {}"


@quota(
    "DEPLOY-STATE-MACHINE-NAME",
    limit="80 characters",
    source=(
        f"{_SFN_QUOTAS}: names of state machines 'must not exceed 80 characters'; "
        + _MODEL.format("stepfunctions", "CreateStateMachine name", "80")
        + "."
    ),
    fix=_SHORTER_NAME,
)
def state_machine_name(view: TemplateView) -> Iterator[Reading]:
    """A state machine's name is at most 80 characters."""
    yield from _names(
        view,
        "AWS::StepFunctions::StateMachine",
        "StateMachineName",
        lambda: model_max("stepfunctions", "CreateStateMachine", "name"),
        "state machine name",
    )


@quota(
    "DEPLOY-ROLE-NAME",
    limit="64 characters",
    source=(
        f"{_IAM_QUOTAS}: role names up to 64 characters; "
        + _MODEL.format("iam", "CreateRole RoleName", "64")
        + "."
    ),
    fix=_SHORTER_NAME,
)
def role_name(view: TemplateView) -> Iterator[Reading]:
    """An IAM role's name is at most 64 characters."""
    yield from _names(
        view,
        "AWS::IAM::Role",
        "RoleName",
        lambda: model_max("iam", "CreateRole", "RoleName"),
        "role name",
    )


@quota(
    "DEPLOY-ROLE-PATH",
    limit="512 characters",
    source=(
        f"{_IAM_QUOTAS}: paths up to 512 characters; "
        + _MODEL.format("iam", "CreateRole Path", "512")
        + "."
    ),
    fix="use a shorter path",
)
def role_path(view: TemplateView) -> Iterator[Reading]:
    """An IAM role's path is at most 512 characters."""
    yield from _names(
        view, "AWS::IAM::Role", "Path", lambda: model_max("iam", "CreateRole", "Path"), "role path"
    )


@quota(
    "DEPLOY-FUNCTION-NAME",
    limit="64 characters",
    source=(
        "botocore's lambda model, CreateFunction FunctionName: 'If you specify only the "
        "function name, it is limited to 64 characters in length' (the model's max of 140 "
        "applies to a full ARN)."
    ),
    fix=_SHORTER_NAME,
)
def function_name(view: TemplateView) -> Iterator[Reading]:
    """A Lambda function's name is at most 64 characters."""
    yield from _names(
        view,
        "AWS::Lambda::Function",
        "FunctionName",
        lambda: documented_max(
            "lambda",
            "CreateFunction",
            "FunctionName",
            r"only the function name, it is limited to (\d+) characters",
        ),
        "function name",
    )


@quota(
    "DEPLOY-LOG-GROUP-NAME",
    limit="512 characters",
    source=_MODEL.format("logs", "CreateLogGroup logGroupName", "512") + ".",
    fix="use a shorter log group name",
)
def log_group_name(view: TemplateView) -> Iterator[Reading]:
    """A CloudWatch Logs log group's name is at most 512 characters."""
    yield from _names(
        view,
        "AWS::Logs::LogGroup",
        "LogGroupName",
        lambda: model_max("logs", "CreateLogGroup", "logGroupName"),
        "log group name",
    )


_TRAINING_JOB_NAME = re.compile(r'"TrainingJobName"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _literal_fragments(node: Any) -> Iterator[str]:
    """The literal runs of a definition: a string, or a join's literal parts between references."""
    if isinstance(node, str):
        yield node
    elif is_intrinsic(node):
        ((name, argument),) = node.items()
        if name == "Fn::Join" and isinstance(argument, list) and len(argument) == 2:
            separator, parts = argument
            run: list[str] = []
            for part in parts if isinstance(parts, list) else []:
                if isinstance(part, str):
                    run.append(part)
                    continue
                yield str(separator).join(run)
                run = []
            yield str(separator).join(run)
        elif name == "Fn::Sub":
            template = argument[0] if isinstance(argument, list) else argument
            if isinstance(template, str):
                yield template


def _literal_job_names(node: Any) -> Iterator[str]:
    if isinstance(node, dict) and not is_intrinsic(node):
        for key, value in node.items():
            if key == "TrainingJobName" and isinstance(value, str):
                yield value
            else:
                yield from _literal_job_names(value)
    elif isinstance(node, list):
        for item in node:
            yield from _literal_job_names(item)


def _training_job_name_max() -> int:
    """From the core's copy of the SageMaker model (loaded when the jobs were validated)."""
    maximum = service_model.bounds("TrainingJobName").maximum
    if maximum is None:  # the model moved on; fail loudly rather than check nothing
        raise LookupError("sagemaker CreateTrainingJob.TrainingJobName has no maximum")
    return maximum


@quota(
    "DEPLOY-TRAINING-JOB-NAME",
    limit="63 characters",
    source=_MODEL.format("sagemaker", "CreateTrainingJob TrainingJobName", "63") + ".",
    fix="use a shorter training job name (or job name prefix)",
)
def training_job_name(view: TemplateView) -> Iterator[Reading]:
    """A training job name written literally in a state machine definition is at most 63.

    Every ``"TrainingJobName": "..."`` in the literal text of a definition (names a JSONPath
    or JSONata expression builds at run time, or that contain a reference, are not checked).
    """
    for logical_id, properties in view.of_type("AWS::StepFunctions::StateMachine"):
        names: list[str] = []
        if "Definition" in properties:
            names.extend(_literal_job_names(properties["Definition"]))
        for fragment in _literal_fragments(properties.get("DefinitionString")):
            for match in _TRAINING_JOB_NAME.finditer(fragment):
                raw = match.group(1)
                if "${" not in raw:
                    names.append(json.loads(f'"{raw}"'))
        for name in dict.fromkeys(names):
            if name.startswith("{%"):  # JSONata, evaluated at run time
                continue
            yield Reading(
                f"training job name {name!r} in state machine {logical_id}",
                logical_id,
                "Properties/DefinitionString",
                len(name),
                _training_job_name_max(),
                "characters",
                f"The training job name {name!r} in the definition of {logical_id} is longer "
                "than SageMaker accepts.",
            )


# -- entry points --------------------------------------------------------------------------------

DEFAULT_LIMITS = Limits()


def measure_template(stack: StackTemplate, limits: Limits = DEFAULT_LIMITS) -> list[Measurement]:
    """Every measurement of every quota on one template, within its limit or not."""
    view = TemplateView(stack, limits)
    return [measurement for registered in QUOTAS for measurement in registered.run(view)]


def check_template(stack: StackTemplate, limits: Limits = DEFAULT_LIMITS) -> list[Measurement]:
    """The measurements over their limit: what would fail the deploy."""
    return [m for m in measure_template(stack, limits) if m.exceeded]


def quota_by_id(quota_id: str) -> Quota:
    for registered in QUOTAS:
        if registered.id == quota_id:
            return registered
    raise KeyError(quota_id)


# -- the generated catalogue ---------------------------------------------------------------------

_HEADER = """# Deployability checks

Quotas that CloudFormation does not check before it starts a deploy, and that then fail it
halfway. `enable_deployability_checks(scope)` (`hetero_constructs.deployability.plugin`) measures
them on every template of the app at synth and fails the synth with a violation naming the
rule id, the construct path, the measured size and the limit, and the fix;
`python -m hetero_constructs.deployability.quota cdk.out/*.template.json` checks templates already
synthesized. Generated from the code
(`python -m hetero_constructs.deployability.quota > docs/deployability.md`).
"""


def render() -> str:
    """The catalogue: a summary table, each quota's doc and source, and how sizes are estimated."""
    from hetero_constructs.deployability import worst_case

    lines = [_HEADER, "| Id | Checks | Limit |", "| --- | --- | --- |"]
    lines += [f"| `{q.id}` | {q.title} | {q.limit} |" for q in QUOTAS]
    lines.append("")
    for registered in QUOTAS:
        lines.append(f"## `{registered.id}`\n")
        lines.append(f"{registered.title}\n")
        if registered.details:
            lines.append(f"{registered.details}\n")
        lines.append(f"- Limit: {registered.limit}")
        lines.append(f"- Source: {registered.source}")
        lines.append(f"- Fix: {registered.fix}\n")
    lines.append("## Sizing what is resolved at deploy time\n")
    lines.append(inspect.cleandoc(worst_case.__doc__ or "").partition("\n\n")[2] + "\n")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m hetero_constructs.deployability.quota [TEMPLATE.json ...]``.

    Without arguments, print the catalogue; with templates, print each violation and exit 1
    if there is any.
    """
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        sys.stdout.write(render())
        return 0
    failed = False
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        stack = StackTemplate(json.loads(text), path=path, size_bytes=len(text.encode()))
        for measurement in check_template(stack):
            failed = True
            print(f"{path}: {measurement.violation()}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
