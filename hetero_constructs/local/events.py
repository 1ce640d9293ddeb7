"""EventBridge as a stack's rules see it: event patterns, targets, schedules, delivery faults.

Events from AWS services (``aws.sagemaker``, ``aws.states``) cannot be put on a bus by anyone
else; here the simulated services ``put`` them on the local bus, which matches them against every
enabled rule of the template and delivers them to the rules' targets when ``pump`` runs (the run
loop pumps; delivery is never on the thread that emitted the event). A target that cannot be
reached is retried per its ``RetryPolicy``, then sent to its dead-letter queue or dropped.
``fire_schedules`` delivers the "Scheduled Event" of every scheduled rule once.

Patterns are matched by moto's own matcher (``moto.events``): exact values, ``prefix``,
``suffix``, ``equals-ignore-case``, ``anything-but``, ``exists``, ``numeric`` ranges, ``cidr``,
``wildcard`` and ``$or``; an array in the event matches when any element does. A pattern is
checked first as PutRule checks it (an array of matchers per field, known matchers only).
Where moto's matcher differs from EventBridge: docs/local-runs.md, "Where moto differs".
"""

from __future__ import annotations

import functools
import json
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

#: EventBridge's default target retry policy: 185 attempts over 24 hours.
DEFAULT_TARGET_RETRIES = 185
SCHEDULED_EVENT_TYPE = "Scheduled Event"


class DeliveryError(Exception):
    """A target could not be reached (throttled, missing): EventBridge retries the delivery."""


# -- pattern matching ---------------------------------------------------------------------------


#: The matchers EventBridge documents, each with the kinds of argument it takes.
MATCHERS = (
    "prefix", "suffix", "equals-ignore-case", "wildcard", "numeric", "anything-but", "exists",
    "cidr",
)  # fmt: skip


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """Whether ``event`` matches the EventBridge ``pattern``, by moto's matcher (``moto.events``).

    The pattern is checked first, as PutRule checks it (moto's matcher takes an unknown matcher
    for a match): ``ValueError`` says what is wrong."""
    _check_pattern(pattern)
    return bool(_compiled(json.dumps(pattern, sort_keys=True)).matches_event(event))


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    from moto.events.models import EventPattern

    return EventPattern.load(pattern)


def _check_pattern(pattern: dict[str, Any], path: str = "") -> None:
    for key, expected in pattern.items():
        where = f"{path}.{key}" if path else key
        if key == "$or":
            for branch in expected:
                _check_pattern(branch, path)
        elif isinstance(expected, dict):
            _check_pattern(expected, where)
        elif isinstance(expected, list):
            for matcher in expected:
                if isinstance(matcher, dict):
                    _check_matcher(matcher, where)
        else:
            raise ValueError(
                f"event pattern field {where!r}: {expected!r} is neither an object nor an array "
                'of matchers; EventBridge requires an array, e.g. ["value"]'
            )


def _check_matcher(matcher: dict[str, Any], where: str) -> None:
    for kind, argument in matcher.items():
        if kind not in MATCHERS:
            raise ValueError(
                f"event pattern field {where!r}: matcher {kind!r} is not one EventBridge "
                f"has; it has: {', '.join(MATCHERS)}"
            )
        if kind == "anything-but" and isinstance(argument, dict):
            _check_matcher(argument, where)


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
