"""Deployability: the AWS quotas a synthesized CloudFormation template must fit (no CDK import).

CloudFormation accepts a template that IAM, Step Functions, EventBridge or Lambda then refuse
halfway through the deploy. Each quota is a small function, registered with ``@quota`` (id,
title, the AWS source of its limit, the fix), that measures one template and yields one
``Reading`` per thing it sizes, within the limit or not. Values CloudFormation resolves at
deploy time are sized worst-case (``worst_case``). This module holds the mechanism: the limits,
the template as the quotas read it (``TemplateView``), and the registry; the quotas themselves
are in ``size_quotas`` and ``name_quotas``, and ``catalogue`` runs them all.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import botocore.model

from hetero_constructs.deployability.deploy_time import KnownValues, botocore_loader
from hetero_constructs.deployability.worst_case import WorstCase
from hetero_constructs.spec.rule_registry import DEPLOYABILITY, register_rule
from hetero_constructs.spec.violations import Violation

_T = TypeVar("_T")

# -- limits -------------------------------------------------------------------------------------

IAM_QUOTAS = (
    "IAM User Guide, 'IAM and AWS STS quotas' "
    "(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html)"
)
CFN_QUOTAS = (
    "CloudFormation User Guide, 'Understand CloudFormation quotas' "
    "(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html)"
)
EVENTS_QUOTAS = (
    "EventBridge User Guide, 'Amazon EventBridge quotas' "
    "(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html)"
)
LAMBDA_QUOTAS = (
    "Lambda Developer Guide, 'Lambda quotas' "
    "(https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)"
)
SFN_QUOTAS = (
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


# Every quota, as its module registers it (``catalogue.QUOTAS`` is the catalogue's order).
REGISTERED: list[Quota] = []


def quota(
    quota_id: str, *, limit: str, source: str, fix: str
) -> Callable[[MeasureFunction], Quota]:
    """Register a measure function as a quota; its docstring is the title and details."""

    def register(measure: MeasureFunction) -> Quota:
        doc = inspect.cleandoc(measure.__doc__ or "")
        title, _, details = doc.partition("\n")
        registered = Quota(quota_id, title.strip(), details.strip(), limit, source, fix, measure)
        REGISTERED.append(registered)
        register_rule(
            quota_id,
            group=DEPLOYABILITY,
            title=registered.title,
            details=f"{registered.details} Limit: {limit}.".lstrip(),
            source=source,
            examples=(fix,),
        )
        return registered

    return register


# -- IAM -----------------------------------------------------------------------------------------


# -- CloudFormation ------------------------------------------------------------------------------


# -- Step Functions, EventBridge, Lambda ---------------------------------------------------------


# -- names ---------------------------------------------------------------------------------------


# -- entry points --------------------------------------------------------------------------------


# -- the generated catalogue ---------------------------------------------------------------------


__all__ = [
    "CFN_QUOTAS",
    "EVENTS_QUOTAS",
    "EVENT_PATTERN_CHARACTERS",
    "IAM_QUOTAS",
    "LAMBDA_ENVIRONMENT_BYTES",
    "LAMBDA_QUOTAS",
    "MANAGED_POLICIES_PER_ROLE",
    "MANAGED_POLICY_CHARACTERS",
    "REGISTERED",
    "RESOURCES_PER_STACK",
    "ROLE_INLINE_POLICY_CHARACTERS",
    "SFN_QUOTAS",
    "TEMPLATE_BYTES",
    "Limits",
    "MeasureFunction",
    "Measurement",
    "Quota",
    "Reading",
    "StackTemplate",
    "TemplateView",
    "documented_max",
    "iam_characters",
    "model_max",
    "quota",
]
