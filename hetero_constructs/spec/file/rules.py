"""The spec file's own rules and limits: what a file may cost to read, whatever its content.

``SPEC_FILE_RULES`` lists them for the catalogue (the semantic rules live in ``checks``).
"""

from __future__ import annotations

from hetero_constructs.spec.fields import (
    DEPTH_RULE,
    MAX_INTEGER_LITERAL,
    MAX_NESTING_DEPTH,
    NUMBER_RULE,
    REQUIRED_RULE,
    TYPE_RULE,
    UNKNOWN_KEY_RULE,
)

# Limits on what a spec file may cost to read, whatever its content.
MAX_SPEC_FILE_BYTES = 1024 * 1024


DUPLICATE_KEY_RULE = "SPEC-DUPLICATE-KEY"


# A YAML document expands to at most this many nodes, each alias counted as what it repeats.
MAX_YAML_NODES = 5_000


YAML_SIZE_RULE = "SPEC-YAML-SIZE"


# Rules of the file itself, for the catalogue (the semantic rules live in checks.rules).
SPEC_FILE_RULES = (
    (
        "SPEC-FILE",
        f"The file is a regular file of at most {MAX_SPEC_FILE_BYTES:,} bytes and parses as JSON "
        "(or YAML for .yaml/.yml) to a mapping; a syntax error names the file, line and column.",
        "this library",
    ),
    (
        DEPTH_RULE,
        f"Lists and maps nest at most {MAX_NESTING_DEPTH} levels (a spec needs about 6). A file "
        "is checked before it is parsed further, so deep nesting never exhausts Python's "
        "recursion limit.",
        "this library",
    ),
    (
        YAML_SIZE_RULE,
        f"A YAML document has at most {MAX_YAML_NODES:,} nodes, each alias counted as the nodes "
        "it repeats, and no alias inside its own anchor. Refused while the file is read, before "
        "anything is expanded, so an alias bomb costs milliseconds.",
        "this library",
    ),
    (
        DUPLICATE_KEY_RULE,
        "Every key appears once in its map (JSON and YAML parsers would silently keep the last "
        "one; YAML merge keys `<<` are not duplicates).",
        "this library",
    ),
    (
        UNKNOWN_KEY_RULE,
        "Every key, at any depth, is one the library knows (the SDK silently ignores unknown "
        "keys, so a typo like `procesess_per_host` would be lost); the fix names the likely key.",
        "this library",
    ),
    (
        REQUIRED_RULE,
        "Required keys are present: `entry_point`, `framework`.",
        "SDK v2 estimators",
    ),
    (
        TYPE_RULE,
        "Every value has its type: strings, integers, booleans, lists, maps; enum-like strings "
        "(`framework`, `smddp_collective`) exactly as written.",
        "SDK v2 estimators",
    ),
    (
        NUMBER_RULE,
        "Integers, anywhere in the spec, have at most 64 bits (the API's widest). Longer integer "
        f"literals (more than {MAX_INTEGER_LITERAL} characters) are not even converted.",
        "botocore model (integer and long members)",
    ),
    (
        "SPEC-LAUNCHER-ENABLED",
        "Every launcher in `distribution` says `enabled: true` or `false` "
        "(the SDK treats a missing `enabled` as false and silently drops the launcher); "
        "a launcher or `smdistributed.modelparallel` with `enabled: false` carries no other "
        "options (they would be silently ignored).",
        "SDK v2 estimator.py",
    ),
)


__all__ = [
    "DUPLICATE_KEY_RULE",
    "MAX_SPEC_FILE_BYTES",
    "MAX_YAML_NODES",
    "SPEC_FILE_RULES",
    "YAML_SIZE_RULE",
]
