"""A speed-up kept behind this module: a clean request, answered by generated code.

Most requests break nothing, and the validators of ``request_validator`` still pay a call and
a path step per member to find that out. For a request without a problem, one function per
structure shape, written as Python source on the structure's first use, answers with every
check inlined: True only when the validators would find no problem and flag nothing. For
anything else (a problem, a construct only botocore judges, a tuple for a list, a read-only
mapping) it says False, and the validators run to report it in their order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import lru_cache
from typing import Any

from botocore.model import ListShape, MapShape, Shape, StructureShape

from hetero_constructs.service.model import (
    botocore_minimum,
    input_shape,
    is_header_json,
    size_limits,
)
from hetero_constructs.service.patterns import TOTAL_PATTERNS, lazy_pattern


def _length_only(shape: Shape) -> tuple[int, int] | None:
    """For a string shape limited by its length alone: the lengths that pass every check.

    Such a shape's clean check needs no Python step per value (``_strings_within``).
    """
    pattern = shape.metadata.get("pattern")
    if shape.type_name != "string" or getattr(shape, "enum", None):
        return None
    if (pattern is not None and pattern not in TOTAL_PATTERNS) or is_header_json(shape):
        return None
    _, _, floor, ceiling, botocore_floor = size_limits(shape)
    return max(floor, botocore_floor), ceiling


class _CleanCheckWriter:
    """Writes and compiles the clean-value check of each structure shape, on first use."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"_strings_within": _strings_within}
        self._functions: dict[str, str] = {}  # structure shape name -> function name
        self._constants: dict[Any, str] = {}  # enum set or pattern text -> name in namespace

    def function(self, shape: StructureShape) -> str:
        """The name of the structure's check; a stub writes and compiles it on its first call.

        (The model's shape names are identifiers.)
        """
        name = self._functions.get(shape.name)
        if name is None:
            name = self._functions[shape.name] = f"_{shape.name}"
            self.namespace[name] = lambda value: self.compiled(shape)(value)
        return name

    def compiled(self, shape: StructureShape) -> Callable[[Any], bool]:
        """The structure's check, written and compiled now (it replaces the stub)."""
        name = self.function(shape)
        source = "\n".join(self._structure(shape, name))
        exec(compile(source, f"<clean {shape.name}>", "exec"), self.namespace)
        check: Callable[[Any], bool] = self.namespace[name]
        return check

    def _constant(self, value: Any, key: Any = None) -> str:
        """The name under which the generated code reads ``value`` (one per distinct ``key``)."""
        key = value if key is None else key
        name = self._constants.get(key)
        if name is None:
            name = self._constants[key] = f"_c{len(self._constants)}"
            self.namespace[name] = value
        return name

    def _structure(self, shape: StructureShape, name: str) -> list[str]:
        lines = [f"def {name}(value):"]
        if shape.is_tagged_union or shape.is_document_type:
            return [*lines, "    return False"]
        known = self._constant(frozenset(shape.members))
        wrong = f"value.__class__ is not dict or not value.keys() <= {known}"
        if set(shape.required_members) == set(shape.members):
            wrong = f"value.__class__ is not dict or value.keys() != {known}"
        elif shape.required_members:
            required = self._constant(frozenset(shape.required_members))
            wrong += f" or not {required} <= value.keys()"
        lines += [f"    if {wrong}:", "        return False"]
        for member_name, member in shape.members.items():
            lines += [
                f"    if {member_name!r} in value:",
                f"        member = value[{member_name!r}]",
            ]
            lines += self._value(member, "member", "        ", 1)
        return [*lines, "    return True"]

    def _value(self, shape: Shape, value: str, indent: str, depth: int) -> list[str]:
        """Lines that return False unless the variable ``value`` holds a clean ``shape``."""
        if is_header_json(shape):
            return [f"{indent}return False"]
        if isinstance(shape, StructureShape):
            return [f"{indent}if not {self.function(shape)}({value}):", f"{indent}    return False"]
        # The model's minimum is botocore's too; botocore adds 1 for host labels.
        low, high = botocore_minimum(shape), shape.metadata.get("max")
        size_low = low or None  # a size is never below 0: a minimum of 0 needs no check
        kind = shape.type_name
        if isinstance(shape, ListShape):
            item = f"item{depth}"
            head = [f"{indent}for {item} in {value}:"]
            inner = self._value(shape.member, item, indent + "    ", depth + 1)
            wrong = [f"{value}.__class__ is not list", *_outside(f"len({value})", size_low, high)]
        elif isinstance(shape, MapShape):
            size_low = shape.metadata.get("min") or None  # botocore checks no map size
            wrong = [f"{value}.__class__ is not dict", *_outside(f"len({value})", size_low, high)]
            key_lengths, value_lengths = _length_only(shape.key), _length_only(shape.value)
            if key_lengths and value_lengths:  # hyperparameters: no Python step per entry
                wrong.append(f"not _strings_within({value}.keys(), *{key_lengths})")
                wrong.append(f"not _strings_within({value}.values(), *{value_lengths})")
                head, inner = [], []
            else:
                key, item = f"key{depth}", f"item{depth}"
                head = [f"{indent}for {key}, {item} in {value}.items():"]
                inner = self._value(shape.key, key, indent + "    ", depth + 1)
                inner += self._value(shape.value, item, indent + "    ", depth + 1)
        elif kind == "string":
            head, inner = [], []
            wrong = [f"{value}.__class__ is not str", *_outside(f"len({value})", size_low, high)]
            enum = frozenset(getattr(shape, "enum", None) or ())
            if enum:
                wrong.append(f"{value} not in {self._constant(enum)}")
            pattern = lazy_pattern(shape.metadata.get("pattern"))
            if pattern is not None:
                name = self._constant(pattern, key=pattern.source)
                wrong.append(f"not {name}.fullmatch({value})")
        elif kind in ("integer", "long"):
            head, inner = [], []
            wrong = [f"{value}.__class__ is not int", *_outside(value, low, high)]
        elif kind == "boolean":
            head, inner = [], []
            wrong = [f"{value}.__class__ is not bool"]
        else:  # numbers, blobs, timestamps: rare enough to leave to the validators
            return [f"{indent}return False"]
        return [f"{indent}if {' or '.join(wrong)}:", f"{indent}    return False", *head, *inner]


def _strings_within(texts: Collection[Any], low: int, high: int) -> bool:
    """Every one of ``texts`` is a str of ``low`` to ``high`` characters (loops run in C)."""
    if not texts:
        return True
    if set(map(type, texts)) != {str}:
        return False
    return low <= min(map(len, texts)) and max(map(len, texts)) <= high


def _outside(measure: str, low: int | None, high: int | None) -> list[str]:
    """The conditions under which ``measure`` falls outside ``low`` to ``high`` (either may be
    missing)."""
    if low is not None and high is not None:
        return [f"not {low} <= {measure} <= {high}"]
    if low is not None:
        return [f"{measure} < {low}"]
    return [f"{measure} > {high}"] if high is not None else []


@lru_cache(maxsize=1)
def clean_check() -> Callable[[Any], bool]:
    return _CleanCheckWriter().compiled(input_shape())


__all__ = [
    "clean_check",
]
