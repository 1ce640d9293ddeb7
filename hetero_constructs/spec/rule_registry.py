"""The one registry of every rule id the project reports, with its doc.

Each layer registers the rules it reports where it reports them: the spec file's and the
types' rules (``spec``), the execution input's (``run.overrides``), the synth-time checks
(``checks.base.rule``), the constructs' (``checks.construct_rules``) and the deployability
quotas (``deployability.quota.quota``). ``hetero-train rules`` and ``docs/rules.md`` are
generated from it (``cli.catalogue``); a violation's rule id is always one of these.
"""

from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("error", "warning")

#: The groups of rules, in catalogue order: where a rule is checked. The synth-time checks'
#: topics (``checks.rules``) come between the execution input's and the constructs'.
SPEC_FILE, EXECUTION_INPUT, CONSTRUCT, DEPLOYABILITY = (
    "spec-file",
    "execution-input",
    "construct",
    "deployability",
)


@dataclass(frozen=True)
class RuleEntry:
    """A rule as the catalogue shows it."""

    id: str
    #: Where it is checked: ``SPEC_FILE``, ``EXECUTION_INPUT``, ``CONSTRUCT``,
    #: ``DEPLOYABILITY``, or the synth-time checks' topic (``launchers``, ``api``, ...).
    group: str
    #: What it checks, in one sentence.
    title: str
    source: str
    details: str = ""
    #: ``error`` (never acknowledged) or ``warning`` (acknowledgeable with a reason).
    severity: str = "error"
    #: What satisfies it: spec-file fragments, a fix.
    examples: tuple[str, ...] = ()


_REGISTRY: dict[str, RuleEntry] = {}


def register_rule(
    rule_id: str,
    *,
    group: str,
    title: str,
    source: str,
    details: str = "",
    severity: str = "error",
    examples: tuple[str, ...] = (),
) -> str:
    """Register a rule id with its doc; returns the id (``TYPE_RULE = register_rule(...)``)."""
    if severity not in SEVERITIES:
        raise ValueError(f"{rule_id}: severity {severity!r} is not one of {SEVERITIES}")
    if rule_id in _REGISTRY:
        raise RuntimeError(f"duplicate rule id {rule_id}")
    _REGISTRY[rule_id] = RuleEntry(rule_id, group, title, source, details, severity, examples)
    return rule_id


def registered_rules() -> tuple[RuleEntry, ...]:
    """Every rule registered so far, in registration order."""
    return tuple(_REGISTRY.values())


def rule_entry(rule_id: str) -> RuleEntry:
    return _REGISTRY[rule_id]


__all__ = [
    "CONSTRUCT",
    "DEPLOYABILITY",
    "EXECUTION_INPUT",
    "SEVERITIES",
    "SPEC_FILE",
    "RuleEntry",
    "register_rule",
    "registered_rules",
    "rule_entry",
]
