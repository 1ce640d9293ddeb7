"""The registry: every synth-time rule in catalogue order, and the run of them on a spec.

The topics (``checks.rules``) in the order the catalogue lists them; within a topic, rules
keep the order they are declared in.
"""

from __future__ import annotations

from hetero_constructs.checks.base import Finding, Rule, checks_registered, rule
from hetero_constructs.checks.rules import (
    acknowledgments,
    api,
    cluster,
    collectives,
    framework,
    launchers,
    runs,
    values,
)
from hetero_constructs.request.context import RuleContext
from hetero_constructs.spec.violations import Violation

TOPICS = (launchers, collectives, cluster, framework, api, values, runs, acknowledgments)
_TOPIC_ORDER = {topic.__name__.rsplit(".", 1)[-1]: index for index, topic in enumerate(TOPICS)}
RULES: tuple[Rule, ...] = tuple(sorted(checks_registered(), key=lambda r: _TOPIC_ORDER[r.topic]))
_REGULAR = tuple(r for r in RULES if not r.backstop)
_BACKSTOPS = tuple(r for r in RULES if r.backstop)
_RULE_TOPICS = {r.id: r.topic for r in RULES}


# Rules that judge one field's own value against the API. When one of them finds a value
# invalid, what other rules say about the same path is a consequence, not a second cause.
_FIELD_TOPICS = frozenset({"api", "values"})


def _regular_rules(features: frozenset[str]) -> tuple[Rule, ...]:
    """The regular rules, without those that need a feature the spec does not use."""
    return tuple(r for r in _REGULAR if not r.needs or r.needs & features)


def run_rules(context: RuleContext) -> list[Violation]:
    """Every violation of every rule, in catalogue order; backstops only if nothing else fired.

    One root cause, one violation: a path whose value fails its own field's rule gets no
    follow-on violations from rules that depend on that value. A rule that needs an optional
    feature the spec does not use (``Rule.needs``) is not run: it would find nothing.
    """
    violations: list[Violation] = []
    invalid_fields: set[str] = set()
    for registered in _regular_rules(context.features):
        for finding in registered.check(context):
            violations.append(registered.violation(finding))
            if registered.topic in _FIELD_TOPICS:
                invalid_fields.add(finding.path)
    if invalid_fields:
        violations = [
            v
            for v in violations
            if v.path not in invalid_fields or _RULE_TOPICS[v.rule] in _FIELD_TOPICS
        ]
    if not violations:
        for registered in _BACKSTOPS:
            for finding in registered.check(context):
                violations.append(registered.violation(finding))
    return violations


def rule_by_id(rule_id: str) -> Rule:
    for registered in RULES:
        if registered.id == rule_id:
            return registered
    raise KeyError(rule_id)


__all__ = ["RULES", "TOPICS", "Finding", "Rule", "rule", "rule_by_id", "run_rules"]
