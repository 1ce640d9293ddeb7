"""Fault injection for local runs: what goes wrong in the cloud, on purpose and countable.

``cloud.faults`` (a ``Faults``) is the API; each call arms a fault for the next ``times``
occasions and returns the fault, whose ``times`` counts down as it fires::

    cloud.faults.fail_lambda("submit.handler", after_work=True)       # did its work, then failed
    cloud.faults.fail_lambda("MyFunction", after_work=False, times=2)  # failed before any work
    cloud.faults.drop_events({"source": ["aws.sagemaker"]})            # an event is lost
    cloud.faults.duplicate_events({"source": ["aws.sagemaker"]})       # delivered twice
    cloud.faults.throttle("dynamodb", "PutItem")                       # one call throttled
    cloud.faults.stop_execution_during("submit.handler")               # StopExecution meanwhile

Functions are named by logical id, function name, ARN or handler (``module.function``). A
throttled call fails at once with the service's throttling error (botocore ``before-call`` hook on
the default session, so every client of the run sees it); the SDK's own retries are not simulated.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from hetero_constructs.local.events import EventBus, EventFault

#: The error each service answers when it throttles (botocore names of the services).
THROTTLING_ERRORS = {
    "dynamodb": "ProvisionedThroughputExceededException",
    "sagemaker": "ThrottlingException",
    "stepfunctions": "ThrottlingException",
    "lambda": "TooManyRequestsException",
    "sqs": "RequestThrottled",
    "sns": "Throttled",
    "s3": "SlowDown",
    "events": "ThrottlingException",
    "sts": "Throttling",
}


@dataclass
class LambdaFault:
    """The next ``times`` invocations of ``function`` fail with ``error_type``.

    ``after_work``: the handler runs, then the invocation fails anyway (a timeout or crash after
    the side effects); otherwise it fails before the handler runs.
    """

    function: str
    times: int
    after_work: bool
    error_type: str


@dataclass
class Throttle:
    """The next ``times`` calls of ``service``'s ``operation`` answer ``error_code``."""

    service: str
    operation: str
    times: int
    error_code: str


@dataclass
class StopDuring:
    """StopExecution on the run's execution when ``function`` is invoked (``times`` times)."""

    function: str
    times: int


class Faults:
    """Armed faults; the local cloud consults them as it runs."""

    def __init__(self, bus: EventBus) -> None:
        self.lambda_faults: list[LambdaFault] = []
        self.throttles: list[Throttle] = []
        self.stops: list[StopDuring] = []
        self._bus = bus
        self._lock = threading.Lock()

    def fail_lambda(
        self,
        function: str,
        *,
        times: int = 1,
        after_work: bool = True,
        error_type: str = "Lambda.ServiceException",
    ) -> LambdaFault:
        """Make the next ``times`` invocations of ``function`` fail (see ``LambdaFault``)."""
        fault = LambdaFault(function, times, after_work, error_type)
        self.lambda_faults.append(fault)
        return fault

    def drop_events(self, pattern: dict[str, Any] | None = None, *, times: int = 1) -> EventFault:
        """Lose the next ``times`` events matching the EventBridge ``pattern`` (any when None)."""
        fault = EventFault("drop", pattern, times)
        self._bus.faults.append(fault)
        return fault

    def duplicate_events(
        self, pattern: dict[str, Any] | None = None, *, times: int = 1
    ) -> EventFault:
        """Deliver the next ``times`` events matching ``pattern`` twice to every target."""
        fault = EventFault("duplicate", pattern, times)
        self._bus.faults.append(fault)
        return fault

    def throttle(
        self, service: str, operation: str, *, times: int = 1, error_code: str | None = None
    ) -> Throttle:
        """Throttle the next ``times`` calls of ``operation`` (e.g. ``"dynamodb", "PutItem"``)."""
        code = error_code or THROTTLING_ERRORS.get(service, "ThrottlingException")
        fault = Throttle(service, operation, times, code)
        self.throttles.append(fault)
        return fault

    def stop_execution_during(self, function: str, *, times: int = 1) -> StopDuring:
        """Stop the run's execution when ``function`` is invoked (the invocation goes on)."""
        fault = StopDuring(function, times)
        self.stops.append(fault)
        return fault

    # -- consulted by the local cloud ------------------------------------------------------

    def take_lambda_fault(self, names: set[str], after_work: bool) -> str | None:
        """The error type of an armed fault for a function known by ``names``, counted down."""
        with self._lock:
            for fault in self.lambda_faults:
                if fault.times > 0 and fault.after_work == after_work and fault.function in names:
                    fault.times -= 1
                    return fault.error_type
        return None

    def take_stop(self, names: set[str]) -> bool:
        """Whether a function of ``names`` is to stop its execution now (the local cloud asks
        before each invocation; each ``stop_execution_during`` fault counts down)."""
        with self._lock:
            for fault in self.stops:
                if fault.times > 0 and fault.function in names:
                    fault.times -= 1
                    return True
        return False

    def take_throttle(self, service: str, operation: str) -> str | None:
        """The error code to throttle this call with, or None (each ``throttle`` fault counts
        down)."""
        with self._lock:
            for fault in self.throttles:
                if fault.times > 0 and (fault.service, fault.operation) == (service, operation):
                    fault.times -= 1
                    return fault.error_code
        return None

    def install_throttling(self, session: Any) -> None:
        """Answer throttled calls from a ``before-call`` hook on the botocore session."""
        from botocore.awsrequest import AWSResponse

        def before_call(model: Any, **_: Any) -> Any:
            code = self.take_throttle(model.service_model.service_name, model.name)
            if code is None:
                return None
            response = AWSResponse("https://local.invalid/", 400, {}, None)
            return response, {
                "Error": {"Code": code, "Message": f"Rate exceeded ({model.name}, local fault)"},
                "ResponseMetadata": {"HTTPStatusCode": 400, "RequestId": "local-fault"},
            }

        session.events.register("before-call", before_call, unique_id="hetero-local-throttle")


__all__ = [
    "THROTTLING_ERRORS",
    "Faults",
    "LambdaFault",
    "StopDuring",
    "Throttle",
]
