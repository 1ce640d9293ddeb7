"""Acknowledgments: a warning a user has weighed, with the reason recorded."""

from __future__ import annotations

from collections.abc import Iterator

from hetero_constructs.checks.base import Finding, checks_registered, rule
from hetero_constructs.request.context import RuleContext

MIN_REASON = 10


@rule(
    "ACK-RULE",
    source="hetero-constructs: warnings are documented recommendations where sources disagree "
    "(acknowledgeable, as cdk-nag acknowledgments are); errors are what the API or the toolkit "
    "would reject",
    example='acknowledgments: {"LAU-SMDDP-INSTANCE": "p3dn is in the SDK\'s SMDDP list; '
    'measured on our cluster"}',
    needs=("acknowledgments",),
)
def acknowledged_rules(context: RuleContext) -> Iterator[Finding]:
    """Acknowledgments name warning rules of the catalogue, each with a reason."""
    if not context.spec.acknowledgments:
        return
    by_id = {registered.id: registered for registered in checks_registered()}
    for rule_id, reason in context.spec.acknowledgments.items():
        path = f"acknowledgments.{rule_id}"
        known = by_id.get(rule_id)
        if known is None:
            yield Finding(
                path,
                "No rule has this id.",
                rule_id,
                "the id of a warning rule (docs/rules.md)",
                "use the id a violation names",
            )
        elif known.severity != "warning":
            yield Finding(
                path,
                "This rule is an error: the API or the toolkit would reject or misbehave, so "
                "it cannot be acknowledged.",
                rule_id,
                "warning rules only",
                "fix what the rule reports",
            )
        elif len(reason.strip()) < MIN_REASON:
            yield Finding(
                path,
                "An acknowledgment needs its reason.",
                reason,
                f"a reason of at least {MIN_REASON} characters",
                "say why the warning does not apply to this job",
            )


__all__ = [
    "MIN_REASON",
    "acknowledged_rules",
]
