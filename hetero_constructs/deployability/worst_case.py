"""Worst-case values for what CloudFormation resolves only at deploy time (no CDK import).

A synthesized template holds intrinsic functions (``Ref``, ``Fn::GetAtt``, ``Fn::Join``,
``Fn::Sub``, ``Fn::FindInMap``, ...) and pseudo parameters whose values exist only once the
stack deploys. To size a policy, a definition or a name before that, every such value is
replaced by a string at least as long as anything it can deploy to:

- pseudo parameters: ``AWS::AccountId`` 12 digits; ``AWS::Region``, ``AWS::Partition`` and
  ``AWS::URLSuffix`` the longest region, partition and DNS suffix in botocore's partition data
  (``-global`` pseudo-regions excluded: stacks do not deploy there); ``AWS::StackName`` 128
  characters, CloudFormation's stack-name limit. A value the caller knows (``KnownValues``:
  the stack's account, region and name) is used as it is.
- ``Ref`` and ``Fn::GetAtt`` of a resource in the template: what the resource type returns,
  built from its name; a literal name property is used as it is; a name CloudFormation
  generates (``{stack}-{logical id}-{13 characters}``, cut to the type's name limit) is sized
  by that form; ARNs are ``arn:{partition}:{service}:{region}:{account}:{resource}`` in the
  service's own layout (``deploy_time.RESOURCE_KINDS``). Ids (KMS keys, security groups,
  subnets) have fixed sizes.
- a template parameter: its longest ``AllowedValues``, else ``MaxLength``, else its
  ``Default``; ``Fn::FindInMap`` with an unresolved key: the longest value for any key;
  ``Fn::If``: the longer branch; ``Fn::Select`` with an unresolved index: the longest item.
- anything else (an import, a resource type or attribute not modelled here, an unknown
  intrinsic): ``UNKNOWN_LENGTH`` (256) characters. That is a guess, not a bound
  (``WorstCase.guesses`` counts them).

A measurement that used any of these says so (``Measurement.estimated``); with every value
known it is exact.

Only lengths matter: the stand-in strings are ASCII letters and digits that JSON needs no
escapes for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hetero_constructs.deployability.deploy_time import (
    ACCOUNT_ID_LENGTH,
    GENERATED_SUFFIX,
    RESOURCE_KINDS,
    STACK_NAME_MAX,
    UNKNOWN_LENGTH,
    KnownValues,
    ResourceKind,
    _regional,
    partition_facts,
)
from hetero_constructs.deployability.intrinsics import NO_VALUE, Intrinsics


def _length(value: Any) -> int:
    """How long a value renders in JSON (to pick the longer of two candidates)."""
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, separators=(",", ":"), default=str))


def _longest(values: list[Any]) -> Any:
    return max(values, key=_length) if values else ""


class WorstCase(Intrinsics):
    """Replaces the intrinsics of one template's values with worst-case literals.

    ``value(node)`` returns the node with every intrinsic replaced (strings, lists, maps);
    ``text(node)`` a string. ``guesses`` counts the values sized without a known value or a
    modelled bound (see the module docstring), so a measurement can say it is an estimate.
    """

    def __init__(self, template: Mapping[str, Any], known: KnownValues | None = None) -> None:
        super().__init__(template)
        self.functions["Fn::Cidr"] = self._cidr
        self.known = (known or KnownValues()).completed()
        self.estimates = 0  # values sized from bounds (worst case), not known values
        self.guesses = 0  # values sized with UNKNOWN_LENGTH
        self._resolving: set[str] = set()
        facts = partition_facts()
        known = self.known
        self._pseudo: dict[str, str | None] = {
            "AWS::AccountId": known.account,
            "AWS::Region": known.region,
            "AWS::Partition": known.partition,
            "AWS::URLSuffix": known.url_suffix,
            "AWS::StackName": known.stack_name,
        }
        self._worst_pseudo = {
            "AWS::AccountId": "0" * ACCOUNT_ID_LENGTH,
            "AWS::Region": "r" * len(facts.longest_region),
            "AWS::Partition": "p" * len(facts.longest_partition),
            "AWS::URLSuffix": "u" * len(facts.longest_url_suffix),
            "AWS::StackName": "s" * STACK_NAME_MAX,
        }

    # -- public ---------------------------------------------------------------------------------

    def exact(self, node: Any) -> str | None:
        """The value if it is literal or built only from known values, else ``None``."""
        before = (self.estimates, self.guesses)
        resolved = self.text(node)
        if (self.estimates, self.guesses) != before:
            self.estimates, self.guesses = before
            return None
        return resolved

    # -- helpers ---------------------------------------------------------------------------------

    def _estimate(self, text: str) -> str:
        self.estimates += 1
        return text

    def _guess(self, length: int = UNKNOWN_LENGTH) -> str:
        self.guesses += 1
        return "g" * length

    def unknown(self, name: str, argument: Any) -> Any:
        return self._guess()

    def malformed(self, name: str, argument: Any) -> Any:
        return self._guess()

    def _pseudo_value(self, name: str) -> str:
        known = self._pseudo[name]
        if known is not None:
            return known
        return self._estimate(self._worst_pseudo[name])

    def _stack_name(self) -> str:
        return self._pseudo_value("AWS::StackName")

    # -- Ref and GetAtt --------------------------------------------------------------------------

    def ref(self, name: str) -> Any:
        if name in self._pseudo:
            return self._pseudo_value(name)
        if name == "AWS::StackId":
            pattern = _regional("cloudformation", "stack/{name}/") + "X" * 36  # a UUID
            return self._format(pattern, name=self._stack_name())
        if name == "AWS::NotificationARNs":
            return []
        if name in self.parameters:
            return self._parameter(self.parameters[name])
        resource = self.resources.get(name)
        if resource is None:
            return self._guess()
        kind = RESOURCE_KINDS.get(resource.get("Type", ""))
        if kind is None:
            return self._guess()
        return self._format(kind.ref, resource, name, kind)

    def _parameter(self, parameter: Mapping[str, Any]) -> Any:
        allowed = parameter.get("AllowedValues")
        if allowed:
            return self._estimate(str(_longest([str(v) for v in allowed])))
        if "MaxLength" in parameter:
            return self._estimate("m" * int(parameter["MaxLength"]))
        if "Default" in parameter:
            default = parameter["Default"]
            if (
                str(parameter.get("Type", "")).startswith("List<")
                or parameter.get("Type") == "CommaDelimitedList"
            ):
                return str(default).split(",")
            return self._estimate(str(default))
        return self._guess()

    def get_att(self, logical_id: str, attribute: str) -> Any:
        resource = self.resources.get(logical_id)
        kind = RESOURCE_KINDS.get(resource.get("Type", "")) if isinstance(resource, dict) else None
        if resource is None or kind is None:
            return self._guess()
        if attribute == "Arn" and kind.arn:
            return self._format("{arn}", resource, logical_id, kind)
        pattern = kind.attributes.get(attribute)
        if pattern is None:
            return self._guess()
        return self._format(pattern, resource, logical_id, kind)

    def _name(self, resource: Mapping[str, Any], logical_id: str, kind: ResourceKind) -> str:
        """The resource's name (or id): its literal name property, or the longest generated."""
        properties = resource.get("Properties") or {}
        if kind.name_property and kind.name_property in properties:
            if logical_id in self._resolving:  # a name built from itself: CloudFormation refuses
                return self._guess(kind.name_max)
            self._resolving.add(logical_id)
            try:
                return self.text(properties[kind.name_property])
            finally:
                self._resolving.discard(logical_id)
        if not kind.generated:
            return self._estimate("i" * kind.name_max)
        generated = len(self._stack_name()) + len(logical_id) + 2 + GENERATED_SUFFIX
        return self._estimate("n" * min(kind.name_max, generated))

    def _format(
        self,
        pattern: str,
        resource: Mapping[str, Any] | None = None,
        logical_id: str = "",
        kind: ResourceKind | None = None,
        name: str | None = None,
    ) -> str:
        """``pattern`` with its placeholders filled (``{arn}`` first becomes the kind's ARN)."""
        if kind is not None:
            pattern = pattern.replace("{arn}", kind.arn)
        values = {"name": name or "", "path": "/"}
        for placeholder, pseudo in (
            ("partition", "AWS::Partition"),
            ("region", "AWS::Region"),
            ("account", "AWS::AccountId"),
            ("url_suffix", "AWS::URLSuffix"),
        ):
            values[placeholder] = (
                self._pseudo_value(pseudo) if "{" + placeholder + "}" in pattern else ""
            )
        if resource is not None and kind is not None:
            if "{name}" in pattern:
                values["name"] = self._name(resource, logical_id, kind)
            if "{path}" in pattern:
                values["path"] = self.text((resource.get("Properties") or {}).get("Path", "/"))
        return pattern.format(**values)

    # -- the other functions ---------------------------------------------------------------------

    def fn_find_in_map(self, argument: Any) -> Any:
        if not isinstance(argument, list) or len(argument) < 3:
            return self._guess()
        mapping = self.mappings.get(self.exact(argument[0]) or "")
        if not isinstance(mapping, dict):
            return self._guess()
        top, second = self.exact(argument[1]), self.exact(argument[2])
        tops = [mapping[top]] if top in mapping else list(mapping.values())
        if top not in mapping:
            self.estimates += 1
        found = [
            entries[key]
            for entries in tops
            if isinstance(entries, dict)
            for key in ([second] if second is not None else list(entries))
            if key in entries
        ]
        if second is None:
            self.estimates += 1
        if not found:
            default = argument[3] if len(argument) > 3 else None
            if isinstance(default, dict) and "DefaultValue" in default:
                return self.value(default["DefaultValue"])
            return self._guess()
        return _longest([self.value(value) for value in found])

    def fn_select(self, argument: Any) -> Any:
        if not isinstance(argument, list) or len(argument) != 2:
            return self._guess()
        index, items = self.exact(argument[0]), self.items(argument[1])
        if index is not None and index.isdigit() and int(index) < len(items):
            return items[int(index)]
        self.estimates += 1
        return _longest(items) if items else self._guess()

    def fn_if(self, argument: Any) -> Any:
        if not isinstance(argument, list) or len(argument) != 3:
            return self._guess()
        self.estimates += 1  # the condition is decided at deploy time
        branches = [self.value(argument[1]), self.value(argument[2])]
        present = [branch for branch in branches if branch is not NO_VALUE]
        return _longest(present) if present else NO_VALUE

    def fn_get_azs(self, argument: Any) -> Any:
        region = self._pseudo_value("AWS::Region")
        return [f"{region}x"] * 6

    def _cidr(self, argument: Any) -> Any:
        count = (
            self.exact(argument[1]) if isinstance(argument, list) and len(argument) > 1 else None
        )
        blocks = int(count) if count is not None and count.isdigit() else UNKNOWN_LENGTH
        return ["255.255.255.255/32"] * blocks


__all__ = ["WorstCase"]
