"""The "Step Functions Execution Status Change" event of an execution, as EventBridge gets it."""

from __future__ import annotations

from typing import Any

from hetero_constructs.local import moto_gaps
from hetero_constructs.local.events import EventBus
from hetero_constructs.local.patching import epoch_millis

EXECUTION_EVENT_SOURCE = "aws.states"
EXECUTION_EVENT_TYPE = "Step Functions Execution Status Change"


def execution_status_event(bus: EventBus, execution: Any, status: str) -> dict[str, Any]:
    """The event for moto's ``execution`` entering ``status`` (in ``bus``'s envelope)."""
    output = execution.output if status == "SUCCEEDED" else None
    detail = {
        "executionArn": execution.exec_arn,
        "stateMachineArn": execution.state_machine.arn,
        "name": execution.name,
        "status": status,
        "startDate": epoch_millis(execution.start_date),
        "stopDate": epoch_millis(execution.stop_date) if status != "RUNNING" else None,
        "input": moto_gaps.dumps(execution.input_data),
        "output": moto_gaps.dumps(output) if output is not None else None,
        "inputDetails": {"included": True},
        "outputDetails": {"included": True} if output is not None else None,
        "error": execution.error,
        "cause": execution.cause,
    }
    return bus.envelope(EXECUTION_EVENT_SOURCE, EXECUTION_EVENT_TYPE, detail, [execution.exec_arn])


__all__ = ["EXECUTION_EVENT_SOURCE", "EXECUTION_EVENT_TYPE", "execution_status_event"]
