"""Every synth-time rule, one small function each, grouped by topic.

- ``launchers``: which launcher runs where, on which framework, version and instance type
- ``collectives``: SMDDP AllReduce / AllGather
- ``cluster``: heterogeneous-cluster groups, the distribution group, channel scoping
- ``framework``: container image and training code
- ``api``: the CreateTrainingJob API's own limits, from botocore's model
- ``values``: what the model's patterns let through: S3 bucket names, 32-bit integers
- ``runs``: what a training run adds to the request (its marker tags)
"""

from __future__ import annotations

from hetero_constructs.core.context import RuleContext
from hetero_constructs.core.rules import (
    api,
    cluster,
    collectives,
    framework,
    launchers,
    runs,
    values,
)
from hetero_constructs.core.rules.base import REGISTRY, Finding, Rule, rule
from hetero_constructs.core.violations import Violation

TOPICS = (launchers, collectives, cluster, framework, api, values, runs)
_TOPIC_ORDER = {topic.__name__.rsplit(".", 1)[-1]: index for index, topic in enumerate(TOPICS)}
RULES: tuple[Rule, ...] = tuple(sorted(REGISTRY, key=lambda r: _TOPIC_ORDER[r.topic]))
_REGULAR = tuple(r for r in RULES if not r.backstop)
_BACKSTOPS = tuple(r for r in RULES if r.backstop)


def run_rules(context: RuleContext) -> list[Violation]:
    """Every violation of every rule, in catalogue order; backstops only if nothing else fired."""
    violations: list[Violation] = []
    for registered in _REGULAR:
        for finding in registered.check(context):
            violations.append(registered.violation(finding))
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
