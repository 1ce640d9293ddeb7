"""Every deployability quota, measured on templates, and its generated catalogue.

Importing this module registers every quota, in catalogue order (``size_quotas``,
``dashboard_quotas``, then ``name_quotas``). ``measure_template`` returns every measurement
(the benchmark reads the headroom from them); ``check_template`` only those over their limit.
``docs/deployability.md`` is generated from the registry:
``python -m hetero_constructs.deployability.catalogue > docs/deployability.md``.
"""

from __future__ import annotations

import inspect
import json
import sys

# Importing the quota modules registers their quotas.
from hetero_constructs.deployability import dashboard_quotas, name_quotas, size_quotas
from hetero_constructs.deployability.quota import (
    REGISTERED,
    Limits,
    Measurement,
    Quota,
    StackTemplate,
    TemplateView,
)

# The catalogue's order: the sizes, the dashboards', then the names; within a module, as
# declared.
_MODULES = (size_quotas.__name__, dashboard_quotas.__name__, name_quotas.__name__)
QUOTAS: list[Quota] = sorted(REGISTERED, key=lambda q: _MODULES.index(q.measure.__module__))
DEFAULT_LIMITS = Limits()


def measure_template(stack: StackTemplate, limits: Limits = DEFAULT_LIMITS) -> list[Measurement]:
    """Every measurement of every quota on one template, within its limit or not."""
    view = TemplateView(stack, limits)
    return [measurement for registered in QUOTAS for measurement in registered.run(view)]


def check_template(stack: StackTemplate, limits: Limits = DEFAULT_LIMITS) -> list[Measurement]:
    """The measurements over their limit: what would fail the deploy."""
    return [m for m in measure_template(stack, limits) if m.exceeded]


def quota_by_id(quota_id: str) -> Quota:
    for registered in QUOTAS:
        if registered.id == quota_id:
            return registered
    raise KeyError(quota_id)


_HEADER = """# Deployability checks

Quotas that CloudFormation does not check before it starts a deploy, and that then fail it
halfway. `enable_deployability_checks(scope)` (a top-level name of the library) measures
them on every template of the app at synth and fails the synth with a violation naming the
rule id, the construct path, the measured size and the limit, and the fix;
`python -m hetero_constructs.deployability.catalogue cdk.out/*.template.json` checks templates
already synthesized. Generated from the code
(`python -m hetero_constructs.deployability.catalogue > docs/deployability.md`).
"""


def render() -> str:
    """The catalogue: a summary table, each quota's doc and source, and how sizes are estimated."""
    from hetero_constructs.deployability import worst_case

    lines = [_HEADER, "| Id | Checks | Limit |", "| --- | --- | --- |"]
    lines += [f"| `{q.id}` | {q.title} | {q.limit} |" for q in QUOTAS]
    lines.append("")
    for registered in QUOTAS:
        lines.append(f"## `{registered.id}`\n")
        lines.append(f"{registered.title}\n")
        if registered.details:
            lines.append(f"{registered.details}\n")
        lines.append(f"- Limit: {registered.limit}")
        lines.append(f"- Source: {registered.source}")
        lines.append(f"- Fix: {registered.fix}\n")
    lines.append("## Sizing what is resolved at deploy time\n")
    lines.append(inspect.cleandoc(worst_case.__doc__ or "").partition("\n\n")[2] + "\n")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m hetero_constructs.deployability.catalogue [TEMPLATE.json ...]``.

    Without arguments, print the catalogue; with templates, print each violation and exit 1
    if there is any.
    """
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        sys.stdout.write(render())
        return 0
    failed = False
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        stack = StackTemplate(json.loads(text), path=path, size_bytes=len(text.encode()))
        for measurement in check_template(stack):
            failed = True
            print(f"{path}: {measurement.violation()}")
    return 1 if failed else 0


__all__ = [
    "DEFAULT_LIMITS",
    "QUOTAS",
    "check_template",
    "main",
    "measure_template",
    "quota_by_id",
    "render",
]


if __name__ == "__main__":
    raise SystemExit(main())
