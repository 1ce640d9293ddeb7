"""Spec text to data, with every limit enforced while reading, before anything is expanded.

JSON and YAML (``safe_yaml``, imported only for YAML) to plain data; syntax errors name the
file, line and column. ``structure_violations`` finds repeated keys and nesting beyond
``MAX_NESTING_DEPTH`` in data of any depth, each with its path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from hetero_constructs.spec.fields import (
    DEPTH_RULE,
    MAX_INTEGER_LITERAL,
    MAX_NESTING_DEPTH,
    KeyedTwice,
    OversizedInteger,
)
from hetero_constructs.spec.file.rules import DUPLICATE_KEY_RULE, FILE_RULE, MAX_SPEC_FILE_BYTES
from hetero_constructs.spec.violations import (
    SpecValidationError,
    Violation,
    shorten,
)


def file_violation(
    problem: str, value: Any, allowed: str, fix: str, *, rule: str = FILE_RULE
) -> SpecValidationError:
    return SpecValidationError([Violation(rule, "", problem, value, allowed, fix)])


def _located(
    rule: str, where: str, text: str, line: int, column: int, problem: str, allowed: str
) -> SpecValidationError:
    """A violation at a position of the file (1-based line and column), quoting that line."""
    lines = text.splitlines()
    quoted = shorten(lines[line - 1].strip(), 80) if 0 < line <= len(lines) else ""
    return file_violation(
        f"{where}, line {line}, column {column}: {problem}",
        quoted,
        allowed,
        f"fix {where} at line {line}, column {column}",
        rule=rule,
    )


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# A JSON string (or one left open to the end of the text) or a bracket. Every character is
# matched at most once, so this scan is linear whatever the text.
_JSON_STRUCTURE = re.compile(r'"(?:[^"\\]|\\[\s\S])*+(?:"|\\?\Z)|[\[\]{}]')


def _json_too_deep(text: str) -> int | None:
    """The offset of the first bracket nested beyond ``MAX_NESTING_DEPTH``, if any."""
    depth = 0
    for match in _JSON_STRUCTURE.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                return match.start()
        elif token in ("]", "}"):
            depth -= 1
    return None


def _json_integer(literal: str) -> int | OversizedInteger:
    if len(literal) > MAX_INTEGER_LITERAL:
        return OversizedInteger(len(literal.lstrip("-")))
    return int(literal)


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    repeated = []
    for key, _ in pairs:
        if key in seen:
            repeated.append((key, None, None))
        seen.add(key)
    keyed_twice = KeyedTwice(result)
    keyed_twice.duplicates = tuple(repeated)
    return keyed_twice


def _parse_json(text: str, where: str) -> Any:
    deep = _json_too_deep(text)
    if deep is not None:
        line, column = _position(text, deep)
        raise _located(
            DEPTH_RULE,
            where,
            text,
            line,
            column,
            f"lists and maps are nested more than {MAX_NESTING_DEPTH} levels deep.",
            f"at most {MAX_NESTING_DEPTH} levels of lists and maps",
        )
    try:
        return json.loads(text, parse_int=_json_integer, object_pairs_hook=_json_object)
    except json.JSONDecodeError as error:
        raise _located(
            FILE_RULE,
            where,
            text,
            error.lineno,
            error.colno,
            f"not valid JSON: {error.msg}.",
            "JSON (or YAML for .yaml/.yml files)",
        ) from None
    except (ValueError, RecursionError) as error:
        raise file_violation(
            f"{where}: not valid JSON.", str(error), "JSON", "fix the file"
        ) from None


def _parse_yaml(text: str, where: str) -> Any:
    import yaml  # only YAML files need it; the submit Lambda reads no files

    from hetero_constructs.spec.file.safe_yaml import YamlLimitError, load

    try:
        return load(text)
    except YamlLimitError as error:
        raise _located(
            error.rule, where, text, error.line, error.column, error.problem, error.allowed
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = ", ".join(part for part in (error.context, error.problem) if part)
        if mark is None:
            raise file_violation(
                f"{where}: not valid YAML: {problem}.", None, "YAML", "fix the file"
            ) from None
        if "nesting depth" in problem:  # libyaml's own limit, met before ours in flow style
            raise _located(
                DEPTH_RULE,
                where,
                text,
                mark.line + 1,
                mark.column + 1,
                f"lists and maps are nested more than {MAX_NESTING_DEPTH} levels deep.",
                f"at most {MAX_NESTING_DEPTH} levels of lists and maps",
            ) from None
        raise _located(
            FILE_RULE,
            where,
            text,
            mark.line + 1,
            mark.column + 1,
            f"not valid YAML: {problem}.",
            "YAML (the safe subset: no Python tags)",
        ) from None
    except yaml.YAMLError as error:  # e.g. a character YAML does not allow
        position = getattr(error, "position", None)
        if isinstance(position, int):
            line, column = _position(text, position)
            raise _located(
                FILE_RULE, where, text, line, column, f"not valid YAML: {error}.", "YAML"
            ) from None
        raise file_violation(
            f"{where}: not valid YAML: {error}.", None, "YAML", "fix the file"
        ) from None


def parse_text(text: str, *, yaml_syntax: bool, source: str | None = None) -> Any:
    """Parse spec text; raises ``SpecValidationError`` when it cannot be read safely.

    Syntax errors give ``source`` (the file), line and column. Nesting beyond
    ``MAX_NESTING_DEPTH`` and YAML documents beyond ``MAX_YAML_NODES`` (aliases counted as
    what they repeat) are refused before they are expanded. Repeated keys do not stop parsing:
    ``read_spec`` reports them with their paths.
    """
    where = source or "the spec"
    if len(text) > MAX_SPEC_FILE_BYTES:
        raise file_violation(
            f"{where} is too large to be a spec.",
            len(text),
            f"at most {MAX_SPEC_FILE_BYTES:,} characters",
            "keep data out of the spec (channels point at it)",
        )
    return _parse_yaml(text, where) if yaml_syntax else _parse_json(text, where)


def structure_violations(data: Any) -> list[Violation]:
    """Repeated keys and nesting beyond ``MAX_NESTING_DEPTH``, each with its path.

    Iterative, so data of any depth (even cyclic data given through the Python API) is
    reported, not a RecursionError.
    """
    violations: list[Violation] = []
    pending: list[tuple[Any, str, int]] = [(data, "", 1)]
    while pending:
        node, path, depth = pending.pop()
        if not isinstance(node, Mapping | list | tuple):
            continue
        if depth > MAX_NESTING_DEPTH:
            violations.append(
                Violation(
                    DEPTH_RULE,
                    path,
                    f"Lists and maps are nested more than {MAX_NESTING_DEPTH} levels deep.",
                    node,
                    f"at most {MAX_NESTING_DEPTH} levels of lists and maps",
                    "flatten the value",
                )
            )
            continue
        if isinstance(node, KeyedTwice) and node.duplicates:
            violations.extend(_duplicate_violations(node, path))
        if isinstance(node, Mapping):
            children = [(child, _key_path(path, key)) for key, child in node.items()]
        else:
            children = [(child, f"{path}[{index}]") for index, child in enumerate(node)]
        pending.extend((child, child_path, depth + 1) for child, child_path in reversed(children))
    return violations


def _key_path(path: str, key: Any) -> str:
    shown = shorten(key if isinstance(key, str) else repr(key), 100)
    return f"{path}.{shown}" if path else shown


def _duplicate_violations(node: KeyedTwice, path: str) -> list[Violation]:
    result = []
    for key, line, column in node.duplicates:
        where = f" (line {line}, column {column})" if line is not None else ""
        result.append(
            Violation(
                DUPLICATE_KEY_RULE,
                _key_path(path, key),
                f"The key is given more than once{where}; a parser would silently keep the "
                "last value.",
                key,
                "each key once per map",
                "remove the repeated key, or merge the two values",
            )
        )
    return result


__all__ = [
    "file_violation",
    "parse_text",
    "structure_violations",
]
