"""The one registry of every rule id the project reports, with its doc.

Each layer registers the rules it reports where it reports them: the spec file's and the
types' rules (``spec``), the execution input's (``contract.overrides``), the synth-time checks
(``checks.base.rule``, whose entries carry their check function: ``checks.base.Rule``), the
constructs' (``checks.construct_rules``) and the deployability quotas
(``deployability.quota.quota``). ``hetero-train rules`` and ``docs/rules.md`` are generated
from it (``cli.catalogue``), the synth-time checks run from it (``checks.registry``); a
violation's rule id is always one of these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

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

E = TypeVar("E", bound=RuleEntry)


def register(entry: E) -> E:
    """Register a rule (an entry, or a richer one of a layer above); returns it."""
    if entry.severity not in SEVERITIES:
        raise ValueError(f"{entry.id}: severity {entry.severity!r} is not one of {SEVERITIES}")
    if entry.id in _REGISTRY:
        raise RuntimeError(f"duplicate rule id {entry.id}")
    _REGISTRY[entry.id] = entry
    return entry


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
    return register(RuleEntry(rule_id, group, title, source, details, severity, examples)).id


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
    "E",
    "RuleEntry",
    "register",
    "register_rule",
    "registered_rules",
    "rule_entry",
]
