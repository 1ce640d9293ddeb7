"""Where moto's Step Functions evaluates expressions and calls services thinner than AWS.

JSONata through the pure-Python ``jsonata-python`` (moto's own evaluator needs a JVM), and
service integrations with their parameters and responses named as the service names them (see
``moto_gaps`` for the list of gaps).
"""

from __future__ import annotations

import datetime
import functools
from typing import Any

from hetero_constructs.local.patching import Patches


def evaluate_jsonata(expression: str) -> Any:
    """Evaluate a complete JSONata expression (moto has already bound ``$states`` and variables)."""
    import jsonata
    from moto.stepfunctions.parser.asl.jsonata.jsonata import JSONataException

    try:
        result = jsonata.Jsonata(expression).evaluate(None)
    except Exception as error:
        raise JSONataException("States.QueryEvaluationError", str(error)) from error
    return _plain_json(result)


def _plain_json(value: Any) -> Any:
    """jsonata-python's sequences and numbers as plain JSON values."""
    if isinstance(value, dict):
        return {str(key): _plain_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_json(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)  # a function or another engine object: never valid state data


def _encode_declarations(bindings: dict[str, Any]) -> str:
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    return "".join(
        f"{reference}:={to_json_str(value, separators=(',', ':'))};"
        for reference, value in bindings.items()
    )


def jsonata(patches: Patches) -> None:
    from moto.stepfunctions.parser.asl.eval import states, variable_store
    from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata

    patches.replace(moto_jsonata, "_eval_jsonata", evaluate_jsonata)
    for module in (moto_jsonata, states, variable_store):
        patches.replace(module, "encode_jsonata_variable_declarations", _encode_declarations)


@functools.cache
def _operation_model(service: str, action: str) -> Any:
    """The botocore operation whose snake_case name is ``action``, or None."""
    from botocore import xform_name

    try:
        model = _botocore_session().get_service_model(service)
    except Exception:  # an unknown service: leave the call as it is
        return None
    for operation in model.operation_names:
        if xform_name(operation) == action:
            return model.operation_model(operation)
    return None


@functools.cache
def _botocore_session() -> Any:
    import botocore.session

    return botocore.session.get_session()


def service_normalisation(patches: Patches) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service as module,
    )

    service_class = module.StateTaskService

    def normalise_parameters(
        task: Any,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        operation = _operation_model(
            task._get_boto_service_name(boto_service_name),
            task._get_boto_service_action(service_action_name),
        )
        if operation is not None and operation.input_shape is not None:
            task._to_boto_request(parameters, operation.input_shape)

    def normalise_response(
        task: Any,
        response: Any,
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        operation = _operation_model(
            task._get_boto_service_name(boto_service_name),
            task._get_boto_service_action(service_action_name),
        )
        if operation is not None and operation.output_shape is not None:
            task._from_boto_response(response, operation.output_shape)
        _epoch_millis_in_place(response)

    patches.replace(service_class, "_normalise_parameters", normalise_parameters)
    patches.replace(service_class, "_normalise_response", normalise_response)


def _epoch_millis_in_place(value: Any) -> None:
    """Timestamps in an integration's result are epoch milliseconds, as the service gives them."""
    items: Any = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in list(items):
        if isinstance(item, datetime.datetime):
            value[key] = int(item.timestamp() * 1000)
        else:
            _epoch_millis_in_place(item)


__all__ = [
    "evaluate_jsonata",
    "jsonata",
    "service_normalisation",
]
