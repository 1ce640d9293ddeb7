"""The rule mechanism: a rule is a small pure function with an id, a doc and a source.

A check function takes the ``RuleContext`` and yields ``Finding``s; the runner stamps each
finding with the rule's id. The docstring's first line is what the rule checks; the catalogue
in ``docs/rules.md`` is generated from the one rule registry (``spec.rule_registry``), where
``rule`` registers each check as a ``Rule``: the catalogue's entry with its check function.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from hetero_constructs.request.context import FEATURES, RuleContext
from hetero_constructs.spec.rule_registry import SEVERITIES, RuleEntry, register, registered_rules
from hetero_constructs.spec.violations import Violation


class Finding(NamedTuple):
    """What a check found: where, what is wrong, the value, what is allowed, the fix."""

    path: str
    problem: str
    value: Any
    allowed: str
    fix: str


CheckFunction = Callable[[RuleContext], Iterable[Finding]]


@dataclass(frozen=True, kw_only=True)
class Rule(RuleEntry):
    """A synth-time rule: its catalogue entry (its group is its topic) and its check."""

    check: CheckFunction
    backstop: bool = False
    #: Optional features of a spec (``context.FEATURES``) the rule needs, any one of them, to
    #: find something; empty when it can find something in any spec.
    needs: frozenset[str] = frozenset()

    @property
    def topic(self) -> str:
        """The module (or package) of ``checks.rules`` that declares it."""
        return self.group

    @property
    def example(self) -> str:
        """A spec-file fragment that satisfies it."""
        return self.examples[0]

    def run(self, context: RuleContext) -> Iterator[Violation]:
        for finding in self.check(context):
            yield self.violation(finding)

    def violation(self, finding: Finding) -> Violation:
        """The finding stamped with this rule's id."""
        return Violation(
            self.id,
            finding.path,
            finding.problem,
            finding.value,
            finding.allowed,
            finding.fix,
            self.severity,
        )


def checks_registered() -> tuple[Rule, ...]:
    """The synth-time rules registered so far, in registration order."""
    return tuple(entry for entry in registered_rules() if isinstance(entry, Rule))


# Each rule's topic is the module (or package) directly below this one that declares it.
RULES_PACKAGE = "hetero_constructs.checks.rules"


def rule(
    rule_id: str,
    *,
    source: str,
    example: str,
    backstop: bool = False,
    severity: str = "error",
    needs: Iterable[str] = (),
) -> Callable[[CheckFunction], Rule]:
    """Register a check function as a rule.

    ``source`` says where the rule comes from (seed document, SDK, toolkit, API model);
    ``example`` is a spec-file fragment that satisfies the rule, shown in the catalogue.
    A ``backstop`` rule runs only when no other rule found anything, so that it never
    repeats, in the request's terms, a problem a narrower rule already explained.
    ``severity="warning"`` marks a documented recommendation where sources disagree: a user
    may acknowledge it with a reason; errors cannot be acknowledged.
    ``needs`` names the optional features (``context.FEATURES``) of which a spec must use at
    least one for the check to find anything; the runner skips the rule for other specs. It
    must follow from the check's own conditions (tests run every rule on specs without them).
    """
    if severity not in SEVERITIES:
        raise ValueError(f"{rule_id}: severity {severity!r} is not one of {SEVERITIES}")
    needed = frozenset(needs)
    if not needed <= FEATURES:
        raise ValueError(f"{rule_id}: needs {sorted(needed - FEATURES)}, not in FEATURES")

    def register_check(check: CheckFunction) -> Rule:
        doc = inspect.cleandoc(check.__doc__ or "")
        title, _, details = doc.partition("\n")
        topic = check.__module__.removeprefix(f"{RULES_PACKAGE}.").split(".")[0]
        return register(
            Rule(
                id=rule_id,
                group=topic,
                title=title.strip(),
                source=source,
                details=details.strip(),
                severity=severity,
                examples=(example,),
                check=check,
                backstop=backstop,
                needs=needed,
            )
        )

    return register_check


__all__ = [
    "RULES_PACKAGE",
    "SEVERITIES",
    "CheckFunction",
    "Finding",
    "Rule",
    "checks_registered",
    "rule",
]
