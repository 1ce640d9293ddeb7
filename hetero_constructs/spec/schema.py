"""The spec's schema: each field of each spec object declared once, with everything about it.

A field is declared in its class with ``spec_field(type, doc=..., ...)``: its type (how a
value is checked and normalized, and what shape it has in a spec file), its default, its
file key, its name in the SageMaker Python SDK, the CreateTrainingJob member it is sent as
(``api=``) and its doc. From that one declaration come the type checks (``check_fields``, run
by every spec object when it is built), the spec-file reader's keys and its required keys
(``spec.file.reader``), the writer (``spec.file.writer``), the field reference
(``docs/spec-fields.md``, ``spec.reference``) and, for a field with ``api=``, its place in the
request (``request.builder``), its API type (``checks.rules.values``) and, for an optional
field, the optional feature rules may need (``request.context``).

Adding a field is one declaration; a field of a new shape (neither a value, a list of
strings nor a mapping) also needs its reader and writer in ``spec.file``, and one the request
takes in a shape of its own (not as is under ``api=``) its part of the request builder.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar, dataclass_transform

from hetero_constructs.spec.fields import (
    FieldChecker,
    as_tuple,
    checked_constructor,
    frozen_mapping,
)

#: A field's shape in a spec file: a plain value, a list of strings, a mapping, or an object
#: shape of its own that ``spec.file`` reads and writes (named by the field type).
VALUE, STRINGS, MAPPING = "value", "strings", "mapping"


@dataclass(frozen=True)
class FieldType:
    """How a field's values are checked, normalized and shaped in a spec file.

    ``check(checker, path, value, optional)`` reports a wrong type and returns the value to
    keep (an enum member for its string, ...); ``optional``: ``None`` is a value of the field
    (its default), said in the message. ``None`` itself is never checked for such a field.
    """

    name: str  # as the reference shows it: "string", "list of strings", ...
    check: Callable[[FieldChecker, str, Any, bool], Any]
    file_shape: str = VALUE
    normalize: Callable[[Any], Any] = lambda value: value


def _checked(check: Callable[[FieldChecker, str, Any, bool], None]) -> Callable[..., Any]:
    def run(checker: FieldChecker, path: str, value: Any, optional: bool) -> Any:
        check(checker, path, value, optional)
        return value

    return run


STRING = FieldType("string", _checked(lambda c, p, v, o: c.string(p, v, optional=o)))
INTEGER = FieldType("integer", _checked(lambda c, p, v, o: c.integer(p, v, optional=o)))
BOOLEAN = FieldType("boolean", _checked(lambda c, p, v, o: c.boolean(p, v)))
STRING_LIST = FieldType(
    "list of strings", _checked(lambda c, p, v, o: c.string_tuple(p, v)), STRINGS, as_tuple
)
STRING_MAP = FieldType(
    "map of strings to strings",
    _checked(lambda c, p, v, o: c.string_mapping(p, v)),
    MAPPING,
    frozen_mapping,
)
JSON_MAP = FieldType(
    "map of JSON values",
    _checked(lambda c, p, v, o: c.json_mapping(p, v)),
    MAPPING,
    frozen_mapping,
)


def enum_type(enum: type[Enum]) -> FieldType:
    """One of ``enum``'s values, exactly as written; kept as the member."""

    def check(checker: FieldChecker, path: str, value: Any, optional: bool) -> Any:
        member = checker.enum_member(path, value, enum)
        return value if member is None else member

    return FieldType("one of " + ", ".join(str(m.value) for m in enum), check)


def objects_type(cls: type, what: str, *, shape: str) -> FieldType:
    """A list of spec objects (``cls``); ``what`` is said when the value is something else."""
    return FieldType(
        f"list of {cls.__name__}",
        _checked(lambda c, p, v, o: c.tuple_of(p, v, cls, what)),
        shape,
        as_tuple,
    )


def object_type(cls: type, what: str, *, shape: str) -> FieldType:
    """One spec object (``cls``)."""
    return FieldType(cls.__name__, _checked(lambda c, p, v, o: c.one_of(p, v, cls, what)), shape)


class _Same:
    def __repr__(self) -> str:
        return "<the field's name>"


SAME = _Same()


@dataclass(frozen=True)
class SpecField:
    """One declared field of a spec object."""

    name: str
    type: FieldType
    doc: str
    #: The key in a spec file's mapping (``None``: the field is not a key of the mapping).
    file_key: str | None
    #: The SageMaker Python SDK's name for it (``None``: the SDK has none).
    sdk: str | None
    #: The default, or ``dataclasses.MISSING`` for a required field.
    default: Any
    #: Required in a spec file although the Python API has a default.
    file_required: bool
    #: Other keys of a spec file read into it (an SDK spelling, a key of its own).
    extra_file_keys: tuple[str, ...]
    #: The CreateTrainingJob member the value is sent as, as it is, when set (a dotted path,
    #: ``"ResourceConfig.KeepAlivePeriodInSeconds"``); ``None``: the request builder shapes
    #: it (or it is not sent). Its type is the model's (botocore), never restated here.
    api: str | None = None

    @property
    def key(self) -> str:
        """The file key of a field that is a key of its mapping."""
        if self.file_key is None:
            raise ValueError(f"{self.name} is not a key of its spec-file mapping")
        return self.file_key

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING

    @property
    def required_in_file(self) -> bool:
        return self.required or self.file_required

    @property
    def optional(self) -> bool:
        """``None`` is a value of the field (its default)."""
        return self.default is None


_SCHEMA = "hetero_constructs.schema"
# A member path of the request: structure members by name, dot-separated (no lists or maps).
_API_PATH = re.compile(r"[A-Z][A-Za-z0-9]*(\.[A-Z][A-Za-z0-9]*)*")


def spec_field(
    type: FieldType,
    *,
    doc: str,
    default: Any = dataclasses.MISSING,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    file_key: str | _Same | None = SAME,
    sdk: str | _Same | None = SAME,
    file_required: bool = False,
    extra_file_keys: tuple[str, ...] = (),
    api: str | None = None,
) -> Any:
    """Declare a field of a spec object (a ``dataclasses.field`` carrying its schema).

    ``api`` names the CreateTrainingJob member the value is sent as when it is set (a value
    other than ``None``, ``""`` or ``False``; a field with another default is always sent).
    """
    if api is not None and not _API_PATH.fullmatch(api):
        raise ValueError(
            f"api={api!r} is not a member path of the request: use the API's member names, "
            'dot-separated, e.g. "ResourceConfig.KeepAlivePeriodInSeconds"'
        )
    declared = {
        "type": type,
        "doc": doc,
        "file_key": file_key,
        "sdk": sdk,
        "file_required": file_required,
        "extra_file_keys": extra_file_keys,
        "api": api,
    }
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata={_SCHEMA: declared})
    return dataclasses.field(default=default, metadata={_SCHEMA: declared})


C = TypeVar("C", bound=type)


@dataclass_transform(frozen_default=True, field_specifiers=(spec_field, dataclasses.field))
def spec_object(cls: C) -> C:
    """A frozen dataclass whose fields are declared with ``spec_field``.

    Its constructor reports unknown and missing arguments as violations
    (``checked_constructor``); its ``__post_init__`` should call ``check_fields``.
    """
    built: Any = dataclasses.dataclass(frozen=True)(cls)
    fields = []
    for item in dataclasses.fields(built):
        declared = item.metadata[_SCHEMA]
        if item.default_factory is not dataclasses.MISSING:
            default = item.default_factory()
        else:
            default = item.default
        fields.append(
            SpecField(
                name=item.name,
                type=declared["type"],
                doc=declared["doc"],
                file_key=item.name if declared["file_key"] is SAME else declared["file_key"],
                sdk=item.name if declared["sdk"] is SAME else declared["sdk"],
                default=default,
                file_required=declared["file_required"],
                extra_file_keys=declared["extra_file_keys"],
                api=declared["api"],
            )
        )
    built.__spec_fields__ = tuple(fields)
    checked: C = checked_constructor(built)
    return checked


def schema_of(cls: type) -> tuple[SpecField, ...]:
    """The declared fields of a spec object class, in declaration order."""
    fields: tuple[SpecField, ...] = cls.__dict__["__spec_fields__"]
    return fields


def check_fields(instance: Any) -> None:
    """Normalize and check every declared field of ``instance``; raise every wrong type at once.

    Lists become tuples and mappings read-only, enum values their members; the fields are
    checked in declaration order.
    """
    cls = type(instance)
    checker = FieldChecker(cls.__name__)
    for declared in schema_of(cls):
        value = declared.type.normalize(getattr(instance, declared.name))
        if value is None and declared.optional:
            kept = None
        else:
            kept = declared.type.check(checker, declared.name, value, declared.optional)
        object.__setattr__(instance, declared.name, kept)
    checker.done()


@functools.cache
def file_keys(cls: type) -> frozenset[str]:
    """The keys a spec file's mapping for ``cls`` may have."""
    return frozenset(
        key
        for declared in schema_of(cls)
        if declared.file_key is not None
        for key in (declared.file_key, *declared.extra_file_keys)
    )


def defaults(cls: type) -> Mapping[str, Any]:
    """The default of each field that has one."""
    return {d.name: d.default for d in schema_of(cls) if not d.required}


__all__ = [
    "BOOLEAN",
    "INTEGER",
    "JSON_MAP",
    "MAPPING",
    "SAME",
    "STRING",
    "STRINGS",
    "STRING_LIST",
    "STRING_MAP",
    "VALUE",
    "FieldType",
    "SpecField",
    "check_fields",
    "defaults",
    "enum_type",
    "file_keys",
    "object_type",
    "objects_type",
    "schema_of",
    "spec_field",
    "spec_object",
]
