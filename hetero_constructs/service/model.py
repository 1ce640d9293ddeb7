"""SageMaker's API schema, read from botocore's service model.

botocore's own ``ParamValidator`` checks only types, required members and minimums. The
maximums, patterns and enums are in the same model; this module reads them so that the rules
can enforce them. Nothing here is copied by hand.

The whole-request check is one validator per model shape, built once per process: a single
pass over a request finds every maximum, minimum, pattern and enum it breaks and tells whether
botocore's ``ParamValidator`` would reject it (whose own report is produced only then).
"""

from __future__ import annotations

import math
import os
import re
import sys
import unicodedata
import warnings
from collections.abc import Callable, Collection, Mapping
from decimal import Decimal
from functools import cache, lru_cache
from typing import Any, NamedTuple

import botocore.loaders
from botocore.model import ListShape, MapShape, ServiceModel, Shape, StructureShape

OPERATION = "CreateTrainingJob"

# -- Model patterns are Java regular expressions ------------------------------------------------


class JavaClass(NamedTuple):
    """How one Java character class of the model is written for Python's ``re``.

    ``members`` goes inside a character set. ``exact`` is False where Python has no such
    class and a wider one stands in: a pattern may then accept a little more than the API
    (the service still rejects it), but never rejects what the API accepts.
    """

    members: str
    exact: bool
    note: str


# Unicode general categories (Java ``\p{L}`` and the like). Python's ``re`` knows word
# characters (``str.isalnum()`` and ``_``), whitespace and their complements only.
_CATEGORY_CLASSES = {
    "L": JavaClass(r"\w", False, "letters are word characters; \\w also takes digits and _"),
    "N": JavaClass(r"\w", False, "numbers are word characters; \\w also takes letters and _"),
    # Listed one by one (``_separators``): \s would also take tabs and newlines, which the
    # API's tag pattern forbids.
    "Z": JavaClass("", True, "space, line and paragraph separators, listed one by one"),
    "M": JavaClass(r"\W", False, "marks are non-word characters; \\W takes every other one"),
    "P": JavaClass(r"\W_", False, "punctuation is non-word characters and the underscore (Pc)"),
    "S": JavaClass(r"\W", False, "symbols are non-word characters; \\W takes every other one"),
    "C": JavaClass(r"\W", False, "other (controls, format) are non-word characters"),
}
# Java's POSIX classes are ASCII-only (without UNICODE_CHARACTER_CLASS): exact translations.
_POSIX_CLASSES = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": r"\x00-\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": r"!-/:-@\[-`{-~",
    "Graph": r"!-~",
    "Print": r" -~",
    "Blank": r" \t",
    "Cntrl": r"\x00-\x1f\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": r" \t\n\x0b\f\r",
}
JAVA_CLASSES: dict[str, JavaClass] = {
    **{f"\\p{{{name}}}": java for name, java in _CATEGORY_CLASSES.items()},
    **{f"\\p{name}": java for name, java in _CATEGORY_CLASSES.items()},
    **{
        f"\\p{{{name}}}": JavaClass(members, True, f"POSIX {name} (ASCII) in Java")
        for name, members in _POSIX_CLASSES.items()
    },
}

_TOKENS = r"""
      (?P<java_class>\\[pP](?:\{\w+\}|[A-Za-z]))
    | \\u(?P<high>[dD][89abAB][0-9a-fA-F]{2})\\u(?P<low>[dD][c-fC-F][0-9a-fA-F]{2})
    | (?P<quoted>\\[QE])
    | \\.
    | (?P<set_open>\[\^?\]?)
    | (?P<anchor_repeat>\$\{\d+(?:,\d*)?\})
    | (?P<intersection>&&)
    | .
    """
# Constructs that read a group's text; without them, no group's capture is ever read.
_GROUP_READERS = r"\\[1-9]|\(\?P=|\\k<|\(\?\("


@cache
def _separators() -> str:
    """Unicode category Z (space, line and paragraph separators), escaped for a set."""
    found = (chr(code) for code in range(0x10000))  # every separator is in the BMP
    return "".join(re.escape(char) for char in found if unicodedata.category(char)[0] == "Z")


class UntranslatablePattern(ValueError):
    """A Java construct with no Python equivalent that keeps the pattern's meaning."""


def translate_pattern(pattern: str, *, keep_groups: bool = False) -> str:
    """A model pattern (Java syntax) rewritten for Python's ``re``.

    - ``\\p{...}`` classes become the Python classes of ``JAVA_CLASSES``;
    - a UTF-16 surrogate pair escape (``\\uD800\\uDC00``) becomes the code point it encodes;
    - a quantifier on the end anchor (``${1,128}``) is dropped: it repeats a zero-width match.

    - groups become non-capturing (``(?:``): a full match never reads what they captured, and
      Python's engine repeats a non-capturing group faster. ``keep_groups`` keeps them, and
      so does a pattern with a backreference.

    Raises ``UntranslatablePattern`` for negated classes, nested sets and ``\\Q...\\E``.
    """
    out: list[str] = []
    in_set = False
    keep_groups = keep_groups or re.search(_GROUP_READERS, pattern) is not None
    for token in re.finditer(_TOKENS, pattern, re.VERBOSE | re.DOTALL):
        text = token.group()
        if token.group("java_class"):
            java = JAVA_CLASSES.get(text)
            if java is None:
                raise UntranslatablePattern(f"{text} in /{pattern}/")
            members = _separators() if java is _CATEGORY_CLASSES["Z"] else java.members
            out.append(members if in_set else f"[{members}]")
        elif token.group("high"):
            high, low = int(token.group("high"), 16), int(token.group("low"), 16)
            out.append(f"\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08X}")
        elif token.group("quoted") or (in_set and token.group("intersection")):
            raise UntranslatablePattern(f"{text} in /{pattern}/")
        elif token.group("set_open"):
            if in_set:
                raise UntranslatablePattern(f"nested set in /{pattern}/")
            in_set = True
            out.append(text)
        elif text == "]" and in_set:
            in_set = False
            out.append(text)
        elif token.group("anchor_repeat") and not in_set:
            out.append("$")
        elif text == "(" and not in_set and not keep_groups and pattern[token.end() :][:1] != "?":
            out.append("(?:")
        else:
            out.append(text)
    return "".join(out)


# Patterns that could not be translated; they are not enforced (the service still is).
UNCHECKED_PATTERNS: set[str] = set()


@cache
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a model pattern for a full match (the model's patterns carry no anchors).

    A pattern that cannot be translated is recorded in ``UNCHECKED_PATTERNS`` and accepts
    everything, so that a spec gets a verdict from the other checks instead of an error.
    """
    try:
        return re.compile(translate_pattern(pattern), re.DOTALL)
    except (UntranslatablePattern, re.error) as error:
        UNCHECKED_PATTERNS.add(pattern)
        warnings.warn(f"model pattern not enforced: {error}", RuntimeWarning, stacklevel=2)
        return re.compile(".*", re.DOTALL)


# Patterns every string fully matches (with DOTALL): checking them would only cost time.
_TOTAL_PATTERNS = frozenset({".*", r"[\S\s]*", r"[\s\S]*"})
# Patterns every string but the empty one fully matches (with DOTALL).
_NON_EMPTY_PATTERNS = frozenset({".+", r"[\S\s]+", r"[\s\S]+"})


class _LazyPattern:
    """A model pattern compiled on its first use (a request touches few of the model's).

    ``fullmatch(value)`` is truthy exactly when the pattern matches all of ``value``.
    """

    __slots__ = ("fullmatch", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.fullmatch: Callable[[str], object] = (
            len if source in _NON_EMPTY_PATTERNS else self._compile_and_match
        )

    def _compile_and_match(self, value: str) -> object:
        self.fullmatch = compile_pattern(self.source).fullmatch
        return self.fullmatch(value)


def _lazy_pattern(pattern: str | None) -> _LazyPattern | None:
    return None if pattern is None or pattern in _TOTAL_PATTERNS else _LazyPattern(pattern)


# -- The model -----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _service_model() -> ServiceModel:
    # The loader a botocore session would use: AWS_DATA_PATH first (the Lambda package's model).
    loader = botocore.loaders.create_loader(os.environ.get("AWS_DATA_PATH"))
    return ServiceModel(loader.load_service_model("sagemaker", "service-2"), "sagemaker")


@lru_cache(maxsize=1)
def input_shape() -> StructureShape:
    shape = _service_model().operation_model(OPERATION).input_shape
    assert isinstance(shape, StructureShape)
    return shape


def shape_at(path: str) -> Shape:
    """The shape at a dotted path under the CreateTrainingJob input; ``[]`` steps into lists.

    ``"ResourceConfig.InstanceGroups[].InstanceGroupName"`` names the group-name string shape;
    ``{}`` steps into a map's values and ``{key}`` into its keys.
    """
    return _shape_at(path)


@cache
def _shape_at(path: str) -> Shape:
    shape: Shape = input_shape()
    for step in path.split("."):
        into_list = step.endswith("[]")
        name = step.removesuffix("[]")
        if name in ("{}", "{key}"):
            assert isinstance(shape, MapShape)
            shape = shape.value if name == "{}" else shape.key
            continue
        assert isinstance(shape, StructureShape), f"{path}: {name} is not under a structure"
        shape = shape.members[name]
        if into_list:
            assert isinstance(shape, ListShape)
            shape = shape.member
    return shape


class Bounds(NamedTuple):
    """The constraints the model puts on one shape."""

    minimum: int | None
    maximum: int | None
    pattern: str | None
    enum: tuple[str, ...]

    def describe_length(self, unit: str = "characters") -> str:
        low = self.minimum if self.minimum is not None else 0
        if self.maximum is None:
            return f"at least {low} {unit}"
        return f"{low} to {self.maximum} {unit}"


_BOUNDS: dict[str, Bounds] = {}


def bounds(path: str) -> Bounds:
    """The constraints of the shape at ``path`` (see ``shape_at``), read once per path."""
    found = _BOUNDS.get(path)
    if found is None:
        shape = shape_at(path)
        meta = shape.metadata
        found = _BOUNDS[path] = Bounds(
            minimum=meta.get("min"),
            maximum=meta.get("max"),
            pattern=meta.get("pattern"),
            enum=tuple(getattr(shape, "enum", None) or ()),
        )
    return found


def _fits_function(shape_bounds: Bounds) -> Callable[[str], bool]:
    low = shape_bounds.minimum or 0
    high = sys.maxsize if shape_bounds.maximum is None else shape_bounds.maximum
    pattern = _lazy_pattern(shape_bounds.pattern)
    if pattern is None:
        return lambda value: low <= len(value) <= high
    return lambda value: low <= len(value) <= high and bool(pattern.fullmatch(value))


# Model path -> whether a string fits the length and pattern of the shape there.
STRING_FITS: dict[str, Callable[[str], bool]] = {}


def string_fits(path: str) -> Callable[[str], bool]:
    """The test of a string against the length and pattern at ``path``, built once per path.

    ``STRING_FITS.get(path)`` finds it without a call once built.
    """
    found = STRING_FITS.get(path)
    if found is None:
        found = STRING_FITS[path] = _fits_function(bounds(path))
    return found


def matches(path: str, value: str) -> bool:
    """True when ``value`` fits the pattern and length bounds of the shape at ``path``."""
    return string_fits(path)(value)


_ENUM_VALUES: dict[str, frozenset[str]] = {}


def enum_values(path: str) -> frozenset[str]:
    """The enum of the shape at ``path`` as a set (empty when the shape has none)."""
    found = _ENUM_VALUES.get(path)
    if found is None:
        found = _ENUM_VALUES[path] = frozenset(bounds(path).enum)
    return found


def training_instance_types() -> frozenset[str]:
    """The ``TrainingInstanceType`` enum."""
    return enum_values("ResourceConfig.InstanceType")


@cache
def dns_suffix(region: str) -> str | None:
    """The partition DNS suffix of a region (``amazonaws.com``, ``amazonaws.com.cn``, ...)."""
    endpoints = botocore.loaders.create_loader().load_data("endpoints")
    for partition in endpoints["partitions"]:
        if region in partition.get("regions", {}) or re.match(partition["regionRegex"], region):
            return str(partition["dnsSuffix"])
    return None


# -- Whole-request checks --------------------------------------------------------------------


class ShapeProblem(NamedTuple):
    """One constraint of the model that a request breaks, where, and what is allowed."""

    path: str
    problem: str
    value: Any
    allowed: str


class RequestVerdict(NamedTuple):
    """Every model constraint a request breaks, and botocore's report when it rejects it."""

    problems: list[ShapeProblem]
    botocore_report: str | None


# A validator takes (value, where, problems) and returns flags. ``where`` is the path as a
# linked tuple (parent, step kind, step), rendered only when a problem is found.
_Where = tuple[Any, int, Any] | None
_Validator = Callable[[Any, _Where, list[ShapeProblem]], int]
_REJECTED = 1  # botocore's ParamValidator rejects the value
_UNDECIDED = 2  # a construct only botocore's ParamValidator judges (documents, unions, ...)
_MEMBER, _INDEX, _KEY, _VALUE = range(4)


def _render(where: _Where) -> str:
    steps: list[tuple[int, Any]] = []
    while where is not None:
        where, kind, step = where
        steps.append((kind, step))
    path = ""
    for kind, step in reversed(steps):
        if kind == _MEMBER:
            path = f"{path}.{step}" if path else step
        elif kind == _INDEX:
            path = f"{path}[{step}]"
        elif kind == _KEY:
            path = f"{path} key {step!r}"
        else:
            path = f"{path}.{step}"
    return path


def _range(low: int | None, high: int | None, unit: str) -> str:
    suffix = f" {unit}" if unit else ""
    if high is None:
        return f"at least {low}{suffix}"
    if low is None:
        return f"at most {high}{suffix}"
    return f"{low} to {high}{suffix}"


def _size_limits(shape: Shape) -> tuple[int | None, int | None, int, int, int]:
    """min, max, and the three as plain numbers for sizes: min (0), max, botocore's min (0)."""
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    botocore_low = _botocore_minimum(shape)
    return (
        low,
        high,
        0 if low is None else low,
        sys.maxsize if high is None else high,
        0 if botocore_low is None else botocore_low,
    )


def _botocore_minimum(shape: Shape) -> int | None:
    """The minimum botocore enforces: the model's, or 1 for host-label members."""
    if "min" in shape.metadata:
        return int(shape.metadata["min"])
    return 1 if shape.serialization.get("hostLabel") else None


class _ValidatorBuilder:
    """Builds one validator per shape; structures are registered first, so cycles work."""

    def __init__(self) -> None:
        self._built: dict[tuple[str, bool, bool], _Validator] = {}

    def build(self, shape: Shape) -> _Validator:
        serialization = shape.serialization
        key = (
            shape.name,
            bool(serialization.get("hostLabel")),
            bool(serialization.get("jsonvalue")),
        )
        found = self._built.get(key)
        if found is None:
            found = self._build(shape, key)
            self._built[key] = found
        return found

    def _build(self, shape: Shape, key: tuple[str, bool, bool]) -> _Validator:
        if isinstance(shape, StructureShape):
            return self._structure(shape, key)
        if isinstance(shape, ListShape):
            validator = self._list(shape)
        elif isinstance(shape, MapShape):
            validator = self._map(shape)
        elif shape.type_name == "string":
            validator = _string(shape)
        elif shape.type_name in ("integer", "long"):
            validator = _integer(shape)
        elif shape.type_name in ("double", "float"):
            validator = _number(shape)
        elif shape.type_name == "boolean":
            validator = _boolean
        else:  # blob, timestamp: only botocore's own checks
            validator = _undecided
        if _special(shape):
            return _also_undecided(validator)
        return validator

    def _structure(self, shape: StructureShape, key: tuple[str, bool, bool]) -> _Validator:
        members: dict[str, _Validator] = {}
        required = frozenset(shape.required_members)
        special = _UNDECIDED if (shape.is_tagged_union or shape.is_document_type) else 0

        def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
            if not isinstance(value, dict):
                if isinstance(value, Mapping):  # checked for the model's limits all the same
                    for name, item in value.items():
                        member = members.get(name)
                        if member is not None:
                            member(item, (where, _MEMBER, name), problems)
                return _REJECTED
            flags = special
            if required and not required <= value.keys():
                flags = _REJECTED
            for name, item in value.items():
                member = members.get(name)
                if member is None:
                    flags |= _REJECTED
                else:
                    flags |= member(item, (where, _MEMBER, name), problems)
            return flags

        self._built[key] = validate
        for name, member_shape in shape.members.items():
            members[name] = self.build(member_shape)
        return validate

    def _list(self, shape: ListShape) -> _Validator:
        member = self.build(shape.member)
        low, high, floor, ceiling, botocore_floor = _size_limits(shape)

        def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
            if isinstance(value, list):
                found = problems
                size = len(value)
                if size < floor or size > ceiling:
                    allowed = _range(low, high, "items")
                    found.append(ShapeProblem(_render(where), f"has {size} items", value, allowed))
            elif isinstance(value, tuple):
                found = []  # botocore takes tuples; the model's limits are checked on lists
                size = len(value)
            else:
                return _REJECTED
            flags = _REJECTED if size < botocore_floor else 0
            for index, item in enumerate(value):
                flags |= member(item, (where, _INDEX, index), found)
            return flags

        return validate

    def _map(self, shape: MapShape) -> _Validator:
        key_validator = self.build(shape.key)
        value_validator = self.build(shape.value)
        low, high, floor, ceiling, _ = _size_limits(shape)  # botocore checks no map size

        def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
            if isinstance(value, dict):
                flags = 0
            elif isinstance(value, Mapping):
                flags = _REJECTED
            else:
                return _REJECTED
            size = len(value)
            if size < floor or size > ceiling:
                allowed = _range(low, high, "entries")
                problems.append(ShapeProblem(_render(where), f"has {size} entries", value, allowed))
            for key, item in value.items():
                flags |= key_validator(key, (where, _KEY, key), problems)
                flags |= value_validator(item, (where, _VALUE, key), problems)
            return flags

        return validate


def _length_only(shape: Shape) -> tuple[int, int] | None:
    """For a string shape limited by its length alone: the lengths that pass every check.

    Such a shape's clean check needs no Python step per value (``_strings_within``).
    """
    pattern = shape.metadata.get("pattern")
    if shape.type_name != "string" or getattr(shape, "enum", None):
        return None
    if (pattern is not None and pattern not in _TOTAL_PATTERNS) or _special(shape):
        return None
    _, _, floor, ceiling, botocore_floor = _size_limits(shape)
    return max(floor, botocore_floor), ceiling


def _special(shape: Shape) -> bool:
    """A JSON value in a header: botocore judges it with its own check."""
    serialization = shape.serialization
    return bool(serialization.get("jsonvalue")) and serialization.get("location") == "header"


def _string(shape: Shape) -> _Validator:
    low, high, floor, ceiling, botocore_floor = _size_limits(shape)
    enum_values: list[str] = list(getattr(shape, "enum", None) or ())
    enum = frozenset(enum_values)
    listed = ", ".join(enum_values[:8]) + (
        f", ... ({len(enum_values)} values)" if len(enum_values) > 8 else ""
    )
    pattern_text = shape.metadata.get("pattern")
    pattern = _lazy_pattern(pattern_text)

    def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
        if not isinstance(value, str):
            return _REJECTED
        size = len(value)
        if size < floor or size > ceiling:
            allowed = _range(low, high, "characters")
            problems.append(ShapeProblem(_render(where), f"has {size} characters", value, allowed))
        if enum and value not in enum:
            problems.append(
                ShapeProblem(_render(where), "is not one of the API's values", value, listed)
            )
        if pattern is not None and not pattern.fullmatch(value):
            problems.append(
                ShapeProblem(
                    _render(where), "does not match the API pattern", value, f"/{pattern_text}/"
                )
            )
        return _REJECTED if size < botocore_floor else 0

    return validate


def _integer(shape: Shape) -> _Validator:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    botocore_low = _botocore_minimum(shape)
    floor = -math.inf if low is None else low
    ceiling = math.inf if high is None else high

    def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
        if not isinstance(value, int):
            return _REJECTED
        if value < floor or value > ceiling:
            allowed = _range(low, high, "")
            problems.append(
                ShapeProblem(_render(where), "is out of the API's range", value, allowed)
            )
        return _REJECTED if botocore_low is not None and value < botocore_low else 0

    return validate


def _number(shape: Shape) -> _Validator:
    botocore_low = _botocore_minimum(shape)

    def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
        if not isinstance(value, float | Decimal | int):
            return _REJECTED
        return _REJECTED if botocore_low is not None and value < botocore_low else 0

    return validate


def _boolean(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
    return 0 if isinstance(value, bool) else _REJECTED


def _undecided(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
    return _UNDECIDED


def _also_undecided(validator: _Validator) -> _Validator:
    def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
        return validator(value, where, problems) | _UNDECIDED

    return validate


@lru_cache(maxsize=1)
def _request_validator() -> _Validator:
    return _ValidatorBuilder().build(input_shape())


# -- A clean request, answered by generated code -------------------------------------------------
#
# Most requests break nothing, and the validators above still pay a call and a path step per
# member to find that out. For a request without a problem, one function per structure shape,
# written as Python source on the structure's first use, answers with every check inlined:
# True only when the validators would find no problem and flag nothing. For anything else (a
# problem, a construct only botocore judges, a tuple for a list, a read-only mapping) it says
# False, and the validators run to report it in their order.


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
        if _special(shape):
            return [f"{indent}return False"]
        if isinstance(shape, StructureShape):
            return [f"{indent}if not {self.function(shape)}({value}):", f"{indent}    return False"]
        # The model's minimum is botocore's too; botocore adds 1 for host labels.
        low, high = _botocore_minimum(shape), shape.metadata.get("max")
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
            pattern = _lazy_pattern(shape.metadata.get("pattern"))
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
def _clean_check() -> Callable[[Any], bool]:
    return _CleanCheckWriter().compiled(input_shape())


def validate_request(request: Mapping[str, Any]) -> RequestVerdict:
    """One pass over the request: the model's broken constraints and botocore's verdict.

    botocore's report is the one ``ParamValidator`` writes; it runs only for a request the
    pass found it rejects (or one with a construct only botocore judges). A request the clean
    check accepts needs no pass.
    """
    if _clean_check()(request):
        return RequestVerdict([], None)
    problems: list[ShapeProblem] = []
    flags = _request_validator()(request, None, problems)
    report = _botocore_report(request) if flags else None
    return RequestVerdict(problems, report)


def check_request(request: Mapping[str, Any]) -> list[ShapeProblem]:
    """Every maximum, minimum, pattern and enum in the model that the request breaks."""
    problems: list[ShapeProblem] = []
    _request_validator()(request, None, problems)
    return problems


def botocore_validation_errors(request: Mapping[str, Any]) -> str | None:
    """botocore's own report for the request, or ``None`` when it passes."""
    if not _request_validator()(request, None, []):
        return None
    return _botocore_report(request)


def _botocore_report(request: Mapping[str, Any]) -> str | None:
    from botocore.validate import ParamValidator

    report = ParamValidator().validate(request, input_shape())
    return report.generate_report() if report.has_errors() else None
