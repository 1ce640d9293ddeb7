"""The rule catalogue (``hetero-train rules``, ``docs/rules.md``) from the one rule registry.

Importing the layers that report rules registers them all (``spec.rule_registry``); this
module only orders and renders them. ``make docs`` writes ``docs/rules.md`` with
``hetero-train rules``; a test keeps the file in step with the code.
"""

from __future__ import annotations

import dataclasses
from typing import Any

# Each import registers the rules its layer reports.
from hetero_constructs.checks import construct_rules as _construct_rules
from hetero_constructs.checks.registry import TOPICS
from hetero_constructs.contract import overrides as _overrides
from hetero_constructs.deployability import catalogue as _quotas
from hetero_constructs.spec.file import rules as _file_rules
from hetero_constructs.spec.rule_registry import (
    CONSTRUCT,
    DEPLOYABILITY,
    EXECUTION_INPUT,
    SPEC_FILE,
    RuleEntry,
    registered_rules,
)

_REGISTERING = (_construct_rules, _quotas, _overrides, _file_rules)

_HEADER = """# Rule catalogue

Every rule id `hetero-constructs` reports, generated from its one rule registry
(`hetero-train rules`; `make docs`). Each violation names its rule id, the path, the value
given, what is allowed and the fix.

Each rule is an **error** (the API or the training toolkit would reject the job or misbehave)
or a **warning** (a documented recommendation where sources disagree). Every rule runs on
every spec, so the first `hetero-train plan` or `cdk synth` lists every violation at once;
where the launcher (several enabled) or the distribution group is left open, the rules run for
each launcher and group the spec could mean, and a violation only some of them have says
which. From Python, `validate(spec)` returns the violations of the spec alone: what the
deployment supplies (the region, the execution role) is not reported missing, a value the spec
gives is still checked; `plan(spec, Deployment(region=..., role_arn=...))` returns the request
or every violation.

## Acknowledging a warning

A warning stops the job like an error until it is acknowledged, for one job, with a reason
(at least 10 characters). The text output names each violation's severity, and a warning's
fix ends with the entry that silences it:

```
  warning [LAU-SMDDP-INSTANCE] instance_groups[1].instance_type
    ...
    fix:     use ml.p4d.24xlarge for the distribution group, or launch with torch_distributed
    or, if it does not apply, acknowledge it in the spec:
             acknowledgments: {"LAU-SMDDP-INSTANCE": "<why this does not apply to the job, ...>"}
```

Put it in the spec file (YAML or JSON), in `TrainingSpec(acknowledgments={...})`, or in the
constructs' `acknowledgments=` prop:

```yaml
acknowledgments:
  LAU-SMDDP-INSTANCE: "p3dn.24xlarge is in the SDK's SMDDP list; measured on our cluster"
```

```python
HeterogeneousTrainingJob(
    stack,
    "Training",
    spec=spec,
    acknowledgments={"LAU-SMDDP-INSTANCE": "p3dn.24xlarge is in the SDK's SMDDP list; measured"},
)
```

An acknowledged warning no longer stops the request: `hetero-train plan` lists it
(`note: acknowledged warning [...]`, or `"acknowledged"` with `--json`), and the constructs
record it with its reason in the template's metadata (`hetero-constructs:acknowledged`).
An error cannot be acknowledged (rule `ACK-RULE`): fix what it reports.
"""

_GROUP_TITLES = {
    SPEC_FILE: "Spec file and types (checked while a spec is read or built)",
    EXECUTION_INPUT: "Execution input (checked by the submit Lambda, and at synth for schedules)",
    CONSTRUCT: "Construct (checked at synth by the constructs, with the stack in view)",
    DEPLOYABILITY: "Deployability (quotas measured on the synthesized templates; "
    "see docs/deployability.md)",
}


def _topic_name(topic: Any) -> str:
    return str(topic.__name__).rsplit(".", 1)[-1]


def _groups() -> list[tuple[str, str]]:
    """Every group in catalogue order, with its title."""
    topics = [
        (_topic_name(t), f"{_topic_name(t)}: " + (t.__doc__ or "").strip().splitlines()[0])
        for t in TOPICS
    ]
    return [
        (SPEC_FILE, _GROUP_TITLES[SPEC_FILE]),
        (EXECUTION_INPUT, _GROUP_TITLES[EXECUTION_INPUT]),
        (CONSTRUCT, _GROUP_TITLES[CONSTRUCT]),
        *((name, title.rstrip(".")) for name, title in topics),
        (DEPLOYABILITY, _GROUP_TITLES[DEPLOYABILITY]),
    ]


def catalogue() -> list[RuleEntry]:
    """Every registered rule, in catalogue order (by group, then as registered)."""
    order = {name: index for index, (name, _) in enumerate(_groups())}
    return sorted(registered_rules(), key=lambda entry: order[entry.group])


def as_dicts() -> list[dict[str, Any]]:
    # The catalogue's own fields (a synth-time rule's entry also carries its check function).
    names = [field.name for field in dataclasses.fields(RuleEntry)]
    return [{name: getattr(entry, name) for name in names} for entry in catalogue()]


def render() -> str:
    """The catalogue as Markdown (``docs/rules.md``)."""
    entries = catalogue()
    lines = [_HEADER]
    for group, title in _groups():
        members = [entry for entry in entries if entry.group == group]
        lines.append(f"## {title}\n")
        lines.append("| Id | Severity | Checks |")
        lines.append("| --- | --- | --- |")
        lines += [f"| `{e.id}` | {e.severity} | {e.title} |" for e in members]
        lines.append("")
        for entry in members:
            lines.append(f"### `{entry.id}` ({entry.severity})\n")
            lines.append(f"{entry.title}\n")
            if entry.details:
                lines.append(f"{entry.details}\n")
            lines.append(f"- Source: {entry.source}")
            lines += [f"- Example: `{example}`" for example in entry.examples]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


__all__ = [
    "as_dicts",
    "catalogue",
    "render",
]
