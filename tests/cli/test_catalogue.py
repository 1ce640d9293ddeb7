"""The rule catalogue: every rule id the library reports is in the one registry, documented."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hetero_constructs.cli import catalogue
from hetero_constructs.spec.rule_registry import SEVERITIES, register_rule

REPO = Path(__file__).parents[2]
RULE_ID = re.compile(r"[A-Z]{2,}[A-Z0-9]*(-[A-Z0-9]+)+")
# Strings shaped like rule ids that are not rules: a placeholder in a request, a placeholder
# in snapshots.
NOT_RULES = {"IMAGE-URI-UNRESOLVED", "ASSET-HASH"}


def _id_literals() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in [*REPO.glob("hetero_constructs/**/*.py"), *REPO.glob("lambda/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if is_text and RULE_ID.fullmatch(node.value):
                found[node.value] = path
    return found


def test_every_rule_id_in_the_code_is_registered() -> None:
    registered = {entry.id for entry in catalogue.catalogue()}
    literals = _id_literals()
    unregistered = {i: str(p) for i, p in literals.items() if i not in registered | NOT_RULES}
    assert unregistered == {}
    assert set(literals) >= NOT_RULES  # the exceptions are still there to be excepted


def test_every_rule_is_documented() -> None:
    entries = catalogue.catalogue()
    assert len({entry.id for entry in entries}) == len(entries)
    for entry in entries:
        assert entry.title and entry.source and entry.severity in SEVERITIES, entry.id
    groups = {entry.group for entry in entries}
    assert {"spec-file", "execution-input", "construct", "deployability", "api"} <= groups


def test_a_rule_id_is_registered_once() -> None:
    try:
        register_rule("SPEC-TYPE", group="spec-file", title="again", source="a test")
    except RuntimeError as error:
        assert "SPEC-TYPE" in str(error)
    else:
        raise AssertionError("a second SPEC-TYPE was registered")


def test_the_catalogue_is_current() -> None:
    document = REPO / "docs" / "rules.md"
    assert document.read_text() == catalogue.render(), "run `make docs` to regenerate it"
