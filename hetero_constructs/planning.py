"""Planning, the one entry point of the pure-Python layers: every rule, then the request.

``plan(spec, deployment)`` runs every rule on the spec and each of its fallback variants and
returns the CreateTrainingJob request only when none is broken (``Plan.request_or_raise``
raises ``SpecValidationError`` with every violation); ``validate`` returns the violations alone.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hetero_constructs.checks.registry import run_rules
from hetero_constructs.request.builder import request_of
from hetero_constructs.request.context import Deployment, RuleContext, TokenPredicate, never_a_token
from hetero_constructs.spec import variants
from hetero_constructs.spec.distribution import SmddpCollective
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import SpecValidationError, Violation


@dataclass(frozen=True)
class Plan:
    """Either the CreateTrainingJob request (no violations) or every violation."""

    request: dict[str, Any] | None
    violations: tuple[Violation, ...]
    context: RuleContext
    #: Warnings the spec acknowledges, each with its reason: they do not stop the request.
    acknowledged: tuple[tuple[Violation, str], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def smddp_collective(self) -> SmddpCollective | None:
        """The SMDDP collective in effect: the one chosen, or the launcher's default (seed 000).

        ``torch_distributed`` activates AllGather, ``pytorchddp`` and ``smdistributed`` AllReduce;
        other launchers use none.
        """
        return self.context.effective_collective

    def request_or_raise(self, *, scope: str | None = None) -> dict[str, Any]:
        """The request, or ``SpecValidationError`` with every violation (``scope``: where, in
        its message)."""
        if self.request is None:
            raise SpecValidationError(self.violations, scope=scope)
        return self.request


def plan(
    spec: TrainingSpec,
    deployment: Deployment | None = None,
    *,
    is_token: TokenPredicate = never_a_token,
    variant: int | None = None,
) -> Plan:
    """Run every rule; return the request only when none is broken.

    Without ``variant``, the request is the declared spec's and every fallback variant is
    validated too (their violations name the fallback). With ``variant``, that variant's
    request, validated alone (a run moving to a fallback after a capacity failure).
    """
    return _plan(spec, deployment, is_token, variant, deployment_pending=False)


def _plan(
    spec: TrainingSpec,
    deployment: Deployment | None,
    is_token: TokenPredicate,
    variant: int | None,
    *,
    deployment_pending: bool,
) -> Plan:
    count = variants.variant_count(spec)
    # Without fallbacks every variant is the declared spec.
    chosen = spec if count == 1 else variants.variant(spec, variant or 0).spec
    context = RuleContext(chosen, deployment, is_token, deployment_pending=deployment_pending)
    found = _violations(context)
    if variant is None and count > 1:
        _add_fallback_violations(found, spec, count, context)
    reasons = spec.acknowledgments
    if reasons:
        acknowledged = tuple(
            (v, reasons[v.rule]) for v in found if v.severity == "warning" and v.rule in reasons
        )
        violations = tuple(v for v in found if v.severity != "warning" or v.rule not in reasons)
    else:
        acknowledged, violations = (), tuple(found)
    # validate() alone leaves the deployment's facts open: it wants no request.
    request = None if violations or deployment_pending else request_of(context)
    return Plan(request, violations, context, acknowledged)


def _violations(context: RuleContext) -> list[Violation]:
    """Every rule's violations; where the spec leaves its launcher (several are enabled) or its
    distribution group open, also those of each reading it could mean, so that settling it
    brings no new violation. A finding only some readings have says which."""
    found = run_rules(context)
    readings = _readings(context)
    if not readings:
        return found
    seen = {(v.rule, v.path, v.problem) for v in found}
    # (rule, path, problem) -> the violation and the readings that have it
    more: dict[tuple[str, str, str], tuple[Violation, list[str]]] = {}
    for label, reading in readings:
        for violation in run_rules(reading):
            key = (violation.rule, violation.path, violation.problem)
            if key not in seen:
                more.setdefault(key, (violation, []))[1].append(label)
    for violation, labels in more.values():
        if len(labels) < len(readings):
            violation = dataclasses.replace(
                violation, problem=f"With {' or '.join(labels)}: {violation.problem}"
            )
        found.append(violation)
    return found


def _readings(context: RuleContext) -> list[tuple[str, RuleContext]]:
    """Each launcher and distribution group the spec could mean, labelled; none when both are
    settled."""
    launchers = context.launchers if len(context.launchers) > 1 else ()
    groups = context.distribution_group_candidates
    if not launchers and not groups:
        return []
    readings = []
    for launcher in launchers or (None,):
        for group in groups or (None,):
            parts = []
            if launcher is not None:
                parts.append(f"{launcher.kind.value} as the launcher")
            if group is not None:
                parts.append(f"'{group.name}' as the distribution group")
            readings.append((" and ".join(parts), context.reading(launcher=launcher, group=group)))
    return readings


def _add_fallback_violations(
    found: list[Violation], spec: TrainingSpec, count: int, context: RuleContext
) -> None:
    """Add the violations of fallback variants 1 to ``count - 1`` not already ``found``."""
    seen = {(v.rule, v.path, v.problem) for v in found}
    for index in range(1, count):
        other = variants.variant(spec, index)
        other_context = RuleContext(
            other.spec,
            context.deployment,
            context.is_token,
            deployment_pending=context.deployment_pending,
        )
        for violation in _violations(other_context):
            named = variants.name_the_fallback(violation, other)
            key = (named.rule, named.path, named.problem)
            if (violation.rule, violation.path, violation.problem) in seen or key in seen:
                continue
            seen.add(key)
            found.append(named)


def validate(
    spec: TrainingSpec,
    deployment: Deployment | None = None,
    *,
    is_token: TokenPredicate = never_a_token,
) -> list[Violation]:
    """Every violation of the spec (empty when it is valid).

    Without ``deployment``, the spec alone is judged: what a deployment supplies (the region,
    the execution role) is not reported missing, as a construct would supply it; a value the
    spec gives is still checked.
    """
    pending = deployment is None
    return list(_plan(spec, deployment, is_token, None, deployment_pending=pending).violations)


__all__ = [
    "Plan",
    "plan",
    "validate",
]
