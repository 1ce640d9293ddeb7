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
or a **warning** (a documented recommendation where sources disagree). A warning can be
acknowledged for one job with a reason - `acknowledgments: {"RULE-ID": "why"}` in the spec,
recorded in the template's metadata and listed by `hetero-train plan`; an error cannot.
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
