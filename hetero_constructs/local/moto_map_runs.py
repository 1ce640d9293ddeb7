"""A Distributed Map's tolerated failures as the service counts them, in moto's interpreter.

The service fails a Map Run with ``States.ExceedToleratedFailureThreshold`` once its failed (or
timed-out) items exceed ``ToleratedFailureCount``, or their share of all items exceeds
``ToleratedFailurePercentage`` (either, when both are given; neither given tolerates none), and
stops its running child workflows. moto counts the failed items and never fails the Map Run: a
Distributed Map succeeds whatever fails in it. Here the Map Run fails at the item that exceeds the
threshold; the Map state's end closes the iterations still running, as for an inline Map
(``tolerated_failures``).

moto's grammar takes ``ToleratedFailurePercentage`` only as a number with a decimal point: a
definition with ``"ToleratedFailurePercentage": 50`` (what aws-cdk-lib renders for
``tolerated_failure_percentage=50``) fails CreateStateMachine with an ``ASLParserException``.
Here an integer percentage is read as the same number with a point (``integer_percentages``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from hetero_constructs.local.patching import Patches

EXCEEDED_CAUSE = "The specified tolerated failure threshold was exceeded"


def tolerated_failures(patches: Patches) -> None:
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map import (
        state_map,
        tolerated_failure,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (  # noqa: E501
        distributed_item_processor_worker as worker_module,
    )

    from_state_props = state_map.StateMap.from_state_props

    def only_the_given_thresholds(state: Any, state_props: Any) -> None:
        # moto defaults an absent threshold to 0 (tolerate none); the service applies only the
        # thresholds given (and tolerates none when neither is).
        from_state_props(state, state_props)
        count = state_props.get(tolerated_failure.ToleratedFailureCountDecl)
        percentage = state_props.get(tolerated_failure.ToleratedFailurePercentageDecl)
        if count is not None and percentage is None:
            state.tolerated_failure_percentage_decl = tolerated_failure.ToleratedFailurePercentage(
                100.0
            )
        elif percentage is not None and count is None:
            state.tolerated_failure_count_decl = tolerated_failure.ToleratedFailureCountInt(
                sys.maxsize
            )

    worker_class = worker_module.DistributedItemProcessorWorker
    eval_job = worker_class._eval_job

    def eval_job_within_threshold(worker: Any, env: Any, job: Any) -> None:
        eval_job(worker, env, job)
        record = worker._map_run_record
        failed = record.item_counter.failed.get() + record.item_counter.timed_out.get()
        total = max(1, worker._job_pool._jobs_number)
        if failed > record.tolerated_failure_count or (
            100.0 * failed / total > record.tolerated_failure_percentage
        ):
            error = StatesErrorName(typ=StatesErrorNameType.StatesExceedToleratedFailureThreshold)
            details: Any = {
                "executionFailedEventDetails": ExecutionFailedEventDetails(
                    error=error.error_name, cause=EXCEEDED_CAUSE
                )
            }
            job.job_output = FailureEventException(
                failure_event=FailureEvent(
                    env=env,
                    error_name=error,
                    event_type=HistoryEventType.ExecutionFailed,
                    event_details=details,
                )
            )

    patches.replace(state_map.StateMap, "from_state_props", only_the_given_thresholds)
    patches.replace(worker_class, "_eval_job", eval_job_within_threshold)


def integer_percentages(patches: Patches) -> None:
    from moto.stepfunctions.parser.asl.parse import asl_parser

    parse = asl_parser.AmazonStateLanguageParser.parse

    def parse_with_float_percentages(definition: str) -> Any:
        return parse(_float_percentages(definition))

    patches.replace(
        asl_parser.AmazonStateLanguageParser, "parse", staticmethod(parse_with_float_percentages)
    )


def _float_percentages(definition: str) -> str:
    """``definition`` with each integer ``ToleratedFailurePercentage`` written as a float."""
    if "ToleratedFailurePercentage" not in definition:
        return definition
    try:
        document = json.loads(definition)
    except ValueError:
        return definition  # the parser reports what is wrong with it

    def rewritten(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                key: float(value)
                if key == "ToleratedFailurePercentage"
                and isinstance(value, int)
                and not isinstance(value, bool)
                else rewritten(value)
                for key, value in node.items()
            }
        if isinstance(node, list):
            return [rewritten(item) for item in node]
        return node

    return json.dumps(rewritten(document))


__all__ = ["EXCEEDED_CAUSE", "integer_percentages", "tolerated_failures"]
