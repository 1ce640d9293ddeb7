"""The spec file's own rules and limits: what a file may cost to read, whatever its content.

Registered in the rule registry (``spec.rule_registry``); the semantic rules live in
``checks``, the types' rules in ``spec.fields``.
"""

from __future__ import annotations

# The types' rules (spec.fields) come first in the catalogue's spec-file group.
import hetero_constructs.spec.fields  # noqa: F401
from hetero_constructs.spec.rule_registry import SPEC_FILE, register_rule

# Limits on what a spec file may cost to read, whatever its content.
MAX_SPEC_FILE_BYTES = 1024 * 1024


# A YAML document expands to at most this many nodes, each alias counted as what it repeats.
MAX_YAML_NODES = 5_000


FILE_RULE = register_rule(
    "SPEC-FILE",
    group=SPEC_FILE,
    title=f"The file is a regular file of at most {MAX_SPEC_FILE_BYTES:,} bytes and parses as "
    "JSON (or YAML for .yaml/.yml) to a mapping.",
    details="A syntax error names the file, line and column.",
    source="this library",
)
YAML_SIZE_RULE = register_rule(
    "SPEC-YAML-SIZE",
    group=SPEC_FILE,
    title=f"A YAML document has at most {MAX_YAML_NODES:,} nodes, each alias counted as the "
    "nodes it repeats, and no alias inside its own anchor.",
    details="Refused while the file is read, before anything is expanded, so an alias bomb "
    "costs milliseconds.",
    source="this library",
)
DUPLICATE_KEY_RULE = register_rule(
    "SPEC-DUPLICATE-KEY",
    group=SPEC_FILE,
    title="Every key appears once in its map.",
    details="JSON and YAML parsers would silently keep the last one; YAML merge keys `<<` are "
    "not duplicates. Two tags with the same Key are refused too.",
    source="this library",
)
LAUNCHER_ENABLED_RULE = register_rule(
    "SPEC-LAUNCHER-ENABLED",
    group=SPEC_FILE,
    title="Every launcher in `distribution` says `enabled: true` or `false`.",
    details="The SDK treats a missing `enabled` as false and silently drops the launcher; a "
    "launcher or `smdistributed.modelparallel` with `enabled: false` carries no other options "
    "(they would be silently ignored).",
    source="SDK v2 estimator.py",
    examples=('"distribution": {"torch_distributed": {"enabled": true}}',),
)


__all__ = [
    "DUPLICATE_KEY_RULE",
    "FILE_RULE",
    "LAUNCHER_ENABLED_RULE",
    "MAX_SPEC_FILE_BYTES",
    "MAX_YAML_NODES",
    "YAML_SIZE_RULE",
]
