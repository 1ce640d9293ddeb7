"""Generates the rule catalogue (``docs/rules.md``) from the rules themselves.

Run ``python -m hetero_constructs.checks.docs > docs/rules.md``; a test keeps the file
in step with the code.
"""

from __future__ import annotations

import sys

from hetero_constructs.checks.construct_rules import CONSTRUCT_RULES
from hetero_constructs.checks.registry import RULES, TOPICS
from hetero_constructs.run.overrides import OVERRIDE_RULES
from hetero_constructs.spec.file.rules import SPEC_FILE_RULES

_HEADER = """# Rule catalogue

Every rule `hetero-constructs` checks at synth time, generated from the code
(`python -m hetero_constructs.checks.docs`). Each violation names its rule id, the path in
the spec, the value given, what is allowed and the fix.

Each rule is an **error** (the API or the training toolkit would reject the job or misbehave)
or a **warning** (a documented recommendation where sources disagree). Every rule runs on
every spec, so the first `hetero-train plan` or `cdk synth` lists every violation at once;
where the distribution group is left open, the rules that depend on it run for each group the
spec could mean. From Python, `validate(spec)` returns the violations of the spec alone: what
the deployment supplies (the region, the execution role) is not reported missing, a value the
spec gives is still checked; `plan(spec, Deployment(region=..., role_arn=...))` returns the
request or every violation.

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
    self,
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


def _topic_title(module_doc: str | None) -> str:
    return (module_doc or "").strip().splitlines()[0].rstrip(".")


def render() -> str:
    lines = [_HEADER]
    lines.append("## Spec file and types\n")
    lines.append("| Id | Checks | Source |")
    lines.append("| --- | --- | --- |")
    for rule_id, text, source in SPEC_FILE_RULES:
        lines.append(f"| `{rule_id}` | {text} | {source} |")
    lines.append("")
    lines.append("## Execution input (checked by the submit Lambda, and at synth for schedules)\n")
    lines.append("Every rule below applies again to the spec with the overrides merged in.\n")
    lines.append("| Id | Checks |")
    lines.append("| --- | --- |")
    for rule_id, text in OVERRIDE_RULES:
        lines.append(f"| `{rule_id}` | {text} |")
    lines.append("")
    lines.append("## Construct (checked at synth by the constructs, with the stack in view)\n")
    lines.append("| Id | Checks | Source |")
    lines.append("| --- | --- | --- |")
    for rule_id, text, source in CONSTRUCT_RULES:
        lines.append(f"| `{rule_id}` | {text} | {source} |")
    lines.append("")
    for topic in TOPICS:
        name = topic.__name__.rsplit(".", 1)[-1]
        lines.append(f"## {name}: {_topic_title(topic.__doc__)}\n")
        for item in (r for r in RULES if r.topic == name):
            lines.append(f"### `{item.id}` ({item.severity})\n")
            lines.append(f"{item.title}\n")
            if item.details:
                lines.append(f"{item.details}\n")
            lines.append(f"- Source: {item.source}")
            lines.append(f"- Example fix: `{item.example}`\n")
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    sys.stdout.write(render())


__all__ = [
    "main",
    "render",
]


if __name__ == "__main__":
    main()
