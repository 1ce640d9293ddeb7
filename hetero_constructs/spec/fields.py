"""Type checks for the spec value objects.

Each value object checks its own fields when it is built and raises one
``SpecValidationError`` listing every field of the wrong type, so that the semantic
rules can rely on types. Paths are relative to the object; the spec-file loader
prefixes them with where the object sits in the file.

The checks also keep hostile values out: integers wider than any the API has, values nested
beyond ``MAX_NESTING_DEPTH``, enum names in the wrong case, unknown or missing constructor
arguments. Each gives a violation, never a Python error.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any, ParamSpec, TypeVar

from hetero_constructs.spec.rule_registry import SPEC_FILE, register_rule
from hetero_constructs.spec.violations import (
    SpecValidationError,
    Violation,
    did_you_mean,
    raise_if_any,
    unknown_key_fix,
)

# Lists and maps nest at most this deep: in a spec file counted from the top, in a value given
# through the Python API within the value. A spec needs about 6 levels.
MAX_NESTING_DEPTH = 32
# The API's widest integers are 64-bit ("long"); nothing in a spec may be wider.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# Characters of an integer literal in a spec file: far more than any 64-bit number needs in
# any base. Longer literals are not converted at all (``OversizedInteger``).
MAX_INTEGER_LITERAL = 100

DEPTH_RULE = register_rule(
    "SPEC-DEPTH",
    group=SPEC_FILE,
    title=f"Lists and maps nest at most {MAX_NESTING_DEPTH} levels (a spec needs about 6).",
    details="A file is checked before it is parsed further, so deep nesting never exhausts "
    "Python's recursion limit; a value given through the Python API is checked the same way.",
    source="this library",
)
UNKNOWN_KEY_RULE = register_rule(
    "SPEC-UNKNOWN-KEY",
    group=SPEC_FILE,
    title="Every key, at any depth, and every argument is one the library knows.",
    details="The SDK silently ignores unknown keys, so a typo like `procesess_per_host` would "
    "be lost; the fix names the likely key.",
    source="this library",
    examples=('"processes_per_host": 8',),
)
REQUIRED_RULE = register_rule(
    "SPEC-REQUIRED",
    group=SPEC_FILE,
    title="Required keys and arguments are present (docs/spec-fields.md marks them).",
    source="SDK v2 estimators",
    examples=('"entry_point": "train.py", "framework": "pytorch"',),
)
TYPE_RULE = register_rule(
    "SPEC-TYPE",
    group=SPEC_FILE,
    title="Every value has its type: strings, integers, booleans, lists, maps; enum-like "
    "strings (`framework`, `smddp_collective`) exactly as written.",
    source="SDK v2 estimators",
    examples=('"volume_size": 100',),
)
NUMBER_RULE = register_rule(
    "SPEC-NUMBER",
    group=SPEC_FILE,
    title="Integers, anywhere in the spec, have at most 64 bits (the API's widest).",
    details=f"Longer integer literals (more than {MAX_INTEGER_LITERAL} characters) are not even "
    "converted.",
    source="botocore model (integer and long members)",
)


@dataclass(frozen=True)
class OversizedInteger:
    """An integer literal of a spec file too long to be a number the API takes.

    The file readers put it in place of the number without converting the text (Python
    refuses integers of more than 4,300 digits, and converting long ones is slow); the type
    checks then report it as a SPEC-NUMBER violation.
    """

    digits: int

    def __repr__(self) -> str:
        return f"<an integer of {self.digits} digits>"


class KeyedTwice(dict[Any, Any]):
    """A map a file reader parsed, with the keys the file repeated (``read_spec`` reports them).

    Each repeat is (key, line, column); line and column are ``None`` when the parser does not
    say (JSON). The map holds the last value of a repeated key, as the parsers do.
    """

    duplicates: tuple[tuple[Any, int | None, int | None], ...] = ()


def is_integer(value: Any) -> bool:
    """An int, or a float with an integral value (CDK encodes number tokens as such floats)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def is_int64(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


@dataclass(frozen=True)
class ValueProblem:
    """Why a value is not a JSON value the spec takes, and where inside it."""

    rule: str
    path: str  # relative to the value, e.g. "[0].lr" ("" is the value itself)
    value: Any
    allowed: str


def json_value_problem(value: Any) -> ValueProblem | None:
    """The first reason ``value`` is not a JSON value of the spec, or ``None``.

    Iterative and bounded by ``MAX_NESTING_DEPTH``, so a deep or cyclic value is reported,
    not a RecursionError or a hang.
    """
    pending: list[tuple[Any, str, int]] = [(value, "", 0)]
    while pending:
        item, path, depth = pending.pop()
        if item is None or isinstance(item, str | bool):
            continue
        if isinstance(item, int):
            if not is_int64(item):
                return ValueProblem(NUMBER_RULE, path, item, "integers of at most 64 bits")
            continue
        if isinstance(item, OversizedInteger):
            return ValueProblem(NUMBER_RULE, path, item, "integers of at most 64 bits")
        if isinstance(item, float):
            if not math.isfinite(item):
                return ValueProblem(TYPE_RULE, path, item, "a finite number")
            continue
        if isinstance(item, list | tuple | Mapping) and depth >= MAX_NESTING_DEPTH:
            return ValueProblem(
                DEPTH_RULE, path, item, f"at most {MAX_NESTING_DEPTH} levels of lists and maps"
            )
        if isinstance(item, list | tuple):
            pending.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    return ValueProblem(TYPE_RULE, path, key, "maps with string keys")
                pending.append((child, f"{path}.{key}", depth + 1))
        else:
            return ValueProblem(
                TYPE_RULE, path, item, "a JSON value (string, number, boolean, list, map)"
            )
    return None


def is_json_value(value: Any) -> bool:
    return json_value_problem(value) is None


E = TypeVar("E", bound=Enum)


class FieldChecker:
    """Collects type violations for one object, then raises them together."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.violations: list[Violation] = []

    def _bad(self, path: str, value: Any, allowed: str, *, rule: str = TYPE_RULE) -> None:
        problem = {
            TYPE_RULE: f"{self.owner} field '{path}' has the wrong type.",
            NUMBER_RULE: f"{self.owner} field '{path}' is a number no API field can hold.",
            DEPTH_RULE: f"{self.owner} field '{path}' is nested too deeply.",
        }[rule]
        self.violations.append(
            Violation(
                rule=rule,
                path=path,
                problem=problem,
                value=value,
                allowed=allowed,
                fix=f"give '{path}' as {allowed}",
            )
        )

    def string(self, path: str, value: Any, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            self._bad(path, value, "a string" + (" or null" if optional else ""))

    def integer(self, path: str, value: Any, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        wide = isinstance(value, OversizedInteger) or (
            isinstance(value, int) and not isinstance(value, bool) and not is_int64(value)
        )
        if wide:
            self._bad(path, value, "an integer of at most 64 bits", rule=NUMBER_RULE)
        elif not is_integer(value):
            self._bad(path, value, "an integer" + (" or null" if optional else ""))

    def boolean(self, path: str, value: Any) -> None:
        if not isinstance(value, bool):
            self._bad(path, value, "true or false")

    def string_tuple(self, path: str, value: Any) -> None:
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            self._bad(path, value, "a list of strings")

    def string_mapping(self, path: str, value: Any) -> None:
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            self._bad(path, value, "a mapping of strings to strings")

    def json_mapping(self, path: str, value: Any) -> None:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            self._bad(path, value, "a mapping with string keys")
            return
        for key, item in value.items():
            problem = json_value_problem(item)
            if problem is not None:
                self._bad(
                    f"{path}.{key}{problem.path}", problem.value, problem.allowed, rule=problem.rule
                )

    def one_of(self, path: str, value: Any, allowed_type: type, what: str) -> None:
        if not isinstance(value, allowed_type):
            self._bad(path, value, what)

    def enum_member(self, path: str, value: Any, enum: type[E]) -> E | None:
        """``value`` as a member of ``enum`` (given as the member or its exact value)."""
        if isinstance(value, enum):
            return value
        for member in enum:
            if isinstance(value, str) and member.value == value:
                return member
        names = [str(member.value) for member in enum]
        meant = did_you_mean(value, names) if isinstance(value, str) else None
        self.violations.append(
            Violation(
                rule=TYPE_RULE,
                path=path,
                problem=f"{self.owner} field '{path}' is not one of its values.",
                value=value,
                allowed=", ".join(names) + " (exactly as written)",
                fix=f"did you mean '{meant}'?" if meant else f"use one of {', '.join(names)}",
            )
        )
        return None

    def tuple_of(self, path: str, value: Any, item_type: type, what: str) -> None:
        if not isinstance(value, tuple) or not all(isinstance(v, item_type) for v in value):
            self._bad(path, value, what)

    def done(self) -> None:
        raise_if_any(self.violations)


def as_tuple(value: Any) -> Any:
    """Lists become tuples so value objects stay immutable; anything else is left for the checks."""
    return tuple(value) if isinstance(value, list) else value


# -- Constructor arguments ---------------------------------------------------------------------

P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=type)


def checked_arguments(owner: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Calls with unknown or missing arguments raise violations, not Python's TypeError.

    An unknown keyword is a SPEC-UNKNOWN-KEY violation with the likely name
    (``count=`` -> did you mean ``instance_count``?), a missing one a SPEC-REQUIRED violation.
    Well-formed calls run exactly as before: the arguments are only inspected when the call
    fails with a TypeError.
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return function(*args, **kwargs)
            except TypeError:
                try:
                    signature.bind(*args, **kwargs)
                except TypeError as error:
                    raise SpecValidationError(
                        _argument_violations(owner, signature, args, kwargs, error)
                    ) from None
                raise

        return call

    return decorate


def checked_constructor(cls: C) -> C:
    """``checked_arguments`` for a class's ``__init__``."""
    setattr(cls, "__init__", checked_arguments(cls.__name__)(cls.__dict__["__init__"]))  # noqa: B010
    return cls


def _argument_violations(
    owner: str,
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    error: TypeError,
) -> list[Violation]:
    names = [name for name in signature.parameters if name != "self"]
    unknown = [
        Violation(
            UNKNOWN_KEY_RULE,
            key,
            f"{owner} takes no argument '{key}'.",
            kwargs[key],
            ", ".join(names),
            unknown_key_fix(key, names),
        )
        for key in kwargs
        if key not in signature.parameters
    ]
    if unknown:
        return unknown
    try:
        given = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        given = None
    if given is not None:
        missing = [
            name
            for name, parameter in signature.parameters.items()
            if parameter.default is inspect.Parameter.empty
            and parameter.kind
            not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
            and name not in given
        ]
        if missing:
            return [
                Violation(
                    REQUIRED_RULE,
                    name,
                    f"{owner} needs '{name}'.",
                    None,
                    ", ".join(names),
                    f"pass {name}=...",
                )
                for name in missing
            ]
    return [
        Violation(
            TYPE_RULE,
            "",
            f"{owner} cannot take these arguments: {error}.",
            len(args),
            ", ".join(names),
            "pass the arguments by name",
        )
    ]


def frozen_mapping(value: Any) -> Any:
    return MappingProxyType(dict(value)) if isinstance(value, Mapping) else value


__all__ = [
    "DEPTH_RULE",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_INTEGER_LITERAL",
    "MAX_NESTING_DEPTH",
    "NUMBER_RULE",
    "REQUIRED_RULE",
    "TYPE_RULE",
    "UNKNOWN_KEY_RULE",
    "C",
    "E",
    "FieldChecker",
    "KeyedTwice",
    "OversizedInteger",
    "ValueProblem",
    "as_tuple",
    "checked_arguments",
    "checked_constructor",
    "frozen_mapping",
    "is_int64",
    "is_integer",
    "is_json_value",
    "json_value_problem",
]
