"""The spec fields sent as they are: each one's CreateTrainingJob member and its API type.

A field declared with ``spec_field(api="ResourceConfig.KeepAlivePeriodInSeconds")`` is sent
under that member when it is set (``request.builder``); whether the member is an integer, a
string or a boolean is read from botocore's model, never restated. A member the model lacks,
or whose type is not the field's, is refused the first time the class is used.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from hetero_constructs.service import model as service_model
from hetero_constructs.spec.schema import BOOLEAN, INTEGER, STRING, SpecField, schema_of

# Smithy's integer types, as botocore's model names them, and their ranges.
INTEGER_RANGES = {"integer": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
# The model types a field's type may be sent as.
_MODEL_TYPES = {
    INTEGER.name: frozenset(INTEGER_RANGES),
    STRING.name: frozenset({"string"}),
    BOOLEAN.name: frozenset({"boolean"}),
}


class ApiField(NamedTuple):
    """A spec field sent as it is, under its member of the request, when it is set: a boolean
    when true, a field with a default of its own always, another when not ``None`` or ``""``."""

    name: str
    member: str  # the dotted path, as declared
    steps: tuple[str, ...]
    #: The member's type in botocore's model: "integer", "long", "string" or "boolean".
    model_type: str
    #: The member is an integer (an integral float is sent as an int).
    integer: bool
    #: The member is a boolean (sent when true).
    boolean: bool
    #: Sent whatever its value (a field with a default of its own, not a boolean).
    always: bool


def _api_field(owner: type, declared: SpecField, member: str) -> ApiField:
    try:
        model_type = service_model.shape_at(member).type_name
    except (KeyError, AssertionError):
        raise ValueError(
            f"{owner.__name__}.{declared.name}: api={member!r} is not a member of "
            "CreateTrainingJob's request in botocore's model; name the member as the API does"
        ) from None
    allowed = _MODEL_TYPES.get(declared.type.name, frozenset())
    if model_type not in allowed:
        raise ValueError(
            f"{owner.__name__}.{declared.name}: a {declared.type.name} field cannot be sent as "
            f"{member}, a {model_type} in botocore's model; send it from the request builder "
            "instead"
        )
    boolean = model_type == "boolean"
    return ApiField(
        declared.name,
        member,
        tuple(member.split(".")),
        model_type,
        integer=model_type in INTEGER_RANGES,
        boolean=boolean,
        always=not boolean and not declared.optional,
    )


def api_fields(cls: type) -> tuple[ApiField, ...]:
    """The fields of spec class ``cls`` declared with ``api=``, in declaration order."""
    return _api_fields(cls)


# Cached per class behind a plain function: mypy takes no frozen dataclass class as Hashable.
@cache
def _api_fields(cls: type) -> tuple[ApiField, ...]:
    return tuple(
        _api_field(cls, declared, declared.api)
        for declared in schema_of(cls)
        if declared.api is not None
    )


__all__ = [
    "INTEGER_RANGES",
    "ApiField",
    "api_fields",
]
