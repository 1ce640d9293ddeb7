"""EventBridge as a stack's rules see it: event patterns, targets, schedules, delivery faults.

Events from AWS services (``aws.sagemaker``, ``aws.states``) cannot be put on a bus by anyone
else; here the simulated services ``put`` them on the local bus, which matches them against every
enabled rule of the template and delivers them to the rules' targets when ``pump`` runs (the run
loop pumps; delivery is never on the thread that emitted the event). A target that cannot be
reached is retried per its ``RetryPolicy``, then sent to its dead-letter queue or dropped.
``fire_schedules`` delivers the "Scheduled Event" of every scheduled rule once.

Pattern matching covers what aws-cdk-lib emits and EventBridge documents: exact values
(strings, numbers, booleans, null), ``prefix``, ``suffix``, ``equals-ignore-case``,
``anything-but`` (a value, a list, or a ``prefix``/``suffix``), ``exists``, ``numeric`` ranges,
``wildcard`` and ``$or``. An array in the event matches when any element does.
"""

from __future__ import annotations

import fnmatch
import json
import threading
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

#: EventBridge's default target retry policy: 185 attempts over 24 hours.
DEFAULT_TARGET_RETRIES = 185
SCHEDULED_EVENT_TYPE = "Scheduled Event"


class DeliveryError(Exception):
    """A target could not be reached (throttled, missing): EventBridge retries the delivery."""


# -- pattern matching ---------------------------------------------------------------------------


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """Whether ``event`` matches the EventBridge ``pattern``."""
    for key, expected in pattern.items():
        if key == "$or":
            if not any(matches(branch, event) for branch in expected):
                return False
            continue
        present = isinstance(event, dict) and key in event
        value = event.get(key) if isinstance(event, dict) else None
        if isinstance(expected, dict):
            if not _matches_nested(expected, value, present):
                return False
        elif isinstance(expected, list):
            if not _matches_field(expected, value, present):
                return False
        else:
            raise ValueError(
                f"event pattern field {key!r}: {expected!r} is neither an object nor an array "
                'of matchers; EventBridge requires an array, e.g. ["value"]'
            )
    return True


def _matches_nested(pattern: dict[str, Any], value: Any, present: bool) -> bool:
    if isinstance(value, list):
        return any(_matches_nested(pattern, item, True) for item in value)
    if present and isinstance(value, dict):
        return matches(pattern, value)
    # An absent object matches only a pattern of absent fields.
    return (
        all(
            isinstance(matchers, list) and _matches_field(matchers, None, False)
            for key, matchers in pattern.items()
            if key != "$or"
        )
        and "$or" not in pattern
    )


def _matches_field(matchers: list[Any], value: Any, present: bool) -> bool:
    values = value if isinstance(value, list) else [value]
    for matcher in matchers:
        if isinstance(matcher, dict) and "exists" in matcher:
            if bool(matcher["exists"]) == present:
                return True
            continue
        if not present:
            continue
        if any(_matches_value(matcher, item) for item in values):
            return True
    return False


def _matches_value(matcher: Any, value: Any) -> bool:
    if not isinstance(matcher, dict):
        return _equal(matcher, value)
    ((kind, argument),) = matcher.items()
    if kind == "prefix":
        return _string_test(argument, value, str.startswith)
    if kind == "suffix":
        return _string_test(argument, value, str.endswith)
    if kind == "equals-ignore-case":
        return isinstance(value, str) and value.casefold() == str(argument).casefold()
    if kind == "wildcard":
        return isinstance(value, str) and fnmatch.fnmatchcase(value, str(argument))
    if kind == "numeric":
        return _numeric(argument, value)
    if kind == "anything-but":
        if isinstance(argument, dict):
            return not _matches_value(argument, value)
        excluded = argument if isinstance(argument, list) else [argument]
        return not any(_equal(item, value) for item in excluded)
    raise ValueError(
        f"event pattern matcher {kind!r} is not supported by the local runner; supported: "
        "prefix, suffix, equals-ignore-case, wildcard, numeric, anything-but, exists"
    )


def _string_test(argument: Any, value: Any, test: Callable[[str, str], bool]) -> bool:
    if not isinstance(value, str):
        return False
    if isinstance(argument, dict) and "equals-ignore-case" in argument:
        return test(value.casefold(), str(argument["equals-ignore-case"]).casefold())
    return test(value, str(argument))


def _equal(expected: Any, value: Any) -> bool:
    numbers = (int, float)
    if isinstance(expected, bool) or isinstance(value, bool):
        return expected is value
    if isinstance(expected, numbers) and isinstance(value, numbers):
        return float(expected) == float(value)
    return bool(expected == value)


def _numeric(conditions: Sequence[Any], value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    tests: dict[str, Callable[[float, float], bool]] = {
        "=": lambda a, b: a == b,
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }
    pairs = zip(conditions[0::2], conditions[1::2], strict=True)
    return all(tests[operator](float(value), float(bound)) for operator, bound in pairs)


# -- rules, targets, deliveries -----------------------------------------------------------------


@dataclass
class Target:
    """One target of a rule, with what EventBridge sends it and how it retries."""

    id: str
    arn: str
    input: str | None = None
    input_path: str | None = None
    input_transformer: dict[str, Any] | None = None
    retry_attempts: int = DEFAULT_TARGET_RETRIES
    dead_letter_arn: str | None = None

    def payload(self, event: dict[str, Any]) -> str:
        """The text the target receives for ``event``."""
        if self.input is not None:
            return self.input
        if self.input_path is not None:
            return json.dumps(_json_path(event, self.input_path))
        if self.input_transformer is not None:
            values = {
                name: _json_path(event, path)
                for name, path in (self.input_transformer.get("InputPathsMap") or {}).items()
            }
            text = str(self.input_transformer.get("InputTemplate", ""))
            for name, value in values.items():
                # Inside quotes a placeholder takes the raw text; elsewhere its JSON.
                text = text.replace(f'"<{name}>"', json.dumps(value if value is not None else ""))
                text = text.replace(
                    f"<{name}>", value if isinstance(value, str) else json.dumps(value)
                )
            return text
        return json.dumps(event)


def _json_path(event: dict[str, Any], path: str) -> Any:
    node: Any = event
    for part in [p for p in path.removeprefix("$").split(".") if p]:
        node = node.get(part) if isinstance(node, dict) else None
    return node


@dataclass
class Rule:
    """An EventBridge rule of the template, deployed."""

    name: str
    logical_id: str
    arn: str
    pattern: dict[str, Any] | None
    schedule: str | None
    enabled: bool
    targets: list[Target] = field(default_factory=list)


@dataclass
class Delivery:
    """One event offered to one target, and what became of it."""

    rule: str
    target: str
    event: dict[str, Any]
    outcome: str  # delivered | dropped | failed | dead-lettered
    attempts: int = 1
    error: str | None = None


@dataclass
class EventFault:
    """Drop or duplicate the next ``times`` events that match ``pattern`` (all when None)."""

    kind: str  # drop | duplicate
    pattern: dict[str, Any] | None
    times: int


#: Invokes a target with the payload: raises DeliveryError when it cannot be reached.
TargetInvoker = Callable[[Target, str], None]
#: Sends a message to an SQS queue or SNS topic by ARN (dead-letter queues).
Sender = Callable[[str, str, dict[str, str]], None]


class EventBus:
    """The default event bus of the local account."""

    def __init__(self, invoke: TargetInvoker, send: Sender, account: str, region: str) -> None:
        self.rules: list[Rule] = []
        self.events: list[dict[str, Any]] = []  # every event accepted, in order
        self.deliveries: list[Delivery] = []
        self.faults: list[EventFault] = []
        self._invoke = invoke
        self._send = send
        self._account = account
        self._region = region
        self._queue: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._pumping = threading.Lock()
        self._busy = False

    def put(self, event: dict[str, Any]) -> None:
        """Accept an event; it reaches the targets at the next ``pump``."""
        with self._lock:
            self.events.append(event)
            self._queue.append(event)

    def pending(self) -> bool:
        """Events accepted and not yet delivered, or a delivery under way."""
        with self._lock:
            return bool(self._queue) or self._busy

    def pump(self) -> int:
        """Deliver every accepted event (and those its deliveries cause); how many."""
        delivered = 0
        with self._pumping:
            while True:
                with self._lock:
                    if not self._queue:
                        self._busy = False
                        return delivered
                    event = self._queue.popleft()
                    self._busy = True
                copies = self._apply_faults(event)
                for rule in self.rules:
                    if rule.enabled and rule.pattern is not None and matches(rule.pattern, event):
                        for target in rule.targets:
                            if copies == 0:
                                self.deliveries.append(
                                    Delivery(rule.name, target.arn, event, "dropped")
                                )
                            for _ in range(copies):
                                self._deliver(rule, target, event)
                delivered += 1

    def fire_schedules(self) -> int:
        """Deliver each enabled scheduled rule's "Scheduled Event" once; how many rules fired."""
        fired = 0
        with self._pumping:
            for rule in self.rules:
                if rule.enabled and rule.schedule is not None:
                    event = self.scheduled_event(rule)
                    for target in rule.targets:
                        self._deliver(rule, target, event)
                    fired += 1
        return fired

    def scheduled_event(self, rule: Rule) -> dict[str, Any]:
        return self.envelope("aws.events", SCHEDULED_EVENT_TYPE, {}, [rule.arn])

    def envelope(
        self, source: str, detail_type: str, detail: dict[str, Any], resources: list[str]
    ) -> dict[str, Any]:
        """An event as EventBridge delivers it."""
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": detail_type,
            "source": source,
            "account": self._account,
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": self._region,
            "resources": resources,
            "detail": detail,
        }

    def _apply_faults(self, event: dict[str, Any]) -> int:
        for fault in self.faults:
            if fault.times > 0 and (fault.pattern is None or matches(fault.pattern, event)):
                fault.times -= 1
                return 0 if fault.kind == "drop" else 2
        return 1

    def _deliver(self, rule: Rule, target: Target, event: dict[str, Any]) -> None:
        payload = target.payload(event)
        attempts = 0
        error: str | None = None
        while attempts <= target.retry_attempts:
            attempts += 1
            try:
                self._invoke(target, payload)
            except DeliveryError as failure:
                error = str(failure)
                continue
            self.deliveries.append(Delivery(rule.name, target.arn, event, "delivered", attempts))
            return
        if target.dead_letter_arn:
            self._send(
                target.dead_letter_arn,
                json.dumps(event),
                {"RULE_ARN": rule.arn, "TARGET_ARN": target.arn, "ERROR_MESSAGE": error or ""},
            )
            outcome = "dead-lettered"
        else:
            outcome = "failed"
        self.deliveries.append(Delivery(rule.name, target.arn, event, outcome, attempts, error))


__all__ = [
    "DEFAULT_TARGET_RETRIES",
    "SCHEDULED_EVENT_TYPE",
    "Delivery",
    "DeliveryError",
    "EventBus",
    "EventFault",
    "Rule",
    "Sender",
    "Target",
    "TargetInvoker",
    "matches",
]
