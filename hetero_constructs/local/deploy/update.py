"""A changed template deployed over its stack, as a CloudFormation stack update applies it.

Each resource of the new template is compared with the one of the same logical id deployed
before: a new one (or one whose type or name changed: CloudFormation replaces it) is created; a
changed one is updated in place where that matters locally (``UPDATED_IN_PLACE``: a state
machine by ``UpdateStateMachine`` (running executions keep the definition they started with, as
on AWS), a function's code and configuration, its event-invoke configuration, a rule, a queue's
attributes), and said to be kept as it was otherwise (a table keeps its items, a bucket its
objects); an unchanged one is left alone. A resource the new template no longer has is kept (its
runs' history stays readable), but for a rule, which is taken off the bus so it fires no more.
Whatever the stack's runs left (executions, training jobs, items, objects) stays.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetero_constructs.local.deploy.create import DEPLOYED_TYPES, DeployedStack, Deployer
from hetero_constructs.local.deploy.resolve import Resolver
from hetero_constructs.local.events import EventBus
from hetero_constructs.local.lambdas import Lambdas

#: The types a redeploy updates in place when their template entry changed.
UPDATED_IN_PLACE = (
    "AWS::Lambda::Function",
    "AWS::Lambda::EventInvokeConfig",
    "AWS::StepFunctions::StateMachine",
    "AWS::Events::Rule",
    "AWS::SQS::Queue",
)


@dataclass
class StackChange:
    """What one deploy did to a stack, by logical id (``ID (TYPE)`` each): ``created``,
    ``updated`` in place, ``kept`` (changed, but kept as it was locally), ``removed`` from the
    template (kept, but rules), and how many resources were ``unchanged``."""

    stack: str
    new: bool
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0

    @property
    def changed(self) -> bool:
        """Whether the deploy changed anything."""
        return bool(self.created or self.updated or self.kept or self.removed)

    def to_json(self) -> dict[str, Any]:
        """A JSON record (``local deploy --json``), ``action`` one of created, updated,
        unchanged."""
        return {
            "stack": self.stack,
            "action": "created" if self.new else "updated" if self.changed else "unchanged",
            "created": self.created,
            "updated": self.updated,
            "kept": self.kept,
            "removed": self.removed,
            "unchanged": self.unchanged,
        }

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> StackChange:
        """The change ``to_json`` recorded."""

        def listed(key: str) -> list[str]:
            return [str(item) for item in record.get(key) or []]

        return cls(
            str(record["stack"]),
            record.get("action") == "created",
            created=listed("created"),
            updated=listed("updated"),
            kept=listed("kept"),
            removed=listed("removed"),
            unchanged=int(record.get("unchanged") or 0),
        )

    def lines(self) -> list[str]:
        """What a person reads: the stack's line, then one per kind of change."""
        action = "created" if self.new else "updated" if self.changed else "unchanged"
        shown = [f"stack {self.stack}: {action}"]
        if self.new:
            return shown
        for label, items in (
            ("created", self.created),
            ("updated in place", self.updated),
            ("changed but kept as deployed (not updated locally)", self.kept),
            ("removed from the template (rules taken off, the rest kept)", self.removed),
        ):
            if items:
                shown.append(f"  {label}: {', '.join(items)}")
        if self.unchanged:
            shown.append(f"  unchanged: {self.unchanged} resources")
        return shown


def _label(logical_id: str, resource: dict[str, Any]) -> str:
    return f"{logical_id} ({resource.get('Type')})"


def new_stack(stack: str, body: dict[str, Any]) -> StackChange:
    """A first deploy: every resource the local account creates."""
    resources = body.get("Resources") or {}
    return StackChange(
        stack,
        True,
        created=[_label(lid, r) for lid, r in resources.items() if r.get("Type") in DEPLOYED_TYPES],
    )


class Redeployer(Deployer):
    """Deploys ``template`` over the stack deployed before from ``previous`` (its template and
    resolver): ``change`` says what it did."""

    def __init__(
        self,
        template: dict[str, Any],
        resolver: Resolver,
        template_dir: Path | None,
        lambdas: Lambdas,
        bus: EventBus,
        scratch: Path,
        *,
        previous: tuple[dict[str, Any], Resolver],
    ) -> None:
        super().__init__(template, resolver, template_dir, lambdas, bus, scratch)
        before, deployed = previous
        self.change = StackChange(resolver.stack_name, False)
        old = before.get("Resources") or {}
        where = {"region": resolver.region, "account": resolver.account}
        fresh_old = Resolver(before, stack_name=deployed.stack_name, **where)
        fresh_new = Resolver(template, stack_name=deployed.stack_name, **where)
        #: Logical ids deployed before, the same resource still: updated in place, never made.
        self.existing: set[str] = set()
        self._skip: set[str] = set()
        for logical_id, resource in self.resources.items():
            kind = resource.get("Type")
            if kind not in DEPLOYED_TYPES:
                continue
            was = old.get(logical_id)
            if (
                was is None
                or was.get("Type") != kind
                or _name(fresh_old, logical_id) != _name(fresh_new, logical_id)
            ):
                self.change.created.append(_label(logical_id, resource))
                if was is not None:
                    self.change.removed.append(_label(logical_id, was))
                continue
            self.existing.add(logical_id)
            physical = deployed.physical(logical_id)  # the ids moto answered then
            resolver.record(logical_id, physical.ref, **physical.attributes)
            if was == resource:
                self.change.unchanged += 1
                self._skip.add(logical_id)
            elif kind in UPDATED_IN_PLACE:
                self.change.updated.append(_label(logical_id, resource))
            else:
                self.change.kept.append(_label(logical_id, resource))
                self._skip.add(logical_id)
        gone = {lid: r for lid, r in old.items() if lid not in self.resources}
        self.change.removed.extend(
            _label(lid, r) for lid, r in gone.items() if r.get("Type") in DEPLOYED_TYPES
        )
        self._gone_rules = {
            deployed.physical(lid).ref
            for lid, r in old.items()
            if r.get("Type") == "AWS::Events::Rule"
            and (lid in gone or _label(lid, r) in self.change.removed)
        }

    def of_type(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """The resources of ``kind`` to create or update (the unchanged ones left alone)."""
        # An event-invoke configuration is applied again: its function may be a new object.
        return [
            (lid, r)
            for lid, r in super().of_type(kind)
            if lid not in self._skip or kind == "AWS::Lambda::EventInvokeConfig"
        ]

    def deploy(self) -> DeployedStack:
        """Create and update as ``change`` says; the rules the template lost fire no more."""
        stack = super().deploy()
        if self._gone_rules:
            self.bus.rules = [r for r in self.bus.rules if r.name not in self._gone_rules]
        return stack

    # -- in place ----------------------------------------------------------------------------

    def _put_queue(self, logical_id: str, name: str, attributes: dict[str, str]) -> str:
        if logical_id not in self.existing:
            return super()._put_queue(logical_id, name, attributes)
        sqs = self._client("sqs")
        url = str(sqs.get_queue_url(QueueName=name)["QueueUrl"])
        settable = {k: v for k, v in attributes.items() if k != "FifoQueue"}
        if settable:
            sqs.set_queue_attributes(QueueUrl=url, Attributes=settable)
        return url

    def _put_function(self, logical_id: str, configuration: dict[str, Any]) -> str:
        if logical_id not in self.existing:
            return super()._put_function(logical_id, configuration)
        updated = self._client("lambda").update_function_configuration(**configuration)
        return str(updated["FunctionArn"])

    def _put_state_machine(self, logical_id: str, arguments: dict[str, Any]) -> str:
        if logical_id not in self.existing:
            return super()._put_state_machine(logical_id, arguments)
        arn = str(self.resolver.physical(logical_id).ref)
        self._client("stepfunctions").update_state_machine(
            stateMachineArn=arn, definition=arguments["definition"], roleArn=arguments["roleArn"]
        )
        return arn


def _name(resolver: Resolver, logical_id: str) -> str | None:
    """The resource's physical name as a fresh deploy of its template would give it."""
    with contextlib.suppress(Exception):  # an id only AWS knows: the name did not change
        return str(resolver.physical(logical_id).ref)
    return None


__all__ = ["UPDATED_IN_PLACE", "Redeployer", "StackChange", "new_stack"]
