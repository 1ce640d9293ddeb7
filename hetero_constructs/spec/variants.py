"""Instance-type variants of a spec: what its groups' fallbacks can produce.

Variant 0 is the spec as declared. Variant ``i`` (``i >= 1``) runs every group that has
fallbacks on its ``i``-th fallback, or its last one when it has fewer; groups without fallbacks
keep their type. A run moves to the next variant after each capacity failure and stays on the
last. Every variant is validated with every rule: a fallback that breaks one is a violation
named by the fallback's own path.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hetero_constructs.spec.cluster import InstanceFallback, InstanceGroup
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import Violation


def variant_count(spec: TrainingSpec) -> int:
    """1 for a spec without fallbacks; else 1 plus the longest list of a group's fallbacks."""
    longest = 0
    for group in spec.instance_groups:  # a plain loop: every plan() asks
        longest = max(longest, len(group.fallbacks))
    return 1 + longest


@dataclass(frozen=True)
class Variant:
    """One variant: its index, its spec (no fallbacks left) and which fallback each group took."""

    index: int
    spec: TrainingSpec
    sources: tuple[int | None, ...]  # per group: the fallback's index, None for the declared type

    def describe(self) -> str:
        taken = [
            f"{g.name} on {g.instance_type} x{g.instance_count}"
            for g, source in zip(self.spec.instance_groups, self.sources, strict=True)
            if source is not None
        ]
        return f"fallback variant {self.index} ({', '.join(taken)})"


def variant(spec: TrainingSpec, index: int) -> Variant:
    """The spec of variant ``index`` (capped at the last); its groups carry no fallbacks."""
    if not any(g.fallbacks for g in spec.instance_groups):
        # Nothing to choose: the declared spec, without copying its groups.
        return Variant(0, spec, (None,) * len(spec.instance_groups))
    index = max(0, min(index, variant_count(spec) - 1))
    groups: list[InstanceGroup] = []
    sources: list[int | None] = []
    for group in spec.instance_groups:
        fallbacks = [f for f in group.fallbacks if isinstance(f, InstanceFallback)]
        if index == 0 or not fallbacks:
            groups.append(dataclasses.replace(group, fallbacks=()))
            sources.append(None)
            continue
        position = min(index, len(fallbacks)) - 1
        chosen = fallbacks[position]
        groups.append(InstanceGroup(group.name, chosen.instance_type, chosen.instance_count))
        sources.append(position)
    return Variant(index, dataclasses.replace(spec, instance_groups=groups), tuple(sources))


def instance_types(spec: TrainingSpec) -> list[str]:
    """Every instance type any variant may run (IAM allows exactly these)."""
    types = {g.instance_type for g in spec.instance_groups}
    types |= {
        f.instance_type
        for g in spec.instance_groups
        for f in g.fallbacks
        if isinstance(f, InstanceFallback)
    }
    if spec.instance_type is not None:
        types.add(spec.instance_type)
    return sorted(t for t in types if isinstance(t, str))


def name_the_fallback(violation: Violation, chosen: Variant) -> Violation:
    """A variant's violation, named by the fallback that caused it when it is about a group."""
    path = violation.path
    for group_index, source in enumerate(chosen.sources):
        if source is None:
            continue
        prefix = f"instance_groups[{group_index}]"
        for field in ("instance_type", "instance_count"):
            if path == f"{prefix}.{field}":
                return dataclasses.replace(violation, path=f"{prefix}.fallbacks[{source}].{field}")
    return dataclasses.replace(violation, problem=f"With {chosen.describe()}: {violation.problem}")


__all__ = [
    "Variant",
    "instance_types",
    "name_the_fallback",
    "variant",
    "variant_count",
]
